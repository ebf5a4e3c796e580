"""The shipped pillar02 train pipeline, stock against preset
'fast_pipeline', on generated data at nuScenes density (34,720 points per
frame): the same packed samples and random states, sample after sample,
for several seeds; and none of mmdet3d's numba kernels compiled on the
fast path, the plugin's own compiled once and then loaded from numba's
cache."""
import copy
import json
import os
import subprocess
import sys

import pytest
from mmengine.registry import init_default_scope

from mmdet3d.registry import DATASETS
from projects.mmdet3d_plugin import load_config
from projects.mmdet3d_plugin.config.data_root import redirect_data_root
from projects.mmdet3d_plugin.config.presets import replace_transform_types
from tests.helpers.pipeline_equality import (FAST_TYPES, difference,
                                             rng_difference, rng_state,
                                             seed_all)
from tests.helpers.synthetic_data import REPO_ROOT, prepare_dense_synthetic

PILLAR02 = ('configs/centerpoint/'
            'centerpoint_pillar02_second_secfpn_8xb4-cyclic-20e_nus-3d.py')
SEEDS = (0, 1, 2)
SAMPLES = 12


@pytest.fixture(scope='module')
def nus_dense():
    # 3 key frames per scene: 30 frames of 34,720 points per scene, enough
    # for 10 sweeps and the GT database (a fifth of the generation time).
    return prepare_dense_synthetic(samples_per_scene=3)


def pillar02_train_set(data_root):
    cfg = load_config(str(REPO_ROOT / PILLAR02))
    redirect_data_root(cfg, data_root)
    init_default_scope('mmdet3d')
    return cfg.train_dataloader.dataset


def test_shipped_config_uses_the_fast_pipeline(nus_synthetic):
    wrapped = pillar02_train_set(nus_synthetic)
    types = [t['type'] for t in wrapped.dataset.pipeline]
    assert set(FAST_TYPES.values()) - {'FastDataBaseSampler'} <= set(types)
    assert not set(FAST_TYPES) & set(types)


def test_dense_pipeline_equals_stock(nus_dense):
    wrapped = pillar02_train_set(nus_dense)  # CBGSDataset
    stock_cfg = copy.deepcopy(wrapped)
    replace_transform_types(stock_cfg,
                            {v: k for k, v in FAST_TYPES.items()})
    for seed in SEEDS:
        seed_all(seed)
        fast = DATASETS.build(copy.deepcopy(wrapped))
        seed_all(seed)
        stock = DATASETS.build(stock_cfg)
        assert len(stock) == len(fast)
        for step in range(SAMPLES):
            index = (seed * 37 + step * 11) % len(stock)
            seed_all(seed * 1000 + step)
            ours = fast[index]
            ours_state = rng_state()
            seed_all(seed * 1000 + step)
            theirs = stock[index]
            found = difference(theirs, ours) or rng_difference(
                rng_state(), ours_state)
            assert found is None, f'seed {seed}, step {step}: {found}'
            points = theirs['inputs']['points']
            assert len(points) > 100000  # dense: ten sweeps of 34,720


_KERNELS = '''
import json
import sys
import numba
from mmengine.registry import init_default_scope
from mmdet3d.registry import DATASETS
from projects.mmdet3d_plugin import load_config
from projects.mmdet3d_plugin.config.data_root import redirect_data_root
cfg = redirect_data_root(load_config(sys.argv[1]), sys.argv[2])
init_default_scope('mmdet3d')
dataset = DATASETS.build(cfg.train_dataloader.dataset)
for i in range(2):
    dataset[i]
kernels = {'mmdet3d': [], 'plugin': {}}
for name, module in list(sys.modules.items()):
    for attr, value in list(vars(module).items()):
        if not isinstance(value, numba.core.dispatcher.Dispatcher) or \\
                not value.signatures:
            continue
        if name.startswith('mmdet3d'):
            kernels['mmdet3d'].append(f'{name}.{attr}')
        elif name.startswith('projects'):
            stats = value.stats
            kernels['plugin'][attr] = [sum(stats.cache_hits.values()),
                                       sum(stats.cache_misses.values())]
print(json.dumps(kernels))
'''


def test_fast_pipeline_kernels_are_cached(nus_synthetic, tmp_path):
    """Fresh processes through the shipped pillar02 train pipeline (GT
    sampling included) compile none of mmdet3d's numba kernels (the
    seconds a stock worker spends before its first sample); the plugin's
    own kernels are compiled by the first process into numba's cache and
    loaded from it by the next, with nothing compiled again."""
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / 'numba'))
    runs = []
    for _ in range(2):
        proc = subprocess.run(
            [sys.executable, '-c', _KERNELS, str(REPO_ROOT / PILLAR02),
             str(nus_synthetic)],
            cwd=REPO_ROOT, env=env, capture_output=True, text=True,
            timeout=300)
        assert proc.returncode == 0, proc.stderr[-3000:]
        runs.append(json.loads(proc.stdout.strip().splitlines()[-1]))
    first, second = runs
    assert first['mmdet3d'] == [] and second['mmdet3d'] == []
    used = {'boxes_keep_mask', 'compress_rows', 'count_not_close',
            'move_sweep', 'range_keep_mask', 'rotate_scale_translate'}
    assert used <= set(first['plugin']), first
    assert all(misses > 0 for _, misses in first['plugin'].values()), first
    assert set(second['plugin']) == set(first['plugin']), second
    assert all(hits > 0 and misses == 0
               for hits, misses in second['plugin'].values()), second
