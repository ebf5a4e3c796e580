"""The import paths of earlier releases, kept working outside the layers of
``.importlinter``: each name here warns (``DeprecationWarning``) and is the
object of the capability folder that holds it now (``config``,
``datasets``, ``pickling``, ``synthetic``, ``dist``, ``cli``). New code
imports from there, e.g. ``projects.mmdet3d_plugin.pickling.find_unpicklable``.
"""
from .. import cli, config, datasets, dist, pickling, synthetic
from .moved import moved_names

_MOVED = {
    'find_unused_parameters': cli,
    **{name: config for name in (
        'add_train_flags', 'apply_presets', 'apply_train_flags',
        'format_migration_table', 'known_presets', 'load_config',
        'redirect_data_root', 'translate_legacy')},
    **{name: pickling for name in ('check_picklable', 'find_unpicklable')},
    'setup_forkserver_preload': datasets,
    'free_port': dist,
    **{name: synthetic for name in (
        'SyntheticNuScenesConfig', 'create_nuscenes_infos',
        'generate_synthetic_nuscenes', 'load_mmdet3d_converter',
        'prepare_synthetic_nuscenes')},
}
__all__ = sorted(_MOVED)
__getattr__, __dir__ = moved_names(__name__, _MOVED)
del cli, config, datasets, dist, pickling, synthetic
