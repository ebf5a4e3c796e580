"""The environment of ranks started by hand on a local rendezvous, and
waiting for a launcher that may hang (forked ranks:
``tests/helpers/train_tool.py``)."""
import os
import signal
import subprocess
from typing import Dict

import pytest


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


def wait_or_kill(proc: subprocess.Popen, timeout: float, what: str) -> str:
    """The combined output of a launcher started with
    ``start_new_session=True``; fail the test when it runs past
    ``timeout`` seconds, after killing its whole process group.

    Args:
        proc (subprocess.Popen): The launcher (text mode, stdout piped).
        timeout (float): Seconds to wait.
        what (str): What failed, for the failure message (e.g. 'the run
            hung after rank 1 failed').

    Returns:
        str: What the launcher printed.
    """
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        pytest.fail(f'{what}:\n{out[-5000:]}')
    return out
