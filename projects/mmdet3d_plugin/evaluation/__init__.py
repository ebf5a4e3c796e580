from .detection_eval import Predictions, evaluate
from .gt_cache import GroundTruth, load_ground_truth
from .nusc_format import NuscBoxes, SampleFrame, lidar_to_global
from .rank0_evaluate import Rank0EvaluateMixin, rank0_wait_group
from .results_json import write_results_json
from .safe_nuscenes_metric import BACKENDS, SafeNuScenesMetric

__all__ = [
    'BACKENDS', 'GroundTruth', 'NuscBoxes', 'Predictions',
    'Rank0EvaluateMixin', 'SafeNuScenesMetric', 'SampleFrame', 'evaluate',
    'lidar_to_global', 'load_ground_truth', 'rank0_wait_group',
    'write_results_json'
]
