"""The run defaults: what tools/train.py adds to every training config
(``engine/run_defaults.py``), each row's off setting, the rows' own config
changes (the resumable loops with gt_database_draws, the atomic checkpoint
hook and --checkpoint-minutes), and docs/launchers.md showing the table."""
from pathlib import Path

import pytest
from mmengine.config import Config

from projects.mmdet3d_plugin.engine.atomic_checkpoint.atomic_checkpoint_hook \
    import set_checkpoint_minutes, use_atomic_checkpoints
from projects.mmdet3d_plugin.engine.resume.loops import use_exact_resume
from projects.mmdet3d_plugin.engine.run_defaults import (RUN_DEFAULTS,
                                                         apply_run_defaults,
                                                         run_defaults_table)

LAUNCHERS_PAGE = Path(__file__).resolve().parents[2] / 'docs' / 'launchers.md'


def _train_config(**extra) -> Config:
    return Config(dict(
        default_scope='mmdet3d',
        default_hooks=dict(checkpoint=dict(type='CheckpointHook',
                                           interval=5)),
        train_cfg=dict(type='EpochBasedTrainLoop', max_epochs=2), **extra))


def _hook_types(cfg: Config) -> list:
    return [h['type'] for h in cfg.get('custom_hooks', [])]


def test_every_row_is_applied_in_order():
    cfg = apply_run_defaults(_train_config())
    assert cfg.default_hooks.checkpoint == dict(type='AtomicCheckpointHook',
                                                interval=5)
    assert cfg.train_cfg.type == 'mmdet3d.ResumableEpochBasedTrainLoop'
    assert _hook_types(cfg) == [
        'mmdet3d.PreemptionHook', 'mmdet3d.NonFiniteGuardHook',
        'mmdet3d.BadSampleHook']


def _row_name(row) -> str:
    return row.name.split(']')[0][1:]  # '[exact resume](...)'


#: Whether a prepared config has each row.
ROW_IS_ON = {
    'atomic checkpoints': lambda cfg: (cfg.default_hooks.checkpoint or {}
                                       ).get('type') == 'AtomicCheckpointHook',
    'exact resume': lambda cfg: cfg.train_cfg.type ==
    'mmdet3d.ResumableEpochBasedTrainLoop',
    'preemption': lambda cfg: 'mmdet3d.PreemptionHook' in _hook_types(cfg),
    'non-finite guard': lambda cfg: 'mmdet3d.NonFiniteGuardHook' in
    _hook_types(cfg),
    'bad samples': lambda cfg: 'mmdet3d.BadSampleHook' in _hook_types(cfg),
}


def test_every_row_is_checked():
    assert [_row_name(row) for row in RUN_DEFAULTS] == list(ROW_IS_ON)


@pytest.mark.parametrize('off, rows_off', [
    (dict(), ()),
    (dict(default_hooks=dict(checkpoint=dict(type='MyCheckpointHook'))),
     ('atomic checkpoints', )),
    (dict(default_hooks=dict(checkpoint=None)), ('atomic checkpoints', )),
    (dict(exact_resume=False), ('exact resume', 'preemption')),
    (dict(nonfinite_guard=False), ('non-finite guard', )),
    (dict(skip_bad_samples=False), ('bad samples', )),
], ids=['none', 'other-checkpoint-hook', 'no-checkpoint-hook',
        'exact_resume', 'nonfinite_guard', 'skip_bad_samples'])
def test_each_off_setting_turns_its_rows_off_and_only_them(off, rows_off):
    cfg = _train_config()
    cfg.merge_from_dict(off)
    cfg = apply_run_defaults(cfg)
    assert {name for name, is_on in ROW_IS_ON.items()
            if not is_on(cfg)} == set(rows_off)


