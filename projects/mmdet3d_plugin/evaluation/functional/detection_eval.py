"""The nuScenes devkit's ``DetectionEval`` on arrays.

``DetectionEval`` of nuscenes-devkit 1.2.0 builds a ``DetectionBox`` per
prediction and matches them in pure Python: seconds for the 20 samples of
``mini_val``, many minutes for the 6,019 of ``val``. :func:`evaluate` takes
the same steps on arrays and returns the devkit's own result objects
(``DetectionMetrics``, ``DetectionMetricDataList``):

1. at most ``max_boxes_per_sample`` predictions a sample, and predictions for
   exactly the split's samples (``load_prediction`` and the devkit's check);
2. ``filter_eval_boxes``: distance to the ego vehicle (xy) below the class
   range, ground truth with no lidar or radar point dropped, bicycles and
   motorcycles inside a bicycle rack dropped (``points_in_box``);
3. ``accumulate``: per class and distance threshold, predictions sorted by
   score (ties: the later box first, as the devkit's reversed sort of
   ``(score, index)``), each matched greedily to the nearest untaken ground
   truth of its sample and class (first in ground-truth order among equal
   distances) when closer than the threshold (numba); precision, recall,
   confidence and the five true-positive errors (center distance, velocity
   L2, 1 - scale IoU, yaw difference with period pi for barriers, 1 -
   attribute accuracy, nan without a ground-truth attribute), then the
   devkit's ``cummean`` and interpolation at 101 recall points;
4. ``calc_ap``, ``calc_tp`` and ``DetectionMetrics`` of the devkit itself
   (nan errors for cones and barriers as in ``DetectionEval.evaluate``).

Every metric equals the devkit's to about 1e-15 (the tests compare at 1e-6).
"""
import time
from typing import Dict, NamedTuple, Sequence, Tuple

import numba
import numpy as np
from nuscenes.eval.common.utils import cummean
from nuscenes.eval.detection.algo import calc_ap, calc_tp
from nuscenes.eval.detection.constants import DETECTION_NAMES, TP_METRICS
from nuscenes.eval.detection.data_classes import (DetectionConfig,
                                                  DetectionMetricData,
                                                  DetectionMetricDataList,
                                                  DetectionMetrics)

from .gt_cache import GroundTruth
from .nusc_format import (ROTATION, SCORE, SIZE, TRANSLATION, VELOCITY,
                          NuscBoxes)

_CYCLES = (DETECTION_NAMES.index('bicycle'),
           DETECTION_NAMES.index('motorcycle'))
_BARRIER = DETECTION_NAMES.index('barrier')


class Predictions(NamedTuple):
    """All predictions, sample by sample in the result file's order.

    ``labels`` index :data:`DETECTION_NAMES`.
    """
    sample_tokens: Tuple[str, ...]
    box_start: np.ndarray
    values: np.ndarray
    labels: np.ndarray
    attrs: np.ndarray

    @classmethod
    def from_samples(cls, samples: Dict[str, NuscBoxes],
                     classes: Sequence[str]) -> 'Predictions':
        """Args:
            samples (dict[str, NuscBoxes]): Boxes by sample token.
            classes (Sequence[str]): Names of the boxes' label indices.
        """
        used = {int(x) for b in samples.values() for x in np.unique(b.labels)}
        unknown = [classes[i] for i in sorted(used)
                   if classes[i] not in DETECTION_NAMES]
        if unknown:
            raise ValueError(
                f'SafeNuScenesMetric: predicted classes {unknown} are not '
                f'nuScenes detection classes {DETECTION_NAMES}; the devkit '
                'rejects them; fix the dataset classes (metainfo)')
        to_devkit = np.array(
            [DETECTION_NAMES.index(c) if c in DETECTION_NAMES else -1
             for c in classes] or [-1], np.int64)
        boxes = list(samples.values())
        counts = [len(b) for b in boxes]
        return cls(
            sample_tokens=tuple(samples),
            box_start=np.concatenate([[0], np.cumsum(counts)
                                      ]).astype(np.int64),
            values=np.concatenate([b.values for b in boxes] or
                                  [np.zeros((0, 13))]),
            labels=to_devkit[np.concatenate(
                [b.labels for b in boxes] or [np.zeros(0, np.int64)]).astype(
                    np.int64)],
            attrs=np.concatenate([b.attrs for b in boxes] or
                                 [np.zeros(0, np.int8)]).astype(np.int64))


