"""Translate ``checkpoint_config`` and ``log_config`` (0.x).

They become ``default_hooks.checkpoint`` and ``default_hooks.logger``;
logger hooks with a backend (TensorBoard, W&B, MLflow) become
``visualizer.vis_backends``. Runs after :mod:`.loop`, so that the
checkpoint hook steps by iteration for an iteration-based loop.
"""
from .state import TranslationState

_LOGGER_HOOK_BACKENDS = {
    'TextLoggerHook': None,
    'TensorboardLoggerHook': 'TensorboardVisBackend',
    'WandbLoggerHook': 'WandbVisBackend',
    'MlflowLoggerHook': 'MLflowVisBackend',
}


def translate_checkpoint(state: TranslationState) -> None:
    """Rewrite ``checkpoint_config`` into ``default_hooks.checkpoint``.

    Args:
        state (TranslationState): The translation in progress.
    """
    conf = state.pop_section('checkpoint_config')
    if conf is None:
        return
    for key in ('create_symlink', 'meta'):
        if key in conf:
            state.row(f'checkpoint_config.{key}', '(dropped)',
                      conf.pop(key))
    hooks = state.cfg.setdefault('default_hooks', {})
    hook = dict(hooks.get('checkpoint') or dict(type='CheckpointHook'))
    hook.update(conf)
    by_epoch, _ = state.loop()
    if by_epoch is False:
        hook.setdefault('by_epoch', False)
    hooks['checkpoint'] = hook
    state.row('checkpoint_config', 'default_hooks.checkpoint', conf)


def translate_log_config(state: TranslationState) -> None:
    """Rewrite ``log_config`` into the logger hook and vis backends.

    Args:
        state (TranslationState): The translation in progress.

    Raises:
        ValueError: For a logger hook type with no translation.
    """
    conf = state.pop_section('log_config')
    if conf is None:
        return
    hooks = state.cfg.setdefault('default_hooks', {})
    logger = dict(hooks.get('logger') or dict(type='LoggerHook'))
    if 'interval' in conf:
        logger['interval'] = conf.pop('interval')
        state.row('log_config.interval', 'default_hooks.logger.interval',
                  logger['interval'])
    hooks['logger'] = logger
    backends = []
    for hook in conf.pop('hooks', []) or []:
        hook = dict(hook)
        hook_type = hook.pop('type', None)
        if hook_type not in _LOGGER_HOOK_BACKENDS:
            raise ValueError(
                f'legacy config: log_config.hooks type {hook_type!r} has '
                f'no translation (known: {list(_LOGGER_HOOK_BACKENDS)}). '
                'Add a vis backend to visualizer.vis_backends by hand.')
        backend = _LOGGER_HOOK_BACKENDS[hook_type]
        if backend is None:
            continue
        entry = dict(type=backend)
        if 'init_kwargs' in hook:
            entry['init_kwargs'] = hook['init_kwargs']
        backends.append(entry)
        state.row(f'log_config.hooks[{hook_type}]',
                  'visualizer.vis_backends', entry)
    if backends:
        visualizer = dict(
            state.cfg.get('visualizer') or dict(
                type='Det3DLocalVisualizer',
                vis_backends=[dict(type='LocalVisBackend')],
                name='visualizer'))
        visualizer['vis_backends'] = list(
            visualizer.get('vis_backends') or []) + backends
        state.cfg['visualizer'] = visualizer
    for key in sorted(conf):
        state.row(f'log_config.{key}', '(dropped)', conf[key])
