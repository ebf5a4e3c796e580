"""The root-cause report of a failed distributed run: collected, saved,
printed.

After a failed launch, :func:`report_failed_run` collects what each rank
left (:mod:`.collect`), builds the report (:func:`~.build.build_report`),
saves it as ``failure_report.json`` in the work dir (:func:`write_report`)
and returns the text to print (:func:`~.text.format_report`).
"""
import json
import os.path as osp
from typing import Any, Dict, Optional, Sequence, Tuple

from ..constants import FAILURE_REPORT_NAME
from ..fileio.atomic import atomic_write
from .build import build_report
from .classify import short_message
from .collect import (RankFailure, attempts, collect_attempt,
                      collect_failures)
from .text import format_report


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


def attempt_summary(attempt: int, report: Dict[str, Any],
                    failures: Sequence[RankFailure]) -> Dict[str, Any]:
    """One torchrun attempt's first failure, for the list of attempts.

    torchrun keeps no exit status of an earlier attempt: a rank that left
    no error while the others lost a peer is named as the one that died
    (killed: SIGKILL, the out-of-memory killer).

    Args:
        attempt (int): The attempt (0 for the first launch).
        report (dict): That attempt's :func:`build_report`.
        failures (Sequence[RankFailure]): That attempt's ranks.

    Returns:
        dict: ``attempt``, ``rank``, ``exit``, ``error`` (short) and
        ``cause`` (the table title), each None when unknown.
    """
    first = report.get('first_failure') or {}
    cause = report.get('cause') or {}
    silent = [f for f in failures if not f.message and f.exit_code is None]
    if silent and len(silent) < len(failures):
        return dict(attempt=attempt, rank=silent[0].rank,
                    exit='no exit status kept', error=None,
                    cause='died without an error (killed: SIGKILL, the '
                    'out-of-memory killer)')
    error = first.get('error')
    return dict(attempt=attempt, rank=first.get('rank'),
                exit=first.get('exit'),
                error=short_message(error, 120) if error else None,
                cause=cause.get('title'))


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
    numbers = attempts(log_dir)
    if len(numbers) > 1:
        report['attempts'] = [
            attempt_summary(k, build_report(ranks), ranks)
            for k, ranks in ((k, collect_attempt(log_dir, k))
                             for k in numbers[:-1])
        ] + [attempt_summary(numbers[-1], report, failures)]
    target = report['work_dir'] or work_dir or log_dir
    try:
        path = write_report(report, target)
    except OSError:
        path = write_report(report, log_dir)
    return format_report(report, path), path
