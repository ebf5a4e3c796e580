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
:data:`AABB_MARGIN`, found through a grid (:class:`BoxIndex`): once to
count each box's points, once to copy them, less the box's centre, into
one buffer, each box's rows together (:func:`load_box_points`). A sweep is
moved into the key frame's coordinates (the pipeline's ``points @ rot -
trans``) only for the rows that can fall in a box; the others are ruled
out by the same transform in float64, within the margin. The same points
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


def _read_points(path: str, what: str, token: str) -> np.ndarray:
    try:
        size = os.stat(path).st_size
    except FileNotFoundError:
        raise FileNotFoundError(
            f'create_data: {path} ({what} of sample {token}): missing; '
            'restore or regenerate it (tools/check_data.py lists every '
            'broken file).') from None
    if size == 0 or size % (4 * LOAD_DIM):
        problem = 'empty' if size == 0 else (
            f'size {size} bytes is not a multiple of {4 * LOAD_DIM} '
            f'({LOAD_DIM} float32 per point)')
        raise ValueError(
            f'create_data: {path} ({what} of sample {token}): {problem}; '
            'the file is truncated: restore or regenerate it '
            '(tools/check_data.py lists every broken file).')
    return np.fromfile(path, dtype=np.float32)


def _remove_close(points: np.ndarray, radius: float = 1.0) -> np.ndarray:
    x_filt = np.abs(points[:, 0]) < radius
    y_filt = np.abs(points[:, 1]) < radius
    not_close = np.logical_not(np.logical_and(x_filt, y_filt))
    return points[not_close]


def _box_grid(aabb: np.ndarray):
    """A 2D grid over the boxes' extents: ``([origin_x, origin_y, cell,
    1 / cell], nx, ny)`` and, per cell, the boxes whose extent touches it (CSR:
    ``cell_start``, ``cell_boxes``, each cell's boxes ascending)."""
    x0, y0 = float(aabb[:, 0].min()), float(aabb[:, 1].min())
    x1, y1 = float(aabb[:, 3].max()), float(aabb[:, 4].max())
    cell = max(GRID_CELL, (x1 - x0) / 1024, (y1 - y0) / 1024)
    nx = int((x1 - x0) / cell) + 1
    ny = int((y1 - y0) / cell) + 1
    ix0 = ((aabb[:, 0] - x0) / cell).astype(np.int64)
    ix1 = ((aabb[:, 3] - x0) / cell).astype(np.int64)
    iy0 = ((aabb[:, 1] - y0) / cell).astype(np.int64)
    iy1 = ((aabb[:, 4] - y0) / cell).astype(np.int64)
    cell_start, cell_boxes = _grid_cells(ix0, ix1, iy0, iy1, nx, ny)
    return np.array([x0, y0, cell, 1 / cell]), nx, ny, cell_start, cell_boxes


@numba.njit(cache=True)
def _grid_cells(ix0, ix1, iy0, iy1, nx, ny):
    """CSR of the boxes (ascending) touching each cell of the grid."""
    cell_start = np.zeros(nx * ny + 1, dtype=np.int64)
    for j in range(ix0.shape[0]):
        for gx in range(ix0[j], ix1[j] + 1):
            for gy in range(iy0[j], iy1[j] + 1):
                cell_start[gx * ny + gy + 1] += 1
    for c in range(nx * ny):
        cell_start[c + 1] += cell_start[c]
    fill = cell_start[:-1].copy()
    cell_boxes = np.empty(cell_start[-1], dtype=np.int64)
    for j in range(ix0.shape[0]):
        for gx in range(ix0[j], ix1[j] + 1):
            for gy in range(iy0[j], iy1[j] + 1):
                c = gx * ny + gy
                cell_boxes[fill[c]] = j
                fill[c] += 1
    return cell_start, cell_boxes


@numba.njit(cache=True)
def _box_rows(points, grid, nx, ny, cell_start, cell_boxes, aabb,
              normal_vec, d, centres, out, fill):
    """``_points_in_convex_polygon_3d_jit``'s test (same float32
    expression, same early exit) of each point against the boxes whose
    widened extent holds it (found through the grid). Without ``out``
    (``out.shape[0] == 0``): counts each box's points into ``fill``; with
    it: copies each box's points, ascending, to ``out[fill[j]]`` onwards
    (``fill[j]`` advanced), its x, y, z less the box's centre in float32
    (the converter's ``gt_points[:, :3] -= gt_boxes_3d[i, :3]``)."""
    num_points = points.shape[0]
    num_surfaces = normal_vec.shape[1]
    counting = out.shape[0] == 0
    sign = 0.0
    for i in range(num_points):
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
            inside = True
            for k in range(num_surfaces):
                sign = (
                    points[i, 0] * normal_vec[j, k, 0] +
                    points[i, 1] * normal_vec[j, k, 1] +
                    points[i, 2] * normal_vec[j, k, 2] + d[j, k])
                if sign >= 0:
                    inside = False
                    break
            if inside:
                if not counting:
                    row = fill[j]
                    out[row, 0] = points[i, 0] - centres[j, 0]
                    out[row, 1] = points[i, 1] - centres[j, 1]
                    out[row, 2] = points[i, 2] - centres[j, 2]
                    out[row, 3] = points[i, 3]
                    out[row, 4] = points[i, 4]
                fill[j] += 1


