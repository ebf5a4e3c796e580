"""Checking data files, one by one or a sample, in a thread pool.

Stat mode (the default) asks the file system only: the file exists, is a
regular file, is not empty, and a point file's size is a multiple of
``load_dim`` float32 values (a ``.npy`` file, which has a header, only
exists and is not empty). Read mode also reads each file: a point file
with ``numpy.fromfile`` (``numpy.load`` for ``.npy``), whose values must
make whole points and all be finite; an image must decode (OpenCV, as
mmcv's default backend; imported at the first image read). Each problem is
one short phrase: ``missing``, ``empty``, ``not a regular file``,
``size 27336 bytes is not a multiple of 20 (5 float32 per point)``,
``3 non-finite values``, ``not a decodable image``, ``unreadable:
Permission denied``.

Threads, not processes: a stat waits on the file system, and
``numpy.fromfile``, ``isfinite`` and OpenCV's decoder release the GIL,
so threads overlap the waits without pickling the list of files to
other processes (docs/data_check.md has the measurements).

Public API::

    file_problem(file: DataFile, read: bool = False) -> str
    check_files(files: Sequence[DataFile], read: bool = False,
                workers: int = 1, progress: bool = False)
        -> DataCheckReport
    sample_files(files: Sequence[DataFile], per_kind: int, seed: int = 0)
        -> List[DataFile]
"""
import os
import random
import stat
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Dict, List, Sequence, Tuple

import numpy as np
from mmengine.utils import ProgressBar

from ..fileio.point_files import size_problem
from .data_files import DataFile, in_kind_order
from .check_report import BrokenFile, DataCheckReport

#: Files one thread checks per task (and per progress-bar step).
CHUNK = 512


def _stat_problem(file: DataFile) -> str:
    try:
        info = os.stat(file.path)
    except (FileNotFoundError, NotADirectoryError):
        return 'missing'
    except OSError as exc:
        return f'unreadable: {exc.strerror or exc}'
    if not stat.S_ISREG(info.st_mode):
        return 'not a regular file'
    if info.st_size == 0:
        return 'empty'
    if file.load_dim and not file.path.endswith('.npy'):
        return size_problem(info.st_size, file.load_dim)
    return ''


def _decodes(path: str) -> bool:
    """Whether OpenCV decodes the image file."""
    # OpenCV loads only when read mode meets an image.
    import cv2
    data = np.fromfile(path, dtype=np.uint8)
    return cv2.imdecode(data, cv2.IMREAD_UNCHANGED) is not None


def _read_problem(file: DataFile) -> str:
    if file.kind == 'image' or not file.load_dim:
        return '' if _decodes(file.path) else 'not a decodable image'
    if file.path.endswith('.npy'):
        try:
            values = np.load(file.path)
        except ValueError as exc:
            return f'not a .npy array ({exc})'
    else:
        values = np.fromfile(file.path, dtype=np.float32)
    if values.size == 0 or values.size % file.load_dim:
        return (f'{values.size} values are not a whole number of points '
                f'({file.load_dim} per point)')
    bad = values.size - int(np.count_nonzero(np.isfinite(values)))
    if bad:
        return f'{bad} non-finite value' + ('s' if bad > 1 else '')
    return ''


def file_problem(file: DataFile, read: bool = False) -> str:
    """What is wrong with one file ('' if nothing).

    Args:
        file (DataFile): The file.
        read (bool): Also read it (see the module docstring). Defaults to
            False.

    Returns:
        str: One short phrase, or ''.
    """
    problem = _stat_problem(file)
    if problem or not read:
        return problem
    try:
        return _read_problem(file)
    except OSError as exc:
        return f'unreadable: {exc.strerror or exc}'


def _check_chunk(chunk: Sequence[DataFile],
                 read: bool) -> List[Tuple[DataFile, str]]:
    if read:
        found = ((file, file_problem(file, read=True)) for file in chunk)
    else:
        found = ((file, _stat_problem(file)) for file in chunk)
    return [(file, problem) for file, problem in found if problem]


def check_files(files: Sequence[DataFile],
                read: bool = False,
                workers: int = 1,
                progress: bool = False) -> DataCheckReport:
    """Check every file.

    Args:
        files (Sequence[DataFile]): What :func:`.data_files.data_files` (or
            :func:`sample_files`) returned.
        read (bool): Read each file, not only stat it. Defaults to False.
        workers (int): Threads. Defaults to 1 (this thread).
        progress (bool): Show mmengine's progress bar on stderr. Defaults
            to False.

    Returns:
        DataCheckReport: Counts per kind and the broken files, in the order
        of ``files``.

    Raises:
        ValueError: If ``workers`` is not an integer >= 1.
    """
    if isinstance(workers, bool) or not isinstance(workers, int) or \
            workers < 1:
        raise ValueError(
            f'check_files: workers must be an integer >= 1, got {workers!r}')
    files = list(files)
    counts: Dict[str, int] = {}
    for file in files:
        counts[file.kind] = counts.get(file.kind, 0) + 1
    counts = {kind: counts[kind] for kind in in_kind_order(counts)}
    chunks = [files[i:i + CHUNK] for i in range(0, len(files), CHUNK)]
    bar = ProgressBar(len(files), file=sys.stderr) \
        if progress and files else None
    start, cpu_start = time.perf_counter(), time.process_time()
    broken: List[BrokenFile] = []
    with ThreadPoolExecutor(workers) as pool:
        for chunk, found in zip(chunks, pool.map(_check_chunk, chunks,
                                                 [read] * len(chunks))):
            broken += [BrokenFile(file, problem) for file, problem in found]
            if bar is not None:
                bar.update(len(chunk))
    if bar is not None:
        sys.stderr.write('\n')
    return DataCheckReport(
        counts=counts, broken=broken, read=read, workers=workers,
        seconds=time.perf_counter() - start,
        cpu_seconds=time.process_time() - cpu_start)


def sample_files(files: Sequence[DataFile], per_kind: int,
                 seed: int = 0) -> List[DataFile]:
    """A deterministic sample of at most ``per_kind`` files of each kind.

    The same files and seed give the same sample; the files keep the
    order of ``files``.

    Args:
        files (Sequence[DataFile]): The files.
        per_kind (int): Files to keep per kind (all of a kind with fewer).
        seed (int): Seed of the draw. Defaults to 0.

    Returns:
        list[DataFile]: The sample.

    Raises:
        ValueError: If ``per_kind`` is not an integer >= 1.
    """
    if isinstance(per_kind, bool) or not isinstance(per_kind, int) or \
            per_kind < 1:
        raise ValueError(
            f'sample_files: per_kind must be an integer >= 1, got '
            f'{per_kind!r}')
    rng = random.Random(seed)
    by_kind: Dict[str, List[int]] = {}
    for index, file in enumerate(files):
        by_kind.setdefault(file.kind, []).append(index)
    kept: List[int] = []
    for kind in in_kind_order(by_kind):
        indices = by_kind[kind]
        kept += indices if len(indices) <= per_kind else rng.sample(
            indices, per_kind)
    return [files[i] for i in sorted(kept)]
