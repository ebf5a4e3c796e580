"""nuScenes evaluation, split as mmdet3d's: ``metrics/`` (the registered
metric, rank 0 evaluating) over ``functional/`` (pure computation)."""
from .functional.gt_cache import GroundTruth, load_ground_truth
from .functional.nusc_format import NuscBoxes, SampleFrame, lidar_to_global
from .functional.detection_eval import Predictions, evaluate
from .functional.results_json import write_results_json
from .metrics import (BACKENDS, Rank0EvaluateMixin, SafeNuScenesMetric,
                      rank0_wait_group)

__all__ = [
    'BACKENDS', 'GroundTruth', 'NuscBoxes', 'Predictions',
    'Rank0EvaluateMixin', 'SafeNuScenesMetric', 'SampleFrame', 'evaluate',
    'lidar_to_global', 'load_ground_truth', 'rank0_wait_group',
    'write_results_json'
]
