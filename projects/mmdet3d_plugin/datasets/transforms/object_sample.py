"""``ObjectSample`` that finds the covered points in one cached loop and
writes the sampled and the kept points once, into the new array."""
from typing import Optional

import numpy as np

from mmdet3d.datasets.transforms import ObjectSample
from mmdet3d.registry import TRANSFORMS
from mmdet3d.structures.points import BasePoints

from . import point_kernels
from .points_io import points_like, scratch
from .box_geometry import outside_boxes


def _after_rows(front: int, points: np.ndarray,
                boxes: np.ndarray) -> np.ndarray:
    """A new float32 array of ``front`` rows left for the caller, followed
    by the rows of ``points`` (N, C) outside every box of ``boxes``, in
    their order."""
    keep = scratch('object_sample_keep', len(points), dtype=bool)
    kept = outside_boxes(points, boxes, keep)
    out = np.empty((front + kept, points.shape[1]), dtype=np.float32)
    point_kernels.compress_rows(points, keep, out[front:])
    return out


@TRANSFORMS.register_module()
class FastObjectSample(ObjectSample):
    """mmdet3d's ``ObjectSample``, same arguments, same output and random
    draws.

    A ``db_sampler`` without a ``type`` is a :class:`FastDataBaseSampler`
    (stock: ``DataBaseSampler``; the two sample alike). The points inside
    the sampled boxes are found by :func:`.box_geometry.outside_boxes`
    (exact: stock's face tests, on the points near a box only), then the
    sampled objects' files are read straight into the new points' array,
    followed by the kept points (stock loads each object, indexes,
    clones, concatenates and clones again).
    ``sample_2d=True`` takes mmdet3d's own path.

    Examples:
        >>> dict(type='FastObjectSample', db_sampler=db_sampler)
    """

    def __init__(self, db_sampler: dict, sample_2d: bool = False,
                 use_ground_plane: bool = False) -> None:
        if 'type' not in db_sampler.keys():
            db_sampler['type'] = 'FastDataBaseSampler'
        super().__init__(db_sampler, sample_2d=sample_2d,
                         use_ground_plane=use_ground_plane)

    @staticmethod
    def remove_points_in_boxes(points: BasePoints,
                               boxes: np.ndarray) -> BasePoints:
        return points_like(points,
                           _after_rows(0, points.tensor.numpy(), boxes))

    def _paste(self, points: BasePoints, sampled: dict,
               rows: list) -> Optional[BasePoints]:
        """Stock's ``points.cat([sampled_points, kept])`` written once: the
        sampled objects' files read straight into the new array, then
        the points outside the sampled boxes; None where a file changed
        since its size was read."""
        array = points.tensor.numpy()
        dim = self.db_sampler.points_loader.load_dim
        if array.shape[1] != dim:
            return None  # stock's ``cat`` raises; let it
        count = sum(rows)
        out = _after_rows(count, array, sampled['gt_bboxes_3d'])
        if not self.db_sampler.read_points_into(sampled['infos'], rows,
                                                out[:count]):
            return None
        # The sampled points' class is the loader's (points_dim = dim, no
        # attribute dims); the result is of the scene's class.
        return points_like(type(points), out, dim, None)

    def transform(self, input_dict: dict) -> dict:
        if self.disabled or self.sample_2d or \
                input_dict['points'].tensor.device.type != 'cpu':
            return super().transform(input_dict)
        gt_bboxes_3d = input_dict['gt_bboxes_3d']
        gt_labels_3d = input_dict['gt_labels_3d']
        ground_plane = None
        if self.use_ground_plane:
            ground_plane = input_dict.get('plane', None)
            if ground_plane is None:
                raise ValueError(
                    f'{type(self).__name__}: use_ground_plane=True but the '
                    "sample has no 'plane'; load the planes or set "
                    'use_ground_plane=False.')
        points = input_dict['points']
        pasted = None
        if ground_plane is None:
            sampled = self.db_sampler.sample_objects(gt_bboxes_3d.numpy(),
                                                     gt_labels_3d)
            if sampled is not None:
                rows = self.db_sampler.point_rows(sampled['infos'])
                if rows is not None:
                    pasted = self._paste(points, sampled, rows)
                if pasted is None:
                    # Files of another kind: the sampler's own reading.
                    sampled['points'] = self.db_sampler.load_points(
                        sampled['infos'])
        else:
            sampled = self.db_sampler.sample_all(
                gt_bboxes_3d.numpy(), gt_labels_3d, img=None,
                ground_plane=ground_plane)
        if sampled is not None:
            sampled_boxes = sampled['gt_bboxes_3d']
            gt_labels_3d = np.concatenate(
                [gt_labels_3d, sampled['gt_labels_3d']], axis=0)
            gt_bboxes_3d = gt_bboxes_3d.new_box(
                np.concatenate([gt_bboxes_3d.numpy(), sampled_boxes]))
            if pasted is None:
                sampled_points = sampled['points']
                out = _after_rows(len(sampled_points), points.tensor.numpy(),
                                  sampled_boxes)
                out[:len(sampled_points)] = sampled_points.tensor.numpy()
                pasted = points_like(type(points), out,
                                     sampled_points.points_dim,
                                     sampled_points.attribute_dims)
            points = pasted
        input_dict['gt_bboxes_3d'] = gt_bboxes_3d
        input_dict['gt_labels_3d'] = gt_labels_3d.astype(np.int64)
        input_dict['points'] = points
        return input_dict