@numba.njit(cache=True)
def _sweep_candidates(raw, rot, trans, grid, nx, ny, cell_start,
                      cell_boxes, aabb, out):
    """Copies to ``out`` (their count returned), in order, the rows of a
    sweep (``raw``, sensor frame) that ``LoadPointsFromMultiSweeps`` keeps
    (``_remove_close``, radius 1) and that, moved into the key frame
    (``points @ rot - trans``, here in float64: within ~1e-6 m of the
    pipeline's float32), fall in a box's widened extent. Only these rows
    can be in a box."""
    n = 0
    for i in range(raw.shape[0]):
        px = raw[i, 0]
        py = raw[i, 1]
        if abs(px) < 1.0 and abs(py) < 1.0:
            continue
        pz = raw[i, 2]
        x = px * rot[0, 0] + py * rot[1, 0] + pz * rot[2, 0] - trans[0]
        y = px * rot[0, 1] + py * rot[1, 1] + pz * rot[2, 1] - trans[1]
        z = px * rot[0, 2] + py * rot[1, 2] + pz * rot[2, 2] - trans[2]
        fx = (x - grid[0]) * grid[3]
        fy = (y - grid[1]) * grid[3]
        if fx < 0 or fy < 0 or fx >= nx or fy >= ny:
            continue
        c = int(fx) * ny + int(fy)
        for b in range(cell_start[c], cell_start[c + 1]):
            j = cell_boxes[b]
            if x >= aabb[j, 0] and x <= aabb[j, 3] and y >= aabb[j, 1] \
                    and y <= aabb[j, 4] and z >= aabb[j, 2] and \
                    z <= aabb[j, 5]:
                for k in range(raw.shape[1]):
                    out[n, k] = raw[i, k]
                n += 1
                break
    return n


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


#: ``out`` of :func:`_box_rows` when counting.
_NO_ROWS = np.zeros((0, LOAD_DIM), dtype=np.float32)


class BoxIndex:
    """The planes ``box_np_ops.points_in_rbbox`` tests for ``boxes`` (its
    corners, surfaces and ``surface_equ_3d``), each box's extent widened
    by :data:`AABB_MARGIN`, and a grid over them."""

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
        self.centres = np.ascontiguousarray(boxes[:, :3])

    def count_in(self, parts: List[np.ndarray]) -> np.ndarray:
        """Each box's count of the rows of ``parts`` (each (N, 5)) in it."""
        counts = np.zeros(len(self.aabb), dtype=np.int64)
        for part in parts:
            self._rows(part, _NO_ROWS, counts)
        return counts

    def rows_in(self, parts: List[np.ndarray], counts: np.ndarray,
                out: np.ndarray) -> None:
        """Each box's rows of ``parts``, less its centre, into ``out``:
        box 0's ``counts[0]`` rows first, each box's in the parts' order,
        each part's ascending."""
        fill = np.zeros(len(counts), dtype=np.int64)
        fill[1:] = np.cumsum(counts)[:-1]
        for part in parts:
            self._rows(part, out, fill)

    def _rows(self, part, out, fill):
        grid, nx, ny, start, boxes = self.grid
        _box_rows(part, grid, nx, ny, start, boxes, self.aabb,
                  self.normal_vec, self.d, self.centres, out, fill)

    def sweep_candidates(self, raw: np.ndarray, lidar2sensor: np.ndarray,
                         out: np.ndarray) -> np.ndarray:
        """``raw[rows]`` for the rows of the sweep ``raw`` (N, 5) that can
        fall in a box (see :func:`_sweep_candidates`), as the first rows of
        ``out`` (at least N rows)."""
        grid, nx, ny, start, boxes = self.grid
        n = _sweep_candidates(raw, lidar2sensor[:3, :3],
                              lidar2sensor[:3, 3].copy(), grid, nx, ny,
                              start, boxes, self.aabb, out)
        return out[:n]


