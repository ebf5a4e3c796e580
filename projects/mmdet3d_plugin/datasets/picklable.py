"""Pickling that survives nuscenes-devkit's ``DetectionConfig``.

Works around nuscenes-devkit (1.1.x, 1.2.0): ``DetectionConfig.__init__``
sets ``self.class_names = self.class_range.keys()``, a ``dict_keys`` view,
which cannot be pickled, so any dataset or metric holding the config (as
UniAD's and BEVFormer's datasets do with ``eval_detection_configs``) breaks
DataLoader workers started by ``spawn`` or ``forkserver`` with
``TypeError: cannot pickle 'dict_keys' object``. The devkit is not edited.

Two pieces:

* :class:`PicklableDetectionConfig`, a ``DetectionConfig`` whose
  ``class_names`` is a ``list``; it compares equal (``==``) to the devkit's
  config and serializes identically.
* :class:`PicklableStateMixin`, which gives a class a ``__reduce_ex__`` that
  pickles its state with a pickler converting, wherever they sit in the
  state, devkit ``DetectionConfig`` objects into
  :class:`PicklableDetectionConfig` and ``dict`` views into views of the
  unpickled dict. The live objects are not modified. When something else
  cannot be pickled, it raises a ``TypeError`` naming the attribute path and
  the fix, found by :func:`projects.mmdet3d_plugin.datasets.find_unpicklable`.

Drop both once the devkit stores ``class_names`` as a list.
"""
import collections
import gc
import io
import pickle
from typing import Any, Dict

from nuscenes.eval.detection.config import config_factory
from nuscenes.eval.detection.data_classes import DetectionConfig

from .pickle_audit import (WORKER_CONTEXT, auditing, find_offenders,
                           unpicklable_message)

_VIEW_KINDS = {}
for _mapping in (dict(), collections.OrderedDict()):
    _VIEW_KINDS[type(_mapping.keys())] = 'keys'
    _VIEW_KINDS[type(_mapping.values())] = 'values'
    _VIEW_KINDS[type(_mapping.items())] = 'items'
del _mapping


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


def _view_mapping(view) -> dict:
    """The dict a view looks at (the object itself, so sharing survives)."""
    referents = gc.get_referents(view)
    if len(referents) == 1 and isinstance(referents[0], dict):
        return referents[0]
    return dict(view.mapping)


def _rebuild_view(mapping: dict, kind: str):
    return getattr(mapping, kind)()


def _new_instance(cls):
    return cls.__new__(cls)


class _StatePickler(pickle.Pickler):
    """Pickler converting devkit configs and dict views on the fly."""

    def __init__(self, file, protocol: int, root: Any = None) -> None:
        super().__init__(file, protocol)
        self._root = root

    def reducer_override(self, obj):
        if obj is self._root and self._root is not None:
            # The root is pickled by state, not by its own __reduce_ex__
            # (which is what called us); self-references hit the memo.
            return (_new_instance, (type(obj), ), obj.__getstate__())
        kind = _VIEW_KINDS.get(type(obj))
        if kind is not None:
            return (_rebuild_view, (_view_mapping(obj), kind))
        if type(obj) is DetectionConfig:
            state = dict(vars(obj))
            state['class_names'] = list(obj.class_names)
            return (_rebuild_config, (state, ))
        return NotImplemented


def dumps_converted(obj: Any,
                    protocol: int = pickle.HIGHEST_PROTOCOL,
                    root: Any = None) -> bytes:
    """Pickle ``obj``, converting devkit configs and dict views.

    Args:
        obj (Any): Object to pickle.
        protocol (int): Pickle protocol. Defaults to the highest.
        root (Any, optional): An object to pickle by its ``__getstate__``
            instead of its ``__reduce_ex__``. Defaults to None.

    Returns:
        bytes: Loadable with :func:`pickle.loads`.
    """
    buffer = io.BytesIO()
    _StatePickler(buffer, protocol, root).dump(obj)
    return buffer.getvalue()


def _loads_converted(payload: bytes) -> Any:
    return pickle.loads(payload)


class PicklableStateMixin:
    """Pickle instances by state, tolerating devkit configs and dict views.

    Put it first among the bases. ``__getstate__`` / ``__setstate__`` say
    what is pickled; ``__reduce_ex__`` pickles that state with a pickler
    that converts every devkit ``DetectionConfig`` into a
    :class:`PicklableDetectionConfig` and every ``dict_keys`` /
    ``dict_values`` / ``dict_items`` into the same view of the unpickled
    dict, without touching the live objects. If something else cannot be
    pickled, the ``TypeError`` names its attribute path and the fix.
    """
    #: Why instances must pickle; ends the ``TypeError`` message.
    pickle_context: str = WORKER_CONTEXT

    @staticmethod
    def pickle_audit_dumps(obj: Any) -> bytes:
        """What ``find_unpicklable`` tests parts of instances with."""
        return dumps_converted(obj)

    def __reduce_ex__(self, protocol):
        try:
            payload = dumps_converted(self, max(protocol, 2), root=self)
        except Exception as exc:
            if auditing():
                raise
            offenders = find_offenders(self)
            raise TypeError(
                unpicklable_message(
                    type(self).__name__, self, offenders, exc,
                    self.pickle_context)) from exc
        return (_loads_converted, (payload, ))

    def __copy__(self):
        # A shallow copy, as for any object (``copy.copy`` would otherwise
        # go through ``__reduce_ex__`` and copy deeply).
        new = type(self).__new__(type(self))
        new.__dict__.update(self.__dict__)
        return new


__all__ = [
    'PicklableDetectionConfig', 'PicklableStateMixin', 'dumps_converted'
]
