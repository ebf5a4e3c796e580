"""SafeNuScenesDataset through real DataLoader workers of every start method.

All cases read the generated dataset (``nus_synthetic``) through a real LiDAR
pipeline and compare what workers yield with what the main process yields
(``num_workers=0``). Spawned workers import torch and mmdet3d (several
seconds each), so cases are few and small.
"""
import copy
import multiprocessing as mp
import pickle
import uuid

import pytest
import torch
from mmengine.dataset import pseudo_collate
from mmengine.model import BaseModel
from mmengine.registry import init_default_scope
from mmengine.runner import Runner
from nuscenes.eval.detection.config import config_factory
from nuscenes.eval.detection.data_classes import DetectionConfig
from torch.utils.data import DataLoader

import projects.mmdet3d_plugin  # noqa: F401  registers the plugin
from mmdet3d.datasets import NuScenesDataset
from mmdet3d.registry import MODELS
from projects.mmdet3d_plugin.compat.nuscenes_class_names import (
    PicklableDetectionConfig)
from projects.mmdet3d_plugin.datasets.safe_nuscenes_dataset import (
    SafeNuScenesDataset)

POINT_RANGE = [-60.0, -60.0, -5.0, 60.0, 60.0, 3.0]
PIPELINE = [
    dict(type='LoadPointsFromFile', coord_type='LIDAR', load_dim=5, use_dim=5),
    dict(type='LoadPointsFromMultiSweeps',
         sweeps_num=2,
         use_dim=[0, 1, 2, 3, 4],
         pad_empty_sweeps=True,
         remove_close=True,
         test_mode=True),
    dict(type='LoadAnnotations3D', with_bbox_3d=True, with_label_3d=True),
    dict(type='ObjectRangeFilter', point_cloud_range=POINT_RANGE),
    dict(type='Pack3DDetInputs',
         keys=['points', 'gt_bboxes_3d', 'gt_labels_3d']),
]
PREFIX = dict(pts='samples/LIDAR_TOP', img='', sweeps='sweeps/LIDAR_TOP')
NUM_SAMPLES = 6  # a subset of the 80 training infos keeps workers cheap


def _kwargs(root, **overrides):
    kwargs = dict(data_root=str(root),
                  ann_file='nuscenes_infos_train.pkl',
                  data_prefix=PREFIX,
                  pipeline=PIPELINE,
                  indices=NUM_SAMPLES)
    kwargs.update(overrides)
    return kwargs


def _build(cls, root, **overrides):
    init_default_scope('mmdet3d')
    return cls(**_kwargs(root, **overrides))


class UniADStyleDataset(SafeNuScenesDataset):
    """What UniAD's NuScenesE2EDataset does: it assigns the devkit config
    itself and keeps dict views, then reads them inside workers."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.eval_detection_configs = config_factory(self.eval_version)
        self.scene_lengths = {'scene-a': 3, 'scene-b': 5}
        self.scene_names = self.scene_lengths.keys()
        self.scene_sizes = self.scene_lengths.values()

    def __getitem__(self, idx):
        data = super().__getitem__(idx)
        # Runs in the worker: the converted objects must behave.
        cfg = self.eval_detection_configs
        data['worker_view'] = dict(
            class_names=list(cfg.class_names),
            is_devkit_config=isinstance(cfg, DetectionConfig),
            equals_devkit=cfg == config_factory(self.eval_version),
            scene_names=sorted(self.scene_names),
            scene_names_is_set_like=bool(self.scene_names & {'scene-a'}),
            scene_sizes=sorted(self.scene_sizes))
        return data


class StockWithDevkitConfig(NuScenesDataset):
    """A stock 1.x dataset holding the devkit config, as 0.x code did."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.eval_detection_configs = config_factory('detection_cvpr_2019')


def _summary(batches):
    """Per sample: index, points and boxes, in loader order."""
    out = []
    for batch in batches:
        views = batch.get('worker_view', [None] * len(batch['data_samples']))
        for i, sample in enumerate(batch['data_samples']):
            out.append(
                dict(idx=sample.sample_idx,
                     points=batch['inputs']['points'][i].clone(),
                     boxes=sample.gt_instances_3d.bboxes_3d.tensor.clone(),
                     labels=sample.gt_instances_3d.labels_3d.clone(),
                     worker_view=views[i]))
    return out


def collate_with_worker_view(batch):
    views = [data.pop('worker_view') for data in batch]
    collated = pseudo_collate(batch)
    collated['worker_view'] = views
    return collated


def _iterate(dataset, num_workers, method=None, persistent=False, epochs=1):
    # pseudo_collate is imported by name in workers; the UniAD-style case
    # needs this module in its workers anyway.
    collate = collate_with_worker_view if isinstance(
        dataset, UniADStyleDataset) else pseudo_collate
    loader = DataLoader(
        dataset,
        batch_size=2,
        shuffle=False,
        num_workers=num_workers,
        persistent_workers=persistent,
        multiprocessing_context=method if num_workers else None,
        collate_fn=collate)
    return [_summary(list(loader)) for _ in range(epochs)]


