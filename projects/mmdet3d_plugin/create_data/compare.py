"""Compare two sets of ``create_data`` products (ours and mmdet3d's
converter's): the info files and dbinfos equal after loading, every GT
database file byte-identical.

:func:`product_differences` walks the loaded pickles: every key and
length must match, every value be equal with the same type; a float or a
float array may differ within ``rtol`` (each such place is reported, by
its key path with the indices dropped, as a tolerated key); anything else
is a mismatch.
"""
import math
import pickle
from pathlib import Path
from typing import Dict, List, Tuple

import numpy as np

from .converter import info_paths


def _walk(a, b, path: str, rtol: float, tolerated: Dict[str, float],
          mismatches: List[str]) -> None:
    if len(mismatches) > 20:
        return
    if type(a) is not type(b):
        mismatches.append(f'{path}: type {type(a).__name__} != '
                          f'{type(b).__name__}')
    elif isinstance(a, dict):
        if list(a) != list(b) and set(a) != set(b):
            mismatches.append(f'{path}: keys {sorted(map(str, a))} != '
                              f'{sorted(map(str, b))}')
            return
        for key in a:
            _walk(a[key], b[key], f'{path}.{key}', rtol, tolerated,
                  mismatches)
    elif isinstance(a, (list, tuple)):
        if len(a) != len(b):
            mismatches.append(f'{path}: length {len(a)} != {len(b)}')
            return
        for x, y in zip(a, b):
            _walk(x, y, f'{path}[]', rtol, tolerated, mismatches)
    elif isinstance(a, np.ndarray):
        if a.dtype != b.dtype or a.shape != b.shape:
            mismatches.append(f'{path}: array {a.dtype}{a.shape} != '
                              f'{b.dtype}{b.shape}')
        elif a.tobytes() != b.tobytes():
            if a.dtype.kind != 'f' or not np.allclose(
                    a, b, rtol=rtol, atol=0, equal_nan=True):
                mismatches.append(f'{path}: arrays differ')
            else:
                _tolerate(path, a, b, tolerated)
    elif isinstance(a, (float, np.floating)):
        if a != b and not (math.isnan(a) and math.isnan(b)):
            if abs(a - b) <= rtol * abs(b):
                _tolerate(path, a, b, tolerated)
            else:
                mismatches.append(f'{path}: {a!r} != {b!r}')
    elif a != b:
        mismatches.append(f'{path}: {a!r} != {b!r}')


def _tolerate(path, a, b, tolerated):
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    scale = np.maximum(np.abs(b), np.finfo(np.float64).tiny)
    rel = float(np.nanmax(np.abs(a - b) / scale))
    tolerated[path] = max(tolerated.get(path, 0.0), rel)


def product_differences(ours: Path, reference: Path, version: str,
                        info_prefix: str = 'nuscenes',
                        gt_database: bool = True,
                        rtol: float = 1e-9) -> Tuple[Dict[str, float],
                                                     List[str]]:
    """Compare the products in two output folders.

    Returns:
        tuple[dict, list]: The tolerated keys (path: largest relative
        difference) and the mismatches (empty: the products are equal).
    """
    tolerated: Dict[str, float] = {}
    mismatches: List[str] = []
    for path in info_paths(ours, version, info_prefix, gt_database):
        other = Path(reference) / path.name
        if path.is_dir():
            names = sorted(p.name for p in path.iterdir())
            other_names = sorted(p.name for p in other.iterdir())
            if names != other_names:
                mismatches.append(
                    f'{path.name}: {len(names)} files != '
                    f'{len(other_names)}, e.g. '
                    f'{sorted(set(names) ^ set(other_names))[:3]}')
                continue
            for name in names:
                if (path / name).read_bytes() != (other / name).read_bytes():
                    mismatches.append(f'{path.name}/{name}: bytes differ')
            continue
        with open(path, 'rb') as f:
            a = pickle.load(f)
        with open(other, 'rb') as f:
            b = pickle.load(f)
        _walk(a, b, path.name, rtol, tolerated, mismatches)
    return tolerated, mismatches
