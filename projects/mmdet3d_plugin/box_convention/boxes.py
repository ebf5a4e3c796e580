"""The box map between mmdet3d's two LiDAR box conventions.

mmdet3d v1.0.0rc0 (PR #677, "coordinate system refactor") changed LiDAR
boxes from ``(x, y, z, w, l, h, θ)`` to ``(x, y, z, l, w, h, θ')`` with
``θ' = -θ - π/2``; ``x, y, z`` and the velocities ``vx, vy`` are
unchanged. :func:`to_new_boxes` is that map as mmdet3d's own
``tools/update_data_coords.py`` (v1.0.0rc0, lines 77-84; still shipped
with mmdet3d 1.4.0 as ``update_nuscenes_or_lyft_infos``) applies it to
info files: the two sizes swapped, the yaw ``-θ - π/2`` brought into
``[-π, π)`` as ``limit_period(..., period=2π)`` does. The map is its own
inverse (the yaw up to a multiple of 2π, which it wraps away).

The wrap is written here rather than called: mmdet3d 1.4's
``limit_period`` goes through its ``array_converter``, which turns a
float64 numpy array into float32 (the yaw of mmdet3d's own float64 info
pairs came back 1.2e-9 off); here numpy stays numpy and each dtype is kept.
"""
import math
from typing import TypeVar

import numpy as np

#: ``meta['box_convention']`` of a converted checkpoint.
NEW_CONVENTION = 'mmdet3d>=1.0'
#: The two conventions, as ``--from-convention`` names them.
CONVENTIONS = ('old', 'new')
#: Each convention's box, for messages.
OLD_BOX = '(x, y, z, w, l, h, θ)'
NEW_BOX = '(x, y, z, l, w, h, -θ - π/2)'
#: The mmdet3d release that changed the convention.
FIRST_NEW_RELEASE = '1.0.0rc0'

Boxes = TypeVar('Boxes')


def to_new_boxes(boxes: Boxes) -> Boxes:
    """Map boxes of one convention to the other (either way).

    Args:
        boxes (np.ndarray | torch.Tensor): ``(N, 7+)`` boxes ``(x, y, z,
            size0, size1, h, yaw, ...)``; columns after the yaw (the
            velocities) are kept.

    Returns:
        np.ndarray | torch.Tensor: A new array of the same type, shape and
        dtype: sizes 0 and 1 swapped, yaw ``-yaw - π/2`` in ``[-π, π)``.
    """
    if boxes.shape[-1] < 7:
        raise ValueError(
            f'to_new_boxes: expected boxes with at least 7 columns (x, y, z, '
            f'size, size, h, yaw), got shape {tuple(boxes.shape)}.')
    is_numpy = isinstance(boxes, np.ndarray)
    new = boxes.copy() if is_numpy else boxes.clone()
    new[..., 3] = boxes[..., 4]
    new[..., 4] = boxes[..., 3]
    yaw = -boxes[..., 6] - math.pi / 2
    floor = np.floor if is_numpy else type(boxes).floor
    period = 2 * math.pi
    # limit_period(yaw, offset=0.5, period=2π): into [-π, π).
    new[..., 6] = yaw - floor(yaw / period + 0.5) * period
    return new
