"""The GT database of ``ObjectSample`` packed into shared arrays
(``FastDataBaseSampler(share_infos=True)``, the shipped configs' default):
the infos read back equal to stock's after its filters, the class samplers
in stock's order, a pickled sampler that does not grow with the database
and draws what the original draws, and spawn workers (fresh interpreters:
marker ``launch``) that load the shipped pillar02 pipeline's samples as
this process does. The samples themselves, stock against fast, are
compared in ``test_fast_pipeline.py``."""
import copy
import pickle
from multiprocessing.reduction import ForkingPickler

import numpy as np
import pytest
from mmengine.dataset import pseudo_collate
from mmengine.registry import init_default_scope
from torch.utils.data import DataLoader

from mmdet3d.registry import DATASETS, TRANSFORMS
from projects.mmdet3d_plugin import load_config
from projects.mmdet3d_plugin.config.data_root import redirect_data_root
from projects.mmdet3d_plugin.datasets.transforms.db_sampler import \
    RecipeClassSampler
from projects.mmdet3d_plugin.datasets.transforms.packed_infos import (
    PackedInfoList, pack_db_infos)
from projects.mmdet3d_plugin.engine.resume.sample_key import SampleKey
from projects.mmdet3d_plugin.engine.resume.seeded_items import seed_samples
from tests.helpers.synthetic_data import REPO_ROOT

PILLAR02 = (REPO_ROOT / 'configs' / 'centerpoint' /
            'centerpoint_pillar02_second_secfpn_8xb4-cyclic-20e_nus-3d.py')
TILES = 20


