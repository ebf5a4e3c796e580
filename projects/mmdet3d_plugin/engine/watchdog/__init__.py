"""The parts of ``DistWatchdogHook``: verdict, its text, monitor thread,
ending a hung rank. The stacks, frames and error files it uses are
:mod:`projects.mmdet3d_plugin.failures`."""
from .abort import DistWatchdogHang, end_process
from .hang_text import format_report, hang_message, stuck_callstack
from .monitor import HangMonitor, new_watchdog_group
from .verdict import (PHASE_LEAD, PHASES, HangVerdict, PhaseStatus,
                      RankStacks, RankStatus, find_stuck, hang_found,
                      phase_deadline)

__all__ = [
    'DistWatchdogHang', 'HangMonitor', 'HangVerdict', 'PHASES', 'PHASE_LEAD',
    'PhaseStatus', 'RankStacks', 'RankStatus', 'end_process', 'find_stuck',
    'format_report', 'hang_found', 'hang_message', 'new_watchdog_group',
    'phase_deadline', 'stuck_callstack'
]
