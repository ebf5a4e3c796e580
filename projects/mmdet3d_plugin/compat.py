"""Fixes for today's torch / mmengine stack, all in one place.

Each fix names the upstream problem it works around and when it can go.
Applied once, on ``import projects.mmdet3d_plugin``; nothing here edits files
of another package on disk.

1. Checkpoints on torch >= 2.6 (mmengine issue #1655, fixed on mmengine's main
   branch, unreleased as of 0.10.7). ``torch.load`` defaults to
   ``weights_only=True`` and rejects what mmengine puts in its own
   checkpoints: ``HistoryBuffer`` objects of the message hub, numpy arrays
   and scalars, and ``getattr(HistoryBuffer, 'min')`` for their statistics.
   We allow exactly those globals, and replace the pickled ``getattr`` by one
   that resolves only ``HistoryBuffer`` statistics methods, so arbitrary
   files still cannot run code. Remove once mmengine > 0.10.7 is required.

2. DDP on a CPU-only torch (mmengine issue #1460 and its ``init_dist`` /
   ``wrap_model``). ``init_dist`` calls ``torch.cuda.set_device`` and
   ``Runner.wrap_model`` passes ``device_ids=[LOCAL_RANK]``, which DDP rejects
   for CPU modules. :func:`init_cpu_dist` starts a gloo process group before
   the Runner (which then skips ``init_dist``), and
   :class:`CPUDistributedDataParallel` drops ``device_ids`` for CPU modules.
   Remove when mmengine handles CPU DDP itself.

3. Sparse convolution backward on a CPU-only torch (spconv 2.3.8; the
   forward was fixed by traveller59/spconv#366, the backward still asks
   ``torch.cuda.current_stream()``). Without CUDA, spconv's ops module gets
   a stream getter that returns 0 (no stream), which its CPU kernels
   ignore. Remove once spconv's backward checks the device itself.
"""
import datetime
import os
import pickle
from typing import Optional

import numpy as np
import torch
import torch.distributed as torch_dist
from mmengine.logging import HistoryBuffer, print_log
from mmengine.model import MMDistributedDataParallel
from mmengine.registry import MODEL_WRAPPERS

_HISTORY_BUFFER_METHODS = ('min', 'max', 'current', 'mean')


def _history_buffer_getattr(obj, name: str):
    """Stand-in for ``getattr`` inside weights-only checkpoint loading."""
    if obj is HistoryBuffer and (name in _HISTORY_BUFFER_METHODS or
                                 name in HistoryBuffer._statistics_methods):
        return getattr(obj, name)
    raise pickle.UnpicklingError(
        f'checkpoint loading: refusing getattr({obj!r}, {name!r}); only '
        'HistoryBuffer statistics methods may be resolved while loading with '
        'weights_only=True. Load the file with torch.load(..., '
        'weights_only=False) only if you trust it.')


def allow_mmengine_checkpoints() -> None:
    """Let weights-only ``torch.load`` read mmengine's own checkpoints."""
    if not hasattr(torch.serialization, 'add_safe_globals'):
        return  # torch < 2.4 loads everything; nothing to allow.
    try:
        from numpy._core import multiarray  # numpy >= 2
    except ImportError:
        from numpy.core import multiarray
    safe = [
        HistoryBuffer,
        np.ndarray,
        np.dtype,
        (multiarray._reconstruct,
         'numpy.core.multiarray._reconstruct'),
        (multiarray.scalar, 'numpy.core.multiarray.scalar'),
        (_history_buffer_getattr, '__builtin__.getattr'),
        (_history_buffer_getattr, 'builtins.getattr'),
    ]
    # numpy >= 1.25 pickles dtypes by their concrete class.
    safe += [cls for cls in vars(getattr(np, 'dtypes', object)).values()
             if isinstance(cls, type) and issubclass(cls, np.dtype)]
    torch.serialization.add_safe_globals(safe)


# (rank, world size, local rank) variables of launchers other than torchrun.
_LAUNCHER_ENV = (
    ('SLURM_PROCID', 'SLURM_NTASKS', 'SLURM_LOCALID'),
    ('OMPI_COMM_WORLD_RANK', 'OMPI_COMM_WORLD_SIZE',
     'OMPI_COMM_WORLD_LOCAL_RANK'),
)


def init_cpu_dist(backend: str = 'gloo', timeout: Optional[float] = None
                  ) -> bool:
    """Start the process group from torchrun / Slurm variables on CPU.

    Call before building the Runner when CUDA is not available; the Runner
    then finds an initialised group and skips ``init_dist``.

    Args:
        backend (str): Backend for CPU tensors. Defaults to 'gloo'.
        timeout (float, optional): Collective timeout in seconds.
            Defaults to None (torch's default).

    Returns:
        bool: True if this call initialised the group.
    """
    if torch_dist.is_initialized():
        return False
    env = os.environ
    for rank, size, local in _LAUNCHER_ENV:
        if 'RANK' not in env and rank in env:
            env['RANK'], env['WORLD_SIZE'] = env[rank], env[size]
            env['LOCAL_RANK'] = env.get(local, '0')
            env.setdefault('MASTER_PORT', '29500')
            env.setdefault('MASTER_ADDR', '127.0.0.1')
    missing = [k for k in ('RANK', 'WORLD_SIZE', 'MASTER_ADDR', 'MASTER_PORT')
               if k not in env]
    if missing:
        raise RuntimeError(
            f'init_cpu_dist: environment variables {missing} are not set; '
            'start distributed runs with tools/dist_train.sh (torchrun) or '
            'tools/slurm_train.sh, or use --launcher none.')
    kwargs = {}
    if timeout is not None:
        kwargs['timeout'] = datetime.timedelta(seconds=timeout)
    torch_dist.init_process_group(
        backend=backend,
        rank=int(env['RANK']),
        world_size=int(env['WORLD_SIZE']),
        **kwargs)
    print_log(
        f'initialised a {backend} process group on CPU: rank '
        f'{env["RANK"]} of {env["WORLD_SIZE"]}',
        logger='current')
    return True


# Registered in mmengine's root registry, not mmdet3d's: Runner.wrap_model
# looks the type up with the root registry's ``get``, which does not search
# child scopes.
@MODEL_WRAPPERS.register_module()
class CPUDistributedDataParallel(MMDistributedDataParallel):
    """``MMDistributedDataParallel`` that also wraps CPU modules.

    mmengine passes ``device_ids=[LOCAL_RANK]`` to every DDP subclass; DDP
    requires ``device_ids=None`` for modules on CPU. On GPU modules this
    behaves exactly like ``MMDistributedDataParallel``.

    Examples:
        >>> model_wrapper_cfg = dict(
        ...     type='CPUDistributedDataParallel',
        ...     find_unused_parameters=False)
    """

    def __init__(self, module, device_ids=None, **kwargs):
        on_cpu = all(p.device.type == 'cpu' for p in module.parameters())
        if on_cpu:
            device_ids = None
            kwargs.pop('output_device', None)
        super().__init__(module=module, device_ids=device_ids, **kwargs)


def _no_cuda_stream() -> int:
    return 0


def let_spconv_train_on_cpu() -> None:
    """Make spconv's backward run without CUDA (see fix 3 above)."""
    if torch.cuda.is_available():
        return
    try:
        from spconv.pytorch import ops as spconv_ops
    except ImportError:
        return  # no spconv: mmdet3d falls back to mmcv's sparse ops
    spconv_ops.get_current_stream = _no_cuda_stream


allow_mmengine_checkpoints()
let_spconv_train_on_cpu()
