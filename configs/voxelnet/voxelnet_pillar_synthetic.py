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
    'mmdet3d::_base_/default_runtime.py',
]

custom_imports = dict(
    imports=['projects.mmdet3d_plugin'], allow_failed_imports=False)

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

# Iteration-based one-cycle schedule (see centerpoint_pillar_synthetic.py).
lr = 2e-3
max_iters = 400
optim_wrapper = dict(
    type='OptimWrapper',
    optimizer=dict(type='AdamW', lr=lr, weight_decay=0.01),
    clip_grad=dict(max_norm=35, norm_type=2))
param_scheduler = [
    dict(
        type='LinearLR',
        start_factor=0.1,
        by_epoch=False,
        begin=0,
        end=max_iters // 10),
    dict(
        type='CosineAnnealingLR',
        T_max=max_iters - max_iters // 10,
        eta_min=lr * 1e-2,
        by_epoch=False,
        begin=max_iters // 10,
        end=max_iters),
]
train_cfg = dict(
    type='IterBasedTrainLoop', max_iters=max_iters, val_interval=max_iters)
val_cfg = dict(type='ValLoop')
test_cfg = dict(type='TestLoop')

default_hooks = dict(
    logger=dict(type='LoggerHook', interval=10),
    checkpoint=dict(
        type='CheckpointHook', by_epoch=False, interval=max_iters))
log_processor = dict(by_epoch=False)
auto_scale_lr = dict(enable=False, base_batch_size=4)
