"""Samples whose order and augmentation are functions of ``(seed, epoch,
position)``: what makes a resumed run load exactly the samples the
interrupted run would have, without loading the ones it skips."""
from .dataloader import resumable_dataloader
from .gt_database import SeededClassSampler, seed_gt_samplers
from .sample_key import SampleKey, derived_seed, seed_all, seed_sample
from .sampler import REPLACEABLE_SAMPLERS, ResumableSampler
from .seeded_dataset import SeededDataset

__all__ = [
    'REPLACEABLE_SAMPLERS', 'ResumableSampler', 'SampleKey',
    'SeededClassSampler', 'SeededDataset', 'derived_seed', 'seed_all',
    'resumable_dataloader', 'seed_gt_samplers', 'seed_sample'
]
