"""DETR-style heads: DETR3D's regression branches decoded as DETR3D
decodes (``tests/helpers/box_heads.py``: ``RegBranches``,
``detr3d_decode``): the box map of the converted weights' boxes, one
conversion per distinct tensor, its own inverse."""
import copy
import io

import pytest
import torch

from projects.mmdet3d_plugin.box_convention.boxes import to_new_boxes
from projects.mmdet3d_plugin.box_convention.detr import (
    convert_reg_branches, reg_branch_keys)
from tests.helpers.box_heads import (EMBED_DIMS, LAYERS, RegBranches,
                                     box_gaps, randomize)
from tests.helpers.box_heads import detr3d_decode as decode


def _heads(with_box_refine):
    head = RegBranches(with_box_refine)
    randomize(head, seed=3)
    queries = torch.randn(LAYERS, 900, EMBED_DIMS,
                          generator=torch.Generator().manual_seed(4))
    return head, queries


def _converted(head, state):
    rows = convert_reg_branches(state, reg_branch_keys(state))
    other = copy.deepcopy(head)
    other.load_state_dict(state)
    return other, rows


@pytest.mark.parametrize('with_box_refine', [True, False])
def test_decoder_on_converted_weights_gives_the_mapped_boxes(with_box_refine):
    head, queries = _heads(with_box_refine)
    old, rows = _converted(head, dict(head.state_dict()))
    with torch.no_grad():
        for new_code, old_code in zip(head(queries), old(queries)):
            gaps = box_gaps(decode(new_code), to_new_boxes(decode(old_code)))
            assert gaps['columns'] < 1e-5 and gaps['yaw'] < 1e-5, gaps
            wrong = box_gaps(decode(new_code), decode(old_code))
            assert wrong['yaw'] > 1.0 and wrong['columns'] > 0.1, wrong
    assert len(rows) == (2 * LAYERS if with_box_refine else 2)


def test_one_tensor_under_six_keys_is_converted_once():
    """Without box refinement a state dict of CPU tensors holds one weight
    under six keys (and torch.save keeps it so): converted once, still
    shared; changing it once per key would apply the map six times."""
    head, _ = _heads(with_box_refine=False)
    buffer = io.BytesIO()
    torch.save({'state_dict': head.state_dict()}, buffer)
    buffer.seek(0)
    state = torch.load(buffer)['state_dict']
    keys = reg_branch_keys(state)
    assert keys == [f'reg_branches.{i}.4.{p}' for i in range(LAYERS)
                    for p in ('weight', 'bias')]
    before = {k: state[k].clone() for k in keys}
    rows = convert_reg_branches(state, keys)
    assert [key for key, _ in rows] == ['reg_branches.0.4.weight',
                                        'reg_branches.0.4.bias']
    assert 'also under reg_branches.1.4.weight' in rows[0][1]
    for key in keys:
        assert state[key] is state[keys[keys.index(key) % 2]]
        assert torch.equal(state[key][[2, 3]], before[key][[3, 2]])
        assert torch.equal(state[key][[6, 7]], -before[key][[7, 6]])


def test_copies_of_one_tensor_are_each_converted():
    """A checkpoint saved from GPU memory holds a copy per key (mmcv's
    weights_to_cpu): each key converted, all equal."""
    head, _ = _heads(with_box_refine=False)
    state = {k: v.clone() for k, v in head.state_dict().items()}
    rows = convert_reg_branches(state, reg_branch_keys(state))
    assert len(rows) == 2 * LAYERS
    for i in range(1, LAYERS):
        assert torch.equal(state[f'reg_branches.{i}.4.weight'],
                           state['reg_branches.0.4.weight'])


@pytest.mark.parametrize('with_box_refine', [True, False])
def test_conversion_is_its_own_inverse(with_box_refine):
    head, _ = _heads(with_box_refine)
    state = dict(head.state_dict())
    once = dict(state)
    convert_reg_branches(once, reg_branch_keys(once))
    twice = dict(once)
    convert_reg_branches(twice, reg_branch_keys(twice))
    assert all(torch.equal(twice[k], state[k]) for k in state)
    assert sorted(k for k in state if not torch.equal(once[k], state[k])) \
        == sorted(reg_branch_keys(state))


def test_a_last_layer_shorter_than_the_code_is_refused():
    state = {'pts_bbox_head.reg_branches.0.2.weight': torch.zeros(4, 8)}
    with pytest.raises(ValueError, match=r'has 4 rows; a DETR-style '
                       r'regression branch ends in the box code'):
        convert_reg_branches(state, reg_branch_keys(state))
