"""DETR-style heads (DETR3D, BEVFormer, UniAD's track head) across the box
convention change.

Their regression branches end in a ``Linear`` whose rows are the box code
``(cx, cy, w, l, cz, h, sin θ, cos θ, vx, vy)`` (DETR3D's
``normalize_bbox``; the decoder reads sizes from rows 2, 3, 5 and the yaw
as ``atan2(row 6, row 7)``). The same code means a new-convention box once
rows 2 and 3 swap and ``(row 6, row 7) <- -(row 7, row 6)``, as mmdet3d's
``projects/DETR3D/old_detr3d_converter.py`` does.

Each distinct tensor is converted once: with ``with_box_refine=False``
every ``reg_branches.<i>`` is the same module, so a state dict saved from
CPU memory holds one tensor under six keys; changing it in place once per
key (as that converter does) applies the map six times, which is no
change at all. Here the keys that share storage get one converted tensor.
A checkpoint saved from GPU memory holds a copy per key, each converted.
The map is its own inverse.
"""
import re
from typing import Dict, List, Tuple

import torch

#: ``<head>reg_branches.<i>.<layer>.<weight|bias>``.
_KEY = re.compile(r'^(?P<branch>(?P<head>.*?)reg_branches\.\d+\.)'
                  r'(?P<layer>\d+)\.(?P<param>weight|bias)$')
#: The code's rows up to the yaw: (cx, cy, w, l, cz, h, sin, cos).
MIN_ROWS = 8
OPERATION = "rows 2 <-> 3 (w, l), rows (6, 7) <- -(7, 6): θ' = -θ - π/2"


def reg_branch_keys(state_dict: Dict[str, torch.Tensor]) -> List[str]:
    """The keys of the last layer of every ``reg_branches.<i>``.

    Args:
        state_dict (dict): A checkpoint's state dict.

    Returns:
        list[str]: Weight and bias keys, in state-dict order; empty when
        there is no regression branch.
    """
    last: Dict[str, int] = {}
    for key in state_dict:
        match = _KEY.match(key)
        if match:
            last[match['branch']] = max(last.get(match['branch'], -1),
                                        int(match['layer']))
    return [key for key in state_dict
            if _KEY.match(key) and int(_KEY.match(key)['layer'])
            == last[_KEY.match(key)['branch']]]


def head_prefix(keys) -> str:
    """The state-dict prefix of the head (``'pts_bbox_head.'``)."""
    return _KEY.match(next(iter(keys)))['head']


def _storage(tensor: torch.Tensor) -> tuple:
    return (tensor.untyped_storage().data_ptr(), tensor.storage_offset(),
            tuple(tensor.shape), tuple(tensor.stride()))


def row_order(rows: int) -> List[int]:
    """The new code's rows, each taken from this old row."""
    order = list(range(rows))
    order[2], order[3], order[6], order[7] = 3, 2, 7, 6
    return order


def convert_reg_branches(state_dict: Dict[str, torch.Tensor],
                         keys: List[str]) -> List[Tuple[str, str]]:
    """Convert ``keys`` of ``state_dict`` (new tensors; keys that shared
    one tensor share its conversion).

    Args:
        state_dict (dict): The state dict to change.
        keys (list[str]): :func:`reg_branch_keys` of it.

    Returns:
        list[tuple[str, str]]: ``(key, operation)`` of each distinct
        tensor converted, the keys that share it named.

    Raises:
        ValueError: If a last layer has fewer rows than the box code.
    """
    groups: Dict[tuple, List[str]] = {}
    for key in keys:
        tensor = state_dict[key]
        if tensor.shape[0] < MIN_ROWS:
            raise ValueError(
                f'migrate_checkpoint: {key} has {tensor.shape[0]} rows; a '
                'DETR-style regression branch ends in the box code (cx, cy, '
                f'w, l, cz, h, sin, cos[, vx, vy]), at least {MIN_ROWS} rows '
                f'(shape {tuple(tensor.shape)}); pass --head to name the '
                'head.')
        groups.setdefault(_storage(tensor), []).append(key)
    rows = []
    for shared in groups.values():
        old = state_dict[shared[0]]
        sign = old.new_ones(old.shape[0])
        sign[[6, 7]] = -1
        new = old[row_order(old.shape[0])] * sign.reshape(
            -1, *([1] * (old.dim() - 1)))
        for key in shared:
            state_dict[key] = new
        also = (f' (one tensor, also under {", ".join(shared[1:])})'
                if len(shared) > 1 else '')
        rows.append((shared[0], OPERATION + also))
    return rows
