"""Where a train pipeline's time goes (``tools/profile_pipeline.py`` and
the doctor's ``data.throughput``): each transform timed where it runs
(``timing``), the steady state of one worker on one core (``steady``,
``one_core``), a fresh worker's start-up (``worker_start``), the workers
that feed a GPU (``feed``), the table and JSON (``report``)."""
from .dataset import build_train_dataset
from .feed import ASSUMED_GPU_S_PER_SAMPLE, FeedEstimate, estimate_feed
from .pipeline import profile_parser, profile_pipeline, run_from_args
from .report import PipelineProfile
from .steady import SteadyState, TransformTime, measure_steady_state
from .timing import (TimedTransform, TransformClock, dataset_pipeline,
                     timed_pipeline)
from .worker_start import measure_fresh_worker

__all__ = [
    'ASSUMED_GPU_S_PER_SAMPLE', 'FeedEstimate', 'PipelineProfile',
    'SteadyState', 'TimedTransform', 'TransformClock', 'TransformTime',
    'build_train_dataset', 'dataset_pipeline', 'estimate_feed',
    'measure_fresh_worker', 'measure_steady_state', 'profile_parser',
    'profile_pipeline', 'run_from_args', 'timed_pipeline'
]
