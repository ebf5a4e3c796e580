"""Faults for the root-cause report tests (``tests/failures/test_report.py``).

Imported by the training processes through ``custom_imports`` (with
the repository on ``PYTHONPATH``). :func:`write_failure_config` writes the
configs that ``tools/train.py`` runs on 2 gloo ranks (forked ranks, or
``tools/dist_train.sh``); their hooks are ``tests/helpers/fault_hooks.py``'s
(:data:`BAD_BATCH_FAULT`).
"""
import os
import signal
import textwrap
from pathlib import Path
from typing import Optional, Sequence

import numpy as np
from torch.utils.data import Dataset, get_worker_info

from mmdet3d.registry import DATASETS

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
    ``model`` / ``dataset`` say otherwise; no checkpoints; gloo.

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
    model = model or dict(type='FaultToyModel')
    dataset = dataset or dict(type='FaultToyDataset', size=24)
    path.write_text(textwrap.dedent(f"""\
        custom_imports = dict(
            imports=['projects.mmdet3d_plugin', 'tests.helpers.fault_helpers',
                     'tests.helpers.fault_hooks', 'tests.helpers.toy_models',
                     'tests.helpers.failure_faults'],
            allow_failed_imports=False)
        default_scope = 'mmdet3d'
        model = {model!r}
        train_dataloader = dict(
            batch_size=2,
            num_workers={num_workers},
            persistent_workers=False,
            sampler=dict(type='DefaultSampler', shuffle=False),
            collate_fn=dict(type='pseudo_collate'),
            dataset={dataset!r})
        train_cfg = dict(type='IterBasedTrainLoop', max_iters={max_iters})
        optim_wrapper = dict(
            type='OptimWrapper', optimizer=dict(type='SGD', lr=0.01))
        default_hooks = dict(checkpoint=None,
                             logger=dict(type='LoggerHook', interval=1))
        custom_hooks = {list(hooks)!r}
        model_wrapper_cfg = dict(
            type='MMDistributedDataParallel',
            find_unused_parameters={find_unused_parameters})
        log_processor = dict(by_epoch=False, window_size=1)
        env_cfg = dict(
            cudnn_benchmark=False,
            mp_cfg=dict(mp_start_method='fork'),
            dist_cfg=dict(backend='gloo', timeout=60))
        log_level = 'INFO'
        """))
    return path
