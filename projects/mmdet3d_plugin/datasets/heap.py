"""The C heap of the processes that hold datasets and load samples.

glibc's ``malloc`` keeps freed memory for reuse. These cases turn that
into memory a process holds for nothing:

- a process that freed many small objects (a GT database of dicts, once
  packed) keeps the holes they leave: :func:`release_freed_memory` gives
  the free pages back (``malloc_trim``);
- those holes stay in the heap's address space, below what survived: a
  DataLoader worker forked from that process serves its arrays from them,
  and every page it touches there becomes its own and stays so (freed
  chunks inside the heap are not given back). A fork worker of the
  pillar02 pipeline grew from ~30 MB to 105-140 MB over its first 100-200
  samples on a trainval-size GT database (the parent's heap: 302 MB, 116
  MB of it free), and a forked process allocating arrays grew by 182 MB
  after the parent loaded 28,130 nuScenes infos. :func:`run_in_own_arena`
  runs such a load in a short-lived thread: glibc gives a new thread an
  arena of its own, so the transient objects are allocated and freed
  there and the main heap, which the main thread and forked workers
  allocate from, keeps no holes (measured with every array mapped, see
  below: the workers then stayed at ~30 MB instead of 105-140, the
  forked process grew by 1 MB instead of 182);
- a DataLoader worker allocates and frees arrays of millions of points per
  sample. glibc's threshold for mapping an array rises to the largest one
  freed, so from its first samples on a worker serves them from its heap,
  which holds about the largest sample's arrays: it rises and falls with
  the samples (the top is given back when its free part exceeds twice the
  threshold) and does not creep (a pillar02 fork worker: 68-103 MB after
  250 samples each, 70-83 MB after 750). Fixing the threshold at 128 KiB
  (every point cloud mapped and given back) kept the workers flat but
  made each array fresh pages: 4,900 page faults a sample instead of 100,
  ~36 ms of CPU a sample instead of ~24. The workers keep glibc's
  default;
- a worker's cyclic garbage collector traverses every container it holds,
  writing to each one's header: under fork (and forkserver) that copies
  every inherited page holding one. The runner's ``worker_init_fn``
  (:func:`frozen_heap_worker_init`) freezes what the worker inherited
  (``gc.freeze()``: moved out of the collector's generations in O(1));
  forkserver workers' private memory
  then stayed flat where it grew by about 100 MB each over 250 samples.

``malloc_trim`` is a no-op where the C library lacks it (not glibc).
"""
import ctypes
import functools
import gc
import threading
from typing import Any, Callable, Optional, TypeVar

T = TypeVar('T')


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


def run_in_own_arena(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """Run ``fn(*args, **kwargs)`` in a short-lived thread and return what
    it returns (or raise what it raises, with its traceback); then give
    the pages it freed back to the system (:func:`release_freed_memory`).

    glibc gives a new thread a malloc arena of its own (up to ``8 x cores``
    arenas, ``MALLOC_ARENA_MAX``): what ``fn`` allocates and frees is freed
    there, not in the main heap that forked DataLoader workers allocate
    from (see the module's notes). Where the thread shares the main arena
    (the arenas are used up, another C library), it behaves as a call.
    The thread is joined before this returns; Ctrl-C interrupts the wait
    (the thread is a daemon and ends with the process).
    """
    outcome = {}

    def target() -> None:
        try:
            outcome['value'] = fn(*args, **kwargs)
        except BaseException as error:  # re-raised in the caller
            outcome['error'] = error

    thread = threading.Thread(
        target=target, daemon=True,
        name=f'own-arena:{getattr(fn, "__qualname__", fn)}')
    thread.start()
    thread.join()
    release_freed_memory()  # what the load freed, in its arena
    if 'error' in outcome:
        error = outcome.pop('error')
        try:
            raise error
        finally:
            del error  # no reference cycle through this frame
    return outcome['value']


def _frozen_then(init_fn: Optional[Callable], worker_id: int) -> None:
    # What the worker inherited is never traversed by the cyclic collector
    # (each traversal writes to every object's header: under fork, a copy
    # of every page holding one). O(1): the generations' lists are moved.
    gc.freeze()
    if init_fn is not None:
        init_fn(worker_id)


def frozen_heap_worker_init(init_fn: Optional[Callable]) -> Callable:
    """A DataLoader ``worker_init_fn`` that freezes the objects the worker
    inherited (``gc.freeze()``), then runs ``init_fn``; picklable for
    spawn and forkserver workers. Given one of its own results, returns it
    unchanged."""
    if isinstance(init_fn, functools.partial) and \
            init_fn.func is _frozen_then:
        return init_fn
    return functools.partial(_frozen_then, init_fn)


__all__ = ['frozen_heap_worker_init', 'release_freed_memory',
           'run_in_own_arena']
