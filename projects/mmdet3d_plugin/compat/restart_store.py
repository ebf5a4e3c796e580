"""Process groups that survive torchrun's restarts (``--max-restarts``).

With torchrun's static rendezvous (``--master-addr/--master-port``, what
``tools/dist_train.sh`` uses), the workers of every attempt share the
agent's TCPStore without a per-attempt prefix (torch 2.13:
``rendezvous._create_c10d_store``: "We create a new TCPStore for every
retry so no need to add prefix for each attempt"). The default group's
keys happen to be renewed, but the keys of every ``new_group`` an earlier
attempt created are still there: a restarted rank reads the dead peer's
address and fails with ``Gloo connectFullMesh failed ... Connection
refused`` or hangs (measured here: a 2-rank run with one side group,
restarted once). Related: pytorch #135712.

:func:`restart_safe_store` gives the process group a store whose keys are
prefixed with the attempt (``TORCHELASTIC_RESTART_COUNT``), so each
attempt starts from an empty namespace.
"""
import datetime
import os
from typing import Optional

import torch
import torch.distributed as torch_dist
from torch.distributed import PrefixStore, TCPStore

NAME = 'restart_store'


def under_torchelastic() -> bool:
    """Whether torchrun (torch elastic) started this process."""
    return 'TORCHELASTIC_RESTART_COUNT' in os.environ


def restart_safe_store(rank: int, world_size: int,
                       timeout: Optional[float] = None) -> PrefixStore:
    """The torchrun store of this attempt (``MASTER_ADDR``/``MASTER_PORT``),
    its keys prefixed with the attempt number.

    Args:
        rank (int): This process's rank.
        world_size (int): Number of ranks.
        timeout (float, optional): Store timeout in seconds. Defaults to
            None (300 s).

    Returns:
        PrefixStore: For ``init_process_group(store=...)``.
    """
    env = os.environ
    agent_store = env.get('TORCHELASTIC_USE_AGENT_STORE') == str(True)
    store = TCPStore(
        env['MASTER_ADDR'], int(env['MASTER_PORT']), world_size,
        is_master=not agent_store and rank == 0,
        timeout=datetime.timedelta(seconds=timeout or 300),
        multi_tenant=not agent_store)
    attempt = env.get('TORCHELASTIC_RESTART_COUNT', '0')
    return PrefixStore(f'mmdet3d_plugin/attempt_{attempt}', store)


def init_restart_safe_dist(backend: str = 'nccl',
                           timeout: Optional[float] = None) -> bool:
    """mmengine's ``init_dist('pytorch')`` (device from ``LOCAL_RANK``, then
    the process group) on :func:`restart_safe_store`, for CUDA runs under
    torchrun; the Runner then finds the group and skips ``init_dist``.

    Args:
        backend (str): Process group backend. Defaults to 'nccl'.
        timeout (float, optional): Collective timeout in seconds.

    Returns:
        bool: True if this call initialised the group.
    """
    if torch_dist.is_initialized() or not under_torchelastic():
        return False
    env = os.environ
    rank, world_size = int(env['RANK']), int(env['WORLD_SIZE'])
    torch.cuda.set_device(int(env.get('LOCAL_RANK', 0)))
    kwargs = {}
    if timeout is not None:
        kwargs['timeout'] = datetime.timedelta(seconds=timeout)
    torch_dist.init_process_group(
        backend=backend, store=restart_safe_store(rank, world_size),
        rank=rank, world_size=world_size, **kwargs)
    return True
