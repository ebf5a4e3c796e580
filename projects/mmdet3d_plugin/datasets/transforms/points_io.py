"""Points objects around an existing tensor, without the copy that
``BasePoints.__init__`` makes (it clones whatever it is given)."""
import os
import threading
from typing import Optional, Type, Union

import numpy as np
import torch

from mmdet3d.structures.points import BasePoints

from ...fileio.point_files import fill_from


def points_like(like: Union[BasePoints, Type[BasePoints]],
                data: Union[np.ndarray, torch.Tensor],
                points_dim: Optional[int] = None,
                attribute_dims: Optional[dict] = None) -> BasePoints:
    """A points object of ``like``'s type that holds ``data`` itself.

    Equal to ``type(like)(data, points_dim, attribute_dims)`` (same type,
    dimensions, attributes, float32 contiguous tensor), less the clone.

    Args:
        like (BasePoints | type): An object (its type, ``points_dim`` and
            ``attribute_dims`` are the defaults) or a points class.
        data (np.ndarray | Tensor): float32 (N, C) array, contiguous; a
            numpy array is shared with the tensor, not copied.
        points_dim (int, optional): Defaults to ``like.points_dim``, or
            ``C`` when ``like`` is a class.
        attribute_dims (dict, optional): Defaults to
            ``like.attribute_dims`` (None for a class).

    Returns:
        BasePoints: The new object.
    """
    tensor = torch.from_numpy(data) if isinstance(data, np.ndarray) else data
    if tensor.dtype != torch.float32 or tensor.dim() != 2 or \
            not tensor.is_contiguous():
        raise ValueError(
            'points_like: expected a contiguous float32 (N, C) array, got '
            f'{tuple(tensor.shape)} {tensor.dtype} '
            f'(contiguous={tensor.is_contiguous()}); make it with '
            'np.ascontiguousarray(data, dtype=np.float32).')
    if isinstance(like, BasePoints):
        cls = type(like)
        if points_dim is None:
            points_dim = like.points_dim
        if attribute_dims is None:
            attribute_dims = like.attribute_dims
    else:
        cls = like
        if points_dim is None:
            points_dim = tensor.shape[1]
    points = cls(tensor.new_empty((0, points_dim)), points_dim=points_dim,
                 attribute_dims=attribute_dims)
    points.tensor = tensor
    return points


def read_float32(path: str) -> Optional[np.ndarray]:
    """The float32 values of a local point file (``np.fromfile``, one
    writable array, no bytes object); None where mmdet3d's own reader is
    needed (a ``.npy`` file, a remote or missing path)."""
    if path.endswith('.npy') or '://' in path:
        return None
    try:
        return np.fromfile(path, dtype=np.float32)
    except (FileNotFoundError, IsADirectoryError, PermissionError):
        return None


def read_into(path: str, array: np.ndarray) -> bool:
    """Fill the contiguous ``array`` with a local file's bytes, which must
    be exactly as many; False (``array`` then undefined) where they are not
    or the file cannot be read so."""
    if path.endswith('.npy') or '://' in path:
        return False
    try:
        stream = open(path, 'rb', buffering=0)
    except OSError:
        return False
    with stream:
        return os.fstat(stream.fileno()).st_size == array.nbytes and \
            fill_from(stream, array) == array.nbytes


#: Read buffers of :func:`read_float32_reused`, per thread and slot.
_BUFFERS = threading.local()


def read_float32_reused(path: str, slot: int) -> Optional[np.ndarray]:
    """Like :func:`read_float32`, into a buffer that this thread reuses for
    ``slot``: no fresh pages (page faults) per read. The array is valid
    until the next read into the same slot, so for values consumed at
    once (copied elsewhere) only."""
    if path.endswith('.npy') or '://' in path:
        return None
    try:
        stream = open(path, 'rb', buffering=0)
    except OSError:
        return None
    with stream:
        size = os.fstat(stream.fileno()).st_size
        if size % 4:
            return None
        buffers = getattr(_BUFFERS, 'by_slot', None)
        if buffers is None:
            buffers = _BUFFERS.by_slot = {}
        buffer = buffers.get(slot)
        if buffer is None or buffer.nbytes < size:
            buffer = buffers[slot] = np.empty(size // 4 + size // 16,
                                              dtype=np.float32)
        values = buffer[:size // 4]
        if fill_from(stream, values) < size:
            return None  # the file shrank while being read
    return values


def scratch(key: str, size: int, dtype=np.float32) -> np.ndarray:
    """A 1-d array of ``size`` values that this thread reuses for ``key``
    (its values are whatever was left there), for intermediate values
    only."""
    arrays = getattr(_BUFFERS, 'scratch', None)
    if arrays is None:
        arrays = _BUFFERS.scratch = {}
    array = arrays.get(key)
    if array is None or array.dtype != dtype or array.size < size:
        array = arrays[key] = np.empty(size + size // 4, dtype=dtype)
    return array[:size]
