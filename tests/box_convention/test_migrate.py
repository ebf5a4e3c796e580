"""``tools/migrate_checkpoint.py``'s conversion of whole checkpoints:
what it writes and prints, what it refuses, and that a failure loses
nothing already written. The 0.x checkpoints are made here as mmcv 1.x
runners saved them (``meta``: ``mmdet3d_version``, ``mmcv_version``,
``config`` text, ``CLASSES``, ``epoch``, ``iter``), their weights those
of the shipped configs' heads."""
import copy
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from mmengine.config import Config

from projects.mmdet3d_plugin.box_convention.anchor3d import (
    convert_anchor_head, read_anchor_head)
from projects.mmdet3d_plugin.box_convention.boxes import NEW_CONVENTION
from projects.mmdet3d_plugin.box_convention.centerpoint import (
    centerhead_keys, convert_centerhead)
from projects.mmdet3d_plugin.box_convention.migrate import migrate_checkpoint
from projects.mmdet3d_plugin.box_convention.tool import main
from projects.mmdet3d_plugin.constants import NUSCENES_CLASSES
from tests.helpers.box_heads import RegBranches, build_head, randomize
from tests.helpers.model_steps import load
from tests.helpers.old_checkpoints import NUS_0X_SIZES

REPO = Path(__file__).resolve().parents[2]
VOXELNET = REPO / 'configs/voxelnet/' \
    'voxelnet_pillar02_secfpn_8xb4-cyclic-20e_nus-3d.py'
CENTERPOINT = REPO / 'configs/centerpoint/' \
    'centerpoint_pillar02_second_secfpn_8xb4-cyclic-20e_nus-3d.py'


def _meta(model: dict, version: str = '0.13.0') -> dict:
    return dict(mmdet3d_version=version, mmcv_version='1.4.0',
                config=Config(dict(model=model)).pretty_text,
                CLASSES=NUSCENES_CLASSES, epoch=20, iter=123000)


def _prefixed(prefix: str, module) -> dict:
    """``module``'s state dict under ``prefix``, as its detector's (an
    OrderedDict with each module's ``_metadata``)."""
    parent = torch.nn.Module()
    setattr(parent, prefix.rstrip('.'), module)
    return parent.state_dict()


@pytest.fixture(scope='module')
def centerpoint_0x(tmp_path_factory):
    cfg = load('pillar02')
    head = build_head(cfg.model.pts_bbox_head)
    randomize(head, seed=0)
    path = tmp_path_factory.mktemp('cp') / 'centerpoint_0x.pth'
    state = _prefixed('pts_bbox_head.', head)
    state['pts_backbone.blocks.0.0.weight'] = torch.randn(64, 64, 3, 3)
    torch.save(dict(state_dict=state,
                    meta=_meta(dict(type='CenterPoint',
                                    pts_bbox_head=cfg.model.pts_bbox_head)),
                    optimizer=dict(state={}, param_groups=[])), path)
    return path


@pytest.fixture(scope='module')
def voxelnet_0x(tmp_path_factory):
    """A 0.x VoxelNet: the shipped head with mmdet3d v0.18.1's nuScenes
    PointPillars anchors (w, l, h) and dir_offset 0.7854."""
    new = copy.deepcopy(load('voxelnet_pillar02').model.bbox_head)
    old = copy.deepcopy(new)
    old.anchor_generator.sizes = NUS_0X_SIZES
    old.update(dir_offset=0.7854, dir_limit_offset=0)
    head = build_head(new)
    randomize(head, seed=1)
    path = tmp_path_factory.mktemp('vn') / 'voxelnet_0x.pth'
    torch.save(dict(state_dict=_prefixed('bbox_head.', head),
                    meta=_meta(dict(type='VoxelNet', bbox_head=old),
                               version='0.17.1')), path)
    return path, old


