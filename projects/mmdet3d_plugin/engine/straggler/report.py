"""The content of ``rank_timing.json``: the verdict first, then the figures
it was drawn from."""
from typing import Sequence, Tuple

from .verdict import MEASURED, judge, margin_rule, medians

#: Report file, relative to ``runner.log_dir``.
REPORT_FILE = 'rank_timing.json'


def build_report(ranks: Sequence[dict],
                 iterations: Tuple[int, int],
                 ratio: float,
                 min_ms: float,
                 measure: dict) -> dict:
    """The report of one window.

    Args:
        ranks (Sequence[dict]): Per-rank figures, index = rank: the means
            of :func:`..timing.figures` plus where the rank runs.
        iterations (tuple[int, int]): First and last iteration (1-based)
            of the window.
        ratio (float): Margin factor (see :mod:`.verdict`).
        min_ms (float): Margin in milliseconds.
        measure (dict): How the figures were taken (clock, compute span).

    Returns:
        dict: ``slowest_rank``, ``bound`` and ``fix`` at the top, then
        ``slow_ranks``, ``lead_ms``, ``iterations``, ``world_size``,
        ``margin``, ``median`` (over all ranks), ``others_median`` (over
        the ranks but the straggler; None without one), ``ranks``,
        ``measure`` and ``hook_cost``.
    """
    verdict = judge(ranks, ratio, min_ms)
    r = verdict['slowest_rank']
    others = None if r is None else medians(
        [fig for i, fig in enumerate(ranks) if i != r])
    costs = [fig['hook_ms_per_iter'] for fig in ranks
             if fig.get('hook_ms_per_iter') is not None]
    iter_ms = medians(ranks)
    hook_ms = max(costs) if costs else None
    share = None
    if hook_ms is not None and iter_ms and iter_ms['iter_ms']:
        share = round(100 * hook_ms / iter_ms['iter_ms'], 4)
    return dict(
        slowest_rank=r,
        bound=verdict['bound'],
        fix=verdict['fix'],
        slow_ranks=verdict['slow_ranks'],
        lead_ms=verdict['lead_ms'],
        iterations=list(iterations),
        world_size=len(ranks),
        margin=dict(ratio=ratio, min_ms=min_ms,
                    rule=margin_rule(ratio, min_ms)),
        median=medians(ranks),
        others_median=others,
        ranks=list(ranks),
        measure=dict(measure, figures=list(MEASURED)),
        hook_cost=dict(ms_per_iter=hook_ms, percent_of_iter=share))
