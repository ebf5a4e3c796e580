"""A BatchNorm-free toy regressor, its data and Runner configs (the
tests' toy config, ``tests/helpers/toy_config.py``, built in process), for
the accumulation, precision and LR-scaling tests."""
import logging
import uuid
from contextlib import contextmanager
from typing import List, Optional

import torch
from mmengine.config import Config
from mmengine.logging import MMLogger
from mmengine.model import BaseModel
from torch import nn

from mmdet3d.registry import DATASETS, MODELS
from tests.helpers.toy_config import toy_config
from tests.helpers.toy_data import SeededToyDataset


@MODELS.register_module()
class ToyRegressor(BaseModel):
    """``Linear -> tanh -> Linear`` with a mean squared error loss.

    Args:
        batch_norm (bool): Put a ``BatchNorm1d`` after the first layer.
            Defaults to False.
    """

    def __init__(self, batch_norm: bool = False) -> None:
        super().__init__()
        self.fc1 = nn.Linear(4, 8)
        self.norm = nn.BatchNorm1d(8) if batch_norm else nn.Identity()
        self.fc2 = nn.Linear(8, 1)
        self.hidden_dtypes: List[torch.dtype] = []

    def forward(self, inputs, target=None, mode='loss'):
        hidden = self.fc1(torch.stack(inputs))
        self.hidden_dtypes.append(hidden.dtype)
        out = self.fc2(torch.tanh(self.norm(hidden)))
        if mode == 'loss':
            target = torch.stack(target).to(out.dtype)
            # Mean over the batch: accumulating k batches of n, each loss
            # divided by k, equals one batch of k * n.
            return dict(loss=(out - target).float().pow(2).mean())
        return list(out)


@DATASETS.register_module()
class ToyRegressionDataset(SeededToyDataset):
    """Sample ``i`` is a fixed random input and target drawn from seed ``i``.

    Args:
        size (int): Number of samples. Defaults to 8.
    """

    def __init__(self, size: int = 8) -> None:
        super().__init__(size)

    def extra(self, index: int, gen: torch.Generator) -> dict:
        return dict(target=torch.randn(1, generator=gen))


def toy_cfg(work_dir,
            batch_size: int = 2,
            max_iters: int = 4,
            accum: int = 1,
            lr: float = 0.1,
            dataset_size: Optional[int] = None,
            batch_norm: bool = False,
            optim_type: str = 'OptimWrapper',
            auto_scale_lr: Optional[dict] = None,
            **extra) -> Config:
    """Iteration-based Runner config for :class:`ToyRegressor`
    (:func:`~tests.helpers.toy_config.toy_config` built in process: SGD,
    no momentum, no schedule, no shuffling, no workers, mmengine's log
    processor, seed 0; ``extra`` sets top-level keys).

    The dataset holds ``batch_size * max_iters`` samples by default: the run
    stays in one epoch (mmengine's infinite iterator sleeps 2 s between
    epochs). ``CheckpointHook(interval=-1)``: no checkpoint unless
    ``extra`` adds one."""
    if dataset_size is None:
        dataset_size = batch_size * max_iters
    cfg = toy_config(
        imports=None,
        dataset=dict(type='ToyRegressionDataset', size=dataset_size),
        batch_size=batch_size, num_workers=0, shuffle=False,
        max_iters=max_iters, lr=lr, momentum=0.0,
        model=dict(type='ToyRegressor', batch_norm=batch_norm),
        work_dir=str(work_dir), param_scheduler=None, log_processor=None,
        randomness=dict(seed=0),
        experiment_name=f'toy_{uuid.uuid4().hex[:8]}',
        runner_type='PluginRunner', auto_scale_lr=auto_scale_lr)
    cfg['optim_wrapper'].update(type=optim_type, accumulative_counts=accum)
    cfg['default_hooks']['checkpoint'] = dict(type='CheckpointHook',
                                              interval=-1)
    cfg.update(extra)
    return Config(cfg)


def parameters_of(model) -> dict:
    """Detached copies of the model's parameters."""
    return {k: v.detach().clone() for k, v in model.named_parameters()}


class _Collector(logging.Handler):

    def __init__(self) -> None:
        super().__init__(level=logging.DEBUG)
        self.records: List[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)

    @property
    def messages(self) -> List[str]:
        return [r.getMessage() for r in self.records]


@contextmanager
def collect_logs(logger: Optional[logging.Logger] = None):
    """Collect the records of ``logger`` (default: mmengine's current)."""
    logger = logger or MMLogger.get_current_instance()
    handler = _Collector()
    logger.addHandler(handler)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)
