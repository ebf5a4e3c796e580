"""``points_per_frame``: the generated LiDAR frames at nuScenes density,
the rest of the dataset left byte for byte as the default writes it, and
the same seed giving the same bytes.

Bytes are compared between datasets generated in this process only: the
numbers come from numpy and the pictures from OpenCV's encoders, whose
output may differ in another environment (the cache key of the tests'
dataset, ``tests/helpers/synthetic_data.py``, names their versions)."""
import hashlib
import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from projects.mmdet3d_plugin.synthetic.writer import (
    SyntheticNuScenesConfig, generate_synthetic_nuscenes)

# The small dataset of test_writer.py: well under a second.
SMALL = SyntheticNuScenesConfig(
    samples_per_scene=3,
    sweeps_per_sample=1,
    ground_points_per_ring=8,
    clutter_points=40,
    image_size=(32, 18))
# What points_per_frame may change: the LiDAR frames, their boxes' point
# counts and the marker that records the option.
DENSITY_FILES = ('samples/LIDAR_TOP/', 'sweeps/LIDAR_TOP/',
                 'v1.0-mini/sample_annotation.json',
                 '.synthetic_nuscenes.json')


def _digests(root: Path) -> dict:
    """The sha256 of every file under ``root``, by relative path."""
    return {
        path.relative_to(root).as_posix():
        hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(root.rglob('*')) if path.is_file()
    }


def _frame_sizes(root: Path, folder: str) -> np.ndarray:
    return np.array([
        path.stat().st_size // (5 * 4)
        for path in sorted((root / folder / 'LIDAR_TOP').glob('*.pcd.bin'))
    ])


def _annotations(root: Path) -> list:
    return json.loads((root / 'v1.0-mini' / 'sample_annotation.json')
                      .read_text())


@pytest.fixture(scope='module')
def default_and_dense(tmp_path_factory):
    root = tmp_path_factory.mktemp('density')
    generate_synthetic_nuscenes(root / 'default', seed=0, config=SMALL)
    generate_synthetic_nuscenes(
        root / 'dense', seed=0, config=replace(SMALL, points_per_frame=4000))
    return root / 'default', root / 'dense'


def test_same_seed_gives_the_same_bytes(default_and_dense, tmp_path):
    generate_synthetic_nuscenes(tmp_path / 'again', seed=0, config=SMALL)
    assert _digests(tmp_path / 'again') == _digests(default_and_dense[0])


def test_points_per_frame_changes_nothing_else(default_and_dense):
    # The drives, tokens, tables and pictures are the default's: the dense
    # frames draw from a generator of their own.
    default, dense = map(_digests, default_and_dense)
    assert default.keys() == dense.keys()
    changed = {name for name in default if default[name] != dense[name]}
    assert changed and all(name.startswith(DENSITY_FILES)
                           for name in changed), sorted(changed)
    assert any(name.endswith('.jpg') for name in default)


def test_every_frame_holds_points_per_frame(default_and_dense):
    default, dense = default_and_dense
    for folder in ('samples', 'sweeps'):
        sizes = _frame_sizes(dense, folder)
        assert len(sizes) == len(_frame_sizes(default, folder)) > 0
        assert set(sizes) == {4000}, folder
    marker = json.loads((dense / '.synthetic_nuscenes.json').read_text())
    assert marker['config']['points_per_frame'] == 4000
    assert 'points_per_frame' not in json.loads(
        (default / '.synthetic_nuscenes.json').read_text())['config']


def test_boxes_are_as_dense_as_their_frame(default_and_dense):
    default, dense = default_and_dense
    before, after = _annotations(default), _annotations(dense)
    # Same drives, objects and tokens; only the points differ.
    strip = [{k: v for k, v in a.items() if k != 'num_lidar_pts'}
             for a in before]
    assert strip == [{k: v for k, v in a.items() if k != 'num_lidar_pts'}
                     for a in after]
    frame_ratio = 4000 / _frame_sizes(default, 'samples').mean()
    box_ratio = np.median([
        b['num_lidar_pts'] / a['num_lidar_pts']
        for a, b in zip(before, after)
    ])
    assert frame_ratio == pytest.approx(box_ratio, rel=0.15)
    assert min(a['num_lidar_pts'] for a in after) >= 12


@pytest.mark.parametrize('value', [999, 2.5e4, True])
def test_points_per_frame_rejects_bad_values(value):
    with pytest.raises(ValueError, match='points_per_frame must be None or'):
        SyntheticNuScenesConfig(points_per_frame=value)
