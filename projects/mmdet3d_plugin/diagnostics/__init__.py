"""What a failed or hung run leaves behind, read and written by the same
pieces: torch elastic error files, frames and stacks, the cause table of
known failures, the unused-parameter report. Below ``engine``: the
watchdog, the hooks, the failure report and the tools all use them."""
from .causes import (CAUSES, KNOWN_ERRORS, Cause, KnownError, find_cause,
                     is_peer_death, known_error, signal_hint, signal_name)
from .error_files import (ERROR_FILE_ENV, DescribedError, RankErrorHandler,
                          error_file_data, read_error_file)
from .frames import (Frame, describe_frame, exception_lines, innermost,
                     is_stdlib, is_user_file, raising_frame, short_path,
                     user_frame)
from .identity import rank_identity
from .stacks import (dump_all_threads, format_frames, in_collective,
                     main_thread_frames)
from .unused_report import (REPORT_FILE, is_ddp_unused_error,
                            parse_unused_indices)

__all__ = [
    'CAUSES', 'Cause', 'DescribedError', 'ERROR_FILE_ENV', 'Frame',
    'KNOWN_ERRORS', 'KnownError', 'REPORT_FILE', 'RankErrorHandler',
    'describe_frame', 'dump_all_threads', 'error_file_data',
    'exception_lines', 'find_cause', 'format_frames', 'in_collective',
    'innermost', 'is_ddp_unused_error', 'is_peer_death', 'is_stdlib',
    'is_user_file', 'known_error', 'main_thread_frames',
    'parse_unused_indices', 'raising_frame', 'rank_identity',
    'read_error_file', 'short_path', 'signal_hint', 'signal_name', 'user_frame'
]