def same(a, b) -> bool:
    """Equal values of the same types; arrays bit for bit."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(map(same, a, b))
    if isinstance(a, (np.ndarray, np.generic)):
        return (a.dtype == b.dtype and np.shape(a) == np.shape(b)
                and a.tobytes() == b.tobytes())
    return a == b


@pytest.fixture(scope='module')
def db_sampler_cfg(nus_synthetic):
    cfg = redirect_data_root(load_config(str(PILLAR02)), nus_synthetic)
    init_default_scope('mmdet3d')
    step = next(t for t in cfg.train_dataloader.dataset.dataset.pipeline
                if 'db_sampler' in t)
    assert step['type'] == 'FastObjectSample'
    assert 'type' not in step['db_sampler']  # FastObjectSample's default:
    return dict(step['db_sampler'].to_dict(), type='FastDataBaseSampler')


def _build(cfg, seed=0, **changes):
    np.random.seed(seed)  # the class samplers shuffle when built
    return TRANSFORMS.build(dict(copy.deepcopy(cfg), **changes))


def test_packed_infos_equal_stock_after_its_filters(db_sampler_cfg):
    stock = _build(db_sampler_cfg, type='DataBaseSampler')
    after_stock = np.random.get_state()[1].copy()
    ours = _build(db_sampler_cfg)
    # The same draws of numpy's global RNG (the class samplers' shuffles).
    assert np.array_equal(np.random.get_state()[1], after_stock)
    assert list(ours.db_infos) == list(stock.db_infos)
    assert sum(map(len, stock.db_infos.values())) > 100
    for name, infos in stock.db_infos.items():
        packed = ours.db_infos[name]
        assert isinstance(packed, PackedInfoList)
        assert same(list(packed), infos), name
        assert same(packed[-1], infos[-1])
        sampler = ours.sampler_dict[name]
        assert isinstance(sampler, RecipeClassSampler)
        assert sampler._sampled_list is packed
        assert np.array_equal(sampler._indices,
                              stock.sampler_dict[name]._indices)
        # Read-only views of one shared mapping: no page a reader copies.
        for array in packed._arrays:
            assert not array.flags.writeable


def test_any_infos_round_trip():
    infos = [
        dict(a=1, s='caf\u00e9', n=None, f=0.5, t=True, x=np.float32(2),
             arr=np.arange(3, dtype=np.int16), o=[1, 'two']),
        dict(a=2**70, s='\ud800', n=None, f=-0.0, t=False, x=np.float32(3),
             arr=np.arange(4, dtype=np.int16), o={'k': (1, 2)}),
    ]
    packed = PackedInfoList.pack(infos)
    assert same(list(packed), infos)
    assert same(packed[-2], infos[0])
    kinds = {key: kind for key, kind, _ in packed._keys}
    assert kinds == dict(a='object', s='object', n='none', f='float',
                         t='bool', x='scalar', arr='object', o='object')
    mixed = [dict(a=1, b='x'), dict(b='y', a=2)]  # keys in another order
    assert same(list(PackedInfoList.pack(mixed)), mixed)
    assert list(PackedInfoList.pack([])) == []
    with pytest.raises(IndexError, match='out of range for 2 infos'):
        packed[2]
    shared = pack_db_infos(dict(one=infos, two=mixed))
    assert same(list(pickle.loads(ForkingPickler.dumps(shared))['two']),
                mixed)


@pytest.fixture(scope='module')
def tiled_info_path(db_sampler_cfg, tmp_path_factory):
    with open(db_sampler_cfg['info_path'], 'rb') as f:
        blob = f.read()
    tiled = {}
    for _ in range(TILES):  # new objects each time, the same files
        for name, infos in pickle.loads(blob).items():
            tiled.setdefault(name, []).extend(infos)
    path = tmp_path_factory.mktemp('db') / 'dbinfos_tiled.pkl'
    path.write_bytes(pickle.dumps(tiled))
    return str(path)


def test_pickled_sampler_does_not_grow_with_the_database(
        db_sampler_cfg, tiled_info_path):
    small = _build(db_sampler_cfg)
    big = _build(db_sampler_cfg, info_path=tiled_info_path)
    by_value = _build(db_sampler_cfg, info_path=tiled_info_path,
                      share_infos=False)
    sizes = [len(ForkingPickler.dumps(s)) for s in (small, big, by_value)]
    assert sizes[1] < sizes[0] + 2048, sizes  # the lengths' digits
    assert sizes[1] * 10 < sizes[2], sizes
    # What a spawn worker unpickles draws as the original does.
    clone = pickle.loads(ForkingPickler.dumps(big))
    boxes = np.zeros((0, 9), dtype=np.float32)
    for step in range(3):
        state = np.random.get_state()
        mine = big.sample_objects(boxes, np.zeros(0, dtype=np.int64))
        np.random.set_state(state)
        theirs = clone.sample_objects(boxes, np.zeros(0, dtype=np.int64))
        assert same(mine, theirs), step


def test_a_reshuffled_order_pickles_by_value(db_sampler_cfg):
    sampler = _build(db_sampler_cfg)
    name, each = next(iter(sampler.sampler_dict.items()))
    first = each._indices.copy()
    each.sample(each._example_num)  # to the end: reshuffled
    assert not np.array_equal(each._indices, first)
    clone = pickle.loads(ForkingPickler.dumps(each))
    assert np.array_equal(clone._indices, each._indices), name


@pytest.mark.launch  # spawn workers: fresh interpreters
def test_spawn_workers_load_the_samples_of_this_process(nus_synthetic):
    cfg = redirect_data_root(load_config(str(PILLAR02)), nus_synthetic)
    init_default_scope('mmdet3d')
    dataset = DATASETS.build(cfg.train_dataloader.dataset)
    seed_samples(dataset)  # each sample's draws from its own key
    keys = [SampleKey(i, seed=5, epoch=0, position=p)
            for p, i in enumerate([4, 1, 9, 4])]

    def points(workers):
        loader = DataLoader(dataset, batch_size=2, sampler=keys,
                            num_workers=workers, collate_fn=pseudo_collate,
                            multiprocessing_context='spawn' if workers
                            else None)
        return [[p.numpy().tobytes() for p in batch['inputs']['points']]
                for batch in loader]

    assert points(0) == points(1)
    assert len(ForkingPickler.dumps(dataset)) < 2**20
