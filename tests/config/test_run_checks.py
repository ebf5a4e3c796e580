"""Errors a user of the shipped configs meets are caught before the work.

A full-size config evaluates ``v1.0-trainval``; pointed at the generated
``v1.0-mini`` data, the tools stop in seconds with one line that names both
versions and the ``--cfg-options`` that fixes it, before any sample is
predicted or any iteration trained: ``tools/train.py`` in a process forked
from this one, ``tools/test.py`` as users start it (marker ``launch``: the
tool's bad input, once). Also, in this process: ``persistent_workers``
without workers, a missing GT database, a checkpoint of another model.
"""
import shutil
from pathlib import Path

import pytest
import torch
from torch import nn

import projects.mmdet3d_plugin  # noqa: F401  registers the plugin
from projects.mmdet3d_plugin import load_config
from projects.mmdet3d_plugin.config.data_root import redirect_data_root
from projects.mmdet3d_plugin.config.run_checks import (
    check_run_config, data_version_problems, dataloader_problems)
from projects.mmdet3d_plugin.doctor.checks import config as doctor_config
from projects.mmdet3d_plugin.doctor.context import DoctorContext, DoctorOptions
from projects.mmdet3d_plugin.engine.checkpoint_fit import (
    check_checkpoint_fits, checkpoint_mismatch)
from tests.helpers.train_tool import fork_train, start_tool

REPO = Path(__file__).resolve().parents[2]
PILLAR02 = ('configs/centerpoint/'
            'centerpoint_pillar02_second_secfpn_8xb4-cyclic-20e_nus-3d.py')
STOCK_PILLAR02 = ('mmdet3d::centerpoint/centerpoint_pillar02_second_secfpn_'
                  '8xb4-cyclic-20e_nus-3d.py')
FIX = ('--cfg-options val_dataloader.dataset.metainfo.version=v1.0-mini '
       'test_dataloader.dataset.metainfo.version=v1.0-mini')


def _error_lines(output):
    return [line for line in output.splitlines()
            if line.startswith('error:')]


@pytest.mark.parametrize('tool', [
    'train', pytest.param('test', marks=pytest.mark.launch)])
def test_full_config_on_mini_data_stops_before_the_work(
        tool, nus_synthetic, tmp_path):
    work = tmp_path / 'work'
    if tool == 'test':
        checkpoint = tmp_path / 'model.pth'
        checkpoint.write_bytes(b'')  # never read: the check comes first
        # launch: tools/test.py's bad input, as users meet it
        proc = start_tool('test', PILLAR02, checkpoint, '--data-root',
                          nus_synthetic, '--work-dir', work)
    else:
        proc = fork_train(  # library: the run checks of tools/train.py
            PILLAR02, work, '--data-root', nus_synthetic)
    log, _ = proc.communicate(timeout=300)
    assert proc.returncode == 1, log[-3000:]
    [line] = _error_lines(log)
    loop = 'test' if tool == 'test' else 'val'
    assert line.startswith(f'error: {loop}_evaluator (SafeNuScenesMetric) '
                           'evaluates nuScenes v1.0-trainval (the default of '
                           "SafeNuScenesDataset's metainfo), but "), line
    assert 'holds v1.0-mini (nuscenes_infos_val.pkl says v1.0-mini, ' \
        'tables v1.0-mini/)' in line
    assert line.endswith(
        f'Fix: --cfg-options {loop}_dataloader.dataset.metainfo.version='
        f'v1.0-mini ' + ('val' if tool == 'test' else 'test') +
        '_dataloader.dataset.metainfo.version=v1.0-mini'), line
    assert 'Epoch(test)' not in log and 'Iter(train)' not in log
    assert 'Epoch(train)' not in log


def _prepared(config, root, options=None):
    cfg = load_config(str(REPO / config) if '::' not in config else config,
                      cfg_options=options)
    return redirect_data_root(cfg, str(root))


def test_the_named_fix_passes_the_check(nus_synthetic):
    options = dict(pair.split('=') for pair in FIX.split()[1:])
    cfg = _prepared(PILLAR02, nus_synthetic, dict(
        options, **{'train_dataloader.num_workers': 1}))
    check_run_config(cfg, 'train')
    check_run_config(cfg, 'test')
    assert data_version_problems(cfg) == []


def test_stock_nuscenes_metric_of_a_migrated_config(nus_synthetic):
    cfg = _prepared(STOCK_PILLAR02, nus_synthetic)
    [val, test] = data_version_problems(cfg)
    assert val.evaluator == 'val_evaluator (NuScenesMetric)'
    assert val.source == "the default of NuScenesDataset's metainfo"
    assert (val.version, val.held) == ('v1.0-trainval', ['v1.0-mini'])
    with pytest.raises(ValueError, match='val_evaluator \\(NuScenesMetric\\) '
                       'evaluates nuScenes v1.0-trainval'):
        check_run_config(cfg, 'train')


