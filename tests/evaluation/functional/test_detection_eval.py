"""The fast nuScenes evaluator against nuscenes-devkit's ``DetectionEval``.

One module-scoped copy of the generated ``v1.0-mini`` tables, edited so the
devkit's corner cases occur in ``mini_val``: bicycle racks around some
bicycles and motorcycles, ground truth without lidar or radar points,
without attribute, with unknown velocity (single-annotation instances), a
class without any ground truth (trailers recategorized as animals), and
non-detection categories. Each case feeds the same predictions to
:func:`evaluate` and, as a result file of exact ``repr`` floats, to the
devkit, and compares every number of ``metrics_summary.json`` and
``metrics_details.json`` at 1e-6 (nan where the devkit gives nan).
"""
import hashlib
import json
import math
import os
import shutil
from types import SimpleNamespace

import numpy as np
import pytest
from nuscenes import NuScenes
from nuscenes.eval.common.data_classes import EvalBoxes
from nuscenes.eval.detection.config import config_factory
from nuscenes.eval.detection.constants import DETECTION_NAMES
from nuscenes.eval.detection.evaluate import DetectionEval

from projects.mmdet3d_plugin.evaluation import (NuscBoxes, Predictions,
                                                evaluate, load_ground_truth)
from projects.mmdet3d_plugin.evaluation.functional.gt_cache import cache_key
from projects.mmdet3d_plugin.evaluation.functional.nusc_format import \
    ATTRIBUTES
from projects.mmdet3d_plugin.evaluation.functional.results_json import \
    write_results_json

VERSION = 'v1.0-mini'
CFG = config_factory('detection_cvpr_2019')


def _token(*key) -> str:
    return hashlib.md5(repr(key).encode()).hexdigest()


def _edit_tables(table_dir: str) -> None:
    """Put the devkit's corner cases into the mini_val ground truth."""

    def load(name):
        with open(os.path.join(table_dir, f'{name}.json')) as f:
            return json.load(f)

    def dump(name, records):
        with open(os.path.join(table_dir, f'{name}.json'), 'w') as f:
            json.dump(records, f)

    anns, instances = load('sample_annotation'), load('instance')
    categories = {c['name']: c['token'] for c in load('category')}
    category_of = {i['token']: i['category_token'] for i in instances}
    name_of = {v: k for k, v in categories.items()}
    rng = np.random.default_rng(0)
    # A class without ground truth: trailers become animals.
    for inst in instances:
        if name_of[inst['category_token']] == 'vehicle.trailer':
            inst['category_token'] = categories['animal']
    # No points, no attribute.
    for idx in rng.choice(len(anns), 60, replace=False):
        anns[idx]['num_lidar_pts'] = anns[idx]['num_radar_pts'] = 0
    for idx in rng.choice(len(anns), 60, replace=False):
        anns[idx]['attribute_tokens'] = []
    new_anns, new_insts = [], []

    def add(ann, category, translation, size, attrs=()):
        inst = _token('instance', len(new_insts))
        token = _token('ann', len(new_anns))
        new_insts.append(
            dict(token=inst, category_token=categories[category],
                 nbr_annotations=1, first_annotation_token=token,
                 last_annotation_token=token))
        new_anns.append(
            dict(ann, token=token, instance_token=inst, prev='', next='',
                 translation=list(translation), size=list(size),
                 attribute_tokens=list(attrs), num_lidar_pts=5,
                 num_radar_pts=0))

    cycles = [a for a in anns if name_of[category_of[a['instance_token']]]
              in ('vehicle.bicycle', 'vehicle.motorcycle')]
    for ann in cycles[::2]:  # racks around half of them
        add(ann, 'static_object.bicycle_rack', ann['translation'],
            [3.0, 4.0, 2.0])
    for ann in anns[::25]:  # unknown velocity; other categories
        moved = np.add(ann['translation'], [3.0, -2.0, 0.0])
        add(ann, 'vehicle.car', moved, [1.9, 4.5, 1.6],
            ann['attribute_tokens'][:1] if name_of[category_of[
                ann['instance_token']]] == 'vehicle.car' else [])
        add(ann, 'animal', moved + [0, 4.0, 0], [0.5, 1.0, 0.6])
    dump('sample_annotation', anns + new_anns)
    dump('instance', instances + new_insts)


