"""CenterPoint's ``CenterHead`` across the box convention change.

The head's coder decodes the same way in mmdet3d 0.x and 1.x
(``CenterPointBBoxCoder.decode``: ``rot = atan2(rot[:, 0], rot[:, 1])``,
sizes ``exp(dim)`` in channel order) and its targets are coded the same
way (``[reg, z, log(dims), sin, cos, vx, vy]``): only what a box means
changed (``boxes.py``), and the state-dict keys did not. So the last
convolution of each task's ``dim`` branch gets its output channels in the
order ``[1, 0, 2]`` (w, l -> l, w), and that of ``rot``
``(sin θ', cos θ') = (-cos θ, -sin θ)`` for ``θ' = -θ - π/2``; everything
else stays. ``DCNSeparateHead`` holds the same branches under
``task_head``. The map is its own inverse.
"""
import re
from typing import Dict, List, Tuple

import torch

#: ``<head>task_heads.<t>.[task_head.]<branch>.<layer>.<weight|bias>``.
_KEY = re.compile(r'^(?P<task>(?P<head>.*?)task_heads\.\d+\.'
                  r'(?:task_head\.)?)(?P<branch>dim|rot)\.(?P<layer>\d+)\.'
                  r'(?P<param>weight|bias)$')
#: Output channels of each converted branch's last layer.
CHANNELS = {'dim': 3, 'rot': 2}
#: What each branch's last layer becomes: ``new[i] = sign[i] * old[order[i]]``.
ORDER = {'dim': [1, 0, 2], 'rot': [1, 0]}
SIGN = {'dim': [1., 1., 1.], 'rot': [-1., -1.]}
OPERATION = {
    'dim': 'out channels [1, 0, 2]: (w, l, h) -> (l, w, h)',
    'rot': "out channels (sin, cos) <- -(cos, sin): θ' = -θ - π/2",
}


def centerhead_keys(state_dict: Dict[str, torch.Tensor]) -> Dict[str, str]:
    """The keys of the last layers of every ``dim`` and ``rot`` branch.

    Args:
        state_dict (dict): A checkpoint's state dict.

    Returns:
        dict: ``{key: branch}`` (``'dim'`` or ``'rot'``); empty when the
        state dict holds no ``CenterHead``.
    """
    last: Dict[Tuple[str, str], int] = {}
    for key in state_dict:
        match = _KEY.match(key)
        if match:
            where = (match['task'], match['branch'])
            last[where] = max(last.get(where, -1), int(match['layer']))
    found = {}
    for (task, branch), layer in sorted(last.items()):
        for param in ('weight', 'bias'):
            key = f'{task}{branch}.{layer}.{param}'
            if key in state_dict:
                found[key] = branch
    return found


def head_prefix(keys) -> str:
    """The state-dict prefix of the head (``'pts_bbox_head.'``)."""
    return _KEY.match(next(iter(keys)))['head']


def convert_centerhead(state_dict: Dict[str, torch.Tensor],
                       keys: Dict[str, str]) -> List[Tuple[str, str]]:
    """Convert ``keys`` of ``state_dict`` in place (new tensors).

    Args:
        state_dict (dict): The state dict to change.
        keys (dict): :func:`centerhead_keys` of it.

    Returns:
        list[tuple[str, str]]: ``(key, operation)`` of each change.

    Raises:
        ValueError: If a branch's last layer does not have the output
            channels of CenterPoint's code (3 sizes, sin and cos).
    """
    rows = []
    for key, branch in keys.items():
        old = state_dict[key]
        if old.shape[0] != CHANNELS[branch]:
            raise ValueError(
                f'migrate_checkpoint: {key} has {old.shape[0]} output '
                f'channels; a CenterHead {branch!r} branch ends in '
                f'{CHANNELS[branch]} (its shape {tuple(old.shape)} does not '
                'fit CenterPoint); pass --head to name the head.')
        sign = old.new_tensor(SIGN[branch]).reshape(
            -1, *([1] * (old.dim() - 1)))
        state_dict[key] = old[ORDER[branch]] * sign
        rows.append((key, OPERATION[branch]))
    return rows
