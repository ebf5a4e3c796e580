"""The generated nuScenes-format dataset, through nuscenes-devkit (the
converter's own tests: ``tests/create_data/``)."""
import json
import multiprocessing
import pickle
from collections import Counter
from pathlib import Path

import cv2
import numpy as np
import pytest
from nuscenes import NuScenes
from nuscenes.eval.common.config import config_factory
from nuscenes.eval.common.loaders import load_gt
from nuscenes.eval.detection.data_classes import DetectionBox
from nuscenes.eval.detection.evaluate import DetectionEval
from nuscenes.eval.detection.utils import (category_to_detection_name,
                                           detection_name_to_rel_attributes)
from nuscenes.utils import splits
from nuscenes.utils.data_classes import LidarPointCloud
from nuscenes.utils.geometry_utils import points_in_box

from projects.mmdet3d_plugin.synthetic.writer import (
    SyntheticNuScenesConfig, generate_synthetic_nuscenes,
    prepare_synthetic_nuscenes)
from projects.mmdet3d_plugin.synthetic.scene import DETECTION_CLASSES
from tests.helpers.synthetic_data import tree_digest

TABLES = ('attribute', 'calibrated_sensor', 'category', 'ego_pose', 'instance',
          'log', 'map', 'sample', 'sample_annotation', 'sample_data', 'scene',
          'sensor', 'visibility')
CAMERAS = ('CAM_FRONT', 'CAM_FRONT_RIGHT', 'CAM_FRONT_LEFT', 'CAM_BACK',
           'CAM_BACK_LEFT', 'CAM_BACK_RIGHT')
# Small enough for a few seconds per dataset, large enough for every class.
SMALL = SyntheticNuScenesConfig(
    samples_per_scene=3,
    sweeps_per_sample=1,
    ground_points_per_ring=8,
    clutter_points=40,
    image_size=(32, 18))


def _gt_as_predictions(nusc: NuScenes,
                       split: str,
                       out: Path,
                       shift=(0.0, 0.0, 0.0)) -> Path:
    """A submission holding the devkit's own ground truth of ``split``."""
    gt = load_gt(nusc, split, DetectionBox, verbose=False)
    results = {}
    for token in gt.sample_tokens:
        results[token] = []
        for box in gt[token]:
            vel = [0.0 if np.isnan(v) else float(v) for v in box.velocity]
            results[token].append(
                dict(
                    sample_token=token,
                    translation=[
                        float(a + b) for a, b in zip(box.translation, shift)
                    ],
                    size=list(box.size),
                    rotation=list(box.rotation),
                    velocity=vel,
                    detection_name=box.detection_name,
                    detection_score=1.0,
                    attribute_name=box.attribute_name))
    meta = dict(
        use_camera=False,
        use_lidar=True,
        use_radar=False,
        use_map=False,
        use_external=False)
    path = out / 'results_nusc.json'
    path.write_text(json.dumps(dict(meta=meta, results=results)))
    return path


def _evaluate(nusc: NuScenes, result_path: Path, out: Path) -> dict:
    evaluator = DetectionEval(
        nusc,
        config=config_factory('detection_cvpr_2019'),
        result_path=str(result_path),
        eval_set='mini_val',
        output_dir=str(out),
        verbose=False)
    metrics, _ = evaluator.evaluate()
    return metrics.serialize()


@pytest.fixture(scope='module')
def nusc(nus_synthetic):
    return NuScenes('v1.0-mini', dataroot=str(nus_synthetic), verbose=False)


def test_devkit_loads_all_tables_and_files(nus_synthetic, nusc):
    assert sorted(
        p.stem for p in (nus_synthetic /
                         'v1.0-mini').glob('*.json')) == sorted(TABLES)
    names = sorted(s['name'] for s in nusc.scene)
    assert names == sorted(splits.mini_train + splits.mini_val)
    assert nusc.map[0]['mask'].mask().shape == (200, 200)
    for sample in nusc.sample:
        assert set(sample['data']) == {'LIDAR_TOP', *CAMERAS}
        for cam in CAMERAS:
            sd = nusc.get('sample_data', sample['data'][cam])
            img = cv2.imread(nusc.get_sample_data_path(sd['token']))
            assert img.shape == (sd['height'], sd['width'], 3)
            calib = nusc.get('calibrated_sensor',
                             sd['calibrated_sensor_token'])
            assert np.array(calib['camera_intrinsic']).shape == (3, 3)
    sweeps = [
        sd for sd in nusc.sample_data
        if sd['channel'] == 'LIDAR_TOP' and not sd['is_key_frame']
    ]
    # 20 Hz LiDAR and 2 Hz key frames, plus one interval before the first.
    assert len(sweeps) == len(nusc.scene) * (9 * 9 + 10)
    for sd in sweeps[:50]:
        assert sd['filename'].startswith('sweeps/LIDAR_TOP/')
        pc = LidarPointCloud.from_file(nusc.get_sample_data_path(sd['token']))
        assert pc.points.shape[1] > 500


