"""The watchdog thread: a round of status gathering every few seconds.

Each rank runs one :class:`HangMonitor` thread. Every ``interval`` seconds
the threads all-gather the ranks' progress (:class:`~.verdict.RankStatus`,
with the long phase the rank declared, ``dist.current_phase()``) over a
gloo group of their own (``dist.side_group``). The group and the thread are
separate from the Runner's, so the rounds go on while the Runner thread is
stuck in user code, in a DataLoader or in a collective of the default
group (gloo or NCCL). When a rank has been idle for ``timeout`` seconds, or
is about to outlast its declared phase's own timeout (a round is then held
at the phase's deadline), every rank dumps its stacks, the stacks are
gathered, every rank reaches the same verdict
(:func:`~.verdict.find_stuck`), rank 0 writes the report and, with
``action='abort'``, every rank writes its torch elastic error file and
exits with ``HANG_EXIT_CODE``.

The Runner thread only stores a tuple per iteration (:meth:`mark`).
"""
import os
import socket
import threading
import time
from typing import Callable, Dict, Optional, Tuple

import torch.distributed as torch_dist

from ...constants import HANG_EXIT_CODE, HANG_REPORT_NAME
from ...failures.error_files import RankErrorHandler
from ...failures.stacks import dump_all_threads, main_thread_frames
from ...dist.budget import watchdog_group_timeout
from ...dist.groups import destroy_group, side_group
from ...dist.phase import current_phase
from ...fileio.atomic import atomic_write
from .abort import DistWatchdogHang, end_process
from .hang_text import format_report, hang_message, stuck_callstack
from .verdict import (PHASES, PhaseStatus, RankStacks, RankStatus, find_stuck,
                      hang_found)

_DONE = PHASES.index('done')


def _is_timeout(err: BaseException) -> bool:
    text = str(err).lower()
    return 'timed out' in text or 'timeout' in text


