"""Stock against Fast* transforms: the same input, the same random state,
then every output and the random state after compared exactly."""
import copy
import random
from typing import Any, Callable, Optional, Tuple

import numpy as np
import torch

from projects.mmdet3d_plugin.config.presets import (load_preset,
                                                    replace_transform_types)

#: Stock type -> Fast type, as preset 'fast_pipeline' replaces them.
FAST_TYPES = load_preset('fast_pipeline')['transform_types']


def fast_config(cfg: Any) -> Any:
    """A deep copy of ``cfg`` (a transform or pipeline config) with the
    Fast* types."""
    cfg = copy.deepcopy(cfg)
    replace_transform_types(cfg, FAST_TYPES)
    return cfg


RngState = Tuple[tuple, tuple, torch.Tensor]


def rng_state() -> RngState:
    """numpy's, Python's and torch's global random states."""
    return np.random.get_state(), random.getstate(), torch.get_rng_state()


def set_rng_state(state: RngState) -> None:
    np.random.set_state(state[0])
    random.setstate(state[1])
    torch.set_rng_state(state[2])


def seed_all(seed: int) -> None:
    np.random.seed(seed)
    random.seed(seed)
    torch.manual_seed(seed)


def rng_difference(a: RngState, b: RngState) -> Optional[str]:
    """None if the two states are equal, else which generator differs."""
    numpy_equal = all(
        np.array_equal(x, y) if isinstance(x, np.ndarray) else x == y
        for x, y in zip(a[0], b[0]))
    for name, equal in (('numpy', numpy_equal), ('random', a[1] == b[1]),
                        ('torch', torch.equal(a[2], b[2]))):
        if not equal:
            return f'{name} random state differs'
    return None


def difference(a: Any, b: Any, path: str = 'results') -> Optional[str]:
    """None if ``a`` and ``b`` are equal bit for bit (arrays and tensors:
    dtype, shape and values, NaN where NaN; objects: type and attributes),
    else where they first differ."""
    if type(a) is not type(b):
        return f'{path}: {type(a).__name__} vs {type(b).__name__}'
    if isinstance(a, dict):
        if set(a) != set(b):
            return f'{path}: keys differ: {sorted(set(a) ^ set(b))}'
        for key in a:
            found = difference(a[key], b[key], f'{path}[{key!r}]')
            if found:
                return found
        return None
    if isinstance(a, (list, tuple)):
        if len(a) != len(b):
            return f'{path}: length {len(a)} vs {len(b)}'
        for i, (x, y) in enumerate(zip(a, b)):
            found = difference(x, y, f'{path}[{i}]')
            if found:
                return found
        return None
    if isinstance(a, torch.Tensor):
        if a.dtype != b.dtype or a.shape != b.shape or not torch.equal(
                torch.nan_to_num(a), torch.nan_to_num(b)) or not torch.equal(
                    a.isnan(), b.isnan()):
            return (f'{path}: tensors differ ({a.dtype} {tuple(a.shape)} vs '
                    f'{b.dtype} {tuple(b.shape)})')
        return None
    if isinstance(a, np.ndarray):
        if a.dtype != b.dtype or a.shape != b.shape or not np.array_equal(
                a, b, equal_nan=a.dtype.kind in 'fc'):
            return (f'{path}: arrays differ ({a.dtype} {a.shape} vs '
                    f'{b.dtype} {b.shape})')
        return None
    if isinstance(a, float) and np.isnan(a) and np.isnan(b):
        return None
    if hasattr(a, '__dict__') and not isinstance(a, type):
        return difference(vars(a), vars(b), f'{path}.')
    if isinstance(a, np.generic) or isinstance(a, (bool, int, float, str,
                                                   bytes, type(None))):
        return None if a == b else f'{path}: {a!r} vs {b!r}'
    return None if a == b else f'{path}: {a!r} vs {b!r}'


def compare_transform(stock: Callable, fast: Callable, results: dict,
                      state: RngState) -> Tuple[Any, Optional[str]]:
    """Run ``stock`` and ``fast`` on deep copies of ``results``, each from
    random state ``state``; return stock's output (the random state left as
    stock left it) and None, or the first difference."""
    set_rng_state(state)
    out_fast = fast(copy.deepcopy(results))
    state_fast = rng_state()
    set_rng_state(state)
    out_stock = stock(copy.deepcopy(results))
    state_stock = rng_state()
    found = difference(out_stock, out_fast) or rng_difference(
        state_stock, state_fast)
    return out_stock, found
