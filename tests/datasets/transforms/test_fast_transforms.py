"""Each Fast* transform against mmdet3d's own on the generated data: the
same input and random state give the same output, bit for bit, and the
same random state after (numpy, Python, torch)."""
import copy

import pytest
from mmengine.registry import init_default_scope

from mmdet3d.datasets.transforms import ObjectSample
from mmdet3d.registry import DATASETS, TRANSFORMS
from projects.mmdet3d_plugin import load_config
from projects.mmdet3d_plugin.config.data_root import redirect_data_root
from projects.mmdet3d_plugin.config.presets import replace_transform_types
from projects.mmdet3d_plugin.datasets.transforms import (FastDataBaseSampler,
                                                         FastObjectSample,
                                                         global_rot_scale_trans,
                                                         load_points_from_multi_sweeps)
from tests.helpers.pipeline_equality import (FAST_TYPES, compare_transform,
                                             difference, fast_config,
                                             rng_state, seed_all)
from tests.helpers.synthetic_data import REPO_ROOT

PILLAR02 = ('configs/centerpoint/'
            'centerpoint_pillar02_second_secfpn_8xb4-cyclic-20e_nus-3d.py')
STOCK_TYPES = {new: old for old, new in FAST_TYPES.items()}
SAMPLES = 12
SEEDS = (0, 1)


def stock_config(cfg):
    cfg = copy.deepcopy(cfg)
    replace_transform_types(cfg, STOCK_TYPES)
    return cfg


@pytest.fixture(scope='module')
def pillar02(nus_synthetic):
    """The stock train pipeline of the shipped pillar02 config (its
    transforms by name) and its dataset without a pipeline."""
    cfg = load_config(str(REPO_ROOT / PILLAR02))
    redirect_data_root(cfg, nus_synthetic)
    init_default_scope('mmdet3d')
    dataset_cfg = cfg.train_dataloader.dataset.dataset
    pipeline = stock_config(dataset_cfg.pipeline)
    dataset = DATASETS.build(dict(dataset_cfg, pipeline=[]))
    return {t['type']: t for t in pipeline}, dataset


def inputs(dataset, index):
    results = copy.deepcopy(dataset.get_data_info(index))
    results['box_type_3d'] = dataset.box_type_3d
    results['box_mode_3d'] = dataset.box_mode_3d
    return results


LOAD = ['LoadPointsFromFile']
SWEEPS = LOAD + ['LoadPointsFromMultiSweeps']
ANNOTATED = SWEEPS + ['LoadAnnotations3D']
SAMPLED = ANNOTATED + ['ObjectSample']
AUGMENTED = SAMPLED + ['GlobalRotScaleTrans', 'RandomFlip3D']
# (case, transform type, its arguments over the config's, stock transforms
# run before it, drop 'lidar_sweeps' from the input)
CASES = [
    ('file', 'LoadPointsFromFile', {}, [], False),
    ('file-use_dim', 'LoadPointsFromFile', dict(use_dim=[0, 1, 2, 4]), [],
     False),
    ('sweeps', 'LoadPointsFromMultiSweeps', {}, LOAD, False),
    ('sweeps-all-kept', 'LoadPointsFromMultiSweeps',
     dict(sweeps_num=3, remove_close=False, use_dim=[0, 1, 2, 4]), LOAD,
     False),
    ('sweeps-more-than-there', 'LoadPointsFromMultiSweeps',
     dict(sweeps_num=12), LOAD, False),
    ('sweeps-test-mode', 'LoadPointsFromMultiSweeps', dict(test_mode=True),
     LOAD, False),
    ('sweeps-padded', 'LoadPointsFromMultiSweeps', {}, LOAD, True),
    ('sweeps-padded-close-kept', 'LoadPointsFromMultiSweeps',
     dict(remove_close=False), LOAD, True),
    ('object-sample', 'ObjectSample', {}, ANNOTATED, False),
    ('rot-scale-trans', 'GlobalRotScaleTrans', {}, SAMPLED, False),
    ('rot-scale-trans-translated', 'GlobalRotScaleTrans',
     dict(rot_range=0.8, translation_std=[0.5, 0.5, 0.2]), SAMPLED, False),
    ('rot-scale-trans-no-boxes', 'GlobalRotScaleTrans', {}, SWEEPS, False),
    ('points-range', 'PointsRangeFilter', {}, AUGMENTED, False),
    ('points-range-narrow', 'PointsRangeFilter',
     dict(point_cloud_range=[-10.0, -20.0, -2.0, 30.0, 5.0, 1.0]),
     AUGMENTED, False),
    ('shuffle', 'PointShuffle', {}, AUGMENTED, False),
]


@pytest.mark.parametrize('case, kind, args, before, no_sweeps', CASES,
                         ids=[c[0] for c in CASES])
