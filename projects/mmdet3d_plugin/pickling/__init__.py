"""Pickling for processes started by spawn or forkserver: the audit that
names what cannot be pickled and where (``audit``), the check of an object
as a worker receives it (``check``), and pickling by state that survives
nuscenes-devkit's ``DetectionConfig`` (``state``). Below ``datasets`` and
``evaluation``, which both pickle by state.

Exports :func:`find_unpicklable` (the audit imports the standard library
only, so the package stays cheap to import)::

    from projects.mmdet3d_plugin.pickling import find_unpicklable
    find_unpicklable(dataset)  # ['<path> (<type>): <error>', ...]
"""
from .audit import find_unpicklable

__all__ = ['find_unpicklable']
