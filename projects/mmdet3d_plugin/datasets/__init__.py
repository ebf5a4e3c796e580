"""The pickle-safe nuScenes dataset, its shared infos, input checks and the
pickle audit."""
from .forkserver import setup_forkserver_preload
from .picklable import PicklableDetectionConfig, PicklableStateMixin
from .pickle_audit import check_picklable, find_unpicklable
from .safe_nuscenes_dataset import SafeNuScenesDataset

__all__ = [
    'PicklableDetectionConfig', 'PicklableStateMixin', 'SafeNuScenesDataset',
    'check_picklable', 'find_unpicklable', 'setup_forkserver_preload'
]
