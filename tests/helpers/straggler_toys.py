"""A toy dataset and model that are slow on one rank, for the StragglerHook
tests.

Imported by ``tests/engine/straggler/test_straggler_hook.py`` and, through
``custom_imports``, by the ranks it trains. The slow rank is read from
``RANK``, which torchrun (and ``tests/helpers/train_tool.py``'s forked
ranks) set and forked DataLoader workers inherit.
:func:`write_straggler_config` writes the config those tests train in 2
forked ranks.
"""
import os
import time
from pathlib import Path
from typing import Optional

from mmdet3d.registry import DATASETS, MODELS
from tests.helpers.fault_helpers import FaultToyDataset, FaultToyModel
from tests.helpers.toy_config import write_toy_config


def _is_slow(rank: Optional[int]) -> bool:
    return rank is not None and os.environ.get('RANK', '0') == str(rank)


@DATASETS.register_module()
class SlowLoadToyDataset(FaultToyDataset):
    """:class:`FaultToyDataset` whose samples take ``seconds`` to load on
    ``slow_rank``.

    Args:
        slow_rank (int, optional): The slow rank; None: none is.
            Defaults to None.
        seconds (float): Sleep per sample there. Defaults to 0.04.
        size (int): Number of samples. Defaults to 24.
    """

    def __init__(self,
                 slow_rank: Optional[int] = None,
                 seconds: float = 0.04,
                 size: int = 24) -> None:
        super().__init__(size)
        self.slow = _is_slow(slow_rank)
        self.seconds = seconds

    def __getitem__(self, index: int) -> dict:
        if self.slow:
            time.sleep(self.seconds)
        return super().__getitem__(index)


@MODELS.register_module()
class SlowForwardToyModel(FaultToyModel):
    """:class:`FaultToyModel` whose forward takes ``seconds`` longer on
    ``slow_rank``.

    Args:
        slow_rank (int, optional): The slow rank; None: none is.
            Defaults to None.
        seconds (float): Extra time per forward there. Defaults to 0.08.
    """

    def __init__(self,
                 slow_rank: Optional[int] = None,
                 seconds: float = 0.08) -> None:
        super().__init__()
        self.slow = _is_slow(slow_rank)
        self.seconds = seconds

    def forward(self, inputs, targets=None, mode='loss'):
        if self.slow and mode == 'loss':
            time.sleep(self.seconds)
        return super().forward(inputs, targets, mode)


def write_straggler_config(path: Path,
                           hook: dict,
                           slow_load: Optional[int] = None,
                           slow_forward: Optional[int] = None,
                           max_iters: int = 12,
                           num_workers: int = 0,
                           size: int = 48) -> Path:
    """Write the toy config with this module's toys: samples in batches of
    2, not shuffled, SGD without momentum or schedule, no checkpoints, the
    log every 100 iterations, seed 0, gloo.

    Args:
        path (Path): Config file to write.
        hook (dict): The StragglerHook's config.
        slow_load (int, optional): Rank whose samples load slowly.
        slow_forward (int, optional): Rank whose forward is slow.
        max_iters (int): Iterations. Defaults to 12.
        num_workers (int): DataLoader workers (persistent if any).
            Defaults to 0.
        size (int): Samples; 48 make 12 iterations per pass on 2 ranks
            (the DataLoader's restart pauses 2 s). Defaults to 48.

    Returns:
        Path: ``path``.
    """
    return write_toy_config(
        path, imports=['tests.helpers.straggler_toys'],
        model=dict(type='SlowForwardToyModel', slow_rank=slow_forward),
        dataset=dict(type='SlowLoadToyDataset', slow_rank=slow_load,
                     size=size),
        batch_size=2, num_workers=num_workers,
        persistent_workers=num_workers > 0, shuffle=False,
        max_iters=max_iters, ckpt_interval=None, lr=0.01, momentum=None,
        log_interval=100, custom_hooks=[hook], param_scheduler=None,
        log_processor=dict(by_epoch=False), randomness=dict(seed=0))
