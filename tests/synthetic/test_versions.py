"""The generator's real nuScenes versions: ``v1.0-trainval`` (official
scene names of the devkit's ``train`` / ``val``) and ``v1.0-test`` (the 150
test scenes, no annotations), converted by ``tools/create_data.py``,
checked with nuscenes-devkit's own splits.

The scene names of each version and their splits come from the tables
(``version_scene_names``: 10, 850 and 150 names, the devkit's splits);
the converter needs only a few samples, so the trainval dataset holds 5 of
its scenes (``generate_synthetic_nuscenes(scenes=...)``: 3 of ``train``, 2
of ``val``), one key frame each. ``v1.0-test`` is written whole, by
``tools/create_synthetic_nuscenes.py`` with its defaults (every name of
the version). The tools run in processes forked from the test process
(``fork_tool``: their subject here is the data they write, not their
start). Both datasets and their infos are built once per version of the
generator, converter and tools, and kept in ``data/.cache/`` as
``nus_synthetic`` is.
"""
import fcntl
import hashlib
import json
import pickle
from dataclasses import asdict
from pathlib import Path

import numpy as np
import pytest
from nuscenes import NuScenes
from nuscenes.eval.common.loaders import load_gt
from nuscenes.eval.detection.data_classes import DetectionBox
from nuscenes.utils import splits

from tests.helpers.synthetic_data import synthetic_cache_dir
from tests.helpers.train_tool import fork_tool
from projects.mmdet3d_plugin.synthetic.tables import (SUPPORTED_VERSIONS,
                                                      version_scene_names)
from projects.mmdet3d_plugin.synthetic.writer import (MARKER,
                                                      SyntheticNuScenesConfig,
                                                      generate_synthetic_nuscenes)

REPO = Path(__file__).resolve().parents[2]
TOOLS = ('tools/create_data.py', 'tools/create_synthetic_nuscenes.py')
KEYFRAMES = 1
# One key frame per scene, few points and objects.
TRAINVAL_CONFIG = SyntheticNuScenesConfig(
    samples_per_scene=KEYFRAMES,
    sweeps_per_sample=1,
    ground_points_per_ring=8,
    clutter_points=40,
    image_size=(32, 18),
    min_objects=10,
    max_objects=10)
# The trainval scenes written, by the devkit split that selects them
# (in the version's order, train and val scenes mixed).
TRAINVAL_SCENES = {'train': ('scene-0001', 'scene-0002', 'scene-0004'),
                   'val': ('scene-0003', 'scene-0012')}
TEST_SCENES = 150
# The devkit splits of each version's scenes.
VERSION_SPLITS = {'v1.0-mini': ('mini_train', 'mini_val'),
                  'v1.0-trainval': ('train', 'val'),
                  'v1.0-test': ('test', )}


def _cache_root(version: str) -> Path:
    """Cache folder of one built version, keyed on everything it used."""
    digest = hashlib.sha256(synthetic_cache_dir(seed=0).name.encode())
    digest.update(json.dumps(asdict(TRAINVAL_CONFIG)).encode())
    digest.update(json.dumps(TRAINVAL_SCENES).encode())
    digest.update(f'{version} keyframes={KEYFRAMES}'.encode())
    for tool in TOOLS:
        digest.update((REPO / tool).read_bytes())
    return REPO / 'data' / '.cache' / \
        f'synthetic-{version}-{digest.hexdigest()[:16]}'


def _tool(tool: str, *args) -> None:
    """``tools/<tool>.py ARGS`` in a forked process; it must succeed."""
    run = fork_tool(tool, *args)  # data: what the tool writes
    out, _ = run.communicate(timeout=900)
    assert run.returncode == 0, out[-3000:]


def _built(version: str) -> Path:
    """The dataset of ``version`` and its infos, built once (locked)."""
    root = _cache_root(version)
    root.parent.mkdir(parents=True, exist_ok=True)
    with open(root.parent / f'.{root.name}.lock', 'a') as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (root / version).is_dir():
            if version == 'v1.0-test':  # through the tool, default sizes
                _tool('create_synthetic_nuscenes', '--out-dir', root,
                      '--version', version, '--keyframes-per-scene',
                      KEYFRAMES)
            else:
                generate_synthetic_nuscenes(
                    root, 0, version, TRAINVAL_CONFIG,
                    scenes=[n for names in TRAINVAL_SCENES.values()
                            for n in names])
        split = 'test' if version == 'v1.0-test' else 'val'
        if not (root / f'nuscenes_infos_{split}.pkl').is_file():
            _tool('create_data', 'nuscenes', '--root-path', root,
                  '--out-dir', root, '--version', version,
                  '--no-gt-database')
    return root


@pytest.fixture(scope='module')
def trainval():
    root = _built('v1.0-trainval')
    return root, NuScenes('v1.0-trainval', dataroot=str(root), verbose=False)


