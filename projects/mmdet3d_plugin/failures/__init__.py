"""Why a distributed run failed: collected and reported after the launch.

Each rank records its uncaught exception in torch elastic's error file
(:func:`record_errors`) and its host, pid and memory in
``rank_info.json``; after a failed launch, :func:`report_failed_run`
reads them, tells causes from victims, shows identical errors once, looks
the cause up in :data:`CAUSES` and writes ``failure_report.json``.

The pieces below the engine (the error handler and reader, frames, the
cause table) are in :mod:`projects.mmdet3d_plugin.diagnostics`; their
names are re-exported here.
"""
from ..diagnostics.causes import CAUSES, Cause, find_cause, signal_hint
from ..diagnostics.error_files import RankErrorHandler, read_error_file
from .build import build_report
from .collect import RankFailure, collect_failures
from .error_files import record_errors
from .rank_info import note_rank_context
from .report import report_failed_run, write_report
from .text import format_report

__all__ = [
    'CAUSES', 'Cause', 'RankErrorHandler', 'RankFailure', 'build_report',
    'collect_failures', 'find_cause', 'format_report', 'note_rank_context',
    'read_error_file', 'record_errors', 'report_failed_run', 'signal_hint',
    'write_report'
]
