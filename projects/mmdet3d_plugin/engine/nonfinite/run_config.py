"""A training config made one that skips non-finite steps (the plugin's
``tools/train.py`` applies it to every run)."""
from mmengine.config import Config

from ...config.custom_hooks import add_custom_hook


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
    return add_custom_hook(cfg, dict(type='mmdet3d.NonFiniteGuardHook'))
