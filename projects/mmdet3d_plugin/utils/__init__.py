from .config import load_config
from .data_root import redirect_data_root
from .forkserver import setup_forkserver_preload
from .legacy_config import format_migration_table, translate_legacy
from .nuscenes_converter import create_nuscenes_infos, load_mmdet3d_converter
from .pickle_audit import check_picklable, find_unpicklable
from .ports import free_port, rendezvous_env
from .presets import (add_train_flags, apply_presets, apply_train_flags,
                      known_presets)
from .synthetic_nuscenes import (SyntheticNuScenesConfig,
                                 generate_synthetic_nuscenes,
                                 prepare_synthetic_nuscenes)
from .unused_params import find_unused_parameters

__all__ = [
    'check_picklable', 'find_unpicklable', 'free_port', 'rendezvous_env',
    'setup_forkserver_preload',
    'create_nuscenes_infos',
    'load_mmdet3d_converter', 'SyntheticNuScenesConfig',
    'generate_synthetic_nuscenes', 'prepare_synthetic_nuscenes',
    'find_unused_parameters', 'redirect_data_root', 'load_config',
    'apply_presets', 'apply_train_flags', 'add_train_flags', 'known_presets',
    'translate_legacy', 'format_migration_table'
]
