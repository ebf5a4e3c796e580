"""The notes under a cause: where the hang report is, the memory of a
killed rank, /dev/shm, the unused parameters."""
import os.path as osp
import re
import shutil
import socket
from typing import List, Optional

from ..constants import HANG_REPORT_NAME
from .causes import DDP_UNUSED, HANG, HOST_OOM, SHM_FULL, Cause
from .unused_report import REPORT_FILE as UNUSED_PARAMS_FILE
from .unused_report import parse_unused_indices
from .collect import RankFailure


def hang_report_path(failure: RankFailure) -> Optional[str]:
    """``hang_report.txt`` of a hang: the one the error file or the message
    names, else the one in the rank's log folder (the first that exists,
    else the first named)."""
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


def cause_notes(cause: Optional[Cause], root: Optional[RankFailure],
                hang_report: Optional[str]) -> List[str]:
    """The notes the report shows under ``cause`` of ``root``.

    Args:
        cause (Cause, optional): The root cause.
        root (RankFailure, optional): The rank that failed first.
        hang_report (str, optional): ``hang_report.txt`` of a hang.

    Returns:
        list[str]: One line each.
    """
    notes = []
    if root is None:
        return notes
    if cause is HANG and hang_report:
        notes.append(f'every rank\'s stack: {hang_report}')
    if cause is HOST_OOM:
        note = _memory_note(root)
        notes.append(note or 'peak RSS unknown (the rank wrote no '
                     'rank_info.json)')
    if cause is SHM_FULL:
        note = _shm_note(root.host)
        if note:
            notes.append(note)
    if cause is DDP_UNUSED:
        notes.append(_unused_params_note(root))
    return notes
