"""The one reading of an ``optim_wrapper`` config: its wrappers, their
accumulation count and their precision, the one table of wrapper types
by what they do (``*_TYPES``), and the check of its accumulation and
precision keys (:func:`validate_optim_wrapper`).

A config's ``optim_wrapper`` is either one wrapper (``type`` / ``optimizer``
keys) or, for models with several optimizers, a dict of wrappers built into
an ``OptimWrapperDict``. Presets, the AMP checks, the runner and the doctor
all read it through these functions.
"""
import numbers
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

# torch ``GradScaler`` arguments a dict ``loss_scale`` may hold.
_GRAD_SCALER_ARGS = ('init_scale', 'growth_factor', 'backoff_factor',
                     'growth_interval', 'enabled')
# The ``dtype`` names a wrapper may have.
_VALID_DTYPES = ('float16', 'bfloat16', 'float32', 'float64')


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


def validate_optim_wrapper(cfg: Union[Config, Dict],
                           where: str = 'optim_wrapper') -> None:
    """Check the accumulation and precision keys of ``cfg.optim_wrapper``.

    Converts an integer ``loss_scale`` to float in place (mmengine's
    ``AmpOptimWrapper`` raises TypeError on ``loss_scale=512``).

    Args:
        cfg (Config | dict): Config holding ``optim_wrapper``. A config
            without it passes.
        where (str): Context prefix of error messages, e.g. the preset or
            flag that set the values. Defaults to 'optim_wrapper'.

    Raises:
        ValueError: If ``accumulative_counts`` is not a positive integer, or
            ``loss_scale`` is not a positive number, 'dynamic' or a dict of
            ``GradScaler`` arguments, or ``dtype`` is unknown.
        TypeError: If the values have the wrong type.
    """
    optim_wrapper = cfg.get('optim_wrapper')
    if not optim_wrapper:
        return
    if is_multi_wrapper(optim_wrapper):
        # Several wrappers (OptimWrapperDict): check each one.
        for name, sub in optim_wrapper.items():
            if isinstance(sub, dict):
                validate_optim_wrapper(
                    dict(optim_wrapper=sub), f'{where}.{name}')
        return

    counts = optim_wrapper.get('accumulative_counts', 1)
    if (isinstance(counts, bool) or not isinstance(counts, numbers.Integral)
            or counts < 1):
        raise ValueError(
            f'{where}: optim_wrapper.accumulative_counts must be a positive '
            f'integer (1 = no accumulation), got {counts!r}. Use a preset '
            "'grad_accum_x2'/'grad_accum_x4'/'grad_accum_x8' or --accum N "
            'with N >= 1.')

    wrapper_type = optim_wrapper.get('type', 'OptimWrapper')
    if 'loss_scale' in optim_wrapper:
        if wrapper_type in NO_LOSS_SCALE_TYPES:
            raise ValueError(
                f'{where}: optim_wrapper.loss_scale is only used by '
                'AmpOptimWrapper (float16), but optim_wrapper.type is '
                f'{wrapper_type!r}. Use preset \'fp16\' or \'fp16_dynamic\' '
                '(which set the type), or remove loss_scale.')
        if wrapper_type in LOSS_SCALE_TYPES:
            optim_wrapper['loss_scale'] = _checked_loss_scale(
                optim_wrapper['loss_scale'], where)

    dtype = optim_wrapper.get('dtype')
    if dtype is not None and isinstance(dtype, str) and \
            dtype not in _VALID_DTYPES:
        raise ValueError(
            f'{where}: optim_wrapper.dtype must be one of {_VALID_DTYPES} or '
            f"None, got {dtype!r}. Use preset 'fp16' or 'bf16'.")


def _checked_loss_scale(loss_scale, where: str):
    """Validate one ``loss_scale`` value and return it (ints as floats)."""
    fix = ("use a positive number (static scale, e.g. 512.), 'dynamic', "
           'or a dict of torch GradScaler arguments, e.g. '
           'dict(init_scale=512., growth_interval=2000)')
    if isinstance(loss_scale, str):
        if loss_scale != 'dynamic':
            raise ValueError(
                f'{where}: optim_wrapper.loss_scale={loss_scale!r} is not '
                f'valid; {fix}.')
        return loss_scale
    if isinstance(loss_scale, dict):
        unknown = sorted(set(loss_scale) - set(_GRAD_SCALER_ARGS))
        if unknown:
            raise ValueError(
                f'{where}: optim_wrapper.loss_scale has unknown GradScaler '
                f'arguments {unknown}; allowed are {list(_GRAD_SCALER_ARGS)}.')
        init_scale = loss_scale.get('init_scale', 2.**16)
        if (isinstance(init_scale, bool)
                or not isinstance(init_scale, numbers.Real)
                or init_scale <= 0):
            raise ValueError(
                f'{where}: optim_wrapper.loss_scale.init_scale must be a '
                f'positive number, got {init_scale!r}.')
        out = dict(loss_scale)
        if 'init_scale' in out:
            out['init_scale'] = float(init_scale)
        return out
    if isinstance(loss_scale, bool) or not isinstance(loss_scale,
                                                      numbers.Real):
        raise TypeError(
            f'{where}: optim_wrapper.loss_scale must be a number, '
            f"'dynamic' or a dict, got {loss_scale!r} "
            f'({type(loss_scale).__name__}); {fix}.')
    if not loss_scale > 0:
        raise ValueError(
            f'{where}: optim_wrapper.loss_scale must be positive, got '
            f'{loss_scale!r}; {fix}.')
    return float(loss_scale)
