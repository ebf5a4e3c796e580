"""Which rank this process is, as its error file and ``rank_info.json``
name it."""
import os
import socket
from typing import Dict, Optional


def _first_int(*names: str) -> Optional[int]:
    for name in names:
        if os.environ.get(name, '').lstrip('-').isdigit():
            return int(os.environ[name])
    return None


def rank_identity() -> Dict[str, object]:
    """Rank, local rank, world size (torchrun's or Slurm's), host, pid.

    Returns:
        dict: ``rank``, ``local_rank``, ``world_size`` (None where neither
        launcher set them), ``host`` and ``pid``.
    """
    return dict(
        rank=_first_int('RANK', 'SLURM_PROCID'),
        local_rank=_first_int('LOCAL_RANK', 'SLURM_LOCALID'),
        world_size=_first_int('WORLD_SIZE', 'SLURM_NTASKS'),
        host=socket.gethostname(),
        pid=os.getpid())
