"""The report in words: the log's per-rank table and the one-line summary
the demo prints."""
from typing import Optional


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
