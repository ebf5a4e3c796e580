"""nuScenes evaluation, split as mmdet3d's: ``metrics/`` (the registered
metric, rank 0 evaluating) over ``functional/`` (pure computation)."""
from .functional import (GroundTruth, NuscBoxes, Predictions, SampleFrame,
                         evaluate, lidar_to_global, load_ground_truth,
                         write_results_json)
from .metrics import (BACKENDS, Rank0EvaluateMixin, SafeNuScenesMetric,
                      rank0_wait_group)

__all__ = [
    'BACKENDS', 'GroundTruth', 'NuscBoxes', 'Predictions',
    'Rank0EvaluateMixin', 'SafeNuScenesMetric', 'SampleFrame', 'evaluate',
    'lidar_to_global', 'load_ground_truth', 'rank0_wait_group',
    'write_results_json'
]
