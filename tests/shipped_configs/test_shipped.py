"""Every shipped config under ``configs/`` loads, builds its model, uses the
pickle-safe dataset and metric, and has a consistent geometry; the small
``*_synthetic`` configs build their datasets on the generated data."""
from pathlib import Path

import numpy as np
import pytest
import torch
from mmengine.registry import init_default_scope

from mmdet3d.registry import DATASETS, MODELS
from projects.mmdet3d_plugin import load_config
from projects.mmdet3d_plugin.config.data_root import redirect_data_root

REPO_ROOT = Path(__file__).resolve().parents[2]
CONFIGS = sorted(
    p.relative_to(REPO_ROOT).as_posix()
    for p in (REPO_ROOT / 'configs').glob('**/*.py')
    if '_base_' not in p.parts)
SYNTHETIC_CONFIGS = [c for c in CONFIGS if 'synthetic' in Path(c).name]
CENTERPOINT_CONFIGS = [
    c for c in CONFIGS if c.startswith('configs/centerpoint/')
]
LOADER_SECTIONS = ('train_dataloader', 'val_dataloader', 'test_dataloader')
NUS_CLASSES = {
    'car', 'truck', 'construction_vehicle', 'bus', 'trailer', 'barrier',
    'motorcycle', 'bicycle', 'pedestrian', 'traffic_cone'
}
# Detector type expected in each config folder.
FAMILIES = {'centerpoint': 'CenterPoint', 'voxelnet': 'VoxelNet'}


def load(config: str):
    cfg = load_config(str(REPO_ROOT / config))
    init_default_scope(cfg.get('default_scope', 'mmdet3d'))
    return cfg


def dataset_chain(dataset: dict) -> list:
    """A dataset config followed by the ones it wraps (CBGSDataset, ...)."""
    chain = []
    while isinstance(dataset, dict):
        chain.append(dataset)
        dataset = dataset.get('dataset')
    return chain


def model_parts(model: dict) -> dict:
    """Voxel layer, encoders and head of either detector family."""
    prefix = 'pts_' if model.type == 'CenterPoint' else ''
    return dict(
        voxel_layer=model.data_preprocessor.voxel_layer,
        voxel_encoder=model[prefix + 'voxel_encoder'],
        middle_encoder=model[prefix + 'middle_encoder'],
        head=model[prefix + 'bbox_head'])


def test_configs_found():
    assert len(CONFIGS) >= 8, CONFIGS
    assert {'configs/centerpoint', 'configs/voxelnet'} <= {
        str(Path(c).parent)
        for c in SYNTHETIC_CONFIGS
    }, SYNTHETIC_CONFIGS


@pytest.mark.parametrize('config', CONFIGS)
def test_config_builds_model(config):
    cfg = load(config)
    family = FAMILIES[Path(config).parent.name]
    assert cfg.model.type == family
    model = MODELS.build(cfg.model)
    assert type(model).__name__ == family
    assert sum(p.numel() for p in model.parameters()) > 0


@pytest.mark.parametrize('config', CONFIGS)
def test_config_uses_safe_nuscenes(config):
    cfg = load(config)
    assert 'projects.mmdet3d_plugin' in cfg.custom_imports.imports
    assert cfg.custom_imports.allow_failed_imports is False
    for section in LOADER_SECTIONS:
        chain = dataset_chain(cfg[section].dataset)
        types = [d.type for d in chain]
        assert types[-1] == 'SafeNuScenesDataset', (section, types)
        assert 'NuScenesDataset' not in types, (section, types)
        assert set(chain[-1].metainfo.classes) == NUS_CLASSES
    for section in ('val_evaluator', 'test_evaluator'):
        assert cfg[section].type == 'SafeNuScenesMetric', section
    # The registered classes behind the names.
    assert DATASETS.get('SafeNuScenesDataset') is not None


