"""Doctor check that the run's DataLoader workers keep its GPUs fed.

Once ``data.first_batch`` passed, ``data.throughput`` loads a few train
samples in this process as one worker on one core
(``profiling.measure_steady_state``, as ``tools/profile_pipeline.py`` does
with more samples), and compares what ``num_workers`` workers deliver with
what a step of ``--step-time`` seconds (else an assumed GPU time per
sample, ``profiling.ASSUMED_GPU_S_PER_SAMPLE``) consumes. The decision is
:func:`plan_throughput`, a function of the measurements.
"""
import os
from typing import Optional

from ...config.presets import known_presets
from ...profiling.feed import FeedEstimate, estimate_feed
from ...profiling.pipeline import loader_settings
from ...profiling.steady import SteadyState, measure_steady_state
from ..context import CheckResult, DoctorContext, passed, warned

#: Samples measured after the warm-up: quick, and enough to rank the
#: transforms; ``tools/profile_pipeline.py`` measures more.
SAMPLES = 4
#: Samples loaded first (the first compiles numba kernels).
WARMUP = 1
#: The preset of a faster train pipeline; the fix names it once
#: ``configs/_base_/presets/<name>.py`` exists.
FAST_PIPELINE_PRESET = 'fast_pipeline'


def _ms(value: float) -> str:
    return f'{value:.0f}' if value >= 10 else f'{value:.2g}'


def _costliest(steady: SteadyState, count: int = 2) -> str:
    ranked = sorted(steady.transforms, key=lambda t: -t.ms_per_sample)
    return ', '.join(f'{t.name} {_ms(t.ms_per_sample)}'
                     for t in ranked[:count])


def plan_throughput(steady: SteadyState,
                    feed: FeedEstimate,
                    procs: int,
                    cpu_count: Optional[int],
                    fast_preset: Optional[str] = None) -> CheckResult:
    """Pass when the workers feed the step, else warn with the fix.

    Args:
        steady (SteadyState): One worker's measured cost per sample.
        feed (FeedEstimate): The workers per GPU for the step time.
        procs (int): Training processes (GPUs) on this node.
        cpu_count (int, optional): CPU cores of this node.
        fast_preset (str, optional): A faster pipeline preset to name in
            the fix. Defaults to None.

    Returns:
        CheckResult: The ``data.throughput`` line.
    """
    check = 'data.throughput'
    detail = (
        f'{_ms(steady.ms_per_sample)} ms/sample as one worker on one core '
        f'(most in {_costliest(steady)} ms); {feed.workers} worker(s) per '
        f'GPU deliver {feed.fed_samples_per_s:.1f} samples/s, a '
        f'{feed.step_time_s:.3g} s step of batch {feed.batch_size} needs '
        f'{feed.needed_samples_per_s:.1f} ({feed.step_time_source})')
    if feed.fed:
        return passed(check, detail)
    needed = feed.workers_needed
    node = needed * procs
    fix = (f'train_dataloader.num_workers={needed} ({node} workers per '
           f'node of {procs} GPU(s), one CPU core each')
    if cpu_count is not None and node > cpu_count:
        fix += f', more than the {cpu_count} cores here'
    fix += ('; /dev/shm must hold num_workers x prefetch_factor batches per '
            'GPU, see data.shm)')
    if fast_preset is not None:
        fix += f", or the faster pipeline: presets = ['{fast_preset}']"
    fix += ('; tools/profile_pipeline.py shows which transforms cost the '
            'most')
    return warned(check, detail, fix)


def check_throughput(ctx: DoctorContext) -> CheckResult:
    """The configured workers deliver the samples a step consumes."""
    steady = measure_steady_state(
        ctx.artifacts['dataset.train'], samples=SAMPLES, warmup=WARMUP)
    batch_size, workers = loader_settings(ctx.cfg)
    feed = estimate_feed(steady.ms_per_sample, batch_size, workers,
                         ctx.options.step_time)
    preset = FAST_PIPELINE_PRESET \
        if FAST_PIPELINE_PRESET in known_presets() else None
    return plan_throughput(steady, feed, ctx.options.procs_per_node,
                           os.cpu_count(), preset)
