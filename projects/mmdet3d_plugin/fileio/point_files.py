"""LiDAR point files (float32 values, ``load_dim`` to a point): what is
wrong with one's size, in the words the data check prints, and reading
one into an array that already exists.

Used by the data check (``data_check/check.py``), the fast loaders
(``datasets/transforms/points_io.py``) and ``create_data``'s GT database
(``create_data/gt_database.py``), so their messages and reads agree.
"""
from typing import BinaryIO

import numpy as np


def size_problem(size: int, load_dim: int) -> str:
    """What is wrong with a point file of ``size`` bytes: ``'empty'``,
    ``'size 27336 bytes is not a multiple of 20 (5 float32 per point)'``,
    or ``''`` for whole points."""
    if size == 0:
        return 'empty'
    if size % (4 * load_dim):
        return (f'size {size} bytes is not a multiple of {4 * load_dim} '
                f'({load_dim} float32 per point)')
    return ''


def fill_from(stream: BinaryIO, array: np.ndarray) -> int:
    """Fill the contiguous ``array`` with the next ``array.nbytes`` bytes
    of the unbuffered binary ``stream`` (``readinto``: no bytes object, no
    new array); returns the bytes read: fewer than ``array.nbytes`` where
    the stream ends first (a file that shrank while read)."""
    view, done = memoryview(array).cast('B'), 0
    while done < array.nbytes:
        read = stream.readinto(view[done:])
        if not read:
            break
        done += read
    return done