def test_centerpoint_checkpoint_is_converted_with_its_table(
        centerpoint_0x, tmp_path, capsys):
    out = tmp_path / 'centerpoint_1x.pth'
    assert main([str(centerpoint_0x), str(out)]) == 0
    printed = capsys.readouterr().out
    before = torch.load(centerpoint_0x)
    after = torch.load(out)
    state = dict(before['state_dict'])
    keys = centerhead_keys(state)
    convert_centerhead(state, keys)
    assert after['state_dict'].keys() == state.keys()
    # Each module's version (mmdet3d's spconv layers load by it) is kept.
    assert after['state_dict']._metadata == before['state_dict']._metadata
    assert all(torch.equal(after['state_dict'][k], v)
               for k, v in state.items())
    meta = after['meta']
    assert meta['box_convention'] == NEW_CONVENTION
    assert meta['mmdet3d_version'] == '0.13.0' and meta['epoch'] == 20
    assert [c['key'] for c in meta['box_convention_migration']['changes']] \
        == list(keys)
    assert 'optimizer' not in after
    assert f'migrate_checkpoint: {centerpoint_0x} -> {out}' in printed
    assert 'from: the 0.x box convention (written by mmdet3d 0.13.0 (< ' \
        '0.17.0, before PR #677))' in printed
    assert 'pts_bbox_head.task_heads.5.rot.1.weight  out channels (sin, ' \
        "cos) <- -(cos, sin): θ' = -θ - π/2" in printed
    assert '24 tensors converted' in printed
    assert 'left out: optimizer' in printed
    # A second run is a no-op with a message.
    again = tmp_path / 'again.pth'
    assert main([str(out), str(again)]) == 0
    printed = capsys.readouterr().out
    assert 'nothing to convert: converted by tools/migrate_checkpoint.py' \
        in printed and not again.exists()


def test_anchor_checkpoint_prints_the_config_lines_it_needs(
        voxelnet_0x, tmp_path, capsys):
    path, old_cfg = voxelnet_0x
    out = tmp_path / 'voxelnet_1x.pth'
    assert main([str(path), str(out)]) == 0
    printed = capsys.readouterr().out
    # 0.17.1 says nothing by itself; the config's anchors and dir_offset do.
    assert 'written by mmdet3d 0.17.1: 0.17.0 to 0.18.x are old in the ' \
        'releases and new on the v1.0.0.dev0 branch; its config: 4 of its ' \
        '7 anchor sizes have the width first, dir_offset=0.7854' in printed
    assert 'the 1.x config must carry (give the config these ' \
        '--cfg-options keys' in printed
    assert '  model.bbox_head.dir_offset=0.7853963267948966\n' in printed
    assert '  model.bbox_head.dir_limit_offset=0\n' in printed
    assert 'model.bbox_head.anchor_generator.sizes=[[4.60718145, ' \
        '1.95017717, 1.72270761]' in printed
    assert 'bbox_head.conv_dir_cls.weight  rotation slots 0 <-> 1 of each ' \
        'anchor size; direction bins kept' in printed
    state = dict(torch.load(path)['state_dict'])
    convert_anchor_head(state, 'bbox_head.',
                        read_anchor_head(old_cfg, 'model.bbox_head', 'old'),
                        swap_bins=False)
    after = torch.load(out)
    assert all(torch.equal(after['state_dict'][k], v)
               for k, v in state.items())
    assert after['meta']['box_convention_migration']['config_lines'][-2] \
        == 'model.bbox_head.dir_offset=0.7853963267948966'


def test_anchor_checkpoint_against_a_config(voxelnet_0x, tmp_path, capsys):
    path, _ = voxelnet_0x
    out = tmp_path / 'voxelnet_1x.pth'
    with pytest.raises(ValueError, match=(
            r'voxelnet_pillar02_secfpn_8xb4-cyclic-20e_nus-3d\.py: '
            r'model\.bbox_head\.dir_offset is -0\.7854; after the 0\.x '
            r'dir_offset 0\.7854 no permutation')):
        main([str(path), str(out), '--config', str(VOXELNET)])
    assert not out.exists()
    fitting = tmp_path / 'voxelnet_converted.py'
    fitting.write_text(f"_base_ = ['{VOXELNET}']\nmodel = dict(bbox_head=dict("
                       'dir_offset=-2.356194490192345))\n')
    assert main([str(path), str(out), '--config', str(fitting)]) == 0
    printed = capsys.readouterr().out
    assert f'the 1.x config must carry ({fitting} carries them' in printed
    assert 'direction bins swapped' in printed
    # A config of another head is refused.
    with pytest.raises(ValueError, match=r'has no model\.bbox_head'):
        main([str(path), str(tmp_path / 'x.pth'), '--config',
              str(CENTERPOINT)])


