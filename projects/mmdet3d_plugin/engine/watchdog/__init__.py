"""The parts of ``DistWatchdogHook``: verdict, its text, monitor thread,
ending a hung rank. The stacks, frames and error files it uses are
:mod:`projects.mmdet3d_plugin.failures`."""