@pytest.fixture(scope='module')
def edited_nuscenes(nus_synthetic, tmp_path_factory):
    """Root of the edited copy (tables copied, maps and infos linked), its
    ``NuScenes`` and its ground truth arrays."""
    root = tmp_path_factory.mktemp('edited_nuscenes')
    shutil.copytree(nus_synthetic / VERSION, root / VERSION)
    for name in ('maps', 'nuscenes_infos_val.pkl'):
        os.symlink(nus_synthetic / name, root / name)
    _edit_tables(str(root / VERSION))
    nusc = NuScenes(version=VERSION, dataroot=str(root), verbose=False)
    gt = load_ground_truth(str(root), VERSION, str(root / 'cache'))
    return root, nusc, gt


# ----------------------------------------------------------------------
# Predictions
# ----------------------------------------------------------------------
def _quat(yaw):
    return np.stack([np.cos(yaw / 2), 0 * yaw, 0 * yaw, np.sin(yaw / 2)], 1)


def _boxes(t, size, yaw, vel, score, labels, attrs) -> NuscBoxes:
    values = np.concatenate(
        [t, size, _quat(yaw), vel, np.asarray(score)[:, None]], axis=1)
    return NuscBoxes(values.astype(np.float64), labels.astype(np.int16),
                     attrs.astype(np.int8))


def _random_attrs(rng, labels):
    return rng.integers(-1, len(ATTRIBUTES), len(labels))


def _gt_boxes(gt, s):
    sl = slice(gt.box_start[s], gt.box_start[s + 1])
    return (gt.translation[sl], gt.size[sl], gt.yaw[sl],
            np.nan_to_num(gt.velocity[sl]), gt.labels[sl], gt.attrs[sl])


def _case(name, gt, rng):
    """Boxes by sample token for one named case."""
    samples = {}
    for s, token in enumerate(gt.sample_tokens.tolist()):
        t, size, yaw, vel, labels, attrs = _gt_boxes(gt, s)
        n = len(labels)
        if name == 'random':
            m = 150
            xy = rng.uniform(-60, 60, (m, 2)) + gt.ego_translation[s, :2]
            boxes = _boxes(
                np.c_[xy, rng.normal(1, 0.5, m)],
                rng.uniform(0.3, 5, (m, 3)), rng.uniform(-4, 4, m),
                rng.normal(0, 3, (m, 2)),
                rng.random(m).astype(np.float32), rng.integers(0, 10, m),
                _random_attrs(rng, np.zeros(m)))
        elif name in ('perturbed', 'ties', 'duplicates'):
            keep = rng.random(n) < 0.8
            m = int(keep.sum())
            score = rng.random(m + 20).astype(np.float32)
            if name == 'ties':
                score = np.round(score * 3) / 3
            extra = rng.uniform(-40, 40, (20, 3)) + gt.ego_translation[s]
            boxes = _boxes(
                np.r_[t[keep] + rng.normal(0, 0.3, (m, 3)), extra],
                np.r_[size[keep] * rng.uniform(0.7, 1.3, (m, 3)),
                      rng.uniform(0.3, 5, (20, 3))],
                np.r_[yaw[keep] + rng.normal(0, 0.5, m),
                      rng.uniform(-4, 4, 20)],
                np.r_[vel[keep] + rng.normal(0, 1, (m, 2)),
                      rng.normal(0, 2, (20, 2))], score,
                np.r_[labels[keep], rng.integers(0, 10, 20)],
                np.r_[np.where(rng.random(m) < 0.7, attrs[keep],
                               _random_attrs(rng, attrs[keep])),
                      _random_attrs(rng, np.zeros(20))])
            if name == 'duplicates':
                boxes = NuscBoxes(*(np.concatenate([x, x]) for x in boxes))
        elif name == 'gt_as_predictions':
            boxes = _boxes(t, size, yaw, vel, np.linspace(1, 0.5, n), labels,
                           attrs)
        elif name == 'some_classes':  # no prediction for 7 classes
            keep = np.isin(labels, [0, 5, 9])
            boxes = _boxes(t[keep] + 0.3, size[keep], yaw[keep], vel[keep],
                           rng.random(int(keep.sum())), labels[keep],
                           attrs[keep])
        elif name == 'no_box':
            boxes = NuscBoxes.empty()
        else:
            raise ValueError(name)
        samples[token] = boxes
    return samples


