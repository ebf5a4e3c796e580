"""``create_data``'s infos without torch, mmdet3d or the devkit's package
(``create_data.upstream``): the steps written out against mmdet3d's own
(random inputs wider than the generated data's), the imports of the infos
phase, and the error for a definition that is not there."""
import subprocess
import sys

import numpy as np
import pytest
import torch
from mmdet3d.structures import points_cam2img
from mmdet3d.structures.ops import box_np_ops as mmdet3d_box_np_ops

from projects.mmdet3d_plugin.create_data import gt_database
from projects.mmdet3d_plugin.create_data.infos import center_to_image
from projects.mmdet3d_plugin.create_data.upstream import upstream_definitions
from tests.helpers.train_tool import REPO, tool_env


def test_center_to_image_is_points_cam2img_bit_for_bit():
    rng = np.random.default_rng(0)
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
        assert center_to_image(center, intrinsic) == theirs, (center,
                                                              intrinsic)


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