@numba.njit(cache=True)
def _greedy_match(pred_sample, pred_xy, gt_start, gt_xy, dist_th):
    """``accumulate``'s matching; ``pred_*`` in the sorted order,
    ``gt_start`` delimits each sample's ground truth of the class."""
    n = len(pred_sample)
    match = np.full(n, -1, np.int64)
    dist = np.full(n, np.inf)
    taken = np.zeros(len(gt_xy), np.bool_)
    for p in range(n):
        s = pred_sample[p]
        best = -1
        min_dist = np.inf
        for g in range(gt_start[s], gt_start[s + 1]):
            if not taken[g]:
                dx = pred_xy[p, 0] - gt_xy[g, 0]
                dy = pred_xy[p, 1] - gt_xy[g, 1]
                d = np.sqrt(dx * dx + dy * dy)
                if d < min_dist:
                    min_dist = d
                    best = g
        if min_dist < dist_th:
            taken[best] = True
            match[p] = best
            dist[p] = min_dist
    return match, dist


def _ego_dist(translation: np.ndarray, ego: np.ndarray) -> np.ndarray:
    dx = translation[:, 0] - ego[:, 0]
    dy = translation[:, 1] - ego[:, 1]
    return np.sqrt(dx**2 + dy**2)


def _in_bike_rack(gt: GroundTruth, candidates: np.ndarray,
                  sample: np.ndarray, points: np.ndarray) -> np.ndarray:
    """Which candidate boxes have their center in a rack of their sample."""
    inside = np.zeros(len(candidates), bool)
    racks = np.diff(gt.rack_start)[sample[candidates]]
    if not racks.any():
        return inside
    owner = np.repeat(np.arange(len(candidates)), racks)
    first = np.repeat(gt.rack_start[sample[candidates]], racks)
    rack = first + np.arange(len(owner)) - np.repeat(
        np.cumsum(racks) - racks, racks)
    v = points[candidates[owner]] - gt.rack_p1[rack]
    proj = np.einsum('rij,rj->ri', gt.rack_axes[rack], v)
    hit = ((proj >= 0) & (proj <= gt.rack_norms[rack])).all(axis=1)
    np.logical_or.at(inside, owner, hit)
    return inside


def _keep(gt: GroundTruth, sample: np.ndarray, translation: np.ndarray,
          labels: np.ndarray, class_range: np.ndarray) -> np.ndarray:
    """``filter_eval_boxes`` without the points filter."""
    keep = _ego_dist(translation, gt.ego_translation[sample]) < \
        class_range[labels]
    cycles = np.flatnonzero(keep & np.isin(labels, _CYCLES))
    keep[cycles[_in_bike_rack(gt, cycles, sample, translation)]] = False
    return keep


def _yaw(rotation: np.ndarray) -> np.ndarray:
    """The devkit's ``quaternion_yaw`` of each (w, x, y, z) row."""
    q = rotation / np.sqrt((rotation**2).sum(axis=1, keepdims=True))
    w, x, y, z = q.T
    return np.arctan2(2 * (x * y + w * z), w * w + x * x - y * y - z * z)


