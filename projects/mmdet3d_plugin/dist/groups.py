"""The one builder of side process groups: gloo groups with a timeout of
their own, beside the default (NCCL or gloo) group.

Waits that may legitimately last long (rank 0 evaluating, the watchdog's
heartbeats, gathering unused-parameter reports) run on such a group, so
that they neither trip the default group's collective timeout nor block
its collectives. :func:`destroy_group` ends one (or all) without the
deadlock torch 2.1's gloo groups can hit there.
"""
import datetime
import time
from typing import Optional

import torch.distributed as torch_dist

#: Seconds the caller of :func:`destroy_group` lets go of the GIL first.
GLOO_SETTLE_SECONDS = 0.2


def side_group(timeout: float, backend: str = 'gloo'):
    """A new group of all ranks with its own collective timeout.

    A collective call: every rank of the default group must make it, in
    the same order.

    Args:
        timeout (float): Collective timeout of the group in seconds.
        backend (str): Backend of the group. Defaults to 'gloo', which runs
            on CPU tensors and threads beside an NCCL default group.

    Returns:
        ProcessGroup: The group.
    """
    return torch_dist.new_group(
        backend=backend, timeout=datetime.timedelta(seconds=float(timeout)))


def destroy_group(group: Optional[object] = None) -> None:
    """``torch.distributed.destroy_process_group(group)`` (None: every
    group), after letting go of the GIL for :data:`GLOO_SETTLE_SECONDS`.

    On torch 2.1.2, gloo's worker thread drops its last collective's work
    after ``wait()`` has returned; dropping it frees tensors that have a
    Python object, which needs the GIL. ``~ProcessGroupGloo`` runs with the
    GIL held and waits for that thread's lock: both wait forever (seen
    here in native stacks of ``DistWatchdogHook``'s group, 3 of 13 runs of
    a 2-rank test, and once in a test of this module's groups). A moment
    without the GIL lets the worker finish first; on torch 2.13 the wait
    costs the same 0.2 s and was never needed.

    Args:
        group (ProcessGroup, optional): The group. Defaults to None: the
            default group and every other.
    """
    time.sleep(GLOO_SETTLE_SECONDS)
    if group is None:
        torch_dist.destroy_process_group()
    else:
        torch_dist.destroy_process_group(group)
