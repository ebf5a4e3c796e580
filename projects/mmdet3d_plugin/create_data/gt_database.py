"""The GT database objects of one training sample, byte-identical to
mmdet3d's ``create_gt_database.create_groundtruth_database``.

The converter builds a ``NuScenesDataset`` on the train infos and, for
each sample, parses its info (``parse_data_info``: paths, the valid-flag
filter, labels, the boxes' origin moved to the bottom centre) and runs its
loading pipeline (``LoadPointsFromFile``, ten sweeps with
``LoadPointsFromMultiSweeps(remove_close=True, pad_empty_sweeps=True)``,
``LoadAnnotations3D``), then ``box_np_ops.points_in_rbbox`` (a numba loop
over every point and every box) and writes each object's points, less the
box centre, to ``<prefix>_gt_database/<idx>_<class>_<i>.bin``.

:func:`sample_objects` does the same per sample with ``parse_data_info``'s
steps (:class:`TrainInfoParser`) and the pipeline's numpy steps written
out (same operations, same dtypes), and
evaluates the converter's plane test (``_points_in_convex_polygon_3d_jit``'s
float32 expression, on ``surface_equ_3d``'s planes) only where it can pass:
for the points in a box's axis-aligned extent widened by
:data:`AABB_MARGIN`, found through a grid (:class:`BoxIndex`): each part
of the points (key frame, sweeps) gives its (point, box) pairs as it is
read, then the pairs are grouped by box and tested box by box, each
box's points, less its centre, written to one buffer, each box's rows
together (:func:`load_box_points`). A sweep is moved into the key frame's
coordinates (the pipeline's ``points @ rot - trans``) only for the rows
that can fall in a box; the others are ruled out by the same transform in
float64, within the margin, after a cheaper screen in the sweep's own
frame (the extents moved there, :func:`_sensor_extents`). The same points
pass, in the same order: each file has the converter's bytes.

mmdet3d itself is not imported (its import is most of the tool's start-up):
``box_np_ops``' box corners and planes are its own functions read from the
wheel (:mod:`.upstream`), their one torch step, ``rotation_3d_in_axis``,
run in torch with ``array_converter``'s conversions.
"""
import os
import os.path as osp
from types import SimpleNamespace
from typing import List, Tuple

import numba
import numpy as np
import torch

from ..fileio.point_files import fill_from, size_problem
from .infos import CLASSES
from .upstream import upstream_definitions

#: Points per LiDAR row in nuScenes files and the pipeline's dimensions.
LOAD_DIM = 5
USE_DIM = [0, 1, 2, 3, 4]
SWEEPS_NUM = 10
#: Widening (m) of a box's corner extent before the exact plane test: a
#: point outside the widened extent is outside the box whatever the
#: float32 rounding of the test (~1e-5 m at 100 m).
AABB_MARGIN = 0.01
#: Side (m) of the grid cells that find a point's candidate boxes.
GRID_CELL = 1.0


