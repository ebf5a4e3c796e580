"""``LoadPointsFromMultiSweeps`` that writes every sweep once into one
array."""
from typing import List

import numpy as np

from mmdet3d.datasets.transforms import LoadPointsFromMultiSweeps
from mmdet3d.registry import TRANSFORMS

from ._points import points_like, read_float32


@TRANSFORMS.register_module()
class FastLoadPointsFromMultiSweeps(LoadPointsFromMultiSweeps):
    """mmdet3d's ``LoadPointsFromMultiSweeps``, same arguments, same points
    and the same random draws.

    The sweeps are chosen as stock chooses them (the same
    ``np.random.choice`` call), each file is read once with
    ``np.fromfile``, the points that ``remove_close`` keeps are compressed
    straight into one preallocated array, and each sweep is moved into the
    key frame with stock's own numpy statements (float32 points times the
    float64 ``lidar2sensor`` rotation, minus its translation, cast back to
    float32), on an array of the same layout, so every bit agrees. No
    points object per sweep, no ``cat``, no column copy when ``use_dim``
    keeps every column in order.

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
        # (array, kept-rows mask or None, sweep info or None) per part.
        parts: List[tuple] = [(key, None, None)]
        if 'lidar_sweeps' not in results:
            if self.pad_empty_sweeps:
                keep = self._not_close(key) if self.remove_close else None
                parts += [(key, keep, None)] * self.sweeps_num
        else:
            for idx in self._choices(results):
                sweep = results['lidar_sweeps'][idx]
                raw = self._load_points(sweep['lidar_points']['lidar_path'])
                raw = raw.reshape(-1, self.load_dim)
                keep = self._not_close(raw) if self.remove_close else None
                parts.append((raw, keep, sweep))

        sizes = [len(a) if k is None else int(np.count_nonzero(k))
                 for a, k, _ in parts]
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
            if keep is None:
                seg[...] = array
            else:
                np.compress(keep, array, axis=0, out=seg)
            if sweep is None:
                continue
            # Stock's arithmetic, statement by statement.
            lidar2sensor = np.array(sweep['lidar_points']['lidar2sensor'])
            seg[:, :3] = seg[:, :3] @ lidar2sensor[:3, :3]
            seg[:, :3] -= lidar2sensor[:3, 3]
            seg[:, 4] = ts - sweep['timestamp']

        # Stock ends with ``points.cat(...)[:, use_dim]``; the empty
        # selection gives that result's class, points_dim and attributes.
        template = points[:0][:, self.use_dim]
        if list(self.use_dim) != list(range(dim)):
            out = np.ascontiguousarray(out[:, self.use_dim])
        results['points'] = points_like(template, out)
        return results
