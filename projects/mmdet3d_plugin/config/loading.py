"""The one config loader of the plugin."""
from typing import Dict, List, Optional, Sequence, Tuple

from mmengine.config import Config
from mmengine.logging import print_log

from ..constants import PLUGIN_MODULE
from .legacy.translator import format_migration_table, translate_legacy
from .optim_wrapper import BF16_TYPES, validate_optim_wrapper
from .presets import applied_by, merge_presets, preset_names_of

#: Runner that :func:`load_config` selects when a config names none; it
#: counts gradient accumulation in ``auto_scale_lr`` and checks AMP early.
DEFAULT_RUNNER_TYPE = 'PluginRunner'


def _fromfile(path: str) -> Config:
    if '::' in path:
        # 'mmdet3d::centerpoint/....py': a config packaged with a library.
        from mmengine.hub import get_config
        return get_config(path)
    return Config.fromfile(path)


def read_config(path: str) -> Tuple[Config, List[str]]:
    """Read a config file with its presets, not yet validated.

    ``Config.fromfile`` (a ``package::path`` name such as
    ``'mmdet3d::centerpoint/...py'`` is looked up in the package), mmdet3d
    0.x keys translated (the migration table is logged), the presets named
    by ``presets = [...]`` merged in order and the ``presets`` key removed;
    ``runner_type`` defaults to :data:`DEFAULT_RUNNER_TYPE`. The first step
    of :func:`load_config` and of the tools' ``cli.prepare_run``, which
    merge their overrides and then validate once.

    Args:
        path (str): Config file.

    Returns:
        tuple[Config, list[str]]: The config and the presets merged.

    Raises:
        ValueError: For an unknown preset or a 0.x key with no translation.
    """
    cfg = _fromfile(path)

    cfg, rows = translate_legacy(cfg)
    if rows:
        print_log(
            f'{path}: translated {len(rows)} mmdet3d 0.x setting(s) to '
            'mmengine keys (write these keys to silence this table; '
            'tools/migrate_config.py does it):\n' +
            format_migration_table(rows),
            logger='current')

    names = preset_names_of(cfg)
    cfg.pop('presets', None)
    merge_presets(cfg, names)
    if 'runner_type' not in cfg:
        cfg.runner_type = DEFAULT_RUNNER_TYPE
    return cfg, names


def merge_cfg_options(cfg: Config, cfg_options: Optional[Dict]) -> Config:
    """Merge ``--cfg-options`` (``{'a.b': value}``) into ``cfg`` in place.

    Raises:
        ValueError: If an option sets ``presets`` (merged before them).
    """
    if not cfg_options:
        return cfg
    if any(key == 'presets' or key.startswith('presets.')
           for key in cfg_options):
        raise ValueError(
            'load_config: presets cannot be set by --cfg-options, they '
            'are merged before the options; use --accum N / --amp MODE, '
            'or presets = [...] in the config.')
    cfg.merge_from_dict(cfg_options)
    return cfg


def settings_source(path: str, presets: Sequence[str] = (),
                    **flags) -> str:
    """``path``, and what changed its settings, as the context prefix of
    :func:`validate_optim_wrapper`'s errors (``flags``: the keywords of
    :func:`~.presets.applied_by`)."""
    applied = applied_by(presets=presets, **flags)
    return f'{path} (after {applied})' if applied else path