class TrainInfoParser:
    """``NuScenesDataset.parse_data_info`` of the converter's dataset
    (``data_root``, ``use_valid_flag=True``, ``data_prefix=dict(pts=
    'samples/LIDAR_TOP', img='', sweeps='sweeps/LIDAR_TOP')``, LiDAR
    boxes with velocity) for what the GT database reads: the point files'
    paths and ``ann_info``'s ``gt_bboxes_3d`` (a float32 (N, 9) array, the
    origin at the bottom centre as ``LiDARInstance3DBoxes`` moves it) and
    ``gt_labels_3d``."""

    def __init__(self, data_root: str):
        self.pts_prefix = osp.join(data_root, 'samples/LIDAR_TOP')
        self.sweeps_prefix = osp.join(data_root, 'sweeps/LIDAR_TOP')
        self.metainfo = dict(classes=CLASSES)
        # Det3DDataset's label_mapping for its own classes
        self.label_mapping = {i: i for i in range(len(CLASSES))}
        self.label_mapping[-1] = -1

    def parse_data_info(self, info: dict) -> dict:
        """The parsed copy of ``info`` (changed in place, as mmdet3d's)."""
        lidar = info['lidar_points']
        lidar['lidar_path'] = osp.join(self.pts_prefix, lidar['lidar_path'])
        info['num_pts_feats'] = lidar['num_pts_feats']
        info['lidar_path'] = lidar['lidar_path']
        for sweep in info.get('lidar_sweeps', ()):
            path = sweep['lidar_points']['lidar_path']
            suffix = path.split(os.sep)[-1]
            prefix = self.pts_prefix if 'samples' in path \
                else self.sweeps_prefix
            sweep['lidar_points']['lidar_path'] = osp.join(prefix, suffix)
        info['ann_info'] = self.parse_ann_info(info)
        return info

    def parse_ann_info(self, info: dict) -> dict:
        """``gt_bboxes_3d`` (numpy) and ``gt_labels_3d`` of
        ``Det3DDataset`` / ``NuScenesDataset.parse_ann_info``."""
        instances = info['instances']
        if not instances:
            boxes = np.zeros((0, 9), dtype=np.float32)
            labels = np.zeros(0, dtype=np.int64)
        else:
            boxes = np.array([i['bbox_3d'] for i in instances]).astype(
                np.float32)
            labels = np.array([
                self.label_mapping[i['bbox_label_3d']] for i in instances
            ]).astype(np.int64)
            velocities = np.array([i['velocity'] for i in instances
                                   ]).astype(np.float32)
            mask = np.array([i['bbox_3d_isvalid'] for i in instances])
            boxes, labels, velocities = \
                boxes[mask], labels[mask], velocities[mask]
            velocities[np.isnan(velocities[:, 0])] = [0.0, 0.0]
            boxes = np.concatenate([boxes, velocities], axis=-1)
        # LiDARInstance3DBoxes(origin=(0.5, 0.5, 0.5)): float32 tensors,
        # `tensor[:, :3] += tensor[:, 3:6] * (dst - src)`
        boxes = boxes.reshape(-1, 9).copy()
        shift = np.array((0.5, 0.5, 0), dtype=np.float32) - np.array(
            (0.5, 0.5, 0.5), dtype=np.float32)
        boxes[:, :3] += boxes[:, 3:6] * shift
        return dict(gt_bboxes_3d=boxes, gt_labels_3d=labels)


def _rotation_3d_in_axis(points, angles, axis=0, return_mat=False,
                         clockwise=False):
    """mmdet3d's ``rotation_3d_in_axis`` on numpy arrays as its
    ``array_converter`` runs it: float32 tensors in, the result as the
    points' dtype."""
    out = _ROTATION_3D(
        torch.tensor(points, dtype=torch.float32),
        torch.tensor(angles, dtype=torch.float32),
        axis=axis,
        return_mat=return_mat,
        clockwise=clockwise)
    return out.numpy().astype(points.dtype)


_ROTATION_3D = upstream_definitions(
    'structures/bbox_3d/utils.py', ('rotation_3d_in_axis', ),
    undecorated=True,
    torch=torch)['rotation_3d_in_axis']
#: mmdet3d's ``box_np_ops`` functions the GT database uses.
box_np_ops = SimpleNamespace(**upstream_definitions(
    'structures/ops/box_np_ops.py',
    ('corners_nd', 'center_to_corner_box3d', 'corner_to_surfaces_3d',
     'surface_equ_3d'),
    np=np,
    numba=numba,
    rotation_3d_in_axis=_rotation_3d_in_axis))


