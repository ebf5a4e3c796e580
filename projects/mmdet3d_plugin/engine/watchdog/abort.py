"""Ending a hung rank: its torch elastic error file, then the process.

torchrun gives every rank an error file (``TORCHELASTIC_ERROR_FILE``); what
a rank writes there is what torchrun's "Root Cause" summary and the
plugin's launcher report print for it. :class:`HangErrorHandler` is torch
elastic's :class:`ErrorHandler`, subclassed as its docstring invites, so
the file has torch elastic's own JSON layout, with the stuck ranks' stacks
as the traceback. :func:`end_process` then stops this rank's child
processes (DataLoader workers, which a stuck ``__getitem__`` would keep
alive) and leaves with a fixed exit status, skipping interpreter teardown,
which a thread blocked in a collective could hold up forever.
"""
import json
import os
import sys
import time
from typing import Optional, Sequence

import psutil
from torch.distributed.elastic.multiprocessing.errors import ErrorHandler


class DistWatchdogHang(RuntimeError):
    """A hang found by ``DistWatchdogHook``.

    Args:
        message (str): Starts with ``HANG_MESSAGE_PREFIX``.
        callstack (str): The stuck ranks' stacks, formatted as a traceback.
        stuck_ranks (list[int]): The stuck ranks. Defaults to ().
        hang_report (str, optional): Path of ``hang_report.txt``.
            Defaults to None.
    """

    def __init__(self,
                 message: str,
                 callstack: str,
                 stuck_ranks: Sequence[int] = (),
                 hang_report: Optional[str] = None) -> None:
        super().__init__(message)
        self.callstack = callstack
        self.stuck_ranks = list(stuck_ranks)
        self.hang_report = hang_report


class HangErrorHandler(ErrorHandler):
    """torch elastic's error handler for :class:`DistWatchdogHang`.

    Writes the same JSON as :meth:`ErrorHandler.record_exception`, with
    ``message`` the hang message itself (it starts with
    ``HANG_MESSAGE_PREFIX``, which is how readers know a hang) and
    ``py_callstack`` the stuck ranks' stacks instead of the current
    exception's traceback (there is none: the watchdog thread finds the hang
    while the Runner thread is stuck). ``extraInfo`` also holds
    ``stuck_ranks`` (list of ints) and ``hang_report`` (path or null) for
    readers that want them without parsing the message.
    """

    def record_exception(self, e: BaseException) -> None:
        """Write ``e`` to the error file, if torchrun gave one.

        Args:
            e (BaseException): A :class:`DistWatchdogHang`; other exceptions
                go to torch elastic's own handler.
        """
        if not isinstance(e, DistWatchdogHang):
            super().record_exception(e)
            return
        path = self._get_error_file_path()
        if not path:
            return
        data = {
            'message': {
                'message': str(e),
                'extraInfo': {
                    'py_callstack': e.callstack,
                    'timestamp': str(int(time.time())),
                    'stuck_ranks': e.stuck_ranks,
                    'hang_report': e.hang_report,
                },
            }
        }
        self._write_error_file(path, json.dumps(data))


def end_process(exit_code: int) -> None:
    """SIGKILL every descendant process, then ``os._exit(exit_code)``.

    SIGKILL, and no waiting in between: a DataLoader worker stuck in
    ``__getitem__`` ignores nothing else, and a worker that dies while the
    Runner thread could still run would raise torch's "DataLoader worker
    killed" error there, whose traceback (and torchrun's ``record``) would
    then hide the hang. The killed children are reaped by whoever inherits
    them.

    Args:
        exit_code (int): Exit status of this process.
    """
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    try:
        children = psutil.Process().children(recursive=True)
    except psutil.Error:
        children = []
    for child in children:
        try:
            child.kill()
        except psutil.Error:
            pass
    os._exit(exit_code)
