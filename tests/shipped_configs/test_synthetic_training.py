"""The small ``*_synthetic`` configs train, validate with nuscenes-devkit and
write a checkpoint through a real mmengine Runner on the generated data."""
import math
from pathlib import Path

import pytest
import torch

from projects.mmdet3d_plugin import load_config
from projects.mmdet3d_plugin.cli.runner_setup import (build_runner,
                                                      isolate_runner)
from projects.mmdet3d_plugin.config.data_root import redirect_data_root

# Three trainings with a devkit evaluation each.
pytestmark = pytest.mark.slow


REPO_ROOT = Path(__file__).resolve().parents[2]
ITERS = 3
METRIC = 'NuScenes metric/pred_instances_3d_NuScenes'
# After a few iterations a model scores its boxes about alike, near or below
# the configs' thresholds. Keep every box (nuscenes-devkit refuses to evaluate
# no boxes at all) but few per frame (formatting and matching them is slow).
FEW_BOXES = {
    'CenterPoint': {
        'model.pts_bbox_head.bbox_coder.score_threshold': 0.0,
        'model.test_cfg.pts.score_threshold': 0.0,
        'model.test_cfg.pts.pre_max_size': 100,
        'model.test_cfg.pts.post_max_size': 5,
    },
    'VoxelNet': {
        'model.test_cfg.score_thr': 0.0,
        'model.test_cfg.nms_pre': 100,
        'model.test_cfg.max_num': 30,
    },
}


@pytest.fixture(autouse=True)
def one_intra_op_thread():
    """Run torch ops on one thread, as each process of a 2-process run does.

    On a 2-core machine the DataLoader worker (and anything else running)
    competes with torch's OpenMP threads, which then spin-wait: a training
    step of the small CenterPoint took 16x more CPU time with 2 threads than
    with 1 while the other core was busy.
    """
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.mark.parametrize('config', [
    'configs/centerpoint/centerpoint_pillar_synthetic.py',
    'configs/voxelnet/voxelnet_pillar_synthetic.py',
    'configs/voxelnet/voxelnet_voxel_synthetic.py',
])
def test_synthetic_config_trains_and_validates(config, nus_synthetic,
                                               tmp_path):
    cfg = load_config(
        str(REPO_ROOT / config),
        cfg_options={
            'train_cfg.max_iters': ITERS,
            'train_cfg.val_interval': ITERS,
            'default_hooks.checkpoint.interval': ITERS,
            'default_hooks.logger.interval': 1,
        })
    cfg.merge_from_dict(FEW_BOXES[cfg.model.type])
    redirect_data_root(cfg, nus_synthetic)
    cfg.work_dir = str(tmp_path)

    runner = build_runner(isolate_runner(cfg, 'synthetic_training'))
    runner.train()

    hub = runner.message_hub
    assert runner.iter == ITERS
    assert math.isfinite(hub.get_scalar('train/loss').current())
    # nuscenes-devkit evaluated all of mini_val.
    for key in ('mAP', 'NDS'):
        value = hub.get_scalar(f'val/{METRIC}/{key}').current()
        assert 0.0 <= value <= 1.0, (key, value)

    checkpoint = tmp_path / f'iter_{ITERS}.pth'
    assert checkpoint.is_file()
    state = torch.load(checkpoint, map_location='cpu')
    assert state['meta']['iter'] == ITERS
    assert state['state_dict'].keys() == runner.model.state_dict().keys()
