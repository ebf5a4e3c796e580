"""Finds hung ranks, says where they are stuck, and ends the job."""
from typing import Optional

import torch.distributed as torch_dist
from mmengine.dist import get_dist_info
from mmengine.hooks import Hook

from mmdet3d.registry import HOOKS
from ...constants import HANG_EXIT_CODE, HANG_REPORT_NAME
from ...dist.budget import timeout_problems, watchdog_interval
from ...dist.durations import positive_seconds
from ...dist.teardown import at_run_end, cancel_run_end
from .monitor import HangMonitor, new_watchdog_group
from .verdict import PHASES

ACTIONS = ('abort', 'report')
_TRAIN, _VAL, _TEST = (PHASES.index(p) for p in ('train', 'val', 'test'))


@HOOKS.register_module()
class DistWatchdogHook(Hook):
    """End a distributed job whose ranks stopped making progress, saying
    which rank is stuck where.

    A rank that hangs (a deadlocked DataLoader, a collective that only some
    ranks call, a stuck file system, an infinite loop) otherwise shows
    nothing until NCCL's watchdog aborts every rank without a Python stack,
    or never. This hook runs a thread per rank that, every ``interval``
    seconds, all-gathers each rank's progress over a gloo group of its own,
    so it keeps working while the Runner thread is blocked, in train, val
    and test loops, under gloo and NCCL, and with a single process.

    When a rank has not finished an iteration (nor entered a loop or epoch)
    for ``timeout`` seconds, which also covers ranks drifting apart, every
    rank dumps all its threads' Python stacks (``faulthandler``), the stacks
    are gathered and rank 0 writes ``<log_dir>/hang_report.txt``: each
    rank's loop, iteration, idle time and innermost frame, which ranks are
    stuck (not waiting for the others, or behind them) and which wait in a
    collective, and all stacks. Then, with ``action='abort'``, every rank
    writes its torch elastic error file (the message starts with
    ``HANG_MESSAGE_PREFIX`` and names the stuck ranks and their
    ``file:line in function``; torchrun's summary and the launcher's report
    print it), kills its DataLoader workers and exits with status
    ``HANG_EXIT_CODE`` (75). With ``action='report'`` training goes on and
    the next report follows only after progress resumed and stopped again.

    Outside a hang the Runner thread stores one tuple per iteration (about
    a microsecond; ``benchmarks/bench_watchdog.py``).

    ``timeout`` must exceed the longest stretch without a finished
    iteration in a healthy run: the first iteration (DataLoader start-up)
    and checkpoint saving. Long phases a rank declares
    (``dist.long_phase``) are judged against their own timeout instead:
    while rank 0 computes the metrics of ``SafeNuScenesMetric`` (or any
    metric with ``Rank0EvaluateMixin``) and the other ranks wait for it,
    the evaluation may last its ``dist_wait_timeout``; the watchdog ends it
    as a hang, naming the phase, a few seconds before that runs out (the
    waiting ranks would then fail without stacks). Under NCCL keep
    ``timeout`` below the process group's timeout
    (``env_cfg.dist_cfg.timeout``; torch's NCCL default is 600 s, 1800 s
    on torch 2.1), or NCCL aborts first, without stacks; the hook warns
    when it is not.

    Args:
        timeout (float): Seconds without progress that count as a hang.
            Defaults to 1800.
        action (str): 'abort' (report, then end every rank) or 'report'
            (report, keep running). Defaults to 'abort'.
        interval (float, optional): Seconds between the watchdog's rounds.
            Defaults to None: ``min(timeout / 4, 10)``.

    Examples:
        >>> custom_hooks = [
        ...     dict(type='DistWatchdogHook', timeout=1800, action='abort')
        ... ]
    """

    # Marks progress after the other hooks of an iteration (checkpoint
    # saving, logging) are done, and joins the other ranks last.
    priority = 'LOWEST'

    def __init__(self,
                 timeout: float = 1800,
                 action: str = 'abort',
                 interval: Optional[float] = None) -> None:
        self.timeout = positive_seconds('DistWatchdogHook', 'timeout',
                                        timeout, 'timeout=1800')
        if action not in ACTIONS:
            raise ValueError(
                f'DistWatchdogHook: action must be one of {ACTIONS}, got '
                f"{action!r}; 'abort' ends a hung job (exit status "
                f"{HANG_EXIT_CODE}), 'report' only writes {HANG_REPORT_NAME}")
        self.action = action
        if interval is None:
            interval = watchdog_interval(self.timeout, None)
        self.interval = positive_seconds('DistWatchdogHook', 'interval',
                                         interval, 'interval=10')
        if self.interval > self.timeout:
            raise ValueError(
                f'DistWatchdogHook: interval ({interval!r} s) must not exceed '
                f'timeout ({timeout!r} s); leave interval=None for '
                'min(timeout / 4, 10)')
        self.monitor: Optional[HangMonitor] = None
        self._in_train = False

    def before_run(self, runner) -> None:
        """Create the watchdog's gloo group and start its thread.

        Args:
            runner (Runner): The runner.
        """
        rank, world_size = get_dist_info()
        if self.monitor is None:
            self.monitor = HangMonitor(
                self.timeout,
                self.interval,
                self.action,
                runner.log_dir,
                runner.logger,
                rank=rank,
                world_size=world_size)
            self._warn_nccl_timeout(runner)
        if self.monitor.group is None:
            # A collective: every rank runs before_run at the same point.
            self.monitor.group = new_watchdog_group(world_size, self.timeout,
                                                    self.interval)
        self.monitor.mark(PHASES.index('start'), 0, finished=0)
        self.monitor.start()
        # A run that stops on every rank by raising ends it too.
        at_run_end(self._end)
        runner.logger.info(
            f'DistWatchdogHook: watching {world_size} rank(s): a rank '
            f'without progress for {self.timeout:g} s is reported (checked '
            f'every {self.interval:g} s; action={self.action})')

    def _warn_nccl_timeout(self, runner) -> None:
        """Warn when NCCL would end a hang before this hook does (the
        timeout budget of ``dist.budget``, for this hook's values)."""
        if not (torch_dist.is_available() and torch_dist.is_initialized()):
            return
        if 'nccl' not in str(torch_dist.get_backend()).lower():
            return
        cfg = getattr(runner, 'cfg', None) or {}
        this_hook = dict(type='DistWatchdogHook', timeout=self.timeout,
                         interval=self.interval)
        budget = dict(env_cfg=cfg.get('env_cfg') or {},
                      custom_hooks=[this_hook])
        for problem in timeout_problems(budget, backend='nccl'):
            runner.logger.warning(problem)

    def after_run(self, runner) -> None:
        """Wait for the other ranks to finish (or for a hang to be handled),
        then destroy the watchdog's group.

        Args:
            runner (Runner): The runner.
        """
        cancel_run_end(self._end)
        self._end(True)

    def _end(self, together: bool) -> None:
        """Finish the watchdog's rounds with the other ranks and destroy
        its group; nothing for a rank that raised alone (its peers are not
        waited for; the thread ends with the process)."""
        if together and self.monitor is not None:
            self.monitor.finish()
            self.monitor.close()

    # -- progress: loops and epochs ----------------------------------------

    def before_train(self, runner) -> None:
        """Mark progress (entering the train loop)."""
        self._in_train = True
        self.monitor.mark(_TRAIN, runner.iter, finished=0)

    def after_train(self, runner) -> None:
        """Mark progress (leaving the train loop)."""
        self._in_train = False
        self.monitor.mark(_TRAIN, runner.iter, finished=0)

    def before_train_epoch(self, runner) -> None:
        """Mark progress (an epoch starts)."""
        self.monitor.mark(_TRAIN, runner.iter, finished=0)

    def after_train_epoch(self, runner) -> None:
        """Mark progress (an epoch ended)."""
        self.monitor.mark(_TRAIN, runner.iter, finished=0)

    def before_val(self, runner) -> None:
        """Mark progress (entering the val loop)."""
        self.monitor.mark(_VAL, 0, finished=0)

    def before_val_epoch(self, runner) -> None:
        """Mark progress (the val epoch starts)."""
        self.monitor.mark(_VAL, 0, finished=0)

    def after_val_epoch(self, runner, metrics=None) -> None:
        """Mark progress (metrics computed)."""
        self.monitor.mark(_VAL, self.monitor.progress[2], finished=0)

    def after_val(self, runner) -> None:
        """Mark progress (back to the train loop, if any)."""
        phase = _TRAIN if self._in_train else _VAL
        self.monitor.mark(phase, runner.iter if self._in_train else
                          self.monitor.progress[2], finished=0)

    def before_test(self, runner) -> None:
        """Mark progress (entering the test loop)."""
        self.monitor.mark(_TEST, 0, finished=0)

    def before_test_epoch(self, runner) -> None:
        """Mark progress (the test epoch starts)."""
        self.monitor.mark(_TEST, 0, finished=0)

    def after_test_epoch(self, runner, metrics=None) -> None:
        """Mark progress (metrics computed)."""
        self.monitor.mark(_TEST, self.monitor.progress[2], finished=0)

    # -- progress: iterations (the hot path) -------------------------------

    def after_train_iter(self,
                         runner,
                         batch_idx: int,
                         data_batch=None,
                         outputs=None) -> None:
        """Mark a finished train iteration."""
        self.monitor.mark(_TRAIN, runner.iter + 1)

    def after_val_iter(self,
                       runner,
                       batch_idx: int,
                       data_batch=None,
                       outputs=None) -> None:
        """Mark a finished val iteration."""
        self.monitor.mark(_VAL, batch_idx + 1)

    def after_test_iter(self,
                        runner,
                        batch_idx: int,
                        data_batch=None,
                        outputs=None) -> None:
        """Mark a finished test iteration."""
        self.monitor.mark(_TEST, batch_idx + 1)
