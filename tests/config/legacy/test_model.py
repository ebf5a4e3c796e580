"""The 0.x ``model`` section: translated, or refused with the key paths.

The equality with mmdet3d's own 1.x configs is checked in
``tests/config/legacy/test_upstream.py``; here are the rules one by one and the
refusals (a 0.x plugin's model classes, a misspelt type).
"""
import runpy
from pathlib import Path

import pytest
from mmengine.config import Config

from projects.mmdet3d_plugin import load_config
from projects.mmdet3d_plugin.config.legacy.translator import translate_legacy
from tests.helpers.upstream_configs import mmdet3d_0x_configs

REPO = Path(__file__).resolve().parents[3]

# A 0.x model by itself (no other 0.x key): one-stage, dynamic voxels, a 3D
# and a 2D MaxIoUAssigner, mmcv settings that are not registry types.
VOXELNET_0X = """
model = dict(
    type='DynamicVoxelNet',
    voxel_layer=dict(max_num_points=-1, point_cloud_range=[0, -40, -3, 70.4,
                     40, 1], voxel_size=[0.05, 0.05, 0.1],
                     max_voxels=(-1, -1)),
    voxel_encoder=dict(type='DynamicSimpleVFE', voxel_size=[0.05, 0.05, 0.1],
                       point_cloud_range=[0, -40, -3, 70.4, 40, 1]),
    middle_encoder=dict(type='SparseEncoder', in_channels=4,
                        sparse_shape=[41, 1600, 1408], order=('conv', 'norm',
                                                              'act')),
    backbone=dict(type='SECOND', in_channels=256, out_channels=[128, 256],
                  layer_nums=[5, 5], layer_strides=[1, 2],
                  norm_cfg=dict(type='BN', eps=1e-3, momentum=0.01),
                  conv_cfg=dict(type='Conv2d', bias=False)),
    neck=dict(type='FPN', in_channels=[128, 256], out_channels=256,
              num_outs=2),
    bbox_head=dict(
        type='Anchor3DHead', num_classes=1, in_channels=256,
        feat_channels=256,
        anchor_generator=dict(type='Anchor3DRangeGenerator',
                              ranges=[[0, -40.0, -1.78, 70.4, 40.0, -1.78]],
                              sizes=[[3.9, 1.6, 1.56]], rotations=[0, 1.57]),
        bbox_coder=dict(type='DeltaXYZWLHRBBoxCoder'),
        loss_cls=dict(type='FocalLoss', use_sigmoid=True, gamma=2.0,
                      alpha=0.25, loss_weight=1.0),
        loss_bbox=dict(type='SmoothL1Loss', beta=1.0 / 9.0, loss_weight=2.0),
        loss_dir=dict(type='CrossEntropyLoss', use_sigmoid=False,
                      loss_weight=0.2)),
    train_cfg=dict(
        assigner=[
            dict(type='MaxIoUAssigner',
                 iou_calculator=dict(type='BboxOverlapsNearest3D'),
                 pos_iou_thr=0.6, neg_iou_thr=0.45, min_pos_iou=0.45),
            dict(type='MaxIoUAssigner',
                 iou_calculator=dict(type='BboxOverlaps2D'),
                 pos_iou_thr=0.7, neg_iou_thr=0.3, min_pos_iou=0.3),
        ],
        allowed_border=0, pos_weight=-1, debug=False),
    test_cfg=dict(use_rotate_nms=True, nms_pre=100, nms_thr=0.01,
                  score_thr=0.1, min_bbox_size=0, max_num=50,
                  nms=dict(type='nms', iou_threshold=0.7)))
"""


@pytest.fixture(scope='module')
def mmdet3d_0x() -> Path:
    """mmdet3d 0.x's configs folder (downloaded once, upstream_configs)."""
    return mmdet3d_0x_configs()


