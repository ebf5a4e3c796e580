"""The box map against mmdet3d's own before/after data of PR #677 and
against mmdet3d's own info updater (``tools/update_data_coords.py``,
installed with mmdet3d 1.4.0)."""
import importlib.util
import math
import pickle
import sys
from pathlib import Path

import mmdet3d
import numpy as np
import pytest
import torch

from projects.mmdet3d_plugin.box_convention.boxes import to_new_boxes

# Copied, with mmdet3d's permission of attribution (issue 53), from the
# test data that mmdet3d's PR #677 ("[Refactor] Main code modification for
# coordinate system refactor", commit 2eebdc2d7a61b10d06bcd87a49cf81f6e75c7ff8
# of open-mmlab/mmdetection3d, first released in v1.0.0rc0) rewrote: each
# file read at 2eebdc2d7^ (before) and at 2eebdc2d7 (after), the boxes
# printed with repr(float(x)):
# - tests/data/lyft/lyft_infos.pkl, infos[0]['gt_boxes'] (float64);
# - tests/data/lyft/lyft_infos_val.pkl, infos[0]['gt_boxes'] (float64);
# - tests/data/kitti/kitti_dbinfos_train.pkl, ['Pedestrian'][0]
#   ['box3d_lidar'] (float32);
# - tests/data/waymo/kitti_format/waymo_dbinfos_train.pkl, ['Car'][0]
#   ['box3d_lidar'] (float32);
# - tests/data/lyft/sample_results.pkl, [0]['pts_bbox']['boxes_3d'].tensor
#   (float32 predictions).
PR677_PAIRS = {
    'lyft_infos.pkl': (np.float64, [
        [60.154871965097385, -13.401972892782545, 0.32206663577693684, 1.889,
         4.852, 1.829, -1.6059357397022063],
        [-22.492205738356454, -26.979040752845577, -0.575461861027504, 2.575,
         7.965, 3.226, -1.5988392309663506],
        [-14.605313985266582, 5.847162776186938, -1.2782088607105482, 0.745,
         0.79, 1.683, -4.701738807731354],
    ], [
        [60.154871965097385, -13.401972892782545, 0.32206663577693684, 4.852,
         1.889, 1.829, 0.03513941290730971],
        [-22.492205738356454, -26.979040752845577, -0.575461861027504, 7.965,
         2.575, 3.226, 0.028042904171454053],
        [-14.605313985266582, 5.847162776186938, -1.2782088607105482, 0.79,
         0.745, 1.683, 3.130942480936458],
    ]),
    'lyft_infos_val.pkl': (np.float64, [
        [37.41390026924163, -8.358401062775384, -0.3649601788624405, 2.046,
         4.495, 1.849, -4.279863453684925],
        [64.80453071563161, -27.929612302631604, -1.0434521495086884, 2.232,
         4.495, 1.491, -3.878437725726239],
        [-55.61714008208406, -7.906917257777366, -2.561129462820702, 2.086,
         4.502, 1.862, 1.4156773483329608],
        [48.880071835428154, -14.782149265540466, -0.5117990097334368, 2.046,
         4.495, 1.787, -4.182125015573254],
    ], [
        [37.41390026924163, -8.358401062775384, -0.3649601788624405, 4.495,
         2.046, 1.849, 2.7090671268900284],
        [64.80453071563161, -27.929612302631604, -1.0434521495086884, 4.495,
         2.232, 1.491, 2.3076413989313425],
        [-55.61714008208406, -7.906917257777366, -2.561129462820702, 4.502,
         2.086, 1.862, -2.9864736751278573],
        [48.880071835428154, -14.782149265540466, -0.5117990097334368, 4.495,
         2.046, 1.787, 2.6113286887783573],
    ]),
    'kitti_dbinfos_train.pkl': (np.float32, [
        [8.729999542236328, -1.8559174537658691, -1.5996993780136108,
         0.47999998927116394, 1.2000000476837158, 1.8899999856948853,
         0.009999999776482582],
    ], [
        [8.729999542236328, -1.8559174537658691, -1.5996993780136108,
         1.2000000476837158, 0.47999998927116394, 1.8899999856948853,
         -1.5807963609695435],
    ]),
    'waymo_dbinfos_train.pkl': (np.float32, [
        [31.959999084472656, -2.358456611633301, 2.20246958732605,
         2.369999885559082, 6.139999866485596, 3.200000047683716,
         -1.3600000143051147],
    ], [
        [31.959999084472656, -2.358456611633301, 2.20246958732605,
         6.139999866485596, 2.369999885559082, 3.200000047683716,
         -0.2107963114976883],
    ]),
    'sample_results.pkl': (np.float32, [
        [37.46333312988281, -8.351099014282227, -1.3131898641586304,
         1.934269666671753, 4.6502509117126465, 1.833348274230957,
         2.0210318565368652],
        [49.026039123535156, -14.778498649597168, -1.402996301651001,
         1.9653170108795166, 4.600139617919922, 1.8379160165786743,
         2.1149404048919678],
        [-55.77287292480469, -7.779201507568359, -3.6307339668273926,
         2.093895673751831, 4.639688491821289, 1.9029656648635864,
         1.4366199970245361],
        [64.7170181274414, -28.111059188842773, -1.9343631267547607,
         1.9404107332229614, 4.570024013519287, 1.7749459743499756,
         2.397784471511841],
        [-35.126914978027344, 23.171161651611328, -0.2799569368362427,
         2.6542370319366455, 6.905764102935791, 3.8107402324676514,
         6.107196807861328],
        [-29.195079803466797, 4.255932331085205, -2.0568089485168457,
         0.864241361618042, 0.7109158635139465, 1.8667711019515991,
         6.279926300048828],
        [-29.28476333618164, 5.343527317047119, -1.9333059787750244,
         0.9084836840629578, 0.7019752860069275, 1.8833849430084229,
         6.152646064758301],
        [-27.530288696289062, 4.563797950744629, -1.9668458700180054,
         0.838175892829895, 0.683775782585144, 1.8383386135101318,
         6.185535430908203],
    ], [
        [37.46333312988281, -8.351099014282227, -1.3131898641586304,
         4.6502509117126465, 1.934269666671753, 1.833348274230957,
         2.691357135772705],
        [49.026039123535156, -14.778498649597168, -1.402996301651001,
         4.600139617919922, 1.9653170108795166, 1.8379160165786743,
         2.5974488258361816],
        [-55.77287292480469, -7.779201507568359, -3.6307339668273926,
         4.639688491821289, 2.093895673751831, 1.9029656648635864,
         -3.007416248321533],
        [64.7170181274414, -28.111059188842773, -1.9343631267547607,
         4.570024013519287, 1.9404107332229614, 1.7749459743499756,
         2.3146047592163086],
        [-35.126914978027344, 23.171161651611328, -0.2799569368362427,
         6.905764102935791, 2.6542370319366455, 3.8107402324676514,
         -1.3948078155517578],
        [-29.195079803466797, 4.255932331085205, -2.0568089485168457,
         0.7109158635139465, 0.864241361618042, 1.8667711019515991,
         -1.5675373077392578],
        [-29.28476333618164, 5.343527317047119, -1.9333059787750244,
         0.7019752860069275, 0.9084836840629578, 1.8833849430084229,
         -1.4402570724487305],
        [-27.530288696289062, 4.563797950744629, -1.9668458700180054,
         0.683775782585144, 0.838175892829895, 1.8383386135101318,
         -1.4731464385986328],
    ]),
}
# (sample_results.pkl's 9 boxes hold one box twice; it is listed once.)
PAIR_IDS = sorted(PR677_PAIRS)