def _read_points(path: str, what: str, token: str,
                 slot: int) -> np.ndarray:
    """The float32 rows (N, 5) of the point file ``path`` read into buffer
    ``slot`` (:func:`_row_buffer`: a view the next read into that slot
    overwrites); a missing or truncated file is an error naming it and
    the sample."""
    try:
        f = open(path, 'rb', buffering=0)
    except FileNotFoundError:
        raise FileNotFoundError(
            f'create_data: {path} ({what} of sample {token}): missing; '
            'restore or regenerate it (tools/check_data.py lists every '
            'broken file).') from None
    with f:
        size = os.fstat(f.fileno()).st_size
        problem = size_problem(size, LOAD_DIM)
        if problem:
            raise ValueError(
                f'create_data: {path} ({what} of sample {token}): '
                f'{problem}; the file is truncated: restore or regenerate '
                'it (tools/check_data.py lists every broken file).')
        rows = _row_buffer(size // (4 * LOAD_DIM), slot)
        done = fill_from(f, rows)
        if done < size:
            raise ValueError(
                f'create_data: {path} ({what} of sample {token}): '
                f'{done} of its {size} bytes read; the file shrank '
                'while read: restore or regenerate it.')
    return rows


def _remove_close(points: np.ndarray, radius: float = 1.0) -> np.ndarray:
    x_filt = np.abs(points[:, 0]) < radius
    y_filt = np.abs(points[:, 1]) < radius
    not_close = np.logical_not(np.logical_and(x_filt, y_filt))
    return points[not_close]


@numba.njit(cache=True)
def _box_grid(aabb):
    """A 2D grid over the boxes' extents ``aabb`` (x0, y0, z0, x1, y1,
    z1): ``([origin_x, origin_y, cell, 1 / cell], nx, ny)`` and, per cell,
    the boxes whose extent touches it (CSR: ``cell_start``,
    ``cell_boxes``, each cell's boxes ascending)."""
    x0, y0 = aabb[:, 0].min(), aabb[:, 1].min()
    x1, y1 = aabb[:, 3].max(), aabb[:, 4].max()
    cell = max(GRID_CELL, (x1 - x0) / 1024, (y1 - y0) / 1024)
    nx = int((x1 - x0) / cell) + 1
    ny = int((y1 - y0) / cell) + 1
    cell_start = np.zeros(nx * ny + 1, dtype=np.int64)
    for second in range(2):
        if second:
            for c in range(nx * ny):
                cell_start[c + 1] += cell_start[c]
            fill = cell_start[:-1].copy()
            cell_boxes = np.empty(cell_start[-1], dtype=np.int64)
        for j in range(aabb.shape[0]):
            for gx in range(int((aabb[j, 0] - x0) / cell),
                            int((aabb[j, 3] - x0) / cell) + 1):
                for gy in range(int((aabb[j, 1] - y0) / cell),
                                int((aabb[j, 4] - y0) / cell) + 1):
                    c = gx * ny + gy
                    if second:
                        cell_boxes[fill[c]] = j
                        fill[c] += 1
                    else:
                        cell_start[c + 1] += 1
    return np.array([x0, y0, cell, 1 / cell]), nx, ny, cell_start, \
        cell_boxes


@numba.njit(cache=True)
def _box_pairs(points, base, grid, nx, ny, cell_start, cell_boxes, aabb,
               pair_rows, pair_boxes, n):
    """Each (point, box) whose widened extent holds the point (the boxes
    found through the grid), in the points' order, appended at ``n`` to
    ``pair_rows`` (the point's row, counted from ``base``) and
    ``pair_boxes`` (the box); the new count returned. The buffers hold at
    least ``n`` + the points x the most boxes of a cell."""
    for i in range(points.shape[0]):
        x = points[i, 0]
        y = points[i, 1]
        z = points[i, 2]
        fx = (x - grid[0]) * grid[3]
        fy = (y - grid[1]) * grid[3]
        if fx < 0 or fy < 0 or fx >= nx or fy >= ny:
            continue
        c = int(fx) * ny + int(fy)
        for b in range(cell_start[c], cell_start[c + 1]):
            j = cell_boxes[b]
            if x < aabb[j, 0] or x > aabb[j, 3] or y < aabb[j, 1] or \
                    y > aabb[j, 4] or z < aabb[j, 2] or z > aabb[j, 5]:
                continue
            pair_rows[n] = base + i
            pair_boxes[n] = j
            n += 1
    return n


@numba.njit(cache=True)
def _rows_in_boxes(rows, pair_rows, pair_boxes, normal_vec, d, centres,
                   xyz, order, inside, counts, out):
    """``_points_in_convex_polygon_3d_jit``'s test of the (row of
    ``rows``, box) pairs of :func:`_box_pairs` and
    :func:`_sweep_candidates`, box by box: the pairs grouped by box (a
    stable counting sort: their rows in ``order``, x, y, z in ``xyz``), each
    box's test run over its points (``inside``: every plane's sign with
    the converter's float32 expression; a point is in the box when no sign
    is >= 0, what the converter's early exit finds), then the points in
    it, less the box's centre in float32 (the converter's ``gt_points[:,
    :3] -= gt_boxes_3d[i, :3]``), into ``out``: box 0's first, each box's
    in the pairs' order; each box's count into ``counts``. Returns the
    rows written."""
    num_boxes = counts.shape[0]
    start = np.zeros(num_boxes + 1, dtype=np.int64)
    for h in range(pair_boxes.shape[0]):
        start[pair_boxes[h] + 1] += 1
    for j in range(num_boxes):
        start[j + 1] += start[j]
    fill = start[:-1].copy()
    for h in range(pair_boxes.shape[0]):
        j = pair_boxes[h]
        p = fill[j]
        r = pair_rows[h]
        order[p] = r
        xyz[0, p] = rows[r, 0]
        xyz[1, p] = rows[r, 1]
        xyz[2, p] = rows[r, 2]
        fill[j] = p + 1
    m = 0
    for j in range(num_boxes):
        s, e = start[j], start[j + 1]
        # the six planes, as (surface, coefficient) scalars
        a0, b0, c0, d0 = normal_vec[j, 0, 0], normal_vec[j, 0, 1], \
            normal_vec[j, 0, 2], d[j, 0]
        a1, b1, c1, d1 = normal_vec[j, 1, 0], normal_vec[j, 1, 1], \
            normal_vec[j, 1, 2], d[j, 1]
        a2, b2, c2, d2 = normal_vec[j, 2, 0], normal_vec[j, 2, 1], \
            normal_vec[j, 2, 2], d[j, 2]
        a3, b3, c3, d3 = normal_vec[j, 3, 0], normal_vec[j, 3, 1], \
            normal_vec[j, 3, 2], d[j, 3]
        a4, b4, c4, d4 = normal_vec[j, 4, 0], normal_vec[j, 4, 1], \
            normal_vec[j, 4, 2], d[j, 4]
        a5, b5, c5, d5 = normal_vec[j, 5, 0], normal_vec[j, 5, 1], \
            normal_vec[j, 5, 2], d[j, 5]
        xs, ys, zs, flags = xyz[0, s:e], xyz[1, s:e], xyz[2, s:e], \
            inside[s:e]
        for i in range(e - s):
            x, y, z = xs[i], ys[i], zs[i]
            flags[i] = not (
                (x * a0 + y * b0 + z * c0 + d0 >= 0) |
                (x * a1 + y * b1 + z * c1 + d1 >= 0) |
                (x * a2 + y * b2 + z * c2 + d2 >= 0) |
                (x * a3 + y * b3 + z * c3 + d3 >= 0) |
                (x * a4 + y * b4 + z * c4 + d4 >= 0) |
                (x * a5 + y * b5 + z * c5 + d5 >= 0))
        first = m
        cx, cy, cz = centres[j, 0], centres[j, 1], centres[j, 2]
        for i in range(s, e):
            if inside[i]:
                r = order[i]
                out[m, 0] = rows[r, 0] - cx
                out[m, 1] = rows[r, 1] - cy
                out[m, 2] = rows[r, 2] - cz
                out[m, 3] = rows[r, 3]
                out[m, 4] = rows[r, 4]
                m += 1
        counts[j] = m - first
    return m


#: Rows of a sweep :func:`_sweep_candidates` screens at a time.
_CHUNK = 1024
#: Further widening (m) of the boxes' widened extents moved into a sweep's
#: sensor frame (:func:`_sweep_candidates`): covers the rounding of that
#: move (~1e-12 m) many times over.
SENSOR_MARGIN = 0.001


@numba.njit(cache=True)
def _sensor_extents(aabb, rot, trans):
    """The extents, in a sweep's sensor frame, of the key-frame extents
    ``aabb`` moved back by the sweep's ``points @ rot - trans`` (each
    box's eight corners moved, widened by :data:`SENSOR_MARGIN`): a row
    whose move falls in ``aabb[j]`` lies in extent ``j``."""
    # the inverse of rot by its cofactors
    inv = np.empty((3, 3))
    for r in range(3):
        for c in range(3):
            r1, r2 = (c + 1) % 3, (c + 2) % 3
            c1, c2 = (r + 1) % 3, (r + 2) % 3
            inv[r, c] = rot[r1, c1] * rot[r2, c2] - rot[r1, c2] * rot[r2, c1]
    det = rot[0, 0] * inv[0, 0] + rot[0, 1] * inv[1, 0] + \
        rot[0, 2] * inv[2, 0]
    inv /= det
    out = np.empty_like(aabb)
    for j in range(aabb.shape[0]):
        for k in range(3):
            out[j, k] = np.inf
            out[j, 3 + k] = -np.inf
        for corner in range(8):
            qx = aabb[j, 3 * (corner & 1)] + trans[0]
            qy = aabb[j, 1 + 3 * ((corner >> 1) & 1)] + trans[1]
            qz = aabb[j, 2 + 3 * ((corner >> 2) & 1)] + trans[2]
            for k in range(3):
                value = qx * inv[0, k] + qy * inv[1, k] + qz * inv[2, k]
                out[j, k] = min(out[j, k], value - SENSOR_MARGIN)
                out[j, 3 + k] = max(out[j, 3 + k], value + SENSOR_MARGIN)
    return out


@numba.njit(cache=True)
def _sweep_candidates(raw, rot, trans, aabb, flagged, out, base,
                      pair_rows, pair_boxes, num_pairs):
    """Copies to ``out``, in order, the rows of a sweep (``raw``, sensor
    frame) that ``LoadPointsFromMultiSweeps`` keeps (``_remove_close``,
    radius 1) and that, moved into the key frame (``points @ rot -
    trans``, here in float64: within ~1e-6 m of the pipeline's float32),
    fall in a box's widened extent ``aabb``: only these rows can be in a
    box. Each such (row, box) pair is appended at ``num_pairs`` to
    ``pair_rows`` (the row's place in ``out``, counted from ``base``) and
    ``pair_boxes``: the pairs :func:`_box_pairs` would find in the
    finished rows, or more (the margin holds either way). Returns the rows
    copied and the new count of pairs (-1 rows: the pair buffers are
    full).

    The extents are moved into the sensor frame
    (:func:`_sensor_extents`) and gridded there; in chunks of
    :data:`_CHUNK` rows, a pass without branches keeps (in ``flagged``)
    the rows in an occupied cell of that grid, as they are, then those are
    moved and tested against the key-frame extents of their cell's
    boxes."""
    extents = _sensor_extents(aabb, rot, trans)
    if not np.isfinite(extents).all():
        # a move with inf or nan: no moved row is in an extent
        return 0, num_pairs
    grid, nx, ny, cell_start, cell_boxes = _box_grid(extents)
    occupied = np.empty(nx * ny, dtype=np.bool_)
    for c in range(nx * ny):
        occupied[c] = cell_start[c + 1] > cell_start[c]
    n = 0
    num_rows = raw.shape[0]
    for begin in range(0, num_rows, _CHUNK):
        end = min(begin + _CHUNK, num_rows)
        m = 0
        for i in range(begin, end):
            px = raw[i, 0]
            py = raw[i, 1]
            fx = (px - grid[0]) * grid[3]
            fy = (py - grid[1]) * grid[3]
            keep = (fx >= 0) & (fy >= 0) & (fx < nx) & (fy < ny)
            c = int(fx if keep else 0.0) * ny + int(fy if keep else 0.0)
            flagged[m] = i
            m += keep & occupied[c]
        for t in range(m):
            i = flagged[t]
            px = raw[i, 0]
            py = raw[i, 1]
            pz = raw[i, 2]
            if abs(px) < 1.0 and abs(py) < 1.0:
                continue
            x = px * rot[0, 0] + py * rot[1, 0] + pz * rot[2, 0] - trans[0]
            y = px * rot[0, 1] + py * rot[1, 1] + pz * rot[2, 1] - trans[1]
            z = px * rot[0, 2] + py * rot[1, 2] + pz * rot[2, 2] - trans[2]
            c = int((px - grid[0]) * grid[3]) * ny + int(
                (py - grid[1]) * grid[3])
            found = False
            for b in range(cell_start[c], cell_start[c + 1]):
                j = cell_boxes[b]
                if x >= aabb[j, 0] and x <= aabb[j, 3] and \
                        y >= aabb[j, 1] and y <= aabb[j, 4] and \
                        z >= aabb[j, 2] and z <= aabb[j, 5]:
                    if num_pairs == pair_rows.shape[0]:
                        return -1, num_pairs
                    found = True
                    pair_rows[num_pairs] = base + n
                    pair_boxes[num_pairs] = j
                    num_pairs += 1
            if found:
                for k in range(raw.shape[1]):
                    out[n, k] = raw[i, k]
                n += 1
    return n, num_pairs


@numba.njit(cache=True)
def _finish_sweep(points, moved, trans, time_lag):
    """The rest of ``LoadPointsFromMultiSweeps``'s arithmetic on a sweep's
    rows, as numpy does it: the product ``moved`` (float64) stored as
    float32, ``-= trans`` computed in float64 and stored as float32, the
    time lag in column 4."""
    for i in range(points.shape[0]):
        for k in range(3):
            value = np.float32(moved[i, k])
            points[i, k] = np.float32(np.float64(value) - trans[k])
        points[i, 4] = time_lag


class BoxIndex:
    """The planes ``box_np_ops.points_in_rbbox`` tests for ``boxes`` (its
    corners, surfaces and ``surface_equ_3d``), each box's extent widened
    by :data:`AABB_MARGIN`, a grid over them, and the (point, box) pairs
    found so far (:meth:`add_points`, then :meth:`rows_by_box`)."""

    def __init__(self, boxes: np.ndarray):
        corners = box_np_ops.center_to_corner_box3d(
            boxes[:, :3], boxes[:, 3:6], boxes[:, 6], origin=(0.5, 0.5, 0),
            axis=2)
        surfaces = box_np_ops.corner_to_surfaces_3d(corners)
        self.normal_vec, self.d = box_np_ops.surface_equ_3d(
            surfaces[:, :, :3, :])
        self.aabb = np.concatenate([
            corners.min(axis=1).astype(np.float64) - AABB_MARGIN,
            corners.max(axis=1).astype(np.float64) + AABB_MARGIN
        ], axis=1)
        self.grid = _box_grid(self.aabb)
        self.most_per_cell = int(np.diff(self.grid[3]).max())
        self.centres = np.ascontiguousarray(boxes[:, :3])
        self.num_pairs = 0

    def add_points(self, rows: np.ndarray, start: int) -> None:
        """Append the (row, box) pairs of ``rows[start:]`` ((N, 5), the
        sample's rows so far) whose row is in the box's widened extent, in
        the rows' order (:func:`_box_pairs`)."""
        # a row's pairs: at most the boxes of its cell
        pair_rows, pair_boxes = _pair_buffers(
            self.num_pairs + (rows.shape[0] - start) * self.most_per_cell,
            self.num_pairs)
        grid, nx, ny, cell_start, cell_boxes = self.grid
        self.num_pairs = _box_pairs(rows[start:], start, grid, nx, ny,
                                    cell_start, cell_boxes, self.aabb,
                                    pair_rows, pair_boxes, self.num_pairs)

    def add_sweep(self, raw: np.ndarray, lidar2sensor: np.ndarray,
                  rows: np.ndarray, start: int) -> int:
        """Copy to ``rows[start:]`` the rows of the sweep ``raw`` (N, 5)
        that can fall in a box and append their (row, box) pairs (see
        :func:`_sweep_candidates`); returns how many rows."""
        rot, trans = lidar2sensor[:3, :3], lidar2sensor[:3, 3].copy()
        room = max(raw.shape[0] * self.most_per_cell, 1)
        while True:
            pair_rows, pair_boxes = _pair_buffers(self.num_pairs + room,
                                                  self.num_pairs)
            n, num_pairs = _sweep_candidates(raw, rot, trans, self.aabb,
                                             _FLAGGED, rows[start:], start,
                                             pair_rows, pair_boxes,
                                             self.num_pairs)
            if n >= 0:
                self.num_pairs = num_pairs
                return n
            # a row in more extents than a key-frame cell holds (at their
            # edges): again with more room
            room *= 2

    def rows_by_box(self, rows: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
        """The rows of the pairs added (rows of ``rows``) that pass the
        converter's test, less their box's centre, grouped by box (box 0's
        first, each box's in the order they were added; a view of a buffer
        reused by the next call) (:func:`_rows_in_boxes`), and each box's
        count; the pairs are cleared."""
        n = self.num_pairs
        pair_rows, pair_boxes = _pair_buffers(n, n)
        xyz, order, inside = _sort_buffers(n)
        counts = np.zeros(len(self.aabb), dtype=np.int64)
        out = _row_buffer(n, 0)
        m = _rows_in_boxes(rows, pair_rows[:n], pair_boxes[:n],
                           self.normal_vec, self.d, self.centres, xyz, order,
                           inside, counts, out)
        self.num_pairs = 0
        return out[:m], counts


def load_box_points(data_info: dict,
                    index: BoxIndex) -> Tuple[np.ndarray, np.ndarray]:
    """The points the converter's pipeline gives ``create_gt_database``
    that ``points_in_rbbox`` finds in each box, less the box's centre (the
    converter's ``gt_points[:, :3] -= gt_boxes_3d[i, :3]``), as one array
    (box 0's rows first; a view of a buffer reused by the next call) and
    each box's count. The points: the key frame at time 0, then up to ten
    sweeps moved into its frame, their close points removed (no sweeps:
    ten copies of the key frame less its close points,
    ``pad_empty_sweeps``); each box's rows in that order. Each part is
    screened once as it is read (:meth:`BoxIndex.add_points`,
    :meth:`BoxIndex.add_sweep`: its (row, box) pairs), the pairs
    grouped by box and tested at the end (:meth:`BoxIndex.rows_by_box`);
    the key frame and the sweeps' rows that can fall in a box, finished,
    are kept in one buffer the pairs point into. A sweep's arithmetic runs
    on the rows :meth:`BoxIndex.add_sweep` keeps (its pairs found with
    them), with the pipeline's numpy expressions (row by row the same
    values); its last step, ``[:, use_dim]`` with all five columns,
    changes no value."""
    token = data_info['token']
    # LoadPointsFromFile's `[:, use_dim]` (USE_DIM: all five columns, in
    # order) changes no value: the rows read are used as they are
    points = _read_points(data_info['lidar_points']['lidar_path'],
                          'LiDAR key frame', token, 2)
    points[:, 4] = 0
    index.add_points(points, 0)
    total = points.shape[0]
    ts = data_info['timestamp']
    sweeps = data_info.get('lidar_sweeps')
    if sweeps is None:
        kept = _remove_close(points)
        for _ in range(SWEEPS_NUM):
            rows = _row_buffer(total + kept.shape[0], 2, total)
            rows[total:] = kept
            index.add_points(rows, total)
            total = rows.shape[0]
        sweeps = ()
    # More than SWEEPS_NUM sweeps: the converter draws them at random
    # (np.random.choice); infos written with max_sweeps <= 10 have not.
    if len(sweeps) > SWEEPS_NUM:
        raise ValueError(
            f'create_data: sample {token} has {len(sweeps)} sweeps; the '
            f'GT database takes {SWEEPS_NUM} (mmdet3d draws them at '
            'random); create the infos with --max-sweeps 10 or less.')
    for sweep in sweeps:
        raw = _read_points(sweep['lidar_points']['lidar_path'],
                           'LiDAR sweep', token, 1)
        lidar2sensor = np.array(sweep['lidar_points']['lidar2sensor'])
        rows = _row_buffer(total + raw.shape[0], 2, total)
        n = index.add_sweep(raw, lidar2sensor, rows, total)
        points_sweep = rows[total:total + n]
        # the pipeline's `points_sweep[:, :3] = points_sweep[:, :3] @ rot`
        # (numpy's product), then its `-= trans` and time in one pass
        _finish_sweep(points_sweep, points_sweep[:, :3] @ lidar2sensor[:3, :3],
                      lidar2sensor[:3, 3].copy(),
                      np.float32(ts - sweep['timestamp']))
        total += n
    return index.rows_by_box(_row_buffer(total, 2, total))


#: :func:`load_box_points`' buffers, kept between samples (its output,
#: the sweep read, the sample's rows: its key frame and the sweeps' rows
#: that can fall in a box): new arrays of megabytes each sample cost more
#: in page faults than the copies into them.
_BUFFERS: List[np.ndarray] = []
#: :class:`BoxIndex`'s pairs (rows, boxes) and their grouping by box
#: (x, y, z rows, row of each, test result), kept between samples.
_PAIRS = [np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)]
_SORTED = [np.zeros((3, 0), dtype=np.float32), np.zeros(0, dtype=np.int64),
           np.zeros(0, dtype=np.bool_)]
#: The rows of a chunk :func:`_sweep_candidates` keeps for its exact test.
_FLAGGED = np.empty(_CHUNK, dtype=np.int64)


def _row_buffer(rows: int, slot: int, keep: int = 0) -> np.ndarray:
    """The first ``rows`` rows of buffer ``slot`` (grown as needed, its
    first ``keep`` rows kept)."""
    while len(_BUFFERS) <= slot:
        _BUFFERS.append(np.zeros((0, LOAD_DIM), dtype=np.float32))
    if _BUFFERS[slot].shape[0] < rows:
        grown = np.empty((max(rows, 2 * _BUFFERS[slot].shape[0]), LOAD_DIM),
                         dtype=np.float32)
        grown[:keep] = _BUFFERS[slot][:keep]
        _BUFFERS[slot] = grown
    return _BUFFERS[slot][:rows]


def _pair_buffers(rows: int, keep: int) -> Tuple[np.ndarray, np.ndarray]:
    """The pair buffers, at least ``rows`` long, their first ``keep``
    entries kept when they grow."""
    if _PAIRS[1].shape[0] < rows:
        size = max(rows, 2 * _PAIRS[1].shape[0])
        grown = [np.empty(size, dtype=np.int64),
                 np.empty(size, dtype=np.int64)]
        grown[0][:keep] = _PAIRS[0][:keep]
        grown[1][:keep] = _PAIRS[1][:keep]
        _PAIRS[:] = grown
    return _PAIRS[0], _PAIRS[1]


def _sort_buffers(rows: int) -> List[np.ndarray]:
    """The grouping buffers of :func:`_rows_in_boxes`, at least ``rows``
    long."""
    if _SORTED[1].shape[0] < rows:
        size = max(rows, 2 * _SORTED[1].shape[0])
        _SORTED[:] = [np.empty((3, size), dtype=np.float32),
                      np.empty(size, dtype=np.int64),
                      np.empty(size, dtype=np.bool_)]
    return _SORTED


def compile_kernels() -> None:
    """Compile the numba kernels for the converter's dtypes (before
    forking the workers, so each does not)."""
    index = BoxIndex(np.ones((1, 9), dtype=np.float32))
    # load_box_points' steps on four zero rows read from no file
    raw = _row_buffer(4, 2)
    raw[:] = 0
    index.add_points(raw, 0)
    rows = _row_buffer(8, 2, 4)
    n = index.add_sweep(raw.copy(), np.eye(4), rows, 4)
    _finish_sweep(rows[4:4 + n], rows[4:4 + n, :3] @ np.eye(3), np.zeros(3),
                  np.float32(0))
    index.rows_by_box(rows)


def _parse_copy(info: dict) -> dict:
    """What ``parse_data_info`` changes of an info record, copied (the
    converter's ``get_data_info`` deep-copies it all)."""
    info = dict(info)
    info['lidar_points'] = dict(info['lidar_points'])
    if 'lidar_sweeps' in info:
        info['lidar_sweeps'] = [
            dict(sweep, lidar_points=dict(sweep['lidar_points']))
            for sweep in info['lidar_sweeps']
        ]
    return info


def _write_file(path: str, rows: np.ndarray) -> None:
    """``rows``' bytes as the file ``path`` (created or truncated)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666)
    try:
        data = rows.reshape(-1).view(np.uint8)
        done = 0
        while done < data.shape[0]:
            done += os.write(fd, data[done:])
    finally:
        os.close(fd)


def sample_objects(dataset, raw_info: dict, sample_idx: int,
                   database_dir: str,
                   info_prefix: str) -> List[Tuple[str, dict]]:
    """Write the GT database files of one train sample into
    ``database_dir`` and return its ``(class, db_info)`` pairs in the
    converter's order, ``group_id`` counted from 0 within the sample (the
    caller adds the objects of the samples before it).

    Args:
        dataset (TrainInfoParser): The train infos' parser.
        raw_info (dict): The sample's v2 info record.
        sample_idx (int): Its index in the train infos.
        database_dir (str): Where the ``.bin`` files go.
        info_prefix (str): The ``<prefix>_gt_database`` of the paths.
    """
    data_info = dataset.parse_data_info(_parse_copy(raw_info))
    data_info['sample_idx'] = sample_idx
    annos = data_info['ann_info']
    gt_boxes_3d = annos['gt_bboxes_3d']
    classes = dataset.metainfo['classes']
    names = [classes[i] for i in annos['gt_labels_3d']]
    difficulty = np.zeros(gt_boxes_3d.shape[0], dtype=np.int32)
    num_obj = gt_boxes_3d.shape[0]
    if num_obj:
        gt_points, counts = load_box_points(data_info,
                                            BoxIndex(gt_boxes_3d))
        stops = np.cumsum(counts).tolist()
    objects = []
    start = 0
    for i in range(num_obj):
        filename = f'{sample_idx}_{names[i]}_{i}.bin'
        # the box's rows: the bytes of the converter's `gt_points.tofile`
        _write_file(osp.join(database_dir, filename),
                    gt_points[start:stops[i]])
        objects.append((names[i], {
            'name': names[i],
            'path': osp.join(f'{info_prefix}_gt_database', filename),
            'image_idx': sample_idx,
            'gt_idx': i,
            'box3d_lidar': gt_boxes_3d[i],
            'num_points_in_gt': stops[i] - start,
            'difficulty': difficulty[i],
            'group_id': i,
        }))
        start = stops[i]
    return objects
