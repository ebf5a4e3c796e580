"""Serialized infos in shared memory: size, attachment and cleanup (the
owner killed, and a dead process, are processes forked from this one)."""
import gc
import multiprocessing
import os
import pickle
import signal
import time

import numpy as np
import pytest
from mmengine.registry import init_default_scope
from mmdet3d.datasets import NuScenesDataset

import projects.mmdet3d_plugin  # noqa: F401  registers the plugin
from projects.mmdet3d_plugin.datasets.safe_nuscenes_dataset import (
    SafeNuScenesDataset)
from projects.mmdet3d_plugin.datasets.shared_infos import (FILE_PREFIX,
                                                           SharedArrays,
                                                           info_file_dirs,
                                                           sweep_stale_files)
from tests.helpers.synthetic_infos import write_synthetic_infos

PREFIX = dict(pts='samples/LIDAR_TOP', sweeps='sweeps/LIDAR_TOP')
PIPELINE = [
    dict(type='LoadAnnotations3D', with_bbox_3d=True, with_label_3d=True),
    dict(type='Pack3DDetInputs', keys=['gt_bboxes_3d', 'gt_labels_3d']),
]


def _open_info_files(pid='self'):
    """Descriptors and mappings of ``pid`` that point at info files."""
    found = []
    fd_dir = f'/proc/{pid}/fd'
    for fd in os.listdir(fd_dir):
        try:
            target = os.readlink(os.path.join(fd_dir, fd))
        except OSError:
            continue
        if FILE_PREFIX in target:
            found.append(target)
    with open(f'/proc/{pid}/maps') as f:
        found += [line for line in f if FILE_PREFIX in line]
    return found


def _named_info_files():
    names = []
    for directory in info_file_dirs():
        if os.path.isdir(directory):
            names += [
                n for n in os.listdir(directory) if n.startswith(FILE_PREFIX)
            ]
    return names


@pytest.fixture(scope='module')
def info_files(tmp_path_factory):
    root = tmp_path_factory.mktemp('infos')
    return {
        n:
        write_synthetic_infos(str(root / f'{n}.pkl'),
                              n,
                              seed=n,
                              num_instances=5)
        for n in (4, 400)
    }


def _dataset(cls, ann_file, **kwargs):
    init_default_scope('mmdet3d')
    return cls(data_root='',
               ann_file=ann_file,
               data_prefix=PREFIX,
               pipeline=PIPELINE,
               **kwargs)


def test_pickled_size_does_not_grow_with_infos(info_files):
    ours = {
        n: len(pickle.dumps(_dataset(SafeNuScenesDataset, f)))
        for n, f in info_files.items()
    }
    stock = {
        n: len(pickle.dumps(_dataset(NuScenesDataset, f)))
        for n, f in info_files.items()
    }
    assert abs(ours[400] - ours[4]) < 1024, ours
    assert ours[400] < 16 * 1024, ours
    # The stock dataset carries its infos: the measure is not blind.
    assert stock[400] > 50 * stock[4], stock


def test_clone_reads_the_same_infos(info_files):
    dataset = _dataset(SafeNuScenesDataset, info_files[400])
    expected = [dataset.get_data_info(i) for i in (0, 199, 399)]
    private = dataset.data_bytes
    clone = pickle.loads(pickle.dumps(dataset))
    assert dataset.data_bytes is not private  # moved into shared memory
    assert np.array_equal(dataset.data_bytes, private)
    assert not clone.data_bytes.flags.writeable
    for idx, info in zip((0, 199, 399), expected):
        got = clone.get_data_info(idx)
        assert got['token'] == info['token']
        assert np.array_equal(got['ann_info']['gt_labels_3d'],
                              info['ann_info']['gt_labels_3d'])


def test_subset_is_shared_again(info_files):
    dataset = _dataset(SafeNuScenesDataset, info_files[400])
    pickle.dumps(dataset)
    dataset.get_subset_([1, 2, 3])
    clone = pickle.loads(pickle.dumps(dataset))
    assert len(clone) == 3
    assert clone.get_data_info(0)['token'] == dataset.get_data_info(0)['token']


def test_nothing_left_after_release(info_files):
    dataset = _dataset(SafeNuScenesDataset, info_files[4])
    clone = pickle.loads(pickle.dumps(dataset))
    assert _open_info_files(), 'infos were not moved to shared memory'
    del dataset, clone
    gc.collect()
    assert _open_info_files() == []
    assert _named_info_files() == []


def test_unpickling_after_release_says_why(info_files):
    dataset = _dataset(SafeNuScenesDataset, info_files[4])
    payload = pickle.dumps(dataset)
    del dataset
    gc.collect()
    with pytest.raises(RuntimeError, match='SharedArrays: .*process'):
        pickle.loads(payload)


def test_serialize_data_false_pickles_by_value(info_files):
    dataset = _dataset(SafeNuScenesDataset,
                       info_files[4],
                       serialize_data=False)
    clone = pickle.loads(pickle.dumps(dataset))
    assert len(clone.data_list) == 4
    assert _open_info_files() == []


def _hold_infos(ready) -> None:
    """A process that holds 64 MB of infos until it is killed."""
    shared = SharedArrays([np.ones(64 << 20, dtype=np.uint8)])  # noqa: F841
    ready.set()
    time.sleep(300)


def test_nothing_left_after_sigkill():
    # The owner, forked from this process, holds 64 MB of infos and is
    # killed without any cleanup.
    ctx = multiprocessing.get_context('fork')
    ready = ctx.Event()
    proc = ctx.Process(target=_hold_infos, args=(ready, ))
    proc.start()
    try:
        assert ready.wait(60)
        # Its own file (it also inherited this process's descriptors).
        held = [h for h in _open_info_files(proc.pid)
                if f'{FILE_PREFIX}{proc.pid}-' in h]
        assert held and all('(deleted)' in h for h in held), held
        assert not any(f'-{proc.pid}-' in n for n in _named_info_files())
    finally:
        proc.kill()
        proc.join(timeout=60)
    assert proc.exitcode == -signal.SIGKILL
    assert not any(f'-{proc.pid}-' in n for n in _named_info_files())
    # No process holds it any more, so the kernel has freed it.
    for pid in filter(str.isdigit, os.listdir('/proc')):
        try:
            links = _open_info_files(pid)
        except OSError:
            continue
        assert not any(f'-{proc.pid}-' in link for link in links)


def test_stale_files_of_dead_processes_are_swept(tmp_path):
    dead = os.fork()
    if dead == 0:  # a child that ends at once
        os._exit(0)
    os.waitpid(dead, 0)
    stale = tmp_path / f'{FILE_PREFIX}{dead}-abc'
    alive = tmp_path / f'{FILE_PREFIX}{os.getppid()}-def'
    mine = tmp_path / f'{FILE_PREFIX}{os.getpid()}-ghi'
    other = tmp_path / 'unrelated-file'
    for path in (stale, alive, mine, other):
        path.write_bytes(b'x')
    assert sweep_stale_files([str(tmp_path)]) == [str(stale)]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [alive.name, mine.name, other.name])


def test_shared_arrays_round_trip_dtypes_and_shapes():
    arrays = [
        np.arange(10, dtype=np.uint8),
        np.arange(12, dtype=np.int64).reshape(3, 4),
        np.zeros(0, dtype=np.float32)
    ]
    shared = SharedArrays(arrays)
    clone = pickle.loads(pickle.dumps(shared))
    for a, b in zip(arrays, clone.arrays):
        assert a.dtype == b.dtype and a.shape == b.shape
        assert np.array_equal(a, b)
    assert len(pickle.dumps(shared)) < 1024
