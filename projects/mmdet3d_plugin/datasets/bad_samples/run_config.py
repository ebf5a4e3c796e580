"""A training config made one that steps over broken samples (the plugin's
``tools/train.py`` applies it to every run)."""
from mmengine.config import Config

from ...config.custom_hooks import add_custom_hook


def use_bad_sample_hook(cfg: Config) -> Config:
    """Add ``BadSampleHook`` (its defaults) unless the config has one or
    sets ``skip_bad_samples = False``.

    Args:
        cfg (Config): Loaded config, changed in place.

    Returns:
        Config: ``cfg`` itself.
    """
    if cfg.get('skip_bad_samples', True) is False:
        return cfg
    return add_custom_hook(cfg, dict(type='mmdet3d.BadSampleHook'))
