"""nuscenes-devkit's ``DetectionConfig`` with ``class_names`` as a list.

Works around nuscenes-devkit (1.1.x, 1.2.0): ``DetectionConfig.__init__``
sets ``self.class_names = self.class_range.keys()``, a ``dict_keys`` view,
which cannot be pickled, so any dataset or metric holding the config (as
mmdet3d's ``NuScenesMetric`` and UniAD's and BEVFormer's datasets do with
``eval_detection_configs``) breaks DataLoader workers started by ``spawn``
or ``forkserver``, and ``copy.deepcopy`` of the metric, with ``TypeError:
cannot pickle 'dict_keys' object``. The devkit is not edited.

:class:`PicklableDetectionConfig` is the devkit's config with a list;
:func:`reduce_detection_config` pickles a devkit config as one (what
:class:`~projects.mmdet3d_plugin.pickling.PicklableStateMixin` does with
every devkit config it meets). Drop both once the devkit stores
``class_names`` as a list.
"""
from typing import Any, Callable, Dict, Tuple

from nuscenes.eval.detection.config import config_factory
from nuscenes.eval.detection.data_classes import DetectionConfig


class PicklableDetectionConfig(DetectionConfig):
    """nuscenes-devkit ``DetectionConfig`` with ``class_names`` as a list.

    Accepts the devkit's arguments unchanged; ``deserialize`` and
    ``serialize`` behave as the devkit's, and ``==`` compares equal to a
    devkit config with the same settings in both directions.

    Args:
        class_range (dict[str, int]): Evaluation range per class.
        dist_fcn (str): Distance function name.
        dist_ths (list[float]): Distance thresholds.
        dist_th_tp (float): Threshold for true-positive metrics.
        min_recall (float): Minimum recall.
        min_precision (float): Minimum precision.
        max_boxes_per_sample (int): Boxes allowed per sample.
        mean_ap_weight (int): Weight of mAP in NDS.

    Examples:
        >>> cfg = PicklableDetectionConfig.from_name('detection_cvpr_2019')
        >>> type(cfg.class_names)
        <class 'list'>
    """

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.class_names = list(self.class_names)

    @classmethod
    def from_config(cls,
                    config: DetectionConfig) -> 'PicklableDetectionConfig':
        """Shallow copy of a devkit config, with ``class_names`` a list.

        Args:
            config (DetectionConfig): A devkit config, e.g. from
                ``config_factory``. It is not modified.

        Returns:
            PicklableDetectionConfig: The copy; attributes other than
            ``class_names`` are the same objects as in ``config``.
        """
        if not isinstance(config, DetectionConfig):
            raise TypeError(
                'PicklableDetectionConfig.from_config: expected a nuscenes '
                f'DetectionConfig, got {type(config).__qualname__}; build '
                'one with nuscenes.eval.detection.config.config_factory.')
        new = cls.__new__(cls)
        new.__dict__.update(vars(config))
        new.class_names = list(config.class_names)
        return new

    @classmethod
    def from_name(cls, eval_version: str) -> 'PicklableDetectionConfig':
        """Picklable equivalent of the devkit's ``config_factory``.

        Args:
            eval_version (str): Name of a devkit detection config, e.g.
                'detection_cvpr_2019'.

        Returns:
            PicklableDetectionConfig: The config.
        """
        try:
            return cls.from_config(config_factory(eval_version))
        except AssertionError as exc:
            raise ValueError(
                f'PicklableDetectionConfig: unknown eval_version '
                f'{eval_version!r}; expected the name of a file in '
                'nuscenes/eval/detection/configs/, e.g. '
                "'detection_cvpr_2019'.") from exc


def _rebuild_config(state: Dict[str, Any]) -> PicklableDetectionConfig:
    new = PicklableDetectionConfig.__new__(PicklableDetectionConfig)
    new.__dict__.update(state)
    return new


def reduce_detection_config(
        config: DetectionConfig) -> Tuple[Callable, Tuple[dict]]:
    """A reduce value that unpickles a devkit config as a picklable one.

    For ``reducer_override`` of a pickler; the config is not modified.

    Args:
        config (DetectionConfig): A devkit config.

    Returns:
        tuple: ``(rebuild, (state, ))``, loading as a
        :class:`PicklableDetectionConfig` with the same settings.
    """
    state = dict(vars(config))
    state['class_names'] = list(config.class_names)
    return (_rebuild_config, (state, ))


__all__ = ['PicklableDetectionConfig', 'reduce_detection_config']
