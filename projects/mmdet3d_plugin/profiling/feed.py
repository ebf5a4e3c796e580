"""How many DataLoader workers feed a GPU's training step.

A GPU consumes ``batch_size`` samples per step; each worker delivers
``1000 / ms_per_sample`` samples per second on its own core. So
``ceil(batch_size * ms_per_sample / 1000 / step_time)`` workers per GPU
keep it fed. This is a lower bound: collating a batch and sending it to
the main process (through ``/dev/shm``) cost the workers more, and a
node's workers need a core each.
"""
import math
from dataclasses import dataclass
from typing import Optional

#: Assumed GPU time of one training sample of a LiDAR detector such as
#: CenterPoint (forward and backward on a current datacenter GPU) when no
#: step time is given: a step of batch B takes ``B * 0.05`` s.
ASSUMED_GPU_S_PER_SAMPLE = 0.05


@dataclass
class FeedEstimate:
    """Whether the workers of one GPU keep its step fed.

    Args:
        batch_size (int): Samples per step per GPU.
        step_time_s (float): Seconds of one training step.
        step_time_source (str): Where the step time comes from.
        per_worker_samples_per_s (float): One worker's rate.
        workers (int): Workers per GPU judged (``num_workers``).
        workers_needed (int): Workers per GPU that feed the step.
    """
    batch_size: int
    step_time_s: float
    step_time_source: str
    per_worker_samples_per_s: float
    workers: int
    workers_needed: int

    @property
    def needed_samples_per_s(self) -> float:
        """Samples per second one GPU consumes."""
        return self.batch_size / self.step_time_s

    @property
    def fed_samples_per_s(self) -> float:
        """Samples per second ``workers`` deliver (0 with none: the main
        process loads, between steps)."""
        return self.workers * self.per_worker_samples_per_s

    @property
    def fed(self) -> bool:
        """Whether ``workers`` keep up with the step."""
        return self.workers >= self.workers_needed


def estimate_feed(ms_per_sample: float,
                  batch_size: int,
                  workers: int,
                  step_time: Optional[float] = None) -> FeedEstimate:
    """The workers per GPU that feed a step of ``step_time`` seconds.

    Args:
        ms_per_sample (float): One worker's steady-state time per sample.
        batch_size (int): ``train_dataloader.batch_size``.
        workers (int): ``train_dataloader.num_workers`` (or the count to
            judge).
        step_time (float, optional): Seconds of one training step.
            Defaults to None: ``batch_size *``
            :data:`ASSUMED_GPU_S_PER_SAMPLE`.

    Returns:
        FeedEstimate: The estimate.
    """
    if step_time is None:
        step_time = batch_size * ASSUMED_GPU_S_PER_SAMPLE
        source = (f'assumed: {ASSUMED_GPU_S_PER_SAMPLE * 1000:.0f} ms of GPU '
                  f'per sample x batch {batch_size}; give --step-time')
    else:
        source = 'given'
    if not step_time > 0:
        raise ValueError('profile_pipeline: the step time must be > 0 '
                         f'seconds; got {step_time!r}.')
    if ms_per_sample <= 0:
        raise ValueError('profile_pipeline: ms_per_sample must be > 0; got '
                         f'{ms_per_sample!r}.')
    needed = math.ceil(batch_size * ms_per_sample / 1000 / step_time)
    return FeedEstimate(batch_size, float(step_time), source,
                        1000.0 / ms_per_sample, workers, max(needed, 1))