def load_box_points(data_info: dict,
                    index: BoxIndex) -> Tuple[np.ndarray, np.ndarray]:
    """The points the converter's pipeline gives ``create_gt_database``
    that ``points_in_rbbox`` finds in each box, less the box's centre (the
    converter's ``gt_points[:, :3] -= gt_boxes_3d[i, :3]``), as one array
    (box 0's rows first; a view of a buffer reused by the next call) and
    each box's count. The points: the key frame at time 0, then up to ten
    sweeps moved into its frame, their close points removed (no sweeps:
    ten copies of the key frame less its close points,
    ``pad_empty_sweeps``); each box's rows in that order. A sweep's
    arithmetic runs on the rows :meth:`BoxIndex.sweep_candidates` keeps,
    with the pipeline's numpy expressions (row by row the same values);
    its last step, ``[:, use_dim]`` with all five columns, changes no
    value."""
    token = data_info['token']
    points = _read_points(data_info['lidar_points']['lidar_path'],
                          'LiDAR key frame', token)
    points = points.reshape(-1, LOAD_DIM)[:, USE_DIM]
    points[:, 4] = 0
    parts = [points]
    ts = data_info['timestamp']
    sweeps = data_info.get('lidar_sweeps')
    if sweeps is None:
        parts += [_remove_close(points)] * SWEEPS_NUM
        sweeps = ()
    # More than SWEEPS_NUM sweeps: the converter draws them at random
    # (np.random.choice); infos written with max_sweeps <= 10 have not.
    if len(sweeps) > SWEEPS_NUM:
        raise ValueError(
            f'create_data: sample {token} has {len(sweeps)} sweeps; the '
            f'GT database takes {SWEEPS_NUM} (mmdet3d draws them at '
            'random); create the infos with --max-sweeps 10 or less.')
    for slot, sweep in enumerate(sweeps):
        raw = _read_points(sweep['lidar_points']['lidar_path'],
                           'LiDAR sweep', token).reshape(-1, LOAD_DIM)
        lidar2sensor = np.array(sweep['lidar_points']['lidar2sensor'])
        points_sweep = index.sweep_candidates(
            raw, lidar2sensor, _row_buffer(raw.shape[0], 1 + slot))
        # the pipeline's `points_sweep[:, :3] = points_sweep[:, :3] @ rot`
        # (numpy's product), then its `-= trans` and time in one pass
        _finish_sweep(points_sweep, points_sweep[:, :3] @ lidar2sensor[:3, :3],
                      lidar2sensor[:3, 3].copy(),
                      np.float32(ts - sweep['timestamp']))
        parts.append(points_sweep)
    counts = index.count_in(parts)
    out = _row_buffer(int(counts.sum()), 0)
    index.rows_in(parts, counts, out)
    return out, counts


#: :func:`load_box_points`' buffers, kept between samples (its output,
#: then each sweep's rows): new arrays of megabytes each sample cost more
#: in page faults than the copies into them.
_BUFFERS: List[np.ndarray] = []


def _row_buffer(rows: int, slot: int) -> np.ndarray:
    """The first ``rows`` rows of buffer ``slot`` (grown as needed)."""
    while len(_BUFFERS) <= slot:
        _BUFFERS.append(np.zeros((0, LOAD_DIM), dtype=np.float32))
    if _BUFFERS[slot].shape[0] < rows:
        _BUFFERS[slot] = np.empty(
            (max(rows, 2 * _BUFFERS[slot].shape[0]), LOAD_DIM),
            dtype=np.float32)
    return _BUFFERS[slot][:rows]


def compile_kernels() -> None:
    """Compile the numba test for the converter's dtypes (before forking
    the workers, so each does not)."""
    index = BoxIndex(np.ones((1, 9), dtype=np.float32))
    # the layouts of load_box_points' parts: a key frame, a sweep's rows
    raw = np.zeros(4 * LOAD_DIM, dtype=np.float32).reshape(-1, LOAD_DIM)
    rows = index.sweep_candidates(raw, np.eye(4), _row_buffer(4, 1))
    _finish_sweep(rows, rows[:, :3] @ np.eye(4)[:3, :3], np.zeros(3),
                  np.float32(0))
    parts = [raw[:, USE_DIM], rows, raw[np.arange(2)]]
    counts = index.count_in(parts)
    index.rows_in(parts, counts, _row_buffer(int(counts.sum()), 0))


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
        with open(osp.join(database_dir, filename), 'wb') as f:
            f.write(gt_points[start:stops[i]])
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
