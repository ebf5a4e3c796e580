"""Serialized dataset infos that worker processes map instead of copying.

mmengine's ``BaseDataset`` packs all infos into one numpy byte array
(``data_bytes`` plus ``data_address``). Under ``fork`` the workers share it
with the main process; under ``spawn`` and ``forkserver`` every worker gets
its own pickled copy, hundreds of MB for nuScenes trainval.

:class:`SharedArrays` puts such arrays into a file that is deleted right
after it is created (on ``/dev/shm`` when it has room, else the temp
directory) and keeps only its file descriptor and a read-only memory map.
Pickling it sends ``(pid, fd, inode)``; the receiving process opens
``/proc/<pid>/fd/<fd>`` and maps the same pages. Nothing has a name on disk,
so nothing leaks: the kernel frees the memory when the last descriptor and
mapping are gone, whether the owner released the dataset, exited or was
killed. The only window, between creating and deleting the file, is covered
by :func:`sweep_stale_files`, which deletes files of processes that died
inside it.

Linux only (``/proc``); elsewhere the arrays are pickled by value, as in
mmengine.
"""
import mmap
import operator
import os
import tempfile
import uuid
import weakref
from collections import abc
from typing import Iterator, List, Sequence, Tuple

import numpy as np

FILE_PREFIX = 'mmdet3d_plugin_infos-'
_ALIGN = 64


def shared_memory_supported() -> bool:
    """Whether processes can attach through ``/proc/<pid>/fd``."""
    return os.path.isdir(f'/proc/{os.getpid()}/fd')


def info_file_dirs() -> Tuple[str, str]:
    """Where info files are created: ``/dev/shm``, else the temp dir."""
    return '/dev/shm', tempfile.gettempdir()


def _pick_dir(nbytes: int) -> str:
    shm, fallback = info_file_dirs()
    try:
        stat = os.statvfs(shm)
        if stat.f_bavail * stat.f_frsize > 2 * nbytes + (64 << 20):
            return shm
    except OSError:
        pass
    return fallback


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def sweep_stale_files(directories: Sequence[str] = ()) -> List[str]:
    """Delete info files left by processes that died while creating them.

    Files are deleted right after creation, so only a process killed in
    between leaves one; its name holds the owner's pid.

    Args:
        directories (Sequence[str]): Where to look. Defaults to
            :func:`info_file_dirs`.

    Returns:
        list[str]: The deleted paths.
    """
    removed = []
    for directory in directories or info_file_dirs():
        try:
            names = os.listdir(directory)
        except OSError:
            continue
        for name in names:
            if not name.startswith(FILE_PREFIX):
                continue
            try:
                pid = int(name[len(FILE_PREFIX):].split('-', 1)[0])
            except ValueError:
                continue
            if pid == os.getpid() or _pid_alive(pid):
                continue
            path = os.path.join(directory, name)
            try:
                os.unlink(path)
                removed.append(path)
            except FileNotFoundError:
                pass
    return removed


def _close_fd(fd: int) -> None:
    try:
        os.close(fd)
    except OSError:
        pass


