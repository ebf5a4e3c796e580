"""mmdet3d 0.x configs, translated, equal mmdet3d 1.x's own configs.

The 0.x side is read from mmdet3d 1.0.0rc6's source package (downloaded
once into ``data/.cache/upstream/``, :mod:`upstream_configs`), the 1.x side
from the installed mmdet3d 1.4.0. For every nuScenes LiDAR 0.x config with
an official 1.x counterpart, the translated ``model``, train pipeline and
test pipeline equal the 1.x ones, up to

* :func:`normalize`: tuples are lists, and ``backend_args=None`` equals an
  absent ``backend_args`` where the class's default is None;
* :data:`UPSTREAM_CHANGES`: values mmdet3d changed between the releases
  (not translations), each with its reason; every listed difference must
  still occur, so a fixed upstream config fails here until it is dropped.

Then the seed config (0.x CenterPoint pillar with the guide's lines) is
migrated by ``tools/migrate_config.py`` and trained by ``tools/train.py
--amp fp32`` for 2 iterations (its 0.x ``fp16`` key would need a GPU;
``--amp fp32`` trains it in float32 on any CPU), each tool in a process
forked from this one (the translation and the training are the subject,
not the tools' start-up).
"""
import inspect
import re
from pathlib import Path

import pytest
from mmdet3d.registry import TASK_UTILS, TRANSFORMS
from mmengine.config import Config

from projects.mmdet3d_plugin.config.legacy.translator import translate_legacy
from tests.helpers.train_tool import fork_tool, fork_train
from tests.helpers.upstream_configs import (MMDET3D_1X_CONFIGS,
                                            mmdet3d_0x_configs)

_CP_0X = 'centerpoint/centerpoint_{}_second_secfpn_{}4x8_cyclic_{}20e_nus.py'
_CP_1X = ('centerpoint/centerpoint_{}_second_secfpn_{}8xb4-{}cyclic-20e_'
          'nus-3d.py')
#: (0.x config in 1.0.0rc6, 1.x config in 1.4.0): every nuScenes LiDAR 0.x
#: config of these families with an official 1.x counterpart.
PAIRS = [
    (_CP_0X.format(grid0, head0, tta0), _CP_1X.format(grid1, head1, tta1))
    for grid0, grid1 in (('02pillar', 'pillar02'), ('01voxel', 'voxel01'),
                         ('0075voxel', 'voxel0075'))
    for head0, head1 in (('', ''), ('circlenms_', 'head-circlenms_'),
                         ('dcn_', 'head-dcn_'),
                         ('dcn_circlenms_', 'head-dcn-circlenms_'))
    for tta0, tta1 in (('', ''), )
] + [
    (_CP_0X.format('0075voxel', head0, tta0),
     _CP_1X.format('voxel0075', head1, tta1))
    for head0, head1, tta0, tta1 in (
        ('dcn_', 'head-dcn_', 'tta_', 'tta-'),
        ('dcn_', 'head-dcn_', 'flip-tta_', 'flip-tta-'),
        ('dcn_circlenms_', 'head-dcn-circlenms_', 'flip-tta_', 'flip-tta-'))
] + [
    (f'pointpillars/hv_pointpillars_{neck}_sbn-all_{old}_2x_nus-3d.py',
     f'pointpillars/pointpillars_hv_{neck}_sbn-all_{new}-2x_nus-3d.py')
    for neck in ('fpn', 'secfpn')
    for old, new in (('4x8', '8xb4'), ('fp16_2x8', '8xb2-amp'))
] + [
    ('ssn/hv_ssn_secfpn_sbn-all_2x16_2x_nus-3d.py',
     'ssn/ssn_hv_secfpn_sbn-all_16xb2-2x_nus-3d.py'),
    ('ssn/hv_ssn_regnet-400mf_secfpn_sbn-all_2x16_2x_nus-3d.py',
     'ssn/ssn_hv_regnet-400mf_secfpn_sbn-all_16xb2-2x_nus-3d.py'),
] + [
    (f'regnet/hv_pointpillars_regnet-{net}_sbn-all_4x8_2x_nus-3d.py',
     f'regnet/pointpillars_hv_regnet-{net}_sbn-all_8xb4-2x_nus-3d.py')
    for net in ('1.6gf_fpn', '400mf_fpn', '400mf_secfpn')
]
#: 0.x nuScenes LiDAR configs of these families that 1.4.0 has no
#: counterpart for.
NO_COUNTERPART = {
    'centerpoint/centerpoint_02pillar_second_secfpn_4x8_cyclic_20e_nus_'
    'novelo.py': 'no pillar config without velocity in 1.4.0',
    'regnet/hv_pointpillars_regnet-400mf_fpn_sbn-all_fp16_2x8_2x_nus-3d.py':
    'no amp RegNet config in 1.4.0',
}
#: Two-stage, multi-modality and dynamic-voxel models (KITTI): the model
#: alone is compared; their KITTI image pipelines are not translated.
MODEL_PAIRS = [
    ('parta2/hv_PartA2_secfpn_2x8_cyclic_80e_kitti-3d-3class.py',
     'parta2/parta2_hv_secfpn_8xb2-cyclic-80e_kitti-3d-3class.py'),
    ('mvxnet/dv_mvx-fpn_second_secfpn_adamw_2x8_80e_kitti-3d-3class.py',
     'mvxnet/mvxnet_fpn_dv_second_secfpn_8xb2-80e_kitti-3d-3class.py'),
    ('dynamic_voxelization/dv_second_secfpn_6x8_80e_kitti-3d-car.py',
     'dynamic_voxelization/second_dv_secfpn_8xb6-80e_kitti-3d-car.py'),
]

