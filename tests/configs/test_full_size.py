"""Every shipped full-size config runs its own pipelines end to end.

For each ``configs/centerpoint/*nus-3d.py`` and
``configs/voxelnet/*nus-3d.py``:
2 training iterations through a real Runner with the config's own train
pipeline (GT-database sampling where it has one, multi-sweep loading,
augmentation) on the generated data and its GT database, then prediction on
a few ``mini_val`` samples through its test pipeline and the metric in
format-only mode. Batch 1, no DataLoader workers, to fit on 2 cores.
"""
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from projects.mmdet3d_plugin import load_config
from projects.mmdet3d_plugin.compat.inventory import OFF_VARIABLE
from projects.mmdet3d_plugin.cli.runner import build_runner, isolate_runner
from projects.mmdet3d_plugin.config.data_root import redirect_data_root

REPO_ROOT = Path(__file__).resolve().parents[2]
FULL_CONFIGS = sorted(
    p.relative_to(REPO_ROOT).as_posix()
    for family in ('centerpoint', 'voxelnet')
    for p in (REPO_ROOT / 'configs' / family).glob('*nus-3d.py'))
PILLAR02 = ('configs/centerpoint/'
            'centerpoint_pillar02_second_secfpn_8xb4-cyclic-20e_nus-3d.py')
ITERS = 2
TEST_SAMPLES = 3
LOADER = dict(batch_size=1, num_workers=0, persistent_workers=False)


def small_run_options(work_dir: Path) -> dict:
    """2 iterations, no validation, a few test samples, format only."""
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


# Builds the train set of the pillar02 config, with mmdet3d's ObjectSample
# (argv[3] 'stock') or the config's FastObjectSample, and loads samples until
# it has drawn from the GT database.
_DRAW_FROM_GT_DATABASE = '''
import sys
from mmengine.registry import init_default_scope
from mmdet3d.registry import DATASETS
from projects.mmdet3d_plugin import load_config
from projects.mmdet3d_plugin.config.data_root import redirect_data_root
from projects.mmdet3d_plugin.config.presets import replace_transform_types
cfg = redirect_data_root(load_config(sys.argv[1]), sys.argv[2])
if sys.argv[3] == 'stock':
    replace_transform_types(cfg, dict(FastObjectSample='ObjectSample'))
init_default_scope('mmdet3d')
dataset = DATASETS.build(cfg.train_dataloader.dataset)
for i in range(5):
    dataset[i]
print('sampled')
'''


@pytest.mark.parametrize('sampler', ['stock', 'fast'])
@pytest.mark.parametrize('off', [False, True], ids=['fix-on', 'fix-off'])
def test_gt_database_sampling_needs_the_fix(off, sampler, nus_synthetic):
    """With ``dbsampler_np_long`` off, mmdet3d's ``ObjectSample`` fails with
    mmdet3d 1.4.0's ``np.long`` error; with it on, it samples. The shipped
    ``FastObjectSample`` samples either way (its labels are int64)."""
    env = dict(os.environ)
    env.pop(OFF_VARIABLE, None)
    if off:
        env[OFF_VARIABLE] = 'dbsampler_np_long'
    proc = subprocess.run(
        [sys.executable, '-c', _DRAW_FROM_GT_DATABASE,
         str(REPO_ROOT / PILLAR02), str(nus_synthetic), sampler],
        cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=300)
    if off and sampler == 'stock':
        assert proc.returncode != 0
        assert "module 'numpy' has no attribute 'long'" in proc.stderr
    else:
        assert proc.returncode == 0, proc.stderr[-3000:]
        assert 'sampled' in proc.stdout
