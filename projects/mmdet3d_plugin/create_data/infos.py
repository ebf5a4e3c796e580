"""The v2 info record of one nuScenes sample, equal to mmdet3d's converter's.

mmdet3d 1.4.0 builds an info record in three passes over the whole dataset:
``nuscenes_converter._fill_trainval_infos`` (v1 infos, with the devkit's
boxes and ``obtain_sensor2top`` per camera and sweep),
``update_infos_to_v2.update_nuscenes_infos`` (the v2 layout, opening the
devkit again per split) and, inside it, ``generate_nuscenes_camera_instances``
(each camera's 2D boxes: ``convert_utils.get_nuscenes_2d_boxes``, a
shapely intersection per annotation and camera). :class:`SampleInfoBuilder`
does the three for one sample at once, with the same arithmetic in the same
order (the devkit's ``Box`` and ``Quaternion``, numpy expressions as
written there), so the values are the same bits; what it saves is work:

- the tables are read once; a rotation matrix and its inverse are computed
  once per calibration or pose record, a velocity once per annotation
  (``NuScenes.box_velocity``), not per camera;
- the cameras' ``get_sample_data`` (whose boxes the converter throws away)
  is not called;
- an (annotation, camera) pair whose eight corners all project off the
  image, or lie behind the camera, is skipped after a vectorised test with
  a margin (:func:`camera_candidates`): the converter finds no intersection
  for it; a box whose corners all project inside the image takes the
  corners' extent, which is what shapely's intersection returns for it.

The helpers that shape the records (``get_empty_standard_data_info``,
``clear_data_info_unused_keys``, ...) and the converter's 2D-box helpers
are mmdet3d's own, read from the wheel without importing mmdet3d
(:func:`.upstream.converter_helpers`: no torch in this phase); the one
torch computation, ``points_cam2img``'s float32 projection of a box
centre, is :func:`center_to_image` (the same float32 operations).
"""
import os.path as osp
from pathlib import Path
from typing import Dict, List, Optional, Set, Tuple

import numpy as np
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
#: Margins of the vectorised visibility test: a corner nearer the image
#: plane than this (m) or nearer an image edge than this (px) is left to the
#: exact code; the vectorised coordinates differ from it by ~1e-12.
_Z_MARGIN = 1e-6
_PX_MARGIN = 1e-3


def rotation_matrix_batch(q: np.ndarray) -> np.ndarray:
    """Rotation matrices (N, 3, 3) of quaternions (N, 4) as (w, x, y, z);
    close to pyquaternion's, not the same bits (for the visibility test)."""
    q = q / np.linalg.norm(q, axis=1, keepdims=True)
    w, x, y, z = q.T
    return np.stack([
        np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - z * w),
                  2 * (x * z + y * w)], -1),
        np.stack([2 * (x * y + z * w), 1 - 2 * (x * x + z * z),
                  2 * (y * z - x * w)], -1),
        np.stack([2 * (x * z - y * w), 2 * (y * z + x * w),
                  1 - 2 * (x * x + y * y)], -1),
    ], 1)


def box_corners_global(ann_recs: List[dict]) -> np.ndarray:
    """The eight corners (N, 8, 3) of annotation boxes in the global frame,
    in ``Box.corners``'s order (approximate: for the visibility test)."""
    if not ann_recs:
        return np.zeros((0, 8, 3))
    size = np.array([a['size'] for a in ann_recs], dtype=np.float64)
    w, length, h = size[:, 0], size[:, 1], size[:, 2]
    sx = np.array([1, 1, 1, 1, -1, -1, -1, -1])
    sy = np.array([1, -1, -1, 1, 1, -1, -1, 1])
    sz = np.array([1, 1, -1, -1, 1, 1, -1, -1])
    local = np.stack([length[:, None] / 2 * sx, w[:, None] / 2 * sy,
                      h[:, None] / 2 * sz], -1)
    rot = rotation_matrix_batch(
        np.array([a['rotation'] for a in ann_recs], dtype=np.float64))
    center = np.array([a['translation'] for a in ann_recs], dtype=np.float64)
    return np.einsum('nij,nkj->nki', rot, local) + center[:, None, :]


