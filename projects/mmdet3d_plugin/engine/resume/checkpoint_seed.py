"""The seed a checkpoint was trained with."""
from typing import Optional

import torch


def checkpoint_seed(path: str) -> Optional[int]:
    """``meta['seed']`` of a checkpoint, read without loading its tensors
    (memory-mapped), or None."""
    try:
        meta = torch.load(path, map_location='cpu', mmap=True,
                          weights_only=False).get('meta', {})
    except Exception:  # noqa: BLE001  any unreadable file: no seed
        return None
    seed = meta.get('seed')
    return int(seed) if seed is not None else None