def load_config(path: str, cfg_options: Optional[Dict] = None) -> Config:
    """Load a config as the plugin's tools do, without their flags.

    Steps, in order (the tools continue with ``--amp`` / ``--accum`` /
    ``--data-root`` before validating, see ``cli.prepare_run``):

    1. ``Config.fromfile`` (a ``package::path`` name such as
       ``'mmdet3d::centerpoint/...py'`` is looked up in the package);
    2. mmdet3d 0.x keys (``optimizer_config``, ``fp16``, ``lr_config``,
       ``data``, ...) are translated, and the migration table is logged;
    3. the presets named by ``presets = [...]`` are merged in order from
       ``configs/_base_/presets`` and the ``presets`` key is removed, and
       ``runner_type`` defaults to :data:`DEFAULT_RUNNER_TYPE`
       (steps 1-3: :func:`read_config`);
    4. ``cfg_options`` (``--cfg-options``) are merged;
    5. the accumulation and precision values are validated (integer loss
       scales become floats); an error names what set them.

    Args:
        path (str): Config file.
        cfg_options (dict, optional): ``{'a.b': value}`` overrides, as
            parsed by mmengine's ``DictAction``. Defaults to None.

    Returns:
        Config: The config, ready for ``RUNNERS.build`` (mmdet3d's registry).

    Raises:
        ValueError: For an unknown preset, a 0.x key with no translation, or
            accumulation / loss scale values out of range.

    Examples:
        >>> # configs/my_centerpoint.py:
        >>> #   _base_ = ['mmdet3d::centerpoint/centerpoint_pillar02_'
        >>> #             'second_secfpn_8xb4-cyclic-20e_nus-3d.py']
        >>> #   presets = ['grad_accum_x4', 'fp16']
        >>> cfg = load_config('configs/my_centerpoint.py')
        >>> cfg.optim_wrapper.type, cfg.optim_wrapper.accumulative_counts
        ('AmpOptimWrapper', 4)
    """
    cfg, names = read_config(path)
    merge_cfg_options(cfg, cfg_options)
    validate_optim_wrapper(
        cfg, settings_source(path, names, cfg_options=bool(cfg_options)))
    return cfg


def migrate_config(path: str,
                   out: str,
                   cfg_options: Optional[Dict] = None,
                   plugin: bool = True) -> Config:
    """Write ``path`` as a plain mmengine config that stock tools run.

    Presets are merged, 0.x keys translated and the ``presets`` key removed
    (:func:`load_config`); ``_base_`` files are flattened into one file.

    Args:
        path (str): Config to migrate.
        out (str): ``.py`` file to write.
        cfg_options (dict, optional): Overrides merged before writing.
        plugin (bool): Keep :class:`PluginRunner` and import this plugin via
            ``custom_imports`` (stock ``tools/train.py`` runs it when the
            plugin is installed). False writes a config for mmdet3d without
            the plugin: mmengine's Runner, and ``AmpOptimWrapper`` for
            bfloat16 (GPU only). Defaults to True.

    Returns:
        Config: The config as written.
    """
    if not out.endswith('.py'):
        raise ValueError(
            f'migrate_config: the output must be a .py file, got {out!r}.')
    cfg = load_config(path, cfg_options)
    imports = dict(cfg.get('custom_imports') or {})
    modules = list(imports.get('imports') or [])
    if isinstance(modules, str):
        modules = [modules]
    if plugin:
        if PLUGIN_MODULE not in modules:
            modules.append(PLUGIN_MODULE)
        imports['imports'] = modules
        imports.setdefault('allow_failed_imports', False)
        cfg.custom_imports = imports
    else:
        if cfg.get('runner_type') == DEFAULT_RUNNER_TYPE:
            cfg.pop('runner_type')
        optim_wrapper = cfg.get('optim_wrapper') or {}
        if optim_wrapper.get('type') in BF16_TYPES:
            optim_wrapper['type'] = 'AmpOptimWrapper'
            print_log(
                f'{out}: bf16 uses mmengine\'s AmpOptimWrapper '
                "(dtype='bfloat16') without the plugin, which needs a GPU.",
                logger='current')
        if optim_wrapper.get('accumulative_counts', 1) > 1:
            print_log(
                f'{out}: without the plugin, auto_scale_lr ignores '
                'accumulative_counts and resuming inside an accumulation '
                'cycle loses that cycle\'s gradients.',
                logger='current')
        if PLUGIN_MODULE in modules:
            modules.remove(PLUGIN_MODULE)
            print_log(
                f'{out}: removed {PLUGIN_MODULE} from custom_imports; types '
                'it registers no longer resolve.',
                logger='current')
            if modules:
                imports['imports'] = modules
                cfg.custom_imports = imports
            else:
                cfg.pop('custom_imports')
    cfg.dump(out)
    print_log(f'wrote {out}', logger='current')
    return cfg
