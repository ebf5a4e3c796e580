"""The datasets inside dataset wrappers, found the same way by the doctor,
the pipeline profiler and the GT-database seeding."""
from projects.mmdet3d_plugin.datasets.wrappers import (dataset_name,
                                                       walk_datasets)


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