def _assert_same(got, expected):
    assert [s['idx'] for s in got] == [s['idx'] for s in expected]
    for a, b in zip(got, expected):
        assert torch.equal(a['points'], b['points']), a['idx']
        assert torch.equal(a['boxes'], b['boxes']), a['idx']
        assert torch.equal(a['labels'], b['labels']), a['idx']


@pytest.fixture(scope='module')
def dataset(nus_synthetic):
    return _build(SafeNuScenesDataset, nus_synthetic)


@pytest.fixture(scope='module')
def reference(dataset):
    (samples, ) = _iterate(dataset, num_workers=0)
    assert len(samples) == NUM_SAMPLES
    assert all(len(s['boxes']) > 0 for s in samples)
    assert all(s['points'].shape[1] == 5 for s in samples)
    return samples


def test_reference_reads_points_and_boxes_from_disk(dataset, reference):
    # Guard against a vacuous comparison: the reference really holds the
    # files' points (key frame plus sweeps) and the infos' boxes.
    info = dataset.get_data_info(0)
    key_points = torch.from_numpy(
        __import__('numpy').fromfile(info['lidar_path'],
                                     dtype='float32')).view(-1, 5)
    assert reference[0]['points'].shape[0] > key_points.shape[0]
    assert torch.allclose(reference[0]['points'][:len(key_points), :3],
                          key_points[:, :3])
    assert reference[0]['boxes'].shape[1] == 9  # with velocity


# spawn: persistent only (its 2 workers import the stack, ~8 CPU-s each;
# they unpickle the dataset as non-persistent ones do, and serve epoch 2).
@pytest.mark.parametrize('method,num_workers,persistent', [
    ('fork', 2, False),
    ('fork', 2, True),
    # Fresh interpreters are the subject: left out of make test-quick.
    pytest.param('spawn', 2, True, marks=pytest.mark.launch),
    pytest.param('forkserver', 2, False, marks=pytest.mark.launch),
    pytest.param('forkserver', 2, True, marks=pytest.mark.launch),
])
def test_workers_yield_every_sample(dataset, reference, method, num_workers,
                                    persistent):
    epochs = 2 if persistent else 1  # persistent workers serve epoch 2 too
    for samples in _iterate(dataset, num_workers, method, persistent, epochs):
        _assert_same(samples, reference)


def test_main_process_loading_matches_after_pickle(dataset, reference):
    clone = pickle.loads(pickle.dumps(dataset))
    (samples, ) = _iterate(clone, num_workers=0)
    _assert_same(samples, reference)


def test_eval_detection_configs_is_picklable_devkit_config(dataset):
    cfg = dataset.eval_detection_configs
    devkit = config_factory('detection_cvpr_2019')
    assert isinstance(cfg, DetectionConfig)
    assert isinstance(cfg.class_names, list)
    assert cfg.class_names == list(devkit.class_names)
    assert cfg == devkit and devkit == cfg
    assert cfg.serialize() == devkit.serialize()
    loaded = pickle.loads(pickle.dumps(cfg))
    assert loaded == devkit and loaded.class_names == cfg.class_names


@pytest.mark.parametrize('eval_version,error,match', [
    ('detection_cvpr_2019', None, None),
    ('no_such_config', ValueError, "unknown eval_version 'no_such_config'"),
])
def test_eval_version(nus_synthetic, eval_version, error, match):
    if error is None:
        ds = _build(SafeNuScenesDataset,
                    nus_synthetic,
                    lazy_init=True,
                    eval_version=eval_version)
        assert ds.eval_detection_configs.class_names
        return
    with pytest.raises(error, match=match):
        _build(SafeNuScenesDataset, nus_synthetic, eval_version=eval_version)


def test_lazy_init_dataset_pickles_before_and_after_full_init(
        nus_synthetic, reference):
    ds = _build(SafeNuScenesDataset, nus_synthetic, lazy_init=True)
    assert not ds._fully_initialized
    lazy_clone = pickle.loads(pickle.dumps(ds))
    assert len(lazy_clone) == NUM_SAMPLES  # full_init in the receiver
    ds.full_init()
    full_clone = pickle.loads(pickle.dumps(ds))
    (samples, ) = _iterate(full_clone, num_workers=0)
    _assert_same(samples, reference)


def test_serialize_data_false_keeps_working(nus_synthetic, reference):
    ds = _build(SafeNuScenesDataset, nus_synthetic, serialize_data=False)
    (samples, ) = _iterate(ds, 2, 'fork')
    _assert_same(samples, reference)
    (samples, ) = _iterate(pickle.loads(pickle.dumps(ds)), 0)
    _assert_same(samples, reference)


