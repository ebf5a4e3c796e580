"""Composable training presets: gradient accumulation, mixed precision,
activation checkpointing and the fast data pipeline.

mmengine refuses two ``_base_`` files that set the same key, so a preset
cannot be listed beside a model config (both set ``optim_wrapper``). Instead
a config names its presets::

    _base_ = ['mmdet3d::centerpoint/centerpoint_pillar02_second_secfpn_'
              '8xb4-cyclic-20e_nus-3d.py']
    presets = ['grad_accum_x4', 'fp16']

and :func:`projects.mmdet3d_plugin.load_config` merges the files of
``configs/_base_/presets/`` onto the config in order. The merge is a deep
merge into ``optim_wrapper``: the base's ``optimizer``, ``clip_grad``,
``paramwise_cfg`` and ``constructor`` are kept. A precision preset defines the
precision completely: it replaces the base's ``type``, ``dtype`` and
``loss_scale``.

A preset file may also hold ``transform_types = dict(Old='New', ...)``:
every ``type='Old'`` in the config (each pipeline, nested transforms such as
``MultiScaleFlipAug3D``'s, ``db_sampler`` and its ``points_loader``) becomes
``'New'`` (preset ``'fast_pipeline'``).
"""
import copy
import numbers
import os
import os.path as osp
from typing import Dict, List, Optional, Sequence, Union

from mmengine.config import Config, ConfigDict
from mmengine.logging import print_log

from ..constants import AMP_CHOICES, AMP_FLAG_PRESETS, FP32_FLAG, REPO_ROOT
from .optim_wrapper import (AUTOCAST_TYPES, accumulative_counts_of,
                            is_multi_wrapper)

#: Folder of the preset files: ``configs/_base_/presets`` of the checkout
#: the package is installed from (``pip install -e .``).
PRESET_DIR = str(REPO_ROOT / 'configs' / '_base_' / 'presets')

#: Presets that choose the gradient accumulation; at most one may be used.
ACCUMULATION_PRESETS = ('grad_accum_x2', 'grad_accum_x4', 'grad_accum_x8')
#: Presets that choose the numeric precision; at most one may be used.
PRECISION_PRESETS = ('fp16', 'fp16_dynamic', 'bf16')
#: Key of a preset file mapping transform types to their replacements.
TRANSFORM_TYPES_KEY = 'transform_types'

#: Loops whose ``fp16=True`` runs evaluation under autocast.
_EVAL_LOOPS = ('val_cfg', 'test_cfg')


def known_presets() -> List[str]:
    """Names of the preset files in :data:`PRESET_DIR`, sorted.

    Returns:
        list[str]: Preset names without the ``.py`` suffix.
    """
    if not osp.isdir(PRESET_DIR):
        return []
    return sorted(
        osp.splitext(name)[0] for name in os.listdir(PRESET_DIR)
        if name.endswith('.py') and not name.startswith('_'))


def load_preset(name: str) -> Dict:
    """Read one preset file.

    Args:
        name (str): Preset name, e.g. ``'grad_accum_x4'``, or a path to a
            ``.py`` file written in the same form.

    Returns:
        dict: The preset's keys (plain dicts).

    Raises:
        ValueError: If no preset of that name exists.
    """
    if not isinstance(name, str):
        raise TypeError(
            f'presets: expected preset names as strings, got {name!r} '
            f'({type(name).__name__}); write e.g. presets = '
            "['grad_accum_x4', 'fp16'].")
    if name.endswith('.py') and osp.isfile(name):
        path = name
    else:
        path = osp.join(PRESET_DIR, f'{name}.py')
        if not osp.isfile(path):
            known = known_presets()
            if not known:
                raise ValueError(
                    f'presets: unknown preset {name!r}: no preset files '
                    f'found in {PRESET_DIR}; install the plugin from its '
                    'checkout with `pip install -e .` so configs/ is there.')
            raise ValueError(
                f'presets: unknown preset {name!r}; known presets are '
                f'{known}. Fix the name in `presets = [...]` or in --amp / '
                '--accum.')
    return Config.fromfile(path).to_dict()


