"""Which parameters a loss reaches: the marks of those that receive a
gradient in one iteration, and the parameters the loss's autograd graph
reaches.

A ``Tensor.register_post_accumulate_grad_hook`` per parameter, registered
for the iteration and removed after it, so the marks are right whatever
``zero_grad``, gradient accumulation or AMP do, and cost nothing outside
their window.

With ``find_unused_parameters=True``, DDP gives zero gradients to every
parameter its outputs depend on, also to those that feed only outputs left
out of the loss; following the loss's own graph (:func:`reachable_params`)
tells them apart.
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


def reachable_params(root: torch.Tensor) -> set:
    """Ids of the leaf tensors that ``root``'s autograd graph reaches.

    Args:
        root (torch.Tensor): A loss, or any tensor.

    Returns:
        set[int]: ``id()`` of every leaf (``AccumulateGrad``) tensor in the
        graph; ``{id(root)}`` for a leaf that requires grad; empty for a
        tensor outside autograd.
    """
    if root.grad_fn is None:
        return {id(root)} if root.requires_grad else set()
    found, seen, stack = set(), set(), [root.grad_fn]
    while stack:
        node = stack.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        variable = getattr(node, 'variable', None)  # AccumulateGrad
        if variable is not None:
            found.add(id(variable))
        stack.extend(next_node for next_node, _ in node.next_functions)
    return found
