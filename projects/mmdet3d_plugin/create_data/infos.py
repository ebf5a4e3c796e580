"""The v2 info record of one nuScenes sample, equal to mmdet3d's converter's.

mmdet3d 1.4.0 builds an info record in three passes over the whole dataset:
``nuscenes_converter._fill_trainval_infos`` (v1 infos, with the devkit's
boxes and ``obtain_sensor2top`` per camera and sweep),
``update_infos_to_v2.update_nuscenes_infos`` (the v2 layout, opening the
devkit again per split) and, inside it, ``generate_nuscenes_camera_instances``
(each camera's 2D boxes: ``convert_utils.get_nuscenes_2d_boxes``, a
shapely intersection per annotation and camera). :class:`SampleInfoBuilder`
does the three for one sample at once, with the same arithmetic in the same
order, so the values are the same bits; what it saves is work:

- the tables are read once; a rotation matrix and its inverse are computed
  once per calibration or pose record, a velocity once per annotation
  (``NuScenes.box_velocity``), not per camera;
- the cameras' ``get_sample_data`` (whose boxes the converter throws away)
  is not called;
- what the converter computes box by box (the devkit's ``Box`` moves and
  corners, pyquaternion's products, ``view_points``) or sensor by sensor
  (``obtain_sensor2top``) is computed for all of a sample's boxes or
  sensors at once (:func:`boxes_in_sensor`, :class:`CameraPairs`,
  :meth:`SampleInfoBuilder.sensors_to_top`): each elementwise step is the
  same numpy operation (rounded the same per element) and each small
  ``np.dot`` / ``@`` a batched ``np.matmul``, which calls the same BLAS
  routine (``ddot``, ``dgemv``, ``dgemm``) on each box's operands, laid
  out the same (row- or column-major), so each value is the same bits;
  ``tests/create_data/test_upstream.py`` checks each step against the
  devkit's and pyquaternion's own on random inputs. Scalars stay scalar
  where numpy's scalar and array paths differ (a float64 scalar's
  ``** 2`` is libm's ``pow``; an array's is a square: :func:`yaw`);
- a camera's 2D box takes shapely's intersection with the image
  (``post_process_coords``'s GEOS operations, for all of a sample's boxes
  in one call each: :func:`image_extents`) only where the box is cut by
  the image's edge: one whose eight corners all project inside the image
  takes their extent (what the intersection returns for it), one whose
  corners all lie behind the camera or beyond one edge has none.

The helpers that shape the records (``get_empty_standard_data_info``,
``clear_data_info_unused_keys``, ...) and the converter's 2D-box helpers
are mmdet3d's own, read from the wheel without importing mmdet3d
(:func:`.upstream.converter_helpers`: no torch in this phase); the one
torch computation, ``points_cam2img``'s float32 projection of a box
centre, is :func:`center_to_image_batch` (the same float32 operations).
"""
import os.path as osp
import warnings
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Set, Tuple

import numpy as np
import shapely
from pyquaternion import Quaternion

from .upstream import converter_helpers

CAMERA_TYPES = ('CAM_FRONT', 'CAM_FRONT_RIGHT', 'CAM_FRONT_LEFT', 'CAM_BACK',
                'CAM_BACK_LEFT', 'CAM_BACK_RIGHT')
#: The classes of ``update_nuscenes_infos``'s METAINFO, in label order.
CLASSES = ('car', 'truck', 'trailer', 'bus', 'construction_vehicle',
           'bicycle', 'motorcycle', 'pedestrian', 'traffic_cone', 'barrier')
#: Visibilities ``generate_nuscenes_camera_instances`` keeps.
VISIBILITIES = ('', '1', '2', '3', '4')
#: The data root the converter's paths are written with: mmdet3d's updater
#: opens ``./data/nuscenes`` and keeps the sweeps' paths as the devkit
#: gives them (``./data/nuscenes/sweeps/...``).
CONVERTER_DATAROOT = './data/nuscenes'
#: Image size of ``post_process_coords`` (its default).
IMSIZE = (1600, 900)
#: A box whose projected corners all lie inside the image by more than
#: this (px) takes their extent without shapely.
_PX_MARGIN = 1e-3
#: Pose and calibration records whose terms a builder keeps (a pose is
#: met by one sample's sensors; a calibration by all).
_MAX_CACHED_RECORDS = 20000
#: ``_q_matrix``'s and ``_q_bar_matrix``'s entries: which element of
#: (w, x, y, z), and its sign.
_Q_INDEX = np.array([[0, 1, 2, 3], [1, 0, 3, 2], [2, 3, 0, 1], [3, 2, 1, 0]])
_Q_SIGN = np.array([[1., -1, -1, -1], [1, 1, -1, 1], [1, 1, 1, -1],
                    [1, -1, 1, 1]])