def test_centerpoint_against_a_config_of_other_shapes(centerpoint_0x,
                                                      tmp_path):
    other = tmp_path / 'one_task.py'
    other.write_text(
        f"_base_ = ['{CENTERPOINT}']\nmodel = dict(pts_bbox_head=dict("
        "tasks=[dict(num_class=1, class_names=['car'])]))\n")
    out = tmp_path / 'out.pth'
    with pytest.raises(ValueError, match=r'one_task\.py has 1 tasks, the '
                       r'checkpoint 6 task heads: the shapes do not fit'):
        main([str(centerpoint_0x), str(out), '--config', str(other)])
    assert main([str(centerpoint_0x), str(out), '--config',
                 str(CENTERPOINT)]) == 0


def _save(path, state, meta):
    torch.save(dict(state_dict=state, meta=meta), path)
    return str(path)


def test_detr_checkpoint_of_shared_branches(tmp_path, capsys):
    head = RegBranches(with_box_refine=False)
    randomize(head, seed=2)
    src = _save(tmp_path / 'detr3d.pth', _prefixed('pts_bbox_head.', head),
                dict(mmdet3d_version='0.17.1'))
    # DETR3D and BEVFormer were built on mmdet3d 0.17.1, which says
    # nothing by itself.
    with pytest.raises(ValueError, match='pass --from-convention old'):
        main([src, str(tmp_path / 'out.pth')])
    assert main([src, str(tmp_path / 'out.pth'), '--from-convention',
                 'old']) == 0
    printed = capsys.readouterr().out
    assert '2 tensors converted' in printed
    assert 'also under pts_bbox_head.reg_branches.1.4.weight' in printed
    state = torch.load(tmp_path / 'out.pth')['state_dict']
    assert state['pts_bbox_head.reg_branches.5.4.weight'].untyped_storage(
    ).data_ptr() == state['pts_bbox_head.reg_branches.0.4.weight'
                          ].untyped_storage().data_ptr()


@pytest.mark.parametrize('meta, flags, message', [
    (dict(mmdet3d_version='0.18.1'), [],
     r'cannot tell the box convention: written by mmdet3d 0\.18\.1: 0\.17\.0 '
     r'to 0\.18\.x are old in the releases and new on the v1\.0\.0\.dev0 '
     r'branch, and its config does not say; pass --from-convention old'),
    ({}, [], r'its meta names no mmdet3d version'),
    (dict(mmdet3d_version='0.13.0'), ['--head', 'detr'],
     r'--head detr: the state dict has no DETR-style reg_branches .*; its '
     r'head keys: pts_bbox_head\.shared_conv\.conv, .*'
     r'pts_bbox_head\.task_heads\.0'),
])
def test_what_it_cannot_convert_is_refused(centerpoint_0x, tmp_path, meta,
                                           flags, message):
    state = torch.load(centerpoint_0x)['state_dict']
    src = _save(tmp_path / 'in.pth', state, meta)
    with pytest.raises(ValueError, match=message):
        main([src, str(tmp_path / 'out.pth'), *flags])
    assert not (tmp_path / 'out.pth').exists()
    if '--head' not in flags:  # told, it converts
        assert main([src, str(tmp_path / 'out.pth'),
                     '--from-convention', 'old']) == 0


