"""What each rank measures: clocks, one iteration's marks, the window's sums
and their exchange over a side group.

An iteration leaves four marks on the rank's clock: ``start`` (its
``before_train_iter``), ``wrapper`` (the forward pre-hook of the DDP
wrapper, before DDP's own pre-forward work: the buffer broadcast, a
collective), ``model`` (the forward pre-hook of the model inside) and
``end`` (the model's forward hook, forward and loss done, before the
backward pass and its gradient all-reduce). The rank's compute is
``(end - start) - (model - wrapper)``: data preprocessing, forward and
loss, without any collective that waits for a slower rank.
"""
import time
from typing import List, Optional, Sequence

import torch
import torch.distributed as torch_dist


class HostClock:
    """``time.perf_counter`` marks: right for CPU work, where the host
    does the computing."""

    name = 'host'

    def mark(self) -> float:
        """A mark now."""
        return time.perf_counter()

    def ms(self, start: float, end: float) -> float:
        """Milliseconds from ``start`` to ``end``."""
        return (end - start) * 1e3

    def ready(self, mark) -> bool:
        """Whether ``mark`` can be read without waiting."""
        return True

    def wait(self, mark) -> None:
        """Wait until ``mark`` can be read."""


class CudaEventClock(HostClock):
    """CUDA events on the current stream: kernels run after the host
    launched them, so host time would measure launching, not computing.
    Events are read once complete (``query``), and waited for only at the
    end of a window, so the clock adds no synchronisation per iteration."""

    name = 'cuda_events'

    def mark(self):
        event = torch.cuda.Event(enable_timing=True)
        event.record()
        return event

    def ms(self, start, end) -> float:
        return start.elapsed_time(end)

    def ready(self, mark) -> bool:
        return mark.query()

    def wait(self, mark) -> None:
        mark.synchronize()


class IterationMarks:
    """The four marks of one iteration (see the module's docstring)."""

    __slots__ = ('start', 'wrapper', 'model', 'end', 'whole_step')

    def __init__(self, start) -> None:
        self.start = start
        self.wrapper = None
        self.model = None
        self.end = None
        #: True when no forward hook fired: ``end`` is then the end of
        #: ``train_step`` (backward and all-reduce included).
        self.whole_step = False

    def compute_ms(self, clock: HostClock) -> float:
        """Own compute: start to end, less the wrapper's pre-forward."""
        total = clock.ms(self.start, self.end)
        if self.wrapper is not None and self.model is not None:
            total -= clock.ms(self.wrapper, self.model)
        return max(total, 0.0)


#: The sums a rank sends at the end of a window, in this order.
FIELDS = ('iters', 'data_n', 'data_ms', 'compute_n', 'compute_ms', 'iter_n',
          'iter_ms', 'hook_ms', 'whole_step_n')


class RankWindow:
    """Sums of one rank's figures over the current window."""

    def __init__(self) -> None:
        self.sums = dict.fromkeys(FIELDS, 0.0)
        self.pending: List[IterationMarks] = []

    def reset(self) -> None:
        """Start a new window (pending marks stay: they belong to it)."""
        self.sums = dict.fromkeys(FIELDS, 0.0)

    def add(self, key: str, ms: float) -> None:
        """Add one sample of ``key`` ('data', 'iter', 'compute')."""
        self.sums[f'{key}_n'] += 1
        self.sums[f'{key}_ms'] += ms

    def resolve(self, clock: HostClock, block: bool = False) -> None:
        """Turn the marks of finished iterations into compute samples.

        Args:
            clock (HostClock): The clock of the marks.
            block (bool): Wait for the unfinished ones too. Defaults to
                False.
        """
        while self.pending:
            marks = self.pending[0]
            if not clock.ready(marks.end):
                if not block:
                    return
                clock.wait(marks.end)
            self.pending.pop(0)
            self.add('compute', marks.compute_ms(clock))
            self.sums['whole_step_n'] += marks.whole_step

    def values(self) -> List[float]:
        """The sums in :data:`FIELDS` order."""
        return [float(self.sums[k]) for k in FIELDS]


def figures(values: Sequence[float]) -> dict:
    """Means of one rank's sums (None where nothing was measured)."""
    sums = dict(zip(FIELDS, values))

    def mean(key: str) -> Optional[float]:
        n = sums[f'{key}_n']
        return round(sums[f'{key}_ms'] / n, 3) if n else None

    data, compute = mean('data'), mean('compute')
    iters = int(sums['iters'])
    return dict(
        iters=iters,
        measured_iters=int(sums['data_n']),
        data_wait_ms=data,
        compute_ms=compute,
        step_ms=None if data is None or compute is None else round(
            data + compute, 3),
        iter_ms=mean('iter'),
        hook_ms_per_iter=round(sums['hook_ms'] / iters, 4) if iters else None,
        compute_is_whole_step=bool(sums['whole_step_n']))


def gather_sums(group, values: Sequence[float],
                world_size: int) -> List[List[float]]:
    """Every rank's sums: a collective on ``group`` (gloo, CPU tensors).

    Raises:
        RuntimeError: When the gather fails or times out.
    """
    mine = torch.tensor(list(values), dtype=torch.float64)
    everyone = [torch.empty_like(mine) for _ in range(world_size)]
    torch_dist.all_gather(everyone, mine, group=group)
    return [t.tolist() for t in everyone]
