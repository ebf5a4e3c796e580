"""Predicted LiDAR boxes to the nuScenes devkit's global-frame boxes, with
numpy.

mmdet3d's ``NuScenesMetric`` builds a devkit ``Box`` (and pyquaternion
rotations) per predicted box on rank 0: ``output_to_nusc_box`` then
``lidar_nusc_box_to_global`` then the attribute rules of
``_format_lidar_bbox``, about 550 µs a box. :func:`lidar_to_global` does the
same arithmetic for all boxes of a sample at once, on the rank that predicted
them: the two frame rotations come from pyquaternion once per sample (so they
are the stock metric's own), the boxes are rotated with matrix products and
quaternion products. The boxes are the stock metric's boxes, in the same
order, with the same attribute names, equal to about 1e-15.

A sample's boxes are kept as :class:`NuscBoxes`, compact arrays that
``SafeNuScenesMetric`` gathers to rank 0 instead of box objects.
"""
from dataclasses import dataclass
from typing import Dict, Iterator, NamedTuple, Sequence

import numpy as np
from nuscenes.eval.detection.constants import ATTRIBUTE_NAMES
from pyquaternion import Quaternion

#: Attribute names by index, as the compact arrays store them; index
#: ``NO_ATTRIBUTE`` is the empty name.
ATTRIBUTES = tuple(ATTRIBUTE_NAMES)
NO_ATTRIBUTE = -1
#: Columns of :attr:`NuscBoxes.values`.
TRANSLATION = slice(0, 3)
SIZE = slice(3, 6)
ROTATION = slice(6, 10)
VELOCITY = slice(10, 12)
SCORE = 12
NUM_VALUES = 13

# Attribute rules of NuScenesMetric._format_lidar_bbox (speed > 0.2 m/s).
_MOVING_SPEED = 0.2
_VEHICLES = ('car', 'construction_vehicle', 'bus', 'truck', 'trailer')
_CYCLES = ('bicycle', 'motorcycle')


@dataclass
class NuscBoxes:
    """One sample's boxes in the global frame, as the result file has them.

    A plain class, not a tuple: mmengine's ``_to_cpu`` rebuilds tuples
    (losing a named tuple's type) in the results it gathers.

    Attributes:
        values (np.ndarray): ``(n, 13)`` float64: translation (3), size
            (w, l, h), rotation (w, x, y, z), velocity (vx, vy), score.
        labels (np.ndarray): ``(n,)`` int16, index into the dataset's
            classes (the result file's ``detection_name``).
        attrs (np.ndarray): ``(n,)`` int8, index into :data:`ATTRIBUTES`,
            ``NO_ATTRIBUTE`` for ``''``.
    """
    values: np.ndarray
    labels: np.ndarray
    attrs: np.ndarray

    @classmethod
    def empty(cls) -> 'NuscBoxes':
        return cls(np.zeros((0, NUM_VALUES)), np.zeros(0, np.int16),
                   np.zeros(0, np.int8))

    def __len__(self) -> int:
        return len(self.labels)

    def __iter__(self) -> Iterator[np.ndarray]:
        return iter((self.values, self.labels, self.attrs))


class SampleFrame(NamedTuple):
    """LiDAR-to-ego and ego-to-global rotations and translations of one
    sample, as the stock metric derives them from its info."""
    lidar2ego_rot: np.ndarray
    lidar2ego_quat: np.ndarray
    lidar2ego_trans: np.ndarray
    ego2global_rot: np.ndarray
    ego2global_quat: np.ndarray
    ego2global_trans: np.ndarray

    @classmethod
    def from_matrices(cls, lidar2ego, ego2global) -> 'SampleFrame':
        """Args:
            lidar2ego (array-like): 4x4 ``info['lidar_points']['lidar2ego']``.
            ego2global (array-like): 4x4 ``info['ego2global']``.
        """
        lidar2ego = np.array(lidar2ego)
        ego2global = np.array(ego2global)
        # What lidar_nusc_box_to_global builds for every box.
        q_l2e = Quaternion(matrix=lidar2ego, rtol=1e-05, atol=1e-07)
        q_e2g = Quaternion(matrix=ego2global, rtol=1e-05, atol=1e-07)
        return cls(q_l2e.rotation_matrix, q_l2e.q.copy(), lidar2ego[:3, 3],
                   q_e2g.rotation_matrix, q_e2g.q.copy(), ego2global[:3, 3])


