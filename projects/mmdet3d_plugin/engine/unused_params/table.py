"""The unused parameters as the log shows them: a table grouped by module,
under a headline and above the advice."""
from typing import Dict, List, Tuple

from .summary import UnusedParamSummary


def _module_prefix(name: str, depth: int) -> str:
    parts = name.split('.')[:-1]
    return '.'.join(parts[:depth]) or '(model)'


def format_table(summary: UnusedParamSummary, group_depth: int = 3,
                 max_names: int = 3) -> str:
    """Unused parameters grouped by module prefix, one row per group.

    Args:
        summary (UnusedParamSummary): What the checks found.
        group_depth (int): Module path components kept in the prefix.
            Defaults to 3.
        max_names (int): Names shown per row. Defaults to 3.

    Returns:
        str: The table ('' when nothing went unused).
    """
    dead = set(summary.dead)
    rows: Dict[Tuple[str, str], List[int]] = {}
    for i, ranks in summary.unused_ranks.items():
        where = ('all ranks (dead)' if i in dead else 'rank' +
                 ('s ' if len(ranks) > 1 else ' ') +
                 ','.join(map(str, ranks)))
        key = (_module_prefix(summary.names[i], group_depth), where)
        rows.setdefault(key, []).append(i)
    if not rows:
        return ''
    table = [('module', 'unused on', 'count', 'shapes', 'names')]
    for (prefix, where), indices in rows.items():
        shapes = list(dict.fromkeys(summary.shapes[i] for i in indices))
        shown = ', '.join(str(s) for s in shapes[:max_names])
        if len(shapes) > max_names:
            shown += ', ...'
        names = [summary.names[i] for i in indices]
        listed = ', '.join(names[:max_names])
        if len(names) > max_names:
            listed += f', ... (+{len(names) - max_names})'
        table.append((prefix, where, str(len(indices)), shown, listed))
    widths = [max(len(row[c]) for row in table) for c in range(5)]
    lines = ['  '.join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip()
             for row in table]
    lines.insert(1, '  '.join('-' * w for w in widths))
    return '\n'.join(lines)


def describe(report: dict, table: str) -> str:
    """Headline, table and advice, as logged and printed."""
    unused = (len(report['unused_on_all_ranks']) +
              len(report['unused_on_some_ranks']))
    total = report['num_parameters_checked']
    setting = (f'find_unused_parameters={report["find_unused_parameters"]}'
               if report['ddp'] else 'no DDP')
    counted = (f'{unused} of {total} trainable parameters received no '
               'gradient' if unused else
               f'all {total} trainable parameters received a gradient')
    head = (f'DDPUnusedParamHook: {counted} in iterations '
            f'{report["iterations_checked"]} (world size '
            f'{report["world_size"]}, {setting})')
    if not report['complete']:
        head += (f'; only ranks {report["ranks_reported"]} reported, so '
                 'nothing is classified as dead weight')
    parts = [head]
    if table:
        parts.append(table)
    parts.append('Recommendation: ' + report['recommendation'])
    return '\n'.join(parts)
