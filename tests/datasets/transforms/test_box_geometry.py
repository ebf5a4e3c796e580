"""The numpy point-in-box and collision tests against mmdet3d's numba
kernels: the same booleans on random scenes, nested and touching boxes,
and points on the corners."""
import numpy as np
import pytest

from mmdet3d.datasets.transforms import data_augment_utils
from mmdet3d.structures.ops import box_np_ops
from projects.mmdet3d_plugin.datasets.transforms.box_geometry import (
    box_collision_rows, corner_to_surfaces_3d, outside_boxes)


def random_boxes(rng, n, spread=10.0):
    boxes = np.zeros((n, 9), np.float32)
    boxes[:, :2] = rng.uniform(-spread, spread, (n, 2))
    boxes[:, 2] = rng.uniform(-2, 0, n)
    boxes[:, 3:6] = rng.uniform(0.3, 6, (n, 3))
    boxes[:, 6] = rng.uniform(-4, 4, n)
    nested = n // 4  # boxes inside others: only the overlap test finds them
    if nested:
        boxes[:nested, :2] = boxes[nested:2 * nested, :2]
        boxes[:nested, 3:5] = boxes[nested:2 * nested, 3:5] * 0.3
        boxes[:nested, 6] = boxes[nested:2 * nested, 6]
    return boxes


def corners_3d(boxes):
    return box_np_ops.center_to_corner_box3d(
        boxes[:, :3], boxes[:, 3:6], boxes[:, 6], origin=(0.5, 0.5, 0),
        axis=2)


@pytest.mark.parametrize('seed', range(4))
def test_collision_rows_equal_the_kernel(seed):
    rng = np.random.default_rng(seed)
    for _ in range(25):
        n = int(rng.integers(1, 50))
        boxes = random_boxes(rng, n, spread=float(rng.uniform(3, 20)))
        bev = box_np_ops.center_to_corner_box2d(boxes[:, :2], boxes[:, 3:5],
                                                boxes[:, 6])
        expected = data_augment_utils.box_collision_test(bev, bev)
        rows = np.sort(rng.choice(n, int(rng.integers(1, n + 1)),
                                  replace=False))
        np.testing.assert_array_equal(box_collision_rows(bev, rows),
                                      expected[rows])


def test_collision_rows_empty():
    bev = np.zeros((3, 4, 2), np.float32)
    assert box_collision_rows(bev, []).shape == (0, 3)


@pytest.mark.parametrize('seed', range(4))
def test_points_in_boxes_equal_the_kernel(seed):
    rng = np.random.default_rng(seed)
    for _ in range(10):
        boxes = random_boxes(rng, int(rng.integers(1, 40)))
        points = np.concatenate([
            rng.uniform(-14, 14, (20000, 2)),
            rng.uniform(-3, 3, (20000, 1)),
            rng.uniform(0, 1, (20000, 2))
        ], axis=1).astype(np.float32)
        # Points on the corners and faces: where rounding decides.
        corners = corners_3d(boxes).reshape(-1, 3)
        points[:len(corners), :3] = corners
        faces = (corners[:-1] + corners[1:]) / 2
        points[len(corners):len(corners) + len(faces), :3] = faces
        inside = box_np_ops.points_in_rbbox(points[:, :3], boxes).any(-1)
        assert inside.any()
        keep = np.empty(len(points), bool)
        assert outside_boxes(points, boxes, keep) == (~inside).sum()
        np.testing.assert_array_equal(keep, ~inside)


def test_points_in_no_boxes():
    points = np.zeros((5, 5), np.float32)
    keep = np.zeros(5, bool)
    assert outside_boxes(points, np.zeros((0, 9), np.float32), keep) == 5
    assert keep.all()


def test_surfaces_equal_the_kernel_in_layout():
    boxes = random_boxes(np.random.default_rng(0), 7)
    corners = corners_3d(boxes)
    expected = box_np_ops.corner_to_surfaces_3d(corners)
    ours = corner_to_surfaces_3d(corners)
    np.testing.assert_array_equal(ours, expected)
    assert ours.dtype == expected.dtype
    assert ours.strides == expected.strides
