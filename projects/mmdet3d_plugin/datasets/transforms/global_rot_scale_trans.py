"""``GlobalRotScaleTrans`` that rotates, scales and translates the points
in one pass."""
import functools

import numpy as np
import torch

from mmdet3d.datasets.transforms import GlobalRotScaleTrans
from mmdet3d.registry import TRANSFORMS
from mmdet3d.structures.points import BasePoints

from . import point_kernels


def _stock_steps(tensor: torch.Tensor, rot_mat_T: torch.Tensor,
                 scale: float, trans: np.ndarray) -> None:
    """Stock's statements on the points' tensor (rotate with the boxes'
    matrix, ``scale``, ``translate``)."""
    tensor[:, :3] = tensor[:, :3] @ rot_mat_T
    tensor[:, :3] *= scale
    tensor[:, :3] += tensor.new_tensor(trans)


def _column_steps(tensor: torch.Tensor, rot_mat_T: torch.Tensor,
                  scale: float, trans: np.ndarray) -> None:
    """:func:`_stock_steps` in one pass over the points
    (:func:`.point_kernels.rotate_scale_translate`): each output coordinate
    in float32 as torch's product sums it (``0 + x*r0p + y*r1p + z*r2p``,
    in that order, no fused multiply-add), then the same scaling and
    translation."""
    point_kernels.rotate_scale_translate(
        tensor.numpy(), np.ascontiguousarray(rot_mat_T.numpy()),
        np.float32(scale), np.asarray(trans, dtype=np.float32))


@functools.lru_cache(maxsize=None)
def column_steps_are_exact() -> bool:
    """Whether :func:`_column_steps` gives :func:`_stock_steps`'s bits with
    this torch and numpy (checked once per process, at several sizes, on
    random points with zeros and signed zeros); where not, the points take
    stock's statements."""
    generator = torch.Generator().manual_seed(0)
    for size in (7, 1000, 300000):
        points = torch.randn(size, 5, generator=generator) * 40
        points[:size // 8, :3] = 0.0
        points[size // 8:size // 4, :3] = -0.0
        angle = float(torch.rand(1, generator=generator)) * 6 - 3
        rot = torch.tensor([[np.cos(angle), np.sin(angle), 0.0],
                            [-np.sin(angle), np.cos(angle), 0.0],
                            [0.0, 0.0, 1.0]], dtype=torch.float32)
        scale = np.float64(0.95 + angle / 30)
        trans = np.array([0.3, -0.0, angle], dtype=np.float64)
        stock, ours = points.clone(), points.clone()
        _stock_steps(stock, rot, scale, trans)
        _column_steps(ours, rot, scale, trans)
        if stock.numpy().tobytes() != ours.numpy().tobytes():
            return False
    return True


@TRANSFORMS.register_module()
class FastGlobalRotScaleTrans(GlobalRotScaleTrans):
    """mmdet3d's ``GlobalRotScaleTrans``, same arguments, same output and
    random draws (rotation, scale, translation, in stock's order).

    With boxes to rotate (training), the points are rotated by the boxes'
    rotation matrix, scaled and translated in one pass, in float32, with
    the operations of torch's (N, 3) x (3, 3) product in its order (stock:
    a product on the strided block, then two more passes over it). A check
    at first use compares this with stock's statements bit for bit; where
    they differ, stock's statements run. Without boxes, with
    ``shift_height``, off the CPU or for other than float32 points,
    stock's path is taken.

    Examples:
        >>> dict(type='FastGlobalRotScaleTrans',
        ...      rot_range=[-0.3925, 0.3925],
        ...      scale_ratio_range=[0.95, 1.05],
        ...      translation_std=[0, 0, 0])
    """

    def transform(self, input_dict: dict) -> dict:
        points = input_dict.get('points')
        boxes = input_dict.get('gt_bboxes_3d')
        if (self.shift_height or not isinstance(points, BasePoints)
                or boxes is None or len(boxes.tensor) == 0
                or points.tensor.device.type != 'cpu'
                or points.tensor.dtype != torch.float32):
            return super().transform(input_dict)
        if 'transformation_3d_flow' not in input_dict:
            input_dict['transformation_3d_flow'] = []

        noise_rotation = np.random.uniform(self.rot_range[0],
                                           self.rot_range[1])
        # The boxes rotate as in stock; the points they would rotate are
        # done below, with the same matrix.
        _, rot_mat_T = boxes.rotate(noise_rotation,
                                    points.tensor.new_empty((0, 3)))
        input_dict['pcd_rotation'] = rot_mat_T
        input_dict['pcd_rotation_angle'] = noise_rotation

        if 'pcd_scale_factor' not in input_dict:
            self._random_scale(input_dict)
        scale = input_dict['pcd_scale_factor']
        boxes.scale(scale)

        translation_std = np.array(self.translation_std, dtype=np.float32)
        trans_factor = np.random.normal(scale=translation_std, size=3).T
        steps = _column_steps if column_steps_are_exact() else _stock_steps
        steps(points.tensor, rot_mat_T, scale, trans_factor)
        input_dict['pcd_trans'] = trans_factor
        boxes.translate(trans_factor)

        input_dict['transformation_3d_flow'].extend(['R', 'S', 'T'])
        return input_dict
