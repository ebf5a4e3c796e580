"""Gather what each failed rank left: exit status, error file, rank info.

A launch's log folder (torchrun's ``--log-dir``, or the Slurm launchers'
folder of per-task error files) holds, per rank, the torch elastic error
file (``error.json``) and ``rank_info.json``; ``tools/dist_run.py`` adds
``exit_status.json``, torchrun's own record of each failed rank (exit
code, pid, time), which is what names a rank killed by a signal.
"""
import json
import os
import os.path as osp
import re
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

from ..constants import EXIT_STATUS_NAME
from .error_files import read_error_file
from .rank_info import RANK_INFO_NAME

#: Name torch elastic gives each rank's error file.
ERROR_FILE_NAME = 'error.json'
_ATTEMPT_RE = re.compile(r'^attempt_(\d+)$')


@dataclass
class RankFailure:
    """What is known about one failed rank.

    Args:
        rank (int): Global rank.
        local_rank (int, optional): Rank on its node.
        host (str, optional): Host name.
        pid (int, optional): Process id.
        exit_code (int, optional): Exit code; negative for a signal.
        time (float, optional): When it failed (seconds since the epoch).
        message (str): ``Type: text`` of its exception; '' if none was
            recorded.
        callstack (str): The exception's traceback.
        frame (str, optional): Innermost user frame, ``file:line in f``.
        raised_at (str, optional): Innermost frame of all.
        info (dict): Its ``rank_info.json``.
        error_file (str, optional): Its error file, if it wrote one.
        error_info (dict): Other fields of the error file's ``extraInfo``
            (``stuck_ranks`` and ``hang_report`` from ``DistWatchdogHook``).
    """
    rank: int
    local_rank: Optional[int] = None
    host: Optional[str] = None
    pid: Optional[int] = None
    exit_code: Optional[int] = None
    time: Optional[float] = None
    message: str = ''
    callstack: str = ''
    frame: Optional[str] = None
    raised_at: Optional[str] = None
    info: Dict[str, Any] = field(default_factory=dict)
    error_file: Optional[str] = None
    error_info: Dict[str, Any] = field(default_factory=dict)


def _read_json(path: str) -> Optional[dict]:
    try:
        with open(path) as f:
            data = json.load(f)
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _all_rank_dirs(log_dir: str) -> Dict[int, List[str]]:
    """Folders holding a rank's files, by torchrun attempt (-1: none)."""
    found: Dict[int, List[str]] = {}
    for folder, _, files in os.walk(log_dir):
        if ERROR_FILE_NAME in files or RANK_INFO_NAME in files:
            attempt = -1
            for part in reversed(osp.relpath(folder, log_dir).split(os.sep)):
                match = _ATTEMPT_RE.match(part)
                if match:
                    attempt = int(match[1])
                    break
            found.setdefault(attempt, []).append(folder)
    return {k: sorted(v) for k, v in found.items()}


def attempts(log_dir: str) -> List[int]:
    """The torchrun attempts (``attempt_<k>`` folders) of a launch."""
    return sorted(k for k in _all_rank_dirs(log_dir) if k >= 0)


def _rank_dirs(log_dir: str) -> List[str]:
    """Folders holding a rank's files, of the last attempt only."""
    found = _all_rank_dirs(log_dir)
    return found[max(found)] if found else []


def collect_attempt(log_dir: str, attempt: int) -> List[RankFailure]:
    """The ranks of an earlier torchrun ``attempt`` that left an error
    file or a ``rank_info.json`` (torchrun keeps no exit status of it).

    Args:
        log_dir (str): The launch's log folder.
        attempt (int): The attempt number.

    Returns:
        list[RankFailure]: Sorted by rank.
    """
    failures = [_failure_from_dir(f)
                for f in _all_rank_dirs(log_dir).get(attempt, [])]
    return sorted((f for f in failures if f.rank is not None),
                  key=lambda f: f.rank)


def _int_name(folder: str) -> Optional[int]:
    name = osp.basename(folder)
    return int(name) if name.isdigit() else None


def _failure_from_dir(folder: str) -> RankFailure:
    info = _read_json(osp.join(folder, RANK_INFO_NAME)) or {}
    error_path = osp.join(folder, ERROR_FILE_NAME)
    error = read_error_file(error_path)
    extra = error['extra'] if error else {}
    rank = extra.get('rank', info.get('rank'))
    failure = RankFailure(
        rank=rank if rank is not None else _int_name(folder),
        local_rank=extra.get('local_rank', info.get('local_rank')),
        host=extra.get('host', info.get('host')),
        pid=extra.get('pid', info.get('pid')),
        info=info)
    if error is not None:
        failure.error_file = error_path
        failure.time = error['time']
        failure.message = error['message']
        failure.callstack = error['callstack']
        failure.frame = extra.get('frame')
        failure.raised_at = extra.get('raised_at')
        failure.error_info = error['info']
        if error['error_code'] is not None:
            failure.exit_code = error['error_code']
        for key in ('work_dir', 'log_dir'):
            if extra.get(key) and not info.get(key):
                info[key] = extra[key]
    return failure


def collect_failures(log_dir: str) -> List[RankFailure]:
    """Every rank of the last attempt that failed or left an error.

    With ``exit_status.json`` (torchrun through ``tools/dist_run.py``),
    exactly the ranks torchrun saw fail, with their exit codes, and the
    ranks it stopped that it kept no exit code of (torch 2.1: unknown
    exit); without it
    (Slurm), every rank that left an error file or a ``rank_info.json``
    (a rank without an error file: unknown exit).

    Args:
        log_dir (str): The launch's log folder.

    Returns:
        list[RankFailure]: Sorted by rank.
    """
    status = _read_json(osp.join(log_dir, EXIT_STATUS_NAME))
    by_dir = {osp.realpath(f): _failure_from_dir(f)
              for f in _rank_dirs(log_dir)}
    if status is None:
        return sorted((f for f in by_dir.values() if f.rank is not None),
                      key=lambda f: f.rank)
    by_pid = {f.pid: f for f in by_dir.values() if f.pid is not None}
    by_local = {_int_name(d): f for d, f in by_dir.items()}
    failures = []
    for rank, proc in (status.get('failures') or {}).items():
        # torch elastic names the error file only when it exists; a rank
        # killed by a signal is found by its pid or its local rank.
        error_file = proc.get('error_file') or ''
        failure = (by_pid.get(proc.get('pid'))
                   or by_dir.get(osp.realpath(osp.dirname(error_file)))
                   or by_local.get(proc.get('local_rank'))
                   or RankFailure(rank=int(rank)))
        failure.rank = int(rank)
        failure.exit_code = proc.get('exitcode', failure.exit_code)
        failure.pid = failure.pid or proc.get('pid')
        if failure.local_rank is None:
            failure.local_rank = proc.get('local_rank')
        failure.host = failure.host or status.get('host')
        if failure.time is None:
            failure.time = proc.get('timestamp')
        failures.append(failure)
    seen = {f.pid for f in failures}
    for pid in (status.get('stopped') or {}):
        failure = by_pid.get(int(pid))
        if failure is not None and failure.rank is not None \
                and failure.pid not in seen:
            failure.host = failure.host or status.get('host')
            failures.append(failure)
    return sorted(failures, key=lambda f: f.rank)
