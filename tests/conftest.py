"""Shared fixtures.

``nus_synthetic`` is the generated nuScenes-format dataset with mmdet3d's
info files, cached across pytest sessions in ``data/.cache/`` under a key
that changes with the generator's and converter's sources, the seed and the
mmdet3d / nuscenes-devkit versions.
"""
import hashlib
from importlib.metadata import version as package_version
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
SYNTHETIC_DIR = REPO_ROOT / 'projects' / 'mmdet3d_plugin' / 'synthetic'
SYNTHETIC_SOURCES = tuple(
    p.relative_to(REPO_ROOT).as_posix()
    for p in sorted(SYNTHETIC_DIR.glob('*.py')))


def synthetic_cache_dir(seed: int = 0) -> Path:
    """Cache folder of the generated dataset for ``seed``."""
    digest = hashlib.sha256()
    for rel in SYNTHETIC_SOURCES:
        digest.update(rel.encode())
        digest.update((REPO_ROOT / rel).read_bytes())
    for dist in ('mmdet3d', 'nuscenes-devkit'):
        digest.update(f'{dist}=={package_version(dist)}'.encode())
    digest.update(f'seed={seed}'.encode())
    return REPO_ROOT / 'data' / '.cache' / \
        f'synthetic-{digest.hexdigest()[:16]}'


@pytest.fixture(scope='session')
def nus_synthetic() -> Path:
    """Root of the generated dataset (seed 0): ``v1.0-mini`` tables,
    ``samples/``, ``sweeps/``, ``maps/``, ``nuscenes_infos_{train,val}.pkl``
    and the ground-truth database, made by mmdet3d's converter."""
    from projects.mmdet3d_plugin.synthetic.writer import (
        prepare_synthetic_nuscenes)
    return prepare_synthetic_nuscenes(synthetic_cache_dir(seed=0), seed=0)