def attribute_table(classes: Sequence[str],
                    default_attribute: Dict[str, str]) -> np.ndarray:
    """``(len(classes), 2)`` attribute indices: still, moving.

    The rules of ``NuScenesMetric._format_lidar_bbox``; a class without a
    default attribute raises ``KeyError`` as the stock metric does.
    """
    table = np.full((len(classes), 2), NO_ATTRIBUTE, np.int8)
    for c, name in enumerate(classes):
        if name in _VEHICLES:
            moving = 'vehicle.moving'
        elif name in _CYCLES:
            moving = 'cycle.with_rider'
        else:
            moving = default_attribute[name]
        if name == 'pedestrian':
            still = 'pedestrian.standing'
        elif name == 'bus':
            still = 'vehicle.stopped'
        else:
            still = default_attribute[name]
        table[c] = [_attr_index(still), _attr_index(moving)]
    return table


def _attr_index(name: str) -> int:
    return NO_ATTRIBUTE if name == '' else ATTRIBUTES.index(name)


def _quat_mul(q: np.ndarray, r: np.ndarray) -> np.ndarray:
    """Hamilton product of one quaternion ``q`` with each row of ``r``."""
    w, x, y, z = q
    rw, rx, ry, rz = r[:, 0], r[:, 1], r[:, 2], r[:, 3]
    return np.stack([
        w * rw - x * rx - y * ry - z * rz,
        x * rw + w * rx - z * ry + y * rz,
        y * rw + z * rx + w * ry - x * rz,
        z * rw - y * rx + x * ry + w * rz,
    ], axis=1)


def lidar_to_global(center: np.ndarray, dims: np.ndarray, yaw: np.ndarray,
                    velocity: np.ndarray, scores: np.ndarray,
                    labels: np.ndarray, frame: SampleFrame,
                    class_ranges: np.ndarray,
                    attributes: np.ndarray) -> NuscBoxes:
    """The stock metric's conversion of one sample's LiDAR boxes.

    Args:
        center (np.ndarray): ``(n, 3)`` gravity centers (LiDAR frame).
        dims (np.ndarray): ``(n, 3)`` mmdet3d dims (x_size, y_size,
            z_size).
        yaw (np.ndarray): ``(n,)`` yaw in the LiDAR frame.
        velocity (np.ndarray): ``(n, 2)`` velocity in the LiDAR frame.
        scores (np.ndarray): ``(n,)`` scores.
        labels (np.ndarray): ``(n,)`` class indices.
        frame (SampleFrame): The sample's transforms.
        class_ranges (np.ndarray): Evaluation range per class index; boxes
            farther from the ego vehicle (in its frame, xy) are dropped.
        attributes (np.ndarray): :func:`attribute_table` of the classes.

    Returns:
        NuscBoxes: The kept boxes in the global frame, in their order.
    """
    n = len(labels)
    center = np.asarray(center, np.float64).reshape(n, 3)
    # LiDAR (x_size, y_size, z_size) -> devkit (w, l, h), as float32 values.
    size = np.asarray(dims, np.float64).reshape(n, 3)[:, [1, 0, 2]]
    half = np.asarray(yaw, np.float64).reshape(n) / 2.0
    quat = np.zeros((n, 4))
    quat[:, 0] = np.cos(half)
    quat[:, 3] = np.sin(half)
    vel = np.zeros((n, 3))
    vel[:, :2] = np.asarray(velocity, np.float64).reshape(n, 2)
    labels = np.asarray(labels).reshape(n).astype(np.int64)

    # LiDAR -> ego, range filter in the ego frame, ego -> global.
    center = center @ frame.lidar2ego_rot.T + frame.lidar2ego_trans
    keep = np.sqrt(center[:, 0]**2 + center[:, 1]**2) <= class_ranges[labels]
    center, quat, vel = center[keep], quat[keep], vel[keep]
    size, labels = size[keep], labels[keep]
    quat = _quat_mul(frame.lidar2ego_quat, quat)
    vel = vel @ frame.lidar2ego_rot.T
    center = center @ frame.ego2global_rot.T + frame.ego2global_trans
    quat = _quat_mul(frame.ego2global_quat, quat)
    vel = vel @ frame.ego2global_rot.T

    values = np.empty((len(labels), NUM_VALUES))
    values[:, TRANSLATION] = center
    values[:, SIZE] = size
    values[:, ROTATION] = quat
    values[:, VELOCITY] = vel[:, :2]
    values[:, SCORE] = np.asarray(scores, np.float64).reshape(n)[keep]
    moving = np.sqrt(vel[:, 0]**2 + vel[:, 1]**2) > _MOVING_SPEED
    attrs = attributes[labels, moving.astype(np.int64)]
    return NuscBoxes(values, labels.astype(np.int16), attrs)
