"""Ending a hung rank: its torch elastic error file, then the process.

torchrun gives every rank an error file (``TORCHELASTIC_ERROR_FILE``); what
a rank writes there is what torchrun's "Root Cause" summary and the
plugin's launcher report print for it. The watchdog writes a
:class:`DistWatchdogHang` there with the plugin's one error handler
(:class:`~projects.mmdet3d_plugin.failures.RankErrorHandler`): torch
elastic's JSON layout, the hang message as the message (it starts with
``HANG_MESSAGE_PREFIX``, which is how readers know a hang), the stuck
ranks' stacks as the traceback, and ``stuck_ranks`` and ``hang_report``
in ``extraInfo``. :func:`end_process` then stops this rank's child
processes (DataLoader workers, which a stuck ``__getitem__`` would keep
alive) and leaves with a fixed exit status, skipping interpreter teardown,
which a thread blocked in a collective could hold up forever.
"""
import os
import sys
from typing import Optional, Sequence

import psutil

from ...failures.error_files import DescribedError


class DistWatchdogHang(DescribedError):
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
        super().__init__(
            message, callstack,
            dict(stuck_ranks=list(stuck_ranks), hang_report=hang_report))
        self.stuck_ranks = list(stuck_ranks)
        self.hang_report = hang_report


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
