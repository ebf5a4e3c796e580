"""DataLoader workers of the plugin's runner give large arrays back to
the system when they are freed (``datasets/heap.py``): a worker that
allocates and frees a 16 MB array per sample ends as it started, where a
worker of a plain DataLoader keeps the heap it grew. Spawn workers
(fresh interpreters: marker ``launch``): a forked worker's heap is its
parent's, whose free chunks, of any size, serve the first arrays."""
import numpy as np
import pytest
from mmengine.dataset import pseudo_collate
from torch.utils.data import DataLoader, Dataset

from projects.mmdet3d_plugin.datasets.heap import (flat_heap_worker_init,
                                                   release_freed_memory)
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
