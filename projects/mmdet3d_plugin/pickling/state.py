"""Pickling by state that survives nuscenes-devkit's ``DetectionConfig``.

:class:`PicklableStateMixin` gives a class (the dataset, the metric) a
``__reduce_ex__`` that pickles its state with a pickler converting, wherever
they sit in the state, devkit ``DetectionConfig`` objects into
:class:`~projects.mmdet3d_plugin.compat.PicklableDetectionConfig` (the
devkit keeps ``class_names`` as an unpicklable ``dict_keys``; see
:mod:`~projects.mmdet3d_plugin.compat.nuscenes_class_names`) and ``dict``
views into views of the unpickled dict. The live objects are not modified.
When something else cannot be pickled, it raises a ``TypeError`` naming the
attribute path and the fix, found by :func:`~.audit.find_offenders`.
"""
import collections
import gc
import io
import pickle
from typing import Any

from nuscenes.eval.detection.data_classes import DetectionConfig

from ..compat.nuscenes_class_names import reduce_detection_config
from .audit import (WORKER_CONTEXT, auditing, find_offenders,
                    unpicklable_message)

_VIEW_KINDS = {}
for _mapping in (dict(), collections.OrderedDict()):
    _VIEW_KINDS[type(_mapping.keys())] = 'keys'
    _VIEW_KINDS[type(_mapping.values())] = 'values'
    _VIEW_KINDS[type(_mapping.items())] = 'items'
del _mapping


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
            return reduce_detection_config(obj)
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


__all__ = ['PicklableStateMixin', 'dumps_converted']
