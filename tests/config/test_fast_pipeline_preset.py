"""Preset 'fast_pipeline' (a preset file's ``transform_types``): every
pipeline of a config, nested ones included, gets the Fast* types."""
import pytest

from projects.mmdet3d_plugin import load_config
from projects.mmdet3d_plugin.config.presets import (load_preset,
                                                    replace_transform_types)
from tests.helpers.precision_toys import collect_logs

MMDET3D_CENTERPOINT = ('mmdet3d::centerpoint/centerpoint_pillar02_second_'
                       'secfpn_8xb4-cyclic-20e_nus-3d.py')
FAST_TYPES = load_preset('fast_pipeline')['transform_types']


def all_types(node):
    if isinstance(node, dict):
        found = [node['type']] if isinstance(node.get('type'), str) else []
        return found + [t for v in node.values() for t in all_types(v)]
    if isinstance(node, (list, tuple)):
        return [t for v in node for t in all_types(v)]
    return []


def test_user_config_with_the_preset(tmp_path):
    path = tmp_path / 'my_centerpoint.py'
    path.write_text(f'_base_ = [{MMDET3D_CENTERPOINT!r}]\n'
                    "presets = ['fast_pipeline', 'grad_accum_x2']\n")
    with collect_logs() as logs:
        cfg = load_config(str(path))
    train = cfg.train_dataloader.dataset.dataset.pipeline  # in CBGSDataset
    assert [t['type'] for t in train] == [
        'FastLoadPointsFromFile', 'FastLoadPointsFromMultiSweeps',
        'LoadAnnotations3D', 'FastObjectSample', 'FastGlobalRotScaleTrans',
        'RandomFlip3D', 'FastPointsRangeFilter', 'ObjectRangeFilter',
        'ObjectNameFilter', 'FastPointShuffle', 'Pack3DDetInputs'
    ]
    sampler = train[3]['db_sampler']
    assert sampler['points_loader']['type'] == 'FastLoadPointsFromFile'
    test = cfg.test_dataloader.dataset.pipeline
    assert test[1]['type'] == 'FastLoadPointsFromMultiSweeps'
    assert all_types(test[2]['transforms']) == [
        'FastGlobalRotScaleTrans', 'RandomFlip3D']
    everything = all_types(cfg.to_dict())
    assert not set(FAST_TYPES) & set(everything)
    assert cfg.optim_wrapper.accumulative_counts == 2
    applied = [m for m in logs.messages if m.startswith('applied preset')]
    assert 'ObjectSample -> FastObjectSample' in applied[0]


def test_replace_keeps_scope_and_other_types():
    cfg = dict(pipeline=[
        dict(type='mmdet3d.PointShuffle'),
        dict(type='PointShuffle'),
        dict(type='other.PointShuffle'),
        dict(type='Pack3DDetInputs', keys=['points']),
    ], wrapped=(dict(type='DataBaseSampler'), ))
    counts = replace_transform_types(cfg, FAST_TYPES)
    assert [t['type'] for t in cfg['pipeline']] == [
        'mmdet3d.FastPointShuffle', 'FastPointShuffle', 'other.PointShuffle',
        'Pack3DDetInputs'
    ]
    assert cfg['wrapped'][0]['type'] == 'FastDataBaseSampler'
    assert counts == {'PointShuffle': 2, 'DataBaseSampler': 1}


def test_bad_transform_types(tmp_path):
    preset = tmp_path / 'bad.py'
    preset.write_text("transform_types = dict(PointShuffle=3)\n")
    path = tmp_path / 'config.py'
    path.write_text(f'presets = [{str(preset)!r}]\n')
    with pytest.raises(TypeError, match='transform_types must map'):
        load_config(str(path))
