"""The environment of ranks started by hand on a local rendezvous, and
waiting for a launcher that may hang (forked ranks:
``tests/helpers/train_tool.py``)."""
import os
import signal
import subprocess
from typing import Dict

import psutil
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
        str: What the launcher printed. A hang fails the test with the
        launcher's process tree as it was (:func:`process_tree`), then
        the output's end.
    """
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        tree = process_tree(proc.pid)
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        pytest.fail(f'{what}:\n{tree}\n{out[-5000:]}')
    return out


def process_tree(pid: int) -> str:
    """A line for ``pid`` and each of its descendants: its parent, state,
    threads, the kernel function it waits in (``/proc/<pid>/wchan``) and
    its command line; a DataLoader worker stuck right after ``fork()``
    shows as a one-thread child of a rank waiting in ``futex``."""
    try:
        procs = [psutil.Process(pid)]
        procs += procs[0].children(recursive=True)
    except psutil.Error:
        return f'process tree of {pid}: gone'
    lines = [f'process tree of {pid} (pid ppid state threads wchan cmd):']
    for p in procs:
        try:
            with open(f'/proc/{p.pid}/wchan') as f:
                wchan = f.read().strip() or '-'
            with p.oneshot():
                lines.append(f'{p.pid} {p.ppid()} {p.status()} '
                             f'{p.num_threads()} {wchan} '
                             f'{" ".join(p.cmdline())[:160]}')
        except (OSError, psutil.Error):
            lines.append(f'{p.pid} gone')
    return '\n'.join(lines)
