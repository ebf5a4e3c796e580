"""Translate ``optimizer``, ``optimizer_config`` and ``fp16`` (0.x).

They become one ``optim_wrapper``: the optimizer (with ``paramwise_cfg`` and
``constructor``) goes to ``optim_wrapper.optimizer``, the optimizer hook's
``grad_clip`` to ``clip_grad``, its ``cumulative_iters`` (gradient
accumulation) to ``accumulative_counts``, and fp16 hooks or ``fp16`` to an
``AmpOptimWrapper`` with a float16 ``loss_scale``. A 1.x ``optim_wrapper``
from ``_base_`` is updated, not replaced.
"""
import copy
from typing import Dict

from .state import TranslationState, merge_or_replace

_OPTIMIZER_HOOKS = ('OptimizerHook', 'GradientCumulativeOptimizerHook',
                    'Fp16OptimizerHook', 'GradientCumulativeFp16OptimizerHook')


def translate_optimizer(state: TranslationState) -> None:
    """Rewrite ``optimizer``, ``optimizer_config`` and ``fp16``.

    Args:
        state (TranslationState): The translation in progress.

    Raises:
        ValueError: For an optimizer hook, fp16 key or hook key with no
            translation, or a hook without any optimizer.
    """
    cfg = state.cfg
    wrapper = copy.deepcopy(cfg.get('optim_wrapper')) or None
    touched = False
    if 'optimizer' in cfg:
        optimizer = state.pop('optimizer')
        if optimizer is not None:
            optimizer = dict(optimizer)
            wrapper = wrapper or dict(type='OptimWrapper')
            for key in ('paramwise_cfg', 'constructor'):
                if key in optimizer:
                    value = optimizer.pop(key)
                    wrapper[key] = value
                    state.row(f'optimizer.{key}', f'optim_wrapper.{key}',
                              value)
            wrapper['optimizer'] = merge_or_replace(
                wrapper.get('optimizer'), optimizer)
            state.row('optimizer', 'optim_wrapper.optimizer', optimizer)
            touched = True

    if 'optimizer_config' in cfg:
        hook = state.pop('optimizer_config')
        if hook is not None:
            wrapper = _require_wrapper(wrapper, 'optimizer_config')
            _optimizer_hook(state, dict(hook), wrapper)
            touched = True

    if 'fp16' in cfg:
        fp16 = state.pop('fp16')
        if fp16 is not None:
            wrapper = _require_wrapper(wrapper, 'fp16')
            fp16 = dict(fp16)
            unknown = sorted(set(fp16) - {'loss_scale'})
            if unknown:
                raise ValueError(
                    f'legacy config: fp16 has keys {unknown} that '
                    'mmengine has no place for; only fp16.loss_scale is '
                    "translated. Use presets = ['fp16'] (static 512) or "
                    "['fp16_dynamic'] instead.")
            _set_fp16(state, wrapper, fp16.get('loss_scale', 512.), 'fp16')
            touched = True
    if touched:
        cfg['optim_wrapper'] = wrapper


def _require_wrapper(wrapper, key: str) -> Dict:
    """``wrapper``, or a refusal naming ``key`` when there is none."""
    if wrapper is None:
        raise ValueError(
            f'legacy config: `{key}` needs an optimizer, but the config '
            'has neither `optimizer` (0.x) nor `optim_wrapper` (1.x). '
            'Add optimizer = dict(type=..., lr=...) or inherit a 1.x '
            'schedule that defines optim_wrapper.')
    return wrapper


def _set_fp16(state: TranslationState, wrapper: Dict, loss_scale,
              old: str) -> None:
    """Make ``wrapper`` an AmpOptimWrapper (float16) with ``loss_scale``."""
    if isinstance(loss_scale, int) and not isinstance(loss_scale, bool):
        loss_scale = float(loss_scale)
    wrapper['type'] = 'AmpOptimWrapper'
    wrapper['dtype'] = 'float16'
    wrapper['loss_scale'] = loss_scale
    state.row(old, "optim_wrapper.type='AmpOptimWrapper'",
              dict(loss_scale=loss_scale, dtype='float16'))


def _optimizer_hook(state: TranslationState, hook: Dict,
                    wrapper: Dict) -> None:
    """Fold the 0.x optimizer hook ``hook`` into ``wrapper``."""
    hook_type = hook.pop('type', 'OptimizerHook')
    rows_before = len(state.rows)
    if hook_type not in _OPTIMIZER_HOOKS:
        raise ValueError(
            f'legacy config: optimizer_config.type={hook_type!r} has no '
            f'translation (known: {list(_OPTIMIZER_HOOKS)}). Write '
            'optim_wrapper = dict(type=..., optimizer=..., clip_grad=..., '
            'accumulative_counts=...) by hand.')
    if 'detect_anomalous_params' in hook:
        raise ValueError(
            'legacy config: optimizer_config.detect_anomalous_params '
            'moved to the DDP wrapper in mmengine; remove it and write '
            "model_wrapper_cfg = dict(type='MMDistributedDataParallel', "
            'detect_anomalous_params=True).')
    if 'grad_clip' in hook:
        clip = hook.pop('grad_clip')
        if clip is None:
            if wrapper.pop('clip_grad', None) is not None:
                state.row('optimizer_config.grad_clip=None',
                          'optim_wrapper.clip_grad (removed)', None)
        else:
            wrapper['clip_grad'] = dict(clip)
            state.row('optimizer_config.grad_clip',
                      'optim_wrapper.clip_grad', dict(clip))
    if 'cumulative_iters' in hook:
        counts = hook.pop('cumulative_iters')
        wrapper['accumulative_counts'] = counts
        state.row('optimizer_config.cumulative_iters',
                  'optim_wrapper.accumulative_counts', counts)
    elif 'Cumulative' in hook_type:
        wrapper.setdefault('accumulative_counts', 1)
    if 'Fp16' in hook_type or 'loss_scale' in hook:
        _set_fp16(state, wrapper, hook.pop('loss_scale', 512.),
                  f'optimizer_config.type={hook_type!r}')
    for key in ('distributed', 'coalesce', 'bucket_size_mb'):
        if key in hook:
            state.row(f'optimizer_config.{key}', '(dropped: mmengine '
                      'handles it)', hook.pop(key))
    if hook:
        raise ValueError(
            f'legacy config: optimizer_config has keys {sorted(hook)} '
            'with no translation; remove them or write optim_wrapper by '
            'hand.')
    if len(state.rows) == rows_before:
        state.row('optimizer_config', 'optim_wrapper', '(no change)')
