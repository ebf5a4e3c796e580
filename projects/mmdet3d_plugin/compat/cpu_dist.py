"""DDP on a CPU-only torch (mmengine issue #1460).

mmengine's ``init_dist`` calls ``torch.cuda.set_device`` and
``Runner.wrap_model`` passes ``device_ids=[LOCAL_RANK]``, which DDP rejects
for CPU modules. :func:`init_cpu_dist` starts a gloo process group before the
Runner (which then skips ``init_dist``), and
:class:`CPUDistributedDataParallel` drops ``device_ids`` for CPU modules.
Remove when mmengine handles CPU DDP itself.
"""
import datetime
import os
from typing import Optional

import torch.distributed as torch_dist
from mmengine.logging import print_log
from mmengine.model import MMDistributedDataParallel
from mmengine.registry import MODEL_WRAPPERS

from .restart_store import restart_safe_store, under_torchelastic


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
    if under_torchelastic():
        kwargs['store'] = restart_safe_store(int(env['RANK']),
                                             int(env['WORLD_SIZE']))
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
