"""Loading configs: presets, ``--cfg-options``, the data root, 0.x
translation (``legacy/``)."""
from .data_root import redirect_data_root, unwrap_datasets
from .legacy import format_migration_table, translate_legacy
from .loading import add_cfg_options, load_config, migrate_config
from .presets import (add_train_flags, apply_presets, apply_train_flags,
                      known_presets)

__all__ = [
    'add_cfg_options', 'add_train_flags', 'apply_presets',
    'apply_train_flags', 'format_migration_table', 'known_presets',
    'load_config', 'migrate_config', 'redirect_data_root',
    'translate_legacy', 'unwrap_datasets'
]