@pytest.mark.parametrize('split', ['mini_train', 'mini_val'])
def test_every_class_with_valid_attributes(nusc, split):
    scenes = set(getattr(splits, split))
    seen = Counter()
    attr_names = {a['token']: a['name'] for a in nusc.attribute}
    for ann in nusc.sample_annotation:
        sample = nusc.get('sample', ann['sample_token'])
        if nusc.get('scene', sample['scene_token'])['name'] not in scenes:
            continue
        name = category_to_detection_name(ann['category_name'])
        seen[name] += 1
        attrs = [attr_names[t] for t in ann['attribute_tokens']]
        allowed = detection_name_to_rel_attributes(name)
        assert len(attrs) == (1 if allowed else 0), (name, attrs)
        assert set(attrs) <= set(allowed)
        assert ann['visibility_token'] in {'1', '2', '3', '4'}
    assert set(seen) == set(DETECTION_CLASSES)


def test_lidar_points_lie_in_boxes_near_the_ego(nusc):
    per_sample = []
    for sample in nusc.sample[::7]:
        lidar = sample['data']['LIDAR_TOP']
        path, boxes, _ = nusc.get_sample_data(lidar)  # in the sensor frame
        pc = LidarPointCloud.from_file(path)
        assert pc.points.shape[1] > 1500
        raw = np.fromfile(path, dtype=np.float32).reshape(-1, 5)
        assert set(np.unique(raw[:, 4])) <= set(range(32))  # ring
        per_sample.append(len(boxes))
        for box in boxes:
            ann = nusc.get('sample_annotation', box.token)
            inside = int(points_in_box(box, pc.points[:3]).sum())
            assert inside == ann['num_lidar_pts'] > 0
            assert np.abs(box.center[:2]).max() <= 40.0
    assert 10 <= min(per_sample) and max(per_sample) <= 25


def test_velocities_match_constant_motion(nusc):
    checked = 0
    for inst in nusc.instance:
        if inst['nbr_annotations'] < 3:
            continue
        first = nusc.get('sample_annotation', inst['first_annotation_token'])
        last = nusc.get('sample_annotation', inst['last_annotation_token'])
        dt = 1e-6 * (
            nusc.get('sample', last['sample_token'])['timestamp'] -
            nusc.get('sample', first['sample_token'])['timestamp'])
        expected = (np.array(last['translation']) -
                    np.array(first['translation']))[:2] / dt
        middle = nusc.get('sample_annotation', first['next'])
        np.testing.assert_allclose(
            nusc.box_velocity(middle['token'])[:2], expected, atol=1e-6)
        checked += 1
    assert checked > 50
    speeds = [
        np.linalg.norm(nusc.box_velocity(a['token'])[:2])
        for a in nusc.sample_annotation[::5]
    ]
    assert max(speeds) > 2.0 and min(speeds) < 1e-6


def test_ground_truth_as_predictions_scores_perfectly(nus_synthetic, nusc,
                                                      tmp_path):
    metrics = _evaluate(nusc, _gt_as_predictions(nusc, 'mini_val', tmp_path),
                        tmp_path)
    print(f"\nGT as predictions on mini_val: mAP={metrics['mean_ap']:.4f} "
          f"NDS={metrics['nd_score']:.4f}")
    assert metrics['mean_ap'] >= 0.99
    assert metrics['nd_score'] >= 0.99
    assert set(metrics['mean_dist_aps']) == set(DETECTION_CLASSES)
    assert min(metrics['mean_dist_aps'].values()) >= 0.99

    # The evaluation notices wrong boxes: 3 m off misses all but the 4 m
    # matching threshold.
    shifted = _evaluate(
        nusc,
        _gt_as_predictions(nusc, 'mini_val', tmp_path,
                           shift=(3.0, 0, 0)), tmp_path)
    assert shifted['mean_ap'] < 0.3


