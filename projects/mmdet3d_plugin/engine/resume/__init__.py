"""Exact resume, in one place: train loops that continue inside an epoch
at the sample they stopped at (``loops``, ``position``,
``data_position_hook``), with the samples' and the model's random state;
samples whose order and augmentation are functions of ``(seed, epoch,
position)`` (``sample_key``, ``sampler``, ``seeded_dataset``,
``dataloader``, ``gt_database``), so a resumed run loads exactly the samples
the interrupted run would have without loading the ones it skips; the
restart bookkeeping (``restart``, ``progress``, ``checkpoint_seed``); and
what a config gets for it (``run_config``: the loops, ``PreemptionHook``,
timed checkpoints). The hooks ``AccumulationResumeHook`` and
``PreemptionHook`` are in ``engine/hooks``, the process groups of a
torchrun restart in ``compat/restart_store.py``."""
from .data_position_hook import DataPositionHook
from .loops import ResumableEpochBasedTrainLoop, ResumableIterBasedTrainLoop
from .position import META_KEY, DataPosition
from .checkpoint_seed import checkpoint_seed
from .progress import PROGRESS_NAME, read_progress, write_progress
from .restart import Attempt, restart_attempt
from .sampler import ResumableSampler
from .seeded_dataset import SeededDataset

__all__ = [
    'Attempt', 'DataPosition', 'DataPositionHook', 'META_KEY',
    'PROGRESS_NAME', 'checkpoint_seed', 'ResumableEpochBasedTrainLoop',
    'ResumableIterBasedTrainLoop', 'ResumableSampler', 'SeededDataset',
    'read_progress', 'restart_attempt',
    'write_progress'
]
