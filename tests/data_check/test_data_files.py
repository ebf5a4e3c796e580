"""The files a config's pipelines open, listed from the shipped configs and
the generated nuScenes root (mmdet3d's infos and GT database), against what
the info files say; that listing and checking load none of the heavy stack
is a fresh interpreter's (marker ``launch``)."""
import copy
import os
import pickle
import subprocess
import sys
from pathlib import Path

import pytest

from projects.mmdet3d_plugin.config.loading import read_config
from projects.mmdet3d_plugin.data_check.data_files import data_files

REPO = Path(__file__).resolve().parents[2]
PILLAR02 = str(REPO / 'configs' / 'centerpoint' /
               'centerpoint_pillar02_second_secfpn_8xb4-cyclic-20e_nus-3d.py')
SYNTHETIC = str(REPO / 'configs' / 'centerpoint' /
                'centerpoint_pillar_synthetic.py')
HEAVY = ('torch', 'mmcv', 'mmdet3d', 'cv2')
CAMERAS = ('CAM_FRONT', 'CAM_FRONT_RIGHT', 'CAM_FRONT_LEFT', 'CAM_BACK',
           'CAM_BACK_LEFT', 'CAM_BACK_RIGHT')


def _infos(root: Path, split: str) -> list:
    with open(root / f'nuscenes_infos_{split}.pkl', 'rb') as f:
        return pickle.load(f)['data_list']


def _in_sweeps(root: Path, sweeps) -> set:
    """The sweeps/ files of ``sweeps`` (the previous key frame, under
    samples/, is a key-frame file)."""
    return {str(root / 'sweeps' / 'LIDAR_TOP' /
                s['lidar_points']['lidar_path'].split(os.sep)[-1])
            for s in sweeps
            if 'samples' not in s['lidar_points']['lidar_path']}


@pytest.fixture(scope='module')
def configs():
    return {path: read_config(path)[0] for path in (PILLAR02, SYNTHETIC)}


def test_pillar02_lists_key_frames_every_sweep_and_the_gt_database(
        configs, nus_synthetic):
    files = data_files(configs[PILLAR02], data_root=str(nus_synthetic))
    train, val = _infos(nus_synthetic, 'train'), _infos(nus_synthetic, 'val')
    by_kind = {}
    for f in files:
        by_kind.setdefault(f.kind, []).append(f)
    assert list(by_kind) == ['lidar', 'sweep', 'gt_database']
    # Every key frame of train (under CBGSDataset) and val (val and test
    # share it: listed once), in info order, with its own token first.
    assert [f.path for f in by_kind['lidar']] == [
        str(nus_synthetic / 'samples' / 'LIDAR_TOP' /
            i['lidar_points']['lidar_path']) for i in train + val]
    assert [f.token for f in by_kind['lidar']] == \
        [i['token'] for i in train + val]
    assert {f.load_dim for f in files} == {5}
    # sweeps_num=9 of 10, drawn at random: any of the 10 may be opened.
    expected = set()
    for info in train + val:
        expected |= _in_sweeps(nus_synthetic, info['lidar_sweeps'])
    assert {f.path for f in by_kind['sweep']} == expected
    assert len(by_kind['sweep']) == len(expected)
    for f in by_kind['sweep'][:50]:
        assert Path(f.path).is_file() and f.tokens
    token_of = {i['sample_idx']: i['token'] for i in train}
    for f in by_kind['gt_database']:
        assert f.tokens == (token_of[f.image_idx], )
        assert f'_{f.class_name}_' in Path(f.path).name
        assert Path(f.path).name.startswith(f'{f.image_idx}_')


@pytest.mark.parametrize('least_car_points', [5, 100])
def test_gt_database_objects_are_those_the_filters_keep(
        configs, nus_synthetic, least_car_points):
    """ObjectSample's database: the objects of its sampled classes that its
    filters keep (difficulty -1 out, at least N points)."""
    cfg = copy.deepcopy(configs[PILLAR02])
    sampler = cfg.train_dataloader.dataset.dataset.pipeline[3].db_sampler
    sampler.prepare.filter_by_min_points.car = least_car_points
    sampler.sample_groups.pop('barrier')
    files = [f for f in data_files(cfg, data_root=str(nus_synthetic))
             if f.kind == 'gt_database']
    with open(nus_synthetic / 'nuscenes_dbinfos_train.pkl', 'rb') as f:
        db_infos = pickle.load(f)
    kept = [
        info for name, infos in db_infos.items() if name != 'barrier'
        for info in infos if info['difficulty'] != -1 and
        info['num_points_in_gt'] >= (least_car_points if name == 'car' else 5)
    ]
    assert sorted(f.path for f in files) == sorted(
        str(nus_synthetic / info['path']) for info in kept)
    assert {f.class_name for f in files} == set(db_infos) - {'barrier'}
    if least_car_points > 5:
        assert 0 < sum(f.class_name == 'car' for f in files) < len(
            db_infos['car'])


