"""Weights-only ``torch.load`` of mmengine's own checkpoints (torch >= 2.6).

mmengine issue #1655, fixed on mmengine's main branch, unreleased as of
0.10.7. ``torch.load`` defaults to ``weights_only=True`` and rejects what
mmengine puts in its own checkpoints: ``HistoryBuffer`` objects of the message
hub, numpy arrays and scalars, and ``getattr(HistoryBuffer, 'min')`` for their
statistics. We allow exactly those globals, and replace the pickled
``getattr`` by one that resolves only ``HistoryBuffer`` statistics methods, so
arbitrary files still cannot run code. Remove once mmengine > 0.10.7 is
required.
"""
import pickle
from typing import Optional

import numpy as np
import torch
from mmengine.logging import HistoryBuffer

from .torch_api import torch_at_least

_HISTORY_BUFFER_METHODS = ('min', 'max', 'current', 'mean')


def _history_buffer_getattr(obj, name: str):
    """Stand-in for ``getattr`` inside weights-only checkpoint loading."""
    if obj is HistoryBuffer and (name in _HISTORY_BUFFER_METHODS or
                                 name in HistoryBuffer._statistics_methods):
        return getattr(obj, name)
    raise pickle.UnpicklingError(
        f'checkpoint loading: refusing getattr({obj!r}, {name!r}); only '
        'HistoryBuffer statistics methods may be resolved while loading with '
        'weights_only=True. Load the file with torch.load(..., '
        'weights_only=False) only if you trust it.')


def weights_only_note() -> Optional[str]:
    """One line for a run that loads a checkpoint on a torch without
    weights-only loading by default (torch < 2.6), or None on a newer one.
    """
    if torch_at_least('2.6'):
        return None
    return (f'torch {torch.__version__} loads checkpoints with pickle '
            '(weights-only loading, which runs no code from the file, is '
            "torch's default from 2.6): load only checkpoints you trust")


def allow_mmengine_checkpoints() -> None:
    """Let weights-only ``torch.load`` read mmengine's own checkpoints."""
    if not hasattr(torch.serialization, 'add_safe_globals'):
        return  # torch < 2.4 loads everything; nothing to allow.
    try:
        from numpy._core import multiarray  # numpy >= 2
    except ImportError:
        from numpy.core import multiarray
    safe = [
        HistoryBuffer,
        np.ndarray,
        np.dtype,
        (multiarray._reconstruct,
         'numpy.core.multiarray._reconstruct'),
        (multiarray.scalar, 'numpy.core.multiarray.scalar'),
        (_history_buffer_getattr, '__builtin__.getattr'),
        (_history_buffer_getattr, 'builtins.getattr'),
    ]
    # numpy >= 1.25 pickles dtypes by their concrete class.
    safe += [cls for cls in vars(getattr(np, 'dtypes', object)).values()
             if isinstance(cls, type) and issubclass(cls, np.dtype)]
    torch.serialization.add_safe_globals(safe)
