"""Whether this CPU runs bfloat16 natively, and what it costs where not.

bfloat16 autocast on a CPU without AVX512-BF16 or AMX falls back to
emulation in oneDNN: a convolution runs about 150x slower than in float32
(measured on an AVX2 AMD EPYC: 0.083 s against 13.0 s for a 64->64 3x3
convolution on 1x64x256x256). :func:`cpu_bf16_native` is the one answer the
plugin uses; :func:`measure_bf16_slowdown` times one of the model's own
layers in both dtypes, in a fraction of a second.
"""
import os
import time
from dataclasses import dataclass
from typing import Optional, Tuple

import torch
from torch import nn

from ..constants import CPU_BF16_ENV

#: Values of :data:`~..constants.CPU_BF16_ENV` that force the answer.
FORCED = {'native': True, 'emulated': False}
#: Multiply-accumulates of the timed layer call: a 64->64 3x3 convolution
#: on 64x64, ~2 ms in float32, ~0.27 s in emulated bfloat16 (smaller calls
#: understate the slowdown: fixed costs dominate their float32 time).
TIMED_MACS = 64 * 64 * 9 * 64 * 64


def native_check_source() -> str:
    """What decided :func:`cpu_bf16_native`, for messages."""
    forced = os.environ.get(CPU_BF16_ENV, '').strip().lower()
    if forced:
        return f'{CPU_BF16_ENV}={forced}'
    return ('oneDNN: torch.ops.mkldnn._is_mkldnn_bf16_supported() is '
            f'{cpu_bf16_native()}')


def cpu_bf16_native() -> bool:
    """Whether this CPU runs bfloat16 natively (AVX512-BF16 or AMX).

    oneDNN's own check (``torch.ops.mkldnn._is_mkldnn_bf16_supported()``)
    decides; ``MMDET3D_PLUGIN_CPU_BF16=native`` or ``=emulated`` overrides
    it (the tests force either branch with it).

    Returns:
        bool: True where bfloat16 autocast runs at full speed on the CPU.

    Raises:
        ValueError: If the environment variable holds another value.
    """
    forced = os.environ.get(CPU_BF16_ENV, '').strip().lower()
    if forced:
        if forced not in FORCED:
            raise ValueError(
                f'{CPU_BF16_ENV}={forced!r}: expected one of {list(FORCED)}, '
                'or unset it to let oneDNN tell')
        return FORCED[forced]
    check = getattr(torch.ops.mkldnn, '_is_mkldnn_bf16_supported', None)
    return bool(check()) if check is not None else False


@dataclass
class Bf16Slowdown:
    """One layer timed in float32 and under bfloat16 autocast on the CPU.

    Args:
        layer (str): The layer's name in the model and what it is.
        float32_s (float): Best time of one call in float32.
        bfloat16_s (float): Best time of one call under bfloat16 autocast.
    """
    layer: str
    float32_s: float
    bfloat16_s: float

    @property
    def ratio(self) -> float:
        """How many times slower bfloat16 is."""
        return self.bfloat16_s / max(self.float32_s, 1e-9)

    def describe(self) -> str:
        """``measured on <layer>: float32 1.2 ms, bfloat16 autocast 190 ms
        (156x the float32 time)``."""
        return (f'measured on {self.layer}: float32 '
                f'{self.float32_s * 1e3:.1f} ms, bfloat16 autocast '
                f'{self.bfloat16_s * 1e3:.1f} ms ({self.ratio:.2g}x the '
                'float32 time)')


def _timed_layer(model: nn.Module) -> Optional[Tuple[str, nn.Module,
                                                     torch.Tensor]]:
    """The model's first dense convolution (else linear layer), and an
    input of about :data:`TIMED_MACS` multiply-accumulates for it."""
    linear = None
    for name, module in model.named_modules():
        if isinstance(module, nn.Conv2d):
            per_pixel = (module.in_channels * module.out_channels *
                         module.kernel_size[0] * module.kernel_size[1] //
                         module.groups)
            side = int(min(128, max(4, (TIMED_MACS / per_pixel)**0.5)))
            shape = (1, module.in_channels, side, side)
            on = 'x'.join(map(str, shape))
            what = (f'{name} (Conv2d {module.in_channels}->'
                    f'{module.out_channels}, {module.kernel_size[0]}x'
                    f'{module.kernel_size[1]}, on {on})')
            return what, module, torch.randn(shape)
        if linear is None and isinstance(module, nn.Linear):
            linear = name, module
    if linear is None:
        return None
    name, module = linear
    per_row = module.in_features * module.out_features
    rows = int(min(4096, max(8, TIMED_MACS // per_row)))
    what = (f'{name} (Linear {module.in_features}->{module.out_features}, '
            f'{rows} rows)')
    return what, module, torch.randn(rows, module.in_features)


def _best_time(layer: nn.Module, x: torch.Tensor, bf16: bool,
               repeats: int) -> float:
    best = float('inf')
    for _ in range(repeats):
        start = time.perf_counter()
        with torch.autocast('cpu', dtype=torch.bfloat16, enabled=bf16):
            layer(x)
        best = min(best, time.perf_counter() - start)
    return best


def measure_bf16_slowdown(model: nn.Module) -> Optional[Bf16Slowdown]:
    """Time one of the model's own layers in float32 and bfloat16.

    The first ``Conv2d`` (else ``Linear``) of the model, on the CPU, on a
    random input sized to take about 2 ms in float32; each dtype runs once
    to warm up, then the best of two float32 calls and one bfloat16 call
    count (about 0.6 s in all where bfloat16 is emulated). The model is
    not changed (no gradients, weights as they are).

    Args:
        model (nn.Module): The model (wrapped or not), on the CPU.

    Returns:
        Bf16Slowdown | None: The timings; None when the model has no such
        layer or its parameters are not on the CPU.
    """
    found = _timed_layer(getattr(model, 'module', model))
    if found is None:
        return None
    what, layer, x = found
    weight = getattr(layer, 'weight', None)
    if weight is None or weight.device.type != 'cpu':
        return None
    x = x.to(weight.dtype)
    with torch.no_grad():
        _best_time(layer, x, False, 1)
        float32 = _best_time(layer, x, False, 2)
        _best_time(layer, x, True, 1)
        bfloat16 = _best_time(layer, x, True, 1)
    return Bf16Slowdown(what, float32, bfloat16)