@pytest.mark.parametrize('config', CONFIGS)
def test_config_grid_matches_range(config):
    """Voxel layer, encoders, grid sizes and head agree on the geometry."""
    model = load(config).model
    parts = model_parts(model)
    pc_range = np.array(parts['voxel_layer'].point_cloud_range, dtype=float)
    voxel = np.array(parts['voxel_layer'].voxel_size, dtype=float)
    grid = np.round((pc_range[3:] - pc_range[:3]) / voxel).astype(int)

    encoder = parts['voxel_encoder']
    if encoder.type == 'PillarFeatureNet':
        assert np.allclose(encoder.point_cloud_range, pc_range)
        assert np.allclose(encoder.voxel_size, voxel)
    middle = parts['middle_encoder']
    if middle.type == 'PointPillarsScatter':
        assert list(middle.output_shape) == [grid[1], grid[0]]
    else:  # SparseEncoder: (z + 1, y, x), as in SECOND
        assert list(middle.sparse_shape) == [grid[2] + 1, grid[1], grid[0]]

    head = parts['head']
    if head.type == 'CenterHead':
        train_cfg, test_cfg = model.train_cfg.pts, model.test_cfg.pts
        assert list(train_cfg.grid_size) == list(grid)
        assert np.allclose(train_cfg.point_cloud_range, pc_range)
        assert np.allclose(head.bbox_coder.pc_range, pc_range[:2])
        assert np.allclose(test_cfg.pc_range, pc_range[:2])
        for voxel_xy in (head.bbox_coder.voxel_size, test_cfg.voxel_size,
                         train_cfg.voxel_size[:2]):
            assert np.allclose(voxel_xy, voxel[:2])
        assert (head.bbox_coder.out_size_factor == train_cfg.out_size_factor
                == test_cfg.out_size_factor)
    else:  # Anchor3DHead: anchors span the voxelised area
        assert head.num_classes == len(NUS_CLASSES)
        for anchor_range in head.anchor_generator.ranges:
            assert np.allclose(anchor_range[0:2], pc_range[0:2])
            assert np.allclose(anchor_range[3:5], pc_range[3:5])


@pytest.mark.parametrize('config', CENTERPOINT_CONFIGS)
def test_centerpoint_tasks_follow_dataset_classes(config):
    """CenterHead maps labels to tasks by position: the tasks' class names,
    concatenated, must be the dataset's classes in the same order."""
    cfg = load(config)
    task_classes = [
        name for task in cfg.model.pts_bbox_head.tasks
        for name in task.class_names
    ]
    for section in LOADER_SECTIONS:
        classes = dataset_chain(cfg[section].dataset)[-1].metainfo.classes
        assert list(classes) == task_classes, section


@pytest.mark.parametrize('config', SYNTHETIC_CONFIGS)
def test_synthetic_config_defaults(config):
    """Small, iteration-based, no GT database, aimed at the generated data."""
    cfg = load(config)
    assert cfg.train_cfg.type == 'IterBasedTrainLoop'
    assert cfg.train_cfg.max_iters <= 500
    assert cfg.log_processor.by_epoch is False
    assert cfg.default_hooks.checkpoint.by_epoch is False
    for section in LOADER_SECTIONS:
        loader = cfg[section]
        assert loader.num_workers <= 2
        dataset = dataset_chain(loader.dataset)[-1]
        assert dataset.data_root == 'data/nuscenes_synthetic/'
        assert dataset.metainfo.version == 'v1.0-mini'
        assert [t.type for t in dataset.pipeline].count('ObjectSample') == 0
    assert cfg.train_dataloader.dataset.ann_file == 'nuscenes_infos_train.pkl'
    assert cfg.val_dataloader.dataset.ann_file == 'nuscenes_infos_val.pkl'
    assert cfg.val_evaluator.ann_file == \
        'data/nuscenes_synthetic/nuscenes_infos_val.pkl'
    pc_range = model_parts(cfg.model)['voxel_layer'].point_cloud_range
    assert max(abs(v) for v in pc_range[:2] + pc_range[3:5]) <= 40


@pytest.mark.parametrize('config', SYNTHETIC_CONFIGS)
def test_synthetic_datasets_build(config, nus_synthetic):
    cfg = redirect_data_root(load(config), nus_synthetic)
    model = model_parts(cfg.model)
    pc_range = torch.tensor(model['voxel_layer'].point_cloud_range)
    in_channels = model['voxel_encoder'].get(
        'in_channels', model['voxel_encoder'].get('num_features'))

    train = DATASETS.build(cfg.train_dataloader.dataset)
    val = DATASETS.build(cfg.val_dataloader.dataset)
    assert (len(train), len(val)) == (80, 20)  # mini_train / mini_val frames
    assert val.metainfo['version'] == 'v1.0-mini'

    sample = train[0]
    points = sample['inputs']['points']
    assert points.shape[1] == in_channels
    assert (points[:, :3] >= pc_range[:3]).all()
    assert (points[:, :3] <= pc_range[3:]).all()
    gt = sample['data_samples'].gt_instances_3d
    assert len(gt.labels_3d) > 0
    assert 0 <= gt.labels_3d.min() and gt.labels_3d.max() < len(NUS_CLASSES)
    assert gt.bboxes_3d.tensor.shape[1] == 9  # with velocity

    points = val[0]['inputs']['points']
    assert points.shape[1] == in_channels
