"""The pickle-safe nuScenes dataset, its shared infos, input checks and the
pickle audit."""
from .builder import SPLITS, build_split_dataset
from .forkserver import setup_forkserver_preload
from .picklable import PicklableDetectionConfig, PicklableStateMixin
from .pickle_audit import check_picklable, find_unpicklable
from .safe_nuscenes_dataset import SafeNuScenesDataset

__all__ = [
    'PicklableDetectionConfig', 'PicklableStateMixin', 'SPLITS',
    'SafeNuScenesDataset', 'build_split_dataset', 'check_picklable',
    'find_unpicklable', 'setup_forkserver_preload'
]
