"""``PointShuffle`` with stock's permutation and one row gather."""
import torch

from mmdet3d.datasets.transforms import PointShuffle
from mmdet3d.registry import TRANSFORMS


@TRANSFORMS.register_module()
class FastPointShuffle(PointShuffle):
    """mmdet3d's ``PointShuffle``: the same ``torch.randperm`` draw (so the
    same order and torch RNG state), the rows gathered by ``index_select``
    instead of advanced indexing: the same values, several times faster.
    The permutation itself (torch's sequential Fisher-Yates draw) and the
    random reads of the gather are what remain.

    Examples:
        >>> dict(type='FastPointShuffle')
    """

    def transform(self, input_dict: dict) -> dict:
        points = input_dict['points']
        tensor = points.tensor
        idx = torch.randperm(len(points), device=tensor.device)
        points.tensor = tensor.index_select(0, idx)
        idx = idx.numpy()
        for key in ('pts_instance_mask', 'pts_semantic_mask'):
            mask = input_dict.get(key, None)
            if mask is not None:
                input_dict[key] = mask[idx]
        return input_dict
