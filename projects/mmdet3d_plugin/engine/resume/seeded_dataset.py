"""The dataset wrapper that loads each sample with its own random state."""
import copy
from typing import Union

from mmengine.dataset import BaseDataset

from mmdet3d.registry import DATASETS
from .gt_database import seed_gt_samplers
from .sample_key import SampleKey, seed_sample


@DATASETS.register_module()
class SeededDataset:
    """Wraps a dataset so that sample ``key`` (a :class:`SampleKey` from
    :class:`ResumableSampler`) is loaded from the random state of its
    ``(seed, epoch, position)``.

    Before each sample's pipeline runs, numpy's global RNG, ``random`` and
    torch's CPU generator are seeded for that sample, and the
    ``ObjectSample`` GT-database samplers draw from that state
    (:func:`seed_gt_samplers`): a sample's augmentation does not depend on
    the worker that loads it or on the run's history, so a resumed run
    gets the samples the interrupted run would have got. Plain ``int``
    indices are read without seeding.

    Args:
        dataset (dict | Dataset): The dataset or its config.

    Examples:
        >>> train_dataloader = dict(
        ...     sampler=dict(type='ResumableSampler', shuffle=True),
        ...     dataset=dict(type='SeededDataset', dataset=dict(
        ...         type='CBGSDataset', dataset=...)))
    """

    def __init__(self, dataset: Union[dict, object]) -> None:
        if isinstance(dataset, dict):
            dataset = DATASETS.build(dataset)
        self.dataset = dataset
        if isinstance(dataset, BaseDataset) and not dataset._fully_initialized:
            dataset.full_init()
        self.gt_samplers = seed_gt_samplers(dataset)

    @property
    def metainfo(self) -> dict:
        """The wrapped dataset's ``metainfo`` (a copy)."""
        return copy.deepcopy(getattr(self.dataset, 'metainfo', {}))

    def full_init(self) -> None:
        """Nothing left to do: the wrapped dataset is initialized."""

    def __len__(self) -> int:
        return len(self.dataset)

    def __getitem__(self, key: int) -> dict:
        if isinstance(key, SampleKey):
            seed_sample(key)
        return self.dataset[int(key)]

    def __getattr__(self, name: str):
        # Everything else is the wrapped dataset's (get_data_info,
        # cat_ids, ...); only called for names not found on the wrapper.
        if name == 'dataset':
            raise AttributeError(name)
        return getattr(self.dataset, name)
