"""Keep the gradients of an unfinished accumulation cycle in checkpoints.

With ``accumulative_counts=4``, a checkpoint saved after iteration 6 holds
parameters updated at iteration 4; the gradients of iterations 5 and 6 live
only in ``param.grad``. mmengine does not save them: on resume it warns that
they are lost, and iteration 8 updates from two batches' gradients instead of
four. This hook stores them in the checkpoint and puts them back on resume,
so the resumed run matches the uninterrupted one.

Single-process runs only: mmengine saves checkpoints on rank 0 alone
(``Runner.save_checkpoint`` is ``master_only``), so the other ranks' partial
gradients cannot be gathered at that point. In distributed runs the hook
warns instead; make the checkpoint interval a multiple of
``accumulative_counts`` there.
"""
from typing import Dict, Optional

import torch
from mmengine.dist import get_world_size
from mmengine.hooks import Hook
from mmengine.model import is_model_wrapper
from mmdet3d.registry import HOOKS

CHECKPOINT_KEY = 'accumulated_grads'


@HOOKS.register_module()
class AccumulationResumeHook(Hook):
    """Save and restore the gradients of a partial accumulation cycle.

    :class:`~projects.mmdet3d_plugin.engine.PluginRunner` adds it when
    ``optim_wrapper.accumulative_counts > 1``; with mmengine's own Runner add
    it to ``custom_hooks``. In distributed runs it only warns when a
    checkpoint falls inside a cycle (see the module docstring).

    Args:
        accumulative_counts (int): Iterations per optimizer update, as in
            ``optim_wrapper.accumulative_counts``.

    Examples:
        >>> custom_hooks = [
        ...     dict(type='AccumulationResumeHook', accumulative_counts=4)]
    """

    priority = 'NORMAL'

    def __init__(self, accumulative_counts: int):
        if isinstance(accumulative_counts, bool) or not isinstance(
                accumulative_counts, int) or accumulative_counts < 1:
            raise ValueError(
                'AccumulationResumeHook: accumulative_counts must be a '
                f'positive integer, got {accumulative_counts!r}; use the '
                'value of optim_wrapper.accumulative_counts.')
        self.accumulative_counts = accumulative_counts
        self._loaded: Optional[Dict] = None
        self._warned_distributed = False

    @staticmethod
    def _named_parameters(runner):
        model = runner.model
        if is_model_wrapper(model):
            model = model.module
        return model.named_parameters()

    def before_save_checkpoint(self, runner, checkpoint: dict) -> None:
        """Add the pending gradients when saving inside a cycle."""
        inner_count = runner.optim_wrapper.inner_count
        pending = inner_count % self.accumulative_counts
        if pending == 0:
            return
        if get_world_size() > 1:
            # Called on rank 0 only; the other ranks' gradients are out of
            # reach without a collective they would not join.
            if not self._warned_distributed:
                runner.logger.warning(
                    f'AccumulationResumeHook: checkpoint at iteration '
                    f'{inner_count} falls inside an accumulation cycle '
                    f'({pending} of {self.accumulative_counts} iterations); '
                    'resuming from it loses those gradients in a distributed '
                    'run. Make the checkpoint interval a multiple of '
                    f'accumulative_counts={self.accumulative_counts}.')
                self._warned_distributed = True
            return
        grads = {
            name: param.grad.detach().cpu().clone()
            for name, param in self._named_parameters(runner)
            if param.grad is not None
        }
        checkpoint[CHECKPOINT_KEY] = dict(
            inner_count=inner_count,
            accumulative_counts=self.accumulative_counts,
            grads=grads)

    def after_load_checkpoint(self, runner, checkpoint: dict) -> None:
        """Keep the saved gradients until training starts."""
        self._loaded = checkpoint.get(CHECKPOINT_KEY)

    def before_train(self, runner) -> None:
        """Put the saved gradients back when resuming inside a cycle."""
        saved, self._loaded = self._loaded, None
        if not saved:
            return
        inner_count = runner.optim_wrapper.inner_count
        if inner_count != saved['inner_count']:
            # Loaded as weights (load_from without resume): a fresh start.
            return
        if saved['accumulative_counts'] != self.accumulative_counts:
            runner.logger.warning(
                'AccumulationResumeHook: the checkpoint was saved with '
                f"accumulative_counts={saved['accumulative_counts']}, this "
                f'run uses {self.accumulative_counts}; the partial cycle\'s '
                'gradients are not restored.')
            return
        params = dict(self._named_parameters(runner))
        missing = sorted(set(saved['grads']) - set(params))
        if missing:
            raise RuntimeError(
                'AccumulationResumeHook: the checkpoint holds gradients of '
                f'parameters this model lacks ({missing[:3]}...); resume '
                'with the model the checkpoint was trained with.')
        with torch.no_grad():
            for name, grad in saved['grads'].items():
                param = params[name]
                param.grad = grad.to(device=param.device, dtype=param.dtype)
        pending = inner_count % self.accumulative_counts
        runner.logger.info(
            f'AccumulationResumeHook: restored the gradients of {pending} '
            f'iteration(s) of the unfinished accumulation cycle (iteration '
            f'{inner_count} of a {self.accumulative_counts}-iteration cycle); '
            "mmengine's warning that they are lost does not apply.")
