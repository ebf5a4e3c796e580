"""A bird's-eye view of one frame: LiDAR points, ground truth and predicted
boxes, coloured by class."""
from pathlib import Path
from typing import Dict, Sequence, Union

import numpy as np
import torch
from matplotlib import colormaps
from matplotlib.figure import Figure
from mmengine.dataset import pseudo_collate
from mmengine.runner import Runner

#: Bottom corners of mmdet3d's box corners, in drawing order.
_BOTTOM = [0, 3, 7, 4]


def predict_frame(runner: Runner, index: int = 0,
                  score_thr: float = 0.3) -> Dict[str, np.ndarray]:
    """Points, ground truth and predictions of one test sample.

    Args:
        runner (Runner): A runner whose model holds the weights to show
            (e.g. after ``runner.test()``).
        index (int): Sample of ``runner.test_dataloader.dataset``.
            Defaults to 0.
        score_thr (float): Predictions below this score are left out.
            Defaults to 0.3.

    Returns:
        dict: ``points`` (N, 2), ``gt_corners`` / ``pred_corners``
        (M, 4, 2), ``gt_labels``, ``pred_labels``, ``pred_scores``.
    """
    sample = runner.test_dataloader.dataset[index]
    model = runner.model
    model.eval()
    with torch.no_grad():
        (result, ) = model.test_step(pseudo_collate([sample]))
    pred = result.pred_instances_3d
    keep = pred.scores_3d >= score_thr
    gt = sample['data_samples'].eval_ann_info
    return dict(
        points=sample['inputs']['points'][:, :2].numpy(),
        gt_corners=gt['gt_bboxes_3d'].corners[:, _BOTTOM, :2].numpy(),
        gt_labels=np.asarray(gt['gt_labels_3d']),
        pred_corners=pred.bboxes_3d[keep].corners[:, _BOTTOM, :2].numpy(),
        pred_labels=pred.labels_3d[keep].numpy(),
        pred_scores=pred.scores_3d[keep].numpy())


def draw_bev(frame: Dict[str, np.ndarray], classes: Sequence[str],
             out: Union[str, Path], extent: float = 40.0,
             title: str = '') -> Path:
    """Draw :func:`predict_frame`'s output and save it as an image.

    Ground truth is drawn solid, predictions dashed, both in their class's
    colour.

    Args:
        frame (dict): What :func:`predict_frame` returned.
        classes (Sequence[str]): Class names, indexed by label.
        out (str | Path): Image file to write.
        extent (float): Half width of the view in metres. Defaults to 40.
        title (str): Figure title. Defaults to ''.

    Returns:
        Path: ``out``.
    """
    colours = colormaps['tab10']
    fig = Figure(figsize=(8, 8))
    ax = fig.subplots()
    points = frame['points']
    ax.scatter(points[:, 0], points[:, 1], s=0.2, c='0.6', linewidths=0)
    for key, style in (('gt', '-'), ('pred', '--')):
        for corners, label in zip(frame[f'{key}_corners'],
                                  frame[f'{key}_labels']):
            closed = np.vstack([corners, corners[:1]])
            ax.plot(closed[:, 0], closed[:, 1], style,
                    color=colours(int(label) % 10), linewidth=1.2)
    for label, name in enumerate(classes):
        ax.plot([], [], color=colours(label % 10), label=name)
    ax.plot([], [], 'k-', label='ground truth')
    ax.plot([], [], 'k--', label='prediction')
    ax.legend(loc='upper right', fontsize=7, ncol=2)
    ax.set_xlim(-extent, extent)
    ax.set_ylim(-extent, extent)
    ax.set_aspect('equal')
    ax.set_xlabel('x (m, LiDAR frame)')
    ax.set_ylabel('y (m)')
    ax.set_title(title)
    fig.tight_layout()
    out = Path(out)
    fig.savefig(out, dpi=110)
    return out
