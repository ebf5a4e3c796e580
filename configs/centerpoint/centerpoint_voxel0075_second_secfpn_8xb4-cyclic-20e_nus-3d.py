# CenterPoint (voxel0075) on nuScenes: mmdet3d's packaged config with the
# pickle-safe SafeNuScenesDataset / SafeNuScenesMetric, so dataloader workers
# can be started with 'spawn' or 'forkserver' as well as 'fork'.
_base_ = [
    'mmdet3d::centerpoint/centerpoint_voxel0075_second_secfpn_8xb4-cyclic-20e_nus-3d.py'  # noqa: E501
]

custom_imports = dict(
    imports=['projects.mmdet3d_plugin'], allow_failed_imports=False)
# The plugin's Fast* point loading, GT-database sampling, range filter and
# shuffle: the same samples bit for bit, faster (configs/_base_/presets).
presets = ['fast_pipeline']

dataset_type = 'SafeNuScenesDataset'

# The training set is wrapped in CBGSDataset (class-balanced grouping).
train_dataloader = dict(dataset=dict(dataset=dict(type=dataset_type)))
val_dataloader = dict(dataset=dict(type=dataset_type))
test_dataloader = dict(dataset=dict(type=dataset_type))

val_evaluator = dict(type='SafeNuScenesMetric')
test_evaluator = dict(type='SafeNuScenesMetric')
