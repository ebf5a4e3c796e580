"""``LoadPointsFromMultiSweeps`` that writes every sweep once into one
array."""
import functools
from typing import List

import numpy as np

from mmdet3d.datasets.transforms import LoadPointsFromMultiSweeps
from mmdet3d.registry import TRANSFORMS

from . import point_kernels
from .points_io import points_like, read_float32, read_float32_reused


def _stock_move(seg: np.ndarray, lidar2sensor: np.ndarray,
                time_lag: float) -> None:
    """Stock's statements: ``seg``'s float32 x, y, z times the float64
    rotation (a float64 product, stored as float32), minus the float64
    translation (stored as float32); the time lag into column 4."""
    seg[:, :3] = seg[:, :3] @ lidar2sensor[:3, :3]
    seg[:, :3] -= lidar2sensor[:3, 3]
    seg[:, 4] = time_lag


def _kernel_move(seg: np.ndarray, lidar2sensor: np.ndarray,
                 time_lag: float) -> None:
    """:func:`_stock_move` in one pass (:func:`.point_kernels.move_sweep`
    in place, nothing removed)."""
    point_kernels.move_sweep(seg, np.float32(0), lidar2sensor,
                             np.float32(time_lag), seg)


@functools.lru_cache(maxsize=None)
def column_move_is_exact() -> bool:
    """Whether :func:`.point_kernels.move_sweep` gives
    :func:`_stock_move`'s bits with this numpy (checked once per process
    on random points, zeros and signed zeros included); where not, the
    sweeps take stock's statements."""
    rng = np.random.default_rng(0)
    points = (rng.standard_normal((4096, 5)) * 40).astype(np.float32)
    points[:64, :3] = 0.0
    points[64:128, :3] = -0.0
    for shift in (rng.standard_normal(3), np.zeros(3)):
        lidar2sensor = np.eye(4)
        lidar2sensor[:3, :3] = np.linalg.qr(rng.standard_normal((3, 3)))[0]
        lidar2sensor[:3, 3] = shift
        stock, ours = points.copy(), points.copy()
        _stock_move(stock, lidar2sensor, 0.05)
        _kernel_move(ours, lidar2sensor, 0.05)
        if stock.tobytes() != ours.tobytes():
            return False
    return True


@TRANSFORMS.register_module()
class FastLoadPointsFromMultiSweeps(LoadPointsFromMultiSweeps):
    """mmdet3d's ``LoadPointsFromMultiSweeps``, same arguments, same points
    and the same random draws.

    The sweeps are chosen as stock chooses them (the same
    ``np.random.choice`` call), each file is read once into a buffer the
    worker reuses (no fresh pages per sample), and one pass per sweep
    (:func:`.point_kernels.move_sweep`) writes the points that
    ``remove_close`` keeps straight into one preallocated array, moved
    into the key frame with stock's arithmetic (float32 points times the
    float64 ``lidar2sensor`` rotation, summed as numpy's matmul loop sums
    it, minus its translation, cast back to float32), with their time
    lag. A check at first use compares that pass with stock's statements
    bit for bit; where they differ, stock's statements run. No points
    object per sweep, no ``cat``, no column copy when ``use_dim`` keeps
    every column in order.

    Examples:
        >>> dict(type='FastLoadPointsFromMultiSweeps', sweeps_num=9,
        ...      use_dim=[0, 1, 2, 3, 4], pad_empty_sweeps=True,
        ...      remove_close=True)
    """

    def _load_points(self, pts_filename: str) -> np.ndarray:
        points = None
        if self.backend_args is None:
            points = read_float32(pts_filename)
        if points is None:
            # Stock's reader returns a read-only view; stock copies it.
            points = np.copy(super()._load_points(pts_filename))
        return points

    @staticmethod
    def _not_close(points: np.ndarray, radius: float = 1.0) -> np.ndarray:
        """Stock's ``_remove_close`` test, as a mask."""
        x_filt = np.abs(points[:, 0]) < radius
        y_filt = np.abs(points[:, 1]) < radius
        return np.logical_not(np.logical_and(x_filt, y_filt))

    def _choices(self, results: dict) -> np.ndarray:
        num = len(results['lidar_sweeps'])
        if num <= self.sweeps_num:
            return np.arange(num)
        if self.test_mode:
            return np.arange(self.sweeps_num)
        return np.random.choice(num, self.sweeps_num, replace=False)

    def transform(self, results: dict) -> dict:
        points = results['points']
        points.tensor[:, 4] = 0
        key = points.tensor.numpy()
        ts = results['timestamp']
        exact = column_move_is_exact()
        # (array, kept-rows mask or None, sweep info or None) per part.
        parts: List[tuple] = [(key, None, None)]
        if 'lidar_sweeps' not in results:
            if self.pad_empty_sweeps:
                keep = self._not_close(key) if self.remove_close else None
                parts += [(key, keep, None)] * self.sweeps_num
        else:
            for slot, idx in enumerate(self._choices(results)):
                sweep = results['lidar_sweeps'][idx]
                path = sweep['lidar_points']['lidar_path']
                # Read into a reused buffer (copied into ``out`` below).
                raw = None if self.backend_args is not None else \
                    read_float32_reused(path, slot)
                if raw is None:
                    raw = self._load_points(path)
                raw = raw.reshape(-1, self.load_dim)
                keep = None
                if self.remove_close and not exact:
                    keep = self._not_close(raw)
                parts.append((raw, keep, sweep))

        radius = np.float32(1.0 if self.remove_close else 0.0)
        sizes = []
        for array, keep, sweep in parts:
            if sweep is not None and exact:
                size = point_kernels.count_not_close(array, radius) \
                    if self.remove_close else len(array)
            else:
                size = len(array) if keep is None else \
                    int(np.count_nonzero(keep))
            sizes.append(size)
        dim = key.shape[1]
        for array, _, _ in parts:
            if array.shape[1] != dim:
                raise ValueError(
                    f'{type(self).__name__}: sweeps have {array.shape[1]} '
                    f'values per point (load_dim) but the key frame has '
                    f'{dim}; set load_dim to the key frame\'s loaded '
                    'dimensions.')
        out = np.empty((sum(sizes), dim), dtype=np.float32)
        start = 0
        for (array, keep, sweep), size in zip(parts, sizes):
            seg = out[start:start + size]
            start += size
            if sweep is not None and exact:
                point_kernels.move_sweep(
                    array, radius,
                    np.array(sweep['lidar_points']['lidar2sensor']),
                    np.float32(ts - sweep['timestamp']), seg)
                continue
            if keep is None:
                seg[...] = array
            else:
                np.compress(keep, array, axis=0, out=seg)
            if sweep is not None:
                _stock_move(seg,
                            np.array(sweep['lidar_points']['lidar2sensor']),
                            ts - sweep['timestamp'])

        # Stock ends with ``points.cat(...)[:, use_dim]``; the empty
        # selection gives that result's class, points_dim and attributes.
        template = points[:0][:, self.use_dim]
        if list(self.use_dim) != list(range(dim)):
            out = np.ascontiguousarray(out[:, self.use_dim])
        results['points'] = points_like(template, out)
        return results
