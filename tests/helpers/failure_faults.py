"""Faults for the root-cause report tests (``tests/failures/test_report.py``).

Imported by the training processes through ``custom_imports`` (with
the repository on ``PYTHONPATH``). :func:`write_failure_config` writes
the configs (``tests/helpers/toy_config.py``'s toy, with its own defaults)
that ``tools/train.py`` runs on 2 gloo ranks (forked ranks, or
``tools/dist_train.sh``); their hooks are ``tests/helpers/fault_hooks.py``'s
(:data:`BAD_BATCH_FAULT`).
"""
import os
import signal
from pathlib import Path
from typing import Optional, Sequence

import numpy as np
from torch.utils.data import Dataset, get_worker_info

from mmdet3d.registry import DATASETS
from tests.helpers.toy_config import write_toy_config

#: The error of :data:`BAD_BATCH_FAULT`, the same on every rank that raises.
FAULT_MESSAGE = 'injected fault: the batch at iteration 2 is corrupt'
#: ``FailAtIterHook`` (``tests/helpers/fault_hooks.py``) raising
#: ``ValueError(FAULT_MESSAGE)`` when 2 iterations are done, before the
#: third; add ``ranks`` (default: every rank), ``action``, ``linger``.
BAD_BATCH_FAULT = dict(type='FailAtIterHook', at_iter=2, error='ValueError',
                       message=FAULT_MESSAGE)


@DATASETS.register_module()
class SigbusWorkerDataset(Dataset):
    """Regression samples; a DataLoader worker of ``rank`` dies of SIGBUS.

    The worker sends itself SIGBUS when it loads its ``after``-th sample,
    as a worker does when it writes a batch into a full ``/dev/shm``.

    Args:
        rank (int): Rank whose worker dies.
        after (int): Samples the worker loads first. Defaults to 4.
        size (int): Number of samples. Defaults to 32.
    """

    def __init__(self, rank: int, after: int = 4, size: int = 32) -> None:
        self.rank = rank
        self.after = after
        self.size = size
        self.loaded = 0

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, index: int) -> dict:
        if get_worker_info() is not None and \
                os.environ.get('RANK') == str(self.rank):
            self.loaded += 1
            if self.loaded > self.after:
                os.kill(os.getpid(), signal.SIGBUS)
        x = np.random.default_rng(index).standard_normal(4).astype('f4')
        return dict(inputs=x, targets=x.sum(0, keepdims=True))


def write_failure_config(path: Path,
                         hooks: Sequence[dict] = (),
                         model: Optional[dict] = None,
                         dataset: Optional[dict] = None,
                         num_workers: int = 0,
                         find_unused_parameters: bool = False,
                         max_iters: int = 4) -> Path:
    """Write a tiny 2-rank training config for ``tools/train.py``.

    ``FaultToyModel`` on ``FaultToyDataset`` (``fault_helpers``) unless
    ``model`` / ``dataset`` say otherwise; batches of 2, not shuffled,
    ``pseudo_collate``, SGD without momentum or schedule, no checkpoints,
    no seed, DDP's ``find_unused_parameters`` set, gloo with a 60 s
    timeout.

    Args:
        path (Path): Config file to write.
        hooks (Sequence[dict]): ``custom_hooks``. Defaults to ().
        model (dict, optional): Model config.
        dataset (dict, optional): Dataset config.
        num_workers (int): DataLoader workers. Defaults to 0.
        find_unused_parameters (bool): DDP's setting. Defaults to False.
        max_iters (int): Iterations. Defaults to 4.

    Returns:
        Path: ``path``.
    """
    return write_toy_config(
        path,
        imports=['tests.helpers.fault_helpers', 'tests.helpers.fault_hooks',
                 'tests.helpers.toy_models', 'tests.helpers.failure_faults'],
        model=model or dict(type='FaultToyModel'), dataset=dataset,
        batch_size=2, num_workers=num_workers, shuffle=False,
        collate_fn='pseudo_collate', max_iters=max_iters,
        ckpt_interval=None, lr=0.01, momentum=None, dist_timeout=60,
        custom_hooks=list(hooks), param_scheduler=None, randomness=None,
        model_wrapper_cfg=dict(
            type='MMDistributedDataParallel',
            find_unused_parameters=find_unused_parameters))
