"""Samples that fail to load, replaced through exact resume's seeded
``__getitems__``, on the shipped pillar02 train pipeline (CBGS,
``ObjectSample``'s GT database, multi-sweep loading) with preset
``fast_pipeline`` and with mmdet3d's own transforms, over a copy of the
generated data with broken files: the failing file and the sample's token
are named from the real readers' errors, the replacement depends only on
the sample's key, and without a replacer the error names the file."""
import json
import pickle
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
from mmengine.registry import init_default_scope

from mmdet3d.registry import DATASETS
from projects.mmdet3d_plugin import load_config
from projects.mmdet3d_plugin.config.data_root import redirect_data_root
from projects.mmdet3d_plugin.engine.bad_samples.records import RecordReader
from projects.mmdet3d_plugin.engine.bad_samples.replace import (
    SampleReplacer, replacement)
from projects.mmdet3d_plugin.engine.resume.sample_key import SampleKey
from projects.mmdet3d_plugin.failures.exceptions import BadSampleError
from projects.mmdet3d_plugin.engine.resume.seeded_items import seed_samples

REPO = Path(__file__).resolve().parents[3]
PILLAR02 = (REPO / 'configs' / 'centerpoint' /
            'centerpoint_pillar02_second_secfpn_8xb4-cyclic-20e_nus-3d.py')
#: Frames broken in the copy: a key frame truncated mid-point, a sweep
#: deleted, a key frame with NaN values.
TRUNCATED, SWEEP_GONE, NAN = 2, 4, 6


@pytest.fixture(scope='module')
def root(nus_synthetic, tmp_path_factory):
    """A copy of the generated root with the frames above broken; the
    broken files and tokens."""
    root = tmp_path_factory.mktemp('bad_samples') / 'root'
    shutil.copytree(nus_synthetic, root)
    infos = pickle.loads((root / 'nuscenes_infos_train.pkl').read_bytes())
    info = {i['sample_idx']: i for i in infos['data_list']}
    lidar = root / 'samples' / 'LIDAR_TOP'
    truncated = lidar / info[TRUNCATED]['lidar_points']['lidar_path']
    truncated.write_bytes(truncated.read_bytes()[:20 * 100 + 8])
    sweep = root / 'sweeps' / 'LIDAR_TOP' / Path(
        info[SWEEP_GONE]['lidar_sweeps'][0]['lidar_points']
        ['lidar_path']).name
    sweep.unlink()
    nan = lidar / info[NAN]['lidar_points']['lidar_path']
    points = np.fromfile(nan, dtype=np.float32)
    points[5 * 1 + 3] = np.nan  # an intensity (a NaN x, y or z is filtered)
    points.tofile(nan)
    return root, {TRUNCATED: (truncated, info[TRUNCATED]['token']),
                  SWEEP_GONE: (sweep, info[SWEEP_GONE]['token']),
                  NAN: (nan, info[NAN]['token'])}


def _dataset(root: Path, fast: bool):
    """pillar02's train set (CBGS around the nuScenes set), every sweep
    loaded (``sweeps_num`` 10 of the 10 there are), with preset
    ``fast_pipeline`` or mmdet3d's own transforms."""
    config = PILLAR02
    if not fast:
        config = root.parent / 'stock.py'
        config.write_text(f'_base_ = [{str(PILLAR02)!r}]\npresets = []\n')
    cfg = redirect_data_root(load_config(str(config)), str(root))
    for transform in cfg.train_dataloader.dataset.dataset.pipeline:
        if 'sweeps_num' in transform:
            transform['sweeps_num'] = 10
    init_default_scope('mmdet3d')
    # CBGSDataset draws its indices with numpy's global RNG: seeded, the
    # replacements drawn do not depend on the tests run before.
    np.random.seed(0)
    return DATASETS.build(cfg.train_dataloader.dataset)


def _inner_index(dataset, sample_idx: int) -> int:
    """An index of the CBGS set that reads frame ``sample_idx``."""
    return next(i for i, j in enumerate(dataset.sample_indices)
                if j == sample_idx)


@pytest.mark.parametrize('fast', [True, False], ids=['fast', 'stock'])
def test_broken_samples_are_named_and_replaced(root, tmp_path, fast):
    root, broken = root
    dataset = _dataset(root, fast)
    items = seed_samples(dataset)
    items.replacer = SampleReplacer(str(tmp_path / 'records'), rank=0)
    keys = [SampleKey(_inner_index(dataset, frame), 7, 0, position)
            for position, frame in enumerate(broken)]
    samples = items(keys)
    assert len(samples) == 3
    reader = RecordReader(str(tmp_path / 'records'))
    new = reader.read(iteration=1)
    assert all(e['ranks'] == [0] for e in new)
    named = {e["file"]: (e["token"], e["error"]) for e in new}
    for frame, (path, token) in broken.items():
        assert named[str(path)][0] == token, (frame, named)
    errors = [named[str(broken[f][0])][1] for f in broken]
    assert errors[0] == ('ValueError: cannot reshape array of size 502 into '
                         'shape (5)')
    assert errors[1].startswith('FileNotFoundError')
    assert errors[2] == '1 non-finite point values'
    for sample in samples:
        assert np.isfinite(sample['inputs']['points'].numpy()).all()


def test_a_replacement_depends_on_the_key_only(root, tmp_path):
    root, broken = root
    dataset = _dataset(root, fast=True)
    key = SampleKey(_inner_index(dataset, TRUNCATED), 7, 3, 41)
    loaded = []
    for run in ('first', 'second'):
        items = seed_samples(dataset)
        items.replacer = SampleReplacer(str(tmp_path / run), rank=0)
        # What the process loaded before does not matter.
        items([SampleKey(_inner_index(dataset, 9), 7, 3, 40)] *
              (run == 'second'))
        loaded.append(items([key])[0]['inputs']['points'].numpy())
        lines = (tmp_path / run).glob('*.jsonl')
        record = json.loads(next(lines).read_text().splitlines()[-1])
        assert record['replaced_by'] == replacement(key, 0, len(dataset))[0]
        assert (record['epoch'], record['position']) == (3, 41)
    assert np.array_equal(*loaded)


def test_without_a_replacer_the_error_names_file_and_sample(root):
    root, broken = root
    dataset = _dataset(root, fast=True)
    path, token = broken[TRUNCATED]
    with pytest.raises(BadSampleError, match=re.escape(
            f'{path} (token {token}, sample_idx {TRUNCATED}): ValueError: '
            'cannot reshape')):
        seed_samples(dataset)([SampleKey(_inner_index(dataset, TRUNCATED),
                                         7, 0, 0)])


def test_points_check_off_keeps_a_nan_frame(root, tmp_path):
    root, broken = root
    dataset = _dataset(root, fast=True)
    items = seed_samples(dataset)
    items.replacer = SampleReplacer(str(tmp_path), rank=0,
                                    check_points=False)
    sample = items([SampleKey(_inner_index(dataset, NAN), 7, 0, 0)])[0]
    assert not np.isfinite(sample['inputs']['points'].numpy()).all()
    assert not any(tmp_path.iterdir())
