"""The box heads of shipped and upstream configs, built with mmdet3d's
registries, for the box-convention tests and benchmarks: random weights,
random features, each head's own 1.x decoder, and the boxes compared
under the box map."""
import copy
import math
from typing import Dict

import numpy as np
import torch
from mmengine.registry import init_default_scope
from torch import nn


def build_head(head_cfg: dict, train_cfg=None, test_cfg=None):
    """A head from its config dict, with ``train_cfg`` / ``test_cfg``
    as its detector passes them."""
    from mmdet3d.registry import MODELS
    from mmengine.config import ConfigDict
    init_default_scope('mmdet3d')
    head_cfg = copy.deepcopy(dict(head_cfg))
    head_cfg.update(train_cfg=train_cfg, test_cfg=ConfigDict(test_cfg or {}))
    head = MODELS.build(head_cfg)
    head.eval()
    return head


def randomize(module: torch.nn.Module, seed: int) -> None:
    """Every parameter and BatchNorm statistic drawn anew: weights
    ``N(0, 1 / fan_in)``, biases and running means ``N(0, 0.1)``, scales
    and running variances about 1 (a model of some other training, its
    outputs of order 1)."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, tensor in module.state_dict().items():
            if not tensor.is_floating_point():
                continue
            values = torch.randn(tensor.shape, generator=gen)
            if tensor.dim() >= 2:
                fan_in = tensor[0].numel()
                values = values / math.sqrt(fan_in)
            elif name.endswith(('running_var', 'weight')):
                values = 1 + 0.1 * values.abs()
            else:
                values = 0.1 * values
            tensor.copy_(values)


def converted_copy(module: torch.nn.Module, convert) -> torch.nn.Module:
    """A copy of ``module`` whose state dict went through ``convert``
    (a function that changes a state dict in place)."""
    state = dict(module.state_dict())
    convert(state)
    other = copy.deepcopy(module)
    other.load_state_dict(state)
    return other


def lidar_metas(batch: int):
    from mmdet3d.structures import LiDARInstance3DBoxes
    return [dict(box_type_3d=LiDARInstance3DBoxes) for _ in range(batch)]


def yaw_gap(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``|a - b|`` of yaws, modulo 2π."""
    d = torch.remainder(a - b, 2 * math.pi)
    return torch.minimum(d, 2 * math.pi - d)


def box_gaps(new: torch.Tensor, mapped: torch.Tensor) -> Dict[str, float]:
    """The largest difference between two sets of boxes, row by row:
    every column but the yaw, and the yaw modulo 2π."""
    assert new.shape == mapped.shape, (new.shape, mapped.shape)
    if not len(new):
        return {'columns': 0.0, 'yaw': 0.0}
    columns = [i for i in range(new.shape[1]) if i != 6]
    scale = mapped[:, columns].abs().clamp(min=1.0)
    return {
        'columns': float(((new[:, columns] - mapped[:, columns]).abs() /
                          scale).max()),
        'yaw': float(yaw_gap(new[:, 6], mapped[:, 6]).max()),
    }


def numpy_boxes(instances) -> np.ndarray:
    return instances.bboxes_3d.tensor.detach().numpy()


EMBED_DIMS, CODE_SIZE, LAYERS = 256, 10, 6


class RegBranches(nn.Module):
    """DETR3D's ``reg_branches``: names and shapes of mmdet3d v1.4.0
    ``projects/DETR3D/detr3d/detr3d_head.py`` lines 79-101
    (``DETR3DHead._init_layers``: ``num_reg_fcs=2`` Linear + ReLU pairs of
    ``embed_dims=256``, a last ``Linear(256, code_size=10)``, one branch
    per decoder layer (6, ``configs/detr3d_r101_gridmask.py``), cloned
    with ``with_box_refine=True``, the same module six times without)."""

    def __init__(self, with_box_refine: bool):
        super().__init__()
        branch = nn.Sequential(
            nn.Linear(EMBED_DIMS, EMBED_DIMS), nn.ReLU(),
            nn.Linear(EMBED_DIMS, EMBED_DIMS), nn.ReLU(),
            nn.Linear(EMBED_DIMS, CODE_SIZE))
        if with_box_refine:
            self.reg_branches = nn.ModuleList(
                [copy.deepcopy(branch) for _ in range(LAYERS)])
        else:
            self.reg_branches = nn.ModuleList([branch for _ in range(LAYERS)])

    def forward(self, queries):
        return [branch(queries[i]) for i, branch in
                enumerate(self.reg_branches)]


def detr3d_decode(code: torch.Tensor) -> torch.Tensor:
    """What DETR3D's ``denormalize_bbox`` (mmdet3d v1.4.0
    ``projects/DETR3D/detr3d/util.py`` lines 38-76; DETR3D is not
    installed) makes of a code (cx, cy, size0, size1, cz, h, sin, cos,
    vx, vy): the box (cx, cy, cz, exp size0, exp size1, exp h,
    atan2(sin, cos), vx, vy). (The centre's denormalisation by the
    reference points and the point cloud range uses rows 0, 1 and 4
    only, which the map keeps.)"""
    return torch.cat([
        code[..., [0, 1, 4]], code[..., [2, 3, 5]].exp(),
        torch.atan2(code[..., 6:7], code[..., 7:8]), code[..., 8:10]
    ], dim=-1)
