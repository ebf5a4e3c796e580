"""The one builder of side process groups: gloo groups with a timeout of
their own, beside the default (NCCL or gloo) group.

Waits that may legitimately last long (rank 0 evaluating, the watchdog's
heartbeats, gathering unused-parameter reports) run on such a group, so
that they neither trip the default group's collective timeout nor block
its collectives.
"""
import datetime

import torch.distributed as torch_dist


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
