"""Precision that fits the machine: bfloat16 only where the CPU runs it
natively, ``--amp fp32`` over any config, and the slowdown measured on the
model before the first iteration.

Both branches of the native check are forced with
``MMDET3D_PLUGIN_CPU_BF16`` (``native`` / ``emulated``), so no test depends
on this CPU's bfloat16 speed.
"""
import logging

import pytest
import torch
from mmengine.config import Config
from mmengine.hooks import Hook
from torch import nn

import projects.mmdet3d_plugin  # noqa: F401  registers PluginRunner
from tests.helpers.gpu import requires_no_cuda
from mmdet3d.registry import HOOKS, RUNNERS
from tests.helpers.precision_toys import collect_logs, toy_cfg
from projects.mmdet3d_plugin.config.legacy.translator import translate_legacy
from projects.mmdet3d_plugin.config.presets import force_float32
from tests.helpers.presets import apply_presets, apply_train_flags
from projects.mmdet3d_plugin.constants import CPU_BF16_ENV
from projects.mmdet3d_plugin.engine.amp import (AmpUnsupportedError,
                                                bf16_cpu_slowdown,
                                                check_amp_supported)
from projects.mmdet3d_plugin.engine.cpu_bf16 import (cpu_bf16_native,
                                                     measure_bf16_slowdown)


@pytest.fixture(params=['native', 'emulated'])
def cpu_bf16(request, monkeypatch):
    """This CPU taken as running bfloat16 natively, or emulating it."""
    monkeypatch.setenv(CPU_BF16_ENV, request.param)
    return request.param


@pytest.fixture
def emulated(monkeypatch):
    monkeypatch.setenv(CPU_BF16_ENV, 'emulated')


def test_native_check_is_forced_either_way(monkeypatch):
    monkeypatch.setenv(CPU_BF16_ENV, 'native')
    assert cpu_bf16_native() is True
    monkeypatch.setenv(CPU_BF16_ENV, 'emulated')
    assert cpu_bf16_native() is False
    monkeypatch.delenv(CPU_BF16_ENV)
    assert cpu_bf16_native() == bool(
        torch.ops.mkldnn._is_mkldnn_bf16_supported())
    monkeypatch.setenv(CPU_BF16_ENV, 'fast')
    with pytest.raises(ValueError, match=CPU_BF16_ENV + r"='fast'.*native"):
        cpu_bf16_native()


@requires_no_cuda
@pytest.mark.parametrize('amp', ['fp16', 'fp16-static'])
def test_fp16_error_names_what_runs_on_this_cpu(tmp_path, cpu_bf16, amp):
    cfg = toy_cfg(tmp_path)
    apply_train_flags(cfg, amp=amp)
    with pytest.raises(AmpUnsupportedError) as info:
        check_amp_supported(cfg)
    message = str(info.value)
    assert 'needs a CUDA GPU' in message
    assert '--amp fp32' in message
    if cpu_bf16 == 'native':
        assert "--amp bf16 (preset 'bf16'; this CPU runs bfloat16 " \
            'natively)' in message
    else:
        assert '--amp bf16' not in message and "'bf16'" not in message
        assert 'no native bfloat16' in message


class _TwoConvs(nn.Module):

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 3)
        self.body = nn.Sequential(nn.Conv2d(16, 32, 3), nn.Conv2d(32, 8, 1))


def test_slowdown_is_measured_on_the_models_first_convolution():
    measured = measure_bf16_slowdown(_TwoConvs())
    assert measured.layer.startswith('body.0 (Conv2d 16->32, 3x3, on 1x16x')
    assert measured.float32_s > 0 and measured.bfloat16_s > 0
    assert 'x the float32 time)' in measured.describe()
    linear = measure_bf16_slowdown(nn.Sequential(nn.Linear(4, 8)))
    assert linear.layer.startswith('0 (Linear 4->8, ')
    assert measure_bf16_slowdown(nn.Sequential(nn.ReLU())) is None


