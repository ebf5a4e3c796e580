"""Ground truth of the generated nuScenes val split, submitted as the
predictions of a 0.x model, scored by nuscenes-devkit through
``SafeNuScenesMetric`` (``backend='devkit'``): the box convention's
mASE / mAOE, unconverted and converted.

Four ways to the predictions of each frame's ground-truth boxes ``G``
(1.x convention, from the info file):

* ``boxes, unconverted``: ``B(G)``, the boxes a 0.x model outputs, read
  by 1.x code as they are (``B`` = ``to_new_boxes``);
* ``boxes, converted``: ``B(B(G))``, the tool's box map applied to them;
* ``CenterHead, unconverted``: a 0.x CenterPoint that predicts ``B(G)``
  exactly: the shipped pillar02 head whose last layers pass through their
  input, fed each task's targets of ``B(G)`` in 0.x's code (cell offset,
  height, log sizes, sin and cos of the 0.x yaw, velocity, a heatmap
  peak), decoded by the 1.x head (``predict_by_feat``, rotated NMS);
* ``CenterHead, converted``: the same head after the tool's conversion of
  its state dict, decoded the same way.
"""
import copy
import math
from typing import Dict, List, Tuple

import torch
from mmengine.registry import init_default_scope

from tests.helpers.box_heads import build_head, lidar_metas
from tests.helpers.model_steps import load

PREFIX = dict(pts='samples/LIDAR_TOP', img='', sweeps='sweeps/LIDAR_TOP')
#: Heatmap logits at a box's cell and elsewhere (sigmoid 1.0 and 4.5e-5,
#: below the head's score_threshold 0.1).
PEAK, FLOOR = 10.0, -10.0
ROWS = ('boxes, unconverted', 'boxes, converted', 'CenterHead, unconverted',
        'CenterHead, converted')


def val_dataset(root):
    """The val split of the generated data (1.x infos)."""
    from projects.mmdet3d_plugin.datasets.safe_nuscenes_dataset import (
        SafeNuScenesDataset)
    init_default_scope('mmdet3d')
    return SafeNuScenesDataset(
        data_root=str(root), ann_file='nuscenes_infos_val.pkl',
        data_prefix=PREFIX, pipeline=[],
        metainfo=dict(version='v1.0-mini'), test_mode=True)


def ground_truth(dataset) -> List[Tuple[torch.Tensor, torch.Tensor]]:
    """Each frame's ground-truth boxes (N, 9, LiDAR, 1.x) and labels."""
    frames = []
    for idx in range(len(dataset)):
        ann = dataset.get_data_info(idx)['eval_ann_info']
        frames.append((ann['gt_bboxes_3d'].tensor.clone(),
                       torch.as_tensor(ann['gt_labels_3d']).long()))
    return frames


def evaluate(dataset, root, predictions, out_dir) -> Dict[str, float]:
    """nuscenes-devkit's scores of ``predictions`` (per frame: boxes,
    labels, scores), through ``SafeNuScenesMetric(backend='devkit')``."""
    from mmdet3d.structures import LiDARInstance3DBoxes
    from projects.mmdet3d_plugin.evaluation.metrics.safe_nuscenes_metric \
        import SafeNuScenesMetric
    metric = SafeNuScenesMetric(
        data_root=str(root), ann_file=f'{root}/nuscenes_infos_val.pkl',
        metric='bbox', backend='devkit', jsonfile_prefix=str(out_dir))
    metric.dataset_meta = dataset.metainfo
    samples = [
        dict(sample_idx=idx,
             pred_instances_3d=dict(
                 bboxes_3d=LiDARInstance3DBoxes(boxes, box_dim=9),
                 scores_3d=scores, labels_3d=labels),
             pred_instances=dict())
        for idx, (boxes, labels, scores) in enumerate(predictions)
    ]
    metric.process({}, samples)
    raw = metric.compute_metrics(metric.results)
    out = {key.split('/', 1)[1]: value for key, value in raw.items()}
    keep = ('mASE', 'mAOE', 'mAP', 'NDS')
    scores = {key: out[key] for key in keep}
    for name in dataset.metainfo['classes']:
        scores[f'{name}_scale_err'] = out[f'{name}_scale_err']
        scores[f'{name}_orient_err'] = out[f'{name}_orient_err']
    return scores


