"""Shards of ``create_data``'s work on disk: written as they finish, each
renamed into place complete, found again by a run restarted with the same
arguments, which then redoes only the missing ones.

A run's work folder is ``<out_dir>/.create_data-<key>/``, ``key`` a digest
of the root, the version, the prefix and the options that change the
products (:func:`work_key`); it holds one pickle per finished shard of each
phase (``infos/00012.pkl``, ``gt/00003.pkl``) and the GT database files
under ``gt/database/``. A shard's pickle is written to a temporary name and
renamed, so after any kill (``SIGKILL`` included) a shard is there whole
or not at all; a GT shard's ``.bin`` files are written before its pickle,
and a redone shard writes the same bytes again. The folder is removed when
the products are in place.
"""
import hashlib
import os
import pickle
import shutil
from pathlib import Path
from typing import Any, List, Sequence, Tuple


def work_key(*parts: Any) -> str:
    """A short digest of the arguments that change the products."""
    digest = hashlib.sha256(repr(parts).encode())
    return digest.hexdigest()[:16]


def shard_ranges(count: int, shard_size: int) -> List[Tuple[int, int]]:
    """``[start, stop)`` of each shard of ``count`` items."""
    if shard_size < 1:
        raise ValueError('create_data: shard_size must be >= 1; got '
                         f'{shard_size}.')
    return [(start, min(start + shard_size, count))
            for start in range(0, count, shard_size)]


def write_pickle_atomic(obj: Any, path: Path, protocol: int = None) -> None:
    """Pickle ``obj`` to ``path``: a temporary file in the same folder
    (named for this process), then a rename."""
    tmp = path.with_name(f'.{path.name}.tmp-{os.getpid()}')
    with open(tmp, 'wb') as f:
        pickle.dump(obj, f,
                    protocol=pickle.HIGHEST_PROTOCOL
                    if protocol is None else protocol)
    os.replace(tmp, path)


class ShardStore:
    """The shards of one phase in ``folder``.

    Args:
        folder (Path): ``<work>/<phase>``; created.
    """

    def __init__(self, folder: Path):
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)

    def path(self, index: int) -> Path:
        return self.folder / f'{index:05d}.pkl'

    def done(self, count: int) -> List[int]:
        """Indices (< ``count``) of the shards already written."""
        return [i for i in range(count) if self.path(i).is_file()]

    def write(self, index: int, obj: Any) -> None:
        write_pickle_atomic(obj, self.path(index))

    def read(self, index: int) -> Any:
        with open(self.path(index), 'rb') as f:
            return pickle.load(f)

    def read_all(self, count: int) -> Sequence[Any]:
        """The shards' contents in order (one in memory at a time)."""
        for index in range(count):
            yield self.read(index)


def replace_path(src: Path, dst: Path) -> None:
    """Move ``src`` onto ``dst``: a rename for a file; for a folder, the
    old one renamed aside first and removed after."""
    if src.is_dir() and dst.exists():
        trash = dst.with_name(f'.{dst.name}.old-{os.getpid()}')
        os.rename(dst, trash)
        os.rename(src, dst)
        shutil.rmtree(trash, ignore_errors=True)
    else:
        os.replace(src, dst)