@pytest.mark.launch  # spawn workers: fresh interpreters
def test_uniad_style_subclass_in_spawn_workers(nus_synthetic, reference):
    ds = _build(UniADStyleDataset, nus_synthetic)
    before = copy.copy(ds.__dict__)
    (samples, ) = _iterate(ds, 1, 'spawn')
    _assert_same(samples, reference)
    view = samples[0]['worker_view']
    assert view == dict(class_names=list(
        config_factory('detection_cvpr_2019').class_names),
                        is_devkit_config=True,
                        equals_devkit=True,
                        scene_names=['scene-a', 'scene-b'],
                        scene_names_is_set_like=True,
                        scene_sizes=[3, 5])
    # The live objects of the main process are left as they were.
    assert type(ds.eval_detection_configs) is DetectionConfig
    assert type(ds.eval_detection_configs.class_names).__name__ == \
        'dict_keys'
    assert ds.scene_names is before['scene_names']


def test_uniad_style_subclass_in_forkserver_worker(nus_synthetic):
    ds = _build(UniADStyleDataset, nus_synthetic, indices=2)
    (samples, ) = _iterate(ds, 1, 'forkserver')
    assert len(samples) == 2
    assert samples[1]['worker_view']['equals_devkit']


def test_worker_receives_picklable_config_type(nus_synthetic):
    ds = _build(UniADStyleDataset, nus_synthetic, lazy_init=True)
    clone = pickle.loads(pickle.dumps(ds))
    assert type(clone.eval_detection_configs) is PicklableDetectionConfig
    clone.scene_lengths['scene-c'] = 1  # views stay views of their dict
    assert 'scene-c' in clone.scene_names


@pytest.fixture
def fresh_forking_pickler(monkeypatch):
    """``ForkingPickler`` without the dict view reducers that importing
    ``multiprocessing.managers`` (e.g. ``mp.Manager()``) registers for the
    rest of the process: they pickle ``dict_keys`` as lists, so a stock
    dataset would reach spawn workers in the test session but not in a
    fresh training process."""
    from multiprocessing.reduction import ForkingPickler
    reducers = dict(ForkingPickler._extra_reducers)
    for view in (type({}.keys()), type({}.values()), type({}.items())):
        reducers.pop(view, None)
    monkeypatch.setattr(ForkingPickler, '_extra_reducers', reducers)


def test_stock_subclass_with_devkit_config_fails_under_spawn(
        nus_synthetic, fresh_forking_pickler):
    # Proves the worker tests can fail: the same data with the stock class.
    # The loader is given the 'spawn' context itself, whatever the process's
    # start method is.
    ds = _build(StockWithDevkitConfig, nus_synthetic, indices=2)
    with pytest.raises(TypeError, match="cannot pickle 'dict_keys' object"):
        _iterate(ds, 1, 'spawn')


@MODELS.register_module()
class PointsBoxesToyModel(BaseModel):
    """Regresses the number of boxes from mean point features."""

    def __init__(self, data_preprocessor=None):
        super().__init__(data_preprocessor=data_preprocessor)
        self.fc = torch.nn.Linear(5, 1)

    def forward(self, inputs, data_samples=None, mode='loss'):
        feats = torch.stack([p.mean(0) for p in inputs['points']])
        target = torch.tensor([[float(len(s.gt_instances_3d))]
                               for s in data_samples])
        pred = self.fc(feats)
        if mode == 'loss':
            return dict(loss=(pred - target).pow(2).mean())
        return pred


@pytest.mark.launch  # spawn workers: fresh interpreters
def test_runner_trains_with_spawn_workers(nus_synthetic, tmp_path):
    previous = mp.get_start_method(allow_none=True)
    loader = dict(
        batch_size=2,
        num_workers=1,
        persistent_workers=True,
        sampler=dict(type='DefaultSampler', shuffle=False),
        collate_fn=dict(type='pseudo_collate'),
        dataset=dict(
            type='SafeNuScenesDataset', **_kwargs(nus_synthetic, indices=4)))
    cfg = dict(
        model=dict(
            type='PointsBoxesToyModel',
            data_preprocessor=dict(type='Det3DDataPreprocessor')),
        work_dir=str(tmp_path),
        train_dataloader=loader,
        train_cfg=dict(by_epoch=True, max_epochs=2, val_interval=100),
        optim_wrapper=dict(optimizer=dict(type='SGD', lr=0.01)),
        env_cfg=dict(mp_cfg=dict(mp_start_method='spawn')),
        default_hooks=dict(logger=dict(type='LoggerHook', interval=1)),
        default_scope='mmdet3d',
        log_level='WARNING',
        experiment_name=f'spawn_workers_{uuid.uuid4().hex[:8]}')
    try:
        runner = Runner.from_cfg(cfg)
        assert mp.get_start_method() == 'spawn'
        runner.train()
        assert runner.iter == 4  # 2 epochs x 2 iterations
        losses = runner.message_hub.get_scalar('train/loss').data[0]
        assert len(losses) == 4 and all(torch.isfinite(torch.tensor(losses)))
    finally:
        mp.set_start_method(previous, force=True)