def _exact_json(path, samples):
    """The result file with exact repr floats, as the stock metric writes."""
    results = {
        token: [
            dict(sample_token=token, translation=row[0:3].tolist(),
                 size=row[3:6].tolist(), rotation=row[6:10].tolist(),
                 velocity=row[10:12].tolist(),
                 detection_name=DETECTION_NAMES[label],
                 detection_score=float(row[12]),
                 attribute_name='' if attr < 0 else ATTRIBUTES[attr])
            for row, label, attr in zip(b.values, b.labels, b.attrs)
        ]
        for token, b in samples.items()
    }
    with open(path, 'w') as f:
        json.dump(dict(meta=dict(use_lidar=True), results=results), f)


def _devkit(nusc, result_path, out_dir):
    ev = DetectionEval(nusc, CFG, str(result_path), 'mini_val',
                       str(out_dir), verbose=False)
    metrics, md_list = ev.evaluate()
    return metrics.serialize(), md_list.serialize()


def _assert_close(ours, theirs, path='') -> int:
    """Recursive equality at 1e-6, nan == nan; returns numbers compared."""
    if isinstance(theirs, dict):
        assert set(map(str, ours)) == set(map(str, theirs)), path
        ours = {str(k): v for k, v in ours.items()}
        return sum(
            _assert_close(ours[str(k)], v, f'{path}/{k}')
            for k, v in theirs.items())
    if isinstance(theirs, (list, tuple)):
        assert len(ours) == len(theirs), path
        return sum(
            _assert_close(a, b, f'{path}[{i}]')
            for i, (a, b) in enumerate(zip(ours, theirs)))
    if isinstance(theirs, str):
        assert ours == theirs, path
        return 0
    a, b = float(ours), float(theirs)
    assert (math.isnan(a) and math.isnan(b)) or abs(a - b) <= 1e-6, \
        f'{path}: ours {a!r}, devkit {b!r}'
    return 1


def _summary(metrics):
    summary = metrics.serialize()
    summary.pop('eval_time')
    return summary


CASES = ['random', 'perturbed', 'gt_as_predictions', 'some_classes', 'ties',
         'duplicates']


@pytest.mark.parametrize('case', CASES)
def test_fast_evaluation_equals_devkit(edited_nuscenes, tmp_path, case):
    root, nusc, gt = edited_nuscenes
    samples = _case(case, gt, np.random.default_rng(CASES.index(case)))
    _exact_json(tmp_path / 'results.json', samples)
    theirs, their_details = _devkit(nusc, tmp_path / 'results.json', tmp_path)
    theirs.pop('eval_time')
    metrics, md_list = evaluate(
        gt, Predictions.from_samples(samples, DETECTION_NAMES), CFG)
    assert _assert_close(_summary(metrics), theirs) > 100
    assert _assert_close(md_list.serialize(), their_details) > 40 * 800
    if case in ('perturbed', 'gt_as_predictions'):  # non-trivial numbers
        assert theirs['mean_ap'] > 0.1 and theirs['nd_score'] > 0.2


def test_edited_ground_truth_has_the_corner_cases(edited_nuscenes):
    _, nusc, gt = edited_nuscenes
    assert (gt.num_pts == 0).sum() > 5
    assert (gt.attrs < 0).sum() > 5
    assert np.isnan(gt.velocity).any()
    assert len(gt.rack_p1) > 3
    assert DETECTION_NAMES.index('trailer') not in gt.labels