def _optim_wrapper_of(cfg: Union[Config, Dict], where: str) -> Dict:
    """Return ``cfg['optim_wrapper']`` or explain why presets cannot use
    it."""
    optim_wrapper = cfg.get('optim_wrapper')
    if optim_wrapper is None:
        raise ValueError(
            f'{where}: the config has no `optim_wrapper`; presets and '
            '--accum/--amp change an existing optimizer wrapper. Inherit a '
            'model config that defines one (its schedule) or write '
            "optim_wrapper = dict(type='OptimWrapper', optimizer=...).")
    if is_multi_wrapper(optim_wrapper):
        raise ValueError(
            f'{where}: `optim_wrapper` holds several optimizer wrappers '
            f'({sorted(optim_wrapper)}); presets apply to a single wrapper. '
            'Set accumulative_counts / type / loss_scale in each wrapper '
            'by hand.')
    return optim_wrapper


def replace_transform_types(cfg: Union[Config, Dict, list],
                            types: Dict[str, str]) -> Dict[str, int]:
    """Replace transform types everywhere in a config, in place.

    Every dict (at any depth, in dicts, lists and tuples) whose ``type`` is
    a key of ``types`` gets the mapped type; a ``'mmdet3d.'`` scope prefix
    is kept.

    Args:
        cfg (Config | dict | list): The config, or a part of it.
        types (dict[str, str]): Old type -> new type.

    Returns:
        dict[str, int]: How many of each old type were replaced.

    Examples:
        >>> replace_transform_types(
        ...     cfg, dict(PointShuffle='FastPointShuffle'))
        {'PointShuffle': 2}
    """
    counts: Dict[str, int] = {}

    def visit(node):
        if isinstance(node, dict):
            kind = node.get('type')
            if isinstance(kind, str):
                scope, _, bare = kind.rpartition('.')
                if bare in types and scope in ('', 'mmdet3d'):
                    node['type'] = (f'{scope}.' if scope else '') + \
                        types[bare]
                    counts[bare] = counts.get(bare, 0) + 1
            for value in node.values():
                visit(value)
        elif isinstance(node, (list, tuple)):
            for value in node:
                visit(value)

    if isinstance(cfg, Config):
        for key in list(cfg.keys()):
            visit(cfg[key])
    else:
        visit(cfg)
    return counts


def _merge_preset(cfg: Config, preset: Dict, name: str) -> str:
    """Deep-merge one preset into ``cfg`` in place; return what changed
    (for the log)."""
    preset = copy.deepcopy(preset)
    types = preset.pop(TRANSFORM_TYPES_KEY, None)
    if types is not None:
        if not isinstance(types, dict) or not all(
                isinstance(k, str) and isinstance(v, str)
                for k, v in types.items()):
            raise TypeError(
                f'preset {name!r}: {TRANSFORM_TYPES_KEY} must map transform '
                f'type names to type names, got {types!r}; write e.g. '
                f'{TRANSFORM_TYPES_KEY} = '
                "dict(PointShuffle='FastPointShuffle').")
        counts = replace_transform_types(cfg, types)
        if not preset:
            return 'transforms: ' + (', '.join(
                f'{old} -> {types[old]} (x{n})'
                for old, n in sorted(counts.items())) or 'none replaced')
    ow_preset = preset.get('optim_wrapper')
    if ow_preset is not None:
        optim_wrapper = _optim_wrapper_of(cfg, f'preset {name!r}')
        if 'type' in ow_preset:
            # A precision preset defines the precision completely.
            for key in ('dtype', 'loss_scale'):
                optim_wrapper.pop(key, None)
    cfg.merge_from_dict(preset)
    if ow_preset is None:
        return ', '.join(f'{k}={v!r}' for k, v in preset.items())
    return _describe(cfg)


def _describe(cfg: Config) -> str:
    """One-line summary of the accumulation and precision of ``cfg``."""
    ow = cfg.get('optim_wrapper') or {}
    parts = [f"type={ow.get('type', 'OptimWrapper')}"]
    for key in ('accumulative_counts', 'dtype', 'loss_scale'):
        if key in ow:
            parts.append(f'{key}={ow[key]!r}')
    return 'optim_wrapper: ' + ', '.join(parts)


def _check_exclusive(names: Sequence[str]) -> None:
    for group, label in ((ACCUMULATION_PRESETS, 'accumulation'),
                         (PRECISION_PRESETS, 'precision')):
        chosen = [n for n in names if n in group]
        if len(chosen) > 1:
            raise ValueError(
                f'presets: {chosen} both set the {label}; use at most one of '
                f'{list(group)} (e.g. presets = '
                f"['{ACCUMULATION_PRESETS[1]}', 'fp16']).")