@pytest.fixture(scope='module')
def nus_test():
    root = _built('v1.0-test')
    return root, NuScenes('v1.0-test', dataroot=str(root), verbose=False)


def _infos(root: Path, split: str) -> list:
    return pickle.loads(
        (root / f'nuscenes_infos_{split}.pkl').read_bytes())['data_list']


def _scene_names(nusc: NuScenes, tokens) -> set:
    return {
        nusc.get('scene', nusc.get('sample', t)['scene_token'])['name']
        for t in tokens
    }


def test_trainval_holds_the_official_scene_names(trainval):
    root, nusc = trainval
    names = [scene['name'] for scene in nusc.scene]
    assert sorted(names) == sorted(TRAINVAL_SCENES['train'] +
                                   TRAINVAL_SCENES['val'])
    assert set(names) <= set(version_scene_names('v1.0-trainval'))
    assert len(nusc.sample) == len(names) * KEYFRAMES
    assert all(s['nbr_samples'] == KEYFRAMES for s in nusc.scene)
    marker = json.loads((root / MARKER).read_text())
    assert (marker['version'], marker['scenes']) == ('v1.0-trainval',
                                                     sorted(names))


@pytest.mark.parametrize('split', ['train', 'val'])
def test_devkit_split_selects_the_infos_of_its_scenes(trainval, split):
    root, nusc = trainval
    infos = _infos(root, split)
    tokens = [info['token'] for info in infos]
    assert len(tokens) == len(set(tokens)) == len(
        TRAINVAL_SCENES[split]) * KEYFRAMES
    # The devkit's evaluation split (what DetectionEval scores) is exactly
    # the samples of the info file.
    gt = load_gt(nusc, split, DetectionBox, verbose=False)
    assert set(gt.sample_tokens) == set(tokens)
    present = {scene['name'] for scene in nusc.scene}
    assert _scene_names(nusc, tokens) == set(TRAINVAL_SCENES[split]) == (
        set(splits.get_scenes_of_split(split, nusc)) & present)
    instances = [inst for info in infos for inst in info['instances']]
    assert len(instances) == sum(len(gt[t]) for t in tokens)
    assert {inst['bbox_label_3d'] for inst in instances} == set(range(10))
    # One key frame: no instance has a velocity (nan, as in the devkit).
    assert np.isnan([inst['velocity'] for inst in instances]).all()


def test_test_version_has_the_test_scenes_without_annotations(nus_test):
    root, nusc = nus_test
    assert {scene['name'] for scene in nusc.scene} == set(splits.test)
    assert nusc.sample_annotation == [] and nusc.instance == []
    infos = _infos(root, 'test')
    assert len(infos) == TEST_SCENES * KEYFRAMES
    assert {info['token'] for info in infos} == {s['token']
                                                 for s in nusc.sample}
    assert all(info['instances'] == [] for info in infos)
    assert all(len(info['images']) == 6 for info in infos)
    assert sorted(p.name for p in root.glob('*.pkl')) == [
        'nuscenes_infos_test.pkl'
    ]  # and, as in mmdet3d, no ground-truth database
    # The devkit refuses to score a test split that has no annotations.
    with pytest.raises(AssertionError, match='do not have the annotations'):
        load_gt(nusc, 'test', DetectionBox)


@pytest.mark.parametrize('version, count', [('v1.0-mini', 10),
                                            ('v1.0-trainval', 850),
                                            ('v1.0-test', 150)])
def test_version_scene_names_are_the_devkit_splits(version, count):
    names = version_scene_names(version)
    assert len(names) == len(set(names)) == count
    assert list(names) == sorted(names)
    assert set(names) == {name for split in VERSION_SPLITS[version]
                          for name in getattr(splits, split)}
    if version == 'v1.0-trainval':
        assert set(splits.mini_train) | set(splits.mini_val) <= set(names)


def test_scenes_must_be_official_names_of_the_version(tmp_path):
    # scene-0001 is a train scene; scene-0077 a test scene.
    for scenes in (['scene-0077', 'scene-0001'], ['scene-0077'] * 2, []):
        with pytest.raises(ValueError, match='scenes must be distinct '
                           r'official scene names of v1\.0-test'):
            generate_synthetic_nuscenes(tmp_path, version='v1.0-test',
                                        scenes=scenes)
    assert not tmp_path.joinpath('v1.0-test').exists()


def test_versions_need_roots_of_their_own(tmp_path):
    (tmp_path / MARKER).write_text(json.dumps(dict(version='v1.0-mini')))
    with pytest.raises(FileExistsError,
                       match=r'holds the generated v1\.0-mini; write '
                       r'v1\.0-test into another out_dir'):
        generate_synthetic_nuscenes(tmp_path, version='v1.0-test')
    assert SUPPORTED_VERSIONS == ('v1.0-mini', 'v1.0-trainval', 'v1.0-test')