def _pair(name):
    dtype, before, after = PR677_PAIRS[name]
    return np.array(before, dtype=dtype), np.array(after, dtype=dtype)


@pytest.mark.parametrize('name', PAIR_IDS)
@pytest.mark.parametrize('kind', ['numpy', 'torch'])
def test_map_gives_mmdet3d_pr677_boxes_to_float_precision(name, kind):
    before, after = _pair(name)
    if kind == 'torch':
        before = torch.from_numpy(before)
    got = to_new_boxes(before)
    got = got.numpy() if kind == 'torch' else got
    assert got.dtype == after.dtype
    # Float precision: 1 ulp of the dtype at these magnitudes.
    eps = np.finfo(after.dtype).eps
    np.testing.assert_allclose(got, after, rtol=2 * eps, atol=8 * eps)


@pytest.mark.parametrize('name', PAIR_IDS)
def test_map_is_its_own_inverse_on_the_pairs(name):
    before, after = _pair(name)
    back = to_new_boxes(after)
    np.testing.assert_allclose(back[:, :6], before[:, :6], rtol=0, atol=0)
    turns = (back[:, 6] - before[:, 6]) / (2 * math.pi)
    np.testing.assert_allclose(turns, np.round(turns), atol=1e-6)
    assert np.all((-math.pi <= back[:, 6]) & (back[:, 6] < math.pi))