def _notes_after_accumulation(cfg: Config, where: str) -> None:
    """Log what accumulation means for this config's schedule and LR."""
    counts = (cfg.get('optim_wrapper') or {}).get('accumulative_counts', 1)
    if counts <= 1:
        return
    train_cfg = cfg.get('train_cfg') or {}
    if train_cfg.get('by_epoch') is False or train_cfg.get(
            'type') == 'IterBasedTrainLoop':
        print_log(
            f'{where}: train_cfg is iteration-based: max_iters='
            f"{train_cfg.get('max_iters')} counts iterations, so the run "
            f'makes 1/{counts} as many optimizer updates; multiply max_iters '
            f'by {counts} to keep the number of updates.',
            logger='current')
    auto_scale_lr = cfg.get('auto_scale_lr') or {}
    if not auto_scale_lr.get('enable', False):
        print_log(
            f'{where}: auto_scale_lr is off, so the learning rate is not '
            f'scaled for the {counts}x larger batch per update; enable it '
            '(tools/train.py --auto-scale-lr) to scale the LR by world size '
            'x batch size x accumulative_counts.',
            logger='current')


def merge_presets(cfg: Config, names: Optional[Sequence[str]]) -> Config:
    """Deep-merge the named presets onto ``cfg`` in order, in place, without
    validating the result (the tools validate once after all their flags,
    see ``cli.prepare``).

    Args:
        cfg (Config): The loaded config.
        names (Sequence[str], optional): Preset names from
            ``configs/_base_/presets`` (or paths to preset files). None or
            empty does nothing.

    Returns:
        Config: ``cfg`` itself.

    Raises:
        ValueError: For an unknown preset (the message lists the known
            ones), or two presets of the same kind.
    """
    if not names:
        return cfg
    if isinstance(names, str):
        names = [names]
    names = list(names)
    _check_exclusive(names)
    counts_before = accumulative_counts_of(cfg)
    for name in names:
        preset = load_preset(name)
        changed = _merge_preset(cfg, preset, name)
        print_log(f'applied preset {name!r}: {changed}',
                  logger='current')
    if accumulative_counts_of(cfg) != counts_before:
        _notes_after_accumulation(cfg, 'presets')
    return cfg


def applied_by(presets: Sequence[str] = (),
               cfg_options: bool = False,
               amp: Union[None, bool, str] = None,
               accum: Optional[int] = None) -> str:
    """What set a config's values, in the order it was applied, for the
    context prefix of :func:`.optim_wrapper.validate_optim_wrapper`'s errors.

    Args:
        presets (Sequence[str]): Preset names merged. Defaults to ().
        cfg_options (bool): Whether ``--cfg-options`` were merged.
            Defaults to False.
        amp (bool | str, optional): ``--amp`` (True: 'fp16'). Defaults to
            None.
        accum (int, optional): ``--accum``. Defaults to None.

    Returns:
        str: e.g. ``"preset 'grad_accum_x4', --cfg-options, --amp bf16"``;
        empty when nothing was applied.
    """
    parts = [f'preset {name!r}' for name in presets]
    if cfg_options:
        parts.append('--cfg-options')
    if amp is not None and amp is not False:
        parts.append(f'--amp {"fp16" if amp is True else amp}')
    if accum is not None:
        parts.append(f'--accum {accum}')
    return ', '.join(parts)