def test_previous_key_frame_is_one_lidar_file_with_both_samples(
        configs, nus_synthetic):
    files = data_files(configs[PILLAR02], data_root=str(nus_synthetic))
    by_path = {f.path: f for f in files}
    assert len(by_path) == len(files)
    train = _infos(nus_synthetic, 'train')
    shared = 0
    for info in train:
        for sweep in info['lidar_sweeps']:
            raw = sweep['lidar_points']['lidar_path']
            if 'samples' in raw:
                path = str(nus_synthetic / 'samples' / 'LIDAR_TOP' /
                           raw.split(os.sep)[-1])
                entry = by_path[path]
                assert entry.kind == 'lidar'
                assert entry.tokens[0] != info['token']
                assert info['token'] in entry.tokens[1:]
                shared += 1
    assert shared > 0


def test_test_mode_sweeps_are_the_first_sweeps_num(configs, nus_synthetic):
    """centerpoint_pillar_synthetic.py: 3 sweeps, drawn at random in
    training (any of the 10), the first 3 in its test pipeline."""
    files = data_files(configs[SYNTHETIC], data_root=str(nus_synthetic))
    train, val = _infos(nus_synthetic, 'train'), _infos(nus_synthetic, 'val')
    expected = set()
    for info in train:
        expected |= _in_sweeps(nus_synthetic, info['lidar_sweeps'])
    for info in val:
        expected |= _in_sweeps(nus_synthetic, info['lidar_sweeps'][:3])
    assert {f.path for f in files if f.kind == 'sweep'} == expected
    assert not [f for f in files if f.kind == 'gt_database']


def test_camera_pipeline_lists_every_camera(configs, nus_synthetic):
    cfg = copy.deepcopy(configs[SYNTHETIC])
    dataset = cfg.val_dataloader.dataset
    dataset.modality = dict(use_lidar=True, use_camera=True)
    dataset.data_prefix = dict(dataset.data_prefix,
                               **{cam: f'samples/{cam}' for cam in CAMERAS})
    dataset.pipeline.insert(0, dict(type='LoadMultiViewImageFromFiles',
                                    num_views=6))
    images = [f for f in data_files(cfg, data_root=str(nus_synthetic),
                                    sections=['val_dataloader'])
              if f.kind == 'image']
    val = _infos(nus_synthetic, 'val')
    assert [(f.path, f.token) for f in images] == [
        (str(nus_synthetic / 'samples' / cam / info['images'][cam]
             ['img_path']), info['token'])
        for info in val for cam in info['images']]
    assert all(Path(f.path).is_file() and f.load_dim is None
               for f in images)


@pytest.mark.parametrize('change, error, match', [
    (lambda d: d.pop('ann_file'), ValueError, 'has no ann_file'),
    (lambda d: d.update(ann_file='missing_infos.pkl'), FileNotFoundError,
     r"info file '.*missing_infos.pkl' does not exist; create the info "
     r'files with `python tools/create_data.py nuscenes'),
    (lambda d: d.__setitem__('data_prefix', dict(pts='samples/LIDAR_TOP')),
     ValueError, r"data_prefix has no 'sweeps' key"),
], ids=['no-ann-file', 'missing-info-file', 'no-sweeps-prefix'])
def test_config_errors_name_the_key_and_fix(configs, nus_synthetic, change,
                                            error, match):
    cfg = copy.deepcopy(configs[SYNTHETIC])
    change(cfg.train_dataloader.dataset)
    with pytest.raises(error, match=match):
        data_files(cfg, data_root=str(nus_synthetic))


@pytest.mark.launch
def test_listing_and_checking_load_no_heavy_module():
    # launch: what a fresh interpreter loads with these modules
    code = ('import sys\n'
            'import projects.mmdet3d_plugin.data_check.info_files\n'
            'import projects.mmdet3d_plugin.data_check.data_files\n'
            'import projects.mmdet3d_plugin.data_check.check\n'
            'import projects.mmdet3d_plugin.data_check.check_report\n'
            'import projects.mmdet3d_plugin.data_check.tool\n'
            f'print([m for m in {HEAVY!r} if m in sys.modules])\n')
    proc = subprocess.run(
        [sys.executable, '-c', code], cwd=REPO, capture_output=True,
        text=True, timeout=120, env={**os.environ, 'PYTHONPATH': str(REPO)})
    assert proc.stdout.strip() == '[]', proc.stderr[-2000:]
