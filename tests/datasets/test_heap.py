"""The C heap of the processes that hold datasets and load samples
(``datasets/heap.py``).

A load run in its own arena (``run_in_own_arena``) leaves no free chunks
in the main heap, which the main thread and forked DataLoader workers
allocate from; the same load in the main heap leaves ~110 MB there
(checked in a fresh interpreter, marker ``launch``: glibc's own account,
``malloc_info``, of its main arena). The runner's workers freeze what they
inherited from the cyclic collector."""
import ctypes
import gc
import json
import multiprocessing
import os
import re
import tempfile
import threading

import numpy as np
import pytest
from torch.utils.data import DataLoader, Dataset

from projects.mmdet3d_plugin.datasets.heap import (frozen_heap_worker_init,
                                                   release_freed_memory,
                                                   run_in_own_arena)
from projects.mmdet3d_plugin.engine.runner import PluginRunner


def load_then_pack() -> np.ndarray:
    """A database's load as the packing leaves it: ~110 MB of small heap
    chunks freed below one that survives."""
    transient = [np.ones(64) for _ in range(200_000)]
    survivor = np.ones(64)  # allocated above them
    del transient
    return survivor


def main_heap_free_bytes() -> int:
    """Free bytes in glibc's main arena (``malloc_info``'s heap 0)."""
    libc = ctypes.CDLL(None)
    libc.fopen.restype = ctypes.c_void_p
    libc.malloc_info.argtypes = [ctypes.c_int, ctypes.c_void_p]
    libc.fclose.argtypes = [ctypes.c_void_p]
    fd, path = tempfile.mkstemp(suffix='.xml')
    os.close(fd)
    try:
        stream = libc.fopen(path.encode(), b'w')
        libc.malloc_info(0, stream)
        libc.fclose(stream)
        with open(path) as f:
            xml = f.read()
    finally:
        os.remove(path)
    main = re.search(r'<heap nr="0">(.*?)</heap>', xml, re.S).group(1)
    return sum(int(size) for size in re.findall(
        r'<total type="(?:fast|rest)" count="\d+" size="(\d+)"', main))


def loads_then_main_heap(out: str) -> None:
    """In a fresh interpreter: the main heap's free bytes before any load,
    after a load in its own arena, then after the same load in it."""
    free = {'before': main_heap_free_bytes()}
    survivors = [run_in_own_arena(load_then_pack)]
    free['own_arena'] = main_heap_free_bytes()
    survivors.append(load_then_pack())
    release_freed_memory()
    free['main_heap'] = main_heap_free_bytes()
    with open(out, 'w') as f:
        json.dump(free, f)


@pytest.mark.launch  # a fresh interpreter: a heap no earlier test used
def test_a_load_in_its_own_arena_leaves_the_main_heap_no_holes(tmp_path):
    out = str(tmp_path / 'free.json')
    child = multiprocessing.get_context('spawn').Process(
        target=loads_then_main_heap, args=(out, ))
    child.start()
    child.join(300)
    assert child.exitcode == 0
    with open(out) as f:
        free = json.load(f)
    assert free['own_arena'] - free['before'] < 8 << 20, free
    # The same load in the main heap: a hole fork workers would fill.
    assert free['main_heap'] - free['own_arena'] > 80 << 20, free


def test_run_in_own_arena_returns_and_raises_as_a_call():
    assert run_in_own_arena(threading.current_thread) is not \
        threading.main_thread()
    assert run_in_own_arena(int, '11', base=2) == 3

    def fails():
        raise KeyError('ann_file')

    with pytest.raises(KeyError, match='ann_file') as raised:
        run_in_own_arena(fails)
    assert raised.traceback[-1].name == 'fails'


class FrozenCount(Dataset):

    def __len__(self) -> int:
        return 2

    def __getitem__(self, index: int) -> int:
        return gc.get_freeze_count()


def test_runner_workers_freeze_what_they_inherited():
    frozen_here = gc.get_freeze_count()
    loader = PluginRunner.build_dataloader(dict(
        dataset=FrozenCount(), batch_size=1, num_workers=1,
        multiprocessing_context='fork',
        collate_fn=dict(type='pseudo_collate'),
        sampler=dict(type='DefaultSampler', shuffle=False)))
    # Everything the worker inherited (this process's objects) is frozen.
    assert min(batch[0] for batch in loader) > frozen_here + 10_000
    plain = DataLoader(FrozenCount(), batch_size=1, num_workers=1,
                       multiprocessing_context='fork',
                       collate_fn=lambda batch: batch)
    assert max(batch[0] for batch in plain) == frozen_here


def test_worker_init_is_wrapped_once_and_runs_the_loader_s_own():
    seen = []
    init = frozen_heap_worker_init(seen.append)
    assert frozen_heap_worker_init(init) is init
    init(3)
    assert seen == [3]
    assert release_freed_memory() is True  # glibc here
