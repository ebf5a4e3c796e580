"""A restarted run's bookkeeping: which attempt this process is
(torchrun's restarts, ``--max-restarts`` / ``MAX_RESTARTS`` of
``tools/dist_train.sh``, and Slurm's requeues), the last iteration the
previous attempt finished (``train_progress.json``, so the next attempt
can say how many iterations the failure cost), and the seed a checkpoint
was trained with."""
import json
import os
import os.path as osp
from typing import NamedTuple, Optional

import torch

from ...fileio.atomic import atomic_write

#: File in the work dir that rank 0 rewrites after every iteration.
PROGRESS_NAME = 'train_progress.json'


class Attempt(NamedTuple):
    """A restarted run: ``number`` restarts so far (1 for the first
    restart) of at most ``limit`` (None: no limit is known)."""

    number: int
    limit: Optional[int]
    source: str

    def text(self) -> str:
        """``'attempt 2 of 3 (torchrun restart 1 of 2)'``."""
        limit = '' if self.limit is None else f' of {self.limit + 1}'
        upto = '' if self.limit is None else f' of {self.limit}'
        return (f'attempt {self.number + 1}{limit} ({self.source} '
                f'{self.number}{upto})')


def _count(name: str) -> int:
    try:
        return int(os.environ.get(name, '0') or 0)
    except ValueError:
        return 0


def restart_attempt() -> Optional[Attempt]:
    """The restart this process belongs to, or None for a first attempt.

    torchrun sets ``TORCHELASTIC_RESTART_COUNT`` and
    ``TORCHELASTIC_MAX_RESTARTS`` in its workers; Slurm sets
    ``SLURM_RESTART_COUNT`` in a requeued job.
    """
    count = _count('TORCHELASTIC_RESTART_COUNT')
    if count > 0:
        limit = os.environ.get('TORCHELASTIC_MAX_RESTARTS')
        return Attempt(count, int(limit) if limit else None,
                       'torchrun restart')
    count = _count('SLURM_RESTART_COUNT')
    if count > 0:
        return Attempt(count, None, 'Slurm requeue')
    return None


def write_progress(work_dir: str, iteration: int, epoch: int) -> None:
    """Record that ``iteration`` iterations are done (rank 0, each
    iteration; all-or-nothing, without waiting for the disk)."""
    atomic_write(json.dumps(dict(iter=int(iteration), epoch=int(epoch))),
                 osp.join(work_dir, PROGRESS_NAME), durable=False)


def read_progress(work_dir: str) -> Optional[int]:
    """Iterations the previous attempt finished, or None if unknown."""
    path = osp.join(work_dir, PROGRESS_NAME)
    try:
        with open(path, encoding='utf-8') as f:
            return int(json.load(f)['iter'])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def checkpoint_seed(path: str) -> Optional[int]:
    """``meta['seed']`` of a checkpoint, read without loading its tensors
    (memory-mapped), or None."""
    try:
        meta = torch.load(path, map_location='cpu', mmap=True,
                          weights_only=False).get('meta', {})
    except Exception:  # noqa: BLE001  any unreadable file: no seed
        return None
    seed = meta.get('seed')
    return int(seed) if seed is not None else None
