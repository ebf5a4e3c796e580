"""Anchor heads: mmdet3d's ``Anchor3DHead`` decoding (its generator, its
``DeltaXYZWLHRBBoxCoder``, its direction classifier) with a 1.x config
on random weights W gives exactly the box map of the same decoding with
the 0.x config on the converted weights; the conversion is its own
inverse; the config lines it needs, and the ones it refuses.

The two conventions' configs: the shipped VoxelNet pillar02 head (1.x,
the anchors of mmdet3d's nuScenes PointPillars) against mmdet3d v0.18.1's
``configs/pointpillars/hv_pointpillars_secfpn_sbn-all_4x8_2x_nus-3d.py``
(sizes (w, l, h), lines 31-38) with ``dir_offset=0.7854,
dir_limit_offset=0`` (``configs/_base_/models/hv_pointpillars_fpn_nus.py``
lines 62-63); mmdet3d 1.4's KITTI PointPillars head against v0.18.1's
``configs/_base_/models/hv_pointpillars_secfpn_kitti.py`` (lines 38-45:
``Anchor3DRangeGenerator``, its ranges and sizes; ``dir_offset`` and
``dir_limit_offset`` the 0.x defaults 0 and 1).
"""
import copy
import math

import pytest
import torch

from projects.mmdet3d_plugin.box_convention.anchor3d import (
    DEFAULTS, check_new_config, config_lines, convert_anchor_head,
    direction_swap, fitting_offsets, new_offset_for, read_anchor_head)
from projects.mmdet3d_plugin.box_convention.boxes import to_new_boxes
from tests.helpers.box_heads import (box_gaps, build_head, lidar_metas,
                                     randomize, yaw_gap)
from tests.helpers.model_steps import load
from tests.helpers.old_checkpoints import NUS_0X_SIZES

#: v0.18.1 hv_pointpillars_secfpn_kitti.py lines 38-45.
KITTI_0X_GENERATOR = dict(
    type='Anchor3DRangeGenerator',
    ranges=[
        [0, -39.68, -0.6, 70.4, 39.68, -0.6],
        [0, -39.68, -0.6, 70.4, 39.68, -0.6],
        [0, -39.68, -1.78, 70.4, 39.68, -1.78],
    ],
    sizes=[[0.6, 0.8, 1.73], [0.6, 1.76, 1.73], [1.6, 3.9, 1.56]],
    rotations=[0, 1.57],
    reshape_out=False)
#: No box is suppressed (IoU never exceeds 1), every anchor is decoded.
DECODE_ALL = dict(use_rotate_nms=False, nms_across_levels=False,
                  nms_pre=-1, nms_thr=1.0, score_thr=0.0, min_bbox_size=0,
                  max_num=100000)


def _nus_heads():
    """(0.x head config, 1.x head config) of the nuScenes case."""
    new = copy.deepcopy(load('voxelnet_pillar02').model.bbox_head)
    old = copy.deepcopy(new)
    old.anchor_generator.sizes = NUS_0X_SIZES
    old.update(dir_offset=0.7854, dir_limit_offset=0)
    return old, new


def _kitti_heads():
    new = copy.deepcopy(load(
        'mmdet3d::_base_/models/pointpillars_hv_secfpn_kitti.py'
    ).model.bbox_head)
    new.anchor_generator.update(type=KITTI_0X_GENERATOR['type'],
                                ranges=KITTI_0X_GENERATOR['ranges'])
    old = copy.deepcopy(new)
    old.anchor_generator = dict(KITTI_0X_GENERATOR)
    # 0.x's defaults, written out: a 1.x build would apply its own.
    old.update(dir_offset=DEFAULTS['old']['dir_offset'],
               dir_limit_offset=DEFAULTS['old']['dir_limit_offset'])
    return old, new


def _decode(head_cfg, state, feats):
    head = build_head(head_cfg, test_cfg=DECODE_ALL)
    head.load_state_dict(state)
    with torch.no_grad():
        return head.predict_by_feat(*head([feats]), lidar_metas(len(feats)))


