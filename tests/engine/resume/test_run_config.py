"""The config rewrite of exact resume: mmengine's loops become the
resumable ones (with gt_database_draws), PreemptionHook is added once,
--checkpoint-minutes."""
import pytest
from mmengine.config import Config

from projects.mmdet3d_plugin.config.checkpoint_hook import \
    use_atomic_checkpoints
from projects.mmdet3d_plugin.engine.resume.run_config import (
    set_checkpoint_minutes, use_exact_resume)


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
    assert [h['type'] for h in cfg.custom_hooks] == ['mmdet3d.PreemptionHook']


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


def test_a_configs_own_preemption_hook_and_the_opt_out_are_kept():
    own = dict(type='PreemptionHook', signals=['SIGUSR2'])
    cfg = use_exact_resume(Config(dict(
        train_cfg=dict(type='EpochBasedTrainLoop'), custom_hooks=[own])))
    assert cfg.custom_hooks == [own]
    off = use_exact_resume(Config(dict(
        exact_resume=False, train_cfg=dict(type='EpochBasedTrainLoop'))))
    assert off.train_cfg.type == 'EpochBasedTrainLoop'
    assert 'custom_hooks' not in off


def test_checkpoint_minutes_go_to_the_atomic_hook_only():
    cfg = use_atomic_checkpoints(Config(dict(default_scope='mmdet3d')))
    set_checkpoint_minutes(cfg, 5)
    assert cfg.default_hooks.checkpoint.interval_minutes == 5.0
    other = Config(dict(default_hooks=dict(checkpoint=dict(type='MyHook'))))
    with pytest.raises(ValueError, match="default_hooks.checkpoint is "
                       "'MyHook'.*Fix:"):
        set_checkpoint_minutes(other, 5)
    with pytest.raises(ValueError, match='positive number of minutes'):
        set_checkpoint_minutes(cfg, 0)
