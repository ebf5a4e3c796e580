"""The import paths of earlier releases, kept working: every name here is
re-exported from the capability folder that holds it now (``config``,
``datasets``, ``synthetic``, ``engine``, ``apis``). New code imports from
there."""
from ..apis.find_unused import find_unused_parameters
from ..config import (add_train_flags, apply_presets, apply_train_flags,
                      format_migration_table, known_presets, load_config,
                      redirect_data_root, translate_legacy)
from ..datasets import setup_forkserver_preload
from ..dist.ports import free_port
from ..pickling import check_picklable, find_unpicklable
from ..synthetic import (SyntheticNuScenesConfig, create_nuscenes_infos,
                         generate_synthetic_nuscenes, load_mmdet3d_converter,
                         prepare_synthetic_nuscenes)

__all__ = [
    'SyntheticNuScenesConfig', 'add_train_flags', 'apply_presets',
    'apply_train_flags', 'check_picklable', 'create_nuscenes_infos',
    'find_unpicklable', 'find_unused_parameters', 'format_migration_table',
    'free_port', 'generate_synthetic_nuscenes', 'known_presets',
    'load_config', 'load_mmdet3d_converter', 'prepare_synthetic_nuscenes',
    'redirect_data_root', 'setup_forkserver_preload', 'translate_legacy'
]
