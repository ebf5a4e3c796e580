"""The environment of ranks started by hand on a local rendezvous."""
from typing import Dict


def rendezvous_env(rank: int,
                   world_size: int,
                   port: int,
                   host: str = '127.0.0.1') -> Dict[str, str]:
    """The variables torchrun sets for one rank of a one-node group.

    For starting the ranks of a local group without torchrun (tests,
    benchmarks); :func:`projects.mmdet3d_plugin.compat.init_cpu_dist` reads
    them.

    Args:
        rank (int): Rank of the process (also its local rank).
        world_size (int): Number of processes.
        port (int): Rendezvous port, e.g. from :func:`free_port`.
        host (str): Rendezvous address. Defaults to '127.0.0.1'.

    Returns:
        dict[str, str]: ``RANK``, ``LOCAL_RANK``, ``WORLD_SIZE``,
        ``MASTER_ADDR`` and ``MASTER_PORT``.
    """
    return dict(RANK=str(rank),
                LOCAL_RANK=str(rank),
                WORLD_SIZE=str(world_size),
                MASTER_ADDR=host,
                MASTER_PORT=str(port))
