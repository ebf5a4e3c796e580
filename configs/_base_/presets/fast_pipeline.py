# The fast LiDAR data pipeline: mmdet3d's point loading, GT-database
# sampling, global rotation / scaling, range filtering and shuffling
# replaced by the plugin's Fast* transforms
# (projects/mmdet3d_plugin/datasets/transforms), which take the
# same arguments and give the same samples bit for bit, with the same random
# draws, so training is unchanged. The CenterPoint pillar02 train pipeline
# at nuScenes density runs about 3.6x the samples per second on one core,
# and a fresh worker compiles none of mmdet3d's numba kernels before its
# first sample: the plugin's own load from numba's cache
# (benchmarks/bench_pipeline.py).
#
# Use when data loading limits training (GPUs waiting for batches, many
# sweeps, ObjectSample) or workers start often; it changes nothing else.
# It needs the plugin imported (custom_imports of projects.mmdet3d_plugin,
# as the shipped configs have).
#
# Compose it from a config with presets = ['fast_pipeline'] (with any other
# presets): every pipeline of the config (train, val, test, nested
# transforms, db_sampler and its points_loader) gets the Fast* types.
transform_types = dict(
    LoadPointsFromFile='FastLoadPointsFromFile',
    LoadPointsFromMultiSweeps='FastLoadPointsFromMultiSweeps',
    ObjectSample='FastObjectSample',
    DataBaseSampler='FastDataBaseSampler',
    GlobalRotScaleTrans='FastGlobalRotScaleTrans',
    PointsRangeFilter='FastPointsRangeFilter',
    PointShuffle='FastPointShuffle',
)
