"""Exact versions of the two numba tests of GT-database sampling.

mmdet3d's ``box_np_ops.points_in_rbbox`` (which points lie in which
rotated box) and ``data_augment_utils.box_collision_test`` (which BEV
boxes overlap) are numba kernels compiled by every fresh worker (seconds
before its first sample; mmdet3d does not cache them), and the first one
tests every point against every box. These functions give the same
booleans: the collision test in numpy, the point test in one loop of
:mod:`.point_kernels` (compiled once, cached on disk):

- the same float32 expressions, evaluated in the same order (numba keeps
  float32 operands in float32 and contracts nothing into FMAs, like
  numpy), so each comparison comes out the same;
- only where the answer can be True: points in grid cells that a box's
  footprint (plus one cell) touches, tested against that box alone
  where it is the only one near, box pairs whose axis-aligned extents
  overlap. Elsewhere the kernels answer False as well: a point outside
  every box by a cell (0.5 m) fails a face test by far more than float32
  rounding, and the kernel itself skips pairs whose extents do not
  overlap.

The box corners and face planes come from mmdet3d's own numpy functions.
"""
import numpy as np

from mmdet3d.structures.ops import box_np_ops

from . import point_kernels

#: Corner indices of the six faces, in ``corner_to_surfaces_3d``'s order.
_FACES = np.array([[0, 1, 2, 3], [7, 6, 5, 4], [0, 3, 7, 4], [1, 5, 6, 2],
                   [0, 4, 5, 1], [3, 2, 6, 7]])
#: Side of the grid cells that select the candidate points, in metres.
CELL = 0.5


def corner_to_surfaces_3d(corners: np.ndarray) -> np.ndarray:
    """``box_np_ops.corner_to_surfaces_3d`` (a numba kernel) in numpy: the
    same values in the same memory layout (a (6, 4, N, 3) array seen as
    (N, 6, 4, 3)), so ``surface_equ_3d`` reduces them the same way."""
    surfaces = np.empty((6, 4) + corners.shape[::2], dtype=corners.dtype)
    for face, vertices in enumerate(_FACES):
        for vertex, corner in enumerate(vertices):
            surfaces[face, vertex] = corners[:, corner]
    return surfaces.transpose([2, 0, 1, 3])


def _owner_grid(corners: np.ndarray):
    """The BEV cells near each box: an (X, Y) grid holding -1 where no
    box's footprint, grown by one cell, touches the cell, k where box k
    alone does, -2 where several do; and the float32 corner of cell
    (0, 0)."""
    box_low = corners[:, :, :2].min(axis=1)
    box_high = corners[:, :, :2].max(axis=1)
    low = box_low.min(axis=0).astype(np.float64) - 2 * CELL
    high = box_high.max(axis=0).astype(np.float64) + 2 * CELL
    shape = np.ceil((high - low) / CELL).astype(np.int64) + 1
    # Cells 0 and shape - 1 stay empty: they take every point outside.
    owner = np.full(shape, -1,
                    dtype=np.int16 if len(corners) < 2**15 else np.int64)
    first = np.floor((box_low - low) / CELL).astype(np.int64) - 1
    last = np.floor((box_high - low) / CELL).astype(np.int64) + 1
    for box, ((x0, y0), (x1, y1)) in enumerate(zip(first, last)):
        region = owner[x0:x1 + 1, y0:y1 + 1]
        region[...] = np.where(region == -1, box, -2)
    return owner, low.astype(np.float32)


def outside_boxes(points: np.ndarray, rbbox: np.ndarray,
                  keep: np.ndarray) -> int:
    """Write into ``keep`` whether each point lies in none of the boxes
    (``~box_np_ops.points_in_rbbox(points, rbbox).any(-1)``); returns how
    many do.

    Args:
        points (np.ndarray): (N, 3+) points; the first three columns are
            x, y, z (float32 in the pipelines).
        rbbox (np.ndarray): (M, 7+) LiDAR boxes (bottom centre, size, yaw).
        keep (np.ndarray): (N,) bool, written.

    Returns:
        int: The number of points outside every box.
    """
    if len(points) == 0 or len(rbbox) == 0:
        keep[...] = True
        return len(points)
    corners = box_np_ops.center_to_corner_box3d(
        rbbox[:, :3], rbbox[:, 3:6], rbbox[:, 6], origin=(0.5, 0.5, 0),
        axis=2)
    surfaces = corner_to_surfaces_3d(corners)
    normal_vec, d = box_np_ops.surface_equ_3d(surfaces[:, :, :3, :])
    owner, low = _owner_grid(corners)
    return int(
        point_kernels.boxes_keep_mask(points, owner, low,
                                      np.float32(1 / CELL),
                                      np.ascontiguousarray(normal_vec),
                                      np.ascontiguousarray(d), keep))


