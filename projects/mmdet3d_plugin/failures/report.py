"""The root-cause report of a failed distributed run.

:func:`build_report` sorts the failed ranks into causes (ranks that failed
on their own: an exception, a signal other than the launcher's SIGTERM, a
hang found by ``DistWatchdogHook``) and victims (ranks stopped by the
launcher, or that lost a connection to a dead peer); the cause that came
first is the root cause, identical errors of several ranks are one entry,
and the table of :mod:`.causes` gives the likely cause and the fix.
:func:`format_report` prints it; :func:`write_report` saves the same
report as ``failure_report.json`` in the work dir.
"""
import json
import os.path as osp
import re
import shutil
import socket
import textwrap
import time
from typing import Any, Dict, List, Optional, Sequence, Tuple

from ..constants import (FAILURE_REPORT_NAME, HANG_EXIT_CODE,
                         HANG_MESSAGE_PREFIX, HANG_REPORT_NAME)
from ..diagnostics.unused_report import REPORT_FILE as UNUSED_PARAMS_FILE
from ..diagnostics.unused_report import parse_unused_indices
from ..fileio.atomic import atomic_write
from .causes import (DDP_UNUSED, EXCEPTION, HANG, HOST_OOM, LOST_PEER,
                     SHM_FULL, TERMINATED, UNKNOWN, VICTIM_SIGNALS, Cause,
                     find_cause, is_peer_death, signal_name)
from .collect import RankFailure, collect_failures
from .frames import exception_lines, raising_frame, user_frame

#: Longest message shown in the printed report (the JSON has all of it).
MAX_MESSAGE = 160
#: Lines of a hang message shown.
HANG_LINES = 6
_VOLATILE = (
    (re.compile(r'\bpid(\(s\))? \d+(, \d+)*'), 'pid N'),
    (re.compile(r'\b\d{1,3}(\.\d{1,3}){3}\]?:\d+'), 'ADDR:PORT'),
    (re.compile(r'\b0x[0-9a-f]+\b'), '0x..'),
)
#: ``[/path/to/pair.cc:553] `` in gloo's and NCCL's messages.
_SOURCE_LOCATION = re.compile(r'\[[^\]\s]+\.(cc|cpp|h|hpp):\d+\]\s*')
_STUCK_RE = (
    re.compile(r'stuck[^.;\n]*?\branks?\s*:?\s*(\d+(?:\s*(?:,|and)\s*\d+)*)'),
    re.compile(r'\branks?\s*:?\s*(\d+(?:\s*(?:,|and)\s*\d+)*)[^.;\n]*?'
               r'stuck'),
    re.compile(r'\branks?\s*:?\s*(\d+(?:\s*(?:,|and)\s*\d+)*)'),
)


def exit_text(exit_code: Optional[int]) -> str:
    """``'SIGKILL (exit code -9)'``, ``'exit code 1'`` or ``'exit code
    unknown'``."""
    if exit_code is None:
        return 'exit code unknown'
    name = signal_name(exit_code)
    if name is not None:
        return f'{name} (exit code {exit_code})'
    if exit_code == HANG_EXIT_CODE:
        return f'exit code {exit_code} (ended by DistWatchdogHook)'
    return f'exit code {exit_code}'


def failure_exit_text(failure: RankFailure) -> str:
    """:func:`exit_text`, saying so when a rank that recorded an error was
    stopped by the launcher while it exited (its own exit code is lost)."""
    name = signal_name(failure.exit_code)
    if failure.message and name in VICTIM_SIGNALS:
        return (f'raised an exception, then got {name} while exiting (exit '
                f'code {failure.exit_code})')
    return exit_text(failure.exit_code)


def error_text(failure: RankFailure) -> str:
    """The failure's message plus the exceptions chained to it (a
    DataLoader worker's death arrives as the cause of another error)."""
    return '\n'.join([failure.message] +
                     exception_lines(failure.callstack))


def caused_by(failure: RankFailure, cause: Optional[Cause]) -> Optional[str]:
    """The chained exception line that matched ``cause``, when the
    failure's own message did not."""
    if cause is None or not cause.patterns or any(
            p.search(failure.message) for p in cause.patterns):
        return None
    return next((line for line in exception_lines(failure.callstack)
                 if any(p.search(line) for p in cause.patterns)), None)


