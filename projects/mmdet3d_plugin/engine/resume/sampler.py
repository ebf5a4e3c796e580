"""A sampler that starts anywhere in an epoch without loading what it
skips."""
import math
from typing import Dict, Iterator, List, Optional, Sized

import torch
from mmengine.dataset import DefaultSampler, InfiniteSampler
from mmengine.dist import get_dist_info, sync_random_seed
from torch.utils.data import Sampler

from mmdet3d.registry import DATA_SAMPLERS
from .sample_key import SampleKey


@DATA_SAMPLERS.register_module()
class ResumableSampler(Sampler):
    """mmengine's ``DefaultSampler`` (or ``InfiniteSampler``) that can start
    at any position of an epoch and yields :class:`SampleKey` s.

    A fresh epoch yields the indices ``DefaultSampler`` yields with the
    same ``seed``, ``shuffle`` and ``round_up``: the epoch's order is
    ``torch.randperm`` seeded with ``seed + epoch``, and rank ``r`` of
    ``W`` takes positions ``r, r + W, ...``. :meth:`resume_at` makes the
    next iteration start at a global position ``G`` of the epoch (all
    positions before it were trained): rank ``r`` then takes ``G + r,
    G + r + W, ...``. Nothing before ``G`` is loaded, so a resume costs
    the same anywhere in the epoch, and ``W`` may differ from the world
    size that trained the positions before ``G``.

    With ``infinite=True`` (``IterBasedTrainLoop``) the epochs follow one
    another as one stream; positions count from the start of the run.

    Args:
        dataset (Sized): The dataset.
        shuffle (bool): Shuffle each epoch. Defaults to True.
        seed (int, optional): Seed of the order and of every sample's
            random state; the same on all ranks. Defaults to None (drawn
            and shared by rank 0).
        round_up (bool): Pad the epoch to a multiple of the world size by
            repeating its first positions, as ``DefaultSampler`` does.
            Defaults to True.
        infinite (bool): Never end (``InfiniteSampler``'s use). Defaults
            to False.
    """

    def __init__(self,
                 dataset: Sized,
                 shuffle: bool = True,
                 seed: Optional[int] = None,
                 round_up: bool = True,
                 infinite: bool = False) -> None:
        self.rank, self.world_size = get_dist_info()
        self.dataset = dataset
        self.shuffle = shuffle
        self.seed = sync_random_seed() if seed is None else int(seed)
        self.round_up = round_up
        self.infinite = infinite
        self.epoch = 0
        self._resume: Optional[Dict[str, int]] = None

    def order(self, epoch: int) -> List[int]:
        """Dataset indices of ``epoch`` in the order they are trained."""
        if not self.shuffle:
            return list(range(len(self.dataset)))
        gen = torch.Generator()
        gen.manual_seed(self.seed + epoch)
        return torch.randperm(len(self.dataset), generator=gen).tolist()

    def set_epoch(self, epoch: int) -> None:
        """Set the epoch of the next iteration (``DistSamplerSeedHook``)."""
        self.epoch = epoch

    def resume_at(self, epoch: int, position: int) -> None:
        """Start the next iteration of ``epoch`` at global ``position``.

        Args:
            epoch (int): The epoch to continue (ignored when infinite).
            position (int): Positions trained before, summed over ranks
                (the stream position when infinite).
        """
        self._resume = dict(epoch=int(epoch), position=int(position))

    def start(self) -> int:
        """Global position the next iteration starts at."""
        if self._resume is None:
            return 0
        if self.infinite or self._resume['epoch'] == self.epoch:
            return self._resume['position']
        return 0

    def epoch_end(self, start: int) -> int:
        """The global position where an epoch started at ``start`` ends."""
        size = len(self.dataset)
        if not self.round_up or start >= size:
            return max(size, start)
        return start + math.ceil((size - start) / self.world_size) * \
            self.world_size

    def remaining(self, start: Optional[int] = None) -> int:
        """Samples this rank yields in an epoch started at ``start``."""
        start = self.start() if start is None else start
        first = start + self.rank
        return max(0, math.ceil((self.epoch_end(start) - first) /
                                self.world_size))

    def __iter__(self) -> Iterator[SampleKey]:
        start = self.start()
        self._resume = None
        if self.infinite:
            return self._stream(start)
        return self._epoch(self.epoch, start)

    def _epoch(self, epoch: int, start: int) -> Iterator[SampleKey]:
        order = self.order(epoch)
        size = len(order)
        for pos in range(start + self.rank, self.epoch_end(start),
                         self.world_size):
            yield SampleKey(order[pos % size], self.seed, epoch, pos)

    def _stream(self, start: int) -> Iterator[SampleKey]:
        size = len(self.dataset)
        pos = start + self.rank
        epoch, order = -1, []
        while True:
            if pos // size != epoch:
                epoch = pos // size
                order = self.order(epoch)
            yield SampleKey(order[pos % size], self.seed, epoch, pos % size)
            pos += self.world_size

    def __len__(self) -> int:
        """Samples this rank yields in a whole epoch (``DefaultSampler``'s
        ``num_samples``)."""
        return self.remaining(0)


#: The mmengine samplers that :class:`ResumableSampler` stands in for, with
#: the ``infinite`` value each means.
REPLACEABLE_SAMPLERS = {
    'DefaultSampler': False,
    'mmengine.DefaultSampler': False,
    'InfiniteSampler': True,
    'mmengine.InfiniteSampler': True,
    DefaultSampler: False,
    InfiniteSampler: True,
}
