"""The root-cause report of a failed distributed run, as a dict.

:func:`build_report` sorts the failed ranks into causes and victims
(:func:`~.classify.classify`); the cause that came first is the root
cause, identical errors of several ranks are one entry, and the cause
table gives the likely cause and the fix. The dict is what
``failure_report.json`` holds and what :func:`~.text.format_report` prints.
"""
import re
import time
from typing import Any, Dict, List, Optional, Sequence, Tuple

from .causes import (HANG, LOST_PEER, TERMINATED, VICTIM_SIGNALS, Cause,
                     signal_name)
from .frames import raising_frame, user_frame
from .classify import (caused_by, classify, exit_text, failure_exit_text,
                       short_message, stuck_ranks)
from .collect import RankFailure
from .notes import cause_notes, hang_report_path

_VOLATILE = (
    (re.compile(r'\bpid(\(s\))? \d+(, \d+)*'), 'pid N'),
    (re.compile(r'\b\d{1,3}(\.\d{1,3}){3}\]?:\d+'), 'ADDR:PORT'),
    (re.compile(r'\b0x[0-9a-f]+\b'), '0x..'),
)


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

    hang_report = None
    stuck: List[int] = []
    if cause is HANG and root is not None:
        stuck = root.error_info.get('stuck_ranks') or stuck_ranks(
            root.message)
        hang_report = hang_report_path(root)
    notes = cause_notes(cause, root, hang_report)

    victim_entries = []
    for failure, _ in sorted(victims, key=lambda fc: fc[0].rank):
        if failure.message:
            why = f'lost a peer: {short_message(failure.message, 100)}'
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
