"""Doctor checks of shared memory and host RAM for the run's DataLoaders.

DataLoader workers hand their batches to the main process through
``/dev/shm`` (torch puts every tensor of a batch into shared memory). Each
process of a node keeps up to ``num_workers x prefetch_factor`` batches
there; when ``/dev/shm`` fills up, a worker dies of SIGBUS ("bus error") or
fails with "No space left on device". Docker gives a container 64 MB unless
it is started with ``--shm-size`` or ``--ipc=host``. Host RAM runs out
instead when every process of the node starts many workers, each holding
its own copy of the dataset infos: the kernel's out-of-memory killer then
ends a rank or a worker with SIGKILL.

Both checks use what ``data.first_batch`` measured on this machine: the
bytes of tensors in its first batch, and the resident memory of its live
workers and of this process. The decisions are :func:`plan_shm` and
:func:`plan_host_ram`, functions of plain numbers.
"""
import multiprocessing
import os
import shutil
from typing import Any, Iterable, Optional

import numpy as np
import psutil
import torch

from ..context import CheckResult, DoctorContext, failed, passed, warned

#: Where torch's shared-memory batches live.
SHM_DIR = '/dev/shm'
#: torch's ``prefetch_factor`` when workers are used and none is set.
DEFAULT_PREFETCH = 2
#: Share of free ``/dev/shm`` (or available RAM) the run may plan to use
#: before the check warns.
HEADROOM = 0.5
SHARED_INFOS = ("keep the infos in shared memory: type='SafeNuScenesDataset'"
                ', serialize_data=True')


def _size(num_bytes: float) -> str:
    for unit, scale in (('GiB', 2**30), ('MiB', 2**20), ('KiB', 2**10)):
        if num_bytes >= scale:
            return f'{num_bytes / scale:.1f} {unit}'
    return f'{int(num_bytes)} B'


def tensor_bytes(batch: Any, max_depth: int = 8) -> int:
    """Bytes of the tensor storages in ``batch`` (each storage once).

    Walks dicts, lists, tuples and the attributes of objects (data samples,
    box and point structures) down to ``max_depth``. These are the bytes a
    DataLoader worker moves into shared memory for the batch.
    """
    storages, visited = set(), set()

    def walk(obj: Any, depth: int) -> int:
        if depth > max_depth or id(obj) in visited:
            return 0
        visited.add(id(obj))
        if isinstance(obj, torch.Tensor):
            storage = obj.untyped_storage()
            key = (storage.data_ptr(), storage.nbytes())
            if key in storages:
                return 0
            storages.add(key)
            return storage.nbytes()
        if isinstance(obj, (str, bytes, int, float, bool, np.ndarray)) or \
                obj is None:
            return 0  # numpy arrays travel pickled, not in /dev/shm
        if isinstance(obj, dict):
            children: Iterable = obj.values()
        elif isinstance(obj, (list, tuple, set)):
            children = obj
        else:
            children = getattr(obj, '__dict__', {}).values()
        return sum(walk(child, depth + 1) for child in children)

    return walk(batch, 0)


def _loader_numbers(ctx: DoctorContext, split: str):
    loader = ctx.cfg.get(f'{split}_dataloader') or {}
    workers = int(loader.get('num_workers', 0) or 0)
    prefetch = loader.get('prefetch_factor') or DEFAULT_PREFETCH
    return workers, int(prefetch)