class CenterHeadOracle:
    """The shipped pillar02 CenterHead as a 0.x model that predicts given
    boxes: each task's last layers (3x3 convolutions) pass the centre
    value of their input's first channels through; the input holds the
    0.x code of the boxes."""

    def __init__(self, config: str = 'pillar02'):
        cfg = load(config)
        self.head = build_head(cfg.model.pts_bbox_head,
                               cfg.model.train_cfg.pts,
                               cfg.model.test_cfg.pts)
        coder = cfg.model.pts_bbox_head.bbox_coder
        self.cell = coder.voxel_size[0] * coder.out_size_factor
        self.origin = coder.pc_range[:2]
        # The heatmap's side: the voxel grid over the output stride.
        self.size = cfg.model.train_cfg.pts.grid_size[0] // \
            coder.out_size_factor
        self.tasks = [list(t['class_names']) for t in
                      cfg.model.pts_bbox_head.tasks]
        self.classes = [name for names in self.tasks for name in names]
        with torch.no_grad():
            for task in self.head.task_heads:
                for name in task.heads:
                    last = getattr(task, name)[-1]
                    last.weight.zero_()
                    last.bias.zero_()
                    middle = last.weight.shape[-1] // 2
                    for c in range(last.weight.shape[0]):
                        last.weight[c, c, middle, middle] = 1.0

    def _targets(self, boxes: torch.Tensor, labels: torch.Tensor,
                 class_names) -> List[Dict[str, torch.Tensor]]:
        """Each task's last-layer inputs for 0.x-convention ``boxes``."""
        n = self.size
        inputs = []
        for task, names in zip(self.head.task_heads, self.tasks):
            maps = {name: torch.zeros(1, getattr(task, name)[-1].in_channels,
                                      n, n) for name in task.heads}
            maps['heatmap'][0, :len(names)] = FLOOR
            for box, label in zip(boxes, labels):
                name = class_names[int(label)]
                if name not in names:
                    continue
                fx = (box[0] - self.origin[0]) / self.cell
                fy = (box[1] - self.origin[1]) / self.cell
                ix, iy = int(math.floor(fx)), int(math.floor(fy))
                if not (0 <= ix < n and 0 <= iy < n):
                    continue
                maps['reg'][0, :2, iy, ix] = torch.stack([fx - ix, fy - iy])
                maps['height'][0, 0, iy, ix] = box[2] + box[5] / 2
                maps['dim'][0, :3, iy, ix] = box[3:6].log()
                maps['rot'][0, :2, iy, ix] = torch.stack(
                    [box[6].sin(), box[6].cos()])
                maps['vel'][0, :2, iy, ix] = box[7:9]
                maps['heatmap'][0, names.index(name), iy, ix] = PEAK
            inputs.append(maps)
        return inputs

    def predict(self, old_boxes, labels, class_names):
        """The 1.x head's boxes, labels and scores for one frame whose 0.x
        model predicts ``old_boxes``."""
        inputs = self._targets(old_boxes, labels, class_names)
        with torch.no_grad():
            preds = [[{name: getattr(task, name)[-1](maps[name])
                       for name in task.heads}]
                     for task, maps in zip(self.head.task_heads, inputs)]
            [out] = self.head.predict_by_feat(preds, lidar_metas(1))
        names = [self.classes[int(i)] for i in out.labels_3d]
        labels = torch.tensor([class_names.index(n) for n in names],
                              dtype=torch.long)
        return out.bboxes_3d.tensor, labels, out.scores_3d

    def converted(self, convert) -> 'CenterHeadOracle':
        """A copy whose head's state dict went through ``convert``."""
        other = copy.copy(self)
        other.head = copy.deepcopy(self.head)
        state = dict(other.head.state_dict())
        convert(state)
        other.head.load_state_dict(state)
        return other


def gt_as_prediction_table(root, out_dir) -> Dict[str, Dict[str, float]]:
    """The scores of :data:`ROWS` on the generated val split."""
    from projects.mmdet3d_plugin.box_convention.boxes import to_new_boxes
    from projects.mmdet3d_plugin.box_convention.centerpoint import (
        centerhead_keys, convert_centerhead)
    dataset = val_dataset(root)
    frames = ground_truth(dataset)
    classes = list(dataset.metainfo['classes'])
    old = [(to_new_boxes(boxes), labels) for boxes, labels in frames]

    def ones(labels):
        return torch.ones(len(labels))

    oracle = CenterHeadOracle()
    converted = oracle.converted(
        lambda state: convert_centerhead(state, centerhead_keys(state)))
    predictions = {
        ROWS[0]: [(b, lab, ones(lab)) for b, lab in old],
        ROWS[1]: [(to_new_boxes(b), lab, ones(lab)) for b, lab in old],
        ROWS[2]: [oracle.predict(b, lab, classes) for b, lab in old],
        ROWS[3]: [converted.predict(b, lab, classes) for b, lab in old],
    }
    return {row: evaluate(dataset, root, predictions[row],
                          f'{out_dir}/{i}')
            for i, row in enumerate(ROWS)}