class HangMonitor:
    """Watches the progress of this rank and, over gloo, of the others.

    Args:
        timeout (float): Seconds a rank may go without progress.
        interval (float): Seconds between rounds.
        action (str): 'abort' or 'report'.
        log_dir (str): Folder of ``hang_report.txt``.
        logger (logging.Logger): Where to log (the Runner's logger).
        group (ProcessGroup, optional): The gloo group of the rounds; None
            for a single process.
        rank (int): This rank.
        world_size (int): Number of ranks.
        exit_fn (callable): Ends the process (tests of 'abort' in one
            process pass their own). Defaults to :func:`end_process`.
    """

    def __init__(self,
                 timeout: float,
                 interval: float,
                 action: str,
                 log_dir: str,
                 logger,
                 group=None,
                 rank: int = 0,
                 world_size: int = 1,
                 exit_fn: Callable[[int], None] = end_process) -> None:
        self.timeout = timeout
        self.interval = interval
        self.action = action
        self.log_dir = log_dir
        self.logger = logger
        self.group = group
        self.rank = rank
        self.world_size = world_size
        self.exit_fn = exit_fn
        self.report_path = os.path.join(log_dir, HANG_REPORT_NAME)
        self.main_ident = threading.get_ident()
        #: (finished iterations, phase code, iteration, monotonic time);
        #: replaced as a whole, so the thread reads a consistent tuple.
        self.progress: Tuple[int, int, int, float] = (0, 0, 0,
                                                      time.monotonic())
        #: When the watchdog thread last saw this rank in a declared phase
        #: (``time.monotonic()``): time in a phase counts as progress.
        self._in_phase_at = float('-inf')
        self.reports = 0
        self.last_verdict = None
        self._reported = False
        self._wake = threading.Event()
        self._stopping = False
        self._thread: Optional[threading.Thread] = None

    # -- Runner thread -----------------------------------------------------

    def mark(self, phase: int, iteration: int, finished: int = 1) -> None:
        """Record progress (called by the hook, on the Runner thread).

        Args:
            phase (int): Index into :data:`~.verdict.PHASES`.
            iteration (int): Iteration the rank is now in.
            finished (int): Iterations just finished (0 for a loop or
                epoch boundary). Defaults to 1.
        """
        self.progress = (self.progress[0] + finished, phase, iteration,
                         time.monotonic())

    def start(self) -> None:
        """Start the thread (once)."""
        if self._thread is not None:
            return
        self.main_ident = threading.get_ident()
        self._stopping = False
        self._wake.clear()
        self._reported = False
        self._thread = threading.Thread(
            target=self._run, name='DistWatchdogHook', daemon=True)
        self._thread.start()

    def finish(self) -> None:
        """Mark this rank done and wait until every rank is (or a hang is
        handled, which may end the process)."""
        self.mark(_DONE, self.progress[2], finished=0)
        self._stopping = True
        self._wake.set()
        if self._thread is not None:
            self._thread.join(
                timeout=watchdog_group_timeout(self.timeout, self.interval) +
                self.interval)
            if not self._thread.is_alive():
                self._thread = None

    def close(self) -> None:
        """Destroy the watchdog's group once the thread has ended.

        Called on the Runner's thread after :meth:`finish`, while the
        interpreter is whole: a gloo group left to the interpreter's
        teardown can abort the process (``terminate called without an
        active exception``; pytorch/pytorch#179291). A later run makes a
        new group (:func:`new_watchdog_group`).
        """
        if self._thread is None and self.group is not None:
            destroy_group(self.group)
            self.group = None

    # -- watchdog thread ---------------------------------------------------

    def status(self) -> RankStatus:
        """This rank's status now, with its declared phase."""
        count, phase, iteration, stamp = self.progress
        now = time.monotonic()
        declared = PhaseStatus.of(current_phase(), now)
        if declared is not None:
            # Judged by the phase's clock; after it, idle counts from here.
            self._in_phase_at = now
            idle = now - stamp
        else:
            idle = now - max(stamp, self._in_phase_at)
        return RankStatus(self.rank, count, PHASES[phase], iteration, idle,
                          phase == _DONE, declared)

    def next_wait(self) -> float:
        """Seconds to the next round: ``interval``, or less when this rank
        is in a declared phase whose deadline comes first."""
        phase = current_phase()
        if phase is None:
            return self.interval
        until = PhaseStatus.of(phase).deadline - phase.elapsed()
        return min(self.interval, until + 0.05) if until > 0 else \
            self.interval

    def _run(self) -> None:
        while True:
            if not self._stopping:
                self._wake.wait(self.next_wait())
            try:
                statuses = self.gather_statuses()
            except RuntimeError as err:
                if not _is_timeout(err):
                    # A peer left (it raised, or was killed): not a hang,
                    # and torchrun ends the job.
                    self.logger.warning(
                        f'DistWatchdogHook: rank {self.rank} lost the other '
                        f'ranks ({type(err).__name__}: {str(err)[:200]}); '
                        'the watchdog stops')
                    return
                self._handle_hang({self.rank: self.status()}, gathered=False)
                return
            if all(s.done for s in statuses.values()):
                return
            if hang_found(statuses.values(), self.timeout):
                if not self._reported:
                    self._handle_hang(statuses, gathered=True)
                    self._reported = True
            else:
                self._reported = False

    def gather_statuses(self) -> Dict[int, RankStatus]:
        """All ranks' statuses (a collective on the watchdog group).

        Raises:
            RuntimeError: From gloo, when a peer left or timed out.
        """
        mine = self.status()
        if self.group is None:
            return {self.rank: mine}
        everyone = [None] * self.world_size
        torch_dist.all_gather_object(everyone, mine, group=self.group)
        return {s.rank: s for s in everyone if s is not None}

    def _gather_stacks(self, gathered: bool) -> Dict[int, RankStacks]:
        mine = RankStacks(self.rank, socket.gethostname(), os.getpid(),
                          main_thread_frames(self.main_ident),
                          dump_all_threads(self.main_ident))
        if self.group is None or not gathered:
            return {self.rank: mine}
        everyone = [None] * self.world_size
        try:
            torch_dist.all_gather_object(everyone, mine, group=self.group)
        except RuntimeError as err:
            self.logger.warning(
                f'DistWatchdogHook: gathering the stacks failed '
                f'({type(err).__name__}: {str(err)[:200]}); reporting rank '
                f'{self.rank} only')
            return {self.rank: mine}
        return {s.rank: s for s in everyone if s is not None}

    def _barrier(self) -> None:
        if self.group is None:
            return
        try:
            self.gather_statuses()
        except RuntimeError:
            pass

    def _handle_hang(self, statuses: Dict[int, RankStatus],
                     gathered: bool) -> None:
        """Report (and with 'abort' end) a hang; runs on every rank."""
        stacks = self._gather_stacks(gathered)
        verdict = find_stuck(statuses, stacks, self.world_size, self.timeout)
        # Rank 0 writes the report; a rank that could not reach the others
        # writes its own next to it.
        writer = self.rank == min(stacks)
        name = HANG_REPORT_NAME if gathered or self.rank == 0 else \
            HANG_REPORT_NAME.replace('.txt', f'.rank{self.rank}.txt')
        report_path = os.path.join(self.log_dir, name)
        message = hang_message(verdict, statuses, stacks, self.timeout,
                               report_path)
        self.last_verdict = verdict
        if writer:
            os.makedirs(self.log_dir, exist_ok=True)
            atomic_write(
                format_report(verdict, statuses, stacks, self.world_size,
                              self.timeout, self.action, message),
                report_path,
                durable=False)
        self.reports += 1
        if self.action == 'report':
            self.logger.error(message + ' (action=report: training goes '
                              'on; the next report comes after progress '
                              'resumes and stops again)')
            return
        self.logger.error(message + f' Ending rank {self.rank} with exit '
                          f'status {HANG_EXIT_CODE}.')
        RankErrorHandler(context=lambda: dict(log_dir=self.log_dir)
                         ).record_exception(
            DistWatchdogHang(message,
                             stuck_callstack(verdict, stacks, message),
                             stuck_ranks=verdict.stuck,
                             hang_report=report_path))
        # Every rank has written its files before any exits (torchrun stops
        # the others once one exits).
        self._barrier()
        self.exit_fn(HANG_EXIT_CODE)


def new_watchdog_group(world_size: int, timeout: float, interval: float):
    """A gloo group for the rounds; None without a process group.

    Called on every rank at the same point (a collective itself).
    """
    if world_size < 2 or not (torch_dist.is_available()
                              and torch_dist.is_initialized()):
        return None
    return side_group(watchdog_group_timeout(timeout, interval))
