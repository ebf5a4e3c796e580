"""Small models, data and configs for the DDPUnusedParamHook tests.

``ToyBranchModel`` has a branch per sample kind, a layer it never calls and
a frozen layer. With ``DefaultSampler(shuffle=False)`` on two ranks, rank 0
sees only kind 'a' and rank 1 only kind 'b', so each rank skips the other's
branch. ``CenterHeadSkippingTasks`` is mmdet3d's CenterHead whose listed
tasks are left out of the loss (logged, not summed), as a head with a
forgotten loss term would be.
"""
import uuid
from typing import Optional, Sequence

import torch
from mmengine.dist import get_rank
from mmengine.model import BaseModel
from mmengine.optim import AmpOptimWrapper, OptimWrapper
from mmengine.structures import InstanceData
from torch import nn
from torch.utils.data import Dataset

from mmdet3d.models.dense_heads import CenterHead
from mmdet3d.registry import DATASETS, MODELS, OPTIM_WRAPPERS
from tests.helpers.toy_config import toy_config
from tests.helpers.toy_data import SeededToyDataset
from mmdet3d.structures import Det3DDataSample, LiDARInstance3DBoxes

TOY_PARAMS = {
    'stem.weight', 'stem.bias', 'branch_a.weight', 'branch_a.bias',
    'branch_b.weight', 'branch_b.bias', 'dead.weight', 'dead.bias',
    'head.weight', 'head.bias'
}


@MODELS.register_module()
class ToyBranchModel(BaseModel):
    """Per-sample branch 'a' or 'b', a dead layer and a frozen layer.

    Args:
        rank_branches (Sequence[str], optional): Instead of the sample's
            kind, rank r runs the branches named in ``rank_branches[r]``
            (e.g. ``['a', 'ab']``). Defaults to None.
        with_dead (bool): Whether to have the never-called layer ``dead``.
            Defaults to True.
    """

    def __init__(self,
                 rank_branches: Optional[Sequence[str]] = None,
                 with_dead: bool = True) -> None:
        super().__init__()
        self.rank_branches = rank_branches
        self.stem = nn.Linear(4, 8)
        self.branch_a = nn.Linear(8, 8)
        self.branch_b = nn.Linear(8, 8)
        if with_dead:
            self.dead = nn.Linear(8, 8)
        self.frozen = nn.Linear(8, 8)
        self.frozen.requires_grad_(False)
        self.head = nn.Linear(8, 1)

    def forward(self, inputs, branch=None, mode='loss'):
        x = self.frozen(self.stem(torch.stack(inputs)).relu())
        if self.rank_branches is not None:
            branch = [self.rank_branches[get_rank()]] * len(inputs)
        branches = dict(a=self.branch_a, b=self.branch_b)
        x = torch.stack([
            sum(branches[kind](row) for kind in kinds)
            for row, kinds in zip(x, branch)
        ])
        out = self.head(x.relu())
        if mode == 'loss':
            return dict(loss=out.float().pow(2).mean())
        return list(out)


@DATASETS.register_module()
class ToyBranchDataset(SeededToyDataset):
    """Sample i is kind 'a' for even i and 'b' for odd i.

    Args:
        size (int): Number of samples. Defaults to 32.
    """

    def __init__(self, size: int = 32) -> None:
        super().__init__(size)

    def extra(self, index: int, gen: torch.Generator) -> dict:
        return dict(branch='a' if index % 2 == 0 else 'b')


@OPTIM_WRAPPERS.register_module()
class CPUAmpOptimWrapper(AmpOptimWrapper):
    """``AmpOptimWrapper`` on CPU: bf16 autocast and a CPU GradScaler.

    mmengine 0.10 asserts a GPU in ``AmpOptimWrapper.__init__``; everything
    else (scaled backward, unscale and step, autocast context) is the
    parent's own code.
    """

    def __init__(self, **kwargs) -> None:
        OptimWrapper.__init__(self, **kwargs)
        self._scale_update_param = None
        self.loss_scaler = torch.amp.GradScaler('cpu')
        self.cast_dtype = torch.bfloat16


