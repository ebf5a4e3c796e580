"""Exact resume: train loops that continue inside an epoch at the sample
they stopped at, with the samples' and the model's random state, and the
restart bookkeeping (attempts, iterations lost)."""
from .data_position_hook import DataPositionHook
from .loops import ResumableEpochBasedTrainLoop, ResumableIterBasedTrainLoop
from .position import META_KEY, DataPosition
from .checkpoint_seed import checkpoint_seed
from .progress import PROGRESS_NAME, read_progress, write_progress
from .restart import Attempt, restart_attempt

__all__ = [
    'Attempt', 'DataPosition', 'DataPositionHook', 'META_KEY',
    'PROGRESS_NAME', 'checkpoint_seed', 'ResumableEpochBasedTrainLoop',
    'ResumableIterBasedTrainLoop', 'read_progress', 'restart_attempt',
    'write_progress'
]