_SWEEPS_TEST_MODE = (
    "1.x's _base_/datasets/nus-3d.py sets LoadPointsFromMultiSweeps("
    'test_mode=True) in the test pipeline (upstream commit ed115937, '
    '"Refactor nus dataset"): the first sweeps instead of a random choice '
    'when a sample has more sweeps than sweeps_num. A value change, not a '
    'translation: the 0.x behaviour is kept.')
_TTA_IN_IGNORED_KEY = (
    "1.x's TTA configs assign their test_pipeline through "
    'data=dict(val=..., test=...), a 0.x key that mmengine ignores, so '
    "1.x's test_dataloader runs the plain pipeline. The translation puts "
    "0.x's TTA pipeline into test_dataloader, as 0.x ran it; it equals "
    "1.x's test_pipeline variable (compared instead).")
_CAFFE_MEAN = (
    '1.x changed the image mean to [102.9801, 115.9465, 122.7717] and '
    "froze img_neck's BN (norm_cfg requires_grad=False); 0.x's Normalize "
    'mean and trainable neck are kept.')
#: (0.x config pattern, {differing key path: reason}).
UPSTREAM_CHANGES = [
    (r'^(pointpillars|regnet)/', {
        'test_pipeline[1].test_mode': _SWEEPS_TEST_MODE}),
    (r'^mvxnet/', {
        'model.data_preprocessor.mean[0]': _CAFFE_MEAN,
        'model.data_preprocessor.mean[1]': _CAFFE_MEAN,
        'model.data_preprocessor.mean[2]': _CAFFE_MEAN,
        'model.img_neck.norm_cfg': _CAFFE_MEAN}),
]
#: 1.x TTA configs whose test pipeline is their ``test_pipeline`` variable.
TTA_PATTERN = r'tta'
#: 0.x fp16 configs: their tuned static loss scale is kept (1.x: 4096).
FP16_LOSS_SCALE = {
    'pointpillars/hv_pointpillars_fpn_sbn-all_fp16_2x8_2x_nus-3d.py': 32.,
    'pointpillars/hv_pointpillars_secfpn_sbn-all_fp16_2x8_2x_nus-3d.py':
    32.,
}


@pytest.fixture(scope='module')
def mmdet3d_0x() -> Path:
    """mmdet3d 0.x's configs folder (downloaded once, upstream_configs)."""
    return mmdet3d_0x_configs()