@MODELS.register_module()
class CenterHeadSkippingTasks(CenterHead):
    """CenterHead whose ``skip_tasks`` are logged but left out of the loss.

    Args:
        skip_tasks (Sequence[int]): Task indices to leave out.
            Defaults to (1,).
    """

    def __init__(self, skip_tasks: Sequence[int] = (1, ), **kwargs) -> None:
        super().__init__(**kwargs)
        self.skip_tasks = tuple(skip_tasks)

    def loss_by_feat(self, preds_dicts, batch_gt_instances_3d, *args,
                     **kwargs):
        losses = super().loss_by_feat(preds_dicts, batch_gt_instances_3d,
                                      *args, **kwargs)
        out = {}
        for key, value in losses.items():
            task = int(key.split('.')[0][len('task'):])
            if task in self.skip_tasks:
                key = key.replace('loss_', 'unsummed_')
            out[key] = value
        return out


@DATASETS.register_module()
class ToyPointsDataset(Dataset):
    """Random points and two boxes (a car, a pedestrian) per sample.

    Args:
        size (int): Number of samples. Defaults to 16.
        num_points (int): Points per sample. Defaults to 300.
        half_range (float): Points and boxes lie within +-half_range metres.
            Defaults to 7.
    """

    def __init__(self,
                 size: int = 16,
                 num_points: int = 300,
                 half_range: float = 7.0) -> None:
        self.size = size
        self.num_points = num_points
        self.half_range = half_range

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, index: int) -> dict:
        gen = torch.Generator().manual_seed(index)
        r = self.half_range
        points = torch.rand(self.num_points, 5, generator=gen)
        points[:, :2] = points[:, :2] * 2 * r - r
        points[:, 2] = points[:, 2] * 3 - 2
        centers = torch.rand(2, 2, generator=gen) * 2 * (r - 2) - (r - 2)
        boxes = torch.tensor([[0., 0., -1., 4.5, 1.9, 1.6, 0.3, 1., 0.],
                              [0., 0., -1., 0.7, 0.7, 1.8, 1.2, 0., 0.5]])
        boxes[:, :2] = centers
        sample = Det3DDataSample(
            metainfo=dict(sample_idx=index, box_type_3d=LiDARInstance3DBoxes))
        sample.gt_instances_3d = InstanceData(
            bboxes_3d=LiDARInstance3DBoxes(boxes, box_dim=9),
            labels_3d=torch.tensor([0, 1]))
        return dict(inputs=dict(points=points), data_samples=sample)


