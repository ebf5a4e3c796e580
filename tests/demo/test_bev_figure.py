"""The demo's bird's-eye-view picture, from a real Runner on the generated
data: every ground-truth box of the frame is drawn."""
from pathlib import Path

import numpy as np

from projects.mmdet3d_plugin import load_config
from projects.mmdet3d_plugin.cli.runner_setup import (build_runner,
                                                      isolate_runner)
from projects.mmdet3d_plugin.demo.bev_figure import draw_bev, predict_frame
from projects.mmdet3d_plugin.config.data_root import redirect_data_root
from projects.mmdet3d_plugin.constants import NUSCENES_CLASSES

REPO = Path(__file__).resolve().parents[2]
CONFIG = REPO / 'configs' / 'centerpoint' / 'centerpoint_pillar_synthetic.py'


def test_bev_figure_of_a_mini_val_frame(nus_synthetic, tmp_path):
    cfg = load_config(str(CONFIG), cfg_options={
        'test_dataloader.num_workers': 0,
        'test_dataloader.persistent_workers': False,
        'work_dir': str(tmp_path),
    })
    redirect_data_root(cfg, nus_synthetic)
    runner = build_runner(isolate_runner(cfg, 'bev_figure'))
    runner.model.init_weights()

    frame = predict_frame(runner, 0, score_thr=0.0)

    info = runner.test_dataloader.dataset.get_data_info(0)
    n_gt = len(info['eval_ann_info']['gt_labels_3d'])
    assert n_gt > 0
    assert frame['gt_corners'].shape == (n_gt, 4, 2)
    assert frame['pred_corners'].shape[1:] == (4, 2)
    assert len(frame['pred_scores']) == len(frame['pred_labels']) > 0
    assert frame['points'].shape[1] == 2 and len(frame['points']) > 1000
    # Ground-truth boxes lie where the frame's points are.
    centers = frame['gt_corners'].mean(axis=1)
    assert np.abs(centers).max() <= 40

    out = draw_bev(frame, NUSCENES_CLASSES, tmp_path / 'bev.png')
    assert out.stat().st_size > 10_000
    assert out.read_bytes()[:8] == b'\x89PNG\r\n\x1a\n'


def test_demo_schedule_is_the_config_schedule_stretched():
    from mmengine.config import Config

    from projects.mmdet3d_plugin.demo.quickstart import (DEMO_ITERS,
                                                         stretched_schedule)
    cfg = Config.fromfile(str(CONFIG))
    assert cfg.train_cfg.max_iters == 400
    warmup, cosine = stretched_schedule(cfg, DEMO_ITERS)
    assert (warmup['type'], warmup['begin'], warmup['end']) == (
        'LinearLR', 0, DEMO_ITERS // 10)
    assert (cosine['type'], cosine['begin'], cosine['end'],
            cosine['T_max']) == ('CosineAnnealingLR', DEMO_ITERS // 10,
                                 DEMO_ITERS, DEMO_ITERS - DEMO_ITERS // 10)
    assert cosine['eta_min'] == cfg.param_scheduler[1]['eta_min']
