"""Which attempt of a run this process is: torchrun's restarts
(``--max-restarts``, ``MAX_RESTARTS`` of ``tools/dist_train.sh``) and
Slurm's requeues."""
import os
from typing import NamedTuple, Optional


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
