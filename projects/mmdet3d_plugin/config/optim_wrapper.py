"""The one reading of an ``optim_wrapper`` config: its wrappers, their
accumulation count and their precision, and the one table of wrapper types
by what they do (``*_TYPES``).

A config's ``optim_wrapper`` is either one wrapper (``type`` / ``optimizer``
keys) or, for models with several optimizers, a dict of wrappers built into
an ``OptimWrapperDict``. Presets, the AMP checks, the runner and the doctor
all read it through these functions.
"""
from typing import Dict, List, Optional, Union

import torch
from mmengine.config import Config

# The optimizer wrapper types, each bare and with its registry scope: the
# one table that the presets, the AMP checks and the doctor read.
#: mmengine's float32 wrapper.
FP32_TYPES = ('OptimWrapper', 'mmengine.OptimWrapper')
#: Wrapper types of float16 / bfloat16 autocast on a CUDA-like device
#: (mmengine's ``AmpOptimWrapper`` asserts on CPU).
DEVICE_AMP_TYPES = ('AmpOptimWrapper', 'mmengine.AmpOptimWrapper')
#: mmengine's wrapper of NVIDIA apex's mixed precision.
APEX_TYPES = ('ApexOptimWrapper', 'mmengine.ApexOptimWrapper')
#: The plugin's bfloat16 wrapper, which also runs on CPU.
BF16_TYPES = ('BF16AmpOptimWrapper', 'mmdet3d.BF16AmpOptimWrapper')
#: Wrapper types that autocast; ``--amp fp32`` replaces them by
#: ``OptimWrapper``.
AUTOCAST_TYPES = DEVICE_AMP_TYPES + APEX_TYPES + BF16_TYPES
#: Wrapper types whose ``loss_scale`` is checked (other custom types are
#: left to their own validation).
LOSS_SCALE_TYPES = DEVICE_AMP_TYPES + APEX_TYPES
#: Wrapper types that take no ``loss_scale``.
NO_LOSS_SCALE_TYPES = FP32_TYPES + BF16_TYPES


def is_multi_wrapper(optim_wrapper: Dict) -> bool:
    """Whether an ``optim_wrapper`` config holds several wrappers (one per
    optimizer, built into an ``OptimWrapperDict``)."""
    return ('optimizer' not in optim_wrapper and 'type' not in optim_wrapper
            and any(
                isinstance(v, dict) and 'optimizer' in v
                for v in optim_wrapper.values()))


def wrappers_of(optim_wrapper: Optional[Dict]) -> List[Dict]:
    """The single wrapper configs inside an ``optim_wrapper`` config."""
    if not optim_wrapper:
        return []
    if not is_multi_wrapper(optim_wrapper):
        return [optim_wrapper]
    return [w for w in optim_wrapper.values() if isinstance(w, dict)]


def first_wrapper(cfg: Union[Config, Dict]) -> Optional[Dict]:
    """The wrapper of a single-wrapper config, or the first of several;
    None without ``optim_wrapper``."""
    wrappers = wrappers_of(cfg.get('optim_wrapper'))
    return wrappers[0] if wrappers else None


def accumulative_counts_of(cfg: Union[Config, Dict]) -> Optional[int]:
    """The largest ``accumulative_counts`` of the config's wrappers.

    Args:
        cfg (Config | dict): Config holding ``optim_wrapper``.

    Returns:
        int | None: The count (1 if unset), or None without optim_wrapper.
    """
    wrappers = wrappers_of(cfg.get('optim_wrapper'))
    if not wrappers:
        return None
    return max(int(w.get('accumulative_counts', 1)) for w in wrappers)


def precision_of(optim_wrapper: Dict) -> str:
    """'float32', 'float16' or 'bfloat16' for one wrapper config."""
    kind = optim_wrapper.get('type', 'OptimWrapper')
    dtype = optim_wrapper.get('dtype')
    if kind in BF16_TYPES or dtype in ('bfloat16', torch.bfloat16):
        return 'bfloat16'
    if kind in DEVICE_AMP_TYPES or dtype in ('float16', torch.float16):
        return 'float16'
    return 'float32'


def precision_name(optim_wrapper: Dict) -> str:
    """The preset / flag one wrapper config corresponds to, for messages."""
    wrapper_type = optim_wrapper.get('type', 'OptimWrapper')
    dtype = optim_wrapper.get('dtype')
    if wrapper_type in BF16_TYPES:
        return "preset 'bf16' (--amp bf16)"
    if wrapper_type in DEVICE_AMP_TYPES:
        if dtype in ('bfloat16', torch.bfloat16):
            return "AmpOptimWrapper with dtype='bfloat16'"
        loss_scale = optim_wrapper.get('loss_scale', 'dynamic')
        if loss_scale == 'dynamic':
            return "preset 'fp16_dynamic' (--amp / --amp fp16)"
        if loss_scale == 512.:
            return ("preset 'fp16' (--amp fp16-static, or 0.x "
                    'fp16=dict(loss_scale=512.))')
        return f'AmpOptimWrapper (loss_scale={loss_scale!r})'
    return f'optim_wrapper.type={wrapper_type!r}'
