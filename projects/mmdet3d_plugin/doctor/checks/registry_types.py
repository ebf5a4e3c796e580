"""Doctor check that every ``type=`` of a config resolves in its registry.

The walk follows the keys the Runner builds from (``model``,
``*_dataloader``, ``*_evaluator``, hooks, optimizer, schedulers, loops,
visualizer, ...) and names, for each ``type``, the registry the Runner will
look it up in: ``model`` -> ``MODELS`` (its assigners, coders and anchor
generators -> ``TASK_UTILS``), datasets -> ``DATASETS``, pipelines ->
``TRANSFORMS``, evaluators -> ``METRICS``, and so on. Names are looked up in
mmdet3d's registries with the config's default scope, as the Runner does.
"""
from typing import Any, Dict, Iterator, List, Optional, Tuple

from ...config.registry_names import closest_names
from ..context import CheckResult, DoctorContext, failed, passed

#: Keys under ``model`` whose ``type`` lives in TASK_UTILS.
TASK_UTIL_KEYS = frozenset({
    'assigner', 'sampler', 'bbox_coder', 'anchor_generator',
    'prior_generator', 'iou_calculator', 'match_cost', 'cls_cost', 'reg_cost',
    'iou_cost', 'coder', 'point_generator', 'box_coder', 'offset_coder',
    'bbox_sampler', 'pts_assigner', 'pts_sampler'
})
#: Keys under a dataset whose ``type`` lives in TRANSFORMS (``db_sampler``
#: of ObjectSample, its ``points_loader``, ``transforms`` of test-time
#: augmentation).
TRANSFORM_KEYS = frozenset({'pipeline', 'transforms', 'db_sampler',
                            'points_loader'})
#: Top-level keys -> registry of their ``type``.
TOP_LEVEL = {
    'model': 'MODELS',
    'train_dataloader': None,  # handled by _walk_dataloader
    'val_dataloader': None,
    'test_dataloader': None,
    'val_evaluator': 'METRICS',
    'test_evaluator': 'METRICS',
    'default_hooks': 'HOOKS',
    'custom_hooks': 'HOOKS',
    'optim_wrapper': 'OPTIM_WRAPPERS',
    'param_scheduler': 'PARAM_SCHEDULERS',
    'model_wrapper_cfg': 'MODEL_WRAPPERS',
    'train_cfg': 'LOOPS',
    'val_cfg': 'LOOPS',
    'test_cfg': 'LOOPS',
    'visualizer': 'VISUALIZERS',
    'log_processor': 'LOG_PROCESSORS',
}
#: Registries searched, in this order, when the expected one lacks a name;
#: a name found there resolves (mmdet3d registers a few classes in
#: unexpected registries), one found nowhere fails.
ALL_REGISTRIES = ('MODELS', 'TASK_UTILS', 'DATASETS', 'TRANSFORMS',
                  'DATA_SAMPLERS', 'METRICS', 'EVALUATOR', 'HOOKS', 'LOOPS',
                  'OPTIMIZERS', 'OPTIM_WRAPPERS',
                  'OPTIM_WRAPPER_CONSTRUCTORS', 'PARAM_SCHEDULERS',
                  'MODEL_WRAPPERS', 'WEIGHT_INITIALIZERS', 'VISUALIZERS',
                  'VISBACKENDS', 'LOG_PROCESSORS', 'RUNNERS', 'FUNCTIONS')

TypeRef = Tuple[str, str, Any]  # (config path, registry name, type value)


def _children(node: Any, path: str) -> Iterator[Tuple[str, str, Any]]:
    """(key, child path, child) of a dict or list config node."""
    if isinstance(node, dict):
        for key, value in node.items():
            yield str(key), f'{path}.{key}' if path else str(key), value
    elif isinstance(node, (list, tuple)):
        for i, value in enumerate(node):
            yield '', f'{path}[{i}]', value


def _walk(node: Any, path: str, registry: str,
          child_registry) -> Iterator[TypeRef]:
    """Yield every ``type`` below ``node``.

    ``child_registry(key, registry)`` gives the registry of a child under
    ``key`` ('' for list items).
    """
    if isinstance(node, dict) and 'type' in node:
        yield f'{path}.type', registry, node['type']
    for key, child_path, child in _children(node, path):
        if key == 'type' or not isinstance(child, (dict, list, tuple)):
            continue
        yield from _walk(child, child_path, child_registry(key, registry),
                         child_registry)


def _model_child(key: str, registry: str) -> str:
    if key in TASK_UTIL_KEYS:
        return 'TASK_UTILS'
    if key == 'init_cfg' or (registry == 'WEIGHT_INITIALIZERS'
                             and key in ('override', '')):
        return 'WEIGHT_INITIALIZERS'
    if registry == 'TASK_UTILS':
        return 'TASK_UTILS'
    return 'MODELS'


def _dataset_child(key: str, registry: str) -> str:
    if key in ('dataset', 'datasets'):
        return 'DATASETS'
    if key in TRANSFORM_KEYS or (registry == 'TRANSFORMS' and key == ''):
        return 'TRANSFORMS'
    return registry


