"""Pure computation of the nuScenes evaluation: the devkit's boxes as
arrays, the ground truth cached on disk, the devkit's ``DetectionEval`` on
arrays and the result file (as ``mmdet3d.evaluation.functional`` beside its
metrics)."""
