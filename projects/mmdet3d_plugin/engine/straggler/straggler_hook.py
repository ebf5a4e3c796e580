"""Names the slow rank of a distributed run, and whether its loader or its
compute holds everyone up.

The hook only; the clocks, the decision and the report's text are in
:mod:`..straggler`.
"""
import os
import os.path as osp
import socket
import time
from typing import List, Optional

import torch.distributed as torch_dist
from mmengine.dist import get_dist_info, master_only
from mmengine.hooks import Hook
from mmengine.model import is_model_wrapper

from mmdet3d.registry import HOOKS
from ...dist.durations import positive_seconds
from ...dist.groups import side_group
from ...fileio.atomic import atomic_write_json
from .verdict import MIN_MS, RATIO
from .report import REPORT_FILE, build_report, describe
from .timing import (CudaEventClock, HostClock, IterationMarks, RankWindow,
                     figures, gather_sums)


def _cpus() -> Optional[int]:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count()


def _env_int(name: str) -> Optional[int]:
    value = os.environ.get(name)
    return int(value) if value and value.isdigit() else None


@HOOKS.register_module()
class StragglerHook(Hook):
    """Find the rank that slows a distributed run down, and say whether it
    is input-bound (its DataLoader) or compute-bound (its forward pass).

    mmengine logs rank 0's ``data_time`` only, and DDP's gradient
    all-reduce makes every rank's iteration as long as the slowest one's,
    so a single slow loader or slow device slows the whole job invisibly.
    Each rank measures, per iteration:

    - **data wait**: from the end of the previous iteration (this hook's
      ``after_train_iter``; it runs last) to ``before_train_iter``: the
      DataLoader's ``next()``, host time;
    - **compute**: from ``before_train_iter`` to the end of the model's
      forward pass and loss (a forward hook on the model inside the
      wrapper), minus the wrapper's own pre-forward (between a forward
      pre-hook on the DDP wrapper and one on the model, where DDP
      broadcasts buffers, a collective). The forward ends before the
      backward pass, whose gradient all-reduce is where a fast rank waits
      for a slow one, so no wait for other ranks is counted: this holds on
      CPU with gloo and on CUDA with NCCL alike, without a synchronisation.
      On CUDA the marks are CUDA events (host time would measure kernel
      launches), read once complete and waited for only at the end of a
      window; the host's data wait is a real stall of the device there,
      since mmengine's loss logging (``MessageHub.update_scalar``) calls
      ``.item()`` every iteration. Models whose forward runs collectives
      (``SyncBatchNorm``, FSDP) wait inside it: the hook warns.

    The first iteration of the run, of each epoch and of each pass of the
    DataLoader (a new iterator: workers start; an iteration-based loop also
    pauses 2 s there), and validation, are not counted. Every
    ``interval`` iterations, each rank's means over the window are
    all-gathered on a gloo side group of the hook's own
    (``dist.side_group``; never the training group, so it works beside
    NCCL). A rank is slow when its data wait + compute exceeds ``ratio``
    times the median of the others and that median by ``min_ms``; the
    slowest one is the straggler, input-bound when its lead lies more in
    data wait than in compute. Rank 0 then logs a per-rank table and the
    fix, and after every window writes ``<log_dir>/rank_timing.json``
    (atomically): ``slowest_rank`` (int or null), ``bound`` ('input',
    'compute' or null) and ``fix`` at the top (input-bound: the
    ``num_workers`` that would feed the measured step,
    ``ceil(load time per batch / step without data wait)``, next to the
    current one, and /dev/shm and storage hints; compute-bound: what to
    look at), then the per-rank figures, the medians, the margin and the
    hook's own cost. A run shorter than ``interval`` gets its report at the
    end; one process gets it too, with ``slowest_rank: null``, and no
    collective.

    Cost: 10-30 microseconds per iteration (its calls and forward hooks)
    and one gather of 9 floats per window, 0.1-0.3 ms on one host
    (``benchmarks/bench_straggler.py``): well under 0.1 % of a CenterPoint
    iteration. The report carries the hook's own time per iteration
    (``hook_cost``).

    Args:
        interval (int): Iterations per window. Defaults to 50.
        ratio (float): A rank is slow beyond ``ratio`` times the others'
            median (data wait + compute). Defaults to 1.5.
        min_ms (float): ... and that median plus ``min_ms`` milliseconds.
            Defaults to 20.
        out_file (str): Report file, relative to ``runner.log_dir``.
            Defaults to 'rank_timing.json'.
        gather_timeout (float): Seconds to wait for the other ranks'
            figures. The gather follows the other hooks of the window's
            last iteration, so the ranks wait there for rank 0 saving a
            checkpoint (as they would in the next all-reduce); on failure
            the hook warns and stops reporting. Defaults to 600 (NCCL's
            default collective timeout).

    Examples:
        >>> custom_hooks = [dict(type='StragglerHook', interval=50)]
    """

    # Runs last: the data wait starts after every other hook of the
    # iteration (checkpoint saving, logging) is done.
    priority = 'LOWEST'

    def __init__(self,
                 interval: int = 50,
                 ratio: float = RATIO,
                 min_ms: float = MIN_MS,
                 out_file: str = REPORT_FILE,
                 gather_timeout: float = 600.0) -> None:
        if isinstance(interval, bool) or not isinstance(interval, int) or \
                interval < 1:
            raise ValueError(
                'StragglerHook: interval must be an int >= 1 (iterations '
                f'per window), got {interval!r} ({type(interval).__name__});'
                ' e.g. interval=50')
        if isinstance(ratio, bool) or not isinstance(ratio, (int, float)) \
                or not ratio > 1:
            raise ValueError(
                f'StragglerHook: ratio must be a number > 1, got {ratio!r};'
                ' e.g. ratio=1.5 (slow: 1.5x the median of the others)')
        if isinstance(min_ms, bool) or not isinstance(min_ms, (int, float))\
                or not min_ms >= 0:
            raise ValueError(
                f'StragglerHook: min_ms must be a number >= 0, got '
                f'{min_ms!r}; e.g. min_ms=20 (milliseconds)')
        if not isinstance(out_file, str) or not out_file:
            raise ValueError(
                'StragglerHook: out_file must be a non-empty file name, got '
                f"{out_file!r}; e.g. out_file='{REPORT_FILE}'")
        self.interval = interval
        self.ratio = float(ratio)
        self.min_ms = float(min_ms)
        self.out_file = out_file
        self.gather_timeout = positive_seconds('StragglerHook',
                                               'gather_timeout',
                                               gather_timeout,
                                               'gather_timeout=600')
        self.report: Optional[dict] = None
        self.report_path: Optional[str] = None
        self._handles: List = []
        self._group = None
        self._current: Optional[IterationMarks] = None
        self._last_end: Optional[float] = None

    # -- setup -----------------------------------------------------------

    def before_train(self, runner) -> None:
        """Install the forward hooks, learn where each rank runs and make
        the gather group.

        Args:
            runner (Runner): The runner of the training process.
        """
        self._rank, self._world_size = get_dist_info()
        self.report_path = osp.join(runner.log_dir, self.out_file)
        wrapped = runner.model
        model = wrapped.module if is_model_wrapper(wrapped) else wrapped
        device = next((p.device for p in model.parameters()), None)
        self._clock = CudaEventClock() if device is not None and \
            device.type == 'cuda' else HostClock()
        self._remove_handles()
        if model is not wrapped:
            self._handles.append(
                wrapped.register_forward_pre_hook(self._wrapper_starts))
        self._handles += [
            model.register_forward_pre_hook(self._model_starts),
            model.register_forward_hook(self._model_ends),
        ]
        self._warn_collectives_in_forward(runner, model)
        loader = runner.train_dataloader
        self._sampler = getattr(loader, 'sampler', None)
        self._sampler_epoch = getattr(self._sampler, 'epoch', None)
        mine = dict(
            rank=self._rank,
            host=socket.gethostname(),
            local_rank=_env_int('LOCAL_RANK'),
            local_world_size=_env_int('LOCAL_WORLD_SIZE'),
            cpus=_cpus(),
            num_workers=getattr(loader, 'num_workers', None),
            batch_size=getattr(loader, 'batch_size', None))
        self._where = [mine]
        if self._world_size > 1 and torch_dist.is_available() and \
                torch_dist.is_initialized():
            # Collectives: every rank runs before_train at the same point.
            self._group = side_group(self.gather_timeout)
            self._where = [None] * self._world_size
            torch_dist.all_gather_object(self._where, mine, group=self._group)
        self._window = RankWindow()
        self._window_first = runner.iter + 1
        self._whole_step_warned = False
        self._last_end = None
        self.report = None

    def _warn_collectives_in_forward(self, runner, model) -> None:
        names = sorted({
            type(m).__name__
            for m in model.modules()
            if type(m).__name__ in ('SyncBatchNorm', 'NaiveSyncBatchNorm')
        } | ({type(runner.model).__name__} if 'FullyShard' in type(
            runner.model).__name__ else set()))
        if names and self._world_size > 1:
            runner.logger.warning(
                f'StragglerHook: the forward pass runs collectives '
                f'({", ".join(names)}), so a fast rank waits for a slow one '
                'inside it and its compute looks slower than it is; '
                'compute-bound stragglers show a smaller lead')

    def _remove_handles(self) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles = []

    # -- forward hooks: the compute span ---------------------------------

    def _wrapper_starts(self, module, args) -> None:
        if self._current is not None and self._current.wrapper is None:
            self._current.wrapper = self._clock.mark()

    def _model_starts(self, module, args) -> None:
        if self._current is not None and self._current.model is None:
            self._current.model = self._clock.mark()

    def _model_ends(self, module, args, output) -> None:
        if self._current is not None:
            self._current.end = self._clock.mark()

    # -- iterations --------------------------------------------------------

    def before_train_iter(self, runner, batch_idx: int,
                          data_batch=None) -> None:
        """Take the data wait; mark the start of the compute.

        Args:
            runner (Runner): The runner of the training process.
            batch_idx (int): Index of the batch in the epoch.
            data_batch (dict | tuple | list, optional): The batch.
        """
        now = time.perf_counter()
        epoch = getattr(self._sampler, 'epoch', None)
        if self._last_end is None or epoch != self._sampler_epoch:
            # Warm-up, or a new pass of the DataLoader (a new iterator,
            # workers starting, mmengine's 2 s pause on restart in
            # iteration-based loops): not counted.
            self._sampler_epoch = epoch
            self._current = None
            return
        self._window.add('data', (now - self._last_end) * 1e3)
        self._current = IterationMarks(
            now if self._clock.name == 'host' else self._clock.mark())
        self._window.sums['hook_ms'] += (time.perf_counter() - now) * 1e3

    def after_train_iter(self,
                         runner,
                         batch_idx: int,
                         data_batch=None,
                         outputs=None) -> None:
        """Record the iteration; at the end of a window, gather and report.

        Args:
            runner (Runner): The runner of the training process.
            batch_idx (int): Index of the batch in the epoch.
            data_batch (dict | tuple | list, optional): The batch.
            outputs (dict, optional): Outputs of ``train_step``.
        """
        now = time.perf_counter()
        marks, self._current = self._current, None
        if marks is not None:
            if marks.end is None:  # no forward hook fired
                marks.end = self._clock.mark()
                marks.whole_step = True
            self._window.pending.append(marks)
            self._window.add('iter', (now - self._last_end) * 1e3)
        self._window.sums['iters'] += 1
        self._window.resolve(self._clock)
        if (runner.iter + 1) % self.interval == 0:
            self._end_window(runner, runner.iter + 1)
        end = time.perf_counter()
        # The gather of a window is charged to the next one.
        self._window.sums['hook_ms'] += (end - now) * 1e3
        self._last_end = end

    def after_val(self, runner) -> None:
        """Validation is not data wait: the wait starts again now."""
        if self._last_end is not None:
            self._last_end = time.perf_counter()

    def after_train_epoch(self, runner) -> None:
        """The next epoch's first iteration (a new DataLoader iterator,
        workers starting) is not counted."""
        self._last_end = None

    def after_train(self, runner) -> None:
        """Report a run shorter than one window; remove the forward hooks.

        Args:
            runner (Runner): The runner of the training process.
        """
        if self.report is None:
            self._end_window(runner, runner.iter)
        self._remove_handles()

    # -- the window's end --------------------------------------------------

    def _end_window(self, runner, last: int) -> None:
        self._window.resolve(self._clock, block=True)
        mine = self._window.values()
        first = self._window_first
        self._window.reset()
        self._window_first = last + 1
        if self._group is not None:
            try:
                everyone = gather_sums(self._group, mine, self._world_size)
            except RuntimeError as err:
                self._group = None
                runner.logger.warning(
                    'StragglerHook: gathering the other ranks\' timings '
                    f'failed after iteration {last} ({type(err).__name__}: '
                    f'{str(err)[:200]}); no more reports')
                return
        elif self._world_size > 1:
            return  # the gather failed before
        else:
            everyone = [mine]
        ranks = [dict(where, **figures(values))
                 for where, values in zip(self._where, everyone)]
        if any(fig['compute_is_whole_step'] for fig in ranks) and \
                not self._whole_step_warned:
            self._whole_step_warned = True
            runner.logger.warning(
                'StragglerHook: the model\'s forward hook did not fire in '
                'train_step (a custom train_step?); compute is measured to '
                'the end of train_step, all-reduce waits included')
        measure = dict(
            clock=self._clock.name,
            data_wait='end of the previous iteration to before_train_iter',
            compute='before_train_iter to the end of forward + loss, less '
            "the DDP wrapper's pre-forward")
        self.report = build_report(ranks, (first, last), self.ratio,
                                   self.min_ms, measure)
        self._publish(runner)

    @master_only
    def _publish(self, runner) -> None:
        atomic_write_json(self.report, self.report_path)
        if self.report['slowest_rank'] is not None:
            runner.logger.warning(
                describe(self.report) + f'\nReport: {self.report_path}')
