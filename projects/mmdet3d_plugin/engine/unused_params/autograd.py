"""The parameters a loss depends on, by its autograd graph.

With ``find_unused_parameters=True``, DDP gives zero gradients to every
parameter its outputs depend on, also to those that feed only outputs left
out of the loss; following the loss's own graph tells them apart.
"""
import torch


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
