"""Toys of the non-finite guard's tests: a dataset with one NaN sample
(samples as dicts that carry their index, or as plain tensors), a
regressor with a BatchNorm layer (whose running statistics a NaN forward
poisons), a hook that makes a weight infinite and one that records the
samples of each batch. Imported by the training processes through
``custom_imports``."""
import json
from pathlib import Path

import torch
from mmengine.dist import get_rank
from mmengine.hooks import Hook
from mmengine.model import BaseModel, is_model_wrapper
from torch import nn
from torch.utils.data import Dataset

from mmdet3d.registry import DATASETS, HOOKS, MODELS
# Registers RecordIndicesHook and the fault hooks for the configs.
from tests.helpers.fault_helpers import RecordIndicesHook  # noqa: F401


@DATASETS.register_module()
class NaNToyDataset(Dataset):
    """Regression samples carrying their ``index``; sample ``nan_index``
    has a NaN feature.

    Args:
        size (int): Samples. Defaults to 40.
        nan_index (int): The sample with the NaN. Defaults to 7.
    """

    def __init__(self, size: int = 40, nan_index: int = 7) -> None:
        self.size = size
        self.nan_index = nan_index

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, index: int) -> dict:
        x = torch.randn(4, generator=torch.Generator().manual_seed(index))
        target = x.sum(0, keepdim=True)
        if index == self.nan_index:
            x[2] = float('nan')
        return dict(inputs=x, targets=target, index=int(index))


@DATASETS.register_module()
class PlainNaNToyDataset(NaNToyDataset):
    """:class:`NaNToyDataset`'s samples as a plain ``torch`` dataset gives
    them: a tuple of tensors ``(inputs, targets)``, nothing naming the
    sample; the same arguments."""

    def __getitem__(self, index: int) -> tuple:
        sample = super().__getitem__(index)
        return sample['inputs'], sample['targets']


@MODELS.register_module()
class BNToyModel(BaseModel):
    """``fc1`` -> ``BatchNorm1d`` -> tanh -> ``fc2``."""

    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(4, 16)
        self.bn = nn.BatchNorm1d(16)
        self.fc2 = nn.Linear(16, 1)

    def forward(self, inputs, targets=None, index=None, mode='loss'):
        x = torch.stack([torch.as_tensor(v) for v in inputs])
        out = self.fc2(self.bn(self.fc1(x)).tanh())
        if mode != 'loss':
            return list(out)
        y = torch.stack([torch.as_tensor(v) for v in targets])
        return dict(loss=(out - y).pow(2).mean())


@HOOKS.register_module()
class PoisonWeightsHook(Hook):
    """Sets ``fc1.weight[0, 0]`` to +Inf after iteration ``at_iter``
    (1-based), as a step that overflows a weight would."""

    priority = 'HIGHEST'

    def __init__(self, at_iter: int) -> None:
        self.at_iter = at_iter

    def after_train_iter(self, runner, batch_idx, data_batch=None,
                         outputs=None) -> None:
        if runner.iter + 1 == self.at_iter:
            model = runner.model.module if is_model_wrapper(
                runner.model) else runner.model
            with torch.no_grad():
                model.fc1.weight[0, 0] = float('inf')


@HOOKS.register_module()
class RecordSamplesHook(Hook):
    """Appends ``[iteration, [sample_idx, ...]]`` of each trained batch of
    mmdet3d data samples to ``<work_dir>/samples_rank<r>.jsonl``."""

    def after_train_iter(self, runner, batch_idx, data_batch=None,
                         outputs=None) -> None:
        path = Path(runner.work_dir) / f'samples_rank{get_rank()}.jsonl'
        with path.open('a') as f:
            f.write(json.dumps([runner.iter + 1, [
                s.metainfo['sample_idx']
                for s in data_batch['data_samples']]]) + '\n')
