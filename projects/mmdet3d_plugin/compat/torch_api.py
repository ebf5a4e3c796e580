"""torch APIs newer than torch 2.1 that the plugin calls, with the result
they give on every supported torch (2.1.2 to 2.13).

* :func:`total_norm`: ``torch.nn.utils.get_total_norm`` came with torch
  2.6. On an older torch it is computed the way ``get_total_norm`` does
  (and torch 2.1's ``clip_grad_norm_`` did before the split): the tensors
  grouped by device and dtype, ``torch._foreach_norm`` per group where the
  device supports it, then the norm of the stacked norms; the same value,
  bit for bit (``tests/compat/test_torch_api.py``).
* :func:`has_cpu_grad_scaler`: ``torch.amp.GradScaler`` (with a ``'cpu'``
  device) came with torch 2.3; before, only CUDA had a GradScaler
  (``torch.cuda.amp.GradScaler``).
* :func:`nccl_env`: the NCCL settings torch reads were renamed in torch 2.2
  (``NCCL_ASYNC_ERROR_HANDLING`` -> ``TORCH_NCCL_ASYNC_ERROR_HANDLING``,
  ``NCCL_BLOCKING_WAIT`` -> ``TORCH_NCCL_BLOCKING_WAIT``); the old names
  are still read, with a deprecation warning, from 2.2 on.

Remove a fallback once the oldest supported torch has the API.
"""
from typing import Iterable, Union

import torch
from packaging.version import Version

#: The installed torch, without its local part (``2.1.2+cu121`` -> 2.1.2).
TORCH_VERSION = Version(Version(torch.__version__).public)


def torch_at_least(version: str) -> bool:
    """Whether the installed torch is ``version`` or newer."""
    return TORCH_VERSION >= Version(version)


def total_norm(tensors: Union[torch.Tensor, Iterable[torch.Tensor]],
               norm_type: float = 2.0) -> torch.Tensor:
    """``torch.nn.utils.get_total_norm(tensors, norm_type)`` on every
    supported torch: the norm of the tensors' norms.

    Args:
        tensors (Tensor | Iterable[Tensor]): Gradients, say.
        norm_type (float): Order of the norm. Defaults to 2.0.

    Returns:
        Tensor: A scalar on the first tensor's device; ``tensor(0.)`` for no
        tensor.
    """
    get_total_norm = getattr(torch.nn.utils, 'get_total_norm', None)
    if get_total_norm is not None:
        return get_total_norm(tensors, norm_type)
    return _total_norm_before_2_6(tensors, norm_type)


def _total_norm_before_2_6(tensors, norm_type: float) -> torch.Tensor:
    """torch 2.6's ``get_total_norm`` (``foreach=None``, no error when
    non-finite) with what torch 2.1 has: its ``clip_grad_norm_`` computes
    the norm so."""
    from torch.utils._foreach_utils import (_group_tensors_by_device_and_dtype,
                                            _has_foreach_support)
    tensors = [tensors] if isinstance(tensors, torch.Tensor) else list(
        tensors)
    norm_type = float(norm_type)
    if not tensors:
        return torch.tensor(0.0)
    first_device = tensors[0].device
    grouped = _group_tensors_by_device_and_dtype([tensors])
    norms = []
    for (device, _), ([device_tensors], _) in grouped.items():
        if _has_foreach_support(device_tensors, device):
            norms.extend(torch._foreach_norm(device_tensors, norm_type))
        else:
            norms.extend(torch.linalg.vector_norm(g, norm_type)
                         for g in device_tensors)
    return torch.linalg.vector_norm(
        torch.stack([norm.to(first_device) for norm in norms]), norm_type)


def has_cpu_grad_scaler() -> bool:
    """Whether torch has a GradScaler for CPU tensors
    (``torch.amp.GradScaler('cpu')``, torch >= 2.3)."""
    return hasattr(torch.amp, 'GradScaler')


def nccl_env(name: str) -> str:
    """The name torch reads for the NCCL setting ``name`` (given without
    prefix, e.g. ``'ASYNC_ERROR_HANDLING'``, ``'BLOCKING_WAIT'``):
    ``TORCH_NCCL_<name>`` from torch 2.2, ``NCCL_<name>`` before."""
    return ('TORCH_NCCL_' if torch_at_least('2.2') else 'NCCL_') + name
