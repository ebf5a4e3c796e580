"""Time each transform of a dataset's pipeline where it runs.

:func:`timed_pipeline` puts a :class:`TimedTransform` around every
transform of the pipeline (``Compose.transforms``) for the length of a
``with`` block, then puts the transforms back. The wrapper only calls the
transform and adds the time its call took to a :class:`TransformClock`:
the samples come out as they would without it. It counts wall time and
the calling thread's CPU time; on a machine busy with other work the wall
time grows, the CPU time much less.
"""
import contextlib
import itertools
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterator, List

from ..datasets.wrappers import walk_datasets


@dataclass
class TransformClock:
    """Time spent in each transform of a pipeline, in pipeline order.

    Args:
        names (list[str]): Type name of each transform.
        seconds (list[float]): Wall time spent in each. Defaults to zeros.
        cpu_seconds (list[float]): CPU time of the calling thread spent in
            each. Defaults to zeros.
        calls (list[int]): Calls of each. Defaults to zeros.
    """
    names: List[str]
    seconds: List[float] = field(default_factory=list)
    cpu_seconds: List[float] = field(default_factory=list)
    calls: List[int] = field(default_factory=list)

    def __post_init__(self):
        self.reset()

    def add(self, index: int, seconds: float, cpu_seconds: float) -> None:
        """Count one call of transform ``index`` that took ``seconds``
        (``cpu_seconds`` of CPU)."""
        self.seconds[index] += seconds
        self.cpu_seconds[index] += cpu_seconds
        self.calls[index] += 1

    def reset(self) -> None:
        """Forget the calls so far (after the warm-up samples)."""
        self.seconds = [0.0] * len(self.names)
        self.cpu_seconds = [0.0] * len(self.names)
        self.calls = [0] * len(self.names)


class TimedTransform:
    """Call ``transform`` and add the call's wall and CPU time to
    ``clock``.

    Args:
        transform (callable): A pipeline transform.
        clock (TransformClock): Where the time goes.
        index (int): The transform's place in the pipeline.
    """

    def __init__(self, transform: Callable, clock: TransformClock,
                 index: int):
        self.transform = transform
        self.clock = clock
        self.index = index

    def __call__(self, results: Dict[str, Any]) -> Any:
        start, cpu = time.perf_counter(), time.thread_time()
        try:
            return self.transform(results)
        finally:
            self.clock.add(self.index, time.perf_counter() - start,
                           time.thread_time() - cpu)

    def __repr__(self) -> str:
        return repr(self.transform)


def dataset_pipeline(dataset: Any) -> Any:
    """The ``Compose`` of ``dataset``, or of the dataset a wrapper
    (``CBGSDataset``, ``RepeatDataset``, ...) holds.

    Raises:
        TypeError: If neither it nor a dataset it wraps has a pipeline.
    """
    seen = []
    for inner in itertools.islice(walk_datasets(dataset, concat=False), 8):
        seen.append(type(inner).__name__)
        pipeline = getattr(inner, 'pipeline', None)
        if pipeline is not None and isinstance(
                getattr(pipeline, 'transforms', None), list):
            return pipeline
    raise TypeError(
        f'profile_pipeline: expected a dataset with a pipeline '
        f'(mmengine Compose, .transforms) or a wrapper of one; got '
        f'{" of ".join(seen)}. Profile a dataset built from the config '
        '(train_dataloader.dataset).')


@contextlib.contextmanager
def timed_pipeline(dataset: Any) -> Iterator[TransformClock]:
    """Time the transforms of ``dataset``'s pipeline inside the block.

    Args:
        dataset: A built dataset, or a wrapper of one.

    Yields:
        TransformClock: The time spent in each transform so far.

    Examples:
        >>> with timed_pipeline(dataset) as clock:
        ...     sample = dataset[0]
        >>> dict(zip(clock.names, clock.seconds))
    """
    compose = dataset_pipeline(dataset)
    original = list(compose.transforms)
    clock = TransformClock([type(t).__name__ for t in original])
    compose.transforms[:] = [
        TimedTransform(t, clock, i) for i, t in enumerate(original)
    ]
    try:
        yield clock
    finally:
        compose.transforms[:] = original
