"""The parts of ``StragglerHook``: the clocks and sums of each rank
(``timing``), the straggler and its fix (``verdict``), the report
(``report``) and its text (``text``)."""
from .report import REPORT_FILE, build_report
from .text import describe, format_table, summary_line
from .timing import (FIELDS, CudaEventClock, HostClock, IterationMarks,
                     RankWindow, figures, gather_sums)
from .verdict import (MIN_MS, RATIO, compute_fix, input_fix, judge,
                      margin_rule, medians)

__all__ = [
    'CudaEventClock', 'FIELDS', 'HostClock', 'IterationMarks', 'MIN_MS',
    'RATIO', 'REPORT_FILE', 'RankWindow', 'build_report', 'compute_fix',
    'describe', 'figures', 'format_table', 'gather_sums', 'input_fix',
    'judge', 'margin_rule', 'medians', 'summary_line'
]
