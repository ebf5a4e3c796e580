"""The root-cause report as printed at the end of a launcher's output."""
import textwrap
from typing import Any, Dict, List, Optional, Sequence

from .causes import HANG
from .classify import short_message

#: Lines of a hang message shown.
HANG_LINES = 6


def _ranks_text(ranks: Sequence[int]) -> str:
    ranks = list(ranks)
    return (f'rank {ranks[0]}' if len(ranks) == 1 else
            'ranks ' + ', '.join(str(r) for r in ranks))


def _wrap(prefix: str, text: str, width: int = 79) -> List[str]:
    return textwrap.wrap(text, width, initial_indent=prefix,
                         subsequent_indent=' ' * len(prefix),
                         break_on_hyphens=False, break_long_words=False)


def format_report(report: Dict[str, Any],
                  json_path: Optional[str] = None) -> str:
    """The report as printed at the end of a launcher's output.

    Args:
        report (dict): From :func:`build_report`.
        json_path (str, optional): Where the JSON copy was written.

    Returns:
        str: About 10-25 lines.
    """
    bar = '=' * 79
    lines = [bar, 'Why the run failed (root-cause report, '
             'projects.mmdet3d_plugin.failures)']
    first = report.get('first_failure')
    if first is None:
        lines += ['No rank left an exit status or an error file: read the '
                  'output above.', bar]
        return '\n'.join(lines)
    host = f' on {first["host"]}' if first.get('host') else ''
    lines.append(f'First failure: rank {first["rank"]}{host}, '
                 f'{first["exit"]}')
    errors = report['errors']
    is_hang = (report.get('cause') or {}).get('key') == HANG.key
    for entry in errors:
        ranks = entry['ranks']
        label = '  '
        if len(errors) > 1 or len(ranks) > 1:
            same = ''
            if entry['error'] and len(ranks) > 1:
                same = (' (the same error on every rank)'
                        if len(ranks) == report.get('world_size') else
                        ' (the same error)')
            label = f'  {_ranks_text(ranks)}{same}: '
        if entry['error'] and len(label) > 24:
            lines.append(label.rstrip())
            label = '    '
        if entry['error'] and is_hang:
            # The watchdog's message names the stuck ranks and frames.
            shown = [x for x in entry['error'].splitlines() if x.strip()]
            lines += _wrap(label, shown[0])
            for line in shown[1:HANG_LINES]:
                lines += _wrap('    ', line.strip())
        elif entry['error']:
            lines += _wrap(label, short_message(entry['error']))
        elif label.strip():
            lines += _wrap(label, f'{entry["exit"]}, no Python error')
        else:
            lines.append('  no Python error: the process was killed' if (
                entry['exit_code'] or 0) < 0 else '  no Python error recorded')
        if entry.get('caused_by'):
            lines += _wrap('    caused by ', short_message(entry['caused_by']))
        if entry.get('frame'):
            at = entry['frame']
            raised = entry.get('raised_at')
            if raised and raised != at:
                at += f' (raised in {raised})'
            lines += _wrap('    at ', at)
    if report.get('stuck_ranks'):
        lines.append(f'Stuck: {_ranks_text(report["stuck_ranks"])}')
    victims = report.get('victims') or []
    if victims:
        lines.append('Victims (failed only because a peer failed):')
        for victim in victims:
            lines += _wrap(f'  rank {victim["rank"]}: ',
                           f'{victim["exit"]}, {victim["why"]}')
    cause = report.get('cause')
    if cause:
        lines += _wrap('Likely cause: ',
                       f'{cause["title"]}: {cause["explanation"]}.')
        lines += _wrap('Fix: ', f'{cause["fix"]}.')
        for note in cause.get('notes') or []:
            lines += _wrap('Note: ', note)
    runs = report.get('attempts') or []
    if runs:
        lines.append(f'Attempts ({len(runs)}, torchrun restarts '
                     'included), each one\'s first failure:')
        for run in runs:
            what = run['error'] or run['cause'] or 'no error recorded'
            lines += _wrap(f'  attempt {run["attempt"] + 1}: ',
                           f'rank {run["rank"]}, {run["exit"]}: {what}')
    where = [f'error files in {report["log_dir"]}'] if report.get(
        'log_dir') else []
    if json_path:
        where.append(f'this report in {json_path}')
    if where:
        lines += _wrap('Details: ', '; '.join(where))
    lines.append(bar)
    return '\n'.join(lines)
