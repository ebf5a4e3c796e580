"""The GT-database sampler of ``ObjectSample``, drawing from each sample's
own random state.

mmdet3d 1.4's ``DataBaseSampler`` keeps, per class, one shuffled list that
every sample of a worker walks on from where the previous one stopped
(``BatchSampler``, reshuffled with numpy's global RNG when it runs out):
which objects a sample gets depends on everything the worker sampled
before. Here each class draws its objects for a sample without
replacement from a generator seeded by one draw of numpy's global RNG,
which :mod:`.sample_key` has set for that sample. Per sample the
distribution is the same (distinct objects, uniform); across samples the
database is covered at random instead of in sweeps.
"""
from typing import List

import numpy as np
from mmdet3d.datasets.transforms.dbsampler import BatchSampler

from ...datasets.wrappers import walk_datasets


class SeededClassSampler(BatchSampler):
    """``BatchSampler`` whose draws depend only on numpy's global RNG
    state at the draw (one 32-bit number of it per draw)."""

    def _sample(self, num: int) -> List[int]:
        rng = np.random.default_rng(np.random.randint(2**32, dtype=np.uint64))
        count = min(int(num), self._example_num)
        return rng.choice(self._example_num, size=count,
                          replace=False).tolist()

    @classmethod
    def like(cls, sampler: BatchSampler) -> 'SeededClassSampler':
        """The same class list as ``sampler``, drawn per sample (its
        shuffled order is not kept: never read here, it would be pickled
        to every spawn worker)."""
        seeded = cls.__new__(cls)
        seeded.__dict__.update(sampler.__dict__)
        seeded._indices = np.empty(0, dtype=np.int64)
        return seeded


def seed_gt_samplers(dataset) -> int:
    """Make every ``ObjectSample`` in ``dataset``'s pipelines draw per
    sample (:class:`SeededClassSampler`).

    Args:
        dataset: A built dataset, possibly wrapped.

    Returns:
        int: The number of class samplers replaced.
    """
    replaced = 0
    for each in walk_datasets(dataset):
        pipeline = getattr(each, 'pipeline', None)
        for transform in getattr(pipeline, 'transforms', None) or ():
            samplers = getattr(getattr(transform, 'db_sampler', None),
                               'sampler_dict', None)
            if not isinstance(samplers, dict):
                continue
            for name, sampler in samplers.items():
                if isinstance(sampler, BatchSampler) and not isinstance(
                        sampler, SeededClassSampler):
                    samplers[name] = SeededClassSampler.like(sampler)
                    replaced += 1
    return replaced