_Q_BAR_SIGN = np.array([[1., -1, -1, -1], [1, 1, 1, -1], [1, -1, 1, 1],
                        [1, 1, -1, 1]])
#: ``Box.corners``' corner signs (x: length, y: width, z: height).
_CORNER_SIGNS = np.array([[1, 1, 1, 1, -1, -1, -1, -1],
                          [1, -1, -1, 1, 1, -1, -1, 1],
                          [1, 1, -1, -1, 1, 1, -1, -1]])


def quaternion_matrices(q: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """pyquaternion's ``_q_matrix`` and ``_q_bar_matrix`` (N, 4, 4) of
    quaternions (N, 4) as (w, x, y, z) (sign changes only: the same
    bits), each 4 x 4 row-major as pyquaternion's (BLAS is called with
    the layout)."""
    entries = np.ascontiguousarray(q[:, _Q_INDEX])
    return entries * _Q_SIGN, entries * _Q_BAR_SIGN


def normalise_quaternions(q: np.ndarray) -> np.ndarray:
    """pyquaternion's ``_normalise`` of each row of ``q`` (N, 4): divided
    by its norm where the sum of squares (its ``np.dot(q, q)``) is not
    within 1e-14 of 1."""
    ss = np.matmul(q[:, None, :], q[:, :, None])[:, 0, 0]
    off = ~(np.abs(1.0 - ss) < 1e-14) & (ss > 0)
    if off.any():
        q = q.copy()
        q[off] = q[off] / np.sqrt(ss[off])[:, None]
    return q


def rotation_matrices(q: np.ndarray) -> np.ndarray:
    """pyquaternion's ``rotation_matrix`` (N, 3, 3) of normalised
    quaternions (N, 4): ``np.dot(_q_matrix(), _q_bar_matrix().T)[1:, 1:]``
    (row-major views of (N, 4, 4), as pyquaternion's)."""
    q_mat, q_bar = quaternion_matrices(q)
    return np.matmul(q_mat, q_bar.transpose(0, 2, 1))[:, 1:, 1:]


def yaw(q: np.ndarray) -> np.float64:
    """``Quaternion(q).yaw_pitch_roll[0]`` of a normalised quaternion (4,)
    with its numpy scalars (a float64 scalar's ``** 2`` is libm's ``pow``,
    not an array's square: the two differ in the last bit for some)."""
    return np.arctan2(2 * (q[0] * q[3] - q[1] * q[2]),
                      1 - 2 * (q[2]**2 + q[3]**2))


def boxes_in_sensor(translation: np.ndarray, rotation: np.ndarray,
                    frames: Dict[str, np.ndarray]
                    ) -> Tuple[np.ndarray, np.ndarray]:
    """``nusc.get_box`` moved into a sensor's frame as
    ``NuScenes.get_sample_data`` does (``Box.translate`` by minus the ego
    pose's translation, ``Box.rotate`` by its inverse rotation, the same
    with the sensor's calibration), for boxes ``translation`` (N, 3) and
    ``rotation`` (N, 4), each in its own frame: ``frames``' ``pose_t``,
    ``cs_t`` (N, 3), ``pose_mat``, ``cs_mat`` (N, 3, 3: the inverse
    quaternion's ``rotation_matrix``) and ``pose_q``, ``cs_q`` (N, 4: that
    quaternion, normalised by it).

    Returns:
        tuple[np.ndarray, np.ndarray]: ``box.center`` (N, 3) and
        ``box.orientation.q`` (N, 4), not normalised.
    """
    center = translation - frames['pose_t']
    center = np.matmul(frames['pose_mat'], center[:, :, None])[..., 0]
    quat = np.matmul(
        quaternion_matrices(frames['pose_q'])[0], rotation[:, :, None])
    center = center - frames['cs_t']
    center = np.matmul(frames['cs_mat'], center[:, :, None])[..., 0]
    quat = np.matmul(quaternion_matrices(frames['cs_q'])[0], quat)[..., 0]
    return center, quat


def frames_t(matrix: np.ndarray, n: int) -> np.ndarray:
    """``matrix.T`` for each of ``n`` rows of a batched ``matmul``: the
    same column-major layout as ``matrix.T``."""
    return np.repeat(matrix[None], n, axis=0).transpose(0, 2, 1)


def center_to_image_batch(centers: np.ndarray,
                          intrinsics: np.ndarray) -> np.ndarray:
    """``points_cam2img(center[None], intrinsic, with_depth=True)`` of each
    row of ``centers`` (N, 3) with its ``intrinsics`` (N, 3, 3), as the
    converter computes it (float32 tensors: ``[x, y, z, 1] @ K4.T``, each
    product and each sum rounded to float32 in the row's order, then
    ``u / w``, ``v / w``): float32 (N, 3) ``[u, v, depth]``."""
    x, y, z = centers.astype(np.float32).T
    k = intrinsics.astype(np.float32)
    zero = np.float32(0)
    out = []
    for row in range(3):
        acc = (k[:, row, 0] * x) + (k[:, row, 1] * y)
        acc = acc + (k[:, row, 2] * z)
        out.append(acc + zero)
    u, v, w = out
    with np.errstate(divide='ignore', invalid='ignore'):  # w = 0: no record
        return np.stack([u / w, v / w, w], -1)


def image_extents(corner_coords: Sequence[np.ndarray],
                  imsize: Tuple[int, int] = IMSIZE
                  ) -> List[Optional[Tuple[float, ...]]]:
    """``convert_utils.post_process_coords`` of several boxes' projected
    corners (each (K, 2)), its GEOS operations (convex hull, ``intersects``
    and ``intersection`` with the image) each called once for all: each
    box's ``(min_x, min_y, max_x, max_y)`` of the intersection, or None
    (with its warning where the intersection is not a polygon)."""
    if not corner_coords:
        return []
    counts = [len(c) for c in corner_coords]
    hulls = shapely.convex_hull(
        shapely.multipoints(
            np.concatenate(corner_coords).reshape(-1, 2),
            indices=np.repeat(np.arange(len(counts)), counts)))
    canvas = shapely.box(0, 0, imsize[0], imsize[1])
    hit = shapely.intersects(hulls, canvas)
    out: List[Optional[Tuple[float, ...]]] = [None] * len(counts)
    where = np.flatnonzero(hit)
    parts = shapely.intersection(hulls[where], canvas)
    polygon = shapely.get_type_id(parts) == shapely.GeometryType.POLYGON
    if not polygon.all():
        warnings.warn('img_intersection is not an object of Polygon.')
    coords, index = shapely.get_coordinates(
        shapely.get_exterior_ring(parts[polygon]), return_index=True)
    starts = np.searchsorted(index, np.arange(int(polygon.sum()) + 1))
    for j, i in enumerate(where[polygon]):
        ring = coords[starts[j]:starts[j + 1]]
        out[i] = (min(ring[:, 0]), min(ring[:, 1]), max(ring[:, 0]),
                  max(ring[:, 1]))
    return out


class CameraPairs:
    """Every (camera, annotation) pair of one sample at once, with
    ``get_nuscenes_2d_boxes``' arithmetic for each pair in the same order
    (see the module's docstring). Arrays are indexed camera-major
    (``camera * N + annotation``).

    Args:
        translation (np.ndarray): The annotations' centres (N, 3).
        size (np.ndarray): Their sizes, (w, l, h) (N, 3).
        rotation (np.ndarray): Their quaternions (N, 4).
        velocity (np.ndarray): Their ``box_velocity`` (N, 3).
        cameras (list[dict]): Each camera's frame (``pose_t``,
            ``pose_mat``, ``pose_q``, ``cs_t``, ``cs_mat``, ``cs_q``: see
            :func:`boxes_in_sensor`), ``intrinsic`` (3, 3) and the
            converter's ``e2g_inv``, ``c2e_inv`` (3, 3).

    Attributes:
        loc (np.ndarray): ``box.center`` in the camera frame (M, 3).
        quat (np.ndarray): ``box.orientation`` there, normalised as
            ``Box.corners`` and ``yaw_pitch_roll`` leave it (M, 4).
        corners (np.ndarray): ``box.corners()`` (M, 3, 8).
        in_front (np.ndarray): Corners with z > 0 (M, 8).
        coords (np.ndarray): ``view_points`` of all eight corners, (u, v)
            (M, 2, 8): a pair's 2D coordinates where all eight are in
            front.
        velocity (np.ndarray): ``global_velo3d @ e2g_inv.T @ c2e_inv.T``
            (M, 3).
        center_2d (np.ndarray): :func:`center_to_image_batch` of ``loc``
            (M, 3), float32.
    """

    def __init__(self, translation: np.ndarray, size: np.ndarray,
                 rotation: np.ndarray, velocity: np.ndarray,
                 cameras: List[dict]):
        n, cams = len(translation), len(cameras)

        def per_pair(key):
            return np.repeat(np.stack([c[key] for c in cameras]), n, axis=0)

        def tiled(a):
            return np.tile(a, (cams, ) + (1, ) * (a.ndim - 1))

        frames = {
            key: per_pair(key)
            for key in ('pose_t', 'pose_mat', 'pose_q', 'cs_t', 'cs_mat',
                        'cs_q')
        }
        self.loc, quat = boxes_in_sensor(
            tiled(translation), tiled(rotation), frames)
        # Box.corners (its rotation_matrix normalises the orientation)
        quat = normalise_quaternions(quat)
        rot = rotation_matrices(quat)
        size = tiled(size)
        local = np.stack([size[:, 1] / 2, size[:, 0] / 2, size[:, 2] / 2],
                         1)[:, :, None] * _CORNER_SIGNS
        self.corners = np.matmul(rot, local) + self.loc[:, :, None]
        self.in_front = self.corners[:, 2, :] > 0
        # view_points of all eight corners
        viewpad = np.zeros((cams, 4, 4))
        viewpad[:] = np.eye(4)
        viewpad[:, :3, :3] = [c['intrinsic'] for c in cameras]
        hom = np.concatenate([self.corners, np.ones((n * cams, 1, 8))], 1)
        points = np.matmul(np.repeat(viewpad, n, axis=0), hom)
        with np.errstate(divide='ignore', invalid='ignore'):  # behind
            self.coords = points[:, :2, :] / points[:, 2:3, :]
        # yaw_pitch_roll normalises again
        self.quat = normalise_quaternions(quat)
        velo = np.concatenate([velocity[:, :2], np.zeros((n, 1))], 1)
        velo = np.matmul(tiled(velo)[:, None, :],
                         per_pair('e2g_inv').transpose(0, 2, 1))
        self.velocity = np.matmul(
            velo, per_pair('c2e_inv').transpose(0, 2, 1))[:, 0]
        self.center_2d = center_to_image_batch(self.loc,
                                               per_pair('intrinsic'))


class SampleInfoBuilder:
    """Builds the v2 info records of one devkit ``NuScenes`` (see the
    module's docstring), with its caches of matrices and velocities.

    Args:
        nusc (NuScenes): The devkit's tables, read once.
        test (bool): Test version: no annotations.
        max_sweeps (int): Sweeps per key frame.
    """

    def __init__(self, nusc, test: bool, max_sweeps: int):
        self.nusc = nusc
        self.test = test
        self.max_sweeps = max_sweeps
        self.v2 = converter_helpers()
        self._terms: Dict[str, dict] = {}
        self._velocity: Dict[str, np.ndarray] = {}
        self._attr: Dict[str, int] = {}

    # -- caches (each value the same bits as the converter's computation) --
    def record_terms(self, records: Sequence[dict]) -> List[dict]:
        """What the converter computes from a pose or calibration record,
        once per record (batched for those not in the cache; see the
        module's docstring): ``rot``, ``Quaternion(rotation)
        .rotation_matrix``; ``inv``, ``np.linalg.inv`` of it; ``qinv`` and
        ``qinv_mat``, ``Quaternion(rotation).inverse`` normalised by its
        ``rotation_matrix`` (as ``Box.rotate`` leaves it) and that matrix;
        ``mat4``, ``convert_quaternion_to_matrix(rotation, translation)``.

        Raises:
            ValueError: A record's rotation is the zero quaternion.
        """
        terms = self._terms
        if len(records) == 1 and records[0]['token'] in terms:
            return [terms[records[0]['token']]]
        if len(terms) > _MAX_CACHED_RECORDS:
            terms.clear()  # a pose is met by one sample: bound the memory
        missing = list({
            rec['token']: rec
            for rec in records if rec['token'] not in terms
        }.values())
        if missing:
            q = np.array([rec['rotation'] for rec in missing], dtype=float)
            ss = np.matmul(q[:, None, :], q[:, :, None])[:, 0]
            if not (ss > 0).all():
                bad = missing[int(np.flatnonzero(~(ss[:, 0] > 0))[0])]
                raise ValueError(
                    f"create_data: record {bad['token']}: expected a "
                    f"rotation quaternion; got {bad['rotation']}; fix the "
                    'calibrated_sensor or ego_pose table.')
            rot = rotation_matrices(normalise_quaternions(q))
            inv = np.linalg.inv(rot)
            qinv = normalise_quaternions(
                np.concatenate([q[:, :1], -q[:, 1:]], 1) / ss)
            qinv_mat = rotation_matrices(qinv)
            mat4 = np.zeros((len(missing), 4, 4))
            mat4[:] = np.eye(4)
            mat4[:, :3, :3] = rot
            mat4[:, :3, 3] = [rec['translation'] for rec in missing]
            mat4 = mat4.astype(np.float32).tolist()
            for i, rec in enumerate(missing):
                terms[rec['token']] = dict(
                    rot=rot[i],
                    inv=inv[i],
                    qinv=qinv[i],
                    qinv_mat=qinv_mat[i],
                    mat4=mat4[i])
        return [terms[rec['token']] for rec in records]

    def _inverse(self, record: dict) -> np.ndarray:
        return self.record_terms([record])[0]['inv']

    def _matrix4(self, record: dict) -> list:
        return [row[:] for row in self.record_terms([record])[0]['mat4']]

    def box_velocity(self, token: str) -> np.ndarray:
        """``NuScenes.box_velocity``, once per annotation."""
        velo = self._velocity.get(token)
        if velo is None:
            velo = self._velocity[token] = self.nusc.box_velocity(token)
        return velo

    def _attr_label(self, attr_tokens: List[str]) -> int:
        """``generate_nuscenes_camera_instances``' ``attr_label``."""
        key = attr_tokens[0] if attr_tokens else ''
        label = self._attr.get(key)
        if label is None:
            name = self.nusc.get('attribute', key)['name'] if key else 'None'
            label = self._attr[key] = self.v2.nus_attributes.index(name)
        return label

    def frame(self, pose_rec: dict, cs_rec: dict) -> Dict[str, np.ndarray]:
        """A sensor's frame for :func:`boxes_in_sensor` (one row)."""
        pose, cs = self.record_terms([pose_rec, cs_rec])
        return dict(
            pose_t=np.array(pose_rec['translation']),
            pose_mat=pose['qinv_mat'],
            pose_q=pose['qinv'],
            cs_t=np.array(cs_rec['translation']),
            cs_mat=cs['qinv_mat'],
            cs_q=cs['qinv'])

    def camera_frame(self, pose_rec: dict, cs_rec: dict) -> dict:
        """A camera's entry of :class:`CameraPairs`' ``cameras``."""
        return dict(
            self.frame(pose_rec, cs_rec),
            intrinsic=np.array(cs_rec['camera_intrinsic']),
            e2g_inv=self._inverse(pose_rec),
            c2e_inv=self._inverse(cs_rec))

    # -- the converter's steps --
    def sensors_to_top(self, sd_recs: List[dict],
                       to_top: Tuple[np.ndarray, np.ndarray]) -> List[dict]:
        """``nuscenes_converter.obtain_sensor2top`` of several sensors'
        sample data records (the converter's ``data_path``; the matrices
        from the caches; ``to_top``: the key frame's terms, the same for
        each sensor, from :meth:`_top_terms`), its products batched (see
        the module's docstring), and each sensor's v2 ``lidar2sensor``
        (``update_infos_to_v2``'s, float32 lists)."""
        nusc = self.nusc
        cs_recs = [
            nusc.get('calibrated_sensor', sd['calibrated_sensor_token'])
            for sd in sd_recs
        ]
        pose_recs = [nusc.get('ego_pose', sd['ego_pose_token'])
                     for sd in sd_recs]
        n = len(sd_recs)
        if n == 0:
            return []
        l2e_r = np.stack([t['rot'] for t in self.record_terms(cs_recs)
                          ]).transpose(0, 2, 1)
        e2g_r = np.stack([t['rot'] for t in self.record_terms(pose_recs)
                          ]).transpose(0, 2, 1)
        l2e_t = np.array([cs['translation'] for cs in cs_recs])
        e2g_t = np.array([pose['translation'] for pose in pose_recs])
        inv, offset = to_top
        inv = np.repeat(inv[None], n, axis=0)
        # R = (l2e_r_s_mat.T @ e2g_r_s_mat.T) @ inv
        rot = np.matmul(np.matmul(l2e_r, e2g_r), inv)
        # T = (l2e_t_s @ e2g_r_s_mat.T + e2g_t_s) @ inv; T -= offset
        trans = np.matmul(
            np.matmul(l2e_t[:, None, :], e2g_r) + e2g_t[:, None, :],
            inv)[:, 0] - offset
        # update_infos_to_v2: lidar2sensor from R.T and T
        lidar2sensor = np.zeros((n, 4, 4))
        lidar2sensor[:] = np.eye(4)
        lidar2sensor[:, :3, :3] = rot
        lidar2sensor[:, :3, 3:4] = -1 * np.matmul(rot, trans[:, :, None])
        lidar2sensor = lidar2sensor.astype(np.float32).tolist()
        return [
            dict(
                sd_rec=sd,
                cs_record=cs,
                pose_record=pose,
                data_path=osp.join(CONVERTER_DATAROOT, sd['filename']),
                lidar2sensor=l2s)
            for sd, cs, pose, l2s in zip(sd_recs, cs_recs, pose_recs,
                                         lidar2sensor)
        ]

    @staticmethod
    def _top_terms(l2e_t: list, e2g_t: list, l2e_inv: np.ndarray,
                   e2g_inv: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
        """``obtain_sensor2top``'s key-frame terms, computed once per
        sample with its expressions: ``e2g_inv.T @ l2e_inv.T`` and
        ``e2g_t @ (e2g_inv.T @ l2e_inv.T) + l2e_t @ l2e_inv.T``."""
        inv = e2g_inv.T @ l2e_inv.T
        return inv, e2g_t @ inv + l2e_t @ l2e_inv.T

    def build(self, sample: dict) -> Tuple[dict, Set[str]]:
        """The v2 info record of ``sample`` (its ``sample_idx`` left for the
        caller, who knows its place in the split) and the class names the
        updater sets to -1 in it.

        Raises:
            FileNotFoundError: The key frame's LiDAR file is missing.
            ValueError: An annotation's translation or size is NaN.
        """
        nusc, v2 = self.nusc, self.v2
        lidar_token = sample['data']['LIDAR_TOP']
        sd_rec = nusc.get('sample_data', lidar_token)
        cs_record = nusc.get('calibrated_sensor',
                             sd_rec['calibrated_sensor_token'])
        pose_record = nusc.get('ego_pose', sd_rec['ego_pose_token'])
        lidar_path = nusc.get_sample_data_path(lidar_token)
        annotations = [
            nusc.get('sample_annotation', token) for token in sample['anns']
        ]
        for ann in annotations:  # the devkit's Box asserts it
            if np.isnan(ann['translation']).any() or np.isnan(
                    ann['size']).any():
                raise ValueError(
                    f"create_data: annotation {ann['token']} of sample "
                    f"{sample['token']}: expected a finite translation and "
                    f"size; got {ann['translation']} and {ann['size']}; "
                    'fix or remove the annotation.')
        if not osp.isfile(lidar_path):
            raise FileNotFoundError(
                f'create_data: the LiDAR file {lidar_path} of sample '
                f"{sample['token']} is missing; restore or regenerate it "
                '(tools/check_data.py lists every missing file).')
        # sweeps (the converter's order: newest first), then the cameras;
        # the terms of their poses and calibrations in one batch
        sweep_recs = []
        sweep_rec = sd_rec
        while len(sweep_recs) < self.max_sweeps and sweep_rec['prev'] != '':
            sweep_rec = nusc.get('sample_data', sweep_rec['prev'])
            sweep_recs.append(sweep_rec)
        cam_recs = [
            nusc.get('sample_data', sample['data'][cam])
            for cam in CAMERA_TYPES
        ]
        self._velocity.clear()  # an annotation is met by one sample
        self.record_terms([pose_record, cs_record] + [
            nusc.get(table, sd[key]) for sd in sweep_recs + cam_recs
            for table, key in (('ego_pose', 'ego_pose_token'),
                               ('calibrated_sensor',
                                'calibrated_sensor_token'))
        ])
        l2e_t = cs_record['translation']
        e2g_t = pose_record['translation']
        l2e_inv = self._inverse(cs_record)
        e2g_inv = self._inverse(pose_record)
        to_top = self._top_terms(l2e_t, e2g_t, l2e_inv, e2g_inv)

        info = v2.get_empty_standard_data_info(camera_types=CAMERA_TYPES)
        info['sample_idx'] = 0  # the caller's: the place in the split
        info['token'] = sample['token']
        info['ego2global'] = self._matrix4(pose_record)
        info['lidar_points']['num_pts_feats'] = 5
        info['lidar_points']['lidar_path'] = Path(lidar_path).name
        info['lidar_points']['lidar2ego'] = self._matrix4(cs_record)
        info['timestamp'] = sample['timestamp'] / 1e6

        sensors = self.sensors_to_top(sweep_recs + cam_recs, to_top)
        for sweep in sensors[:len(sweep_recs)]:
            lidar_sweep = v2.get_single_lidar_sweep()
            lidar_sweep['lidar_points']['lidar2ego'] = self._matrix4(
                sweep['cs_record'])
            lidar_sweep['ego2global'] = self._matrix4(sweep['pose_record'])
            lidar_sweep['lidar_points']['lidar2sensor'] = \
                sweep['lidar2sensor']
            lidar_sweep['timestamp'] = sweep['sd_rec']['timestamp'] / 1e6
            lidar_sweep['lidar_points']['lidar_path'] = sweep['data_path']
            lidar_sweep['sample_data_token'] = sweep['sd_rec']['token']
            info['lidar_sweeps'].append(lidar_sweep)

        info['images'] = {}
        for cam, cam_info in zip(CAMERA_TYPES, sensors[len(sweep_recs):]):
            img = v2.get_empty_img_info()
            img['img_path'] = Path(cam_info['data_path']).name
            img['cam2img'] = np.array(
                cam_info['cs_record']['camera_intrinsic']).tolist()
            img['sample_data_token'] = cam_info['sd_rec']['token']
            img['timestamp'] = cam_info['sd_rec']['timestamp'] / 1e6
            img['cam2ego'] = self._matrix4(cam_info['cs_record'])
            img['lidar2cam'] = cam_info['lidar2sensor']
            info['images'][cam] = img

        ignore_class_name: Set[str] = set()
        if not self.test:
            self._add_instances(info, annotations,
                                self.frame(pose_record, cs_record), l2e_inv,
                                e2g_inv, ignore_class_name)
            info['cam_instances'] = self.camera_instances(
                annotations, sensors[len(sweep_recs):])
            if 'lidarseg' in nusc.table_names:
                info['pts_semantic_mask_path'] = Path(
                    nusc.get('lidarseg', lidar_token)['filename']).name
        info, _ = v2.clear_data_info_unused_keys(info)
        return info, ignore_class_name

    def _add_instances(self, info: dict, annotations: List[dict],
                       frame: Dict[str, np.ndarray], l2e_inv: np.ndarray,
                       e2g_inv: np.ndarray,
                       ignore_class_name: Set[str]) -> None:
        """The converter's ``gt_*`` arrays (its boxes moved into the LiDAR
        ``frame`` by :func:`boxes_in_sensor`), then the updater's
        instances."""
        v2 = self.v2
        n = len(annotations)
        if n == 0:
            return
        frames = {key: np.repeat(value[None], n, axis=0)
                  for key, value in frame.items()}
        locs, quat = boxes_in_sensor(
            np.array([a['translation'] for a in annotations]),
            np.array([Quaternion(a['rotation']).q for a in annotations]),
            frames)
        quat = normalise_quaternions(quat)  # yaw_pitch_roll's
        dims = np.array([a['size'] for a in annotations])
        rots = np.array([yaw(q) for q in quat]).reshape(-1, 1)
        velocity = np.array(
            [self.box_velocity(a['token'])[:2] for a in annotations])
        # velo = np.array([*velocity[i], 0.0]) @ e2g_inv.T @ l2e_inv.T
        velo = np.concatenate([velocity, np.zeros((n, 1))], 1)[:, None, :]
        velo = np.matmul(velo, frames_t(e2g_inv, n))
        velocity = np.matmul(velo, frames_t(l2e_inv, n))[:, 0, :2]
        valid_flag = np.array(
            [(anno['num_lidar_pts'] + anno['num_radar_pts']) > 0
             for anno in annotations],
            dtype=bool).reshape(-1)
        names = np.array([
            v2.NuScenesNameMapping.get(a['category_name'],
                                       a['category_name'])
            for a in annotations
        ])
        gt_boxes = np.concatenate([locs, dims[:, [1, 0, 2]], rots], axis=1)
        num_lidar_pts = np.array([a['num_lidar_pts'] for a in annotations])
        num_radar_pts = np.array([a['num_radar_pts'] for a in annotations])
        for i in range(n):
            instance = v2.get_empty_instance()
            instance['bbox_3d'] = gt_boxes[i, :].tolist()
            if names[i] in CLASSES:
                instance['bbox_label'] = CLASSES.index(names[i])
            else:
                ignore_class_name.add(names[i])
                instance['bbox_label'] = -1
            instance['bbox_label_3d'] = instance['bbox_label']
            instance['velocity'] = velocity[i, :].tolist()
            instance['num_lidar_pts'] = num_lidar_pts[i]
            instance['num_radar_pts'] = num_radar_pts[i]
            instance['bbox_3d_isvalid'] = valid_flag[i]
            info['instances'].append(v2.clear_instance_unused_keys(instance))

    def camera_instances(self, annotations: List[dict],
                         cameras: List[dict]) -> Dict[str, list]:
        """``convert_utils.get_nuscenes_2d_boxes`` for each camera (its
        :meth:`sensors_to_top` entry): the records of every (camera,
        annotation) pair from one :class:`CameraPairs`; shapely's
        intersection (:func:`image_extents`) only for the boxes cut by the
        image's edge."""
        v2 = self.v2
        ann_recs = [
            ann_rec for ann_rec in annotations
            if ann_rec['visibility_token'] in VISIBILITIES
        ]
        for ann_rec in ann_recs:  # as the converter leaves them
            ann_rec['sample_annotation_token'] = ann_rec['token']
            ann_rec['sample_data_token'] = cameras[-1]['sd_rec']['token']
        # generate_record: no record for a category it does not map
        ann_recs = [
            ann_rec for ann_rec in ann_recs
            if ann_rec['category_name'] in v2.NuScenesNameMapping
        ]
        out: Dict[str, list] = {cam: [] for cam in CAMERA_TYPES}
        n = len(ann_recs)
        if n == 0:
            return out
        frames = [
            self.camera_frame(cam['pose_record'], cam['cs_record'])
            for cam in cameras
        ]
        pairs = CameraPairs(
            np.array([a['translation'] for a in ann_recs]),
            np.array([a['size'] for a in ann_recs]),
            np.array([Quaternion(a['rotation']).q for a in ann_recs]),
            np.array([self.box_velocity(a['token']) for a in ann_recs]),
            frames)
        in_front = pairs.in_front
        all_front = in_front.all(1)
        u, v = pairs.coords[:, 0], pairs.coords[:, 1]
        # all eight corners in front: beyond one edge (no record), inside
        off = all_front & ((u < 0).all(1) | (u > IMSIZE[0]).all(1)
                           | (v < 0).all(1) | (v > IMSIZE[1]).all(1))
        inside = all_front & (
            (u > _PX_MARGIN) & (v > _PX_MARGIN)
            & (u < IMSIZE[0] - _PX_MARGIN)
            & (v < IMSIZE[1] - _PX_MARGIN)).all(1)
        extent = np.stack([u.min(1), v.min(1), u.max(1), v.max(1)], 1)
        keep = np.flatnonzero(in_front.any(1) & ~off
                              & ~(pairs.center_2d[:, 2] <= 0))
        cut = keep[~inside[keep]]
        final_coords: Dict[int, Optional[tuple]] = dict(
            zip(cut.tolist(), image_extents([
                pairs.coords[m].T if all_front[m] else v2.view_points(
                    pairs.corners[m][:, in_front[m]],
                    frames[m // n]['intrinsic'], True).T[:, :2]
                for m in cut
            ])))
        for m in keep.tolist():
            cam, i = divmod(m, n)
            coords = tuple(extent[m]) if inside[m] else final_coords[m]
            if coords is None:
                continue
            ann_rec = ann_recs[i]
            repro_rec = v2.generate_record(ann_rec, *coords, 'nuscenes')
            repro_rec['bbox_3d'] = pairs.loc[m].tolist() + np.array(
                ann_rec['size'])[[1, 2, 0]].tolist() + [-yaw(pairs.quat[m])]
            repro_rec['velocity'] = pairs.velocity[m, 0::2].tolist()
            center = pairs.center_2d[m].astype(np.float64).tolist()
            repro_rec['center_2d'] = center[:2]
            repro_rec['depth'] = center[2]
            repro_rec['attr_label'] = self._attr_label(
                ann_rec['attribute_tokens'])
            out[CAMERA_TYPES[cam]].append(repro_rec)
        return out
