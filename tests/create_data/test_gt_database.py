"""The GT database's points in boxes (``create_data.gt_database``) against
mmdet3d's own steps on cases the generated roots rarely hold: a point in
several boxes, a box with no point, a sample without sweeps (the key frame
repeated), sweeps that grow the kept buffers, points far off."""
import numpy as np
import pytest
from mmdet3d.datasets.transforms import (LoadPointsFromFile,
                                         LoadPointsFromMultiSweeps)
from mmdet3d.structures.ops import box_np_ops as mmdet3d_box_np_ops

from projects.mmdet3d_plugin.create_data import gt_database


def _pose(rng):
    """A lidar2sensor matrix: a yaw of a few degrees, a slight tilt and a
    move of a few metres, as between a sweep and its key frame."""
    yaw, tilt = rng.uniform(-0.1, 0.1), rng.uniform(-0.01, 0.01)
    c, s = np.cos(yaw), np.sin(yaw)
    rot = np.array([[c, -s, 0], [s, c, 0], [0, 0, 1]]) @ np.array(
        [[1, 0, 0], [0, np.cos(tilt), -np.sin(tilt)],
         [0, np.sin(tilt), np.cos(tilt)]])
    pose = np.eye(4)
    pose[:3, :3] = rot
    pose[:3, 3] = rng.normal(size=3) * [3, 3, 0.2]
    return pose.tolist()


def _points(rng, centres, num):
    """Rows (num, 5): half near ``centres``, half anywhere around, a few
    within 1 m of the sensor, a few 1 km away."""
    near = centres[rng.integers(len(centres), size=num // 2)] + rng.normal(
        size=(num // 2, 3)) * [1.5, 1.5, 0.8]
    around = rng.uniform(-60, 60, size=(num - num // 2, 3))
    xyz = np.concatenate([near, around])
    xyz[:20, :2] = rng.uniform(-0.99, 0.99, size=(20, 2))
    xyz[20:30, :2] *= 1000 / 60
    return np.concatenate([xyz, rng.uniform(0, 255, size=(num, 2))],
                          axis=1).astype(np.float32)


def _mmdet3d_box_points(info, boxes):
    """The converter's steps: its loading pipeline, ``points_in_rbbox``,
    each box's points less its centre."""
    results = LoadPointsFromFile(
        coord_type='LIDAR', load_dim=5, use_dim=5)(dict(info))
    results = LoadPointsFromMultiSweeps(
        sweeps_num=10, use_dim=[0, 1, 2, 3, 4], pad_empty_sweeps=True,
        remove_close=True)(results)
    points = results['points'].tensor.numpy()
    indices = mmdet3d_box_np_ops.points_in_rbbox(points, boxes)
    pieces = []
    for i in range(len(boxes)):
        gt_points = points[indices[:, i]]
        gt_points[:, :3] -= boxes[i, :3]
        pieces.append(gt_points)
    return pieces


@pytest.mark.parametrize('num_sweeps', [0, 3, 10])
def test_box_points_are_mmdet3d_pipeline_and_points_in_rbbox(
        tmp_path, num_sweeps):
    rng = np.random.default_rng(num_sweeps)
    boxes = np.concatenate([
        rng.uniform(-30, 30, size=(12, 3)),
        rng.uniform(0.5, 5, size=(12, 3)),
        rng.uniform(-np.pi, np.pi, size=(12, 1)),
        np.zeros((12, 2))
    ], axis=1).astype(np.float32)
    boxes[1] = boxes[0]  # the same box twice
    boxes[2, :3], boxes[2, 3:6] = boxes[0, :3], boxes[0, 3:6] / 2  # within
    boxes[3, :2] = 500  # far from every point
    boxes[4, :2] = 0  # round the sensor
    centres = np.delete(boxes[:, :3], 3, axis=0)
    key = tmp_path / 'key.bin'
    _points(rng, centres, 30000).tofile(key)
    sweeps = []
    for i in range(num_sweeps):
        path = tmp_path / f'sweep{i}.bin'
        # more rows than the key frame: the kept buffers grow
        _points(rng, centres, 45000 + 5000 * i).tofile(path)
        sweeps.append(dict(timestamp=1.0 - 0.05 * (i + 1), lidar_points=dict(
            lidar_path=str(path), lidar2sensor=_pose(rng))))
    info = dict(token='t', timestamp=1.0, lidar_points=dict(
        lidar_path=str(key), num_pts_feats=5))
    if sweeps:
        info['lidar_sweeps'] = sweeps
    theirs = _mmdet3d_box_points(info, boxes)
    rows, counts = gt_database.load_box_points(
        info, gt_database.BoxIndex(boxes))
    assert counts.tolist() == [len(p) for p in theirs]
    assert counts[0] > 0 and counts[1] == counts[0] and counts[2] > 0
    assert counts[3] == 0
    assert rows.tobytes() == b''.join(p.tobytes() for p in theirs)
