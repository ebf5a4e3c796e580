"""The datasets inside dataset wrappers, found the same way by the doctor,
the pipeline profiler and the GT-database seeding; the wrappers' index
lists shared with DataLoader workers by the runner (CBGS on
nuScenes-format infos of the tests' generator)."""
import copy
import pickle
from multiprocessing.reduction import ForkingPickler

import numpy as np
import pytest
from mmengine.registry import init_default_scope

from mmdet3d.registry import DATASETS
import projects.mmdet3d_plugin  # noqa: F401  registers the plugin
from projects.mmdet3d_plugin.datasets.shared_infos import SharedIndexList
from projects.mmdet3d_plugin.datasets.wrappers import (dataset_name,
                                                       share_index_lists,
                                                       walk_datasets)
from projects.mmdet3d_plugin.engine.runner import PluginRunner
from tests.helpers.pipeline_equality import difference
from tests.helpers.synthetic_infos import write_synthetic_infos


class Toy:
    """A dataset."""


class CBGSDataset:
    """A wrapper as mmdet3d's and mmengine's hold one dataset."""

    def __init__(self, dataset):
        self.dataset = dataset


class ConcatDataset:
    """A wrapper as mmengine's holds several."""

    def __init__(self, datasets):
        self.datasets = datasets


def test_walk_enters_wrappers_and_concatenations_once():
    a, b = Toy(), Toy()
    repeat = CBGSDataset(a)
    concat = ConcatDataset([repeat, b, b])
    outer = CBGSDataset(concat)
    assert list(walk_datasets(outer)) == [outer, concat, repeat, a, b]
    assert list(walk_datasets(outer, concat=False)) == [outer, concat]
    assert list(walk_datasets(None)) == []


def test_dataset_name_follows_the_wrapper_chain():
    assert dataset_name(CBGSDataset(Toy())) == 'CBGSDataset of Toy'
    deep = CBGSDataset(CBGSDataset(CBGSDataset(CBGSDataset(Toy()))))
    assert dataset_name(deep) == ' of '.join(['CBGSDataset'] * 4)
    assert dataset_name(ConcatDataset([Toy()])) == 'ConcatDataset'


@pytest.fixture(scope='module')
def cbgs_cfg(tmp_path_factory):
    path = tmp_path_factory.mktemp('cbgs') / 'infos.pkl'
    write_synthetic_infos(str(path), 400, num_instances=12)
    return dict(type='CBGSDataset', dataset=dict(
        type='SafeNuScenesDataset', data_root='', ann_file=str(path),
        data_prefix=dict(pts='samples/LIDAR_TOP', sweeps='sweeps/LIDAR_TOP'),
        pipeline=[dict(type='LoadAnnotations3D', with_bbox_3d=True,
                       with_label_3d=True),
                  dict(type='Pack3DDetInputs',
                       keys=['gt_bboxes_3d', 'gt_labels_3d'])]))


def test_the_runner_shares_cbgs_indices_with_the_workers(cbgs_cfg):
    init_default_scope('mmdet3d')
    np.random.seed(0)  # CBGS draws its repeats
    stock = DATASETS.build(copy.deepcopy(cbgs_cfg))
    np.random.seed(0)
    loader = PluginRunner.build_dataloader(dict(
        dataset=copy.deepcopy(cbgs_cfg), batch_size=2, num_workers=0,
        sampler=dict(type='DefaultSampler', shuffle=False)))
    shared = loader.dataset.sample_indices
    assert isinstance(shared, SharedIndexList)
    assert isinstance(stock.sample_indices, list)
    assert len(stock.sample_indices) > 1000  # CBGS repeats the rare ones
    assert shared == stock.sample_indices and list(shared) == \
        stock.sample_indices
    assert shared[-1] == stock.sample_indices[-1] and type(shared[5]) is int
    assert shared[3:9] == stock.sample_indices[3:9]
    pickled = len(ForkingPickler.dumps(shared))
    assert pickled < 1000 < len(ForkingPickler.dumps(stock.sample_indices))
    clone = pickle.loads(ForkingPickler.dumps(loader.dataset))
    assert clone.sample_indices == stock.sample_indices
    for index in (0, 17, len(stock) - 1):
        assert difference(stock[index], clone[index]) is None
    assert share_index_lists(loader.dataset) == []  # already shared