def _random_state(head_cfg, seed=0):
    head = build_head(head_cfg, test_cfg=DECODE_ALL)
    randomize(head, seed)
    return dict(head.state_dict())


def _old_true_yaw(boxes, old):
    """The yaw a 0.x head meant: its decoding plus ``dir_limit_offset *
    π`` (0.x trained the direction with a limit offset of 0 and decoded
    with the config's; its KITTI evaluation subtracted the π back)."""
    boxes = boxes.clone()
    boxes[:, 6] += old.dir_limit_offset * math.pi
    return boxes


CASES = {
    # name: (heads, 1.x dir_offset or None for the config's own)
    'nuscenes, bins kept': (_nus_heads, 0.7853963267948966),
    'nuscenes, bins swapped': (_nus_heads, -2.356194490192345),
    'nuscenes, dir_offset 0.7854 rounded': (_nus_heads, 0.7854),
    'kitti, 1.x defaults': (_kitti_heads, None),
}


@pytest.mark.parametrize('case', sorted(CASES))
def test_decoder_on_converted_weights_gives_the_mapped_boxes(case):
    heads, offset = CASES[case]
    old_cfg, new_cfg = heads()
    if offset is not None:
        new_cfg.update(dir_offset=offset, dir_limit_offset=0)
    old = read_anchor_head(old_cfg, 'model.bbox_head', 'old')
    new = read_anchor_head(new_cfg, 'model.bbox_head', 'new')
    swap = check_new_config(old, new, 'the 1.x config')
    state = _random_state(new_cfg)
    converted = dict(state)
    convert_anchor_head(converted, '', old, swap)
    feats = torch.randn(1, new_cfg.in_channels, 6, 8,
                        generator=torch.Generator().manual_seed(1))
    [got] = _decode(new_cfg, state, feats)
    [was] = _decode(old_cfg, converted, feats)
    assert len(got.bboxes_3d) == 6 * 8 * new.num_anchors * new.num_classes
    assert torch.equal(got.scores_3d, was.scores_3d)
    assert torch.equal(got.labels_3d, was.labels_3d)
    mapped = to_new_boxes(_old_true_yaw(was.bboxes_3d.tensor, old))
    gaps = box_gaps(got.bboxes_3d.tensor, mapped)
    assert gaps['columns'] < 1e-5, gaps
    # 0.7854 is π/4 + 3.7e-6: a box that close to the direction boundary
    # may turn; none of these is.
    assert gaps['yaw'] < 1e-5, gaps


def test_shipped_dir_offset_cannot_give_the_0x_directions():
    """With 1.x's shipped -0.7854 after 0.x's 0.7854, keeping or swapping
    the bins both turn about half the boxes by π: the tool refuses it."""
    old_cfg, new_cfg = _nus_heads()
    old = read_anchor_head(old_cfg, 'model.bbox_head', 'old')
    new = read_anchor_head(new_cfg, 'model.bbox_head', 'new')
    assert new.dir_offset == -0.7854 and direction_swap(
        old.dir_offset, new.dir_offset) is None
    with pytest.raises(ValueError, match=r'model\.bbox_head\.dir_offset is '
                       r'-0\.7854; after the 0\.x dir_offset 0\.7854 no '
                       r'permutation .* set model\.bbox_head\.dir_offset='
                       r'0\.78539632\d* \(bins kept\) or -2\.35619\d* '
                       r'\(bins swapped\)'):
        check_new_config(old, new, 'the 1.x config')
    state = _random_state(new_cfg)
    feats = torch.randn(1, 384, 6, 8,
                        generator=torch.Generator().manual_seed(1))
    [got] = _decode(new_cfg, state, feats)
    for swap in (False, True):
        converted = dict(state)
        convert_anchor_head(converted, '', old, swap)
        [was] = _decode(old_cfg, converted, feats)
        mapped = to_new_boxes(was.bboxes_3d.tensor)
        turned = yaw_gap(got.bboxes_3d.tensor[:, 6], mapped[:, 6]) > 3.0
        assert 0.3 < turned.float().mean() < 0.7, turned.float().mean()


