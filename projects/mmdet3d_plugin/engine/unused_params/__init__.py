"""Unused parameters under DDP: what ``DDPUnusedParamHook`` runs on.

:class:`~projects.mmdet3d_plugin.engine.hooks.DDPUnusedParamHook` marks
which parameters receive a gradient in its checked iterations (``marks``),
counts only those the loss reaches (``autograd``), gathers the unused sets
of all ranks (``gather``) and keeps them (``summary``); ``advice`` turns
them into the report (``unused_params.json``) and the cheapest
``find_unused_parameters`` setting that is correct, ``table`` into the
log's table, and ``crash`` retells DDP's error with names.
:func:`~projects.mmdet3d_plugin.cli.find_unused_parameters` runs the same
check for a config in one process, before a multi-GPU job is launched.
"""
from ...failures.unused_report import (REPORT_FILE, is_ddp_unused_error,
                                          parse_unused_indices)
from .advice import (COST_NOTE, build_report, configured_find_unused,
                     recommend, wrapper_config_line)
from .autograd import reachable_params
from .run_iter_patch import (MAX_CRASH_NAMES, ddp_error_message, unwrap_run_iter,
                    will_fail_message, wrap_run_iter)
from .gather import gather_unused, report_group
from .marks import mark_gradients, should_sync
from .summary import UnusedParamSummary
from .table import describe, format_table

__all__ = [
    'COST_NOTE', 'MAX_CRASH_NAMES', 'REPORT_FILE', 'UnusedParamSummary',
    'build_report', 'configured_find_unused', 'ddp_error_message',
    'describe', 'format_table', 'gather_unused', 'is_ddp_unused_error',
    'mark_gradients', 'parse_unused_indices', 'reachable_params',
    'recommend', 'report_group', 'should_sync', 'unwrap_run_iter',
    'will_fail_message', 'wrap_run_iter', 'wrapper_config_line'
]