def _write(tmp_path: Path, text: str, name: str = 'cfg.py') -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_model_rules(tmp_path):
    cfg, rows = translate_legacy(
        Config.fromfile(_write(tmp_path, VOXELNET_0X)))
    model = cfg.model
    assert 'voxel_layer' not in model
    assert model.data_preprocessor == dict(
        type='Det3DDataPreprocessor', voxel=True, voxel_type='dynamic',
        voxel_layer=dict(max_num_points=-1,
                         point_cloud_range=[0, -40, -3, 70.4, 40, 1],
                         voxel_size=[0.05, 0.05, 0.1], max_voxels=(-1, -1)))
    head = model.bbox_head
    assert (head.loss_cls.type, head.loss_bbox.type, head.loss_dir.type) == (
        'mmdet.FocalLoss', 'mmdet.SmoothL1Loss', 'mmdet.CrossEntropyLoss')
    assert model.neck.type == 'mmdet.FPN'
    # mmdet3d's own types and mmengine/mmcv layers keep no scope.
    assert (model.type, model.backbone.norm_cfg.type, head.bbox_coder.type) \
        == ('DynamicVoxelNet', 'BN', 'DeltaXYZWLHRBBoxCoder')
    assert [a.type for a in model.train_cfg.assigner] == [
        'Max3DIoUAssigner', 'mmdet.MaxIoUAssigner']
    assert model.train_cfg.assigner[1].iou_calculator.type == \
        'mmdet.BboxOverlaps2D'
    # mmcv's nms settings are not registry types.
    assert model.test_cfg.nms == dict(type='nms', iou_threshold=0.7)
    assert ('model.train_cfg.assigner[0].type=\'MaxIoUAssigner\'',
            'model.train_cfg.assigner[0].type=\'Max3DIoUAssigner\'',
            'a 3D iou_calculator') in rows
    assert ('model.voxel_layer', 'model.data_preprocessor.voxel_layer',
            'voxel=True, dynamic') in rows


def test_two_stage_renamed_argument(mmdet3d_0x):
    cfg, rows = translate_legacy(Config.fromfile(str(
        mmdet3d_0x / 'parta2/hv_PartA2_secfpn_2x8_cyclic_80e_kitti-3d-'
        '3class.py')))
    roi_head = cfg.model.roi_head
    assert 'part_roi_extractor' not in roi_head
    assert roi_head.bbox_roi_extractor.roi_layer.type == 'RoIAwarePool3d'
    assert ('model.roi_head.part_roi_extractor',
            'model.roi_head.bbox_roi_extractor', 'renamed argument') in rows


def test_multi_modality_image_settings(mmdet3d_0x):
    cfg, _ = translate_legacy(Config.fromfile(str(
        mmdet3d_0x / 'mvxnet/dv_mvx-fpn_second_secfpn_adamw_2x8_80e_kitti-3d-'
        '3class.py')))
    preprocessor = cfg.model.data_preprocessor
    assert (preprocessor.voxel_type, preprocessor.bgr_to_rgb,
            preprocessor.pad_size_divisor) == ('dynamic', False, 32)
    assert preprocessor.mean == [103.530, 116.280, 123.675]
    for loader in ('train_dataloader', 'test_dataloader'):
        dataset = cfg[loader].dataset
        steps = str(dataset.get('dataset', dataset).pipeline)
        assert 'Normalize' not in steps and "'Pad'" not in steps