def test_same_seed_gives_identical_files(nus_synthetic, tmp_path):
    generate_synthetic_nuscenes(tmp_path / 'again', seed=0)
    again = tree_digest(tmp_path / 'again')
    assert again == tree_digest(nus_synthetic)
    assert len(again) > 1000


@pytest.mark.parametrize('seed', [0, 1, 2, 3, 4])
def test_seeds_keep_ground_truth_evaluable(seed, tmp_path):
    root = generate_synthetic_nuscenes(tmp_path / 'nus', seed, config=SMALL)
    nusc = NuScenes('v1.0-mini', dataroot=str(root), verbose=False)
    metrics = _evaluate(nusc, _gt_as_predictions(nusc, 'mini_val', tmp_path),
                        tmp_path)
    assert metrics['mean_ap'] >= 0.99
    assert metrics['nd_score'] >= 0.99
    assert set(metrics['mean_dist_aps']) == set(DETECTION_CLASSES)


def test_different_seeds_differ(tmp_path):
    first, second = (tree_digest(
        generate_synthetic_nuscenes(tmp_path / str(seed), seed, config=SMALL))
                      for seed in (0, 1))
    assert len(first) == len(second)
    same = [name for name in first if first[name] == second.get(name)]
    # Only the map masks (whose names differ) and the static tables agree.
    assert all(
        name.startswith('maps/') or name.endswith('visibility.json')
        for name in same), same
    assert 'v1.0-mini/sample_annotation.json' not in same


def test_prepare_is_idempotent(nus_synthetic):
    before = {p: p.stat().st_mtime_ns for p in nus_synthetic.iterdir()}
    assert prepare_synthetic_nuscenes(nus_synthetic) == nus_synthetic
    assert {p: p.stat().st_mtime_ns for p in nus_synthetic.iterdir()} == before


def _prepare_tiny(root: str) -> None:
    cfg = SyntheticNuScenesConfig(
        samples_per_scene=2,
        sweeps_per_sample=0,
        ground_points_per_ring=4,
        clutter_points=8,
        image_size=(16, 9))
    prepare_synthetic_nuscenes(root, config=cfg, gt_database=False)


def test_prepare_from_two_processes_at_once(tmp_path):
    root = tmp_path / 'shared'
    # Forked, so the children start with mmdet3d already imported.
    ctx = multiprocessing.get_context('fork')
    procs = [
        ctx.Process(target=_prepare_tiny, args=(str(root), ))
        for _ in range(2)
    ]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(timeout=300)
        assert proc.exitcode == 0
    assert sorted(p.name for p in root.iterdir()) == [
        '.synthetic_nuscenes.json', 'maps', 'nuscenes_infos_train.pkl',
        'nuscenes_infos_val.pkl', 'samples', 'sweeps', 'v1.0-mini'
    ]
    data = pickle.loads((root / 'nuscenes_infos_val.pkl').read_bytes())
    assert len(data['data_list']) == 2 * len(splits.mini_val)


def test_prepare_refuses_a_root_of_another_seed(tmp_path):
    generate_synthetic_nuscenes(tmp_path / 'nus', seed=0, config=SMALL)
    with pytest.raises(ValueError, match='generated with seed=0.*seed=1'):
        prepare_synthetic_nuscenes(
            tmp_path / 'nus', seed=1, config=SMALL, gt_database=False)


@pytest.mark.parametrize('kwargs, error, match', [
    (dict(version='v1.0'), ValueError, 'version must be one of'),
    (dict(seed=1.5), TypeError, 'seed must be an int'),
    (dict(config=None, exists=True), FileExistsError, 'already exists'),
])
def test_generate_rejects_bad_input(tmp_path, kwargs, error, match):
    if kwargs.pop('exists', False):
        (tmp_path / 'v1.0-mini').mkdir()
    with pytest.raises(error, match=match):
        generate_synthetic_nuscenes(tmp_path, **kwargs)


@pytest.mark.parametrize('kwargs, match', [
    (dict(samples_per_scene=0), 'samples_per_scene must be >= 1'),
    (dict(sweeps_per_sample=20), r'sweeps_per_sample must be in \[0, 19\]'),
    (dict(sweep_point_fraction=0), r'sweep_point_fraction must be in'),
    (dict(min_objects=5), 'every scene holds every class'),
])
def test_config_rejects_bad_sizes(kwargs, match):
    with pytest.raises(ValueError, match=match):
        SyntheticNuScenesConfig(**kwargs)
