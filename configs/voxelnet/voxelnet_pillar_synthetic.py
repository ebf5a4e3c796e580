# A small VoxelNet (pillars, anchor head) for the generated nuScenes-format
# data, trainable on CPUs in minutes: +-40 m, 0.4 m pillars, 3 sweeps, narrow
# SECOND/SECONDFPN and the 10-class anchor head of
# voxelnet_pillar02_secfpn_8xb4-cyclic-20e_nus-3d.py on a 100 x 100 map.
#
#   python tools/train.py configs/voxelnet/voxelnet_pillar_synthetic.py
#   bash tools/dist_train.sh configs/voxelnet/voxelnet_pillar_synthetic.py 2
_base_ = [
    '../_base_/datasets/nus-synthetic-3d.py',
    '../_base_/models/voxelnet_pillar02_secfpn_nus.py',
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
# Anchor heights and sizes: nuScenes statistics (see the model base).
anchor_heights = [
    -1.80032795, -1.74440365, -1.68526504, -1.67339111, -1.61785072,
    -1.80984986, -1.763965
]
model = dict(
    data_preprocessor=dict(
        voxel_layer=dict(
            max_num_points=20,
            point_cloud_range=point_cloud_range,
            voxel_size=voxel_size,
            max_voxels=(16000, 16000))),
    voxel_encoder=dict(
        in_channels=5,
        feat_channels=[32],
        voxel_size=voxel_size,
        point_cloud_range=point_cloud_range),
    middle_encoder=dict(in_channels=32, output_shape=[200, 200]),
    backbone=dict(
        in_channels=32, out_channels=[32, 64, 128], layer_nums=[1, 2, 2]),
    neck=dict(in_channels=[32, 64, 128], out_channels=[32, 32, 32]),
    bbox_head=dict(
        in_channels=96,
        feat_channels=96,
        anchor_generator=dict(ranges=[[-40.0, -40.0, z, 40.0, 40.0, z]
                                      for z in anchor_heights])),
    # Anchors lie every 0.8 m: small objects (cones, pedestrians) rarely
    # reach an IoU of 0.3 with their best anchor, so accept lower ones.
    train_cfg=dict(
        assigner=dict(pos_iou_thr=0.5, neg_iou_thr=0.3, min_pos_iou=0.1)),
    test_cfg=dict(max_num=200))

# Schedule: ../_base_/schedules/synthetic-400i.py; a checkpoint at its end.
default_hooks = dict(
    logger=dict(type='LoggerHook', interval=10),
    checkpoint=dict(
        type='CheckpointHook', by_epoch=False, interval=400))
log_processor = dict(by_epoch=False)