@pytest.mark.parametrize('heads', [_nus_heads, _kitti_heads])
def test_conversion_is_its_own_inverse(heads):
    old_cfg, new_cfg = heads()
    old = read_anchor_head(old_cfg, 'model.bbox_head', 'old')
    state = _random_state(new_cfg, seed=5)
    for swap in (False, True):
        twice = dict(state)
        convert_anchor_head(twice, '', old, swap)
        convert_anchor_head(twice, '', old, swap)
        for key, value in state.items():
            assert torch.allclose(twice[key], value, rtol=0, atol=1e-6), key
            if not key.endswith('conv_reg.bias'):
                assert torch.equal(twice[key], value), key


def test_config_lines_the_tool_writes():
    old_cfg, _ = _nus_heads()
    old = read_anchor_head(old_cfg, 'model.bbox_head', 'old')
    assert new_offset_for(old) == pytest.approx(math.pi / 2 - 0.7854)
    assert config_lines(old, new_offset_for(old)) == [
        "model.bbox_head.anchor_generator.type="
        "'AlignedAnchor3DRangeGenerator'",
        'model.bbox_head.anchor_generator.sizes=[[4.60718145, 1.95017717, '
        '1.72270761], [6.73778078, 2.4560939, 2.73004906], [12.01320693, '
        '2.87427237, 3.81509561], [1.68452161, 0.60058911, 1.27192197], '
        '[0.7256437, 0.66344886, 1.75748069], [0.40359262, 0.39694519, '
        '1.06232151], [0.48578221, 2.49008838, 0.98297065]]',
        'model.bbox_head.dir_offset=0.7853963267948966',
        'model.bbox_head.dir_limit_offset=0',
    ]
    kitti_old, _ = _kitti_heads()
    kitti = read_anchor_head(kitti_old, 'model.bbox_head', 'old')
    assert new_offset_for(kitti) == DEFAULTS['new']['dir_offset']
    assert direction_swap(kitti.dir_offset, new_offset_for(kitti)) is True
    assert fitting_offsets(0.7854) == pytest.approx(
        (0.7853963267948966, -2.356194490192345))


@pytest.mark.parametrize('change, match', [
    (dict(sizes=NUS_0X_SIZES), r'anchor_generator\.sizes is \[\[1\.95017717'
     r'.*need the 0\.x sizes as \(l, w, h\): set model\.bbox_head\.'
     r'anchor_generator\.sizes=\[\[4\.60718145, 1\.95017717'),
    (dict(rotations=[0, 1.5707963]), r'rotations is \[0\.0, 1\.5707963\], '
     r'the 0\.x config has \[0\.0, 1\.57\]'),
    (dict(type='Anchor3DRangeGenerator'), r"anchor_generator\.type is "
     r"'Anchor3DRangeGenerator', the 0\.x config has "
     r"'AlignedAnchor3DRangeGenerator'"),
    (dict(dir_limit_offset=1), r'dir_limit_offset is 1; 1\.x trains and '
     r'decodes directions with 0: set model\.bbox_head\.dir_limit_offset=0'),
], ids=['sizes', 'rotations', 'generator', 'dir_limit_offset'])
def test_a_config_that_does_not_fit_is_refused_with_the_line(change, match):
    old_cfg, new_cfg = _nus_heads()
    new_cfg.update(dir_offset=0.7854)
    if 'dir_limit_offset' in change:
        new_cfg.update(change)
    else:
        new_cfg.anchor_generator.update(change)
    old = read_anchor_head(old_cfg, 'model.bbox_head', 'old')
    new = read_anchor_head(new_cfg, 'model.bbox_head', 'new')
    with pytest.raises(ValueError, match=match):
        check_new_config(old, new, 'the 1.x config')
