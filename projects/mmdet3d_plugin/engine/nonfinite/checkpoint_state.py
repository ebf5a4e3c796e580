"""Whether a run's weights or optimizer state hold a NaN or an infinity:
such a checkpoint is never written (``AtomicCheckpointHook``)."""
from typing import Any, Iterator, Optional, Tuple

import torch
from mmengine.model import is_model_wrapper


def _tensors(value: Any, prefix: str) -> Iterator[Tuple[str, torch.Tensor]]:
    if isinstance(value, torch.Tensor):
        yield prefix, value
    elif isinstance(value, dict):
        for key, each in value.items():
            yield from _tensors(each, f'{prefix}.{key}' if prefix else
                                str(key))
    elif isinstance(value, (list, tuple)):
        for i, each in enumerate(value):
            yield from _tensors(each, f'{prefix}.{i}')


def nonfinite_state(runner) -> Optional[str]:
    """The name of the first model tensor (``model.<name>``) or optimizer
    state tensor (``optimizer.<path>``) that holds a NaN or an infinity;
    None when all are finite."""
    model = runner.model.module if is_model_wrapper(
        runner.model) else runner.model
    parts = [('model', model.state_dict())]
    wrapper = getattr(runner, 'optim_wrapper', None)
    if wrapper is not None and hasattr(wrapper, 'state_dict'):
        parts.append(('optimizer', wrapper.state_dict()))
    for prefix, state in parts:
        for name, tensor in _tensors(state, prefix):
            if tensor.is_floating_point() and not bool(
                    torch.isfinite(tensor).all()):
                return name
    return None
