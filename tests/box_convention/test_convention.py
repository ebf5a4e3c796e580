"""A checkpoint's convention from its meta, and the one line a run prints
when it loads a 0.x checkpoint unconverted (``load_from``, ``--resume``,
``tools/test.py`` all load through ``PluginRunner.load_checkpoint``)."""
import re

import pytest
import torch

import projects.mmdet3d_plugin  # noqa: F401  registers PluginRunner
from mmdet3d.registry import RUNNERS
from projects.mmdet3d_plugin.box_convention.boxes import NEW_CONVENTION
from projects.mmdet3d_plugin.box_convention.convention import from_meta
from projects.mmdet3d_plugin.box_convention.migrate import unconverted_note
from tests.helpers.box_heads import RegBranches
from tests.helpers.precision_toys import collect_logs, toy_cfg


@pytest.mark.parametrize('meta, name, reason', [
    (dict(mmdet3d_version='0.13.0'), 'old', r'0\.13\.0 \(< 0\.17\.0'),
    (dict(mmdet3d_version='0.17.1'), None, 'v1.0.0.dev0 branch'),
    (dict(mmdet3d_version='0.18.1'), None, 'v1.0.0.dev0 branch'),
    (dict(mmdet3d_version='1.0.0rc0'), 'new', r'>= 1\.0\.0rc0'),
    (dict(mmdet3d_version='1.4.0'), 'new', r'>= 1\.0\.0rc0'),
    (dict(mmengine_version='0.10.7'), 'new', 'mmengine 0.10.7'),
    (dict(mmdet3d_version='0.13.0', box_convention=NEW_CONVENTION),
     'converted', 'tools/migrate_checkpoint.py'),
    ({}, None, 'names no mmdet3d version'),
    (None, None, 'names no mmdet3d version'),
    (dict(mmdet3d_version='not a version'), None, 'names no mmdet3d'),
])
def test_convention_from_meta(meta, name, reason):
    convention = from_meta(meta)
    assert convention.name == name
    assert re.search(reason, convention.reason), convention.reason


def _checkpoint(meta):
    return dict(state_dict={f'pts_bbox_head.{k}': v for k, v in
                            RegBranches(True).state_dict().items()},
                meta=meta)


def test_note_names_the_command_and_is_quiet_otherwise():
    note = unconverted_note(_checkpoint(dict(mmdet3d_version='0.13.0')),
                            'work_dirs/detr3d.pth')
    assert note == (
        'checkpoint work_dirs/detr3d.pth is in the mmdet3d 0.x box '
        'convention: written by mmdet3d 0.13.0 (< 0.17.0, before PR #677); '
        "1.x reads its boxes (w, l, h, θ) as (l, w, h, θ'), so sizes come "
        'out swapped and yaws turned; convert it first: python '
        'tools/migrate_checkpoint.py work_dirs/detr3d.pth '
        'work_dirs/detr3d_1x.pth')
    maybe = unconverted_note(_checkpoint(dict(mmdet3d_version='0.17.1')),
                             'a.pth')
    assert '(unless it was trained on the v1.0.0.dev0 branch)' in maybe
    assert maybe.endswith('a_1x.pth --from-convention old')
    for meta in (dict(mmdet3d_version='1.0.0rc0'),
                 dict(mmengine_version='0.10.7'), {},
                 dict(mmdet3d_version='0.13.0',
                      box_convention=NEW_CONVENTION)):
        assert unconverted_note(_checkpoint(meta), 'a.pth') is None
    # No box head it converts: nothing to say.
    assert unconverted_note(dict(state_dict={'x': torch.zeros(1)},
                                 meta=dict(mmdet3d_version='0.13.0')),
                            'a.pth') is None


def test_runner_load_from_warns_once(tmp_path):
    """``load_from`` of a 0.x checkpoint: the Runner loads it and logs the
    note once, as a warning; a converted one loads silently."""
    cfg = toy_cfg(tmp_path / 'run')
    runner = RUNNERS.build(cfg)
    state = dict(runner.model.state_dict())
    state.update({f'pts_bbox_head.{k}': v for k, v in
                  RegBranches(True).state_dict().items()})
    for name, meta in (('old.pth', dict(mmdet3d_version='0.13.0')),
                       ('converted.pth', dict(
                           mmdet3d_version='0.13.0',
                           box_convention=NEW_CONVENTION))):
        torch.save(dict(state_dict=state, meta=meta), tmp_path / name)
    with collect_logs(runner.logger) as logs:
        runner.load_checkpoint(str(tmp_path / 'old.pth'))
        runner.load_checkpoint(str(tmp_path / 'converted.pth'))
    notes = [r for r in logs.records if 'box convention' in r.getMessage()]
    assert len(notes) == 1, logs.messages
    assert 'old.pth is in the mmdet3d 0.x box convention' in \
        notes[0].getMessage()
    assert notes[0].levelname == 'WARNING'
