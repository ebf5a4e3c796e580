"""The decision to skip an update whose gradient is not finite, the same
on every rank without a collective.

Under DDP the gradients are all-reduced during ``backward``, so after it
every rank holds the same gradients: a non-finite loss on one rank makes
its gradients non-finite, and the all-reduce makes every rank's
non-finite. The guard reads the gradients' total norm before the optimizer
steps (one number, one host sync per update) and skips the step where it
is not finite: all ranks reach the same decision from the same numbers,
with no collective of their own. The optimizer is not stepped (its
momentum untouched), ``zero_grad`` still runs, the buffers the skipped
iterations' forwards changed (BatchNorm running statistics) are put back,
the iteration and the LR schedule go on. With gradient accumulation the
norm is read at the update, over the whole cycle, and the cycle's buffers
are put back.

Under fp16 with a loss scaler, non-finite scaled gradients are the
scaler's normal overflow (it skips the step and lowers the scale); only
then the ranks exchange whether their loss was finite (a collective on
that rare path only, taken by every rank since the gradients are the
same), and a non-finite loss counts as a non-finite step.
"""
import math
from typing import List, Optional

import torch
from mmengine.dist import all_gather_object, get_world_size

from ...compat.torch_api import total_norm


class BufferSnapshot:
    """Every floating-point or integer buffer of a model (BatchNorm's
    running mean, variance and batch count), copied to put back."""

    def __init__(self, model: torch.nn.Module) -> None:
        self.buffers = [b for b in model.buffers() if b.numel()]
        self.saved: Optional[List[torch.Tensor]] = None

    def take(self) -> None:
        """Copy the buffers' values now."""
        self.saved = [b.detach().clone() for b in self.buffers]

    def restore(self) -> None:
        """Put the copied values back (nothing if none were taken)."""
        if self.saved is None:
            return
        with torch.no_grad():
            for buffer, value in zip(self.buffers, self.saved):
                buffer.copy_(value)


class StepGuard:
    """Wraps one optim wrapper's ``backward`` and ``step`` (attributes of
    the instance, so ``update_params`` calls them) to skip non-finite
    updates.

    Args:
        optim_wrapper: An mmengine ``OptimWrapper`` (or a subclass:
            ``AmpOptimWrapper``, the plugin's bf16 wrapper).
        model (nn.Module): The model whose buffers are put back.
    """

    def __init__(self, optim_wrapper, model: torch.nn.Module) -> None:
        self.optim_wrapper = optim_wrapper
        self.params = [p for group in optim_wrapper.optimizer.param_groups
                       for p in group['params']]
        self.scaler = getattr(optim_wrapper, 'loss_scaler', None)
        self.buffers = BufferSnapshot(model)
        self._backward = optim_wrapper.backward
        self._step = optim_wrapper.step
        optim_wrapper.backward = self.backward
        optim_wrapper.step = self.step
        self._losses: List[torch.Tensor] = []
        #: Whether the last update was skipped (read after the iteration).
        self.skipped = False
        #: The gradients' total norm of the last update.
        self.grad_norm: Optional[float] = None

    def cycle_starts(self) -> bool:
        """Whether the next backward starts an accumulation cycle."""
        wrapper = self.optim_wrapper
        counts = getattr(wrapper, '_accumulative_counts', 1)
        return wrapper._inner_count % counts == 0

    def before_iter(self) -> None:
        """Call before each iteration's forward."""
        self.skipped = False
        if self.cycle_starts():
            self.buffers.take()
            self._losses = []

    def backward(self, loss: torch.Tensor, **kwargs) -> None:
        self._losses.append(loss.detach())
        self._backward(loss, **kwargs)

    def loss_finite(self) -> bool:
        """Whether this rank's losses of the current cycle were finite."""
        return all(bool(torch.isfinite(loss).all()) for loss in self._losses)

    def step(self, **kwargs) -> None:
        grads = [p.grad for p in self.params if p.grad is not None]
        norm = total_norm(grads) if grads else torch.zeros(())
        self.grad_norm = norm.item()
        bad = not math.isfinite(self.grad_norm)
        if bad and self.scaler is not None:
            # Scaled gradients: an overflow unless a rank's loss was bad.
            finite = [self.loss_finite()]
            if get_world_size() > 1:
                finite = all_gather_object(finite[0])
            bad = not all(finite)
        if bad:
            self.skipped = True
            self.buffers.restore()
            return
        self._step(**kwargs)

    def unwrap(self) -> None:
        """Give the optim wrapper its own methods back."""
        for name in ('backward', 'step'):
            vars(self.optim_wrapper).pop(name, None)
