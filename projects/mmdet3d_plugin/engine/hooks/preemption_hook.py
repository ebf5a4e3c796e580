"""Stop on a preemption signal without losing an iteration.

Slurm (preemption, ``scontrol requeue``, ``--signal``) and Kubernetes
evictions send SIGTERM, or a chosen signal, seconds before SIGKILL. With
this hook every rank finishes the iteration it is in, the checkpoint of
that iteration is saved, and every rank exits with
:data:`~projects.mmdet3d_plugin.constants.PREEMPTED_EXIT_CODE` (85), which
``tools/slurm_train.sh`` answers by requeueing the job; the next attempt
resumes from that checkpoint (``tools/train.py`` does so by itself in a
restarted or requeued run).
"""
import functools
import signal
import threading
from typing import Callable, Dict, Optional, Sequence

import torch
import torch.distributed as torch_dist
from mmengine.dist import get_world_size, is_distributed, is_main_process
from mmengine.hooks import Hook

from mmdet3d.registry import HOOKS
from ...constants import PREEMPTED_EXIT_CODE
from ...dist.groups import side_group
from .atomic_checkpoint_hook import save_iteration_checkpoint


def _ignore_then(signums: Sequence[int], init_fn: Optional[Callable],
                 worker_id: int) -> None:
    """DataLoader workers ignore the preemption signals (Slurm signals every
    process of a step: a worker killed by it would end the run before the
    checkpoint), then run the loader's own ``worker_init_fn``."""
    for signum in signums:
        signal.signal(signum, signal.SIG_IGN)
    if init_fn is not None:
        init_fn(worker_id)


def _signal_number(name) -> int:
    if isinstance(name, int):
        return int(name)
    text = str(name).upper()
    number = getattr(signal, text if text.startswith('SIG') else 'SIG' + text,
                     None)
    if not isinstance(number, int) or text in ('SIGKILL', 'KILL', 'SIGSTOP',
                                               'STOP'):
        raise ValueError(
            f'PreemptionHook: signals: {name!r} is not a signal a process '
            "can catch; use names like 'SIGTERM', 'SIGUSR1' (as in "
            "sbatch --signal=B:USR1@120)")
    return number


@HOOKS.register_module()
class PreemptionHook(Hook):
    """Save the current iteration and exit with status 85 on a signal.

    After every iteration the ranks agree, in one all-reduce of one
    integer on a gloo side group, whether any of them received one of
    ``signals``; if so rank 0 saves the checkpoint of that iteration
    (through the run's ``AtomicCheckpointHook``: complete or absent, and
    ``last_checkpoint`` names it), all ranks wait for the file, and all
    exit with status 85. DataLoader workers ignore the signals. A signal
    that arrives during validation is acted on after it.

    ``tools/train.py`` adds it to every training run; a config's own
    ``custom_hooks`` entry (other signals) takes its place.

    Args:
        signals (sequence): Signal names or numbers. Defaults to
            ``('SIGTERM', 'SIGUSR1')``.
        timeout (float): Seconds the ranks wait for one another to agree
            and for rank 0's checkpoint. Defaults to 600.

    Examples:
        >>> custom_hooks = [dict(type='PreemptionHook',
        ...                      signals=['SIGTERM', 'SIGUSR2'])]
    """

    priority = 'LOWEST'  # after the checkpoint hook of the same iteration

    def __init__(self, signals: Sequence = ('SIGTERM', 'SIGUSR1'),
                 timeout: float = 600.) -> None:
        self.signums = tuple(dict.fromkeys(_signal_number(s)
                                           for s in signals))
        if not self.signums:
            raise ValueError('PreemptionHook: give at least one signal')
        self.timeout = float(timeout)
        self.received: Optional[int] = None
        self._previous: Dict[int, object] = {}
        self._group = None

    def _on_signal(self, signum: int, _frame) -> None:
        if self.received is None:
            self.received = signum

    def before_run(self, runner) -> None:
        """Catch the signals; make the train workers ignore them."""
        if threading.current_thread() is threading.main_thread():
            for signum in self.signums:
                self._previous[signum] = signal.signal(signum,
                                                       self._on_signal)
        loader = getattr(runner.train_loop, 'dataloader', None)
        if loader is not None and getattr(loader, 'num_workers', 0) > 0:
            loader.worker_init_fn = functools.partial(
                _ignore_then, self.signums, loader.worker_init_fn)
        if is_distributed() and get_world_size() > 1:
            self._group = side_group(self.timeout)

    def _agreed_signal(self) -> Optional[int]:
        if self._group is None:
            return self.received
        flag = torch.tensor([self.received or 0], dtype=torch.int64)
        torch_dist.all_reduce(flag, op=torch_dist.ReduceOp.MAX,
                              group=self._group)
        return int(flag.item()) or None

    def after_train_iter(self, runner, batch_idx, data_batch=None,
                         outputs=None) -> None:
        """Save and exit if any rank received a preemption signal."""
        signum = self._agreed_signal()
        if signum is None:
            return
        path = save_iteration_checkpoint(runner)
        if self._group is not None:
            torch_dist.barrier(group=self._group)
        name = signal.Signals(signum).name
        if is_main_process():
            runner.logger.warning(
                f'PreemptionHook: {name} received; saved {path} (iteration '
                f'{runner.iter + 1}); every rank exits with status '
                f'{PREEMPTED_EXIT_CODE} (preempted, nothing lost): resume '
                'with --resume, or let tools/slurm_train.sh requeue the job')
        raise SystemExit(PREEMPTED_EXIT_CODE)

    def after_run(self, runner) -> None:
        """Give the signals back their previous handlers."""
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)
        self._previous.clear()
