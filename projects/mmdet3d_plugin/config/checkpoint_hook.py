"""The checkpoint hook of a config, made one that never leaves a partial
checkpoint behind (the plugin's tools apply it to every run they prepare).
"""
from mmengine.config import Config


def use_atomic_checkpoints(cfg: Config) -> Config:
    """Make ``cfg``'s checkpoint hook
    :class:`~projects.mmdet3d_plugin.engine.hooks.AtomicCheckpointHook`.

    Only mmengine's stock ``CheckpointHook`` (the default) is replaced; a
    config that names another checkpoint hook keeps it, as does one that
    sets ``default_hooks.checkpoint = None``. Every argument of the hook is
    kept.

    Args:
        cfg (Config): Loaded config, changed in place.

    Returns:
        Config: ``cfg`` itself.
    """
    # A scoped name also resolves when default_scope is not mmdet3d.
    hook_type = ('AtomicCheckpointHook' if cfg.get('default_scope') ==
                 'mmdet3d' else 'mmdet3d.AtomicCheckpointHook')
    default_hooks = cfg.get('default_hooks')
    if default_hooks is None:
        cfg.default_hooks = dict(checkpoint=dict(type=hook_type, interval=1))
        return cfg
    hook = default_hooks.get('checkpoint', dict(type='CheckpointHook'))
    if isinstance(hook, dict) and hook.get('type') in (
            'CheckpointHook', 'mmengine.CheckpointHook'):
        hook = dict(hook, type=hook_type)
        hook.setdefault('interval', 1)
        default_hooks['checkpoint'] = hook
    return cfg
