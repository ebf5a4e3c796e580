"""nuScenes metric that can be pickled and deep-copied."""
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
