"""The dataset indices of each batch the train loop takes, from the
sampler's order, whatever the dataset's samples hold.

A DataLoader's batches come out in the order its batch sampler made them
(``in_order``, torch's default), and the batch sampler runs in the main
process, workers or not: torch's ``BatchSampler`` takes its sampler's
indices ``batch_size`` at a time. :class:`BatchIndices` stands between the
two, keeping the indices drawn and not yet trained; the train loop takes
one batch per iteration, so after iteration ``i`` the next ``batch_size``
of them (fewer at the end of a pass) are the batch it trained. A new pass
(``iter`` on the sampler: a new epoch, a DataLoader iterator made again)
drops what the last one drew ahead: its unloaded batches are dropped with
the iterator that drew them. A pass that started before it was put in
place (mmengine's ``IterBasedTrainLoop`` starts its iterator when it is
built, before any hook) is made again where the sampler's passes depend
on nothing but its seed and epoch (:meth:`BatchIndices.batch_of_pass`).
"""
import itertools
import numbers
from collections import deque
from typing import Any, Iterator, List, Optional

from mmengine.dataset import DefaultSampler, InfiniteSampler
from torch.utils.data import BatchSampler, IterableDataset, Sampler


def _named(index: Any) -> Any:
    """An index as a record holds it: an ``int`` (a ``SampleKey`` too),
    else its text."""
    return int(index) if isinstance(index, numbers.Integral) else str(index)


class BatchIndices(Sampler):
    """A ``BatchSampler``'s sampler, passed through, that keeps the indices
    it yields until the loop has trained them.

    Args:
        sampler (Sampler): The batch sampler's own sampler.
        batch_size (int): The batch sampler's batch size.
    """

    def __init__(self, sampler: Sampler, batch_size: int) -> None:
        self.sampler = sampler
        self.batch_size = int(batch_size)
        self._drawn: deque = deque()
        #: Whether a pass started since this was put in place: before
        #: that, the batches trained come from a pass it did not see.
        self.seen = False

    @classmethod
    def install(cls, loader) -> Optional['BatchIndices']:
        """Put one between ``loader``'s batch sampler and its sampler (once;
        before its iterator starts, or the pass in progress is not seen).

        Args:
            loader (DataLoader): The train DataLoader.

        Returns:
            BatchIndices | None: The one in place; None where the batches
            are not the sampler's indices in order (a batch sampler other
            than torch's ``BatchSampler``, e.g. one grouping by aspect
            ratio, ``in_order=False``, an ``IterableDataset``).
        """
        batches = getattr(loader, 'batch_sampler', None)
        if (type(batches) is not BatchSampler
                or not getattr(loader, 'in_order', True)
                or isinstance(loader.dataset, IterableDataset)):
            return None
        if not isinstance(batches.sampler, cls):
            batches.sampler = cls(batches.sampler, batches.batch_size)
        return batches.sampler

    def __iter__(self) -> Iterator:
        self._drawn.clear()
        self.seen = True
        for index in self.sampler:
            self._drawn.append(index)
            yield index

    def __len__(self) -> int:
        return len(self.sampler)

    def batch_of_pass(self, number: int) -> Optional[List[int]]:
        """The dataset indices of batch ``number`` (0-based) of the current
        pass, made again from its start: for mmengine's ``DefaultSampler``
        (a pass depends on its seed and epoch only) and ``InfiniteSampler``
        (one stream from its seed, made anew); it costs ``number`` batches
        of indices. None for other samplers.

        Args:
            number (int): Batches the pass gave before this one.
        """
        sampler = self.sampler
        if type(sampler) is InfiniteSampler:
            # One stream for the sampler's life: a new one, the same.
            sampler = InfiniteSampler(sampler.dataset, sampler.shuffle,
                                      sampler.seed)
        elif type(sampler) is not DefaultSampler:
            return None
        start = number * self.batch_size
        return [_named(i) for i in itertools.islice(
            sampler, start, start + self.batch_size)]

    def take(self) -> Optional[List[int]]:
        """The dataset indices of the batch just trained (call once per
        iteration); None while no pass was seen."""
        if not self.seen:
            return None
        count = min(self.batch_size, len(self._drawn))
        return [_named(self._drawn.popleft()) for _ in range(count)]
