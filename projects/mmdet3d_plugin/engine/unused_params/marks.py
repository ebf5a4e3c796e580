"""Marks for the parameters that receive a gradient in one iteration.

A ``Tensor.register_post_accumulate_grad_hook`` per parameter, registered
for the iteration and removed after it, so the marks are right whatever
``zero_grad``, gradient accumulation or AMP do, and cost nothing outside
their window.
"""
import functools
from typing import List, Sequence, Tuple

import torch


def _mark_used(used: bytearray, index: int, param: torch.Tensor) -> None:
    used[index] = 1


def mark_gradients(
        params: Sequence[torch.Tensor]) -> Tuple[bytearray, List]:
    """Start marking which of ``params`` receive a gradient.

    Args:
        params (Sequence[torch.Tensor]): The checked parameters.

    Returns:
        tuple[bytearray, list]: One byte per parameter, set to 1 once its
        gradient was accumulated, and the hook handles (``remove()`` each
        to stop).
    """
    used = bytearray(len(params))
    handles = [
        param.register_post_accumulate_grad_hook(
            functools.partial(_mark_used, used, index))
        for index, param in enumerate(params)
    ]
    return used, handles


def should_sync(optim_wrapper) -> bool:
    """Whether DDP synchronises gradients in the coming iteration.

    Args:
        optim_wrapper (OptimWrapper): The runner's optim wrapper.

    Returns:
        bool: Its ``should_sync()``; True for a wrapper without one.
    """
    sync = getattr(optim_wrapper, 'should_sync', None)
    return True if sync is None else bool(sync())
