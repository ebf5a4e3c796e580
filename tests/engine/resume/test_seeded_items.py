"""Seeded samples (``seed_samples``) on the shipped pillar02 train
pipeline (CBGS, ObjectSample's GT database, multi-sweep loading,
augmentation): a sample depends on its (seed, epoch, position) only, not
on the order of loading or the worker that loads it, and the dataset stays
the CBGSDataset it was."""
import pickle
from pathlib import Path

import numpy as np
import pytest
import torch
from mmengine.dataset import pseudo_collate
from mmengine.registry import init_default_scope
from torch.utils.data import DataLoader

from mmdet3d.registry import DATASETS
from projects.mmdet3d_plugin import load_config
from projects.mmdet3d_plugin.config.data_root import redirect_data_root
from projects.mmdet3d_plugin.engine.resume.sample_key import SampleKey
from projects.mmdet3d_plugin.engine.resume.gt_database import (
    SeededClassSampler)
from projects.mmdet3d_plugin.engine.resume.seeded_items import seed_samples

REPO = Path(__file__).resolve().parents[3]
PILLAR02 = (REPO / 'configs' / 'centerpoint' /
            'centerpoint_pillar02_second_secfpn_8xb4-cyclic-20e_nus-3d.py')
KEYS = [SampleKey(i, seed=11, epoch=0, position=p)
        for p, i in enumerate([3, 0, 7, 3, 12, 5])]


@pytest.fixture(scope='module')
def seeded(nus_synthetic):
    cfg = redirect_data_root(load_config(str(PILLAR02)), nus_synthetic)
    init_default_scope('mmdet3d')
    dataset = DATASETS.build(cfg.train_dataloader.dataset)
    seed_samples(dataset)
    return dataset


def _load(dataset, key):
    """One sample as the DataLoader's fetcher loads it."""
    return dataset.__getitems__([key])[0]


def _fingerprint(sample: dict) -> tuple:
    points = sample['inputs']['points'].numpy()
    boxes = sample['data_samples'].gt_instances_3d.bboxes_3d.tensor.numpy()
    return points.tobytes(), boxes.tobytes()


def test_the_dataset_is_left_as_it_was(seeded):
    # What upstream hooks unwrap: one level, to the dataset with the pipeline.
    assert type(seeded).__name__ == 'CBGSDataset'
    assert type(seeded.dataset).__name__ == 'SafeNuScenesDataset'
    assert hasattr(seeded.dataset, 'pipeline')


def test_every_gt_class_sampler_draws_per_sample(seeded):
    samplers = next(t.db_sampler for t in seeded.dataset.pipeline.transforms
                    if hasattr(t, 'db_sampler'))
    assert len(samplers.sampler_dict) > 0
    assert all(isinstance(s, SeededClassSampler)
               for s in samplers.sampler_dict.values())


def test_a_sample_is_the_same_in_any_loading_order(seeded):
    forward = [_fingerprint(_load(seeded, k)) for k in KEYS]
    backward = [_fingerprint(_load(seeded, k)) for k in reversed(KEYS)][::-1]
    assert forward == backward
    # Index 3 at positions 0 and 3: the same frame, augmented differently.
    assert forward[0] != forward[3]
    # Plain indices are not seeded: the pipeline is random.
    np.random.seed(0)
    assert _fingerprint(_load(seeded, 3)) != _fingerprint(_load(seeded, 3))


def test_batches_do_not_depend_on_num_workers(seeded):
    def batches(workers):
        loader = DataLoader(seeded, batch_size=2, sampler=KEYS,
                            num_workers=workers, collate_fn=pseudo_collate,
                            generator=torch.Generator().manual_seed(workers))
        return [[(p.numpy().tobytes()) for p in b['inputs']['points']]
                for b in loader]
    assert batches(0) == batches(2)


def test_a_pickled_dataset_seeds_itself(seeded):
    """What spawn and forkserver workers get: the copy's ``__getitems__``
    loads from the copy, with the same samples."""
    copy = pickle.loads(pickle.dumps(seeded))
    assert copy.__getitems__.dataset is copy
    assert ([_fingerprint(s) for s in copy.__getitems__(KEYS[:2])] ==
            [_fingerprint(_load(seeded, k)) for k in KEYS[:2]])


def test_stock_draws_keep_mmdet3d_sampler(nus_synthetic):
    cfg = redirect_data_root(load_config(str(PILLAR02)), nus_synthetic)
    init_default_scope('mmdet3d')
    dataset = DATASETS.build(cfg.train_dataloader.dataset)
    seed_samples(dataset, gt_draws='stock')
    samplers = next(t.db_sampler for t in dataset.dataset.pipeline.transforms
                    if hasattr(t, 'db_sampler')).sampler_dict
    assert not any(isinstance(s, SeededClassSampler)
                   for s in samplers.values())
    with pytest.raises(ValueError, match='gt_database_draws'):
        seed_samples(dataset, gt_draws='seeded')
