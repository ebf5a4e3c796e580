"""auto_scale_lr counts world size, batch size and gradient accumulation."""
import pytest
from mmengine.runner import Runner

import projects.mmdet3d_plugin  # noqa: F401  registers PluginRunner
from mmdet3d.registry import RUNNERS
from tests.helpers.precision_toys import collect_logs, toy_cfg
from projects.mmdet3d_plugin.engine.lr_scaling import (effective_batch_size,
                                                       effective_lr,
                                                       lr_scale_factor)


@pytest.mark.parametrize('world, batch, accum, base, lr, expected', [
    (8, 4, 1, 32, 1e-4, 1e-4),  # the config's own setting
    (2, 4, 4, 32, 1e-4, 1e-4),  # 2 GPUs + x4 accumulation = 8 GPUs
    (2, 4, 1, 32, 1e-4, 2.5e-5),  # what mmengine alone computes for it
    (1, 2, 8, 32, 0.0018, 0.0018 / 2),
    (4, 6, 2, 48, 0.001, 0.001),
    (16, 4, 2, 32, 1e-4, 4e-4),
])
def test_effective_lr(world, batch, accum, base, lr, expected):
    assert effective_lr(lr, base, world, batch, accum) == pytest.approx(
        expected, rel=1e-12)
    assert effective_batch_size(world, batch, accum) == world * batch * accum


@pytest.mark.parametrize('args, match', [
    ((0, 2, 1), 'world_size must be a positive integer'),
    ((1, 0, 1), 'batch_size must be a positive integer'),
    ((1, 2, 0), 'accumulative_counts must be a positive integer'),
    ((1, 2, 1.5), 'accumulative_counts must be a positive integer'),
])
def test_effective_batch_size_rejects(args, match):
    with pytest.raises(ValueError, match=match):
        effective_batch_size(*args)


def test_base_batch_size_must_be_positive():
    with pytest.raises(ValueError, match='base_batch_size must be a positive'):
        lr_scale_factor(0, 1, 2, 1)


def _scaled_lr(tmp_path, runner_build, **kwargs):
    cfg = toy_cfg(tmp_path, max_iters=1, lr=0.1, **kwargs)
    runner = runner_build(cfg)
    with collect_logs(runner.logger) as logs:
        runner.train()
    # One update at the scaled LR, no scheduler: the group keeps it.
    return runner.optim_wrapper.get_lr()['lr'][0], logs.messages


@pytest.mark.parametrize('batch, accum, base, expected', [
    (2, 4, 4, 0.2),  # 1 x 2 x 4 = 8 samples per update = 2 x base
    (2, 1, 4, 0.05),
    (4, 2, 16, 0.05),
])
def test_plugin_runner_scales_by_accumulation(tmp_path, batch, accum, base,
                                              expected):
    lr, messages = _scaled_lr(
        tmp_path, RUNNERS.build, batch_size=batch, accum=accum,
        auto_scale_lr=dict(enable=True, base_batch_size=base))
    assert lr == pytest.approx(expected, rel=1e-12)
    assert lr == pytest.approx(effective_lr(0.1, base, 1, batch, accum))
    line = next(m for m in messages if m.startswith('auto_scale_lr'))
    assert (f'world_size 1 x batch_size {batch} x accumulative_counts '
            f'{accum} = {batch * accum}') in line
    assert f'base_batch_size {base}' in line
    assert f'0.1 -> {expected:.6g}' in line


def test_mmengine_runner_ignores_accumulation(tmp_path):
    # The reason PluginRunner exists: mmengine's scale_lr leaves accum out.
    lr, _ = _scaled_lr(
        tmp_path, Runner.from_cfg, batch_size=2, accum=4,
        auto_scale_lr=dict(enable=True, base_batch_size=4))
    assert lr == pytest.approx(0.05)


@pytest.mark.parametrize('auto_scale_lr', [
    None,
    dict(enable=False, base_batch_size=4),
])
def test_disabled_keeps_lr(tmp_path, auto_scale_lr):
    lr, messages = _scaled_lr(
        tmp_path, RUNNERS.build, batch_size=2, accum=4,
        auto_scale_lr=auto_scale_lr)
    assert lr == pytest.approx(0.1)
    assert not any(m.startswith('auto_scale_lr') for m in messages)


def test_missing_base_batch_size(tmp_path):
    runner = RUNNERS.build(
        toy_cfg(tmp_path, auto_scale_lr=dict(enable=True)))
    with pytest.raises(ValueError, match='`base_batch_size` is missing'):
        runner.train()


def test_scaled_lr_feeds_the_schedulers(tmp_path):
    # Schedulers are built after scaling and start from the scaled LR.
    cfg = toy_cfg(
        tmp_path, batch_size=2, accum=2, max_iters=4, lr=0.1,
        auto_scale_lr=dict(enable=True, base_batch_size=2),
        param_scheduler=[dict(type='ConstantLR', factor=0.5, begin=0,
                              end=100, by_epoch=False)])
    runner = RUNNERS.build(cfg)
    runner.train()
    assert runner.optim_wrapper.get_lr()['lr'][0] == pytest.approx(0.1)
    assert runner.optim_wrapper.optimizer.param_groups[0][
        'initial_lr'] == pytest.approx(0.2)
