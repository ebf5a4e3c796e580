"""Which rank is the straggler, whether it is input- or compute-bound, and
the fix: a pure function of the per-rank figures, so it is tested alone.

A rank's figures (one dict per rank, means over a window of iterations,
in milliseconds):

- ``data_wait_ms``: its wait for the next batch (the DataLoader's
  ``next()``);
- ``compute_ms``: its own work on the batch up to the end of the forward
  pass and loss, without any wait for the other ranks;
- ``step_ms``: ``data_wait_ms + compute_ms``, the part of an iteration
  that is the rank's own;
- ``iter_ms``: the whole iteration as the rank lives it (the others' pace,
  once DDP's all-reduce has evened them out);
- ``num_workers``, ``batch_size``, ``host``, ``cpus``, ``local_world_size``:
  its DataLoader and where it runs.

The margin: rank ``r`` is slow when its ``step_ms`` exceeds ``ratio``
(1.5) times the median ``step_ms`` of the other ranks *and* that median by
at least ``min_ms`` (20 ms); the slowest such rank is the straggler. It is
``'input'``-bound when its lead over the others' medians lies more in
``data_wait_ms`` than in ``compute_ms``, else ``'compute'``-bound.
"""
import math
import statistics
from typing import Dict, List, Optional, Sequence

#: Default margin: the straggler's own step exceeds the median of the
#: others by this factor ...
RATIO = 1.5
#: ... and by at least this many milliseconds.
MIN_MS = 20.0
MEASURED = ('data_wait_ms', 'compute_ms', 'step_ms', 'iter_ms')


def margin_rule(ratio: float = RATIO, min_ms: float = MIN_MS) -> str:
    """The straggler margin in words (the report carries it)."""
    return (f'a rank is slow when its data wait + compute exceeds {ratio:g}x '
            f'the median of the other ranks and that median by >= '
            f'{min_ms:g} ms; the slowest such rank is the straggler')


def _median_of_others(ranks: Sequence[dict], index: int, key: str) -> float:
    return statistics.median(
        fig[key] for i, fig in enumerate(ranks) if i != index)


def _measured(fig: dict) -> bool:
    return all(isinstance(fig.get(k), (int, float)) for k in MEASURED)


def input_fix(fig: dict) -> dict:
    """The ``num_workers`` that would feed rank ``fig``'s step.

    The loader has ``step = iter_ms - data_wait_ms`` (the iteration
    without its wait for data) to make the next batch. One batch takes
    ``load`` to load: ``data_wait_ms`` itself without workers (the main
    process loads); with ``W`` workers, which in an input-bound steady
    state each deliver one batch every ``W`` iterations, ``W * iter_ms``.
    Workers needed: ``ceil(load / step)``.

    Args:
        fig (dict): The straggler's figures.

    Returns:
        dict: ``current_num_workers``, ``num_workers_needed``,
        ``load_ms_per_batch``, ``load_ms_per_sample``, ``step_ms`` (the
        step the loader must keep up with), ``config_line`` and ``hints``.
    """
    workers = int(fig.get('num_workers') or 0)
    batch = max(int(fig.get('batch_size') or 1), 1)
    step = max(fig['iter_ms'] - fig['data_wait_ms'], 1e-3)
    load = fig['data_wait_ms'] if workers == 0 else workers * fig['iter_ms']
    needed = max(1, math.ceil(load / step))
    if workers and needed <= workers:
        needed = workers + 1  # rounding: it is input-bound with these
    host = fig.get('host') or 'its host'
    hints = [
        f'set train_dataloader.num_workers={needed} (now {workers}) and '
        'persistent_workers=True; add one or two for jitter'
    ]
    cpus, local = fig.get('cpus'), fig.get('local_world_size') or 1
    if cpus and needed * local > cpus:
        hints.append(
            f'{needed} workers x {local} rank(s) is more than the {cpus} '
            f'CPUs of {host}: loading itself must get cheaper (lighter '
            'transforms, preprocessed point clouds, fewer sweeps)')
    hints += [
        '/dev/shm: workers hand batches over through shared memory; in a '
        'container give it room (docker run --shm-size=16g, or a '
        'Kubernetes emptyDir with medium: Memory); check df -h /dev/shm '
        f'on {host}',
        f'storage: loading takes ~{load / batch:.0f} ms per sample on '
        f'{host}; if the data lie on network storage, copy them to a local '
        'disk, and compare the read throughput of this host with the '
        "others' (a slower disk or a busier NFS mount makes one rank slow)",
    ]
    return dict(
        current_num_workers=workers,
        num_workers_needed=needed,
        load_ms_per_batch=round(load, 3),
        load_ms_per_sample=round(load / batch, 3),
        step_ms=round(step, 3),
        config_line=(f'train_dataloader = dict(num_workers={needed}, '
                     'persistent_workers=True)'),
        hints=hints)