def test_a_root_without_tables_names_the_data_root(nus_synthetic, tmp_path):
    root = tmp_path / 'infos_only'
    root.mkdir()
    cfg = _prepared(PILLAR02, root, {'train_dataloader.num_workers': 1})
    [val, _] = data_version_problems(cfg)
    assert val.held == [] and val.fix is None
    with pytest.raises(ValueError) as info:
        check_run_config(cfg, 'test')
    message = str(info.value)
    assert f'from {root}/, which holds no v1.0-* table folder' in message
    assert 'Fix: point the data at a nuScenes root that holds ' \
        'v1.0-trainval/ (--data-root DIR' in message


def test_info_file_of_another_version_is_named(nus_synthetic, tmp_path):
    # The tables of both versions, the info files of one.
    root = tmp_path / 'both'
    root.mkdir()
    for name in ('nuscenes_infos_val.pkl', 'nuscenes_infos_train.pkl'):
        shutil.copy(nus_synthetic / name, root / name)
    (root / 'v1.0-mini').mkdir()
    (root / 'v1.0-trainval').mkdir()
    cfg = _prepared(PILLAR02, root, {'train_dataloader.num_workers': 1})
    [val, test] = data_version_problems(cfg)
    assert val.held == ['v1.0-mini']
    assert val.evidence == ('nuscenes_infos_val.pkl says v1.0-mini, tables '
                            'v1.0-mini/')


@pytest.mark.parametrize('loader', ['train_dataloader', 'val_dataloader'])
def test_persistent_workers_without_workers(loader, nus_synthetic):
    options = dict(pair.split('=') for pair in FIX.split()[1:])
    options[f'{loader}.num_workers'] = 0
    cfg = _prepared(PILLAR02, nus_synthetic, options)
    problems = dataloader_problems(cfg)
    assert [p.split(':')[0] for p in problems] == [loader]
    with pytest.raises(ValueError,
                       match=f'{loader}: persistent_workers=True needs '
                       'num_workers > 0 .*Fix: --cfg-options '
                       f'{loader}.persistent_workers=False'):
        check_run_config(cfg, 'train')
    check_run_config(cfg, 'test')  # the test loader has its workers


def test_missing_gt_database(nus_synthetic, tmp_path):
    options = dict(pair.split('=') for pair in FIX.split()[1:])
    cfg = _prepared(PILLAR02, nus_synthetic, options)
    sampler = next(t['db_sampler'] for t in
                   cfg.train_dataloader.dataset.dataset.pipeline
                   if 'db_sampler' in t)
    sampler['info_path'] = str(tmp_path / 'nuscenes_dbinfos_train.pkl')
    with pytest.raises(FileNotFoundError,
                       match=r'train_dataloader\.dataset\.dataset\.pipeline'
                       r'\[\d\]\.db_sampler\.info_path: the GT database .* '
                       r'does not exist\. Fix: create it with `python '
                       'tools/create_data.py nuscenes'):
        check_run_config(cfg, 'train')


def test_doctor_fails_the_same_checks(nus_synthetic, tmp_path):
    cfg = _prepared(PILLAR02, nus_synthetic,
                    {'train_dataloader.num_workers': 0})
    ctx = DoctorContext(options=DoctorOptions(config=PILLAR02),
                        tmp_dir=str(tmp_path))
    ctx.provide('cfg', cfg)
    version = doctor_config.check_data_version(ctx)
    assert version.status == 'fail'
    assert 'evaluates nuScenes v1.0-trainval' in version.detail
    assert version.fix == FIX
    loaders = doctor_config.check_dataloaders(ctx)
    assert loaders.status == 'fail'
    assert loaders.fix.startswith(
        '--cfg-options train_dataloader.persistent_workers=False')


class _Small(nn.Module):

    def __init__(self, width=4):
        super().__init__()
        self.stem = nn.Linear(3, width)
        self.head = nn.Linear(width, 2)


def test_checkpoint_of_another_model_is_refused(tmp_path):
    path = tmp_path / 'other.pth'
    torch.save(dict(state_dict=_Small(width=8).state_dict()), path)
    why = checkpoint_mismatch(_Small(width=4), str(path))
    assert why.startswith('3 weight(s) have other shapes (e.g. stem.weight: '
                          '[8, 3] in the checkpoint, [4, 3] in the model)')
    with pytest.raises(ValueError, match=r'test: checkpoint .*other\.pth '
                       r'holds the weights of another model than cfg\.py '
                       r'builds: 3 weight'):
        check_checkpoint_fits(_Small(width=4), str(path), 'cfg.py')
    torch.save(dict(state_dict={'module.' + k: v for k, v in
                                _Small().state_dict().items()}), path)
    assert checkpoint_mismatch(_Small(), str(path)) is None
    torch.save(dict(state_dict=dict(unrelated=torch.zeros(1))), path)
    assert "4 weights are not in it (e.g. stem.weight)" in \
        checkpoint_mismatch(_Small(), str(path))
