"""The fallbacks of torch APIs newer than torch 2.1 give what the API gives,
on the torch installed (2.1.2 and 2.13 in CI)."""
import math

import pytest
import torch
from packaging.version import Version

from projects.mmdet3d_plugin.compat import torch_api
from projects.mmdet3d_plugin.compat.torch_api import (_total_norm_before_2_6,
                                                      nccl_env, total_norm)


def _gradients(seed: int):
    """Tensors of several sizes and dtypes, as a model's gradients are."""
    gen = torch.Generator().manual_seed(seed)
    tensors = [torch.randn(shape, generator=gen) * scale
               for shape, scale in (((64, 3, 3, 3), 1e-3), ((64, ), 10.0),
                                    ((128, 64), 1.0), ((1, ), 1e4),
                                    ((7, 5, 3), 0.1))]
    tensors.append(torch.randn(33, generator=gen).double())
    tensors.append(torch.randn(9, generator=gen).half())
    return tensors


def _reference_norm(tensors, norm_type):
    """torch's own total norm on this torch: ``get_total_norm`` from 2.6,
    the norm ``clip_grad_norm_`` returns before (the same computation; an
    infinite ``max_norm`` leaves the copies' values as they were)."""
    if hasattr(torch.nn.utils, 'get_total_norm'):
        return torch.nn.utils.get_total_norm(tensors, norm_type)
    params = [torch.nn.Parameter(torch.zeros_like(t)) for t in tensors]
    for param, tensor in zip(params, tensors):
        param.grad = tensor.clone()
    return torch.nn.utils.clip_grad_norm_(params, math.inf, norm_type)


@pytest.mark.parametrize('norm_type', [2.0, 1.0, math.inf])
@pytest.mark.parametrize('seed', [0, 1, 2])
def test_total_norm_is_torchs_bit_for_bit(seed, norm_type):
    tensors = _gradients(seed)
    expected = _reference_norm(tensors, norm_type)
    for got in (total_norm(tensors, norm_type),
                _total_norm_before_2_6(tensors, norm_type)):
        assert got.dtype == expected.dtype and got.shape == ()
        assert got.item() == expected.item()  # the same bits, not close


@pytest.mark.parametrize('bad', [math.inf, math.nan])
def test_total_norm_of_a_non_finite_gradient_is_not_finite(bad):
    tensors = _gradients(3)
    tensors[2][5, 7] = bad
    for got in (total_norm(tensors), _total_norm_before_2_6(tensors, 2.0)):
        assert not math.isfinite(got.item())
    expected = _reference_norm(tensors, 2.0).item()
    assert math.isnan(got.item()) == math.isnan(expected)


def test_total_norm_of_nothing_and_of_one_tensor():
    assert total_norm([]).item() == 0.0
    assert _total_norm_before_2_6([], 2.0).item() == 0.0
    one = torch.tensor([3.0, 4.0])
    assert total_norm(one).item() == 5.0
    assert _total_norm_before_2_6(one, 2.0).item() == 5.0


def test_the_version_gates_follow_the_installed_torch():
    version = torch_api.TORCH_VERSION
    assert str(version) == torch.__version__.split('+')[0]
    from projects.mmdet3d_plugin.compat.stacks import TESTED_STACKS
    assert version >= min(Version(s.torch) for s in TESTED_STACKS)
    assert torch_api.has_cpu_grad_scaler() == (version.release >= (2, 3))
    assert hasattr(torch.nn.utils, 'get_total_norm') == (
        version.release >= (2, 6))
    prefix = 'TORCH_NCCL_' if version.release >= (2, 2) else 'NCCL_'
    assert nccl_env('ASYNC_ERROR_HANDLING') == \
        prefix + 'ASYNC_ERROR_HANDLING'


def test_gpu_amp_names_exist_on_this_torch():
    """What the fp16 / bf16 presets and --amp reach on a GPU, read on the
    installed torch where no GPU runs them: the GradScaler mmengine's
    AmpOptimWrapper builds (torch.cuda.amp.GradScaler on 2.1, 2.13's
    deprecated alias of torch.amp.GradScaler('cuda')) takes every loss_scale
    argument the config check lets through, and the autocast and memory
    calls exist."""
    import inspect

    from mmengine.optim.optimizer import amp_optimizer_wrapper

    from projects.mmdet3d_plugin.config.optim_wrapper import \
        _GRAD_SCALER_ARGS
    scaler = amp_optimizer_wrapper.GradScaler
    assert scaler is torch.cuda.amp.GradScaler
    parameters = inspect.signature(scaler.__init__).parameters
    assert set(_GRAD_SCALER_ARGS) <= set(parameters), parameters
    for name in ('is_bf16_supported', 'max_memory_allocated',
                 'reset_peak_memory_stats', 'get_device_name'):
        assert callable(getattr(torch.cuda, name)), name
    with torch.autocast(device_type='cpu', dtype=torch.bfloat16):
        out = torch.nn.functional.linear(torch.ones(2, 3), torch.ones(4, 3))
    assert out.dtype == torch.bfloat16


def test_a_checkpoint_load_says_when_it_is_not_weights_only(caplog):
    """torch < 2.6 loads any pickle by default: a run that loads a
    checkpoint there says so in one line; torch >= 2.6 says nothing."""
    from mmengine.logging import MMLogger

    from projects.mmdet3d_plugin.cli.run import note_checkpoint_loading
    from projects.mmdet3d_plugin.compat.checkpoints import weights_only_note
    note = weights_only_note()
    if torch_api.torch_at_least('2.6'):
        assert note is None
    else:
        assert note == (
            f'torch {torch.__version__} loads checkpoints with pickle '
            '(weights-only loading, which runs no code from the file, is '
            "torch's default from 2.6): load only checkpoints you trust")
    logger = MMLogger.get_instance('test_weights_only_note')
    logger.addHandler(caplog.handler)
    try:
        with caplog.at_level('INFO'):
            note_checkpoint_loading(False)
            assert caplog.records == []
            note_checkpoint_loading(True)
    finally:
        logger.removeHandler(caplog.handler)
    assert [r.getMessage() for r in caplog.records] == (
        [] if note is None else [note])
