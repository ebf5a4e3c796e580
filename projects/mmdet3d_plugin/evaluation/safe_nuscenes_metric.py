"""nuScenes metric that can be pickled and deep-copied."""
import os.path as osp
from types import SimpleNamespace
from typing import Dict, List, Optional

import mmengine
from mmengine.logging import print_log
from mmdet3d.evaluation.metrics import NuScenesMetric
from mmdet3d.registry import METRICS

from ..datasets.picklable import PicklableDetectionConfig, PicklableStateMixin


@METRICS.register_module()
class SafeNuScenesMetric(PicklableStateMixin, NuScenesMetric):
    """``NuScenesMetric`` whose detection config can be pickled.

    The stock metric holds the devkit's ``DetectionConfig`` whose
    ``class_names`` is a ``dict_keys`` view, so ``copy.deepcopy`` and
    ``pickle`` of the metric (or of an evaluator holding it) fail. This one
    holds a :class:`PicklableDetectionConfig` instead and otherwise computes
    exactly what ``NuScenesMetric`` computes. Takes the same arguments.

    When the model predicts no box at all (early in training, or with a
    high score threshold), the devkit stops with ``Invalid box type:
    None``; this metric then reports what the devkit computes for a class
    without predictions, for every class (AP 0, true-positive errors 1, NDS
    0), and warns, so that validation does not end the training run.

    Args:
        *args: Positional arguments of ``NuScenesMetric`` (``data_root``,
            ``ann_file``, ...).
        **kwargs: Keyword arguments of ``NuScenesMetric`` (``metric``,
            ``eval_version``, ``jsonfile_prefix``, ...).

    Examples:
        >>> val_evaluator = dict(
        ...     type='SafeNuScenesMetric',
        ...     data_root='data/nuscenes/',
        ...     ann_file='data/nuscenes/nuscenes_infos_val.pkl',
        ...     metric='bbox')
    """
    pickle_context = ('copy.deepcopy and processes started by spawn or '
                      'forkserver receive the metric by pickle')

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.eval_detection_configs = PicklableDetectionConfig.from_config(
            self.eval_detection_configs)

    def _evaluate_single(
            self,
            result_path: str,
            classes: Optional[List[str]] = None,
            result_name: str = 'pred_instances_3d') -> Dict[str, float]:
        """``NuScenesMetric._evaluate_single``, which also scores a result
        file without any box.

        The result file is read again only when the devkit fails, to tell
        an empty one (scored here) from any other failure (raised as is).
        """
        try:
            return super()._evaluate_single(result_path, classes,
                                            result_name)
        except Exception:  # the devkit raises a bare Exception
            predictions = mmengine.load(result_path)['results']
            if any(predictions.values()):
                raise
        print_log(
            f'SafeNuScenesMetric: {result_name}: the model predicted no box '
            f'in any of the {len(predictions)} samples; every AP is 0 and '
            'NDS is 0 (the nuScenes devkit cannot evaluate an empty result '
            'file). Check the score threshold (test_cfg) if this persists.',
            logger='current',
            level=30)
        summary = self._no_predictions_summary()
        mmengine.dump(summary,
                      osp.join(osp.dirname(result_path),
                               'metrics_summary.json'),
                      indent=2)
        return self._summary_to_metrics(summary, classes, result_name)

    def _no_predictions_summary(self) -> dict:
        """The devkit's ``metrics_summary.json`` for no predictions.

        With no predicted box, the ground truth cannot change any number,
        so the devkit's own ``DetectionEval.evaluate`` runs on empty box
        sets: it accumulates "no predictions" for every class and applies
        its rules (AP 0, errors 1, nan where an error is undefined).
        """
        from nuscenes.eval.common.data_classes import EvalBoxes
        from nuscenes.eval.detection.evaluate import DetectionEval
        state = SimpleNamespace(cfg=self.eval_detection_configs,
                                gt_boxes=EvalBoxes(),
                                pred_boxes=EvalBoxes(),
                                verbose=False)
        metrics, _ = DetectionEval.evaluate(state)
        return metrics.serialize()

    def _summary_to_metrics(self, summary: dict, classes: List[str],
                            result_name: str) -> Dict[str, float]:
        """Metric keys of ``NuScenesMetric`` from a devkit summary."""
        detail = dict()
        prefix = f'{result_name}_NuScenes'
        for name in classes:
            for k, v in summary['label_aps'][name].items():
                detail[f'{prefix}/{name}_AP_dist_{k}'] = float(f'{v:.4f}')
            for k, v in summary['label_tp_errors'][name].items():
                detail[f'{prefix}/{name}_{k}'] = float(f'{v:.4f}')
            for k, v in summary['tp_errors'].items():
                detail[f'{prefix}/{self.ErrNameMapping[k]}'] = float(
                    f'{v:.4f}')
        detail[f'{prefix}/NDS'] = summary['nd_score']
        detail[f'{prefix}/mAP'] = summary['mean_ap']
        return detail