def tiny_centerpoint(skip_tasks: Sequence[int] = (1, )) -> dict:
    """CenterPoint (pillars) on a 32x32 grid with two single-class tasks."""
    pcr = [-8.0, -8.0, -5.0, 8.0, 8.0, 3.0]
    voxel = [0.5, 0.5, 8]
    bn2d = dict(type='BN', eps=1e-3, momentum=0.01)
    return dict(
        type='CenterPoint',
        data_preprocessor=dict(
            type='Det3DDataPreprocessor',
            voxel=True,
            voxel_layer=dict(
                max_num_points=10,
                point_cloud_range=pcr,
                voxel_size=voxel,
                max_voxels=(1024, 1024))),
        pts_voxel_encoder=dict(
            type='PillarFeatureNet',
            in_channels=5,
            feat_channels=[16],
            with_distance=False,
            voxel_size=voxel,
            point_cloud_range=pcr,
            norm_cfg=dict(type='BN1d', eps=1e-3, momentum=0.01),
            legacy=False),
        pts_middle_encoder=dict(
            type='PointPillarsScatter', in_channels=16,
            output_shape=(32, 32)),
        pts_backbone=dict(
            type='SECOND',
            in_channels=16,
            out_channels=[16, 32],
            layer_nums=[1, 1],
            layer_strides=[1, 2],
            norm_cfg=bn2d,
            conv_cfg=dict(type='Conv2d', bias=False)),
        pts_neck=dict(
            type='SECONDFPN',
            in_channels=[16, 32],
            out_channels=[16, 16],
            upsample_strides=[1, 2],
            norm_cfg=bn2d,
            upsample_cfg=dict(type='deconv', bias=False),
            use_conv_for_no_stride=True),
        pts_bbox_head=dict(
            type='CenterHeadSkippingTasks',
            skip_tasks=list(skip_tasks),
            in_channels=32,
            tasks=[
                dict(num_class=1, class_names=['car']),
                dict(num_class=1, class_names=['pedestrian']),
            ],
            common_heads=dict(
                reg=(2, 2), height=(1, 2), dim=(3, 2), rot=(2, 2),
                vel=(2, 2)),
            share_conv_channel=16,
            bbox_coder=dict(
                type='CenterPointBBoxCoder',
                post_center_range=[-10, -10, -10, 10, 10, 10],
                max_num=50,
                score_threshold=0.1,
                out_size_factor=1,
                voxel_size=voxel[:2],
                pc_range=pcr[:2],
                code_size=9),
            separate_head=dict(
                type='SeparateHead', init_bias=-2.19, final_kernel=3,
                head_conv=16),
            loss_cls=dict(type='mmdet.GaussianFocalLoss', reduction='mean'),
            loss_bbox=dict(
                type='mmdet.L1Loss', reduction='mean', loss_weight=0.25),
            norm_bbox=True),
        train_cfg=dict(
            pts=dict(
                grid_size=[32, 32, 1],
                voxel_size=voxel,
                point_cloud_range=pcr,
                out_size_factor=1,
                dense_reg=1,
                gaussian_overlap=0.1,
                max_objs=50,
                min_radius=2,
                code_weights=[1.0] * 8 + [0.2, 0.2])),
        test_cfg=dict(
            pts=dict(
                post_center_limit_range=[-10, -10, -10, 10, 10, 10],
                max_per_img=50,
                max_pool_nms=False,
                min_radius=[4, 0.175],
                score_threshold=0.1,
                pc_range=pcr[:2],
                out_size_factor=1,
                voxel_size=voxel[:2],
                nms_type='rotate',
                pre_max_size=100,
                post_max_size=50,
                nms_thr=0.2)))


def runner_cfg(work_dir: str,
               *,
               model: Optional[dict] = None,
               dataset: Optional[dict] = None,
               distributed: bool = False,
               find_unused: bool = False,
               accumulative_counts: int = 1,
               amp: bool = False,
               max_iters: int = 4,
               batch_size: int = 2,
               hook: Optional[dict] = None) -> dict:
    """A Runner config around the toy model (or ``model``/``dataset``):
    :func:`~tests.helpers.toy_config.toy_config` built in process, not
    shuffled, no workers, ``pseudo_collate``, SGD with momentum and no
    schedule, no checkpoints, seed 0, ``hook`` (default: a
    ``DDPUnusedParamHook``) the one custom hook."""
    cfg = toy_config(
        imports=None,
        dataset=dataset or dict(type='ToyBranchDataset', size=32),
        batch_size=batch_size, num_workers=0, shuffle=False,
        collate_fn='pseudo_collate', max_iters=max_iters,
        ckpt_interval=None, lr=0.01,
        model=model or dict(type='ToyBranchModel'), work_dir=work_dir,
        custom_hooks=[hook or dict(type='DDPUnusedParamHook',
                                   check_iters=3)],
        param_scheduler=None, log_processor=dict(by_epoch=False),
        randomness=dict(seed=0),
        launcher='pytorch' if distributed else 'none',
        experiment_name=f'toy_{uuid.uuid4().hex[:8]}',
        model_wrapper_cfg=dict(
            type='CPUDistributedDataParallel',
            find_unused_parameters=find_unused) if distributed else None)
    cfg['optim_wrapper'].update(
        type='CPUAmpOptimWrapper' if amp else 'OptimWrapper',
        accumulative_counts=accumulative_counts)
    return cfg