def _bf16_warnings(logs):
    return [r.getMessage() for r in logs.records
            if r.levelno >= logging.WARNING and 'bfloat16 on this CPU is '
            'emulated' in r.getMessage()]


@requires_no_cuda
def test_bf16_on_an_emulating_cpu_warns_before_the_first_iteration(
        tmp_path, emulated):
    cfg = toy_cfg(tmp_path, max_iters=2,
                  custom_hooks=[dict(type='_IterationMarker')])
    apply_presets(cfg, ['bf16'])
    runner = RUNNERS.build(cfg)
    with collect_logs(runner.logger) as logs:
        runner.train()
    warnings = _bf16_warnings(logs)
    assert len(warnings) == 1, logs.messages
    assert 'measured on fc1 (Linear 4->8' in warnings[0]
    assert 'x the float32 time). Fix: train in float32 with --amp fp32' \
        in warnings[0]
    messages = logs.messages
    first_iteration = messages.index('iteration 1 starts')
    assert messages.index(warnings[0]) < first_iteration


@HOOKS.register_module()
class _IterationMarker(Hook):
    """Logs a line when an iteration starts, to order the warnings."""

    def before_train_iter(self, runner, batch_idx, data_batch=None):
        runner.logger.info(f'iteration {runner.iter + 1} starts')


@requires_no_cuda
def test_bf16_on_a_native_cpu_does_not_warn(tmp_path, monkeypatch):
    monkeypatch.setenv(CPU_BF16_ENV, 'native')
    cfg = toy_cfg(tmp_path, max_iters=1)
    apply_presets(cfg, ['bf16'])
    runner = RUNNERS.build(cfg)
    with collect_logs(runner.logger) as logs:
        runner.train()
    assert _bf16_warnings(logs) == []
    assert bf16_cpu_slowdown(runner.model, cfg) is None


def test_fp32_flag_over_an_fp16_preset_trains_in_float32(tmp_path):
    cfg = toy_cfg(tmp_path, max_iters=2, presets=None)
    apply_presets(cfg, ['grad_accum_x2', 'fp16'])
    assert cfg.optim_wrapper.type == 'AmpOptimWrapper'
    apply_train_flags(cfg, amp='fp32')
    assert cfg.optim_wrapper.type == 'OptimWrapper'
    assert 'loss_scale' not in cfg.optim_wrapper
    assert cfg.optim_wrapper.accumulative_counts == 2  # kept
    runner = RUNNERS.build(cfg)
    runner.train()
    assert runner.iter == 2
    assert set(runner.model.hidden_dtypes) == {torch.float32}


def test_fp32_flag_over_a_translated_0x_fp16_key_and_eval_loops(tmp_path):
    cfg = toy_cfg(tmp_path, val_cfg=dict(fp16=True),
                  test_cfg=dict(type='TestLoop', fp16=True))
    cfg.optim_wrapper.pop('type')
    cfg.pop('optim_wrapper')
    cfg.optimizer = dict(type='SGD', lr=0.1)
    cfg.optimizer_config = dict(grad_clip=None)
    cfg.fp16 = dict(loss_scale=512.)
    cfg, _ = translate_legacy(cfg)
    assert cfg.optim_wrapper.type == 'AmpOptimWrapper'
    force_float32(cfg)
    assert cfg.optim_wrapper.type == 'OptimWrapper'
    assert 'loss_scale' not in cfg.optim_wrapper
    assert cfg.val_cfg.fp16 is False and cfg.test_cfg.fp16 is False


def test_fp32_flag_reaches_every_wrapper_of_several():
    cfg = Config(dict(optim_wrapper=dict(
        a=dict(type='BF16AmpOptimWrapper', dtype='bfloat16',
               optimizer=dict(type='SGD', lr=0.1)),
        b=dict(type='AmpOptimWrapper', loss_scale='dynamic',
               optimizer=dict(type='SGD', lr=0.1)))))
    force_float32(cfg)
    for name in 'ab':
        wrapper = cfg.optim_wrapper[name]
        assert wrapper.type == 'OptimWrapper'
        assert 'dtype' not in wrapper and 'loss_scale' not in wrapper
