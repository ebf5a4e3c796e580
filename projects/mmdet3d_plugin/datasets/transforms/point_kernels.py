"""One-pass loops over the points of a sample (numba, compiled once and
cached on disk by numba: ``cache=True``; ``NUMBA_CACHE_DIR`` moves the
cache where the package folder is read-only).

Each replaces several numpy passes (a temporary per operation, a mask,
then a compress) with one loop that reads every point once. The float32
arithmetic is written in the order of the stock statement it replaces,
and numba, like numpy, neither contracts products into fused
multiply-adds nor reorders float operations (no ``fastmath``), so the
bits are the same; the transforms check the arithmetic ones at first use
and the tests compare every transform with stock.
"""
import numba
import numpy as np

_JIT = dict(cache=True, nogil=True, error_model='numpy')


@numba.njit(**_JIT)
def boxes_keep_mask(points, owner, low, inv_cell, normal_vec, d, keep):
    """Which points lie in no box, as ``box_np_ops.points_in_rbbox``'s
    kernel decides it, testing only the boxes near each point.

    Args:
        points (np.ndarray): (N, C) float32, x, y, z first.
        owner (np.ndarray): (X, Y) int grid of BEV cells: -1 no box near,
            k only box k near, -2 several (every box is tested).
        low (np.ndarray): (2,) float32 corner of cell (0, 0).
        inv_cell (np.float32): 1 / the cell side.
        normal_vec (np.ndarray): (M, 6, 3) face normals of the boxes.
        d (np.ndarray): (M, 6) face offsets.
        keep (np.ndarray): (N,) bool, written: True outside every box.

    Returns:
        int: The number of points kept.
    """
    size_x, size_y = owner.shape
    kept = 0
    for i in range(points.shape[0]):
        # The cell as numpy computes it in ``_near_boxes``: float32
        # offset times the float32 inverse, clipped, truncated.
        cx = (points[i, 0] - low[0]) * inv_cell
        cy = (points[i, 1] - low[1]) * inv_cell
        cx = min(max(cx, np.float32(0)), np.float32(size_x - 1))
        cy = min(max(cy, np.float32(0)), np.float32(size_y - 1))
        box = owner[int(cx), int(cy)]
        inside = False
        if box != -1:
            first = 0
            last = d.shape[0]
            if box >= 0:
                first = box
                last = box + 1
            for j in range(first, last):
                inside = True
                for k in range(6):
                    # The kernel's expression, in its order.
                    sign = (points[i, 0] * normal_vec[j, k, 0] +
                            points[i, 1] * normal_vec[j, k, 1] +
                            points[i, 2] * normal_vec[j, k, 2] + d[j, k])
                    if sign >= 0:
                        inside = False
                        break
                if inside:
                    break
        keep[i] = not inside
        kept += not inside
    return kept


@numba.njit(**_JIT)
def compress_rows(points, keep, out):
    """``np.compress(keep, points, axis=0, out=out)`` for a C-contiguous
    float32 (N, C) array (``out`` has exactly the kept rows)."""
    row = 0
    columns = points.shape[1]
    for i in range(points.shape[0]):
        if keep[i]:
            for c in range(columns):
                out[row, c] = points[i, c]
            row += 1


@numba.njit(**_JIT)
def range_keep_mask(points, low, high, keep):
    """``PointsRangeFilter``'s mask: each of x, y, z strictly between the
    float32 bounds (``in_range_3d``); returns the number kept."""
    kept = 0
    for i in range(points.shape[0]):
        inside = (points[i, 0] > low[0] and points[i, 0] < high[0]
                  and points[i, 1] > low[1] and points[i, 1] < high[1]
                  and points[i, 2] > low[2] and points[i, 2] < high[2])
        keep[i] = inside
        kept += inside
    return kept


@numba.njit(**_JIT)
def rotate_scale_translate(points, rot, scale, trans):
    """In place on float32 ``points[:, :3]``: ``xyz @ rot``, as torch's
    product sums each output (``0 + x*r0p + y*r1p + z*r2p``, in that
    order), then ``* scale`` and ``+ trans[p]``, each rounded to
    float32."""
    zero = np.float32(0.0)  # the product's sum starts at +0
    for i in range(points.shape[0]):
        x = points[i, 0]
        y = points[i, 1]
        z = points[i, 2]
        for p in range(3):
            value = x * rot[0, p] + zero
            value = value + y * rot[1, p]
            value = value + z * rot[2, p]
            points[i, p] = value * scale + trans[p]


@numba.njit(**_JIT)
def count_not_close(points, radius):
    """How many points ``LoadPointsFromMultiSweeps._remove_close`` keeps:
    those not within ``radius`` of the sensor in both x and y."""
    kept = 0
    for i in range(points.shape[0]):
        kept += not (abs(points[i, 0]) < radius and
                     abs(points[i, 1]) < radius)
    return kept


@numba.njit(**_JIT)
def move_sweep(points, radius, lidar2sensor, time_lag, out):
    """One sweep into the key frame, as ``LoadPointsFromMultiSweeps``
    writes it: the points ``_remove_close`` keeps (all where ``radius`` is
    0), x, y, z times the float64 rotation (summed as numpy's matmul loop
    sums it: ``0 + x*r0p + y*r1p + z*r2p``), rounded to float32, minus the
    float64 translation, rounded again; the other columns copied and
    column 4 set to ``time_lag``. ``out`` has exactly the kept rows."""
    columns = points.shape[1]
    row = 0
    for i in range(points.shape[0]):
        if radius > 0 and abs(points[i, 0]) < radius and \
                abs(points[i, 1]) < radius:
            continue
        x = np.float64(points[i, 0])
        y = np.float64(points[i, 1])
        z = np.float64(points[i, 2])
        for p in range(3):
            total = x * lidar2sensor[0, p] + 0.0
            total = total + y * lidar2sensor[1, p]
            total = total + z * lidar2sensor[2, p]
            out[row, p] = np.float32(
                np.float64(np.float32(total)) - lidar2sensor[p, 3])
        for c in range(3, columns):
            out[row, c] = points[i, c]
        if columns > 4:
            out[row, 4] = time_lag
        row += 1