# A 0.x BEVFormer-style config (the shape of UniAD's and BEVFormer's own):
# model classes that only their 0.x plugin registers.
BEVFORMER_0X = """
plugin = True
plugin_dir = 'projects/mmdet3d_plugin/'
_dim_ = 256
point_cloud_range = [-51.2, -51.2, -5.0, 51.2, 51.2, 3.0]
model = dict(
    type='BEVFormer',
    use_grid_mask=True,
    img_backbone=dict(
        type='ResNet', depth=101, num_stages=4, out_indices=(1, 2, 3),
        norm_cfg=dict(type='BN2d', requires_grad=False), style='caffe',
        dcn=dict(type='DCNv2', deform_groups=1, fallback_on_stride=False),
        stage_with_dcn=(False, False, True, True)),
    img_neck=dict(type='FPN', in_channels=[512, 1024, 2048],
                  out_channels=_dim_, num_outs=4),
    pts_bbox_head=dict(
        type='BEVFormerHead', bev_h=50, bev_w=50, num_query=900,
        num_classes=10, in_channels=_dim_,
        transformer=dict(
            type='PerceptionTransformer',
            encoder=dict(
                type='BEVFormerEncoder', num_layers=3,
                transformerlayers=dict(
                    type='BEVFormerLayer',
                    attn_cfgs=[
                        dict(type='TemporalSelfAttention', embed_dims=_dim_),
                        dict(type='SpatialCrossAttention',
                             deformable_attention=dict(
                                 type='MSDeformableAttention3D',
                                 embed_dims=_dim_)),
                    ],
                    operation_order=('self_attn', 'norm', 'cross_attn',
                                     'norm', 'ffn', 'norm')))),
        bbox_coder=dict(type='NMSFreeCoder', pc_range=point_cloud_range,
                        max_num=300, num_classes=10),
        positional_encoding=dict(type='LearnedPositionalEncoding',
                                 num_feats=128, row_num_embed=50,
                                 col_num_embed=50),
        loss_cls=dict(type='FocalLoss', use_sigmoid=True, gamma=2.0,
                      alpha=0.25, loss_weight=2.0),
        loss_bbox=dict(type='L1Loss', loss_weight=0.25)),
    train_cfg=dict(pts=dict(
        grid_size=[512, 512, 1], point_cloud_range=point_cloud_range,
        assigner=dict(type='HungarianAssigner3D',
                      cls_cost=dict(type='FocalLossCost', weight=2.0),
                      reg_cost=dict(type='BBox3DL1Cost', weight=0.25),
                      pc_range=point_cloud_range))))
optimizer = dict(type='AdamW', lr=2e-4, weight_decay=0.01)
optimizer_config = dict(grad_clip=dict(max_norm=35, norm_type=2))
"""
#: The plugin's own types in BEVFORMER_0X and their key paths; the rest
#: (ResNet, FPN, FocalLoss, DCNv2, FocalLossCost, ...) exist in 1.x.
BEVFORMER_UNREGISTERED = {
    'BEVFormer': 'model.type',
    'BEVFormerHead': 'model.pts_bbox_head.type',
    'PerceptionTransformer': 'model.pts_bbox_head.transformer.type',
    'BEVFormerEncoder': 'model.pts_bbox_head.transformer.encoder.type',
    'BEVFormerLayer':
    'model.pts_bbox_head.transformer.encoder.transformerlayers.type',
    'TemporalSelfAttention': 'model.pts_bbox_head.transformer.encoder.'
    'transformerlayers.attn_cfgs[0].type',
    'SpatialCrossAttention': 'model.pts_bbox_head.transformer.encoder.'
    'transformerlayers.attn_cfgs[1].type',
    'MSDeformableAttention3D': 'model.pts_bbox_head.transformer.encoder.'
    'transformerlayers.attn_cfgs[1].deformable_attention.type',
    'NMSFreeCoder': 'model.pts_bbox_head.bbox_coder.type',
    'HungarianAssigner3D': 'model.train_cfg.pts.assigner.type',
    'BBox3DL1Cost': 'model.train_cfg.pts.assigner.reg_cost.type',
}


def test_plugin_model_refused(tmp_path):
    path = _write(tmp_path, BEVFORMER_0X)
    with pytest.raises(ValueError) as info:
        load_config(path)
    message = str(info.value)
    first = message.splitlines()[0]
    assert first.startswith(
        f'legacy config: the model uses {len(BEVFORMER_UNREGISTERED)} '
        'type(s) registered neither in mmdet3d 1.x nor in mmdet 3.x: ')
    assert sorted(first.rsplit(': ', 1)[1].split(', ')) == sorted(
        BEVFORMER_UNREGISTERED)
    for kind, key in BEVFORMER_UNREGISTERED.items():
        assert f'  {key} = {kind!r}' in message
    for registered in ('ResNet', 'FPN', 'FocalLoss', 'DCNv2',
                       'FocalLossCost', 'LearnedPositionalEncoding'):
        assert f'= {registered!r}' not in message
    assert "the 0.x plugin in 'projects/mmdet3d_plugin/' (plugin_dir) is " \
        'ported to mmdet3d 1.x' in message
    assert 'custom_imports' in message


def test_plugin_model_refused_by_the_tool(tmp_path, capsys):
    old = _write(tmp_path, BEVFORMER_0X)
    tool = runpy.run_path(str(REPO / 'tools/migrate_config.py'),
                          run_name='migrate_config')
    with pytest.raises(SystemExit) as info:
        tool['main']([old, str(tmp_path / 'new.py')])
    err = capsys.readouterr().err
    assert info.value.code == 1
    assert 'error: legacy config: the model uses 11 type(s)' in err
    assert 'TypeError' not in err and 'Traceback' not in err
    assert not (tmp_path / 'new.py').exists()


def test_misspelt_type_refused_with_candidates(tmp_path, mmdet3d_0x):
    base = mmdet3d_0x / ('centerpoint/centerpoint_02pillar_second_secfpn_'
                         '4x8_cyclic_20e_nus.py')
    path = _write(
        tmp_path, f'_base_ = [{str(base)!r}]\n'
        "model = dict(pts_bbox_head=dict(loss_cls=dict(type="
        "'GausianFocalLoss')))\n")
    with pytest.raises(
            ValueError,
            match=r"(?s)1 type\(s\) registered neither.*"
            r"  model\.pts_bbox_head\.loss_cls\.type = 'GausianFocalLoss' "
            r'\(closest registered: GaussianFocalLoss'):
        load_config(path)
