"""The toy run of the Slurm tests: ``toy_config``'s toy, paced.

:class:`PaceHook` sleeps after every iteration, so a test can preempt the
run in the middle; :func:`write_paced_config` writes the toy config with
it. Imported by the training processes through ``custom_imports``.
"""
import time
from pathlib import Path

from mmengine.hooks import Hook

from mmdet3d.registry import HOOKS
from tests.helpers.toy_config import write_toy_config


@HOOKS.register_module()
class PaceHook(Hook):
    """Sleeps after every training iteration.

    Args:
        seconds (float): Sleep after each iteration. Defaults to 0.5.
    """

    priority = 'VERY_LOW'

    def __init__(self, seconds: float = 0.5) -> None:
        if seconds < 0:
            raise ValueError(f'PaceHook: seconds must be >= 0; got {seconds}')
        self.seconds = seconds

    def after_train_iter(self, runner, batch_idx, data_batch=None,
                         outputs=None) -> None:
        time.sleep(self.seconds)


def write_paced_config(path: Path, max_iters: int, ckpt_interval: int = 2,
                       seconds: float = 0.0, size: int = 48) -> Path:
    """The toy config of :func:`~tests.helpers.toy_config.toy_config`
    (``fault_helpers``' toy), with :class:`PaceHook` when ``seconds`` > 0.

    Args:
        path (Path): Config file to write.
        max_iters (int): Iterations.
        ckpt_interval (int): Checkpoint every N iterations. Defaults to 2.
        seconds (float): :class:`PaceHook`'s sleep. Defaults to 0.
        size (int): Samples of the dataset: with 2 ranks, an epoch is
            ``size / 8`` iterations. Defaults to 48.

    Returns:
        Path: ``path``.
    """
    hooks = [dict(type='PaceHook', seconds=seconds)] if seconds else []
    return write_toy_config(
        path,
        imports=['tests.helpers.fault_helpers', 'tests.helpers.slurm_toy'],
        dataset=dict(type='FaultToyDataset', size=size), max_iters=max_iters,
        ckpt_interval=ckpt_interval, custom_hooks=hooks)