def classify(failure: RankFailure) -> Tuple[str, Optional[Cause]]:
    """Whether a rank is a cause or a victim, and its table entry.

    Args:
        failure (RankFailure): One failed rank.

    Returns:
        tuple[str, Cause | None]: ``'cause'`` or ``'victim'``; the cause
        is None for victims and for ranks that left nothing (no error, no
        exit code).
    """
    if failure.message:
        # The recorded error decides; a signal came after it (torchrun
        # stops a rank that is slow to exit with SIGTERM, then SIGKILL).
        cause = find_cause(error_text(failure))
        if cause is None and failure.exit_code == HANG_EXIT_CODE:
            cause = HANG
        if cause is not None:
            return 'cause', cause
        if is_peer_death(failure.message):
            return 'victim', None
        return 'cause', EXCEPTION
    name = signal_name(failure.exit_code)
    if name in VICTIM_SIGNALS:
        return 'victim', None
    if failure.exit_code is None:
        return 'victim', None
    return 'cause', find_cause('', failure.exit_code) or UNKNOWN


def _first_line(text: str) -> str:
    return next((line.strip() for line in text.splitlines()
                 if line.strip()), '')


def _short(text: str, limit: int = MAX_MESSAGE) -> str:
    """The first line, without a C++ source location, cut after its first
    sentence when it is long."""
    line = _SOURCE_LOCATION.sub('', _first_line(text))
    if len(line) <= limit:
        return line
    end = line.find('. ', 40)
    if 0 < end < limit:
        return line[:end + 1]
    return line[:limit] + ' ...'


def _dedup_key(failure: RankFailure) -> Tuple[str, str, str]:
    message = failure.message
    for pattern, repl in _VOLATILE:
        message = pattern.sub(repl, message)
    # A rank that raised may still be SIGTERMed while it exits: the exit
    # code tells errors apart only when no message was recorded.
    sig = '' if failure.message else exit_text(failure.exit_code)
    return message, failure.frame or '', sig


def _frames(failure: RankFailure) -> None:
    if failure.callstack and not failure.frame:
        frame = user_frame(failure.callstack)
        failure.frame = str(frame) if frame else None
    if failure.callstack and not failure.raised_at:
        raised = raising_frame(failure.callstack)
        failure.raised_at = str(raised) if raised else None


def stuck_ranks(message: str) -> List[int]:
    """The ranks a ``DistWatchdogHook`` hang message calls stuck."""
    start = message.find(HANG_MESSAGE_PREFIX)
    line = message[start + len(HANG_MESSAGE_PREFIX):] if start >= 0 \
        else message
    for pattern in _STUCK_RE:
        match = pattern.search(line)
        if match:
            return sorted({int(n) for n in re.findall(r'\d+', match[1])})
    return []


def _hang_report_path(failure: RankFailure) -> Optional[str]:
    match = re.search(r'(\S*' + re.escape(HANG_REPORT_NAME) + ')',
                      failure.message)
    candidates = [failure.error_info.get('hang_report')]
    candidates += [match[1].strip('\'"()[],')] if match else []
    candidates = [c for c in candidates if c]
    log_dir = failure.info.get('log_dir')
    if log_dir:
        candidates.append(osp.join(log_dir, HANG_REPORT_NAME))
    for path in candidates:
        if osp.isfile(path):
            return path
    return candidates[0] if candidates else None


def _memory_note(failure: RankFailure) -> Optional[str]:
    memory = failure.info.get('memory') or {}
    if 'peak_rss_mb' not in memory:
        return None
    parts = [f'peak RSS of rank {failure.rank} '
             f'{memory["peak_rss_mb"] / 1024:.2f} GB']
    if memory.get('workers'):
        parts.append(
            f'its {memory["workers"]} DataLoader worker(s) '
            f'{memory.get("workers_peak_rss_mb", 0) / 1024:.2f} GB at most')
    if 'host_total_mb' in memory:
        low = memory.get('host_min_available_mb',
                         memory.get('host_available_mb', 0))
        parts.append(f'host memory available {low / 1024:.2f} of '
                     f'{memory["host_total_mb"] / 1024:.2f} GB at the lowest')
    when = ''
    if failure.time and memory.get('sampled'):
        when = f', last sampled {max(failure.time - memory["sampled"], 0):.0f}'
        when += ' s before it died'
    return '; '.join(parts) + f' (sampled every few seconds{when})'


