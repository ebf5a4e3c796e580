"""The first module whose output is not finite, found by running one
batch's forward again with a hook on every module (only after a bad
step: it costs one forward)."""
import random
from typing import Any, List, Optional, Tuple

import numpy as np
import torch


def _tensors(value: Any):
    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, dict):
        for each in value.values():
            yield from _tensors(each)
    elif isinstance(value, (list, tuple)):
        for each in value:
            yield from _tensors(each)
    elif hasattr(value, 'features') and isinstance(  # spconv's tensors
            getattr(value, 'features'), torch.Tensor):
        yield value.features


def _finite(value: Any) -> bool:
    return all(bool(torch.isfinite(t).all()) for t in _tensors(value)
               if t.is_floating_point())


def first_nonfinite_module(
        model: torch.nn.Module,
        data_batch: dict) -> Tuple[Optional[str], List[str]]:
    """Run ``data_batch`` through ``model`` (unwrapped: no DDP, so no
    collective) in its train mode, without gradients.

    The random states (numpy, ``random``, torch) are put back afterwards;
    the caller puts the buffers back.

    Returns:
        tuple[str | None, list[str]]: The dotted name of the first module
        (in the order they finish) whose output holds a NaN or an
        infinity (None when every output is finite), and the keys of the
        preprocessed inputs that already hold one (``points``,
        ``voxels``, ...).
    """
    names = {module: name for name, module in model.named_modules()}
    found = []

    def check(module, inputs, output):
        if not found and not _finite(output):
            found.append(names[module] or type(module).__name__)

    states = (np.random.get_state(), random.getstate(),
              torch.random.get_rng_state())
    handles = []
    try:
        with torch.no_grad():
            data = model.data_preprocessor(data_batch, True)
            inputs = data.get('inputs') if isinstance(data, dict) else data
            if isinstance(inputs, dict):
                bad_inputs = [k for k, v in inputs.items() if not _finite(v)]
            else:
                bad_inputs = [] if _finite(inputs) else ['inputs']
            handles = [m.register_forward_hook(check)
                       for m in model.modules()]
            model._run_forward(data, mode='loss')
    finally:
        for handle in handles:
            handle.remove()
        np.random.set_state(states[0])
        random.setstate(states[1])
        torch.random.set_rng_state(states[2])
    return (found[0] if found else None), bad_inputs
