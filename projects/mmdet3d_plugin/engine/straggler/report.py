"""The content of ``rank_timing.json`` (the verdict first, then the
figures it was drawn from) and the report in words: the log's per-rank
table and the one-line summary the demo prints."""
from typing import Optional, Sequence, Tuple

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


def _ms(value: Optional[float]) -> str:
    return '-' if value is None else f'{value:.1f}'


def format_table(report: dict) -> str:
    """Per rank: host, data wait, compute, own step, iteration, workers.

    Args:
        report (dict): The content of ``rank_timing.json``.

    Returns:
        str: The table, a line per rank, the straggler marked with ``<``.
    """
    rows = [
        f'{"rank":>4}  {"host":<16}{"data wait":>10}{"compute":>10}'
        f'{"step":>10}{"iter":>10}{"workers":>8}   (ms per iteration)'
    ]
    for fig in report['ranks']:
        mark = '  <' if fig['rank'] == report['slowest_rank'] else ''
        rows.append(
            f'{fig["rank"]:>4}  {str(fig.get("host"))[:15]:<16}'
            f'{_ms(fig["data_wait_ms"]):>10}{_ms(fig["compute_ms"]):>10}'
            f'{_ms(fig["step_ms"]):>10}{_ms(fig["iter_ms"]):>10}'
            f'{fig.get("num_workers", "-"):>8}{mark}')
    return '\n'.join(rows)


def describe(report: dict) -> str:
    """The log message of a report with a straggler: verdict, table, fix.
    """
    r = report['slowest_rank']
    first, last = report['iterations']
    med = report['others_median']
    fig = report['ranks'][r]
    head = (f'StragglerHook: rank {r} is {report["bound"]}-bound over '
            f'iterations {first}-{last}: data wait + compute '
            f'{_ms(fig["step_ms"])} ms per iteration vs '
            f'{_ms(med["step_ms"])} ms (median of the others); '
            f'{report["margin"]["rule"]}')
    fix = report['fix']
    if report['bound'] == 'input':
        line = (f'fix: num_workers {fix["current_num_workers"]} -> '
                f'{fix["num_workers_needed"]} (a batch loads in '
                f'~{fix["load_ms_per_batch"]:.0f} ms, the step without its '
                f'wait for data takes {fix["step_ms"]:.0f} ms)')
    else:
        line = 'look at: ' + fix['hints'][0]
    hints = '\n'.join(f'  - {h}' for h in fix['hints'][1:] if h)
    return '\n'.join([head, format_table(report), line, hints])


def summary_line(report: dict) -> str:
    """One line of what the hook saw (the last window), for the demo.

    Args:
        report (dict): The content of ``rank_timing.json``.

    Returns:
        str: E.g. ``StragglerHook: 2 ranks, data wait 13 ms, compute
        480 ms per iteration: no straggler (input share 3 %)``.
    """
    n = report['world_size']
    med = report.get('median') or {}
    data, compute = med.get('data_wait_ms'), med.get('compute_ms')
    head = f'StragglerHook: {n} rank{"s" if n != 1 else ""}'
    if data is None or compute is None:
        return f'{head}: no iteration measured'
    head += (f', data wait {data:.0f} ms, compute {compute:.0f} ms per '
             'iteration')
    if report['slowest_rank'] is None:
        share = 100 * data / max(data + compute, 1e-9)
        verdict = 'no straggler' if n > 1 else 'one process, no comparison'
        return f'{head}: {verdict} (input share {share:.0f} %)'
    r = report['slowest_rank']
    fig = report['ranks'][r]
    other = report['others_median']
    if report['bound'] == 'input':
        fix = report['fix']
        return (f'{head}: rank {r} is input-bound (data wait '
                f'{fig["data_wait_ms"]:.0f} ms vs {other["data_wait_ms"]:.0f}'
                f' ms): num_workers {fix["current_num_workers"]} -> '
                f'{fix["num_workers_needed"]}')
    return (f'{head}: rank {r} is compute-bound (compute '
            f'{fig["compute_ms"]:.0f} ms vs {other["compute_ms"]:.0f} ms)')
