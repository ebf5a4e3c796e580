"""Shared fixtures.

``nus_synthetic`` is the generated nuScenes-format dataset with mmdet3d's
info files, cached across pytest sessions in ``data/.cache/`` under a key
that changes with the generator's and converter's sources, the seed and the
mmdet3d / nuscenes-devkit versions.
"""
from pathlib import Path

import pytest

from tests.helpers.synthetic_data import synthetic_cache_dir


@pytest.fixture(scope='session')
def nus_synthetic() -> Path:
    """Root of the generated dataset (seed 0): ``v1.0-mini`` tables,
    ``samples/``, ``sweeps/``, ``maps/``, ``nuscenes_infos_{train,val}.pkl``
    and the ground-truth database, made by mmdet3d's converter."""
    from projects.mmdet3d_plugin.synthetic.writer import (
        prepare_synthetic_nuscenes)
    return prepare_synthetic_nuscenes(synthetic_cache_dir(seed=0), seed=0)


def pytest_collection_modifyitems(config, items):
    """Under pytest-xdist's ``--dist loadgroup``: the tests that share a
    module-scoped fixture (one launch, one dataset) run on one worker, so
    it is built once; every other test goes to whichever worker is free.
    """
    for item in items:
        info = getattr(item, '_fixtureinfo', None)
        defs = getattr(info, 'name2fixturedefs', {}) if info else {}
        if any(d.scope == 'module' for fdefs in defs.values()
               for d in fdefs):
            item.add_marker(pytest.mark.xdist_group(item.module.__name__))
