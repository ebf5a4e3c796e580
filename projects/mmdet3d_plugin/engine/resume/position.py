"""Where the training data stands: the global position of the next sample,
as checkpoints record it."""
import math
from dataclasses import dataclass
from typing import Optional

#: Key of the data position in a checkpoint's ``meta``.
META_KEY = 'data_position'


@dataclass
class DataPosition:
    """The data trained so far in the current epoch (or the run's stream).

    Args:
        epoch (int): The epoch (0-based; 0 for a stream).
        start (int): Global position the epoch's iteration started at.
        batches (int): Batches each rank trained since ``start``.
        per_batch (int): Samples a batch takes over all ranks (``batch_size
            x world_size``).
        stream (bool): Positions count the whole run (``InfiniteSampler``).
    """

    epoch: int = 0
    start: int = 0
    batches: int = 0
    per_batch: int = 1
    stream: bool = False

    @property
    def position(self) -> int:
        """Global position of the next sample."""
        return self.start + self.batches * self.per_batch

    def meta(self, seed: int, world_size: int, batch_size: int) -> dict:
        """What a checkpoint records (``meta['data_position']``)."""
        return dict(epoch=self.epoch, position=self.position,
                    stream=self.stream, seed=int(seed),
                    world_size=int(world_size), batch_size=int(batch_size))


def first_batch_index(batches_per_epoch: int, remaining_samples: int,
                      batch_size: int, drop_last: bool) -> int:
    """``batch_idx`` of the first batch of an epoch resumed with
    ``remaining_samples`` left on this rank, so that its last batch is
    ``batches_per_epoch - 1`` as in an uninterrupted epoch."""
    if drop_last:
        left = remaining_samples // batch_size
    else:
        left = math.ceil(remaining_samples / batch_size)
    return max(0, batches_per_epoch - left)


def position_from_iters(meta: dict, batches_per_epoch: int, per_batch: int,
                        stream: bool) -> Optional[int]:
    """The global position a checkpoint without ``data_position`` (one that
    mmengine's loops saved) stands at, assuming the same world size and
    batch size: ``iter`` minus the epochs' iterations, in samples."""
    iters = int(meta.get('iter', 0))
    if stream:
        return iters * per_batch
    done = iters - int(meta.get('epoch', 0)) * batches_per_epoch
    if done < 0 or done >= batches_per_epoch:
        return None
    return done * per_batch
