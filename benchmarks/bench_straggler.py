"""What StragglerHook costs per iteration (target: under 1 % of one).

Two measurements:

- ``per_iter``: a toy model's forward pass plus the hook's
  ``before_train_iter`` and ``after_train_iter`` (its forward hooks fire in
  the forward), minus the same forward without the hook: the hook's whole
  per-iteration work, forward-hook dispatch included, no gather;
- ``gather``: one window's all-gather of the per-rank sums over a gloo side
  group of 2 processes on this machine, and that spread over a window of
  ``--interval`` iterations.

The percentages are of ``--iter-ms``, an iteration of the demo's small
CenterPoint on 2 CPU processes (its ``rank_timing.json``: ``iter_ms``), and
of the toy's iteration. Prints a table and writes JSON.

    python benchmarks/bench_straggler.py [--calls 20000] [--interval 50]
        [--iter-ms 400] [--out benchmarks/results/bench_straggler.json]
"""
import argparse
import json
import os
import os.path as osp
import statistics
import sys
import tempfile
import time

REPO = osp.dirname(osp.dirname(osp.abspath(__file__)))
sys.path.insert(0, REPO)

TARGET_PERCENT = 1.0


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--calls', type=int, default=20_000)
    parser.add_argument('--repeats', type=int, default=5)
    parser.add_argument('--gathers', type=int, default=200)
    parser.add_argument('--interval', type=int, default=50)
    parser.add_argument('--iter-ms', type=float, default=400.0,
                        help='reference iteration (demo CenterPoint, CPU)')
    parser.add_argument(
        '--out',
        default=osp.join(REPO, 'benchmarks', 'results',
                         'bench_straggler.json'))
    return parser.parse_args(argv)


def _per_call_us(fn, calls, repeats):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        times.append((time.perf_counter() - start) / calls * 1e6)
    return min(times), statistics.median(times)


def per_iteration(calls, repeats):
    """Microseconds per iteration: (best, median) of with minus without,
    and the toy forward's own time."""
    import torch
    from mmengine.runner import Runner

    import projects.mmdet3d_plugin  # noqa: F401  registers the hook
    from projects.mmdet3d_plugin.engine.hooks import StragglerHook
    from tests.helpers.fault_helpers import FaultToyDataset, FaultToyModel

    with tempfile.TemporaryDirectory() as tmp:
        runner = Runner(
            model=FaultToyModel(), work_dir=tmp,
            train_dataloader=dict(
                dataset=FaultToyDataset(size=8),
                sampler=dict(type='DefaultSampler', shuffle=False),
                batch_size=4, num_workers=0),
            optim_wrapper=dict(optimizer=dict(type='SGD', lr=0.01)),
            train_cfg=dict(by_epoch=False, max_iters=1),
            log_level='WARNING', default_scope='mmdet3d')
        model = runner.model
        inputs = [torch.randn(4) for _ in range(4)]
        targets = [torch.randn(1) for _ in range(4)]

        def forward():
            model(inputs, targets, mode='loss')

        hook = StragglerHook(interval=10**9)

        def iteration():
            hook.before_train_iter(runner, 0)
            model(inputs, targets, mode='loss')
            hook.after_train_iter(runner, 0)

        _per_call_us(forward, calls, 1)  # warm up
        without, with_hook = [], []
        for _ in range(repeats):  # interleaved, against drifting load
            hook._remove_handles()
            without.append(_per_call_us(forward, calls, 1)[0])
            hook.before_train(runner)
            iteration()  # leave the warm-up iteration
            with_hook.append(_per_call_us(iteration, calls, 1)[0])
            self_ms = hook._window.sums['hook_ms'] / \
                hook._window.sums['iters']
        hook._remove_handles()
        without = (min(without), statistics.median(without))
        with_hook = (min(with_hook), statistics.median(with_hook))
    return ((with_hook[0] - without[0], with_hook[1] - without[1]),
            without[1], self_ms * 1e3)


def _gather_rank(rank, port, gathers, queue):
    import torch.distributed as torch_dist

    from projects.mmdet3d_plugin.dist.groups import side_group
    from projects.mmdet3d_plugin.engine.straggler.timing import (FIELDS,
                                                                 gather_sums)
    os.environ.update(MASTER_ADDR='127.0.0.1', MASTER_PORT=str(port))
    torch_dist.init_process_group('gloo', rank=rank, world_size=2)
    group = side_group(60)
    values = [float(i) for i in range(len(FIELDS))]
    for _ in range(10):
        gather_sums(group, values, 2)
    times = []
    for _ in range(gathers):
        start = time.perf_counter()
        gather_sums(group, values, 2)
        times.append((time.perf_counter() - start) * 1e6)
    if rank == 0:
        queue.put((min(times), statistics.median(times)))
    torch_dist.destroy_process_group()


def gather_us(gathers):
    """Microseconds per window gather, 2 gloo processes: (best, median)."""
    import torch.multiprocessing as mp

    from projects.mmdet3d_plugin.dist.ports import free_port
    ctx = mp.get_context('spawn')
    queue = ctx.Queue()
    port = free_port()
    procs = [ctx.Process(target=_gather_rank, args=(r, port, gathers, queue))
             for r in range(2)]
    for proc in procs:
        proc.start()
    result = queue.get(timeout=300)
    for proc in procs:
        proc.join(60)
    return result


def main(argv=None):
    args = parse_args(argv)
    (per_iter, toy_us, self_us) = per_iteration(args.calls, args.repeats)
    gather = gather_us(args.gathers)
    rows = dict(
        per_iter=per_iter,
        gather=gather,
        gather_per_iter=tuple(g / args.interval for g in gather),
    )
    total_us = per_iter[1] + rows['gather_per_iter'][1]
    print(f'{"measurement":<16}{"best_us":>10}{"median_us":>11}')
    for name, (best, median) in rows.items():
        print(f'{name:<16}{best:>10.2f}{median:>11.2f}')
    print(f'per iteration (median, gather spread over {args.interval}): '
          f'{total_us:.1f} us = {100 * total_us / 1e3 / args.iter_ms:.4f} % '
          f'of a {args.iter_ms:g} ms CenterPoint iteration, '
          f'{100 * total_us / toy_us:.1f} % of the toy forward '
          f'({toy_us:.0f} us); the hook\'s self-timed share '
          f'{self_us:.1f} us (target {TARGET_PERCENT:g} %)')
    report = dict(
        target_percent=TARGET_PERCENT,
        calls=args.calls, repeats=args.repeats, gathers=args.gathers,
        interval=args.interval, iter_ms=args.iter_ms,
        rows_us={k: dict(best=v[0], median=v[1]) for k, v in rows.items()},
        per_iteration_us=total_us,
        percent_of_iter=100 * total_us / 1e3 / args.iter_ms,
        toy_forward_us=toy_us,
        self_timed_us=self_us,
        python=sys.version.split()[0],
        cpus=os.cpu_count())
    os.makedirs(osp.dirname(args.out), exist_ok=True)
    with open(args.out, 'w') as f:
        json.dump(report, f, indent=2)
    print(f'wrote {args.out}')


if __name__ == '__main__':
    main()
