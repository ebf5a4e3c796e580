from .safe_nuscenes_metric import SafeNuScenesMetric

__all__ = ['SafeNuScenesMetric']
