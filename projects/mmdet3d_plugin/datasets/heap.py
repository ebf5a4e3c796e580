"""The C heap of the processes that hold datasets and load samples.

glibc's ``malloc`` keeps freed memory for reuse. Two cases turn that into
memory a process holds for nothing:

- a process that freed many small objects (a GT database of dicts, once
  packed) keeps the holes they leave: :func:`release_freed_memory` gives
  the free pages back (``malloc_trim``);
- a DataLoader worker allocates and frees arrays of millions of points per
  sample. glibc maps an array above its threshold (128 KiB at start) and
  unmaps it when freed, but each such free raises the threshold to the
  freed size, so later arrays come from the heap, which keeps the highest
  sum it reached: the worker's private memory rises and falls with the
  largest samples seen (+25 MB over 600 samples of the pillar02 pipeline
  here). :func:`flat_heap_worker_init` fixes the threshold in each worker
  (``mallopt(M_MMAP_THRESHOLD, 128 KiB)``): large arrays that no free
  chunk of the heap holds are mapped and given back every time, and the
  worker's memory stays flat after its first samples (a forked worker's
  heap is its parent's: its free chunks serve the first arrays);
- a worker's cyclic garbage collector traverses every container it holds,
  writing to each one's header: under fork (and forkserver) that copies
  every inherited page holding one. The same ``worker_init_fn`` freezes
  what the worker inherited (``gc.freeze()``: moved out of the
  collector's generations in O(1)); forkserver workers' private memory
  then stayed flat where it grew by about 100 MB each over 250 samples.

Both are no-ops where the C library lacks the functions (not glibc).
"""
import ctypes
import functools
import gc
from typing import Callable, Optional

#: ``M_MMAP_THRESHOLD`` of glibc's ``mallopt``, and its initial value.
M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD = 128 * 1024


def _libc():
    try:
        return ctypes.CDLL(None)
    except OSError:
        return None


def release_freed_memory() -> bool:
    """Give the C heap's free pages back to the system (``malloc_trim``).

    Returns:
        bool: False where the C library has no ``malloc_trim``.
    """
    trim = getattr(_libc(), 'malloc_trim', None)
    if trim is None:
        return False
    trim(0)
    return True


def fix_mmap_threshold() -> bool:
    """Map every allocation above 128 KiB and unmap it when freed, in
    this process, from now on (glibc's threshold no longer grows).

    Returns:
        bool: False where the C library has no ``mallopt``.
    """
    mallopt = getattr(_libc(), 'mallopt', None)
    if mallopt is None:
        return False
    return bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD))


def _fixed_then(init_fn: Optional[Callable], worker_id: int) -> None:
    fix_mmap_threshold()
    # What the worker inherited is never traversed by the cyclic collector
    # (each traversal writes to every object's header: under fork, a copy
    # of every page holding one). O(1): the generations' lists are moved.
    gc.freeze()
    if init_fn is not None:
        init_fn(worker_id)


def flat_heap_worker_init(init_fn: Optional[Callable]) -> Callable:
    """A DataLoader ``worker_init_fn`` that fixes the worker's mmap
    threshold (:func:`fix_mmap_threshold`) and freezes the objects it
    inherited (``gc.freeze()``), then runs ``init_fn``;
    picklable for spawn and forkserver workers. Given one of its own
    results, returns it unchanged."""
    if isinstance(init_fn, functools.partial) and init_fn.func is _fixed_then:
        return init_fn
    return functools.partial(_fixed_then, init_fn)


__all__ = ['fix_mmap_threshold', 'flat_heap_worker_init',
           'release_freed_memory']
