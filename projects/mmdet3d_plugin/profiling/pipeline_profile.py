"""The profile of a train pipeline: its table and its JSON."""
import os
from dataclasses import asdict, dataclass
from typing import Any, Dict, Optional

from .feed import FeedEstimate
from .steady import SteadyState


@dataclass
class PipelineProfile:
    """What :func:`.pipeline.profile_pipeline` measured.

    Args:
        config (str): Config file.
        data_root (str, optional): The data root it was pointed at.
        dataset (str): Type of the train dataset (and what it wraps).
        steady (SteadyState): Steady-state cost per transform.
        feed (FeedEstimate): Workers per GPU for the step time.
        fresh_worker (dict, optional): A fresh worker's start-up (see
            :func:`.worker_start.measure_fresh_worker`); None if skipped.
    """
    config: str
    data_root: Optional[str]
    dataset: str
    steady: SteadyState
    feed: FeedEstimate
    fresh_worker: Optional[Dict[str, float]] = None

    def to_json(self) -> Dict[str, Any]:
        """The profile as one JSON object."""
        steady, feed = self.steady, self.feed
        return dict(
            config=self.config,
            data_root=self.data_root,
            dataset=self.dataset,
            conditions=dict(
                torch_threads=1, blas_threads=1, cpu_count=os.cpu_count()),
            samples=steady.samples,
            warmup=steady.warmup,
            transforms=[asdict(t) for t in steady.transforms],
            pipeline_ms_per_sample=steady.pipeline_ms,
            overhead_ms_per_sample=steady.overhead_ms,
            ms_per_sample=steady.ms_per_sample,
            cpu_ms_per_sample=steady.cpu_ms_per_sample,
            samples_per_s_per_worker=steady.samples_per_s,
            first_sample_in_process_ms=steady.first_sample_ms,
            fresh_worker=self.fresh_worker,
            feed=dict(
                asdict(feed),
                needed_samples_per_s=feed.needed_samples_per_s,
                fed_samples_per_s=feed.fed_samples_per_s,
                fed=feed.fed))

    def format(self) -> str:
        """The table ``tools/profile_pipeline.py`` prints."""
        steady, feed = self.steady, self.feed
        total = steady.ms_per_sample
        lines = [
            f'{self.config}: {self.dataset}, {steady.samples} samples after '
            f'{steady.warmup} warm-up, one worker on one core',
            f'{"#":>2}  {"transform":<28}{"ms/sample":>10}{"share":>8}'
            f'{"cpu ms":>9}'
        ]
        for t in steady.transforms:
            lines.append(f'{t.index:>2}  {t.name:<28}{t.ms_per_sample:>10.1f}'
                         f'{t.ms_per_sample / total:>8.0%}'
                         f'{t.cpu_ms_per_sample:>9.1f}')
        cpu_outside = max(
            steady.cpu_ms_per_sample -
            sum(t.cpu_ms_per_sample for t in steady.transforms), 0.0)
        lines += [
            f'{"":>2}  {"(outside the transforms)":<28}'
            f'{steady.overhead_ms:>10.1f}{steady.overhead_ms / total:>8.0%}'
            f'{cpu_outside:>9.1f}',
            f'{"":>2}  {"total":<28}{total:>10.1f}{"":>8}'
            f'{steady.cpu_ms_per_sample:>9.1f}'
            f'  = {steady.samples_per_s:.2f} samples/s per worker',
        ]
        worker = self.fresh_worker
        if worker is not None:
            lines.append(
                f'fresh worker: first sample {worker["to_first_sample_s"]:.1f}'
                f' s after its start (imports {worker["import_s"]:.1f} s, '
                f'dataset {worker["build_s"]:.1f} s, first sample '
                f'{worker["first_sample_s"]:.1f} s with numba compilation; '
                f'next {worker["next_sample_s"] * 1000:.0f} ms)')
        lines.append(
            f'feed: a {feed.step_time_s:.3g} s step of batch '
            f'{feed.batch_size} ({feed.step_time_source}) needs '
            f'{feed.needed_samples_per_s:.1f} samples/s: '
            f'{feed.workers_needed} worker(s) per GPU; {feed.workers} '
            f'deliver {feed.fed_samples_per_s:.1f} '
            f'({"enough" if feed.fed else "short"})')
        return '\n'.join(lines)