def _default_is_none(cfg: dict, key: str) -> bool:
    """Whether ``backend_args`` defaults to None in the class of ``cfg``
    (``key`` is the dict's key; ``db_sampler`` is a DataBaseSampler)."""
    kind = cfg.get('type', 'DataBaseSampler' if key == 'db_sampler' else
                   None)
    cls = TRANSFORMS.get(kind) or TASK_UTILS.get(kind) if kind else None
    if cls is None:
        return False
    param = inspect.signature(cls).parameters.get('backend_args')
    return param is not None and param.default is None


def normalize(value, key: str = ''):
    """``value`` without meaningless differences: tuples become lists, and
    ``backend_args=None`` is dropped where None is the class default."""
    if isinstance(value, (list, tuple)):
        return [normalize(v) for v in value]
    if isinstance(value, dict):
        out = {k: normalize(v, k) for k, v in value.items()}
        if 'backend_args' in out and out['backend_args'] is None and \
                _default_is_none(out, key):
            out.pop('backend_args')
        return out
    return value


def differences(old, new, path: str):
    """Key paths where ``old`` and ``new`` differ, with both values."""
    if isinstance(old, dict) and isinstance(new, dict):
        for key in sorted(set(old) | set(new), key=str):
            sub = f'{path}.{key}'
            if key not in new:
                yield sub, old[key], '<absent>'
            elif key not in old:
                yield sub, '<absent>', new[key]
            else:
                yield from differences(old[key], new[key], sub)
    elif isinstance(old, list) and isinstance(new, list) and \
            len(old) == len(new):
        for i, (a, b) in enumerate(zip(old, new)):
            yield from differences(a, b, f'{path}[{i}]')
    elif old != new:
        yield path, old, new


def _innermost(dataset: dict) -> dict:
    while 'dataset' in dataset:
        dataset = dataset['dataset']
    return dataset


def _load_pair(configs_0x: Path, old: str, new: str):
    migrated, _ = translate_legacy(Config.fromfile(str(configs_0x / old)))
    official = Config.fromfile(str(MMDET3D_1X_CONFIGS / new))
    return migrated.to_dict(), official.to_dict()


def _expected(old: str) -> dict:
    expected = {}
    for pattern, changes in UPSTREAM_CHANGES:
        if re.search(pattern, old):
            expected.update(changes)
    return expected


def _check(found: list, old: str) -> None:
    expected = _expected(old)
    unexplained = [d for d in found if d[0] not in expected]
    assert not unexplained, '\n'.join(
        f'{path}: 0.x translated {a!r} != 1.x {b!r}'
        for path, a, b in unexplained)
    missing = set(expected) - {d[0] for d in found}
    assert not missing, (
        f'listed upstream changes no longer differ (drop them): {missing}')


def test_every_nus_lidar_config_is_paired(mmdet3d_0x):
    found = {
        p.relative_to(mmdet3d_0x).as_posix()
        for family in ('centerpoint', 'pointpillars', 'ssn', 'regnet')
        for p in (mmdet3d_0x / family).glob('*nus*.py')
    }
    paired = {old for old, _ in PAIRS}
    assert len(PAIRS) == 24 and len(paired) == 24
    assert found == paired | set(NO_COUNTERPART)
    for old, new in PAIRS + MODEL_PAIRS:
        assert (mmdet3d_0x / old).is_file(), old
        assert (MMDET3D_1X_CONFIGS / new).is_file(), new


@pytest.mark.parametrize('old, new', PAIRS, ids=[p[0] for p in PAIRS])
def test_migrated_equals_official(mmdet3d_0x, old, new):
    migrated, official = _load_pair(mmdet3d_0x, old, new)
    found = list(differences(
        normalize(migrated['model']), normalize(official['model']),
        'model'))
    for split, key in (('train', 'train_pipeline'),
                       ('test', 'test_pipeline')):
        ours = _innermost(migrated[f'{split}_dataloader']['dataset'])
        theirs = _innermost(official[f'{split}_dataloader']['dataset'])
        theirs = theirs['pipeline']
        if split == 'test' and re.search(TTA_PATTERN, new):
            # _TTA_IN_IGNORED_KEY: upstream's loader skips its own TTA.
            assert normalize(theirs) != normalize(official['test_pipeline'])
            theirs = official['test_pipeline']
        found += differences(
            normalize(ours['pipeline']), normalize(theirs), key)
    _check(found, old)
    if old in FP16_LOSS_SCALE:
        assert migrated['optim_wrapper']['type'] == 'AmpOptimWrapper'
        assert migrated['optim_wrapper']['loss_scale'] == \
            FP16_LOSS_SCALE[old]
        assert official['optim_wrapper']['loss_scale'] == 4096.


