"""GT-database sampling on numpy >= 1.24 (mmdet3d #2821).

mmdet3d 1.4.0's ``DataBaseSampler.sample_all`` builds its labels with
``dtype=np.long``, an alias numpy removed in 1.24 (and brought back in 2.0 as
the C ``long``): every config with ``ObjectSample`` fails at the first sample
that draws from the ground-truth database. The fix (PR #2872, ``np.int64``)
was merged after 1.4.0 and is in no release.

:class:`DataBaseSampler` is registered under the upstream name in mmdet3d's
``TRANSFORMS``, so configs that name ``DataBaseSampler``, and ``ObjectSample``
building its default sampler, get it. Its ``sample_all`` is mmdet3d's own
function object run with a ``numpy`` that has ``long = int64``; numpy itself
and mmdet3d's module are left as they are. The fix is applied only while
mmdet3d's ``sample_all`` still reads ``np.long`` and numpy lacks it, so it
turns itself off once a release contains PR #2872.
"""
import functools
import types

import numpy as np
from mmdet3d.datasets.transforms import dbsampler as upstream
from mmdet3d.registry import TRANSFORMS

NAME = 'dbsampler_np_long'


class _NumpyWithLong(types.ModuleType):
    """numpy, plus the ``long`` alias as PR #2872 spells it (int64)."""

    long = np.int64

    def __getattr__(self, name: str):
        return getattr(np, name)


def _with_numpy_long(function: types.FunctionType) -> types.FunctionType:
    """``function`` with ``np`` bound to :class:`_NumpyWithLong`."""
    scope = dict(function.__globals__, np=_NumpyWithLong('numpy'))
    rebound = types.FunctionType(function.__code__, scope, function.__name__,
                                 function.__defaults__, function.__closure__)
    rebound.__kwdefaults__ = function.__kwdefaults__
    return functools.update_wrapper(rebound, function)


def needed() -> bool:
    """Whether mmdet3d's ``sample_all`` reads an ``np.long`` numpy lacks."""
    code = upstream.DataBaseSampler.sample_all.__code__
    return 'long' in code.co_names and 'long' not in vars(np)


class DataBaseSampler(upstream.DataBaseSampler):
    """mmdet3d's ``DataBaseSampler`` whose ``sample_all`` runs on numpy
    >= 1.24; everything else is inherited unchanged."""

    sample_all = _with_numpy_long(upstream.DataBaseSampler.sample_all)


def apply() -> bool:
    """Register :class:`DataBaseSampler` in mmdet3d's ``TRANSFORMS``.

    Returns:
        bool: True if the fix was needed and registered.
    """
    if not needed():
        return False
    TRANSFORMS.register_module(
        name='DataBaseSampler', module=DataBaseSampler, force=True)
    return True
