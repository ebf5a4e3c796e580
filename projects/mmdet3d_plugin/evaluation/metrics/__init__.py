"""The registered metric and the rank-0 evaluation it is built on."""
from .rank0_evaluate import Rank0EvaluateMixin, rank0_wait_group
from .safe_nuscenes_metric import BACKENDS, SafeNuScenesMetric

__all__ = [
    'BACKENDS', 'Rank0EvaluateMixin', 'SafeNuScenesMetric',
    'rank0_wait_group'
]
