"""A hook that makes one rank hang, for the DistWatchdogHook tests.

Imported by the training processes (``custom_imports``, with the repository on
``PYTHONPATH``) and by ``tests/engine/watchdog/test_dist_watchdog_hook.py``.
"""
import os
import time
from typing import Optional

from mmengine.dist import get_rank
from mmengine.hooks import Hook

from mmdet3d.registry import HOOKS


@HOOKS.register_module()
class SleepOnRankHook(Hook):
    """Sleeps on one rank before one iteration of one loop.

    Args:
        rank (int): Rank that sleeps.
        at_iter (int): Iteration (``runner.iter`` in train, the batch index
            in val and test) before which it sleeps.
        seconds (float, optional): How long; None sleeps forever.
            Defaults to None.
        phase (str): 'train', 'val' or 'test'. Defaults to 'train'.
        marker (str, optional): File written (with ``time.time()``) when
            the sleep starts. Defaults to None.
    """

    priority = 'NORMAL'

    def __init__(self,
                 rank: int,
                 at_iter: int,
                 seconds: Optional[float] = None,
                 phase: str = 'train',
                 marker: Optional[str] = None) -> None:
        self.rank = rank
        self.at_iter = at_iter
        self.seconds = seconds
        self.phase = phase
        self.marker = marker
        self.slept = 0

    def _maybe_sleep(self, index: int) -> None:
        if get_rank() != self.rank or index != self.at_iter or self.slept:
            return
        self.slept += 1
        if self.marker:
            with open(self.marker, 'w') as f:
                f.write(f'{time.time()} {os.getpid()}\n')
        if self.seconds is not None:
            time.sleep(self.seconds)
            return
        while True:
            time.sleep(3600)  # the hang: this line is the stuck frame

    def before_train_iter(self, runner, batch_idx, data_batch=None) -> None:
        if self.phase == 'train':
            self._maybe_sleep(runner.iter)

    def before_val_iter(self, runner, batch_idx, data_batch=None) -> None:
        if self.phase == 'val':
            self._maybe_sleep(batch_idx)

    def before_test_iter(self, runner, batch_idx, data_batch=None) -> None:
        if self.phase == 'test':
            self._maybe_sleep(batch_idx)