def box_collision_rows(boxes: np.ndarray, rows: np.ndarray,
                       clockwise: bool = True) -> np.ndarray:
    """Rows ``rows`` of ``data_augment_utils.box_collision_test(boxes,
    boxes, clockwise)`` without numba.

    Args:
        boxes (np.ndarray): (K, 4, 2) BEV corners.
        rows (np.ndarray): Indices of the rows wanted.
        clockwise (bool): As the kernel's. Defaults to True.

    Returns:
        np.ndarray: (len(rows), K) bool collision matrix rows.
    """
    rows = np.asarray(rows, dtype=np.int64)
    ret = np.zeros((len(rows), len(boxes)), dtype=bool)
    if len(rows) == 0 or len(boxes) == 0:
        return ret
    standup = np.concatenate([boxes.min(axis=1), boxes.max(axis=1)], axis=1)
    mine = standup[rows]
    iw = (np.minimum(mine[:, None, 2], standup[None, :, 2]) -
          np.maximum(mine[:, None, 0], standup[None, :, 0]))
    ih = (np.minimum(mine[:, None, 3], standup[None, :, 3]) -
          np.maximum(mine[:, None, 1], standup[None, :, 1]))
    pair_r, pair_c = np.nonzero((iw > 0) & (ih > 0))
    if len(pair_r) == 0:
        return ret
    box, qbox = boxes[rows[pair_r]], boxes[pair_c]  # (P, 4, 2)
    following = [1, 2, 3, 0]
    # Edge k of the box (A -> B) against edge l of the other (C -> D).
    a, b = box[:, :, None, :], box[:, following, None, :]
    c, e = qbox[:, None, :, :], qbox[:, None, following, :]
    acd = ((e[..., 1] - a[..., 1]) * (c[..., 0] - a[..., 0]) >
           (c[..., 1] - a[..., 1]) * (e[..., 0] - a[..., 0]))
    bcd = ((e[..., 1] - b[..., 1]) * (c[..., 0] - b[..., 0]) >
           (c[..., 1] - b[..., 1]) * (e[..., 0] - b[..., 0]))
    abc = ((c[..., 1] - a[..., 1]) * (b[..., 0] - a[..., 0]) >
           (b[..., 1] - a[..., 1]) * (c[..., 0] - a[..., 0]))
    abd = ((e[..., 1] - a[..., 1]) * (b[..., 0] - a[..., 0]) >
           (b[..., 1] - a[..., 1]) * (e[..., 0] - a[..., 0]))
    hit = ((acd != bcd) & (abc != abd)).any(axis=(1, 2))
    hit |= _contains(box, qbox, clockwise) | _contains(qbox, box, clockwise)
    ret[pair_r, pair_c] = hit
    return ret


def _contains(outer: np.ndarray, inner: np.ndarray,
              clockwise: bool) -> np.ndarray:
    """The kernel's complete-overlap test: every corner of ``inner`` on the
    inner side of every edge of ``outer`` ((P,) bool)."""
    vec = outer - outer[:, [1, 2, 3, 0]]
    if clockwise:
        vec = -vec
    corner = outer[:, None, :, :]  # (P, 1, 4 edges, 2)
    point = inner[:, :, None, :]  # (P, 4 points, 1, 2)
    cross = vec[:, None, :, 1] * (corner[..., 0] - point[..., 0])
    cross -= vec[:, None, :, 0] * (corner[..., 1] - point[..., 1])
    return ~(cross >= 0).any(axis=(1, 2))
