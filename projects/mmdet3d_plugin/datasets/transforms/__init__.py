"""Faster versions of mmdet3d's LiDAR train transforms, registered in
mmdet3d's ``TRANSFORMS`` as ``Fast<stock name>``: same arguments, the same
points and boxes bit for bit, the same random draws in the same order
(``tests/datasets/transforms`` compares each with stock). Preset
``'fast_pipeline'`` puts them into every pipeline of a config."""
from .db_sampler import FastDataBaseSampler
from .global_rot_scale_trans import FastGlobalRotScaleTrans
from .load_points_from_file import FastLoadPointsFromFile
from .load_points_from_multi_sweeps import FastLoadPointsFromMultiSweeps
from .object_sample import FastObjectSample
from .point_shuffle import FastPointShuffle
from .points_range_filter import FastPointsRangeFilter

__all__ = [
    'FastDataBaseSampler', 'FastGlobalRotScaleTrans', 'FastLoadPointsFromFile',
    'FastLoadPointsFromMultiSweeps', 'FastObjectSample', 'FastPointShuffle',
    'FastPointsRangeFilter'
]