def _procs_per_node(ctx: DoctorContext) -> int:
    opts = ctx.options
    return max(opts.world_size // max(int(opts.nnodes), 1), 1)


def plan_shm(free_bytes: Optional[int], procs: int, workers: int,
             prefetch: int, batch_bytes: int) -> CheckResult:
    """Whether the batches in flight fit in free ``/dev/shm``.

    Args:
        free_bytes (int, optional): Free bytes of ``/dev/shm``; None if it
            does not exist.
        procs (int): Training processes on this node.
        workers (int): ``train_dataloader.num_workers`` per process.
        prefetch (int): ``prefetch_factor``.
        batch_bytes (int): Tensor bytes of one batch.

    Returns:
        CheckResult: The ``data.shm`` line.
    """
    check = 'data.shm'
    if workers == 0:
        return passed(check, 'num_workers=0: batches are made in the '
                      'training process and do not pass through /dev/shm')
    need = procs * workers * prefetch * batch_bytes
    formula = (f'{procs} process(es) x {workers} worker(s) x prefetch_factor '
               f'{prefetch} x {_size(batch_bytes)} per batch = {_size(need)}')
    if free_bytes is None:
        return warned(
            check, f'{SHM_DIR} does not exist here; the workers need about '
            f'{formula} of shared memory', 'run on Linux with /dev/shm, or '
            'set train_dataloader.num_workers=0')
    detail = f'{formula} in flight; {SHM_DIR} has {_size(free_bytes)} free'
    if need <= free_bytes * HEADROOM:
        return passed(check, detail)
    per_worker = procs * prefetch * batch_bytes
    fit_workers = int(free_bytes * HEADROOM // per_worker) \
        if per_worker else workers
    fit_prefetch = int(free_bytes * HEADROOM //
                       (procs * workers * batch_bytes)) if batch_bytes else 0
    options = []
    if 0 < fit_workers < workers:
        options.append(f'train_dataloader.num_workers={fit_workers}')
    if 0 < fit_prefetch < prefetch:
        options.append(f'train_dataloader.prefetch_factor={fit_prefetch}')
    shm_size = max(2 * need, 1 << 30)
    fix = (f'give the container more shared memory: docker run '
           f'--shm-size={-(-shm_size // 2**30)}g (or --ipc=host; Docker\'s '
           'default is 64 MB)' +
           (f', or lower {" / ".join(options)}' if options else
            ', or train_dataloader.num_workers=0'))
    if need > free_bytes:
        return failed(
            check, detail + ': workers will die of SIGBUS ("bus error") '
            'or fail with "No space left on device"', fix)
    return warned(check, detail + f' (over {HEADROOM:.0%}: other users of '
                  f'{SHM_DIR}, or bigger batches, would fill it)', fix)


def plan_host_ram(available_bytes: int, procs: int, workers: int,
                  worker_rss: int, main_rss: int) -> CheckResult:
    """Whether the processes of the node fit in the host's RAM.

    Args:
        available_bytes (int): RAM available to the run.
        procs (int): Training processes on this node.
        workers (int): DataLoader workers per process (train, plus val
            while it runs).
        worker_rss (int): Resident bytes of one worker.
        main_rss (int): Resident bytes of a training process (data only:
            the model is not built yet when this is measured).

    Returns:
        CheckResult: The ``data.host_ram`` line.
    """
    check = 'data.host_ram'
    need = procs * (main_rss + workers * worker_rss)
    detail = (f'{procs} process(es) x ({_size(main_rss)} + {workers} '
              f'worker(s) x {_size(worker_rss)}) = {_size(need)} resident, '
              f'{_size(available_bytes)} available')
    if need <= available_bytes * HEADROOM:
        return passed(check, detail)
    budget = available_bytes * HEADROOM / procs - main_rss
    fit = int(budget // worker_rss) if worker_rss else workers
    fix = (f'lower train_dataloader.num_workers (about {fit} fit)'
           if 0 < fit < workers else
           'start fewer processes per node or use a host with more RAM')
    fix += (f'; {SHARED_INFOS} (each worker then maps the infos instead of '
            'holding a copy); lower prefetch_factor')
    if need > available_bytes:
        return failed(
            check, detail + ': the out-of-memory killer will end a rank or '
            'a worker with SIGKILL (exit code -9)', fix)
    return warned(check, detail + f' (over {HEADROOM:.0%}: workers grow as '
                  'they touch the infos, fork copy-on-write)', fix)


def shm_free_bytes() -> Optional[int]:
    """Free bytes of ``/dev/shm``; None if there is none."""
    if not os.path.isdir(SHM_DIR):
        return None
    return shutil.disk_usage(SHM_DIR).free


def _rss(proc: psutil.Process) -> int:
    try:
        return proc.memory_info().rss
    except psutil.Error:
        return 0


def _uss(proc: psutil.Process) -> int:
    try:
        return proc.memory_full_info().uss
    except psutil.Error:
        return 0


def _live_workers():
    return [psutil.Process(p.pid) for p in multiprocessing.active_children()
            if p.pid is not None]


def check_shm(ctx: DoctorContext,
              free_bytes: Optional[int] = None) -> CheckResult:
    """``/dev/shm`` holds the batches the node's workers keep in flight.

    Args:
        ctx (DoctorContext): After ``data.first_batch``.
        free_bytes (int, optional): Free bytes of ``/dev/shm``. Defaults to
            None: measured.
    """
    workers, prefetch = _loader_numbers(ctx, 'train')
    batch = ctx.artifacts.get('first_batch')
    batch_bytes = tensor_bytes(batch) if batch is not None else 0
    if free_bytes is None:
        free_bytes = shm_free_bytes()
    return plan_shm(free_bytes, _procs_per_node(ctx), workers, prefetch,
                    batch_bytes)


def check_host_ram(ctx: DoctorContext,
                   available_bytes: Optional[int] = None) -> CheckResult:
    """Host RAM holds every process of the node and its workers.

    Args:
        ctx (DoctorContext): After ``data.first_batch``, whose workers are
            alive.
        available_bytes (int, optional): RAM available to the run. Defaults
            to None: ``MemAvailable`` plus what this process and its workers
            free when the doctor exits.
    """
    workers, _ = _loader_numbers(ctx, 'train')
    val_workers, _ = _loader_numbers(ctx, 'val')
    if ctx.cfg.get('val_cfg') and ctx.cfg.get('val_dataloader'):
        workers += val_workers
    me = psutil.Process()
    live = _live_workers()
    if not live and workers:
        return warned(
            'data.host_ram', 'no live DataLoader worker to measure',
            'run the doctor with train_dataloader.num_workers >= 1')
    worker_rss = max((_rss(p) for p in live), default=0)
    main_rss = _rss(me)
    if available_bytes is None:
        available_bytes = psutil.virtual_memory().available + _uss(me) + \
            sum(_uss(p) for p in live)
    return plan_host_ram(available_bytes, _procs_per_node(ctx), workers,
                         worker_rss, main_rss)
