# VoxelNet (voxel01) on nuScenes, 10 classes, trained with mmdet3d's nuScenes
# dataset base (10 sweeps, no GT-database sampling) and its cyclic 20-epoch
# schedule, on the pickle-safe SafeNuScenesDataset / SafeNuScenesMetric.
_base_ = [
    '../_base_/models/voxelnet_voxel01_secfpn_nus.py',
    'mmdet3d::_base_/datasets/nus-3d.py',
    'mmdet3d::_base_/schedules/cyclic-20e.py',
    'mmdet3d::_base_/default_runtime.py',
]

custom_imports = dict(
    imports=['projects.mmdet3d_plugin'], allow_failed_imports=False)
# The plugin's Fast* point loading, GT-database sampling, range filter and
# shuffle: the same samples bit for bit, faster (configs/_base_/presets).
presets = ['fast_pipeline']

# The dataset base filters points and boxes to +-50 m, inside the model's
# +-51.2 m voxel range; the nuScenes benchmark evaluates up to 50 m.
dataset_type = 'SafeNuScenesDataset'
train_dataloader = dict(dataset=dict(type=dataset_type))
val_dataloader = dict(dataset=dict(type=dataset_type))
test_dataloader = dict(dataset=dict(type=dataset_type))

val_evaluator = dict(type='SafeNuScenesMetric')
test_evaluator = dict(type='SafeNuScenesMetric')