def _shm_note(host: Optional[str]) -> Optional[str]:
    try:
        usage = shutil.disk_usage('/dev/shm')
    except OSError:
        return None
    where = ''
    if host and host != socket.gethostname():
        where = f' on {socket.gethostname()}; {host} may differ'
    return (f'/dev/shm: {usage.total / 2**20:.0f} MB, '
            f'{usage.free / 2**20:.0f} MB free now{where}')


def _unused_params_note(failure: RankFailure) -> str:
    log_dir = failure.info.get('log_dir')
    path = osp.join(log_dir, UNUSED_PARAMS_FILE) if log_dir else None
    indices = parse_unused_indices(failure.message)
    named = '; '.join(
        f'rank {rank} got no gradient for parameter indices '
        f'{" ".join(map(str, found))}' for rank, found in indices.items())
    if path and osp.isfile(path):
        note = f'DDPUnusedParamHook wrote {path}: the parameters per rank'
    else:
        note = ('no DDPUnusedParamHook in this run: add it to name the '
                'parameters per rank')
    return f'{named}; {note}' if named else note


def _cause_entry(group: List[RankFailure],
                 cause: Optional[Cause]) -> Dict[str, Any]:
    first = group[0]
    return dict(
        ranks=sorted(f.rank for f in group),
        hosts=sorted({f.host for f in group if f.host}),
        exit=failure_exit_text(first),
        exit_code=first.exit_code,
        error=first.message or None,
        caused_by=caused_by(first, cause),
        frame=first.frame,
        raised_at=first.raised_at,
        time=first.time)


def _without_cause(victims):
    """Root, cause, cause ranks and victims when no rank failed on its
    own: all were stopped from outside, or the rank that died first left
    nothing here (another node; killed without an exit status)."""
    victims = sorted(victims, key=lambda fc: (fc[0].time or 0, fc[0].rank))
    failures = [f for f, _ in victims]
    if all(not f.message and signal_name(f.exit_code) in VICTIM_SIGNALS
           for f in failures):
        return failures[0], TERMINATED, [(f, TERMINATED)
                                         for f in failures], []
    silent = [f for f in failures if not f.message and f.exit_code is None]
    root = silent[0] if silent else failures[0]
    return root, LOST_PEER, [(root, LOST_PEER)], [
        fc for fc in victims if fc[0] is not root]


