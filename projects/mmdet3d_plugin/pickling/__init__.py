"""Pickling for processes started by spawn or forkserver: the audit that
names what cannot be pickled and where, the check of an object as a worker
receives it, and pickling by state that survives nuscenes-devkit's
``DetectionConfig``. Below ``datasets`` and ``evaluation``, which both
pickle by state."""
from .audit import (WORKER_CONTEXT, Offender, auditing, find_offenders,
                    find_unpicklable, fix_hint, unpicklable_message)
from .check import PickleReport, check_picklable, format_report
from .state import PicklableStateMixin, dumps_converted

__all__ = [
    'Offender', 'PicklableStateMixin', 'PickleReport', 'WORKER_CONTEXT',
    'auditing', 'check_picklable', 'dumps_converted', 'find_offenders',
    'find_unpicklable', 'fix_hint', 'format_report', 'unpicklable_message'
]