def compute_fix(fig: dict, others_compute_ms: float) -> dict:
    """What to look at when rank ``fig`` computes slower than the others.

    Args:
        fig (dict): The straggler's figures.
        others_compute_ms (float): Median ``compute_ms`` of the others.

    Returns:
        dict: ``compute_ms``, ``others_compute_ms``, ``slowdown`` (ratio)
        and ``hints``.
    """
    where = f"rank {fig['rank']} on {fig.get('host') or 'its host'}"
    if fig.get('local_rank') is not None:
        where += f" (local rank {fig['local_rank']})"
    hints = [
        f'{where} needs {fig["compute_ms"]:.0f} ms for forward + loss, the '
        f'others {others_compute_ms:.0f} ms: compare its device with theirs',
        'GPU: clocks and throttling (nvidia-smi -q -d PERFORMANCE,CLOCK), '
        'other processes on that GPU (nvidia-smi), its PCIe / NVLink '
        'placement (nvidia-smi topo -m)',
        'CPU: OMP_NUM_THREADS and the CPU affinity of that rank, and '
        'DataLoader workers or other jobs competing with it for cores',
        'uneven work: samples with more points, voxels or boxes landing on '
        'that rank (the sampler, per-sample sizes)',
    ]
    return dict(
        compute_ms=round(fig['compute_ms'], 3),
        others_compute_ms=round(others_compute_ms, 3),
        slowdown=round(fig['compute_ms'] / max(others_compute_ms, 1e-3), 2),
        hints=hints)


def judge(ranks: Sequence[dict],
          ratio: float = RATIO,
          min_ms: float = MIN_MS) -> Dict[str, object]:
    """The straggler among ``ranks``, its bound and the fix.

    Args:
        ranks (Sequence[dict]): Per-rank figures, index = rank (see the
            module's docstring).
        ratio (float): Margin factor over the others' median step.
            Defaults to :data:`RATIO`.
        min_ms (float): Margin in milliseconds over that median.
            Defaults to :data:`MIN_MS`.

    Returns:
        dict: ``slowest_rank`` (int or None), ``bound`` ('input',
        'compute' or None), ``fix`` (dict or None), ``slow_ranks`` (every
        rank beyond the margin, slowest first) and ``lead_ms`` (the
        straggler's excess data wait and compute over the others'
        medians, or None).
    """
    verdict: Dict[str, object] = dict(
        slowest_rank=None, bound=None, fix=None, slow_ranks=[], lead_ms=None)
    if len(ranks) < 2 or not all(_measured(fig) for fig in ranks):
        return verdict
    slow: List[int] = []
    for i, fig in enumerate(ranks):
        others = _median_of_others(ranks, i, 'step_ms')
        if fig['step_ms'] > ratio * others and \
                fig['step_ms'] - others >= min_ms:
            slow.append(i)
    if not slow:
        return verdict
    slow.sort(key=lambda i: ranks[i]['step_ms'], reverse=True)
    r = slow[0]
    fig = ranks[r]
    lead_data = fig['data_wait_ms'] - _median_of_others(
        ranks, r, 'data_wait_ms')
    others_compute = _median_of_others(ranks, r, 'compute_ms')
    lead_compute = fig['compute_ms'] - others_compute
    bound = 'input' if lead_data >= lead_compute else 'compute'
    verdict.update(
        slowest_rank=r,
        bound=bound,
        slow_ranks=slow,
        lead_ms=dict(data_wait_ms=round(lead_data, 3),
                     compute_ms=round(lead_compute, 3)),
        fix=input_fix(fig) if bound == 'input' else compute_fix(
            fig, others_compute))
    return verdict


def medians(ranks: Sequence[dict]) -> Optional[Dict[str, float]]:
    """Median of each measured figure over the ranks (None if unmeasured).
    """
    if not ranks or not all(_measured(fig) for fig in ranks):
        return None
    return {
        key: round(statistics.median(fig[key] for fig in ranks), 3)
        for key in MEASURED
    }