def test_no_box_equals_devkit_rules(edited_nuscenes):
    # The devkit cannot read an empty result file ('Invalid box type:
    # None'); its own evaluate() on empty box sets is the oracle.
    _, _, gt = edited_nuscenes
    samples = _case('no_box', gt, None)
    metrics, _ = evaluate(gt, Predictions.from_samples(samples,
                                                       DETECTION_NAMES), CFG)
    state = SimpleNamespace(cfg=CFG, gt_boxes=EvalBoxes(),
                            pred_boxes=EvalBoxes(), verbose=False)
    theirs, _ = DetectionEval.evaluate(state)
    assert _assert_close(_summary(metrics), _summary(theirs)) > 100


def test_too_many_boxes_and_wrong_samples_fail_like_devkit(
        edited_nuscenes, tmp_path):
    _, nusc, gt = edited_nuscenes
    rng = np.random.default_rng(7)
    samples = _case('random', gt, rng)
    first = next(iter(samples))
    samples[first] = NuscBoxes(*(np.concatenate([x] * 4)
                                 for x in samples[first]))
    _exact_json(tmp_path / 'results.json', samples)
    with pytest.raises(AssertionError, match='<= 500 boxes per sample'):
        _devkit(nusc, tmp_path / 'results.json', tmp_path)
    with pytest.raises(ValueError, match=r'has 600 predicted boxes.*500'):
        evaluate(gt, Predictions.from_samples(samples, DETECTION_NAMES), CFG)
    samples = _case('random', gt, rng)
    samples.pop(first)
    with pytest.raises(ValueError, match='miss 1 of its 20 samples'):
        evaluate(gt, Predictions.from_samples(samples, DETECTION_NAMES), CFG)


def test_written_result_file_gives_the_same_metrics(edited_nuscenes,
                                                    tmp_path):
    # results_json's 15-digit numbers: the devkit reading our file agrees
    # with the fast evaluation of the arrays.
    _, nusc, gt = edited_nuscenes
    samples = _case('perturbed', gt, np.random.default_rng(3))
    path = write_results_json(str(tmp_path / 'results_nusc.json'), samples,
                              DETECTION_NAMES, dict(use_lidar=True))
    theirs, _ = _devkit(nusc, path, tmp_path)
    theirs.pop('eval_time')
    metrics, _ = evaluate(
        gt, Predictions.from_samples(samples, DETECTION_NAMES), CFG)
    _assert_close(_summary(metrics), theirs)


def test_ground_truth_cache_is_rebuilt_when_tables_change(
        edited_nuscenes, tmp_path):
    root, _, _ = edited_nuscenes
    data = tmp_path / 'data'
    shutil.copytree(root / VERSION, data / VERSION)
    os.symlink(root / 'maps', data / 'maps')
    cache = tmp_path / 'cache'
    first = load_ground_truth(str(data), VERSION, str(cache))
    files = sorted(p.name for p in cache.iterdir())
    dataset = hashlib.sha256(
        os.path.realpath(data / VERSION).encode()).hexdigest()[:8]
    assert files == [f'gt_{VERSION}_mini_val_{dataset}_'
                     f'{cache_key(str(data / VERSION))}.npz']
    again = load_ground_truth(str(data), VERSION, str(cache))
    assert np.array_equal(first.translation, again.translation)
    # Drop one annotation's points: the cache must not serve the old file.
    table = data / VERSION / 'sample_annotation.json'
    anns = json.loads(table.read_text())
    target = next(i for i, a in enumerate(anns)
                  if a['sample_token'] in set(first.sample_tokens.tolist())
                  and a['num_lidar_pts'] + a['num_radar_pts'] > 0)
    anns[target]['num_lidar_pts'] = anns[target]['num_radar_pts'] = 0
    table.write_text(json.dumps(anns))
    changed = load_ground_truth(str(data), VERSION, str(cache))
    assert (changed.num_pts == 0).sum() == (first.num_pts == 0).sum() + 1
    assert len(list(cache.iterdir())) == 1  # the stale file is removed
