"""A toy whose losses show what upstream hooks did to its data and model.

Each sample's ``tag`` is what its pipeline made of it: ``TagObjectSample``
(an ``ObjectSample``, so ``DisableObjectSampleHook`` finds it) adds 1 plus
a draw of numpy's global RNG while enabled; ``Tag`` adds its ``value``
(for the pipelines ``PipelineSwitchHook`` switches to); the dataset adds
1000 once ``update_skip_type_keys`` was called (``YOLOXModeSwitchHook``).
The model's inputs are shifted by the tag, so the loss depends on it, and
it logs the batch's mean ``tag`` and its head's ``use_l1`` beside the
loss. Imported by the training processes through ``custom_imports``.
"""
from pathlib import Path
from typing import Optional, Sequence

import numpy as np
import torch
from mmcv.transforms import BaseTransform
from mmengine.dataset import BaseDataset
from mmengine.hooks import Hook
from mmengine.model import BaseModel
from torch import nn

from mmdet3d.datasets.transforms import ObjectSample
from mmdet3d.registry import DATASETS, HOOKS, MODELS, TRANSFORMS
from projects.mmdet3d_plugin.datasets.wrappers import walk_datasets
# Registers FailAtIterHook and RecordIndicesHook for the configs that
# import this module.
from tests.helpers.fault_helpers import RecordIndicesHook  # noqa: F401
from tests.helpers.toy_config import write_toy_config

CLASSES = ('car', 'pedestrian')


@TRANSFORMS.register_module()
class TagObjectSample(ObjectSample):
    """``ObjectSample`` without a GT database: adds ``1 + U(0, 0.1)`` to
    the tag while not ``disabled``."""

    def __init__(self) -> None:  # no db_sampler to build
        self.disabled = False

    def transform(self, results: dict) -> dict:
        if not self.disabled:
            results['tag'] += 1.0 + float(np.random.uniform(0, 0.1))
        return results


@TRANSFORMS.register_module()
class Tag(BaseTransform):
    """Adds ``value`` to the tag."""

    def __init__(self, value: float) -> None:
        self.value = value

    def transform(self, results: dict) -> dict:
        results['tag'] += self.value
        return results


@DATASETS.register_module()
class HookToyDataset(BaseDataset):
    """``size`` regression samples through ``pipeline``, with per-load
    noise from numpy's global RNG; metainfo ``classes`` = :data:`CLASSES`.

    Args:
        size (int): Samples. Defaults to 40.
        pipeline (list): Transforms. Defaults to ``[TagObjectSample]``.
    """

    METAINFO = dict(classes=CLASSES)

    def __init__(self, size: int = 40,
                 pipeline: Optional[Sequence[dict]] = None) -> None:
        self.size = size
        self.skip_type_keys = None
        super().__init__(
            pipeline=pipeline or [dict(type='TagObjectSample')],
            serialize_data=False)

    def load_data_list(self) -> list:
        return [dict(index=i) for i in range(self.size)]

    def update_skip_type_keys(self, skip_type_keys) -> None:
        """What ``YOLOXModeSwitchHook`` calls (as on mmdet's
        ``MultiImageMixDataset``)."""
        self.skip_type_keys = list(skip_type_keys)

    def prepare_data(self, idx: int) -> dict:
        index = self.get_data_info(idx)['index']
        gen = torch.Generator().manual_seed(index)
        x = torch.randn(4, generator=gen)
        noise = float(np.random.uniform(-0.1, 0.1))
        results = self.pipeline(dict(index=index, tag=0.0))
        tag = results['tag'] + (1000.0 if self.skip_type_keys else 0.0)
        return dict(inputs=x + noise + 0.01 * tag,
                    targets=x.sum(0, keepdim=True), tag=tag, index=index)


class _Head(nn.Module):
    """What the hooks look at: ``num_classes`` (``NumClassCheckHook``) and
    ``use_l1`` (``YOLOXModeSwitchHook``)."""

    def __init__(self, num_classes: int) -> None:
        super().__init__()
        self.num_classes = num_classes
        self.use_l1 = False
        self.fc = nn.Linear(16, 1)


@MODELS.register_module()
class HookToyModel(BaseModel):
    """Two-layer regressor; logs ``tag`` (the batch's mean) and ``l1``."""

    def __init__(self, num_classes: int = len(CLASSES)) -> None:
        super().__init__()
        self.fc1 = nn.Linear(4, 16)
        self.bbox_head = _Head(num_classes)

    def forward(self, inputs, targets=None, tag=None, index=None,
                mode='loss'):
        x = torch.stack([torch.as_tensor(v) for v in inputs])
        out = self.bbox_head.fc(self.fc1(x).tanh())
        if mode != 'loss':
            return list(out)
        y = torch.stack([torch.as_tensor(v) for v in targets])
        return dict(loss=(out - y).pow(2).mean(),
                    tag=torch.tensor(float(np.mean(tag))),
                    l1=torch.tensor(float(self.bbox_head.use_l1)))


@HOOKS.register_module()
class ObjectSampleStateHook(Hook):
    """Logs, before the first iteration, ``disabled`` of every
    ``ObjectSample`` in the train dataset's pipelines (the state the
    DataLoader's workers start from): ``ObjectSample disabled before
    iteration 1: [True]``."""

    priority = 'LOWEST'

    def before_train_iter(self, runner, batch_idx, data_batch=None) -> None:
        if runner.iter != 0:
            return
        states = [
            transform.disabled
            for dataset in walk_datasets(runner.train_dataloader.dataset)
            for transform in getattr(getattr(dataset, 'pipeline', None),
                                     'transforms', ())
            if isinstance(transform, ObjectSample)
        ]
        runner.logger.info(
            f'ObjectSample disabled before iteration 1: {states}')


def write_hook_config(path: Path, hooks: Sequence[dict], max_epochs: int = 3,
                      size: int = 40, num_workers: int = 2,
                      persistent_workers: bool = False,
                      ckpt_interval: int = 3,
                      pipeline: Optional[Sequence[dict]] = None) -> Path:
    """:func:`~tests.helpers.toy_config.toy_config`'s toy by epoch
    (``size`` samples in batches of 4, shuffled, fork workers, SGD with
    momentum, a checkpoint every ``ckpt_interval`` iterations) with this
    module's model and data (``pipeline``: the dataset's, if given), a
    constant LR, ``hooks`` as ``custom_hooks`` and the log by epoch
    (``Epoch(train) [e][i/n]``).

    Returns:
        Path: ``path``.
    """
    dataset = dict(type='HookToyDataset', size=size)
    if pipeline is not None:
        dataset['pipeline'] = list(pipeline)
    return write_toy_config(
        path,
        imports=['tests.helpers.hook_toys', 'mmdet.engine.hooks',
                 'mmdet3d.engine.hooks'],
        model=dict(type='HookToyModel'), dataset=dataset,
        max_epochs=max_epochs, num_workers=num_workers,
        persistent_workers=persistent_workers, ckpt_interval=ckpt_interval,
        custom_hooks=list(hooks), param_scheduler=None,
        log_processor=dict(by_epoch=True, window_size=1))
