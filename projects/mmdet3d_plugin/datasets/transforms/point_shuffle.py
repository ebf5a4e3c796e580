"""``PointShuffle`` with stock's permutation and one row gather."""
import numpy as np
import torch

from mmdet3d.datasets.transforms import PointShuffle
from mmdet3d.registry import TRANSFORMS


@TRANSFORMS.register_module()
class FastPointShuffle(PointShuffle):
    """mmdet3d's ``PointShuffle``: the same ``torch.randperm`` draw (so the
    same order and torch RNG state), the rows gathered as whole records
    (``np.take`` of the rows seen as bytes; ``index_select`` for a
    non-contiguous tensor) instead of advanced indexing: the same values,
    several times faster.

    Examples:
        >>> dict(type='FastPointShuffle')
    """

    def transform(self, input_dict: dict) -> dict:
        points = input_dict['points']
        tensor = points.tensor
        idx = torch.randperm(len(points), device=tensor.device)
        if tensor.device.type == 'cpu' and tensor.is_contiguous() and \
                tensor.dim() == 2:
            array = tensor.numpy()
            rows = array.view(np.dtype((np.void, array.strides[0])))
            shuffled = np.take(rows.ravel(), idx.numpy())
            points.tensor = torch.from_numpy(
                shuffled.view(array.dtype).reshape(array.shape))
        else:
            points.tensor = tensor.index_select(0, idx)
        idx = idx.numpy()
        for key in ('pts_instance_mask', 'pts_semantic_mask'):
            mask = input_dict.get(key, None)
            if mask is not None:
                input_dict[key] = mask[idx]
        return input_dict
