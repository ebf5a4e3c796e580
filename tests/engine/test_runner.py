"""Gradient accumulation and mixed precision through a real PluginRunner."""
import math

import pytest
import torch
from mmengine.runner import Runner

import projects.mmdet3d_plugin  # noqa: F401  registers PluginRunner
from tests.helpers.gpu import requires_cuda, requires_no_cuda
from mmdet3d.registry import RUNNERS
from tests.helpers.precision_toys import collect_logs, parameters_of, toy_cfg
from tests.helpers import fault_hooks  # noqa: F401  registers StopAfterHook
from projects.mmdet3d_plugin.engine.resume.accumulation_resume_hook import (
    AccumulationResumeHook)
from projects.mmdet3d_plugin.engine.amp import (check_amp_supported,
                                                warn_accumulation_with_batchnorm)
from projects.mmdet3d_plugin.constants import CPU_BF16_ENV
from tests.helpers.presets import apply_presets, apply_train_flags


def _train(cfg, runner_cls=None):
    runner = RUNNERS.build(cfg) if runner_cls is None else \
        runner_cls.from_cfg(cfg)
    with collect_logs(runner.logger) as logs:
        runner.train()
    return runner, logs


def _assert_close(a: dict, b: dict, rtol: float = 1e-6) -> None:
    assert a.keys() == b.keys()
    for name in a:
        diff = (a[name] - b[name]).abs().max().item()
        scale = b[name].abs().max().item()
        assert diff <= rtol * scale, \
            f'{name}: |diff| {diff} > {rtol} x {scale}'


def test_accumulate_x4_of_2_equals_one_batch_of_8(tmp_path):
    # Mean loss, SGD without momentum, no BatchNorm: four batches of 2 with
    # the loss divided by 4 give the gradient of one batch of 8.
    big, _ = _train(toy_cfg(tmp_path / 'big', batch_size=8, max_iters=1))
    acc, _ = _train(
        toy_cfg(tmp_path / 'acc', batch_size=2, max_iters=4, accum=4))
    start = Runner.from_cfg(toy_cfg(tmp_path / 'start')).model
    p_big, p_acc = parameters_of(big.model), parameters_of(acc.model)
    moved = max((p_big[k] - v).abs().max().item()
                for k, v in parameters_of(start).items())
    assert moved > 1e-3, 'the update must move the parameters'
    _assert_close(p_acc, p_big)


def test_accumulation_steps_only_at_cycle_end(tmp_path):
    runner, _ = _train(
        toy_cfg(tmp_path, batch_size=2, max_iters=3, accum=4, dataset_size=6))
    start = Runner.from_cfg(toy_cfg(tmp_path / 'start')).model
    # 3 of 4 iterations: mmengine steps at the last iteration (max_iters)
    # with the loss divided by the remainder 3, i.e. one batch of 6.
    big, _ = _train(
        toy_cfg(tmp_path / 'big', batch_size=6, max_iters=1, dataset_size=6))
    _assert_close(parameters_of(runner.model), parameters_of(big.model))
    assert any((parameters_of(runner.model)[k] - v).abs().max() > 0
               for k, v in parameters_of(start).items())


def _stop_at(runner_cfg, iteration):
    # Stops the loop after the checkpoint of that iteration, as an
    # interruption would.
    runner_cfg.custom_hooks = [
        dict(type='StopAfterHook', after_iter=iteration)
    ]
    return runner_cfg


@pytest.mark.parametrize('runner_cls, exact', [
    (None, True),  # PluginRunner: AccumulationResumeHook keeps the grads
    (Runner, False),  # mmengine drops the partial cycle's gradients
])
def test_resume_inside_accumulation_cycle(tmp_path, runner_cls, exact):
    kwargs = dict(batch_size=2, max_iters=8, accum=4, dataset_size=16)
    full, _ = _train(toy_cfg(tmp_path / 'full', **kwargs), runner_cls)

    work = tmp_path / 'cut'
    first = _stop_at(
        toy_cfg(work, **kwargs,
                default_hooks=dict(
                    checkpoint=dict(type='CheckpointHook', interval=6,
                                    by_epoch=False))), 6)
    _train(first, runner_cls)
    assert (work / 'iter_6.pth').is_file()
    ckpt = torch.load(work / 'iter_6.pth', map_location='cpu',
                      weights_only=False)
    assert ('accumulated_grads' in ckpt) == exact

    second = toy_cfg(work, **kwargs, resume=True,
                     load_from=str(work / 'iter_6.pth'))
    resumed, logs = _train(second, runner_cls)
    assert resumed.iter == 8
    if exact:
        _assert_close(parameters_of(resumed.model), parameters_of(full.model))
        assert any('restored the gradients of 2 iteration(s)' in m
                   for m in logs.messages)
    else:
        diff = max((parameters_of(resumed.model)[k] - v).abs().max().item()
                   for k, v in parameters_of(full.model).items())
        assert diff > 1e-5


def test_resume_hook_registered_only_with_accumulation(tmp_path):
    with_acc = RUNNERS.build(toy_cfg(tmp_path / 'a', accum=2))
    without = RUNNERS.build(toy_cfg(tmp_path / 'b', accum=1))
    assert [type(h) for h in with_acc.hooks].count(
        AccumulationResumeHook) == 1
    assert AccumulationResumeHook not in [type(h) for h in without.hooks]


