"""Start-up checks for mixed precision and gradient accumulation.

mmengine's ``AmpOptimWrapper`` asserts deep inside the Runner when no GPU is
present; :func:`check_amp_supported` says the same before anything is built,
naming the preset and the alternatives that run on this machine (bfloat16
only where the CPU runs it natively). :func:`warn_bf16_on_cpu` measures what
emulated bfloat16 would cost before the first iteration.
"""
import logging
from typing import Dict, Optional, Union

import torch
from mmengine.config import Config
from mmengine.device import (is_cuda_available, is_mlu_available,
                             is_musa_available, is_npu_available)
from mmengine.logging import print_log
from torch import nn
from torch.nn.modules.batchnorm import _BatchNorm

from ..config.optim_wrapper import (BF16_TYPES, DEVICE_AMP_TYPES,
                                    accumulative_counts_of, precision_name,
                                    precision_of, wrappers_of)
from ..failures.exceptions import AmpUnsupportedError
from .cpu_bf16 import (cpu_bf16_native, measure_bf16_slowdown,
                       native_check_source)


def _accelerator_available() -> bool:
    return (is_cuda_available() or is_npu_available() or is_mlu_available()
            or is_musa_available())


def check_amp_supported(cfg: Union[Config, Dict]) -> None:
    """Stop early if the config's mixed precision cannot run here.

    Call right after loading the config; :class:`PluginRunner` calls it
    again before building the optimizer wrapper.

    Args:
        cfg (Config | dict): Config holding ``optim_wrapper``.

    Raises:
        AmpUnsupportedError: If float16 AMP (``AmpOptimWrapper``) is
            configured and no CUDA (or NPU/MLU/MUSA) device is available, or
            bfloat16 is configured on a CUDA GPU without bfloat16 support.
    """
    optim_wrapper = cfg.get('optim_wrapper')
    if not optim_wrapper:
        return
    for wrapper in wrappers_of(optim_wrapper):
        wrapper_type = wrapper.get('type', 'OptimWrapper')
        name = precision_name(wrapper)
        if wrapper_type in DEVICE_AMP_TYPES and \
                not _accelerator_available():
            if wrapper.get('dtype') in ('bfloat16', torch.bfloat16):
                needs = ('mmengine\'s AmpOptimWrapper needs a GPU even for '
                         'bfloat16')
            else:
                needs = 'float16 autocast needs a GPU'
            raise AmpUnsupportedError(
                f'AMP check: {name} sets optim_wrapper.type='
                f'{wrapper_type!r}, which needs a CUDA GPU, but '
                'torch.cuda.is_available() is False on this machine; '
                f'{needs}: {cpu_precision_fix()}.')
        if wrapper_type in BF16_TYPES and is_cuda_available() and \
                not torch.cuda.is_bf16_supported():
            raise AmpUnsupportedError(
                f'AMP check: {name} needs bfloat16, which this GPU '
                f'({torch.cuda.get_device_name()}) does not support (Ampere '
                "or newer does); use preset 'fp16_dynamic' (--amp fp16) or "
                'no AMP preset.')


def cpu_precision_fix() -> str:
    """What to train with on this CPU-only machine instead of float16.

    bfloat16 is named only where the CPU runs it natively; elsewhere it
    would be about 150x slower than float32.
    """
    if cpu_bf16_native():
        return ("use --amp bf16 (preset 'bf16'; this CPU runs bfloat16 "
                'natively) or --amp fp32 (float32, whatever the config '
                'sets)')
    return ('train in float32 with --amp fp32 (it overrides the config\'s '
            'AMP settings), or drop the AMP preset / 0.x fp16 key; this CPU '
            'has no native bfloat16 (no AVX512-BF16 / AMX), where bfloat16 '
            'autocast runs about 150x slower than float32')


def _bf16_on_cpu(cfg: Union[Config, Dict]) -> bool:
    return not _accelerator_available() and any(
        precision_of(w) == 'bfloat16'
        for w in wrappers_of(cfg.get('optim_wrapper')))


def bf16_cpu_slowdown(model: nn.Module, cfg: Union[Config,
                                                   Dict]) -> Optional[str]:
    """The slowdown of bfloat16 training on a CPU without native bfloat16.

    Args:
        model (nn.Module): The model, built on the CPU.
        cfg (Config | dict): Config holding ``optim_wrapper``.

    Returns:
        str | None: The measured slowdown and the fix, one line; None when
        the config trains in another precision, an accelerator is present
        or the CPU runs bfloat16 natively.
    """
    if not _bf16_on_cpu(cfg) or cpu_bf16_native():
        return None
    measured = measure_bf16_slowdown(model)
    numbers = measured.describe() if measured is not None else \
        'the model has no Conv2d / Linear layer to time'
    return ('bfloat16 on this CPU is emulated (no AVX512-BF16 / AMX; '
            f'{native_check_source()}): {numbers}. Fix: train in '
            'float32 with --amp fp32, or train on a GPU or a CPU with '
            'AVX512-BF16 / AMX')


def warn_bf16_on_cpu(model: nn.Module, cfg: Union[Config, Dict]) -> bool:
    """Warn once, before the first iteration, when bfloat16 autocast would
    run emulated on this CPU, with the slowdown measured on the model.

    Args:
        model (nn.Module): The model, built on the CPU.
        cfg (Config | dict): Config holding ``optim_wrapper``.

    Returns:
        bool: True if a warning was logged.
    """
    message = bf16_cpu_slowdown(model, cfg)
    if message is None:
        return False
    print_log(f'AMP check: {message}.', logger='current',
              level=logging.WARNING)
    return True


def warn_accumulation_with_batchnorm(model: nn.Module,
                                     cfg: Union[Config, Dict]) -> bool:
    """Warn once if gradients are accumulated through BatchNorm layers.

    BatchNorm normalises over the samples of one forward pass, so with
    accumulation its statistics come from the per-GPU batch, not from the
    batch an update sees; results can differ from a truly larger batch.

    Args:
        model (nn.Module): The model (wrapped or not).
        cfg (Config | dict): Config holding ``optim_wrapper`` and, for the
            message, ``train_dataloader.batch_size``.

    Returns:
        bool: True if a warning was logged.
    """
    counts = accumulative_counts_of(cfg) or 1
    if counts <= 1:
        return False
    norms = [name for name, module in model.named_modules()
             if isinstance(module, _BatchNorm)]
    if not norms:
        return False
    batch = (cfg.get('train_dataloader') or {}).get('batch_size', '?')
    sync = [name for name, module in model.named_modules()
            if isinstance(module, nn.SyncBatchNorm)]
    over = 'the batch of all GPUs (SyncBatchNorm)' if sync and len(
        sync) == len(norms) else f'{batch} samples per GPU'
    print_log(
        f'gradient accumulation x{counts} with {len(norms)} BatchNorm '
        f'layer(s) (e.g. {norms[0]}): they normalise over {over}, not over '
        f'the {counts}x larger batch each update sees, so results can differ '
        'slightly from training with that batch. Prefer a larger per-GPU '
        'batch when memory allows; with several GPUs, --cfg-options '
        "sync_bn=torch makes BatchNorm statistics span all GPUs.",
        logger='current',
        level=logging.WARNING)
    return True