def test_fast_transform_equals_stock(pillar02, case, kind, args, before,
                                     no_sweeps):
    transforms, dataset = pillar02
    stock_cfg = dict(copy.deepcopy(transforms[kind]), **args)
    seed_all(0)
    stock = TRANSFORMS.build(copy.deepcopy(stock_cfg))
    seed_all(0)
    fast = TRANSFORMS.build(fast_config(stock_cfg))
    assert type(fast).__name__ == FAST_TYPES[kind]
    assert isinstance(fast, type(stock))
    seed_all(0)
    prefix = [TRANSFORMS.build(copy.deepcopy(transforms[t])) for t in before]
    for seed in SEEDS:
        for index in range(SAMPLES):
            results = inputs(dataset, index)
            if no_sweeps:
                results.pop('lidar_sweeps')
            seed_all(seed * 1000 + index)
            for transform in prefix:
                results = transform(results)
            out, found = compare_transform(stock, fast, results, rng_state())
            assert found is None, f'seed {seed}, sample {index}: {found}'
            if kind == 'ObjectSample':
                # The samplers' own state (shuffled order, position); their
                # lists are compared in test_packed_infos.py.
                assert _class_samplers(stock) == _class_samplers(fast)


def _class_samplers(object_sample) -> dict:
    return {name: (s._indices.tobytes(), s._idx, s._example_num)
            for name, s in object_sample.db_sampler.sampler_dict.items()}


def test_column_arithmetic_checks_pass_here():
    """The column-by-column paths are the ones the cases above test.

    The sweep move is numpy's arithmetic and must match everywhere. The
    rotation matches torch's (N, 3) x (3, 3) product only where torch sums
    it in the kernel's order: on a CPU where it does not (seen on one with
    AVX512-FP16), the transform takes stock's statements, which
    ``test_stock_statements_where_the_check_fails`` covers, and this says
    so instead of failing."""
    assert load_points_from_multi_sweeps.column_move_is_exact()
    if not global_rot_scale_trans.column_steps_are_exact():
        pytest.skip("torch's (N, 3) x (3, 3) product rounds differently "
                    'from the column kernel on this CPU: '
                    'FastGlobalRotScaleTrans takes stock\'s statements here')


@pytest.mark.parametrize('kind, module, check', [
    ('LoadPointsFromMultiSweeps', load_points_from_multi_sweeps,
     'column_move_is_exact'),
    ('GlobalRotScaleTrans', global_rot_scale_trans, 'column_steps_are_exact'),
])
def test_stock_statements_where_the_check_fails(pillar02, monkeypatch, kind,
                                                module, check):
    """Where the column arithmetic would differ, stock's statements run."""
    monkeypatch.setattr(module, check, lambda: False)
    transforms, dataset = pillar02
    stock = TRANSFORMS.build(copy.deepcopy(transforms[kind]))
    fast = TRANSFORMS.build(fast_config(transforms[kind]))
    before = SWEEPS[:-1] if kind == 'LoadPointsFromMultiSweeps' else SAMPLED
    seed_all(0)
    prefix = [TRANSFORMS.build(copy.deepcopy(transforms[t])) for t in before]
    for index in range(3):
        results = inputs(dataset, index)
        for transform in prefix:
            results = transform(results)
        _, found = compare_transform(stock, fast, results, rng_state())
        assert found is None, f'sample {index}: {found}'


def test_object_sample_through_the_sampler_loader(pillar02, monkeypatch):
    """Where the GT-database files cannot be read straight into the new
    array (``point_rows`` is None: another loader or options), the sampled
    objects come from the sampler's loader, with the same output and the
    same random draws."""
    monkeypatch.setattr(FastDataBaseSampler, 'point_rows',
                        lambda self, sampled: None)
    transforms, dataset = pillar02
    seed_all(0)
    stock = TRANSFORMS.build(copy.deepcopy(transforms['ObjectSample']))
    seed_all(0)
    fast = TRANSFORMS.build(fast_config(transforms['ObjectSample']))
    prefix = [TRANSFORMS.build(copy.deepcopy(transforms[t]))
              for t in ANNOTATED]
    for index in range(4):
        results = inputs(dataset, index)
        seed_all(index)
        for transform in prefix:
            results = transform(results)
        _, found = compare_transform(stock, fast, results, rng_state())
        assert found is None, f'sample {index}: {found}'


def test_remove_points_in_boxes_equals_stock(pillar02):
    """``remove_points_in_boxes`` (what mmdet3d's own ``sample_2d`` path
    calls) keeps the same points as stock's."""
    transforms, dataset = pillar02
    seed_all(0)
    points = None
    for transform in [TRANSFORMS.build(copy.deepcopy(transforms[t]))
                      for t in ANNOTATED]:
        points = transform(points or inputs(dataset, 0))
    boxes = points['gt_bboxes_3d'].numpy()
    stock = ObjectSample.remove_points_in_boxes(points['points'], boxes)
    fast = FastObjectSample.remove_points_in_boxes(points['points'], boxes)
    assert len(stock) < len(points['points'])
    assert difference(stock, fast) is None
