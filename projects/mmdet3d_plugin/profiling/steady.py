"""The steady-state cost of a dataset's samples, transform by transform."""
import random
import time
from dataclasses import dataclass
from typing import Any, List

import numpy as np
import torch

from .one_core import as_one_worker
from .timing import timed_pipeline


@dataclass
class TransformTime:
    """One transform's share of a sample.

    Args:
        index (int): Place in the pipeline.
        name (str): Type name.
        ms_per_sample (float): Wall milliseconds per delivered sample.
        cpu_ms_per_sample (float): CPU milliseconds (of the loading
            thread) per delivered sample: close to the wall time on an idle
            core, less where other work shares it.
        calls (int): Calls over the measured samples (more than the
            samples where the dataset refetched a sample the pipeline
            dropped).
    """
    index: int
    name: str
    ms_per_sample: float
    cpu_ms_per_sample: float
    calls: int


@dataclass
class SteadyState:
    """What a warmed-up worker spends per sample.

    Args:
        transforms (list[TransformTime]): Per transform, pipeline order.
        samples (int): Samples measured.
        warmup (int): Samples loaded first and not measured.
        ms_per_sample (float): Wall time of ``dataset[i]`` per sample.
        cpu_ms_per_sample (float): CPU time of ``dataset[i]`` per sample.
        first_sample_ms (float): The first warm-up sample (numba
            compilation and first file reads in this process included).
    """
    transforms: List[TransformTime]
    samples: int
    warmup: int
    ms_per_sample: float
    cpu_ms_per_sample: float
    first_sample_ms: float

    @property
    def pipeline_ms(self) -> float:
        """Time in the transforms per sample."""
        return sum(t.ms_per_sample for t in self.transforms)

    @property
    def overhead_ms(self) -> float:
        """Time per sample outside the transforms (the info lookup and its
        copy, the dataset wrapper)."""
        return max(self.ms_per_sample - self.pipeline_ms, 0.0)

    @property
    def samples_per_s(self) -> float:
        """Samples per second of one worker."""
        return 1000.0 / self.ms_per_sample


def measure_steady_state(dataset: Any,
                         samples: int = 20,
                         warmup: int = 2,
                         start: int = 0,
                         seed: int = 0) -> SteadyState:
    """Load ``warmup`` then ``samples`` samples of ``dataset`` in a row
    as one worker on one core (:func:`.one_core.as_one_worker`), timing
    each transform (:func:`.timing.timed_pipeline`).

    Args:
        dataset: A built dataset (or wrapper), ``full_init`` done.
        samples (int): Samples measured. Defaults to 20.
        warmup (int): Samples loaded before, not measured (at least 1:
            the first compiles numba kernels). Defaults to 2.
        start (int): Index of the first sample. Defaults to 0.
        seed (int): Seed of ``random``, ``numpy.random`` and torch (the
            augmentations draw from them), whose states are put back
            afterwards. Defaults to 0.

    Returns:
        SteadyState: The measured costs.
    """
    for name, value, low in (('samples', samples, 1), ('warmup', warmup, 1)):
        if isinstance(value, bool) or not isinstance(value, int) or \
                value < low:
            raise ValueError(f'profile_pipeline: {name} must be an int >= '
                             f'{low}; got {value!r}.')
    if len(dataset) == 0:
        raise ValueError('profile_pipeline: the dataset is empty; point '
                         'its ann_file at an info file with samples.')
    states = random.getstate(), np.random.get_state(), torch.get_rng_state()
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    try:
        clock, first_ms, total_ms, cpu_ms = _load(dataset, samples, warmup,
                                                  start)
    finally:
        random.setstate(states[0])
        np.random.set_state(states[1])
        torch.set_rng_state(states[2])
    transforms = [
        TransformTime(i, name, seconds * 1000 / samples,
                      cpu_seconds * 1000 / samples, calls)
        for i, (name, seconds, cpu_seconds, calls) in enumerate(
            zip(clock.names, clock.seconds, clock.cpu_seconds, clock.calls))
    ]
    return SteadyState(transforms, samples, warmup, total_ms / samples,
                       cpu_ms / samples, first_ms)


def _load(dataset: Any, samples: int, warmup: int, start: int) -> tuple:
    """Load the samples; ``(clock, first ms, total ms, total CPU ms)``."""
    with as_one_worker(), timed_pipeline(dataset) as clock:
        began = time.perf_counter()
        dataset[start % len(dataset)]
        first_ms = (time.perf_counter() - began) * 1000
        for index in range(start + 1, start + warmup):
            dataset[index % len(dataset)]
        clock.reset()
        began, cpu = time.perf_counter(), time.thread_time()
        for index in range(start + warmup, start + warmup + samples):
            dataset[index % len(dataset)]
        total_ms = (time.perf_counter() - began) * 1000
        cpu_ms = (time.thread_time() - cpu) * 1000
    return clock, first_ms, total_ms, cpu_ms
