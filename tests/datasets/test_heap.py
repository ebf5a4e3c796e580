"""DataLoader workers of the plugin's runner give large arrays back to
the system when they are freed (``datasets/heap.py``): a worker that
allocates and frees a 16 MB array per sample ends as it started, where a
worker of a plain DataLoader keeps the heap it grew. Spawn workers
(fresh interpreters: marker ``launch``): a forked worker's heap is its
parent's, whose free chunks, of any size, serve the first arrays.
A load run in its own arena (``run_in_own_arena``) leaves the parent no
such chunks: checked in a fresh interpreter whose fork workers follow a
load in its own arena, then a load in the main heap."""
import json
import multiprocessing
import threading

import numpy as np
import pytest
from mmengine.dataset import pseudo_collate
from torch.utils.data import DataLoader, Dataset

from projects.mmdet3d_plugin.datasets.heap import (flat_heap_worker_init,
                                                   release_freed_memory,
                                                   run_in_own_arena)
from projects.mmdet3d_plugin.engine.runner import PluginRunner

ARRAY_BYTES = 16 << 20


def private_bytes() -> int:
    fields = {}
    with open('/proc/self/smaps_rollup') as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 3 and parts[-1] == 'kB':
                fields[parts[0].rstrip(':')] = int(parts[1]) << 10
    return fields['Private_Clean'] + fields['Private_Dirty']


class FreesLargeArrays(Dataset):
    """Each sample: a large array written, summed and freed (as a point
    cloud is); returns this process's private memory before and after."""

    def __len__(self) -> int:
        return 6

    def __getitem__(self, index: int) -> dict:
        before = private_bytes()
        points = np.ones(ARRAY_BYTES // 8)
        total = float(points.sum())
        del points
        assert total == ARRAY_BYTES // 8
        return dict(before=before, after=private_bytes())


def held_after_samples(loader) -> int:
    """How much more the worker holds after its samples than before its
    first (the heap it inherited may have been grown by the parent)."""
    batches = list(loader)  # of one sample each
    return max(b['after'][0] for b in batches) - batches[0]['before'][0]


@pytest.mark.launch  # spawn workers: fresh interpreters
def test_runner_workers_give_large_arrays_back():
    loader = PluginRunner.build_dataloader(dict(
        dataset=FreesLargeArrays(), batch_size=1, num_workers=1,
        multiprocessing_context='spawn',
        collate_fn=dict(type='pseudo_collate'),
        sampler=dict(type='DefaultSampler', shuffle=False)))
    assert held_after_samples(loader) < ARRAY_BYTES // 4
    # The same worker without the fixed threshold keeps the array's pages.
    plain = DataLoader(FreesLargeArrays(), batch_size=1, num_workers=1,
                       multiprocessing_context='spawn',
                       collate_fn=pseudo_collate)
    assert held_after_samples(plain) > ARRAY_BYTES // 2


def test_worker_init_is_wrapped_once_and_runs_the_loader_s_own():
    seen = []
    init = flat_heap_worker_init(seen.append)
    assert flat_heap_worker_init(init) is init
    init(3)
    assert seen == [3]
    assert release_freed_memory() is True  # glibc here


def load_then_pack() -> np.ndarray:
    """A database's load as the packing leaves it: ~110 MB of small heap
    chunks freed below one that survives."""
    transient = [np.ones(64) for _ in range(200_000)]
    survivor = np.ones(64)  # allocated above them
    del transient
    return survivor


def fork_worker_keeps() -> int:
    loader = PluginRunner.build_dataloader(dict(
        dataset=FreesLargeArrays(), batch_size=1, num_workers=1,
        multiprocessing_context='fork',
        collate_fn=dict(type='pseudo_collate'),
        sampler=dict(type='DefaultSampler', shuffle=False)))
    return held_after_samples(loader)


def loads_then_fork_workers(out: str) -> None:
    """In a fresh interpreter: what a fork worker keeps after a load in
    its own arena, then after the same load in the main heap."""
    kept = {}
    survivors = [run_in_own_arena(load_then_pack)]
    release_freed_memory()
    kept['own_arena'] = fork_worker_keeps()
    survivors.append(load_then_pack())
    release_freed_memory()
    kept['main_heap'] = fork_worker_keeps()
    with open(out, 'w') as f:
        json.dump(kept, f)


@pytest.mark.launch  # a fresh interpreter: a heap no earlier test used
def test_a_load_in_its_own_arena_leaves_fork_workers_no_holes(tmp_path):
    out = str(tmp_path / 'kept.json')
    child = multiprocessing.get_context('spawn').Process(
        target=loads_then_fork_workers, args=(out, ))
    child.start()
    child.join(300)
    assert child.exitcode == 0
    with open(out) as f:
        kept = json.load(f)
    assert kept['own_arena'] < ARRAY_BYTES // 4, kept
    # The same load in the main heap: the worker's arrays fill its hole.
    assert kept['main_heap'] > ARRAY_BYTES // 2, kept


def test_run_in_own_arena_returns_and_raises_as_a_call():
    assert run_in_own_arena(threading.current_thread) is not \
        threading.main_thread()
    assert run_in_own_arena(int, '11', base=2) == 3

    def fails():
        raise KeyError('ann_file')

    with pytest.raises(KeyError, match='ann_file') as raised:
        run_in_own_arena(fails)
    assert raised.traceback[-1].name == 'fails'
