"""Toy model and data for the reliability tests.

Imported by the training processes of
``tests/engine/atomic_checkpoint/test_atomic_checkpoint_hook.py``,
``tests/engine/resume/test_exact_resume.py`` and others through
``custom_imports`` (the repository on ``PYTHONPATH``), and by
spawn-started DataLoader workers to unpickle :class:`SelfKillingDataset`.
The config they train with ``tools/train.py`` is
``tests/helpers/toy_config.py``'s, whose defaults are this module's toy.
Importing this module registers the fault hooks of
``tests/helpers/fault_hooks.py`` too (:class:`FailAtIterHook`,
:class:`StopAfterHook`), so the configs that import it can use them.
"""
import json
import os
import signal
import time
from pathlib import Path
from typing import Optional

import numpy as np
import torch
from mmengine.dist import get_rank
from mmengine.evaluator import BaseMetric
from mmengine.hooks import Hook
from mmengine.model import BaseModel
from torch import nn
from torch.utils.data import Dataset

from mmdet3d.registry import DATASETS, HOOKS, METRICS, MODELS
# Registers the fault hooks for the configs that import this module.
from tests.helpers.fault_hooks import (FailAtIterHook, StopAfterHook)  # noqa: F401


@MODELS.register_module()
class FaultToyModel(BaseModel):
    """Two-layer regressor; ``ballast`` floats make its checkpoints large.

    Args:
        ballast (int): Number of float32 values in a buffer saved with the
            checkpoint. Defaults to 0.
    """

    def __init__(self, ballast: int = 0) -> None:
        super().__init__()
        self.fc1 = nn.Linear(4, 16)
        self.fc2 = nn.Linear(16, 1)
        self.register_buffer('ballast', torch.zeros(ballast))

    def forward(self, inputs, targets=None, mode='loss', index=None):
        x = torch.stack([torch.as_tensor(v) for v in inputs])
        out = self.fc2(self.fc1(x).tanh())
        if mode == 'loss':
            y = torch.stack([torch.as_tensor(v) for v in targets])
            return dict(loss=(out - y).pow(2).mean())
        return list(out)


@DATASETS.register_module()
class FaultToyDataset(Dataset):
    """Regression samples with per-load noise from numpy's global RNG.

    The noise makes the loss depend on how DataLoader workers are seeded,
    so an exact-resume test also checks the data side.

    Args:
        size (int): Number of samples. Defaults to 24.
        with_index (bool): Samples carry their ``index`` (for
            :class:`RecordIndicesHook`). Defaults to False.
        load_ms (float): Milliseconds each sample takes to load (a sleep,
            as reading a file would). Defaults to 0.
        loads_file (str, optional): File each load appends the sample's
            index to, one line per load, from whichever process loads it
            (the work a run did on data). Defaults to None.
    """

    def __init__(self, size: int = 24, with_index: bool = False,
                 load_ms: float = 0.,
                 loads_file: Optional[str] = None) -> None:
        self.size = size
        self.with_index = with_index
        self.load_ms = load_ms
        self.loads_file = loads_file

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, index: int) -> dict:
        if self.load_ms:
            time.sleep(self.load_ms / 1000)
        if self.loads_file:
            with open(self.loads_file, 'a') as f:  # one write: O_APPEND
                f.write(f'{index}\n')
        gen = torch.Generator().manual_seed(index)
        x = torch.randn(4, generator=gen)
        noise = float(np.random.uniform(-0.1, 0.1))
        sample = dict(inputs=x + noise, targets=x.sum(0, keepdim=True))
        if self.with_index:
            sample['index'] = int(index)
        return sample


class SelfKillingDataset(Dataset):
    """Dataset whose worker kills itself with SIGKILL at one index.

    Samples are numpy arrays, which travel to the main process inside the
    pickled batch; torch tensors would travel as shared-memory file
    descriptors fetched from the worker, and a main process fetching one
    from the dead worker gets a ``ConnectionResetError`` first, depending
    on timing.

    Args:
        kill_index (int): The index whose loading kills the process.
        size (int): Number of samples. Defaults to 16.
    """

    def __init__(self, kill_index: int, size: int = 16) -> None:
        self.kill_index = kill_index
        self.size = size

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, index: int) -> dict:
        if index == self.kill_index:
            os.kill(os.getpid(), signal.SIGKILL)
        x = np.random.default_rng(index).standard_normal(4).astype('f4')
        return dict(inputs=x, targets=x.sum(0, keepdims=True))


@HOOKS.register_module()
class RecordIndicesHook(Hook):
    """Appends ``[iteration, epoch, indices]`` of each trained batch to
    ``<work_dir>/indices_rank<r>.jsonl`` (needs ``with_index=True``)."""

    def after_train_iter(self, runner, batch_idx, data_batch=None,
                         outputs=None) -> None:
        path = Path(runner.work_dir) / f'indices_rank{get_rank()}.jsonl'
        with path.open('a') as f:
            f.write(json.dumps([runner.iter + 1, runner.epoch,
                                list(data_batch['index'])]) + '\n')


@HOOKS.register_module()
class MarkFirstIterHook(Hook):
    """Writes the wall-clock time at which this process finished its first
    iteration to ``<work_dir>/first_iter.json`` (rank 0)."""

    def __init__(self) -> None:
        self.done = False

    def after_train_iter(self, runner, batch_idx, data_batch=None,
                         outputs=None) -> None:
        if not self.done and get_rank() == 0:
            self.done = True
            (Path(runner.work_dir) / 'first_iter.json').write_text(
                json.dumps(dict(time=time.time(), iter=runner.iter + 1)))


@METRICS.register_module()
class FaultToyMetric(BaseMetric):
    """Mean squared error of :class:`FaultToyModel`'s predictions, for
    runs that validate the toy."""

    def process(self, data_batch, data_samples) -> None:
        for out, target in zip(data_samples, data_batch['targets']):
            self.results.append(float((out - target).pow(2).mean()))

    def compute_metrics(self, results: list) -> dict:
        return dict(mse=sum(results) / max(len(results), 1))
