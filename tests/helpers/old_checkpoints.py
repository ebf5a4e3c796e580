"""0.x checkpoints of shipped-config size, as mmcv 1.x runners saved them:
the model's state dict, an AdamW state (two moments per parameter), and
``meta`` with ``mmdet3d_version``, ``mmcv_version``, the config text,
``CLASSES``, ``epoch`` and ``iter``. For the conversion benchmark and the
full-size test of ``tools/migrate_checkpoint.py``.

* ``voxel0075``, ``pillar02``: the shipped CenterPoint configs' models;
* ``voxelnet_pillar02``: the shipped VoxelNet pillar config's model, its
  config text with mmdet3d v0.18.1's nuScenes PointPillars anchors
  (w, l, h) and ``dir_offset=0.7854``;
* ``detr3d``, ``detr3d_no_refine``: DETR3D's state-dict names and shapes:
  ``img_backbone`` and ``img_neck`` built with mmdet from DETR3D's config
  (mmdet3d v1.4.0 ``projects/DETR3D/configs/detr3d_r101_gridmask.py``
  lines 31-51: caffe ResNet-101 with DCNv2 in stages 3 and 4, FPN to 256),
  ``pts_bbox_head`` with DETR3D's ``cls_branches`` and ``reg_branches``
  (``tests/helpers/box_heads.py``: ``RegBranches``; cloned per decoder
  layer with box refinement, one module six times without) and its
  ``query_embedding`` (900 x 512); DETR3D's transformer decoder (its own
  classes, not installed) is left out.
"""
import copy
from typing import Dict

import torch
from mmengine.config import Config
from torch import nn

from projects.mmdet3d_plugin.constants import NUSCENES_CLASSES
from tests.helpers.box_heads import EMBED_DIMS, LAYERS, RegBranches, randomize
from tests.helpers.model_steps import load

NAMES = ('voxel0075', 'pillar02', 'voxelnet_pillar02', 'detr3d',
         'detr3d_no_refine')
#: mmdet3d v0.18.1 hv_pointpillars_secfpn_sbn-all_4x8_2x_nus-3d.py lines
#: 31-38 (the sizes of the shipped VoxelNet config, as 0.x wrote them).
NUS_0X_SIZES = [
    [1.95017717, 4.60718145, 1.72270761],  # car
    [2.4560939, 6.73778078, 2.73004906],  # truck
    [2.87427237, 12.01320693, 3.81509561],  # trailer
    [0.60058911, 1.68452161, 1.27192197],  # bicycle
    [0.66344886, 0.7256437, 1.75748069],  # pedestrian
    [0.39694519, 0.40359262, 1.06232151],  # traffic_cone
    [2.49008838, 0.48578221, 0.98297065],  # barrier
]
#: DETR3D's image backbone and neck (detr3d_r101_gridmask.py lines 31-51).
DETR3D_BACKBONE = dict(
    type='mmdet.ResNet', depth=101, num_stages=4, out_indices=(0, 1, 2, 3),
    frozen_stages=1, norm_cfg=dict(type='BN2d', requires_grad=False),
    norm_eval=True, style='caffe',
    dcn=dict(type='DCNv2', deform_groups=1, fallback_on_stride=False),
    stage_with_dcn=(False, False, True, True))
DETR3D_NECK = dict(
    type='mmdet.FPN', in_channels=[256, 512, 1024, 2048], out_channels=256,
    start_level=1, add_extra_convs='on_output', num_outs=4,
    relu_before_extra_convs=True)


class Detr3DHeadWeights(nn.Module):
    """The weights of DETR3D's head that the tool reads: ``cls_branches``
    (Linear, LayerNorm, ReLU twice, Linear to 10 classes), ``reg_branches``
    and ``query_embedding``."""

    def __init__(self, with_box_refine: bool):
        super().__init__()
        cls = nn.Sequential(
            nn.Linear(EMBED_DIMS, EMBED_DIMS), nn.LayerNorm(EMBED_DIMS),
            nn.ReLU(), nn.Linear(EMBED_DIMS, EMBED_DIMS),
            nn.LayerNorm(EMBED_DIMS), nn.ReLU(),
            nn.Linear(EMBED_DIMS, len(NUSCENES_CLASSES)))
        self.cls_branches = nn.ModuleList(
            [copy.deepcopy(cls) if with_box_refine else cls
             for _ in range(LAYERS)])
        self.reg_branches = RegBranches(with_box_refine).reg_branches
        self.query_embedding = nn.Embedding(900, EMBED_DIMS * 2)


def _model_and_config(name: str):
    from mmdet3d.registry import MODELS
    from mmengine.registry import init_default_scope
    init_default_scope('mmdet3d')
    if name.startswith('detr3d'):
        model = nn.Module()
        model.img_backbone = MODELS.build(copy.deepcopy(DETR3D_BACKBONE))
        model.img_neck = MODELS.build(copy.deepcopy(DETR3D_NECK))
        model.pts_bbox_head = Detr3DHeadWeights(name == 'detr3d')
        config = dict(model=dict(type='Detr3D', img_backbone=DETR3D_BACKBONE,
                                 img_neck=DETR3D_NECK,
                                 pts_bbox_head=dict(type='Detr3DHead')))
        return model, config
    cfg = load(name)
    model = MODELS.build(copy.deepcopy(cfg.model))
    model_cfg = copy.deepcopy(cfg.model.to_dict())
    if name == 'voxelnet_pillar02':
        head = model_cfg['bbox_head']
        head['anchor_generator']['sizes'] = NUS_0X_SIZES
        head.update(dir_offset=0.7854, dir_limit_offset=0)
    return model, dict(model=model_cfg)


def old_checkpoint(name: str, seed: int = 0) -> Dict:
    """The 0.x checkpoint of ``name`` (:data:`NAMES`)."""
    model, config = _model_and_config(name)
    randomize(model, seed)
    state = model.state_dict()
    params = dict(model.named_parameters())
    moments = {i: dict(step=torch.tensor(1000.), exp_avg=torch.randn_like(p),
                       exp_avg_sq=torch.rand_like(p))
               for i, p in enumerate(params.values())}
    return dict(
        state_dict=state,
        optimizer=dict(state=moments, param_groups=[
            dict(lr=1e-4, weight_decay=0.01, params=list(moments))]),
        meta=dict(mmdet3d_version='0.13.0' if not name.startswith('detr3d')
                  else '0.17.1', mmcv_version='1.4.0',
                  config=Config(config).pretty_text,
                  CLASSES=NUSCENES_CLASSES, epoch=20, iter=123000))
