"""``LoadPointsFromFile`` with one read and no extra copies."""
import numpy as np

from mmdet3d.datasets.transforms import LoadPointsFromFile
from mmdet3d.registry import TRANSFORMS
from mmdet3d.structures.points import get_points_type

from .points_io import points_like, read_float32


@TRANSFORMS.register_module()
class FastLoadPointsFromFile(LoadPointsFromFile):
    """mmdet3d's ``LoadPointsFromFile``, same arguments, same points.

    A local file is read with ``np.fromfile`` into one writable array (no
    bytes object), the columns are selected only when ``use_dim`` is not
    all of them in order, and the points object holds that array (stock
    clones it once more). ``shift_height``, ``use_color``,
    ``norm_intensity``, ``norm_elongation`` and remote storage
    (``backend_args``) take mmdet3d's own path.

    Examples:
        >>> dict(type='FastLoadPointsFromFile', coord_type='LIDAR',
        ...      load_dim=5, use_dim=5)
    """

    def _load_points(self, pts_filename: str) -> np.ndarray:
        points = None
        if self.backend_args is None:
            points = read_float32(pts_filename)
        if points is None:
            points = super()._load_points(pts_filename)
        return points

    def plain_local_files(self) -> bool:
        """Whether the points are the file's columns only (no
        ``shift_height``, ``use_color``, ``norm_intensity`` or
        ``norm_elongation``), read from local storage."""
        return self.backend_args is None and not (
            self.shift_height or self.use_color or self.norm_intensity
            or self.norm_elongation)

    def read_points(self, path: str) -> np.ndarray:
        """The (N, len(use_dim)) float32 values this transform's points
        hold, in an array of their own (contiguous, writable); for
        :meth:`plain_local_files` loaders."""
        points = self._load_points(path).reshape(-1, self.load_dim)
        if list(self.use_dim) != list(range(self.load_dim)) or \
                not points.flags.writeable:
            points = np.ascontiguousarray(points[:, self.use_dim])
        return points

    def transform(self, results: dict) -> dict:
        if (self.shift_height or self.use_color or self.norm_intensity
                or self.norm_elongation):
            return super().transform(results)
        points = self.read_points(results['lidar_points']['lidar_path'])
        results['points'] = points_like(
            get_points_type(self.coord_type), points, points.shape[-1])
        return results
