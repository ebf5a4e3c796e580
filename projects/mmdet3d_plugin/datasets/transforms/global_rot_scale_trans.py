"""``GlobalRotScaleTrans`` that scales and translates the rotated points
before writing them back, not in place column by column."""
import numpy as np

from mmdet3d.datasets.transforms import GlobalRotScaleTrans
from mmdet3d.registry import TRANSFORMS
from mmdet3d.structures.points import BasePoints


@TRANSFORMS.register_module()
class FastGlobalRotScaleTrans(GlobalRotScaleTrans):
    """mmdet3d's ``GlobalRotScaleTrans``, same arguments, same output and
    random draws (rotation, scale, translation, in stock's order).

    With boxes to rotate (training), the points' coordinates are rotated
    by the boxes' rotation matrix with stock's torch product, then scaled
    and translated as one contiguous block and written back once; stock
    writes the (N, 3) strided column block three times. Each step is the
    same float32 operation on the same values, so every bit agrees.
    Without boxes, or with ``shift_height``, stock's path is taken.

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
                or boxes is None or len(boxes.tensor) == 0):
            return super().transform(input_dict)
        if 'transformation_3d_flow' not in input_dict:
            input_dict['transformation_3d_flow'] = []

        noise_rotation = np.random.uniform(self.rot_range[0],
                                           self.rot_range[1])
        # The boxes rotate as in stock; the points they would rotate are
        # done below, with the same matrix.
        _, rot_mat_T = boxes.rotate(noise_rotation,
                                    points.tensor.new_empty((0, 3)))
        xyz = points.tensor[:, :3] @ rot_mat_T
        input_dict['pcd_rotation'] = rot_mat_T
        input_dict['pcd_rotation_angle'] = noise_rotation

        if 'pcd_scale_factor' not in input_dict:
            self._random_scale(input_dict)
        scale = input_dict['pcd_scale_factor']
        xyz *= scale
        boxes.scale(scale)

        translation_std = np.array(self.translation_std, dtype=np.float32)
        trans_factor = np.random.normal(scale=translation_std, size=3).T
        xyz += points.tensor.new_tensor(trans_factor)
        points.tensor[:, :3] = xyz
        input_dict['pcd_trans'] = trans_factor
        boxes.translate(trans_factor)

        input_dict['transformation_3d_flow'].extend(['R', 'S', 'T'])
        return input_dict
