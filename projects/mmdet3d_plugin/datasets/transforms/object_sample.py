"""``ObjectSample`` that removes the covered points without numba and
pastes the sampled ones in one copy."""
import numpy as np

from mmdet3d.datasets.transforms import ObjectSample
from mmdet3d.registry import TRANSFORMS
from mmdet3d.structures.points import BasePoints

from ._points import points_like
from .box_geometry import points_in_any_rbbox


@TRANSFORMS.register_module()
class FastObjectSample(ObjectSample):
    """mmdet3d's ``ObjectSample``, same arguments, same output and random
    draws.

    A ``db_sampler`` without a ``type`` is a :class:`FastDataBaseSampler`
    (stock: ``DataBaseSampler``; the two sample alike). The points inside
    the sampled boxes are found by :func:`points_in_any_rbbox` (exact,
    numpy, only the points near a box tested), and the sampled points
    followed by the kept ones are written once into the new points' array
    (stock indexes, clones, concatenates and clones again).
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
        keep = ~points_in_any_rbbox(points.coord.numpy(), boxes)
        return points_like(points,
                           np.compress(keep, points.tensor.numpy(), axis=0))

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
        sampled_dict = self.db_sampler.sample_all(
            gt_bboxes_3d.numpy(), gt_labels_3d, img=None,
            ground_plane=ground_plane)
        if sampled_dict is not None:
            sampled_boxes = sampled_dict['gt_bboxes_3d']
            sampled_points = sampled_dict['points']
            gt_labels_3d = np.concatenate(
                [gt_labels_3d, sampled_dict['gt_labels_3d']], axis=0)
            gt_bboxes_3d = gt_bboxes_3d.new_box(
                np.concatenate([gt_bboxes_3d.numpy(), sampled_boxes]))
            array = points.tensor.numpy()
            keep = ~points_in_any_rbbox(array, sampled_boxes)
            pasted = sampled_points.tensor.numpy()
            out = np.empty((len(pasted) + int(np.count_nonzero(keep)),
                            array.shape[1]), dtype=np.float32)
            out[:len(pasted)] = pasted
            np.compress(keep, array, axis=0, out=out[len(pasted):])
            # Stock: ``points.cat([sampled_points, kept])``.
            points = points_like(type(points), out, sampled_points.points_dim,
                                 sampled_points.attribute_dims)
        input_dict['gt_bboxes_3d'] = gt_bboxes_3d
        input_dict['gt_labels_3d'] = gt_labels_3d.astype(np.int64)
        input_dict['points'] = points
        return input_dict
