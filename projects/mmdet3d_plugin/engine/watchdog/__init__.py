"""The distributed watchdog: ``DistWatchdogHook``
(``dist_watchdog_hook.py``) and its parts: verdict, its text
(``hang_text``), monitor thread (``monitor``), ending a hung rank
(``abort``). The stacks, frames and error files it uses are
:mod:`projects.mmdet3d_plugin.failures`."""
