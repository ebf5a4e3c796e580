"""A training config made one that skips non-finite steps (the plugin's
``tools/train.py`` applies it to every run)."""
from mmengine.config import Config

_GUARD_HOOKS = ('NonFiniteGuardHook', 'mmdet3d.NonFiniteGuardHook')


def use_nonfinite_guard(cfg: Config) -> Config:
    """Add ``NonFiniteGuardHook`` (its defaults) unless the config has one
    or sets ``nonfinite_guard = False``.

    Args:
        cfg (Config): Loaded config, changed in place.

    Returns:
        Config: ``cfg`` itself.
    """
    if cfg.get('nonfinite_guard', True) is False:
        return cfg
    hooks = list(cfg.get('custom_hooks') or [])
    if not any(isinstance(h, dict) and h.get('type') in _GUARD_HOOKS
               for h in hooks):
        hooks.append(dict(type='mmdet3d.NonFiniteGuardHook'))
        cfg.custom_hooks = hooks
    return cfg