@pytest.mark.parametrize('counts', [0, -1, 2.5, True])
def test_resume_hook_rejects_bad_counts(counts):
    with pytest.raises(ValueError, match='accumulative_counts must be a '
                       'positive integer'):
        AccumulationResumeHook(counts)


@pytest.mark.parametrize('batch_norm, accum, warned', [
    (True, 4, True),
    (True, 1, False),
    (False, 4, False),
])
def test_batchnorm_warning_once_at_start(tmp_path, batch_norm, accum,
                                         warned):
    cfg = toy_cfg(tmp_path, batch_norm=batch_norm, accum=accum, max_iters=8)
    runner, logs = _train(cfg)
    ours = [r for r in logs.records
            if 'BatchNorm layer(s) (e.g. norm)' in r.getMessage()]
    assert len(ours) == (1 if warned else 0)
    if warned:
        assert ours[0].levelname == 'WARNING'
        assert 'x4' in ours[0].getMessage()
        assert 'normalise over 2 samples per GPU' in ours[0].getMessage()


def test_warn_accumulation_with_batchnorm_function(tmp_path):
    model = Runner.from_cfg(toy_cfg(tmp_path, batch_norm=True)).model
    cfg = dict(optim_wrapper=dict(accumulative_counts=2),
               train_dataloader=dict(batch_size=3))
    with collect_logs() as logs:
        assert warn_accumulation_with_batchnorm(model, cfg) is True
    assert 'normalise over 3 samples per GPU' in logs.messages[-1]
    assert warn_accumulation_with_batchnorm(
        model, dict(optim_wrapper=dict(accumulative_counts=1))) is False


@pytest.mark.parametrize('presets', [['bf16'], ['grad_accum_x2', 'bf16']])
def test_bf16_trains_on_cpu(tmp_path, presets):
    cfg = toy_cfg(tmp_path, max_iters=4)
    apply_presets(cfg, presets)
    check_amp_supported(cfg)  # must not raise on CPU
    runner, logs = _train(cfg)
    model = runner.model
    assert type(runner.optim_wrapper).__name__ == 'BF16AmpOptimWrapper'
    # Linear layers ran under bfloat16 autocast on the CPU.
    assert model.hidden_dtypes and set(model.hidden_dtypes) == {
        torch.bfloat16
    }
    start = Runner.from_cfg(toy_cfg(tmp_path / 'start')).model
    assert all(p.dtype == torch.float32 for p in model.parameters())
    assert any((p - q).abs().max() > 0 for p, q in zip(
        model.parameters(), start.parameters()))
    losses = [r.getMessage() for r in logs.records
              if 'loss:' in r.getMessage()]
    assert losses
    for message in losses:
        value = float(message.split('loss: ')[1].split()[0])
        assert math.isfinite(value)


def test_bf16_checkpoint_roundtrip_accepts_amp_state(tmp_path):
    cfg = toy_cfg(tmp_path, max_iters=2)
    apply_presets(cfg, ['bf16'])
    runner, _ = _train(cfg)
    state = runner.optim_wrapper.state_dict()
    assert 'loss_scaler' not in state
    state['loss_scaler'] = {'scale': 512.0}  # as AmpOptimWrapper saves
    runner.optim_wrapper.load_state_dict(state)


@requires_no_cuda
@pytest.mark.parametrize('amp, preset', [
    (True, "preset 'fp16_dynamic'"),
    ('fp16', "preset 'fp16_dynamic'"),
    ('fp16-static', "preset 'fp16'"),
])
def test_fp16_stops_at_start_without_gpu(tmp_path, monkeypatch, amp,
                                         preset):
    # The alternatives on a CPU without native bfloat16:
    # tests/engine/test_cpu_bf16.py.
    monkeypatch.setenv(CPU_BF16_ENV, 'native')
    cfg = toy_cfg(tmp_path)
    apply_train_flags(cfg, amp=amp)
    with pytest.raises(RuntimeError,
                       match=preset + r".*--amp bf16 \(preset 'bf16'.*"
                       '--amp fp32'):
        check_amp_supported(cfg)
    # The runner refuses the same way before mmengine's assertion.
    runner = RUNNERS.build(cfg)
    with pytest.raises(RuntimeError, match='AMP check: ' + preset):
        runner.train()


@requires_no_cuda
@pytest.mark.parametrize('cpu_bf16, alternative', [
    ('native', r"use --amp bf16 \(preset 'bf16'"),
    ('emulated', 'train in float32 with --amp fp32'),
])
def test_amp_wrapper_with_bf16_dtype_points_to_preset(tmp_path, monkeypatch,
                                                      cpu_bf16, alternative):
    monkeypatch.setenv(CPU_BF16_ENV, cpu_bf16)
    cfg = toy_cfg(tmp_path)
    cfg.optim_wrapper.update(type='AmpOptimWrapper', dtype='bfloat16')
    with pytest.raises(RuntimeError, match=alternative):
        check_amp_supported(cfg)


@requires_cuda
@pytest.mark.parametrize('presets', [['fp16'], ['fp16_dynamic'],
                                     ['grad_accum_x4', 'fp16']])
def test_fp16_trains_on_gpu(tmp_path, presets):
    cfg = toy_cfg(tmp_path, max_iters=4)
    apply_presets(cfg, presets)
    check_amp_supported(cfg)
    runner, _ = _train(cfg)
    assert runner.model.hidden_dtypes[-1] == torch.float16
    assert all(torch.isfinite(p).all() for p in runner.model.parameters())
