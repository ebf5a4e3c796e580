"""The unused sets of all ranks, over a side group of their own.

The group is a gloo group beside DDP's (:func:`~projects.mmdet3d_plugin.
dist.side_group`), so the reports never mix with DDP's pending gradient
reductions; its timeout is the hook's ``gather_timeout``.
"""
import zlib
from typing import Dict, List, Sequence

import torch
import torch.distributed as torch_dist

from ...dist.groups import side_group


def report_group(names: Sequence[str], world_size: int, timeout: float,
                 logger):
    """A gloo group for the reports, if all ranks check the same list.

    A collective call when distributed: every rank must make it.

    Args:
        names (Sequence[str]): This rank's checked parameter names.
        world_size (int): Number of ranks.
        timeout (float): Collective timeout of the group in seconds.
        logger (logging.Logger): Where a mismatch of the lists is warned.

    Returns:
        ProcessGroup | None: The group; None with one process, without an
        initialised ``torch.distributed``, or when the ranks' lists differ
        (each rank then reports only its own).
    """
    if world_size < 2 or not (torch_dist.is_available()
                              and torch_dist.is_initialized()):
        return None
    group = side_group(timeout)
    signature = (len(names), zlib.crc32('\n'.join(names).encode()))
    signatures: List = [None] * world_size
    torch_dist.all_gather_object(signatures, signature, group=group)
    if len(set(signatures)) > 1:
        logger.warning(
            'DDPUnusedParamHook: ranks check different parameter lists '
            f'(count, crc32 per rank: {signatures}); each rank reports '
            'only its own unused parameters. Build the same model on '
            'every rank.')
        return None
    return group


def gather_unused(group, used: bytearray,
                  world_size: int) -> Dict[int, List[int]]:
    """Every rank's unused parameter indices.

    A collective call on ``group``.

    Args:
        group (ProcessGroup): From :func:`report_group`.
        used (bytearray): This rank's marks, one byte per parameter.
        world_size (int): Number of ranks.

    Returns:
        dict[int, list[int]]: Rank -> indices of the parameters that
        received no gradient there.

    Raises:
        RuntimeError: When the gather fails or times out.
    """
    mine = torch.frombuffer(used, dtype=torch.uint8).clone()
    everyone = [torch.empty_like(mine) for _ in range(world_size)]
    torch_dist.all_gather(everyone, mine, group=group)
    return {
        rank: torch.nonzero(marks == 0).flatten().tolist()
        for rank, marks in enumerate(everyone)
    }
