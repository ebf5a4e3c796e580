"""The parts of ``DistWatchdogHook``: stacks, verdict, monitor thread,
error file."""
from .abort import DistWatchdogHang, HangErrorHandler, end_process
from .monitor import HangMonitor, new_watchdog_group
from .stacks import (describe_frame, dump_all_threads, in_collective,
                     innermost, main_thread_frames)
from .verdict import (PHASES, HangVerdict, RankStacks, RankStatus,
                      find_stuck, format_report, hang_found, hang_message,
                      stuck_callstack)

__all__ = [
    'DistWatchdogHang', 'HangErrorHandler', 'HangMonitor', 'HangVerdict',
    'PHASES', 'RankStacks', 'RankStatus', 'describe_frame',
    'dump_all_threads', 'end_process', 'find_stuck', 'format_report',
    'hang_found', 'hang_message', 'in_collective', 'innermost',
    'main_thread_frames', 'new_watchdog_group', 'stuck_callstack'
]
