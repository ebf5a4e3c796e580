"""Translate the 0.x runtime keys.

``workflow`` and ``gpu_ids`` are dropped, ``dist_params``,
``cudnn_benchmark``, ``mp_start_method`` and ``opencv_num_threads`` go to
``env_cfg``, ``resume_from`` to ``load_from`` + ``resume=True``, ``seed``
and ``deterministic`` to ``randomness``, ``find_unused_parameters`` into a
``model_wrapper_cfg``; ``default_scope`` is set to ``mmdet3d`` when missing
and a top-level ``db_sampler``'s ``file_client_args`` becomes
``backend_args`` (:func:`.data.backend_args`).
"""
from .state import TranslationState
from .data import backend_args, has_file_client_args


def translate_runtime(state: TranslationState) -> None:
    """Rewrite the runtime keys into env_cfg, randomness and the like.

    Args:
        state (TranslationState): The translation in progress.
    """
    cfg = state.cfg
    if 'default_scope' not in cfg:
        # mmdet3d 1.x configs name their registry scope; 0.x had none.
        cfg['default_scope'] = 'mmdet3d'
        state.row('(none)', 'default_scope', 'mmdet3d')
    if isinstance(cfg.get('db_sampler'), dict) and \
            has_file_client_args(cfg['db_sampler']):
        cfg['db_sampler'] = backend_args(state, dict(cfg['db_sampler']),
                                         'db_sampler')
    if 'workflow' in cfg:
        state.row('workflow', '(dropped: validation runs every '
                  'train_cfg.val_interval)', state.pop('workflow'))
    if 'gpu_ids' in cfg:
        state.row('gpu_ids', '(dropped: set by the launcher)',
                  state.pop('gpu_ids'))
    env = None
    if 'dist_params' in cfg:
        params = dict(state.pop('dist_params') or {})
        env = dict(cfg.get('env_cfg') or {})
        dist_cfg = dict(env.get('dist_cfg') or {})
        if 'port' in params:
            state.row('dist_params.port', '(dropped: set MASTER_PORT or '
                      'tools/dist_train.sh PORT=...)', params.pop('port'))
        dist_cfg.update(params)
        env['dist_cfg'] = dist_cfg
        state.row('dist_params', 'env_cfg.dist_cfg', params)
    for key, path in (('cudnn_benchmark', ('cudnn_benchmark', )),
                      ('mp_start_method', ('mp_cfg', 'mp_start_method')),
                      ('opencv_num_threads', ('mp_cfg',
                                              'opencv_num_threads'))):
        if key in cfg:
            env = env if env is not None else dict(
                cfg.get('env_cfg') or {})
            value = state.pop(key)
            target = env
            for part in path[:-1]:
                target[part] = dict(target.get(part) or {})
                target = target[part]
            target[path[-1]] = value
            state.row(key, 'env_cfg.' + '.'.join(path), value)
    if env is not None:
        cfg['env_cfg'] = env
    if 'resume_from' in cfg:
        resume_from = state.pop('resume_from')
        if resume_from is not None:
            cfg['load_from'] = resume_from
            cfg['resume'] = True
            state.row('resume_from', 'load_from + resume=True',
                      resume_from)
    randomness = None
    for key in ('seed', 'deterministic'):
        if key in cfg:
            value = state.pop(key)
            randomness = randomness if randomness is not None else dict(
                cfg.get('randomness') or {})
            randomness[key] = value
            state.row(key, f'randomness.{key}', value)
    if randomness is not None:
        cfg['randomness'] = randomness
    if 'find_unused_parameters' in cfg and cfg.get('model_wrapper_cfg'):
        value = state.pop('find_unused_parameters')
        cfg['model_wrapper_cfg']['find_unused_parameters'] = value
        state.row('find_unused_parameters',
                  'model_wrapper_cfg.find_unused_parameters', value)