def force_float32(cfg: Union[Config, Dict],
                  where: str = '--amp fp32') -> Union[Config, Dict]:
    """Make a config train and evaluate in float32, in place.

    Every optimizer wrapper that autocasts (``AmpOptimWrapper``, the
    plugin's ``BF16AmpOptimWrapper``, ``ApexOptimWrapper``, whether set by
    the config, a preset or a translated 0.x ``fp16`` key) becomes
    ``OptimWrapper`` without ``dtype`` / ``loss_scale``; its optimizer,
    accumulation and ``clip_grad`` are kept; so are wrapper types that do
    not autocast (a custom wrapper keeps its type, without ``dtype`` /
    ``loss_scale``). With several wrappers (one per optimizer), each one
    is changed. ``fp16=True`` of ``val_cfg`` / ``test_cfg`` is turned off.

    Args:
        cfg (Config | dict): The loaded config, or a dict holding only
            ``optim_wrapper`` (the doctor trains with such a copy).
        where (str): Prefix of the log line. Defaults to '--amp fp32'.

    Returns:
        Config | dict: ``cfg`` itself.
    """
    changes = []
    optim_wrapper = cfg.get('optim_wrapper')
    named = ([(k, w) for k, w in optim_wrapper.items() if isinstance(w, dict)]
             if optim_wrapper and is_multi_wrapper(optim_wrapper) else
             [('', optim_wrapper)] if optim_wrapper else [])
    for name, wrapper in named:
        key = 'optim_wrapper' + (f'.{name}' if name else '')
        kind = wrapper.get('type', 'OptimWrapper')
        if kind in AUTOCAST_TYPES:
            wrapper['type'] = 'OptimWrapper'
            changes.append(f'{key}.type {kind!r} -> \'OptimWrapper\'')
        for drop in ('dtype', 'loss_scale'):
            if drop in wrapper:
                changes.append(f'removed {key}.{drop}={wrapper.pop(drop)!r}')
    for loop in _EVAL_LOOPS:
        if (cfg.get(loop) or {}).get('fp16'):
            cfg[loop]['fp16'] = False
            changes.append(f'{loop}.fp16 True -> False')
    print_log(
        f'{where}: float32 ' + (f'({"; ".join(changes)})' if changes else
                                '(the config already runs in float32)'),
        logger='current')
    return cfg


def merge_train_flags(cfg: Config,
                      accum: Optional[int] = None,
                      amp: Union[None, bool, str] = None) -> Config:
    """Apply tools/train.py's ``--accum N`` and ``--amp [MODE]`` in place,
    without validating the result (``cli.prepare`` validates once after
    all the flags).

    They are equivalent to the presets: ``--accum 4`` is 'grad_accum_x4'
    (any N >= 1 is allowed), ``--amp``/``--amp fp16`` is 'fp16_dynamic'
    (mmdet3d's meaning of ``--amp``), ``--amp fp16-static`` is 'fp16' and
    ``--amp bf16`` is 'bf16'. ``--amp fp32`` trains in float32 whatever the
    config, its presets or its 0.x ``fp16`` key set (:func:`force_float32`).

    Args:
        cfg (Config): The loaded config (after :func:`load_config`).
        accum (int, optional): Accumulation count. None keeps the config's.
        amp (bool | str, optional): None/False keeps the config's precision;
            True means 'fp16'; otherwise one of :data:`AMP_CHOICES`.

    Returns:
        Config: ``cfg`` itself.
    """
    if amp is not None and amp is not False:
        mode = 'fp16' if amp is True else amp
        if mode not in AMP_CHOICES:
            raise ValueError(
                f'--amp: expected one of {list(AMP_CHOICES)} (or a bare '
                f'--amp for dynamic fp16), got {amp!r}.')
    if amp == FP32_FLAG:
        force_float32(cfg)
    elif amp is not None and amp is not False:
        name = AMP_FLAG_PRESETS[mode]
        _merge_preset(cfg, load_preset(name), f'--amp {mode}')
        print_log(f'--amp {mode}: applied preset {name!r}: {_describe(cfg)}',
                  logger='current')
    if accum is not None:
        if (isinstance(accum, bool) or not isinstance(accum, numbers.Integral)
                or accum < 1):
            raise ValueError(
                f'--accum: expected a positive integer number of iterations '
                f'per optimizer update, got {accum!r}.')
        _optim_wrapper_of(cfg, '--accum')
        cfg.merge_from_dict(
            dict(optim_wrapper=dict(accumulative_counts=int(accum))))
        print_log(f'--accum {accum}: {_describe(cfg)}', logger='current')
        _notes_after_accumulation(cfg, f'--accum {accum}')
    return cfg


def preset_names_of(cfg: Union[Config, ConfigDict, Dict]) -> List[str]:
    """Read and check the ``presets`` key of a config.

    Args:
        cfg (Config | dict): Loaded config.

    Returns:
        list[str]: The names (empty if the key is absent or None).
    """
    names = cfg.get('presets')
    if names is None:
        return []
    if isinstance(names, str):
        return [names]
    if not isinstance(names, (list, tuple)):
        raise TypeError(
            f'presets: expected a list of preset names, got {names!r}; write '
            "e.g. presets = ['grad_accum_x4', 'fp16'].")
    return list(names)