class SharedArrays:
    """Read-only numpy arrays in memory that other processes map by pickle.

    Args:
        arrays (Sequence[np.ndarray]): Arrays to copy into shared memory.

    Attributes:
        arrays (tuple[np.ndarray]): Read-only views of the shared copies,
            same dtypes and shapes as the inputs.
        nbytes (int): Size of the shared mapping.
    """

    def __init__(self, arrays: Sequence[np.ndarray]) -> None:
        arrays = [np.ascontiguousarray(a) for a in arrays]
        layout, offset = [], 0
        for a in arrays:
            layout.append((offset, a.dtype.str, a.shape))
            offset += -(-a.nbytes // _ALIGN) * _ALIGN
        nbytes = max(offset, 1)
        directory = _pick_dir(nbytes)
        sweep_stale_files((directory, ))
        path = os.path.join(directory,
                            f'{FILE_PREFIX}{os.getpid()}-{uuid.uuid4().hex}')
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass  # swept by a process that took us for dead
            os.ftruncate(fd, nbytes)
            writer = mmap.mmap(fd, nbytes, mmap.MAP_SHARED,
                               mmap.PROT_READ | mmap.PROT_WRITE)
            try:
                for (start, _, _), a in zip(layout, arrays):
                    writer[start:start + a.nbytes] = a.reshape(-1).view(
                        np.uint8).data
            finally:
                writer.close()
        except BaseException:
            _close_fd(fd)
            raise
        # The owner maps every page up front, so pages that workers read
        # count as shared in their memory statistics, not private.
        self._setup(fd, nbytes, layout, getattr(mmap, 'MAP_POPULATE', 0))

    def _setup(self, fd: int, nbytes: int, layout, flags: int = 0) -> None:
        stat = os.fstat(fd)
        self._fd = fd
        self._identity = (stat.st_dev, stat.st_ino)
        self.nbytes = nbytes
        self._layout = layout
        # The mapping stays valid after the descriptor is closed; numpy
        # views keep it alive for as long as any of them exists.
        self._mmap = mmap.mmap(fd, nbytes, mmap.MAP_SHARED | flags,
                               mmap.PROT_READ)
        self.arrays = tuple(
            np.frombuffer(self._mmap,
                          dtype=np.dtype(dtype),
                          count=int(np.prod(shape, dtype=np.int64)),
                          offset=start).reshape(shape)
            for start, dtype, shape in layout)
        self._finalizer = weakref.finalize(self, _close_fd, fd)

    @classmethod
    def _attach(cls, pid: int, fd: int, identity: Tuple[int, int], nbytes: int,
                layout) -> 'SharedArrays':
        source = f'/proc/{pid}/fd/{fd}'
        try:
            new_fd = os.open(source, os.O_RDONLY)
        except OSError as exc:
            raise RuntimeError(
                f'SharedArrays: cannot attach to the dataset infos shared by '
                f'process {pid} ({source}: {exc.strerror}); expected that '
                'process to be alive and to hold the dataset. Pickled '
                'datasets can only be loaded while the process that pickled '
                'them holds the dataset; build the dataset with '
                'serialize_data=False to pickle it by value.') from exc
        stat = os.fstat(new_fd)
        if (stat.st_dev, stat.st_ino) != tuple(identity):
            _close_fd(new_fd)
            raise RuntimeError(
                f'SharedArrays: {source} is no longer the dataset infos '
                f'shared by process {pid} (the dataset was released); '
                'expected the process that pickled the dataset to keep it '
                'alive while workers start.')
        new = cls.__new__(cls)
        new._setup(new_fd, nbytes, layout)
        return new

    def __reduce__(self):
        if not self._finalizer.alive:
            raise RuntimeError(
                'SharedArrays: cannot pickle after release(); rebuild the '
                'dataset.')
        return (SharedArrays._attach, (os.getpid(), self._fd, self._identity,
                                       self.nbytes, self._layout))

    def release(self) -> None:
        """Close the descriptor now; existing views stay readable."""
        self._finalizer()

    def owns(self, array: np.ndarray) -> bool:
        """Whether ``array`` is one of :attr:`arrays`."""
        return any(array is a for a in self.arrays)


class SharedIndexList(abc.Sequence):
    """A list of ``int`` held as one int64 array in :class:`SharedArrays`.

    Dataset wrappers keep an index per sample as a Python list
    (``CBGSDataset.sample_indices``: 265,030 for 28,130 nuScenes-size
    infos, 9.7 MB of list and int objects, 0.8 MB pickled). A forked worker
    copies the pages of every int it reads (reading writes its reference
    count), a spawn worker receives the list. This one reads as the list
    did (``int`` items, ``len``, iteration, slices as lists, equality with
    a list) from a shared read-only array: nothing copied under fork, a
    file descriptor pickled under spawn.

    Args:
        values (Sequence[int]): The indices.
    """

    def __init__(self, values: Sequence[int]) -> None:
        self._shared = SharedArrays([np.asarray(values, dtype=np.int64)])
        (self._array, ) = self._shared.arrays

    def __len__(self) -> int:
        return len(self._array)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return self._array[index].tolist()
        return int(self._array[operator.index(index)])

    def __iter__(self) -> Iterator[int]:
        return iter(self._array.tolist())

    def __eq__(self, other) -> bool:
        if isinstance(other, (SharedIndexList, list, tuple)):
            return len(self) == len(other) and all(
                a == b for a, b in zip(self, other))
        return NotImplemented

    def __repr__(self) -> str:
        return f'SharedIndexList({len(self)} indices)'

    def __reduce__(self):
        return (SharedIndexList._from_shared, (self._shared, ))

    @classmethod
    def _from_shared(cls, shared: SharedArrays) -> 'SharedIndexList':
        new = cls.__new__(cls)
        new._shared = shared
        (new._array, ) = shared.arrays
        return new


__all__ = ['SharedArrays', 'SharedIndexList', 'shared_memory_supported',
           'sweep_stale_files']
