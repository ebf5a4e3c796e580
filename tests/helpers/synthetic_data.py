"""Where the generated nuScenes-format dataset of the tests is cached."""
import hashlib
from importlib.metadata import version as package_version
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
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