def _update_data_coords():
    """mmdet3d's own ``tools/update_data_coords.py`` of the installed
    wheel, imported by path (its module code parses ``sys.argv``)."""
    path = (Path(mmdet3d.__file__).parent / '.mim' / 'tools' /
            'update_data_coords.py')
    spec = importlib.util.spec_from_file_location('update_data_coords', path)
    module = importlib.util.module_from_spec(spec)
    argv = sys.argv
    sys.argv = [str(path), 'nuscenes']
    try:
        spec.loader.exec_module(module)
    finally:
        sys.argv = argv
    return module


def test_map_equals_mmdet3d_info_updater(tmp_path):
    """The installed mmdet3d's ``update_nuscenes_or_lyft_infos`` on the
    0.x boxes of both Lyft info files and on random ones gives what
    :func:`to_new_boxes` gives."""
    rng = np.random.default_rng(0)
    random = np.concatenate([
        rng.uniform(-50, 50, (64, 3)), rng.uniform(0.3, 12, (64, 3)),
        rng.uniform(-3 * math.pi, 3 * math.pi, (64, 1)),
        rng.uniform(-5, 5, (64, 2))
    ], axis=1)
    infos = [_pair('lyft_infos.pkl')[0], _pair('lyft_infos_val.pkl')[0],
             random]
    (tmp_path / 'in').mkdir()
    with open(tmp_path / 'in' / 'infos.pkl', 'wb') as f:
        pickle.dump({'infos': [{'gt_boxes': b.copy()} for b in infos],
                     'metadata': {}}, f)
    _update_data_coords().update_nuscenes_or_lyft_infos(
        str(tmp_path / 'in'), str(tmp_path), ['infos.pkl'])
    with open(tmp_path / 'infos.pkl', 'rb') as f:
        updated = pickle.load(f)['infos']
    for old, new in zip(infos, updated):
        # The installed updater wraps the yaw with mmdet3d 1.4's
        # limit_period, which computes a float64 array in float32 (up to
        # 8e-7 here); the PR #677 pairs above, made by 0.x's numpy
        # limit_period, match to float64 precision.
        np.testing.assert_allclose(to_new_boxes(old), new['gt_boxes'],
                                   rtol=0, atol=1e-6)
        np.testing.assert_array_equal(to_new_boxes(old)[:, :6],
                                      new['gt_boxes'][:, :6])


def test_velocities_and_centres_are_kept_and_short_rows_refused():
    boxes = torch.tensor([[1., 2., 3., 4., 5., 6., 0.5, 7., 8.]])
    new = to_new_boxes(boxes)
    assert new[0, [0, 1, 2, 5, 7, 8]].tolist() == [1., 2., 3., 6., 7., 8.]
    assert new[0, 3:5].tolist() == [5., 4.]
    assert new[0, 6].item() == pytest.approx(-0.5 - math.pi / 2)
    with pytest.raises(ValueError, match='at least 7 columns'):
        to_new_boxes(np.zeros((2, 6)))
