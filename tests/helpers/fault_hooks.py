"""The fault hooks of the tests and benchmarks: one that fails chosen ranks
at an iteration (:class:`FailAtIterHook`: raise, or a signal to the rank
itself), one that stops training after N iterations
(:class:`StopAfterHook`), one that makes the end of a process's
DataLoader workers at exit deterministic (:class:`AwaitWorkersAtExitHook`).

Training processes get them through ``custom_imports``: importing
``tests.helpers.fault_helpers`` (what :func:`~.toy_config.toy_config`
configs import by default) imports this module too; in-process runners
import it themselves.
"""
import atexit
import builtins
import os
import signal
import time
from typing import Sequence, Union

import psutil
from mmengine.dist import get_rank
from mmengine.hooks import Hook

from mmdet3d.registry import HOOKS

#: :class:`FailAtIterHook`'s default message (``{rank}`` and ``{iter}``
#: filled in).
FAULT_MESSAGE = 'injected fault: rank {rank} fails at iteration {iter}'
#: Restart counters of torchrun and of Slurm (a requeued job).
_RESTART_ENV = ('TORCHELASTIC_RESTART_COUNT', 'SLURM_RESTART_COUNT')


@HOOKS.register_module()
class FailAtIterHook(Hook):
    """Fails chosen ranks once, when ``at_iter`` iterations are done.

    ``when='before'``: before the next iteration (``runner.iter ==
    at_iter``; 0 fails before the first one), its batch already loaded.
    ``when='after'``: right after the ``at_iter``-th iteration, after its
    checkpoint and log (the hook's priority is then LOWEST unless the config
    gives one); it also fails after the last iteration.

    Args:
        at_iter (int): Iterations done when the ranks fail.
        ranks (int | Sequence[int], optional): Ranks that fail. Defaults to
            None (every rank).
        action (str): ``'raise'`` (``error`` with ``message``) or a signal
            name such as ``'SIGKILL'``, sent to the rank's own process (a
            ``'SIGTERM'`` arrives while the iteration runs, ``when='before'``:
            PreemptionHook's stop). Defaults to 'raise'.
        when (str): ``'before'`` or ``'after'``, above. Defaults to
            'before'.
        error (str): Name of the built-in exception raised. Defaults to
            'RuntimeError'.
        message (str): Its message; ``{rank}`` and ``{iter}`` (``at_iter``)
            are filled in. Defaults to :data:`FAULT_MESSAGE`.
        linger (float): Seconds a rank that raised stays alive before it
            exits (at exit, after its error is recorded), so that ranks
            raising together all record their error before the launcher
            stops the others, whatever the scheduler's delays. Defaults to 0.
        first_attempt_only (bool): Only in a run that torchrun or Slurm did
            not restart (``TORCHELASTIC_RESTART_COUNT`` and
            ``SLURM_RESTART_COUNT`` unset or 0). Defaults to False.
    """

    priority = 'NORMAL'

    def __init__(self,
                 at_iter: int,
                 ranks: Union[int, Sequence[int], None] = None,
                 action: str = 'raise',
                 when: str = 'before',
                 error: str = 'RuntimeError',
                 message: str = FAULT_MESSAGE,
                 linger: float = 0,
                 first_attempt_only: bool = False) -> None:
        if action != 'raise' and not isinstance(
                getattr(signal, action, None), signal.Signals):
            raise ValueError(f'FailAtIterHook: unknown action {action!r}; '
                             "'raise' or a signal name such as 'SIGKILL'")
        if when not in ('before', 'after'):
            raise ValueError(f"FailAtIterHook: when must be 'before' or "
                             f"'after'; got {when!r}")
        exc = getattr(builtins, error, None)
        if not (isinstance(exc, type) and issubclass(exc, Exception)):
            raise ValueError(
                f'FailAtIterHook: error must name a built-in exception; got '
                f'{error!r}')
        self.at_iter = at_iter
        self.ranks = None if ranks is None else (
            [ranks] if isinstance(ranks, int) else list(ranks))
        self.action = action
        self.when = when
        self.error = exc
        self.message = message
        self.linger = linger
        self.first_attempt_only = first_attempt_only
        if when == 'after':
            self.priority = 'LOWEST'

    def _armed(self, done: int) -> bool:
        if done != self.at_iter:
            return False
        if self.ranks is not None and get_rank() not in self.ranks:
            return False
        restarted = any(int(os.environ.get(name) or 0) > 0
                        for name in _RESTART_ENV)
        return not (self.first_attempt_only and restarted)

    def _fail(self) -> None:
        if self.action != 'raise':
            os.kill(os.getpid(), getattr(signal, self.action))
            return
        if self.linger:
            atexit.register(time.sleep, self.linger)
        raise self.error(self.message.format(rank=get_rank(),
                                             iter=self.at_iter))

    def before_train_iter(self, runner, batch_idx, data_batch=None) -> None:
        if self.when == 'before' and self._armed(runner.iter):
            self._fail()

    def after_train_iter(self,
                         runner,
                         batch_idx,
                         data_batch=None,
                         outputs=None) -> None:
        if self.when == 'after' and self._armed(runner.iter + 1):
            self._fail()


@HOOKS.register_module()
class StopAfterHook(Hook):
    """Stops training after ``after_iter`` iterations, after the checkpoint
    and log of the last one (priority LOWEST).

    Args:
        after_iter (int): Iterations to train (1-based: the last one).
        exit_process (bool): False: sets the loop's ``stop_training`` flag,
            so an iteration-based loop ends before the next iteration and
            ``runner.train()`` returns (mmengine's epoch-based loop checks
            the flag only between epochs). True: ``SystemExit(0)``, the
            process ends at once with status 0, mid-epoch too (runs of
            ``tools/train.py``). Defaults to False.
    """

    priority = 'LOWEST'

    def __init__(self, after_iter: int, exit_process: bool = False) -> None:
        self.after_iter = after_iter
        self.exit_process = exit_process

    def after_train_iter(self,
                         runner,
                         batch_idx,
                         data_batch=None,
                         outputs=None) -> None:
        if runner.iter + 1 != self.after_iter:
            return
        if self.exit_process:
            raise SystemExit(0)
        runner.train_loop.stop_training = True


def _await_workers(deadline_s: float = 10.) -> None:
    """Wait, up to ``deadline_s`` seconds, for every child process to have
    ended, without reaping any (``waitid`` with ``WNOWAIT``)."""
    end = time.monotonic() + deadline_s
    for child in psutil.Process().children():
        while time.monotonic() < end:
            try:
                if os.waitid(os.P_PID, child.pid, os.WEXITED | os.WNOHANG
                             | os.WNOWAIT) is not None:
                    break
            except ChildProcessError:  # reaped already
                break
            time.sleep(0.01)


@HOOKS.register_module()
class AwaitWorkersAtExitHook(Hook):
    """At interpreter exit, between ``PreemptionHook``'s exit function and
    ``multiprocessing``'s, waits (up to 10 s) for the DataLoader workers
    to end, without reaping them: a worker ended but not reaped by then is
    seen by torch's SIGCHLD check whatever the timing (without the wait,
    only when workers die in another order than ``multiprocessing`` joins
    them). Registered when the hook is built, before the run's loops
    (whose workers ``PreemptionHook`` prepares), so it runs after their
    exit function."""

    def __init__(self) -> None:
        atexit.register(_await_workers)