@pytest.mark.parametrize(
    'old, new', MODEL_PAIRS, ids=[p[0].split('/')[0] for p in MODEL_PAIRS])
def test_migrated_model_equals_official(mmdet3d_0x, old, new):
    migrated, official = _load_pair(mmdet3d_0x, old, new)
    _check(list(differences(normalize(migrated['model']),
                            normalize(official['model']), 'model')), old)


# The guide's lines, added to mmdet3d 0.x's CenterPoint pillar config.
SEED_LINES = """
find_unused_parameters = True
optimizer_config = dict(type='GradientCumulativeOptimizerHook',
                        cumulative_iters=4)
fp16 = dict(loss_scale=512.)
data = dict(workers_per_gpu=4, samples_per_gpu=8)
seed = 42
deterministic = True
checkpoint_config = dict(interval=5)
"""
SEED_0X = ('centerpoint/centerpoint_02pillar_second_secfpn_4x8_cyclic_20e_'
           'nus.py')


# Trains upstream's full-size 0.x CenterPoint pillar model.
@pytest.mark.full_size
def test_seed_config_migrates_and_trains(mmdet3d_0x, nus_synthetic,
                                         tmp_path):
    seed = tmp_path / 'seed_0x.py'
    seed.write_text(f'_base_ = [{str(mmdet3d_0x / SEED_0X)!r}]\n' +
                    SEED_LINES)
    migrated = tmp_path / 'seed_migrated.py'
    # library: the translation, through its script
    migrate = fork_tool('migrate_config', seed, migrated)
    output, _ = migrate.communicate(timeout=600)
    assert migrate.returncode == 0, output[-3000:]
    cfg = Config.fromfile(str(migrated))
    assert cfg.model.data_preprocessor.voxel is True
    assert cfg.model.pts_bbox_head.loss_cls.type == 'mmdet.GaussianFocalLoss'
    assert cfg.optim_wrapper.accumulative_counts == 4
    assert cfg.train_dataloader.dataset.type == 'CBGSDataset'
    pipeline = [t['type'] for t in cfg.train_dataloader.dataset.dataset
                .pipeline]
    assert 'ObjectSample' in pipeline

    # 2 samples, 1 per batch: an epoch of 2 iterations. CBGS would draw a
    # sample once per class present (10 times), so the test wraps the same
    # dataset in RepeatDataset(times=1) instead.
    train = fork_train(  # loop: the migrated config's training
        migrated, tmp_path / 'work', '--amp', 'fp32', '--data-root',
        nus_synthetic, '--cfg-options', 'train_cfg.max_epochs=1',
        'train_cfg.val_interval=1', 'val_cfg=None', 'val_dataloader=None',
        'val_evaluator=None', 'train_dataloader.dataset.type=RepeatDataset',
        'train_dataloader.dataset.times=1',
        'train_dataloader.dataset.dataset.indices=2',
        'train_dataloader.batch_size=1', 'train_dataloader.num_workers=0',
        'train_dataloader.persistent_workers=False',
        'default_hooks.logger.interval=1',
        'default_hooks.checkpoint.interval=-1')
    log, _ = train.communicate(timeout=600)
    assert train.returncode == 0, log[-5000:]
    [fp32] = [line for line in log.splitlines() if '--amp fp32:' in line]
    assert "--amp fp32: float32 (optim_wrapper.type 'AmpOptimWrapper' -> " \
        "'OptimWrapper'; " in fp32 and 'loss_scale=512.0' in fp32, fp32
    losses = re.findall(r'Epoch\(train\) +\[1\]\[(\d)/(\d)\].* loss: '
                        r'([0-9.]+)', log)
    assert [(i, n) for i, n, _ in losses] == [('1', '2'), ('2', '2')], \
        log[-5000:]
    assert all(0 < float(loss) < 1e4 for _, _, loss in losses), losses
