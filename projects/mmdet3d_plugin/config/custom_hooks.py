"""A hook the tools add to a config's ``custom_hooks`` unless the config
already has one of its type."""
from mmengine.config import Config


def add_custom_hook(cfg: Config, hook: dict) -> Config:
    """Append ``hook`` to ``cfg.custom_hooks`` unless an entry has its type
    (with or without the ``mmdet3d.`` scope); a config's own entry, with
    its own arguments, is kept.

    Args:
        cfg (Config): Loaded config, changed in place.
        hook (dict): The hook's config, e.g. ``dict(type='PreemptionHook')``.

    Returns:
        Config: ``cfg`` itself.
    """
    name = hook['type'].split('.')[-1]
    hooks = list(cfg.get('custom_hooks') or [])
    if not any(isinstance(h, dict) and h.get('type') in (
            name, f'mmdet3d.{name}') for h in hooks):
        hooks.append(hook)
        cfg.custom_hooks = hooks
    return cfg