def camera_candidates(corners: np.ndarray, pose: Tuple[list, np.ndarray],
                      sensor: Tuple[list, np.ndarray], intrinsic: np.ndarray,
                      imsize: Tuple[int, int] = IMSIZE) -> np.ndarray:
    """Which boxes (global corners (N, 8, 3)) may have a 2D box in this
    camera: False only where ``get_nuscenes_2d_boxes`` certainly finds none
    (no corner in front of the camera, the corners in front all beyond one
    edge of the image, or the centre behind the camera); corners within
    the margins count as maybe. ``pose`` and ``sensor`` are the ego pose's
    and the camera's translation and rotation matrix."""
    if len(corners) == 0:
        return np.zeros(0, dtype=bool)
    pts = (corners - np.array(pose[0])) @ pose[1]
    pts = (pts - np.array(sensor[0])) @ sensor[1]
    z = pts[..., 2]
    ambiguous = (np.abs(z) <= _Z_MARGIN).any(1)
    front = z > _Z_MARGIN
    proj = pts @ np.asarray(intrinsic, dtype=np.float64).T
    with np.errstate(divide='ignore', invalid='ignore'):
        u = proj[..., 0] / z
        v = proj[..., 1] / z
    off = np.zeros(len(corners), dtype=bool)
    for coord, low, high in ((u, 0, imsize[0]), (v, 0, imsize[1])):
        margin = _PX_MARGIN + 1e-9 * np.abs(coord)
        off |= np.where(front, coord < low - margin, True).all(1)
        off |= np.where(front, coord > high + margin, True).all(1)
    no_front = ~front.any(1)
    # the record's depth is the centre's (the corners' mean) z: <= 0 drops it
    behind = pts.mean(axis=1)[:, 2] < -_Z_MARGIN
    return (ambiguous | ~(off | no_front)) & ~behind


def center_to_image(center: np.ndarray,
                    intrinsic: np.ndarray) -> List[float]:
    """``points_cam2img(center[None], intrinsic, with_depth=True)`` as the
    converter computes it (float32 tensors: ``[x, y, z, 1] @ K4.T``, each
    product and each sum rounded to float32 in the row's order, then
    ``u / w``, ``v / w``), as float64 ``[u, v, depth]``."""
    x, y, z = center.astype(np.float32)
    k = intrinsic.astype(np.float32)
    out = []
    for row in range(3):
        acc = np.float32(k[row, 0] * x) + np.float32(k[row, 1] * y)
        acc = np.float32(acc) + np.float32(k[row, 2] * z)
        out.append(np.float32(np.float32(acc) + np.float32(0)))
    u, v, w = out
    return [float(u / w), float(v / w), float(w)]


