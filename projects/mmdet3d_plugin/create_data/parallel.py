"""Run a phase's missing shards over worker processes, with one progress
bar (samples/s and ETA: mmengine's ``ProgressBar``).

The workers are forked after the phase's state is built (the devkit's
tables, the infos, the imports, the compiled numba kernel), so they start
in milliseconds and share it copy-on-write; each writes its shard itself
(:class:`~.shards.ShardStore`) and returns only how many samples it did.
A worker's error stops the phase and is raised in the parent, before any
product is written. Workers die with the parent (``PR_SET_PDEATHSIG``),
so a killed run leaves no process writing behind it.
"""
import ctypes
import gc
import multiprocessing
import signal
import sys
import threading
import time
from typing import Callable, List, Sequence, Tuple

from mmengine.utils import ProgressBar

_TASK: Callable[[int], int] = None


def _die_with_parent() -> None:
    """A pool worker's start: SIGTERM ends it, and so does the parent's
    death. ``Pool.terminate``, which the pool's ``with`` calls, ends the
    workers with SIGTERM; a Python handler inherited from the parent (a
    ``PreemptionHook`` of an earlier run in the same process that raised
    before ``after_run``) kept a worker waiting on the task queue's lock and
    the parent in ``join`` (seen twice in the suite on torch 2.1.2: the
    worker's ``/proc/PID/status`` had SIGTERM caught)."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    try:
        libc = ctypes.CDLL('libc.so.6', use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _run(index: int) -> int:
    return _TASK(index)


def run_shards(title: str, task: Callable[[int], int],
               shards: Sequence[int], sizes: Sequence[int], workers: int,
               total: int) -> float:
    """Run ``task(shard)`` (which writes the shard and returns its sample
    count) for each of ``shards``; ``sizes[i]`` is shard ``shards[i]``'s
    sample count, ``total`` the phase's samples (for the resume line).

    Returns:
        float: The phase's wall time in seconds.
    """
    start = time.perf_counter()
    todo = sum(sizes)
    if todo < total:
        print(f'{title}: {total - todo} of {total} samples done by an '
              f'earlier run; {todo} to go in {len(shards)} shards')
    else:
        print(f'{title}: {total} samples in {len(shards)} shards, '
              f'{workers} worker(s)')
    sys.stdout.flush()
    if not shards:
        return 0.0
    bar = ProgressBar(todo)
    try:
        _run_all(task, shards, workers, bar)
    finally:
        sys.stdout.write('\n')  # end the bar's line (before an error too)
        sys.stdout.flush()
    return time.perf_counter() - start


def _thread_count() -> int:
    """This process's Python threads, those started outside ``threading``
    too (pytest-xdist's execnet starts its own with ``_thread``); native
    ones (OpenMP, BLAS) hold no interpreter lock and do not count."""
    return max(len(sys._current_frames()), threading.active_count())


def _run_all(task, shards, workers, bar) -> None:
    """The shards in this process (one worker or one shard) or in a pool
    of forked workers, the bar updated as each finishes."""
    global _TASK
    threads = _thread_count()
    if workers > 1 and threads > 1:
        # CPython 3.11 before 3.11.10 (gh-112275): a child forked while
        # another thread runs can deadlock right after fork().
        print(f'create_data: this process runs {threads} '
              'threads (a test runner, a library caller); forking workers '
              'could deadlock (CPython gh-112275), so the shards run in '
              'this process; run tools/create_data.py for --workers')
        workers = 1
    # The parent's objects (the devkit's tables, torch's) out of the
    # collector's sight: a forked worker's collections would otherwise
    # touch, and so copy, every page of them, and in this process each
    # full collection would walk them all again (the infos phase with
    # --workers 1 on the benchmark root: 8.4 ms a sample, 4.0 frozen).
    gc.freeze()
    try:
        if workers <= 1 or len(shards) == 1:
            for index in shards:
                bar.update(task(index))
            return
        _TASK = task
        ctx = multiprocessing.get_context('fork')
        with ctx.Pool(min(workers, len(shards)),
                      initializer=_die_with_parent) as pool:
            for done in pool.imap_unordered(_run, shards):
                bar.update(done)
    finally:
        _TASK = None
        gc.unfreeze()


def pending(done: List[int], ranges: Sequence[Tuple[int, int]]):
    """The shards not in ``done`` and their sizes."""
    finished = set(done)
    shards = [i for i in range(len(ranges)) if i not in finished]
    return shards, [ranges[i][1] - ranges[i][0] for i in shards]