def test_an_unknown_head_is_refused_naming_its_keys(tmp_path):
    src = _save(tmp_path / 'in.pth', {
        'roi_head.bbox_head.reg_fc.weight': torch.zeros(7, 4),
        'roi_head.bbox_head.cls_fc.weight': torch.zeros(4, 4),
        'backbone.conv.weight': torch.zeros(4, 4, 3, 3),
    }, dict(mmdet3d_version='0.13.0'))
    with pytest.raises(ValueError, match=(
            r'holds no head this tool converts \(CenterHead .*\); its head '
            r'keys: roi_head\.bbox_head\.reg_fc, '
            r'roi_head\.bbox_head\.cls_fc')):
        main([src, str(tmp_path / 'out.pth')])


def test_several_heads_need_a_choice(centerpoint_0x, tmp_path):
    state = dict(torch.load(centerpoint_0x)['state_dict'])
    state.update(_prefixed('img_head.', RegBranches(with_box_refine=True)))
    src = _save(tmp_path / 'in.pth', state, dict(mmdet3d_version='0.13.0'))
    with pytest.raises(ValueError, match=r'holds CenterHead \(CenterPoint\) '
                       r'and DETR-style .* --head centerpoint\|detr'):
        main([src, str(tmp_path / 'out.pth')])
    assert main([src, str(tmp_path / 'out.pth'), '--head', 'detr']) == 0


@pytest.mark.parametrize('meta', [
    dict(mmengine_version='0.10.7', cfg='model = dict()'),
    dict(mmdet3d_version='1.0.0rc0'),
], ids=['mmengine', 'mmdet3d 1.0.0rc0'])
def test_a_1x_checkpoint_is_left_alone(centerpoint_0x, tmp_path, meta,
                                       capsys):
    state = torch.load(centerpoint_0x)['state_dict']
    src = _save(tmp_path / 'in.pth', state, meta)
    migration = migrate_checkpoint(src, str(tmp_path / 'out.pth'))
    assert not migration.written and not (tmp_path / 'out.pth').exists()
    assert 'its boxes are already in the 1.x convention' in \
        migration.format()


def test_a_refused_run_keeps_what_was_there(voxelnet_0x, tmp_path):
    path, _ = voxelnet_0x
    out = tmp_path / 'out.pth'
    out.write_bytes(b'earlier result')
    with pytest.raises(ValueError, match='dir_offset is -0.7854'):
        main([str(path), str(out), '--config', str(VOXELNET)])
    assert out.read_bytes() == b'earlier result'
    assert os.listdir(tmp_path) == ['out.pth']


@pytest.mark.launch
def test_tool_converts_and_answers_bad_input_in_one_line(centerpoint_0x,
                                                         tmp_path):
    """``tools/migrate_checkpoint.py`` as users start it: the table and
    exit 0; a checkpoint of no known head: one ``error:`` line, exit 1."""
    out = tmp_path / 'out.pth'
    proc = subprocess.run(
        [sys.executable, 'tools/migrate_checkpoint.py', str(centerpoint_0x),
         str(out)], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert '24 tensors converted' in proc.stdout
    assert 'Traceback' not in proc.stderr and out.is_file()
    bad = _save(tmp_path / 'bad.pth', {'x.weight': torch.zeros(2)},
                dict(mmdet3d_version='0.13.0'))
    proc = subprocess.run(
        [sys.executable, 'tools/migrate_checkpoint.py', bad,
         str(tmp_path / 'bad_out.pth')], cwd=REPO, capture_output=True,
        text=True, timeout=300)
    errors = [line for line in proc.stderr.splitlines()
              if line.startswith('error: ')]
    assert proc.returncode == 1 and len(errors) == 1, proc.stderr[-3000:]
    assert 'holds no head this tool converts' in errors[0]
    assert 'Traceback' not in proc.stderr


def test_the_light_parser_offers_what_the_conversion_knows():
    """``tool.py`` names the choices itself (it loads before torch)."""
    from projects.mmdet3d_plugin.box_convention import boxes, migrate, tool
    assert tool.HEAD_CHOICES == migrate.HEADS
    assert tool.CONVENTION_CHOICES == boxes.CONVENTIONS
