"""Pure computation of the nuScenes evaluation: the devkit's boxes as
arrays, the ground truth cached on disk, the devkit's ``DetectionEval`` on
arrays and the result file (as ``mmdet3d.evaluation.functional`` beside its
metrics)."""
from .detection_eval import Predictions, evaluate
from .gt_cache import GroundTruth, load_ground_truth
from .nusc_format import NuscBoxes, SampleFrame, lidar_to_global
from .results_json import write_results_json

__all__ = [
    'GroundTruth', 'NuscBoxes', 'Predictions', 'SampleFrame', 'evaluate',
    'lidar_to_global', 'load_ground_truth', 'write_results_json'
]
