"""``create_data``'s infos without torch, mmdet3d or the devkit's package
(``create_data.upstream``): the steps written out or batched against
mmdet3d's, the devkit's and pyquaternion's own, bit for bit (random inputs
wider than the generated data's), the imports of the infos phase, and the
error for a definition that is not there."""
import subprocess
import sys

import numpy as np
import pytest
import torch
from mmdet3d.structures import points_cam2img
from mmdet3d.structures.ops import box_np_ops as mmdet3d_box_np_ops
from nuscenes.utils.data_classes import Box
from nuscenes.utils.geometry_utils import view_points
from pyquaternion import Quaternion

from projects.mmdet3d_plugin.create_data import gt_database
from projects.mmdet3d_plugin.create_data.infos import (CameraPairs,
                                                       SampleInfoBuilder,
                                                       center_to_image_batch,
                                                       image_extents, yaw)
from projects.mmdet3d_plugin.create_data.upstream import (
    converter_helpers, upstream_definitions)
from tests.helpers.train_tool import REPO, tool_env


def test_center_to_image_is_points_cam2img_bit_for_bit():
    rng = np.random.default_rng(0)
    centers, intrinsics, expected = [], [], []
    for i in range(500):
        center = rng.normal(size=3) * rng.choice([0.5, 10.0, 80.0])
        center[2] = abs(center[2]) + 0.05
        intrinsic = np.array([[1266.4, 0.0, 816.3], [0.0, 1266.4, 491.5],
                              [0.0, 0.0, 1.0]]) * rng.uniform(0.5, 1.5)
        if i % 3 == 0:  # skew and a last row other than (0, 0, 1)
            skew = rng.normal(size=3)
            intrinsic[0, 1], intrinsic[2, :2] = skew[0], skew[1:] * 1e-2
        theirs = points_cam2img(
            torch.tensor(center[None], dtype=torch.float32),
            torch.tensor(intrinsic, dtype=torch.float32),
            with_depth=True).numpy().astype(np.float64).squeeze().tolist()
        ours = center_to_image_batch(center[None], intrinsic[None])[0]
        assert ours.astype(np.float64).tolist() == theirs, (center,
                                                            intrinsic)
        centers.append(center)
        intrinsics.append(intrinsic)
        expected.append(theirs)
    batch = center_to_image_batch(np.array(centers), np.array(intrinsics))
    assert batch.astype(np.float64).tolist() == expected


@pytest.mark.parametrize('num_boxes', [1, 7, 60])
def test_box_planes_are_mmdet3d_box_np_ops(num_boxes):
    rng = np.random.default_rng(num_boxes)
    boxes = (rng.normal(size=(num_boxes, 9)) * 10).astype(np.float32)
    args = (boxes[:, :3], boxes[:, 3:6], boxes[:, 6])
    kwargs = dict(origin=(0.5, 0.5, 0), axis=2)
    ours = gt_database.box_np_ops.center_to_corner_box3d(*args, **kwargs)
    theirs = mmdet3d_box_np_ops.center_to_corner_box3d(*args, **kwargs)
    assert ours.dtype == theirs.dtype and np.array_equal(ours, theirs)
    planes = [
        mod.surface_equ_3d(mod.corner_to_surfaces_3d(theirs)[:, :, :3, :])
        for mod in (gt_database.box_np_ops, mmdet3d_box_np_ops)
    ]
    for a, b in zip(*planes):
        assert np.array_equal(a, b)


