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
import atexit
import datetime
import functools
import multiprocessing
import signal
import threading
from typing import Callable, Dict, Optional, Sequence

from mmengine.dist import (get_rank, get_world_size, is_distributed,
                           is_main_process)
from mmengine.hooks import Hook
from torch.distributed import PrefixStore, distributed_c10d

from mmdet3d.registry import HOOKS
from ...constants import PREEMPTED_EXIT_CODE
from ...dist.teardown import at_run_end, cancel_run_end
from ..atomic_checkpoint.atomic_checkpoint_hook import \
    save_iteration_checkpoint

_STOP_KEY = 'stop_at'
#: A counter, above 0 once a rank has set ``_STOP_KEY``.
_STOPPING_KEY = 'stopping'
_SAVED_KEY = 'saved'


def _ignore_then(signums: Sequence[int], init_fn: Optional[Callable],
                 worker_id: int) -> None:
    """DataLoader workers ignore the preemption signals (Slurm signals every
    process of a step: a worker killed by it would end the run before the
    checkpoint), then run the loader's own ``worker_init_fn``."""
    for signum in signums:
        signal.signal(signum, signal.SIG_IGN)
    if init_fn is not None:
        init_fn(worker_id)


def _kill_workers_at_exit(before: frozenset) -> None:
    """End the daemon processes started since ``before`` (DataLoader
    workers) at interpreter exit, quietly.

    They ignore SIGTERM, with which ``multiprocessing`` would end them
    before joining them (a join that would never return), so they get
    SIGKILL. Registered after ``multiprocessing``'s exit function, so it
    runs first. SIGCHLD goes back to its default action first: torch's
    handler (``torch/utils/data/_utils/signal_handling.py``) reports a
    worker of a live iterator that ends by a signal as the loader's error
    (``RuntimeError: DataLoader worker (pid N) is killed by signal:
    Killed``), raised in whatever the main thread runs then (this function
    or ``multiprocessing``'s exit function): a traceback after a run that
    succeeded, or after a failed run's own error. At exit no loader reads
    from its workers, so their end is no error (torch's own shutdown
    likewise takes a worker's pid off that check before ending it). The
    workers are joined, so ``multiprocessing`` finds none left.
    """
    workers = [child for child in multiprocessing.active_children()
               if child.daemon and child.pid not in before]
    if not workers:
        return
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    for worker in workers:
        worker.kill()
    for worker in workers:
        worker.join()


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

    The ranks agree on the iteration to stop at through the process
    group's store, without a collective (a collective per iteration would
    turn a rank that skips one of DDP's, e.g. over unused parameters, into
    a hang instead of DDP's error): the first rank that finds a signal
    received after its iteration ``k`` sets ``stop_at = k + 1`` (no rank
    can have finished iteration ``k + 1`` yet, as its gradients need that
    rank), every rank reads it after each iteration (one store request),
    and after iteration ``stop_at`` rank 0 saves its checkpoint (through
    the run's ``AtomicCheckpointHook``: complete or absent, and
    ``last_checkpoint`` names it), the others wait for the file, and all
    exit with status 85. Nothing is lost: the checkpoint is of the last
    iteration trained, at most one after the signal's. The workers of the
    train and val DataLoaders ignore the signals (Slurm signals every
    process of a step; a worker that died of it would end the run first):
    :meth:`prepare_dataloader`, before they start. At interpreter exit
    they are ended with SIGKILL, not multiprocessing's SIGTERM, quietly:
    a run that succeeded prints no traceback, and one that failed shows
    its own error. A signal that arrives during validation is acted on
    after it.

    ``tools/train.py`` adds it to every training run
    (``engine/run_defaults.py``; ``exact_resume = False`` leaves it out
    with the resumable loops); a config's own ``custom_hooks`` entry
    (other signals) takes its place.

    Args:
        signals (sequence): Signal names or numbers. Defaults to
            ``('SIGTERM', 'SIGUSR1')``.
        timeout (float): Seconds the ranks wait for rank 0's checkpoint.
            Defaults to 600.

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
        self._store = None
        self._stop_at: Optional[int] = None
        self._signal_name = ''
        self._exit_registered = False

    def _on_signal(self, signum: int, _frame) -> None:
        if self.received is None:
            self.received = signum

    def prepare_dataloader(self, loader) -> None:
        """Make ``loader``'s DataLoader workers ignore the signals, and end
        them with SIGKILL at interpreter exit (:func:`_kill_workers_at_exit`).

        To be called before any of its workers starts: ``before_run`` calls
        it for the train and val loaders, and the resumable train loops
        call it when they build their loader (``IterBasedTrainLoop`` starts
        its workers then, before any hook runs). A loader already prepared,
        or without workers, is left as it is.

        Args:
            loader (DataLoader): A loader whose workers have not started.
        """
        init_fn = getattr(loader, 'worker_init_fn', None)
        if getattr(loader, 'num_workers', 0) <= 0 or (
                isinstance(init_fn, functools.partial)
                and init_fn.func is _ignore_then):
            return
        if not self._exit_registered:
            # Every worker of this run starts after this point.
            atexit.register(_kill_workers_at_exit, frozenset(
                p.pid for p in multiprocessing.active_children()))
            self._exit_registered = True
        loader.worker_init_fn = functools.partial(_ignore_then, self.signums,
                                                  init_fn)

    def before_run(self, runner) -> None:
        """Catch the signals; make the train and val workers ignore them."""
        if threading.current_thread() is threading.main_thread():
            for signum in self.signums:
                self._previous[signum] = signal.signal(signum,
                                                       self._on_signal)
        # A run that raises ends it too (mmengine calls after_run only
        # after a run that returned).
        at_run_end(self._end)
        for loop in (runner.train_loop, runner.val_loop):
            loader = getattr(loop, 'dataloader', None)
            if loader is not None:
                self.prepare_dataloader(loader)
        if is_distributed() and get_world_size() > 1:
            # The default group's store (private in torch 2.13); under
            # torchrun it is the attempt's own (compat.restart_store).
            self._store = PrefixStore('mmdet3d_plugin/preemption',
                                      distributed_c10d._get_default_store())
            self._store.set_timeout(
                datetime.timedelta(seconds=self.timeout))

    def _stop_iteration(self, done: int) -> Optional[int]:
        """The iteration all ranks stop after, once one is agreed."""
        if self._store is None:
            if self.received is not None:
                self._signal_name = signal.Signals(self.received).name
                return done
            return None
        if self._stop_at is None:
            if self.received is not None:
                mine = (f'{done + 1} {signal.Signals(self.received).name} '
                        f'{get_rank()}')
                self._stop(self._store.compare_set(_STOP_KEY, '', mine))
                self._store.add(_STOPPING_KEY, 1)
            elif self._store.add(_STOPPING_KEY, 0):
                # Set after _STOP_KEY: a counter reads without waiting on
                # every torch (Store.check is not bound on torch 2.1).
                self._stop(self._store.get(_STOP_KEY))
        return self._stop_at

    def _stop(self, value: bytes) -> None:
        stop_at, self._signal_name, rank = value.decode().split()
        self._stop_at = int(stop_at)
        self._signal_name += f' on rank {rank}'

    def after_train_iter(self, runner, batch_idx, data_batch=None,
                         outputs=None) -> None:
        """Save and exit after the agreed iteration.

        After the last iteration the run ends anyway, and the store is not
        asked: rank 0, whose process holds it when the ranks start without
        torchrun's agent (``srun``), may have finished and gone while a
        slower rank ends its last iteration.
        """
        done = runner.iter + 1
        if done >= runner.max_iters or self._stop_iteration(done) != done:
            return
        path = save_iteration_checkpoint(runner)
        if self._store is not None:
            if is_main_process():
                self._store.set(_SAVED_KEY, path)
            else:
                self._store.wait([_SAVED_KEY])
        if is_main_process():
            runner.logger.warning(
                f'PreemptionHook: {self._signal_name}; saved {path} '
                f'(iteration '
                f'{done}); every rank exits with status '
                f'{PREEMPTED_EXIT_CODE} (preempted, nothing lost): resume '
                'with --resume, or let tools/slurm_train.sh requeue the job')
        raise SystemExit(PREEMPTED_EXIT_CODE)

    def after_run(self, runner) -> None:
        """Give the signals back their previous handlers."""
        cancel_run_end(self._end)
        self._end(True)

    def _end(self, together: bool) -> None:
        """The store let go and the signals' previous handlers back (on a
        rank that raised alone too); after a preemption signal the
        handlers stay to the process's exit with status 85, so the
        launcher's SIGTERM to a rank still ending (torchrun stops the
        others once one exits) does not cut its end short."""
        self._store = None
        if self.received is not None or self._stop_at is not None:
            return
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)
        self._previous.clear()
