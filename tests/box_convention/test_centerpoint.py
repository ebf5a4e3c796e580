"""CenterHead: the 1.x decoder on random weights W gives exactly the box
map of its output on the converted weights, for the shipped CenterPoint
head and mmdet3d's DCN head; the conversion is its own inverse."""
import pytest
import torch

from projects.mmdet3d_plugin.box_convention.boxes import to_new_boxes
from projects.mmdet3d_plugin.box_convention.centerpoint import (
    centerhead_keys, convert_centerhead)
from tests.helpers.box_heads import (box_gaps, build_head, converted_copy,
                                     lidar_metas, randomize)
from tests.helpers.model_steps import load

# Circle NMS keeps or drops boxes by their centres only, which the box
# map keeps: the rotated NMS of the shipped configs judges overlaps of
# boxes it takes for 1.x ones, so it is left out of the comparison.
HEADS = {
    'shipped pillar02': ('pillar02', {'model.test_cfg.pts.nms_type':
                                      'circle'}),
    'mmdet3d pillar02 DCN': (
        'mmdet3d::centerpoint/centerpoint_pillar02_second_secfpn_head-dcn-'
        'circlenms_8xb4-cyclic-20e_nus-3d.py', None),
}


def _convert(state):
    convert_centerhead(state, centerhead_keys(state))


@pytest.fixture(scope='module', params=sorted(HEADS))
def head(request):
    name, options = HEADS[request.param]
    cfg = load(name, options)
    head = build_head(cfg.model.pts_bbox_head, cfg.model.train_cfg.pts,
                      cfg.model.test_cfg.pts)
    randomize(head, seed=0)
    return head


def _decode(head, feats):
    with torch.no_grad():
        return head.predict_by_feat(head([feats]), lidar_metas(len(feats)))


def test_decoder_on_converted_weights_gives_the_mapped_boxes(head):
    feats = torch.randn(2, head.in_channels, 32, 32,
                        generator=torch.Generator().manual_seed(1))
    new = _decode(head, feats)
    old = _decode(converted_copy(head, _convert), feats)
    for got, was in zip(new, old):
        assert len(got.bboxes_3d) > 50
        assert torch.equal(got.scores_3d, was.scores_3d)
        assert torch.equal(got.labels_3d, was.labels_3d)
        gaps = box_gaps(got.bboxes_3d.tensor,
                        to_new_boxes(was.bboxes_3d.tensor))
        assert gaps['columns'] < 1e-6 and gaps['yaw'] < 1e-5, gaps
        # Without the conversion the same boxes are far apart.
        wrong = box_gaps(got.bboxes_3d.tensor, was.bboxes_3d.tensor)
        assert wrong['columns'] > 0.1 and wrong['yaw'] > 1.0, wrong


def test_conversion_is_its_own_inverse_and_touches_only_dim_and_rot(head):
    state = head.state_dict()
    keys = centerhead_keys(state)
    assert sorted(set(keys.values())) == ['dim', 'rot']
    assert len(keys) == 2 * 2 * len(head.task_heads)  # weight + bias
    once = dict(state)
    rows = convert_centerhead(once, keys)
    assert [key for key, _ in rows] == list(keys)
    changed = {k for k in state if not torch.equal(state[k], once[k])}
    assert changed == set(keys)
    twice = dict(once)
    convert_centerhead(twice, keys)
    assert all(torch.equal(twice[k], state[k]) for k in state)


def test_keys_of_plain_and_dcn_heads_under_any_prefix():
    state = {
        'pts_bbox_head.task_heads.0.dim.0.conv.weight': torch.zeros(64, 64),
        'pts_bbox_head.task_heads.0.dim.1.weight': torch.zeros(3, 64),
        'pts_bbox_head.task_heads.0.dim.1.bias': torch.zeros(3),
        'pts_bbox_head.task_heads.1.task_head.rot.2.weight': torch.zeros(2, 4),
        'pts_bbox_head.task_heads.1.task_head.rot.1.conv.weight':
        torch.zeros(4, 4),
        'pts_bbox_head.task_heads.1.task_head.reg.1.weight': torch.zeros(2),
    }
    assert centerhead_keys(state) == {
        'pts_bbox_head.task_heads.0.dim.1.weight': 'dim',
        'pts_bbox_head.task_heads.0.dim.1.bias': 'dim',
        'pts_bbox_head.task_heads.1.task_head.rot.2.weight': 'rot',
    }


def test_a_branch_of_other_channels_is_refused():
    state = {'bbox_head.task_heads.0.dim.1.weight': torch.zeros(4, 8)}
    with pytest.raises(ValueError, match=r'dim\.1\.weight has 4 output '
                       r'channels; a CenterHead .dim. branch ends in 3'):
        convert_centerhead(state, centerhead_keys(state))