def test_a_custom_hook_is_added_once_and_a_configs_own_is_kept():
    cfg = apply_run_defaults(_train_config(custom_hooks=[dict(type='X')]))
    assert _hook_types(cfg) == [
        'X', 'mmdet3d.PreemptionHook', 'mmdet3d.NonFiniteGuardHook',
        'mmdet3d.BadSampleHook']
    assert apply_run_defaults(cfg).custom_hooks == cfg.custom_hooks
    own = [dict(type='NonFiniteGuardHook', max_consecutive=5),
           dict(type='PreemptionHook', signals=['SIGUSR2']),
           dict(type='mmdet3d.BadSampleHook', max_bad_samples=2)]
    cfg = apply_run_defaults(_train_config(custom_hooks=own))
    assert cfg.custom_hooks == own


@pytest.mark.parametrize('train_cfg,expected', [
    (dict(type='EpochBasedTrainLoop', max_epochs=2),
     'mmdet3d.ResumableEpochBasedTrainLoop'),
    (dict(by_epoch=True, max_epochs=2),
     'mmdet3d.ResumableEpochBasedTrainLoop'),
    (dict(type='mmengine.IterBasedTrainLoop', max_iters=9),
     'mmdet3d.ResumableIterBasedTrainLoop'),
    (dict(by_epoch=False, max_iters=9),
     'mmdet3d.ResumableIterBasedTrainLoop'),
    (dict(type='MyLoop', max_iters=9), 'MyLoop'),
])
def test_loops_become_resumable(train_cfg, expected):
    cfg = use_exact_resume(Config(dict(train_cfg=train_cfg)))
    assert cfg.train_cfg.type == expected
    assert 'by_epoch' not in cfg.train_cfg
    assert 'custom_hooks' not in cfg  # PreemptionHook is a row of its own


def test_gt_database_draws_reach_the_loop():
    cfg = use_exact_resume(Config(dict(
        gt_database_draws='stock', train_cfg=dict(by_epoch=True))))
    assert cfg.train_cfg.gt_draws == 'stock'
    default = use_exact_resume(Config(dict(train_cfg=dict(by_epoch=True))))
    assert 'gt_draws' not in default.train_cfg  # the loop's 'per_sample'
    with pytest.raises(ValueError) as err:
        use_exact_resume(Config(dict(gt_database_draws='seeded',
                                     train_cfg=dict(by_epoch=True))))
    assert str(err.value) == (
        "config: gt_database_draws = 'seeded'. Fix: use one of "
        "'per_sample', 'stock'")


def test_the_atomic_hook_keeps_the_stock_hooks_arguments():
    cfg = use_atomic_checkpoints(Config(dict(default_hooks=dict(
        checkpoint=dict(type='mmengine.CheckpointHook', max_keep_ckpts=3)))))
    assert cfg.default_hooks.checkpoint == dict(
        type='mmdet3d.AtomicCheckpointHook', max_keep_ckpts=3, interval=1)
    bare = use_atomic_checkpoints(Config(dict(default_scope='mmdet3d')))
    assert bare.default_hooks.checkpoint == dict(type='AtomicCheckpointHook',
                                                 interval=1)


def test_checkpoint_minutes_go_to_the_atomic_hook_only():
    cfg = apply_run_defaults(_train_config(), checkpoint_minutes=5)
    assert cfg.default_hooks.checkpoint.interval_minutes == 5.0
    other = Config(dict(default_hooks=dict(checkpoint=dict(type='MyHook'))))
    with pytest.raises(ValueError, match="default_hooks.checkpoint is "
                       "'MyHook'.*Fix:"):
        apply_run_defaults(other, checkpoint_minutes=5)
    with pytest.raises(ValueError, match='positive number of minutes'):
        set_checkpoint_minutes(cfg, 0)


def test_the_launchers_page_shows_the_table():
    """docs/launchers.md holds exactly the rendered table, under its
    section."""
    page = LAUNCHERS_PAGE.read_text()
    section = page.split('## What the tools add to every training run\n',
                         1)[1].split('\n## ', 1)[0]
    shown = '\n'.join(line for line in section.splitlines()
                      if line.startswith('|'))
    assert shown == run_defaults_table()
    assert len(shown.splitlines()) == 2 + len(RUN_DEFAULTS)
