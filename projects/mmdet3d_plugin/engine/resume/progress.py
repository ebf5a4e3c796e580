"""The last iteration a run finished, kept in its work dir, so that the
next attempt can say how many iterations the failure cost."""
import json
import os.path as osp
from typing import Optional

from ...fileio.atomic import atomic_write

#: File in the work dir that rank 0 rewrites after every iteration.
PROGRESS_NAME = 'train_progress.json'


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
