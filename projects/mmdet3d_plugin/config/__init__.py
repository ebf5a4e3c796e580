"""Loading configs: presets, ``--cfg-options``, the data root, 0.x
translation (``legacy/``), a legacy ``plugin_dir``, the checkpoint hook."""
from .checkpoint_hook import use_atomic_checkpoints
from .data_root import redirect_data_root, unwrap_datasets
from .legacy import format_migration_table, translate_legacy
from .loading import (add_cfg_options, load_config, merge_cfg_options,
                      migrate_config, read_config)
from .plugin_dir import (PluginDirCollisionError, import_plugins,
                         locate_plugin_dir, plugin_dir_collision)
from .presets import (add_train_flags, apply_presets, apply_train_flags,
                      known_presets, merge_presets, merge_train_flags)

__all__ = [
    'PluginDirCollisionError', 'add_cfg_options', 'add_train_flags',
    'apply_presets', 'apply_train_flags', 'format_migration_table',
    'import_plugins', 'known_presets', 'load_config', 'locate_plugin_dir',
    'merge_cfg_options', 'merge_presets', 'merge_train_flags',
    'migrate_config', 'plugin_dir_collision', 'read_config',
    'redirect_data_root', 'translate_legacy', 'unwrap_datasets',
    'use_atomic_checkpoints'
]
