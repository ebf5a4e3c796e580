"""torchrun's record of the ranks it saw fail, kept for the report.

``tools/dist_run.py`` runs torchrun in its own process; when ranks fail,
:func:`save_exit_status` writes ``exit_status.json`` in the launch's log
folder: torch elastic's ``ChildFailedError.failures`` (per rank: exit
code or signal, pid, time, error file), which is what names a rank
killed by a signal, and the pids of the ranks torchrun stopped after the
failure that are not among them (:class:`StoppedRanks`: torch 2.1 keeps
no exit status of a rank it stops, torch 2.13 lists it with SIGTERM).
:func:`~.collect.collect_failures` reads the file back.
"""
import json
import logging
import os
import os.path as osp
import socket
from typing import Dict, Optional

from ..constants import EXIT_STATUS_NAME

#: torch elastic's logger of the worker processes it starts and stops.
PROCESS_LOGGER = 'torch.distributed.elastic.multiprocessing.api'


class StoppedRanks(logging.Handler):
    """Pid -> signal name of each rank torchrun stops because another
    failed, from the arguments of its warning ``Sending process %s closing
    signal %s`` (``SubprocessContext._close``, the same on torch 2.1 and
    2.13). Add it to :data:`PROCESS_LOGGER` before torchrun starts."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.signals: Dict[int, str] = {}

    def emit(self, record: logging.LogRecord) -> None:
        args = record.args
        if (str(record.msg).startswith('Sending process')
                and isinstance(args, tuple) and len(args) == 2):
            self.signals.setdefault(int(args[0]), str(args[1]))


def save_exit_status(log_dir: str, error,
                     stopped: Optional[Dict[int, str]] = None) -> str:
    """Write ``exit_status.json`` in ``log_dir``.

    Args:
        log_dir (str): The launch's log folder.
        error (ChildFailedError): What torchrun raised.
        stopped (dict, optional): :attr:`StoppedRanks.signals`; the pids
            already in ``error.failures`` are left out.

    Returns:
        str: The file's path.
    """
    failures = {
        str(rank): dict(local_rank=f.local_rank, pid=f.pid,
                        exitcode=f.exitcode, signal=f.signal_name(),
                        timestamp=f.timestamp, error_file=f.error_file)
        for rank, f in error.failures.items()
    }
    failed = {f.pid for f in error.failures.values()}
    data = dict(host=socket.gethostname(), failures=failures,
                stopped={str(pid): name
                         for pid, name in (stopped or {}).items()
                         if pid not in failed})
    os.makedirs(log_dir, exist_ok=True)
    path = osp.join(log_dir, EXIT_STATUS_NAME)
    with open(path, 'w') as f:
        json.dump(data, f, indent=1)
    return path