def _scale_err(gt_size: np.ndarray, pred_size: np.ndarray) -> np.ndarray:
    if (gt_size <= 0).any() or (pred_size <= 0).any():
        raise ValueError(
            'SafeNuScenesMetric: a matched box has a size <= 0; the devkit '
            "stops with 'sample_result sizes must be >0'; check the model's "
            'predicted dimensions')
    inter = np.prod(np.minimum(gt_size, pred_size), axis=1)
    union = np.prod(gt_size, axis=1) + np.prod(pred_size, axis=1) - inter
    return 1 - inter / union


def _orient_err(gt_yaw: np.ndarray, pred_yaw: np.ndarray,
                period: float) -> np.ndarray:
    diff = (gt_yaw - pred_yaw + period / 2) % period - period / 2
    diff = np.where(diff > np.pi, diff - 2 * np.pi, diff)
    return np.abs(diff)


def _metric_data(match: np.ndarray, dist: np.ndarray, conf: np.ndarray,
                 npos: int, errors) -> DetectionMetricData:
    """``accumulate`` after the matching loop."""
    is_tp = match >= 0
    if not is_tp.any():
        return DetectionMetricData.no_predictions()
    tp = np.cumsum(is_tp).astype(float)
    fp = np.cumsum(~is_tp).astype(float)
    prec = tp / (fp + tp)
    rec = tp / float(npos)
    rec_interp = np.linspace(0, 1, DetectionMetricData.nelem)
    prec = np.interp(rec_interp, rec, prec, right=0)
    conf_interp = np.interp(rec_interp, rec, conf, right=0)
    match_conf = conf[is_tp][::-1]
    interp = {
        key: np.interp(conf_interp[::-1], match_conf,
                       cummean(values(is_tp, match, dist))[::-1])[::-1]
        for key, values in errors.items()
    }
    return DetectionMetricData(recall=rec_interp,
                               precision=prec,
                               confidence=conf_interp,
                               **interp)


def _errors(gt: GroundTruth, gt_idx: np.ndarray, preds: Predictions,
            pred_idx: np.ndarray, pred_yaw: np.ndarray, period: float):
    """The five error functions over the matched pairs of one run."""

    def pairs(is_tp, match):
        return gt_idx[match[is_tp]], pred_idx[is_tp]

    def trans(is_tp, match, dist):
        return dist[is_tp]

    def vel(is_tp, match, dist):
        g, p = pairs(is_tp, match)
        d = preds.values[p, VELOCITY] - gt.velocity[g]
        return np.sqrt(d[:, 0]**2 + d[:, 1]**2)

    def scale(is_tp, match, dist):
        g, p = pairs(is_tp, match)
        return _scale_err(gt.size[g], preds.values[p, SIZE])

    def orient(is_tp, match, dist):
        g, p = pairs(is_tp, match)
        return _orient_err(gt.yaw[g], pred_yaw[p], period)

    def attr(is_tp, match, dist):
        g, p = pairs(is_tp, match)
        acc = (gt.attrs[g] == preds.attrs[p]).astype(float)
        return 1 - np.where(gt.attrs[g] < 0, np.nan, acc)

    return dict(trans_err=trans, vel_err=vel, scale_err=scale,
                orient_err=orient, attr_err=attr)


def check_predictions(gt: GroundTruth, preds: Predictions,
                      cfg: DetectionConfig) -> np.ndarray:
    """The devkit's checks on a result file; returns each prediction
    sample's index in ``gt``."""
    counts = np.diff(preds.box_start)
    if len(counts) and counts.max() > cfg.max_boxes_per_sample:
        worst = int(np.argmax(counts))
        raise ValueError(
            f'SafeNuScenesMetric: sample {preds.sample_tokens[worst]} has '
            f'{counts[worst]} predicted boxes; the nuScenes devkit allows at '
            f'most {cfg.max_boxes_per_sample} (max_boxes_per_sample); lower '
            "the model's test_cfg max_num / max_per_img")
    index = {t: i for i, t in enumerate(gt.sample_tokens.tolist())}
    missing = len(index) - len(set(preds.sample_tokens) & index.keys())
    extra = [t for t in preds.sample_tokens if t not in index]
    if missing or extra:
        raise ValueError(
            f'SafeNuScenesMetric: the predictions cover '
            f'{len(preds.sample_tokens)} samples, {len(extra)} of them '
            f'outside the evaluation split, and miss {missing} of its '
            f'{len(index)} samples; the devkit evaluates exactly the '
            "split's samples; evaluate the whole split's info file")
    return np.array([index[t] for t in preds.sample_tokens], np.int64)


