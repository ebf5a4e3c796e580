# VoxelNet with sparse 3D convolutions for nuScenes: SECOND's encoder
# (HardSimpleVFE + SparseEncoder), the SECOND backbone with a SECONDFPN neck
# and the 10-class anchor head of voxelnet_pillar02_secfpn_nus.py, inherited
# from it (anchor statistics from mmdet3d's
# pointpillars_hv_secfpn_sbn-all_8xb4-2x_nus-3d).
# The sparse encoder downsamples x/y by 8: a 1024 x 1024 grid gives a
# 128 x 128 feature map. If the point cloud range or the voxel size changes,
# change the voxel layer, the sparse shape and the anchor ranges with it.
_base_ = ['./voxelnet_pillar02_secfpn_nus.py']

voxel_size = [0.1, 0.1, 0.2]
model = dict(
    data_preprocessor=dict(
        voxel_layer=dict(
            max_num_points=10,
            point_cloud_range=[-51.2, -51.2, -5.0, 51.2, 51.2, 3.0],
            voxel_size=voxel_size,
            max_voxels=(90000, 120000))),
    voxel_encoder=dict(
        _delete_=True, type='HardSimpleVFE', num_features=4),
    middle_encoder=dict(
        _delete_=True,
        type='SparseEncoder',
        in_channels=4,
        sparse_shape=[41, 1024, 1024],
        order=('conv', 'norm', 'act')),
    backbone=dict(
        in_channels=256,
        out_channels=[128, 256],
        layer_nums=[5, 5],
        layer_strides=[1, 2]),
    neck=dict(
        in_channels=[128, 256],
        out_channels=[256, 256],
        upsample_strides=[1, 2]),
    bbox_head=dict(in_channels=512, feat_channels=512))
