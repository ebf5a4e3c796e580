"""What a failed or hung run leaves behind, read and written by the same
pieces: torch elastic error files, frames and stacks, the cause table of
known failures, the unused-parameter report. Below ``engine``: the
watchdog, the hooks, the failure report and the tools all use them."""
from .unused_report import (REPORT_FILE, is_ddp_unused_error,
                            parse_unused_indices)

__all__ = ['REPORT_FILE', 'is_ddp_unused_error', 'parse_unused_indices']
