"""Every shipped full-size config runs its own pipelines end to end.

For each ``configs/centerpoint/*nus-3d.py`` and
``configs/voxelnet/*nus-3d.py``:
1 training iteration through a real Runner with the config's own train
pipeline (GT-database sampling where it has one, multi-sweep loading,
augmentation) on the generated data and its GT database, then prediction on
one ``mini_val`` sample through its test pipeline and the metric in
format-only mode. Batch 1, no DataLoader workers, to fit on 2 cores.

Every test here is marker ``full_size`` (``make test-quick`` leaves them
out). The runs are in this process; GT-database sampling without the
np.long fix is a fresh interpreter (also marker ``launch``: the fix's off
switch is read when the plugin is imported).
"""
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
from mmengine.registry import init_default_scope

from mmdet3d.registry import DATASETS
from projects.mmdet3d_plugin import load_config
from projects.mmdet3d_plugin.compat import fixes
from projects.mmdet3d_plugin.compat.inventory import OFF_VARIABLE
from projects.mmdet3d_plugin.cli.runner_setup import (build_runner,
                                                      isolate_runner)
from projects.mmdet3d_plugin.config.data_root import redirect_data_root
from projects.mmdet3d_plugin.config.presets import replace_transform_types

pytestmark = pytest.mark.full_size

REPO_ROOT = Path(__file__).resolve().parents[2]
FULL_CONFIGS = sorted(
    p.relative_to(REPO_ROOT).as_posix()
    for family in ('centerpoint', 'voxelnet')
    for p in (REPO_ROOT / 'configs' / family).glob('*nus-3d.py'))
PILLAR02 = ('configs/centerpoint/'
            'centerpoint_pillar02_second_secfpn_8xb4-cyclic-20e_nus-3d.py')
ITERS = 1
TEST_SAMPLES = 1
LOADER = dict(batch_size=1, num_workers=0, persistent_workers=False)


def small_run_options(work_dir: Path) -> dict:
    """One iteration, no validation, one test sample, format only."""
    return {
        'train_cfg': dict(
            _delete_=True, type='IterBasedTrainLoop', max_iters=ITERS),
        'val_cfg': None, 'val_dataloader': None, 'val_evaluator': None,
        'train_dataloader': LOADER,
        'test_dataloader': dict(LOADER, dataset=dict(indices=TEST_SAMPLES)),
        'test_evaluator': dict(
            format_only=True, jsonfile_prefix=str(work_dir / 'results')),
        'default_hooks.logger.interval': 1,
        'default_hooks.checkpoint': dict(_delete_=True, type='CheckpointHook',
                                         interval=-1),
        'log_processor.by_epoch': False,
        'work_dir': str(work_dir),
    }


def test_every_full_size_config_found():
    assert len(FULL_CONFIGS) == 5, FULL_CONFIGS
    assert PILLAR02 in FULL_CONFIGS


@pytest.mark.slow
@pytest.mark.parametrize('config', FULL_CONFIGS)
def test_full_config_trains_and_predicts(config, nus_synthetic, tmp_path):
    cfg = load_config(
        str(REPO_ROOT / config), cfg_options=small_run_options(tmp_path))
    redirect_data_root(cfg, nus_synthetic)
    train_pipeline = [t['type'] for t in cfg.train_dataloader.dataset.get(
        'dataset', cfg.train_dataloader.dataset).pipeline]
    # Preset 'fast_pipeline': the Fast* transforms, same samples as stock.
    assert 'FastLoadPointsFromMultiSweeps' in train_pipeline
    if config.startswith('configs/centerpoint/'):
        assert 'FastObjectSample' in train_pipeline

    runner = build_runner(isolate_runner(cfg, 'full_size'))
    runner.train()
    assert runner.iter == ITERS
    loss = runner.message_hub.get_scalar('train/loss').current()
    assert math.isfinite(loss), loss

    runner.test()
    results = list(tmp_path.glob('results/**/results_nusc.json'))
    assert len(results) == 1, results
    predicted = json.loads(results[0].read_text())['results']
    assert len(predicted) == TEST_SAMPLES


def _draw_from_gt_database(sampler: str, data_root: Path) -> None:
    """Build the pillar02 train set with mmdet3d's ObjectSample
    (``'stock'``) or the config's FastObjectSample (``'fast'``) and load
    samples until it has drawn from the GT database."""
    cfg = redirect_data_root(load_config(str(REPO_ROOT / PILLAR02)),
                             str(data_root))
    if sampler == 'stock':
        replace_transform_types(cfg, dict(FastObjectSample='ObjectSample'))
    init_default_scope('mmdet3d')
    dataset = DATASETS.build(cfg.train_dataloader.dataset)
    for i in range(5):
        dataset[i]


# Without the fix (its off switch is read when the plugin is imported): a
# fresh interpreter tries both samplers.
_WITHOUT_THE_FIX = f"""
import json, sys
sys.path.insert(0, {str(REPO_ROOT)!r})
from {__name__} import _draw_from_gt_database
for sampler in ('stock', 'fast'):
    try:
        _draw_from_gt_database(sampler, sys.argv[1])
        print(json.dumps({{sampler: 'sampled'}}))
    except Exception as exc:
        print(json.dumps({{sampler: f'{{type(exc).__name__}}: {{exc}}'}}))
"""


@pytest.mark.parametrize('sampler', ['stock', 'fast'])
def test_gt_database_sampling_with_the_fix(sampler, nus_synthetic):
    assert 'dbsampler_np_long' in fixes.applied
    _draw_from_gt_database(sampler, nus_synthetic)


@pytest.mark.launch
def test_without_the_fix_only_the_stock_sampler_fails(nus_synthetic):
    """With ``dbsampler_np_long`` off, mmdet3d's ``ObjectSample`` fails with
    mmdet3d 1.4.0's ``np.long`` error; the shipped ``FastObjectSample``
    samples either way (its labels are int64)."""
    # launch: the off switch is read when a fresh interpreter imports the
    # plugin
    env = dict(os.environ, **{OFF_VARIABLE: 'dbsampler_np_long'})
    proc = subprocess.run(
        [sys.executable, '-c', _WITHOUT_THE_FIX, str(nus_synthetic)],
        cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    found = {}
    for line in proc.stdout.splitlines():
        if line.startswith('{'):
            found.update(json.loads(line))
    assert found['fast'] == 'sampled', found
    assert "module 'numpy' has no attribute 'long'" in found['stock'], found
