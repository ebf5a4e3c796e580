"""Linear LR scaling that counts gradient accumulation.

mmengine's ``Runner.scale_lr`` scales by ``world_size x batch_size /
base_batch_size`` and ignores ``optim_wrapper.accumulative_counts``
(mmengine PR #1080, open as of 0.10.7), so an accumulated run trains with an
LR that is off by the accumulation factor.
"""
from typing import Tuple


def effective_batch_size(world_size: int, batch_size: int,
                         accumulative_counts: int = 1) -> int:
    """Samples per optimizer update.

    Args:
        world_size (int): Number of processes (GPUs).
        batch_size (int): Samples per process and iteration.
        accumulative_counts (int): Iterations per update. Defaults to 1.

    Returns:
        int: ``world_size * batch_size * accumulative_counts``.
    """
    for name, value in (('world_size', world_size),
                        ('batch_size', batch_size),
                        ('accumulative_counts', accumulative_counts)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(
                f'effective batch size: {name} must be a positive integer, '
                f'got {value!r}.')
    return world_size * batch_size * accumulative_counts


def lr_scale_factor(base_batch_size: int, world_size: int, batch_size: int,
                    accumulative_counts: int = 1) -> Tuple[int, float]:
    """Effective batch size and the linear LR factor for it.

    Args:
        base_batch_size (int): Batch size the config's LR was tuned for
            (``auto_scale_lr.base_batch_size``).
        world_size (int): Number of processes (GPUs).
        batch_size (int): Samples per process and iteration.
        accumulative_counts (int): Iterations per update. Defaults to 1.

    Returns:
        tuple[int, float]: ``(effective batch size, factor)``.
    """
    if isinstance(base_batch_size, bool) or not isinstance(
            base_batch_size, (int, float)) or base_batch_size <= 0:
        raise ValueError(
            'auto_scale_lr: base_batch_size must be a positive number (the '
            'total batch the LR was tuned for, e.g. 8 GPUs x 4 = 32), got '
            f'{base_batch_size!r}.')
    effective = effective_batch_size(world_size, batch_size,
                                     accumulative_counts)
    return effective, effective / float(base_batch_size)


def effective_lr(base_lr: float, base_batch_size: int, world_size: int,
                 batch_size: int, accumulative_counts: int = 1) -> float:
    """LR after linear scaling to the effective batch size.

    Args:
        base_lr (float): The config's LR, tuned for ``base_batch_size``.
        base_batch_size (int): ``auto_scale_lr.base_batch_size``.
        world_size (int): Number of processes (GPUs).
        batch_size (int): Samples per process and iteration.
        accumulative_counts (int): Iterations per update. Defaults to 1.

    Returns:
        float: ``base_lr * world_size * batch_size * accumulative_counts /
        base_batch_size``.

    Examples:
        >>> effective_lr(1e-4, 32, world_size=2, batch_size=4,
        ...              accumulative_counts=4)
        0.0001
    """
    _, factor = lr_scale_factor(base_batch_size, world_size, batch_size,
                                accumulative_counts)
    return base_lr * factor
