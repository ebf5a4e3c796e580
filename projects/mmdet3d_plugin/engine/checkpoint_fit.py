"""Whether a checkpoint holds weights of the model it is tested with.

mmengine loads a checkpoint with ``strict=False``: a checkpoint of another
model (another config, another voxel size or head) loads with a list of
missing keys and shape warnings, and the test then scores random weights.
:func:`check_checkpoint_fits` refuses it before any sample is predicted.
"""
import re
from typing import Dict, List, Optional, Tuple

import torch
from mmengine.runner.checkpoint import CheckpointLoader
from torch import nn

#: Prefixes that wrappers add to parameter names (mmengine strips the same).
_WRAPPER_PREFIX = re.compile(r'^module\.')
#: A checkpoint that lacks more than this fraction of the model's weights
#: is of another model.
MAX_MISSING = 0.5


def _state_dict(checkpoint) -> Dict[str, torch.Tensor]:
    state = checkpoint.get('state_dict', checkpoint) if isinstance(
        checkpoint, dict) else {}
    return {
        _WRAPPER_PREFIX.sub('', k): v
        for k, v in state.items() if isinstance(v, torch.Tensor)
    }


def _shape(t: torch.Tensor) -> List[int]:
    return list(t.shape)


def compare_weights(
    model: nn.Module, state: Dict[str, torch.Tensor]
) -> Tuple[List[str], List[Tuple[str, List[int], List[int]]]]:
    """The model's weights missing from ``state``, and those whose shapes
    differ (name, checkpoint shape, model shape)."""
    own = getattr(model, 'module', model).state_dict()
    missing = [k for k in own if k not in state]
    shapes = [(k, _shape(state[k]), _shape(v)) for k, v in own.items()
              if k in state and state[k].shape != v.shape]
    return missing, shapes


def checkpoint_mismatch(model: nn.Module, filename: str) -> Optional[str]:
    """Why ``filename`` does not hold this model's weights, or None.

    Args:
        model (nn.Module): The built model (wrapped or not).
        filename (str): The checkpoint.

    Returns:
        str | None: Counts and the first differing weight; None when every
        weight the checkpoint shares has the model's shape and it holds at
        least half of the model's weights.
    """
    state = _state_dict(
        CheckpointLoader.load_checkpoint(filename, map_location='cpu'))
    missing, shapes = compare_weights(model, state)
    total = len(getattr(model, 'module', model).state_dict())
    if not shapes and len(missing) <= MAX_MISSING * total:
        return None
    parts = []
    if shapes:
        name, theirs, ours = shapes[0]
        parts.append(f'{len(shapes)} weight(s) have other shapes (e.g. '
                     f'{name}: {theirs} in the checkpoint, {ours} in the '
                     'model)')
    if len(missing) > MAX_MISSING * total:
        parts.append(f'{len(missing)} of the model\'s {total} weights are '
                     f'not in it (e.g. {missing[0]})')
    return ' and '.join(parts)


def check_checkpoint_fits(model: nn.Module, filename: str,
                          config: str) -> None:
    """Refuse to test a checkpoint of another model.

    Args:
        model (nn.Module): The built model.
        filename (str): The checkpoint.
        config (str): The config file, for the message.

    Raises:
        ValueError: If :func:`checkpoint_mismatch` finds a difference.
    """
    why = checkpoint_mismatch(model, filename)
    if why is not None:
        raise ValueError(
            f'test: checkpoint {filename} holds the weights of another model '
            f'than {config} builds: {why}. Fix: test it with the config it '
            'was trained with (mmengine checkpoints keep it under '
            "meta['cfg']), or give a checkpoint this config trained")
