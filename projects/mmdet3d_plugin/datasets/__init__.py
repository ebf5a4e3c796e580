from .picklable import PicklableDetectionConfig, PicklableStateMixin
from .safe_nuscenes_dataset import SafeNuScenesDataset

__all__ = [
    'PicklableDetectionConfig', 'PicklableStateMixin', 'SafeNuScenesDataset'
]