def test_infos_phase_imports_no_torch_mmdet3d_or_devkit_package():
    code = (
        'import sys\n'
        'from projects.mmdet3d_plugin.create_data import prepare, upstream\n'
        'upstream.converter_helpers()\n'
        "heavy = [m for m in ('torch', 'mmdet3d', 'nuscenes', 'cv2') "
        'if m in sys.modules]\n'
        'assert not heavy, heavy\n')
    result = subprocess.run([sys.executable, '-c', code], cwd=REPO,
                            env=tool_env(), capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_missing_definition_names_file_and_version():
    with pytest.raises(LookupError, match=r"\['no_such_function'\].*"
                       r'datasets/convert_utils\.py.*mmdet3d 1\.4\.0'):
        upstream_definitions('datasets/convert_utils.py',
                             ('generate_record', 'no_such_function'))


def _quaternions(rng, n):
    """Random rotations as the tables hold them: some unit to the last
    bit, some rounded (pyquaternion normalises those)."""
    q = rng.normal(size=(n, 4))
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    q[::2] = np.round(q[::2], 6)
    return q


def _records(rng, n, spread):
    return [
        dict(token=f'rec{spread}-{i}', translation=t.tolist(),
             rotation=q.tolist())
        for i, (t, q) in enumerate(
            zip(rng.uniform(-spread, spread, size=(n, 3)),
                _quaternions(rng, n)))
    ]


def test_record_terms_are_pyquaternions_bit_for_bit():
    from mmdet3d.datasets.utils import convert_quaternion_to_matrix
    builder = SampleInfoBuilder(None, test=False, max_sweeps=10)
    records = _records(np.random.default_rng(0), 64, 2000.0)
    for rec, terms in zip(records, builder.record_terms(records)):
        rot = Quaternion(rec['rotation']).rotation_matrix
        inverse = Quaternion(rec['rotation']).inverse
        inv_mat = inverse.rotation_matrix  # normalises it, as Box.rotate
        assert np.array_equal(terms['rot'], rot)
        assert np.array_equal(terms['inv'], np.linalg.inv(rot))
        assert np.array_equal(terms['qinv'], inverse.q)
        assert np.array_equal(terms['qinv_mat'], inv_mat)
        assert terms['mat4'] == convert_quaternion_to_matrix(
            rec['rotation'], rec['translation'])


def test_camera_pairs_are_the_devkits_box_steps_bit_for_bit():
    # get_nuscenes_2d_boxes' steps for each (camera, box) pair, with the
    # devkit's Box, pyquaternion and view_points, on boxes around cameras
    # anywhere on a 4 km map
    rng = np.random.default_rng(1)
    builder = SampleInfoBuilder(None, test=False, max_sweeps=10)
    poses = _records(rng, 3, 2000.0)
    calibs = _records(rng, 3, 2.0)
    for cs in calibs:
        cs['camera_intrinsic'] = [[1266.4, 0.0, 816.3], [0.0, 1266.4, 491.5],
                                  [0.0, 0.0, 1.0]]
    n = 40
    translation = np.array(poses[0]['translation']) + rng.uniform(
        -40, 40, size=(n, 3))
    size = rng.uniform(0.3, 12.0, size=(n, 3))
    rotation = _quaternions(rng, n)
    velocity = rng.normal(size=(n, 3)) * 5
    pairs = CameraPairs(
        translation, size, rotation, velocity,
        [builder.camera_frame(pose, cs) for pose, cs in zip(poses, calibs)])
    front = 0
    for m in range(3 * n):
        pose, cs = poses[m // n], calibs[m // n]
        i = m % n
        box = Box(translation[i].tolist(), size[i].tolist(),
                  Quaternion(rotation[i].tolist()))
        box.translate(-np.array(pose['translation']))
        box.rotate(Quaternion(pose['rotation']).inverse)
        box.translate(-np.array(cs['translation']))
        box.rotate(Quaternion(cs['rotation']).inverse)
        corners = box.corners()
        assert np.array_equal(pairs.loc[m], box.center)
        assert np.array_equal(pairs.corners[m], corners)
        assert np.array_equal(pairs.in_front[m], corners[2, :] > 0)
        if pairs.in_front[m].all():
            front += 1
            assert np.array_equal(
                pairs.coords[m],
                view_points(corners, np.array(cs['camera_intrinsic']),
                            True)[:2])
        assert yaw(pairs.quat[m]) == box.orientation.yaw_pitch_roll[0]
        velo = np.array([*velocity[i, :2], 0.0]) @ np.linalg.inv(
            Quaternion(pose['rotation']).rotation_matrix).T @ np.linalg.inv(
                Quaternion(cs['rotation']).rotation_matrix).T
        assert np.array_equal(pairs.velocity[m], velo)
    assert 0 < front < 3 * n


def test_image_extents_are_post_process_coords():
    rng = np.random.default_rng(2)
    helpers = converter_helpers()
    boxes = [
        np.stack([rng.uniform(-900, 2500, k),
                  rng.uniform(-500, 1400, k)], 1)
        for k in rng.integers(1, 9, size=300)
    ]
    boxes += [np.array([[0.0, 100.0], [-50.0, 200.0], [-10.0, 300.0]]),
              np.array([[1600.0, 900.0], [1700.0, 950.0]])]  # touching
    with pytest.warns(UserWarning, match='not an object of Polygon'):
        ours = image_extents(boxes)
    with pytest.warns(UserWarning, match='not an object of Polygon'):
        theirs = [helpers.post_process_coords(b.tolist()) for b in boxes]
    assert ours == theirs
    assert sum(e is not None for e in ours) > 100
