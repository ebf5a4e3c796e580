# A small CenterPoint (pillars) that learns the generated nuScenes-format data
# on CPUs in minutes: +-40 m, 0.4 m pillars, 3 sweeps, narrow SECOND/SECONDFPN
# and CenterHead (1x1 convolutions in the task heads), a 400-iteration
# one-cycle schedule. Same structure as
# centerpoint_pillar02_second_secfpn_8xb4-cyclic-20e_nus-3d.py (the six task
# heads included), so whatever runs here runs there.
#
#   python tools/train.py configs/centerpoint/centerpoint_pillar_synthetic.py
#   bash tools/dist_train.sh \
#       configs/centerpoint/centerpoint_pillar_synthetic.py 2
_base_ = [
    '../_base_/datasets/nus-synthetic-3d.py',
    'mmdet3d::_base_/models/centerpoint_pillar02_second_secfpn_nus.py',
    '../_base_/schedules/synthetic-400i.py',
    'mmdet3d::_base_/default_runtime.py',
]

custom_imports = dict(
    imports=['projects.mmdet3d_plugin'], allow_failed_imports=False)
# The plugin's Fast* point loading, GT-database sampling, range filter and
# shuffle: the same samples bit for bit, faster (configs/_base_/presets).
presets = ['fast_pipeline']

point_cloud_range = [-40.0, -40.0, -5.0, 40.0, 40.0, 3.0]
voxel_size = [0.4, 0.4, 8]
grid_size = [200, 200, 1]  # (range / voxel size), x and y
post_center_range = [-50.0, -50.0, -10.0, 50.0, 50.0, 10.0]
model = dict(
    data_preprocessor=dict(
        voxel_layer=dict(
            max_num_points=20,
            point_cloud_range=point_cloud_range,
            voxel_size=voxel_size,
            max_voxels=(16000, 16000))),
    pts_voxel_encoder=dict(
        feat_channels=[32],
        voxel_size=voxel_size,
        point_cloud_range=point_cloud_range),
    pts_middle_encoder=dict(in_channels=32, output_shape=grid_size[:2]),
    pts_backbone=dict(
        in_channels=32, out_channels=[32, 64, 128], layer_nums=[1, 2, 2]),
    pts_neck=dict(in_channels=[32, 64, 128], out_channels=[64, 64, 64]),
    pts_bbox_head=dict(
        in_channels=192,
        share_conv_channel=32,
        separate_head=dict(head_conv=32, final_kernel=1),
        bbox_coder=dict(
            post_center_range=post_center_range,
            max_num=200,
            pc_range=point_cloud_range[:2],
            voxel_size=voxel_size[:2])),
    train_cfg=dict(
        pts=dict(
            grid_size=grid_size,
            voxel_size=voxel_size,
            point_cloud_range=point_cloud_range,
            max_objs=200)),
    test_cfg=dict(
        pts=dict(
            post_center_limit_range=post_center_range,
            max_per_img=200,
            pc_range=point_cloud_range[:2],
            voxel_size=voxel_size[:2])))

# Schedule: ../_base_/schedules/synthetic-400i.py; a checkpoint at its end.
default_hooks = dict(
    logger=dict(type='LoggerHook', interval=10),
    checkpoint=dict(
        type='CheckpointHook', by_epoch=False, interval=400))
log_processor = dict(by_epoch=False)
