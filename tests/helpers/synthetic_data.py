"""Where the generated nuScenes-format dataset of the tests is cached, and
the digest of a dataset root's files."""
import hashlib
import sys
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as package_version
from pathlib import Path
from typing import Optional

REPO_ROOT = Path(__file__).resolve().parents[2]
PLUGIN_DIR = REPO_ROOT / 'projects' / 'mmdet3d_plugin'
#: The generator's sources and the converter's, which write the files.
SYNTHETIC_SOURCES = tuple(
    p.relative_to(REPO_ROOT).as_posix()
    for folder in ('synthetic', 'create_data')
    for p in sorted((PLUGIN_DIR / folder).glob('*.py')))
#: Distributions whose output the cached files hold: the generator's
#: numbers and pictures (numpy, pyquaternion, OpenCV's JPEG and PNG
#: encoders, under any of its wheel names), the devkit's splits, and
#: mmdet3d's converter with what it computes and pickles.
WRITTEN_BY = ('mmcv', 'mmdet3d', 'mmengine', 'numba', 'numpy',
              'nuscenes-devkit', 'opencv-contrib-python',
              'opencv-contrib-python-headless', 'opencv-python',
              'opencv-python-headless', 'pyquaternion', 'torch')
#: Points per LiDAR frame at nuScenes density (the HDL-32E average).
NUSCENES_POINTS_PER_FRAME = 34720


def _installed_version(dist: str) -> Optional[str]:
    try:
        return package_version(dist)
    except PackageNotFoundError:
        return None


def synthetic_cache_dir(seed: int = 0,
                        points_per_frame: Optional[int] = None,
                        samples_per_scene: Optional[int] = None) -> Path:
    """Cache folder of the generated dataset for ``seed`` (and
    ``points_per_frame``, None: the generator's default density;
    ``samples_per_scene``, None: the generator's default, 10), keyed on
    the generator's sources and the versions of what wrote the bytes
    (:data:`WRITTEN_BY` and the Python of the pickles)."""
    digest = hashlib.sha256()
    for rel in SYNTHETIC_SOURCES:
        digest.update(rel.encode())
        digest.update((REPO_ROOT / rel).read_bytes())
    for dist in WRITTEN_BY:
        digest.update(f'{dist}=={_installed_version(dist)}'.encode())
    digest.update(f'python=={sys.version_info[0]}.{sys.version_info[1]}'
                  .encode())
    digest.update(f'seed={seed}'.encode())
    if points_per_frame is not None:
        digest.update(f'points_per_frame={points_per_frame}'.encode())
    if samples_per_scene is not None:
        digest.update(f'samples_per_scene={samples_per_scene}'.encode())
    return REPO_ROOT / 'data' / '.cache' / \
        f'synthetic-{digest.hexdigest()[:16]}'


def prepare_dense_synthetic(seed: int = 0,
                            points_per_frame: int = NUSCENES_POINTS_PER_FRAME,
                            samples_per_scene: Optional[int] = None) -> Path:
    """The generated dataset at nuScenes density with its info files and
    GT database, made once and cached (about 700 MB with the default 10
    key frames per scene; tests take fewer)."""
    from projects.mmdet3d_plugin.synthetic.writer import (
        SyntheticNuScenesConfig, prepare_synthetic_nuscenes)
    extra = ({} if samples_per_scene is None else
             dict(samples_per_scene=samples_per_scene))
    return prepare_synthetic_nuscenes(
        synthetic_cache_dir(seed, points_per_frame, samples_per_scene),
        seed=seed, config=SyntheticNuScenesConfig(
            points_per_frame=points_per_frame, **extra))


def tree_digest(root: Path, skip=('.pkl', '_gt_database')) -> dict:
    """The sha256 of every file under ``root`` by relative path, leaving
    out the paths with a part that ends with one of ``skip`` (by default
    the converter's products: info files and the GT database)."""
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob('*')) if p.is_file() and not any(
            part.endswith(skip) for part in p.relative_to(root).parts)
    }