def evaluate(gt: GroundTruth, preds: Predictions, cfg: DetectionConfig
             ) -> Tuple[DetectionMetrics, DetectionMetricDataList]:
    """What ``DetectionEval`` computes, on arrays.

    Args:
        gt (GroundTruth): The split's ground truth.
        preds (Predictions): The predictions.
        cfg (DetectionConfig): The devkit's evaluation config.

    Returns:
        tuple: ``DetectionMetrics`` and ``DetectionMetricDataList``, as
        ``DetectionEval.evaluate`` returns them.
    """
    start = time.time()
    pred_sample = np.repeat(check_predictions(gt, preds, cfg),
                            np.diff(preds.box_start))
    class_range = np.array([cfg.class_range[n] for n in DETECTION_NAMES],
                           np.float64)
    pred_t = preds.values[:, TRANSLATION]
    pred_keep = _keep(gt, pred_sample, pred_t, preds.labels, class_range)
    gt_sample = np.repeat(np.arange(len(gt.sample_tokens)),
                          np.diff(gt.box_start))
    gt_keep = _keep(gt, gt_sample, gt.translation, gt.labels, class_range)
    gt_keep &= gt.num_pts != 0
    pred_yaw = _yaw(preds.values[:, ROTATION])
    scores = preds.values[:, SCORE]

    md_list = DetectionMetricDataList()
    for class_name in cfg.class_names:
        label = DETECTION_NAMES.index(class_name)
        gt_idx = np.flatnonzero(gt_keep & (gt.labels == label))
        pred_idx = np.flatnonzero(pred_keep & (preds.labels == label))
        pred_idx = pred_idx[np.argsort(scores[pred_idx], kind='stable')[::-1]]
        gt_start = np.searchsorted(gt_sample[gt_idx],
                                   np.arange(len(gt.sample_tokens) + 1))
        period = np.pi if label == _BARRIER else 2 * np.pi
        errors = _errors(gt, gt_idx, preds, pred_idx, pred_yaw, period)
        for dist_th in cfg.dist_ths:
            if len(gt_idx) == 0:
                md = DetectionMetricData.no_predictions()
            else:
                match, dist = _greedy_match(
                    pred_sample[pred_idx],
                    np.ascontiguousarray(pred_t[pred_idx, :2]), gt_start,
                    np.ascontiguousarray(gt.translation[gt_idx, :2]),
                    float(dist_th))
                md = _metric_data(match, dist, scores[pred_idx], len(gt_idx),
                                  errors)
            md_list.set(class_name, dist_th, md)

    metrics = DetectionMetrics(cfg)
    for class_name in cfg.class_names:
        for dist_th in cfg.dist_ths:
            ap = calc_ap(md_list[(class_name, dist_th)], cfg.min_recall,
                         cfg.min_precision)
            metrics.add_label_ap(class_name, dist_th, ap)
        for metric_name in TP_METRICS:
            md = md_list[(class_name, cfg.dist_th_tp)]
            if class_name in ['traffic_cone'] and metric_name in [
                    'attr_err', 'vel_err', 'orient_err'
            ]:
                tp = np.nan
            elif class_name in ['barrier'] and metric_name in [
                    'attr_err', 'vel_err'
            ]:
                tp = np.nan
            else:
                tp = calc_tp(md, cfg.min_recall, metric_name)
            metrics.add_label_tp(class_name, metric_name, tp)
    metrics.add_runtime(time.time() - start)
    return metrics, md_list
