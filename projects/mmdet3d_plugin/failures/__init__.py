"""Why a distributed run failed: error files, the cause table, the report.

Each rank records its uncaught exception in torch elastic's error file
(:func:`record_errors`) and its host, pid and memory in
``rank_info.json``; after a failed launch, :func:`report_failed_run`
reads them, tells causes from victims, shows identical errors once, looks
the cause up in :data:`CAUSES` and writes ``failure_report.json``.
"""
from .causes import CAUSES, Cause, find_cause, signal_hint
from .collect import RankFailure, collect_failures
from .error_files import RankErrorHandler, read_error_file, record_errors
from .rank_info import note_rank_context
from .report import (build_report, format_report, report_failed_run,
                     write_report)

__all__ = [
    'CAUSES', 'Cause', 'RankErrorHandler', 'RankFailure', 'build_report',
    'collect_failures', 'find_cause', 'format_report', 'note_rank_context',
    'read_error_file', 'record_errors', 'report_failed_run', 'signal_hint',
    'write_report'
]