def build_report(failures: Sequence[RankFailure],
                 exit_code: Optional[int] = None,
                 log_dir: Optional[str] = None,
                 world_size: Optional[int] = None) -> Dict[str, Any]:
    """The root cause of a failed run, as a JSON-serialisable dict.

    Args:
        failures (Sequence[RankFailure]): The failed ranks
            (:func:`~.collect.collect_failures`).
        exit_code (int, optional): The launcher's exit status.
        log_dir (str, optional): Where the error files are.
        world_size (int, optional): Number of ranks, if known.

    Returns:
        dict: ``first_failure`` (the root cause's rank), ``cause`` (table
        entry and notes), ``errors`` (one entry per distinct error, with
        its ranks), ``victims`` and where things are.
    """
    causes, victims = [], []
    for failure in failures:
        _frames(failure)
        role, cause = classify(failure)
        (causes if role == 'cause' else victims).append((failure, cause))
    hangs = [(f, c) for f, c in causes if c is HANG]
    if hangs:
        causes = hangs + [(f, c) for f, c in causes if c is not HANG]
    if causes:
        ordered = sorted(
            causes, key=lambda fc: (fc[1] is not HANG, fc[0].time or 0,
                                    not fc[0].message, fc[0].rank))
        root, cause = ordered[0]
    elif victims:
        root, cause, ordered, victims = _without_cause(victims)
    else:
        root, cause, ordered = None, None, []

    groups: Dict[Tuple[str, str, str], List[RankFailure]] = {}
    kinds: Dict[Tuple[str, str, str], Optional[Cause]] = {}
    for failure, kind in ordered:
        key = _dedup_key(failure)
        groups.setdefault(key, []).append(failure)
        kinds.setdefault(key, kind)
    errors = [_cause_entry(group, kinds[key])
              for key, group in groups.items()]

    notes = []
    hang_report = None
    stuck: List[int] = []
    if cause is HANG and root is not None:
        stuck = root.error_info.get('stuck_ranks') or stuck_ranks(
            root.message)
        hang_report = _hang_report_path(root)
        if hang_report:
            notes.append(f'every rank\'s stack: {hang_report}')
    if cause is HOST_OOM and root is not None:
        note = _memory_note(root)
        notes.append(note or 'peak RSS unknown (the rank wrote no '
                     'rank_info.json)')
    if cause is SHM_FULL and root is not None:
        note = _shm_note(root.host)
        if note:
            notes.append(note)
    if cause is DDP_UNUSED and root is not None:
        notes.append(_unused_params_note(root))

    victim_entries = []
    for failure, _ in sorted(victims, key=lambda fc: fc[0].rank):
        if failure.message:
            why = f'lost a peer: {_short(failure.message, 100)}'
        elif failure.exit_code is None:
            why = 'no error recorded (stopped after a peer failed)'
        else:
            why = 'stopped by the launcher after another rank failed'
        if failure.rank in stuck:
            why = 'stuck (named by the watchdog), then ' + why
        victim_entries.append(dict(rank=failure.rank, host=failure.host,
                                   exit=exit_text(failure.exit_code),
                                   why=why))

    work_dir = next((f.info.get('work_dir') for f, _ in ordered + victims
                     if f.info.get('work_dir')), None)
    return dict(
        status='failed',
        created=time.time(),
        launcher_exit_code=exit_code,
        world_size=world_size,
        ranks_failed=len(failures),
        first_failure=None if root is None else dict(
            rank=root.rank, host=root.host, pid=root.pid,
            exit=failure_exit_text(root), exit_code=root.exit_code,
            time=root.time, error=root.message or None, frame=root.frame,
            raised_at=root.raised_at, error_file=root.error_file),
        cause=None if cause is None else dict(
            key=cause.key, title=cause.title,
            explanation=cause.explanation, fix=cause.fix, notes=notes),
        stuck_ranks=stuck,
        hang_report=hang_report,
        errors=errors,
        victims=victim_entries,
        log_dir=log_dir,
        work_dir=work_dir)


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
            lines += _wrap(label, _short(entry['error']))
        elif label.strip():
            lines += _wrap(label, f'{entry["exit"]}, no Python error')
        else:
            lines.append('  no Python error: the process was killed' if (
                entry['exit_code'] or 0) < 0 else '  no Python error recorded')
        if entry.get('caused_by'):
            lines += _wrap('    caused by ', _short(entry['caused_by']))
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
    where = [f'error files in {report["log_dir"]}'] if report.get(
        'log_dir') else []
    if json_path:
        where.append(f'this report in {json_path}')
    if where:
        lines += _wrap('Details: ', '; '.join(where))
    lines.append(bar)
    return '\n'.join(lines)


def write_report(report: Dict[str, Any], work_dir: str) -> str:
    """Write ``report`` as ``<work_dir>/failure_report.json``.

    Args:
        report (dict): From :func:`build_report`.
        work_dir (str): The run's work dir (created if missing).

    Returns:
        str: The file written.
    """
    path = osp.join(work_dir, FAILURE_REPORT_NAME)
    atomic_write(json.dumps(report, indent=2), path)
    return path


def report_failed_run(log_dir: str,
                      exit_code: Optional[int] = None,
                      work_dir: Optional[str] = None) -> Tuple[str, str]:
    """Collect, explain, save and format the failure of one launch.

    Args:
        log_dir (str): The launch's log folder (error files).
        exit_code (int, optional): The launcher's exit status.
        work_dir (str, optional): Where to write the JSON when no rank
            recorded its work dir; the log folder when None.

    Returns:
        tuple[str, str]: The printed report and the JSON file written.
    """
    failures = collect_failures(log_dir)
    sizes = [f.info.get('world_size') for f in failures
             if f.info.get('world_size')]
    report = build_report(failures, exit_code=exit_code, log_dir=log_dir,
                          world_size=max(sizes) if sizes else None)
    target = report['work_dir'] or work_dir or log_dir
    try:
        path = write_report(report, target)
    except OSError:
        path = write_report(report, log_dir)
    return format_report(report, path), path
