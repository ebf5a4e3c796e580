"""Translate mmdet3d 0.x (mmcv 1.x) configs, model included, to 1.x.

Posts and old configs carry keys that the mmengine line ignores or rejects::

    optimizer = dict(type='AdamW', lr=1e-4, weight_decay=0.01)
    optimizer_config = dict(type='GradientCumulativeOptimizerHook',
                            cumulative_iters=4, grad_clip=dict(max_norm=35))
    fp16 = dict(loss_scale=512.)
    lr_config = dict(policy='cyclic', target_ratio=(10, 1e-4),
                     cyclic_times=1, step_ratio_up=0.4)
    runner = dict(type='EpochBasedRunner', max_epochs=20)

:func:`translate_legacy` rewrites them into ``optim_wrapper``,
``param_scheduler``, ``train_cfg``, ``*_dataloader``, ``default_hooks`` and
``randomness`` following mmcv 1.x semantics, and refuses, naming the key and
what to write instead, what has no faithful mmengine equivalent. A config
that mixes a 1.x ``_base_`` with 0.x keys of its own is merged: the 0.x keys
win where they say something, the rest of the 1.x settings stays.

The model is translated as mmdet3d's own 1.x configs rewrote theirs
(:mod:`.model`: voxel layers into the data preprocessor, ``mmdet.``
scopes, renamed classes and arguments); a type that no 1.x registry knows
is refused with its key path. Dataset dicts get the mechanical changes only
(``classes`` -> ``metainfo``, ``ann_file`` relative to ``data_root``,
``DefaultFormatBundle3D`` + ``Collect3D`` -> ``Pack3DDetInputs``, nested
``file_client_args`` -> ``backend_args``); 0.x info files must be
regenerated with mmdet3d 1.x's ``tools/create_data.py`` (or updated with
``tools/dataset_converters/update_infos_to_v2.py``).

The work is split by config section: :mod:`.optimizer`, :mod:`.loop`,
:mod:`.schedule`, :mod:`.hooks`, :mod:`.data`, :mod:`.model` and
:mod:`.runtime` each rewrite their keys on a shared
:class:`.core.TranslationState`; this module holds the entry points and
runs the sections in order.
"""
import copy
from typing import List, Tuple

from mmengine.config import Config

from .state import Row, TranslationState
from .data import translate_data, translate_top_level_pipelines
from .hooks import translate_checkpoint, translate_log_config
from .loop import translate_evaluation, translate_runner
from .model import is_legacy_model, translate_model
from .optimizer import translate_optimizer
from .runtime import translate_runtime
from .schedule import translate_schedulers

__all__ = ['LEGACY_KEYS', 'Row', 'format_migration_table', 'has_legacy_keys',
           'translate_legacy']

#: Keys of mmcv 1.x configs that :func:`translate_legacy` understands.
LEGACY_KEYS = ('optimizer', 'optimizer_config', 'fp16', 'lr_config',
               'momentum_config', 'runner', 'total_epochs', 'evaluation',
               'checkpoint_config', 'log_config', 'data', 'workflow',
               'dist_params', 'resume_from', 'gpu_ids', 'seed',
               'deterministic', 'cudnn_benchmark', 'mp_start_method',
               'opencv_num_threads')


def has_legacy_keys(cfg) -> bool:
    """Whether ``cfg`` holds any key of :data:`LEGACY_KEYS`.

    ``find_unused_parameters`` beside a ``model_wrapper_cfg`` counts too,
    and so do a 0.x ``plugin_dir`` and a model with a voxel layer
    (:func:`.model.is_legacy_model`).
    """
    return any(key in cfg for key in LEGACY_KEYS) or (
        'find_unused_parameters' in cfg and bool(cfg.get('model_wrapper_cfg'))
    ) or 'plugin_dir' in cfg or is_legacy_model(cfg.get('model'))


def translate_legacy(cfg: Config) -> Tuple[Config, List[Row]]:
    """Translate 0.x keys of ``cfg`` to mmengine keys.

    Args:
        cfg (Config): A loaded config; left unchanged.

    Returns:
        tuple[Config, list[tuple[str, str, Any]]]: The translated config (a
        new object, or ``cfg`` itself when nothing was translated) and the
        rows ``(old key, new key, value)`` of the migration table.

    Raises:
        ValueError: For a 0.x setting with no faithful translation; the
            message names the key and what to write instead.

    Examples:
        >>> cfg = Config(dict(
        ...     optimizer=dict(type='SGD', lr=0.01),
        ...     optimizer_config=dict(
        ...         type='GradientCumulativeOptimizerHook',
        ...         cumulative_iters=4),
        ...     fp16=dict(loss_scale=512.)))
        >>> cfg, rows = translate_legacy(cfg)
        >>> cfg.optim_wrapper.accumulative_counts, cfg.optim_wrapper.type
        (4, 'AmpOptimWrapper')
    """
    if not has_legacy_keys(cfg):
        return cfg, []
    state = TranslationState(copy.deepcopy(cfg.to_dict()))
    # Order matters: the loop length feeds schedulers and checkpoint hooks.
    translate_optimizer(state)
    translate_runner(state)
    translate_evaluation(state)
    translate_schedulers(state)
    translate_checkpoint(state)
    translate_log_config(state)
    translate_data(state)
    translate_top_level_pipelines(state)
    translate_model(state)
    translate_runtime(state)
    places = state.backend_args_places
    if places:
        state.row(
            f'file_client_args ({len(places)}x, in '
            f'{", ".join(sorted(set(places)))})', 'backend_args',
            '(disk -> None)')
    out = Config(state.cfg, filename=cfg.filename)
    return out, state.rows


def format_migration_table(rows: List[Row], width: int = 60) -> str:
    """Render migration rows as a three-column text table.

    Args:
        rows (list[tuple]): ``(old key, new key, value)`` rows.
        width (int): Longest value shown; longer ones are cut with '...'.
            Defaults to 60.

    Returns:
        str: The table, one row a line, with a header.
    """
    def cut(value) -> str:
        text = value if isinstance(value, str) else repr(value)
        return text if len(text) <= width else text[:width - 3] + '...'

    cells = [('0.x key', 'mmengine key', 'value')] + [
        (str(old), str(new), cut(value)) for old, new, value in rows
    ]
    widths = [max(len(c[i]) for c in cells) for i in range(3)]
    lines = []
    for i, cell in enumerate(cells):
        lines.append('  '.join(c.ljust(w) for c, w in zip(cell, widths))
                     .rstrip())
        if i == 0:
            lines.append('  '.join('-' * w for w in widths))
    return '\n'.join(lines)