def _same(key: str, registry: str) -> str:
    return registry


def _optim_child(key: str, registry: str) -> str:
    return 'OPTIMIZERS' if key == 'optimizer' else registry


def _visualizer_child(key: str, registry: str) -> str:
    return 'VISBACKENDS' if key == 'vis_backends' else registry


def config_types(cfg) -> List[TypeRef]:
    """Every ``type`` the Runner builds from ``cfg``, with its registry.

    Args:
        cfg (Config | dict): The loaded config.

    Returns:
        list[tuple[str, str, Any]]: ``(path, registry name, type)``, e.g.
        ``('model.pts_bbox_head.bbox_coder.type', 'TASK_UTILS',
        'CenterPointBBoxCoder')``.
    """
    refs: List[TypeRef] = []
    for key, registry in TOP_LEVEL.items():
        node = cfg.get(key)
        if not node:
            continue
        if key.endswith('_dataloader'):
            refs.extend(_walk_dataloader(node, key))
        elif key == 'model':
            refs.extend(_walk(node, key, registry, _model_child))
        elif key == 'optim_wrapper':
            refs.extend(_walk(node, key, registry, _optim_child))
            constructor = node.get('constructor')
            if isinstance(constructor, str):
                refs.append((f'{key}.constructor',
                             'OPTIM_WRAPPER_CONSTRUCTORS', constructor))
        elif key == 'visualizer':
            refs.extend(_walk(node, key, registry, _visualizer_child))
        elif key == 'default_hooks':
            for name, hook in node.items():
                if isinstance(hook, dict):
                    refs.extend(_walk(hook, f'{key}.{name}', registry, _same))
        else:
            refs.extend(_walk(node, key, registry, _same))
    runner_type = cfg.get('runner_type')
    if isinstance(runner_type, str):
        refs.append(('runner_type', 'RUNNERS', runner_type))
    return refs


def _walk_dataloader(loader: Dict, path: str) -> Iterator[TypeRef]:
    for key, child_path, child in _children(loader, path):
        if not isinstance(child, dict):
            continue
        if key == 'dataset':
            yield from _walk(child, child_path, 'DATASETS', _dataset_child)
        elif key in ('sampler', 'batch_sampler'):
            yield from _walk(child, child_path, 'DATA_SAMPLERS', _same)
        elif key in ('collate_fn', 'worker_init_fn'):
            yield from _walk(child, child_path, 'FUNCTIONS', _same)


def mmdet3d_registries() -> Dict[str, Any]:
    """The registries of :data:`ALL_REGISTRIES`: mmdet3d's, and mmengine's
    where mmdet3d has no child (``FUNCTIONS``)."""
    import mmengine.registry as root
    import mmdet3d.registry as registry
    # Not `a or b`: an empty registry (nothing imported yet) is falsy.
    return {
        name: getattr(registry if hasattr(registry, name) else root, name)
        for name in ALL_REGISTRIES
        if hasattr(registry, name) or hasattr(root, name)
    }


def lookup(registry, name: str) -> Optional[Any]:
    """``registry.get(name)``, None where it raises."""
    try:
        return registry.get(name)
    except Exception:  # Registry.get raises for some unknown dotted names
        return None


def resolve_types(cfg) -> Tuple[int, List[str]]:
    """Look up every ``type`` of ``cfg``.

    Args:
        cfg (Config): The loaded config (plugins imported).

    Returns:
        tuple[int, list[str]]: Number of types checked, and one message per
        type found in no registry, with the closest registered names.
    """
    from mmengine.registry import init_default_scope
    init_default_scope(cfg.get('default_scope', 'mmdet3d'))
    registries = mmdet3d_registries()
    refs = config_types(cfg)
    problems = []
    for path, expected, kind in refs:
        if not isinstance(kind, str):
            if not callable(kind):
                problems.append(
                    f'{path}={kind!r} is neither a registered name nor a '
                    'class')
            continue
        order = [expected] + [r for r in ALL_REGISTRIES if r != expected]
        if any(
                lookup(registries[name], kind) is not None
                for name in order if name in registries):
            continue
        close = closest_names(kind, [registries[expected]])
        hint = f'; did you mean {", ".join(map(repr, close))}?' \
            if close else ''
        problems.append(f'{path}={kind!r} is not registered in '
                        f'{expected}{hint}')
    return len(refs), problems


def check_types(ctx: DoctorContext) -> CheckResult:
    """Every ``type=`` of the config resolves."""
    count, problems = resolve_types(ctx.cfg)
    if problems:
        return failed(
            'config.types', f'{len(problems)} of {count} types do not '
            f'resolve: {"; ".join(problems[:5])}' +
            (f' (+{len(problems) - 5} more)' if len(problems) > 5 else ''),
            'fix the name in the config, or import the module that '
            'registers it: custom_imports = dict(imports=[...], '
            'allow_failed_imports=False)')
    return passed('config.types',
                  f'all {count} types resolve in mmdet3d\'s registries')
