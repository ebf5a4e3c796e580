"""Pickling for processes started by spawn or forkserver: the audit that
names what cannot be pickled and where, the check of an object as a worker
receives it, and pickling by state that survives nuscenes-devkit's
``DetectionConfig``. Below ``datasets`` and ``evaluation``, which both
pickle by state."""