def _inside_image(coords: List[List[float]],
                  imsize: Tuple[int, int] = IMSIZE) -> bool:
    """Whether all eight projected corners ``[u, v]`` lie inside the image
    by more than the margin (plain floats: no array for eight points)."""
    high_u, high_v = imsize[0] - _PX_MARGIN, imsize[1] - _PX_MARGIN
    return len(coords) == 8 and all(
        u > _PX_MARGIN and v > _PX_MARGIN and u < high_u and v < high_v
        for u, v in coords)


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
        self._rot: Dict[str, np.ndarray] = {}
        self._inv: Dict[str, np.ndarray] = {}
        self._mat4: Dict[Tuple[str, str], list] = {}
        self._velocity: Dict[str, np.ndarray] = {}

    # -- caches (each value the same bits as the converter's computation) --
    def _rotation(self, token: str, rotation: list) -> np.ndarray:
        mat = self._rot.get(token)
        if mat is None:
            mat = self._rot[token] = Quaternion(rotation).rotation_matrix
        return mat

    def _inverse(self, token: str, rotation: list) -> np.ndarray:
        inv = self._inv.get(token)
        if inv is None:
            inv = self._inv[token] = np.linalg.inv(
                self._rotation(token, rotation))
        return inv

    def _matrix4(self, token: str, kind: str, record: dict) -> list:
        key = (token, kind)
        mat = self._mat4.get(key)
        if mat is None:
            mat = self._mat4[key] = self.v2.convert_quaternion_to_matrix(
                record['rotation'], record['translation'])
        return [row[:] for row in mat]

    def _inverse_quaternion(self, token: str, rotation: list):
        """``Quaternion(rotation).inverse`` after its ``rotation_matrix``
        (which normalises it in place, as in ``Box.rotate``), and that
        matrix."""
        key = ('qinv', token)
        pair = self._rot.get(key)
        if pair is None:
            q = Quaternion(rotation).inverse
            pair = self._rot[key] = (q, q.rotation_matrix)
        return pair

    def box_in_sensor(self, ann_token: str, pose_rec: dict, cs_rec: dict):
        """``nusc.get_box`` moved into a sensor's frame as
        ``NuScenes.get_sample_data`` does (``translate``, ``rotate`` by the
        pose's and the sensor's inverse rotations), with the quaternions
        and matrices from the cache; the box's velocity (NaN for a
        sample annotation) is left as it was."""
        box = self.nusc.get_box(ann_token)
        for rec in (pose_rec, cs_rec):
            q, mat = self._inverse_quaternion(rec['token'], rec['rotation'])
            box.translate(-np.array(rec['translation']))
            box.center = np.dot(mat, box.center)
            box.orientation = q * box.orientation
        return box

    def box_velocity(self, token: str) -> np.ndarray:
        """``NuScenes.box_velocity``, once per annotation."""
        velo = self._velocity.get(token)
        if velo is None:
            velo = self._velocity[token] = self.nusc.box_velocity(token)
        return velo

    # -- the converter's steps --
    def _sensor2top(self, sensor_token: str,
                    to_top: Tuple[np.ndarray, np.ndarray]) -> dict:
        """``nuscenes_converter.obtain_sensor2top`` (the converter's
        ``data_path``; the matrices from the caches; ``to_top``: the key
        frame's terms, the same for each sensor, from
        :meth:`_top_terms`)."""
        nusc = self.nusc
        sd_rec = nusc.get('sample_data', sensor_token)
        cs_record = nusc.get('calibrated_sensor',
                             sd_rec['calibrated_sensor_token'])
        pose_record = nusc.get('ego_pose', sd_rec['ego_pose_token'])
        l2e_r_s_mat = self._rotation(cs_record['token'],
                                     cs_record['rotation'])
        e2g_r_s_mat = self._rotation(pose_record['token'],
                                     pose_record['rotation'])
        l2e_t_s = cs_record['translation']
        e2g_t_s = pose_record['translation']
        inv, offset = to_top
        R = (l2e_r_s_mat.T @ e2g_r_s_mat.T) @ inv
        T = (l2e_t_s @ e2g_r_s_mat.T + e2g_t_s) @ inv
        T -= offset
        return dict(
            sd_rec=sd_rec,
            cs_record=cs_record,
            pose_record=pose_record,
            data_path=osp.join(CONVERTER_DATAROOT, sd_rec['filename']),
            sensor2lidar_rotation=R.T,
            sensor2lidar_translation=T)

    @staticmethod
    def _top_terms(l2e_t: list, e2g_t: list, l2e_inv: np.ndarray,
                   e2g_inv: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
        """``obtain_sensor2top``'s key-frame terms, computed once per
        sample with its expressions: ``e2g_inv.T @ l2e_inv.T`` and
        ``e2g_t @ (e2g_inv.T @ l2e_inv.T) + l2e_t @ l2e_inv.T``."""
        inv = e2g_inv.T @ l2e_inv.T
        return inv, e2g_t @ inv + l2e_t @ l2e_inv.T

    @staticmethod
    def _lidar2sensor(sweep: dict) -> list:
        lidar2sensor = np.eye(4)
        rot = sweep['sensor2lidar_rotation']
        trans = sweep['sensor2lidar_translation']
        lidar2sensor[:3, :3] = rot.T
        lidar2sensor[:3, 3:4] = -1 * np.matmul(rot.T, trans.reshape(3, 1))
        return lidar2sensor.astype(np.float32).tolist()

    def build(self, sample: dict) -> Tuple[dict, Set[str]]:
        """The v2 info record of ``sample`` (its ``sample_idx`` left for the
        caller, who knows its place in the split) and the class names the
        updater sets to -1 in it.

        Raises:
            FileNotFoundError: The key frame's LiDAR file is missing.
        """
        nusc, v2 = self.nusc, self.v2
        lidar_token = sample['data']['LIDAR_TOP']
        sd_rec = nusc.get('sample_data', lidar_token)
        cs_record = nusc.get('calibrated_sensor',
                             sd_rec['calibrated_sensor_token'])
        pose_record = nusc.get('ego_pose', sd_rec['ego_pose_token'])
        lidar_path = nusc.get_sample_data_path(lidar_token)
        boxes = [
            self.box_in_sensor(token, pose_record, cs_record)
            for token in sample['anns']
        ]
        if not osp.isfile(lidar_path):
            raise FileNotFoundError(
                f'create_data: the LiDAR file {lidar_path} of sample '
                f"{sample['token']} is missing; restore or regenerate it "
                '(tools/check_data.py lists every missing file).')
        l2e_t = cs_record['translation']
        e2g_t = pose_record['translation']
        l2e_inv = self._inverse(cs_record['token'], cs_record['rotation'])
        e2g_inv = self._inverse(pose_record['token'], pose_record['rotation'])
        to_top = self._top_terms(l2e_t, e2g_t, l2e_inv, e2g_inv)

        info = v2.get_empty_standard_data_info(camera_types=CAMERA_TYPES)
        info['sample_idx'] = 0  # the caller's: the place in the split
        info['token'] = sample['token']
        info['ego2global'] = self._matrix4(pose_record['token'], 'pose',
                                           pose_record)
        info['lidar_points']['num_pts_feats'] = 5
        info['lidar_points']['lidar_path'] = Path(lidar_path).name
        info['lidar_points']['lidar2ego'] = self._matrix4(
            cs_record['token'], 'cs', cs_record)
        info['timestamp'] = sample['timestamp'] / 1e6

        # sweeps (the converter's order: newest first)
        sweep_rec = sd_rec
        count = 0
        while count < self.max_sweeps and sweep_rec['prev'] != '':
            sweep = self._sensor2top(sweep_rec['prev'], to_top)
            lidar_sweep = v2.get_single_lidar_sweep()
            lidar_sweep['lidar_points']['lidar2ego'] = self._matrix4(
                sweep['cs_record']['token'], 'cs', sweep['cs_record'])
            lidar_sweep['ego2global'] = self._matrix4(
                sweep['pose_record']['token'], 'pose', sweep['pose_record'])
            lidar_sweep['lidar_points']['lidar2sensor'] = \
                self._lidar2sensor(sweep)
            lidar_sweep['timestamp'] = sweep['sd_rec']['timestamp'] / 1e6
            lidar_sweep['lidar_points']['lidar_path'] = sweep['data_path']
            lidar_sweep['sample_data_token'] = sweep['sd_rec']['token']
            info['lidar_sweeps'].append(lidar_sweep)
            sweep_rec = sweep['sd_rec']
            count += 1

        info['images'] = {}
        cam_infos = {}
        for cam in CAMERA_TYPES:
            cam_info = self._sensor2top(sample['data'][cam], to_top)
            cam_infos[cam] = cam_info
            img = v2.get_empty_img_info()
            img['img_path'] = Path(cam_info['data_path']).name
            img['cam2img'] = np.array(
                cam_info['cs_record']['camera_intrinsic']).tolist()
            img['sample_data_token'] = cam_info['sd_rec']['token']
            img['timestamp'] = cam_info['sd_rec']['timestamp'] / 1e6
            img['cam2ego'] = self._matrix4(cam_info['cs_record']['token'],
                                           'cs', cam_info['cs_record'])
            img['lidar2cam'] = self._lidar2sensor(cam_info)
            info['images'][cam] = img

        ignore_class_name: Set[str] = set()
        if not self.test:
            self._add_instances(info, sample, boxes, l2e_inv, e2g_inv,
                                ignore_class_name)
            ann_recs = [
                ann_rec for ann_rec in (
                    nusc.get('sample_annotation', token)
                    for token in sample['anns'])
                if ann_rec['visibility_token'] in VISIBILITIES
            ]
            corners = box_corners_global(ann_recs)
            info['cam_instances'] = {
                cam: self.camera_instances(ann_recs, corners,
                                           cam_infos[cam]['sd_rec'])
                for cam in CAMERA_TYPES
            }
            if 'lidarseg' in nusc.table_names:
                info['pts_semantic_mask_path'] = Path(
                    nusc.get('lidarseg', lidar_token)['filename']).name
        info, _ = v2.clear_data_info_unused_keys(info)
        return info, ignore_class_name

    def _add_instances(self, info: dict, sample: dict, boxes: list,
                       l2e_inv: np.ndarray, e2g_inv: np.ndarray,
                       ignore_class_name: Set[str]) -> None:
        """The converter's ``gt_*`` arrays, then the updater's instances."""
        nusc, v2 = self.nusc, self.v2
        annotations = [
            nusc.get('sample_annotation', token) for token in sample['anns']
        ]
        locs = np.array([b.center for b in boxes]).reshape(-1, 3)
        dims = np.array([b.wlh for b in boxes]).reshape(-1, 3)
        rots = np.array([b.orientation.yaw_pitch_roll[0]
                         for b in boxes]).reshape(-1, 1)
        velocity = np.array(
            [self.box_velocity(token)[:2] for token in sample['anns']])
        valid_flag = np.array(
            [(anno['num_lidar_pts'] + anno['num_radar_pts']) > 0
             for anno in annotations],
            dtype=bool).reshape(-1)
        for i in range(len(boxes)):
            velo = np.array([*velocity[i], 0.0])
            velo = velo @ e2g_inv.T @ l2e_inv.T
            velocity[i] = velo[:2]
        names = np.array(
            [v2.NuScenesNameMapping.get(b.name, b.name) for b in boxes])
        gt_boxes = np.concatenate([locs, dims[:, [1, 0, 2]], rots], axis=1)
        gt_velocity = velocity.reshape(-1, 2)
        num_lidar_pts = np.array([a['num_lidar_pts'] for a in annotations])
        num_radar_pts = np.array([a['num_radar_pts'] for a in annotations])
        for i in range(gt_boxes.shape[0]):
            instance = v2.get_empty_instance()
            instance['bbox_3d'] = gt_boxes[i, :].tolist()
            if names[i] in CLASSES:
                instance['bbox_label'] = CLASSES.index(names[i])
            else:
                ignore_class_name.add(names[i])
                instance['bbox_label'] = -1
            instance['bbox_label_3d'] = instance['bbox_label']
            instance['velocity'] = gt_velocity[i, :].tolist()
            instance['num_lidar_pts'] = num_lidar_pts[i]
            instance['num_radar_pts'] = num_radar_pts[i]
            instance['bbox_3d_isvalid'] = valid_flag[i]
            info['instances'].append(v2.clear_instance_unused_keys(instance))

    def camera_instances(self, ann_recs: List[dict], corners: np.ndarray,
                         sd_rec: dict) -> List[dict]:
        """``convert_utils.get_nuscenes_2d_boxes`` for one camera (the
        sample's annotations of the kept visibilities, their global
        corners from :func:`box_corners_global`), skipping the pairs
        :func:`camera_candidates` rules out."""
        nusc = self.nusc
        cs_rec = nusc.get('calibrated_sensor',
                          sd_rec['calibrated_sensor_token'])
        pose_rec = nusc.get('ego_pose', sd_rec['ego_pose_token'])
        camera_intrinsic = np.array(cs_rec['camera_intrinsic'])
        keep = camera_candidates(
            corners,
            (pose_rec['translation'],
             self._rotation(pose_rec['token'], pose_rec['rotation'])),
            (cs_rec['translation'],
             self._rotation(cs_rec['token'], cs_rec['rotation'])),
            camera_intrinsic)
        repro_recs = []
        for ann_rec, maybe in zip(ann_recs, keep):
            ann_rec['sample_annotation_token'] = ann_rec['token']
            ann_rec['sample_data_token'] = sd_rec['token']
            if not maybe or ann_rec['category_name'] not in \
                    self.v2.NuScenesNameMapping:
                continue  # no record (generate_record: None)
            rec = self._camera_instance(ann_rec, pose_rec, cs_rec,
                                        camera_intrinsic)
            if rec is not None:
                repro_recs.append(rec)
        return repro_recs

    def _camera_instance(self, ann_rec: dict, pose_rec: dict, cs_rec: dict,
                         camera_intrinsic: np.ndarray) -> Optional[dict]:
        """One annotation's record in ``get_nuscenes_2d_boxes``."""
        nusc = self.nusc
        box = self.box_in_sensor(ann_rec['token'], pose_rec, cs_rec)
        corners_3d = box.corners()
        in_front = np.argwhere(corners_3d[2, :] > 0).flatten()
        corners_3d = corners_3d[:, in_front]
        corner_coords = self.v2.view_points(corners_3d, camera_intrinsic,
                                            True).T[:, :2].tolist()
        if _inside_image(corner_coords):
            # shapely's intersection with the canvas is the hull itself
            arr = np.array(corner_coords)
            final_coords = (arr[:, 0].min(), arr[:, 1].min(),
                            arr[:, 0].max(), arr[:, 1].max())
        else:
            final_coords = self.v2.post_process_coords(corner_coords)
        if final_coords is None:
            return None
        min_x, min_y, max_x, max_y = final_coords
        repro_rec = self.v2.generate_record(ann_rec, min_x, min_y, max_x,
                                            max_y, 'nuscenes')
        if repro_rec is None:
            return None
        loc = box.center.tolist()
        dim = box.wlh
        dim[[0, 1, 2]] = dim[[1, 2, 0]]
        dim = dim.tolist()
        rot = box.orientation.yaw_pitch_roll[0]
        rot = [-rot]
        global_velo2d = self.box_velocity(box.token)[:2]
        global_velo3d = np.array([*global_velo2d, 0.0])
        e2g_inv = self._inverse(pose_rec['token'], pose_rec['rotation'])
        c2e_inv = self._inverse(cs_rec['token'], cs_rec['rotation'])
        cam_velo3d = global_velo3d @ e2g_inv.T @ c2e_inv.T
        velo = cam_velo3d[0::2].tolist()
        repro_rec['bbox_3d'] = loc + dim + rot
        repro_rec['velocity'] = velo
        center_2d_with_depth = center_to_image(np.array(loc),
                                               camera_intrinsic)
        repro_rec['center_2d'] = center_2d_with_depth[:2]
        repro_rec['depth'] = center_2d_with_depth[2]
        if repro_rec['depth'] <= 0:
            return None
        attr_tokens = ann_rec['attribute_tokens']
        if len(attr_tokens) == 0:
            attr_name = 'None'
        else:
            attr_name = nusc.get('attribute', attr_tokens[0])['name']
        repro_rec['attr_label'] = self.v2.nus_attributes.index(attr_name)
        return repro_rec
