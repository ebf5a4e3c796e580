"""What the non-finite guard costs on the demo's model (the small
CenterPoint, ``configs/centerpoint/centerpoint_pillar_synthetic.py``, on
the generated data), in one process on the CPU.

    python benchmarks/bench_nonfinite.py [--iters 20] [--repeat 3]
        [--json work_dirs/bench_nonfinite.json]

The same pre-loaded batches go through ``model.train_step`` with the
optim wrapper guarded (``StepGuard``: the buffer snapshot before each
iteration, the gradient norm before each update) and unguarded, in
alternating rounds; the table shows the median iteration of each, the
guard's own work timed alone, and the cost of a bad step (the forward run
again with a hook on every module to find the first non-finite one). The
goal is at most 1 % of an iteration.
"""
import argparse
import json
import os.path as osp
import statistics
import sys
import time

REPO = osp.dirname(osp.dirname(osp.abspath(__file__)))
sys.path.insert(0, REPO)
CONFIG = osp.join(REPO, 'configs', 'centerpoint',
                  'centerpoint_pillar_synthetic.py')


def _timed(fn, repeat: int) -> float:
    """Median seconds of ``fn()`` over ``repeat`` calls."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--iters', type=int, default=20,
                        help='batches per round')
    parser.add_argument('--repeat', type=int, default=3,
                        help='rounds of each mode')
    parser.add_argument('--data-root', default='data/nuscenes_synthetic')
    parser.add_argument('--json', default='work_dirs/bench_nonfinite.json')
    args = parser.parse_args()

    import itertools

    import torch

    from projects.mmdet3d_plugin.cli.prepare import prepare_run
    from projects.mmdet3d_plugin.cli.runner_setup import build_runner
    from projects.mmdet3d_plugin.compat.torch_api import total_norm
    from projects.mmdet3d_plugin.engine.nonfinite.first_module import \
        first_nonfinite_module
    from projects.mmdet3d_plugin.engine.nonfinite.guard import StepGuard
    from projects.mmdet3d_plugin.synthetic.writer import \
        prepare_synthetic_nuscenes

    torch.set_num_threads(1)
    root = prepare_synthetic_nuscenes(osp.join(REPO, args.data_root))
    cfg = prepare_run(CONFIG, data_root=str(root),
                      work_dir=osp.join(REPO, 'work_dirs', 'bench_nonfinite'),
                      cfg_options=dict(nonfinite_guard=False))
    runner = build_runner(cfg)
    batches = list(itertools.islice(runner.train_loop.dataloader,
                                    args.iters))
    model = runner.model
    wrapper = runner.build_optim_wrapper(runner.optim_wrapper)
    wrapper.initialize_count_status(model, 0, 10**6)
    model.train()

    def round_of(guard):
        times = []
        for batch in batches:
            start = time.perf_counter()
            if guard is not None:
                guard.before_iter()
            model.train_step(batch, wrapper)
            times.append(time.perf_counter() - start)
        return times

    off, on = [], []
    round_of(None)  # warm-up
    for _ in range(args.repeat):
        off += round_of(None)
        guard = StepGuard(wrapper, model)
        on += round_of(guard)
        guard.unwrap()

    guard = StepGuard(wrapper, model)
    # Gradients to measure (train_step's update would zero them).
    loss, _ = model.parse_losses(model._run_forward(
        model.data_preprocessor(batches[0], True), mode='loss'))
    loss.backward()
    grads = [p.grad for p in guard.params if p.grad is not None]
    assert len(grads) == len(guard.params), 'some parameters got no grad'
    wrapper.zero_grad()
    snapshot = _timed(guard.buffers.take, 50)
    norm = _timed(lambda: total_norm(grads).item(), 50)
    bad_step = _timed(lambda: first_nonfinite_module(model, batches[0]), 3)
    guard.unwrap()

    row = dict(
        parameters=sum(p.numel() for p in guard.params),
        iteration_off_ms=1000 * statistics.median(off),
        iteration_on_ms=1000 * statistics.median(on),
        snapshot_ms=1000 * snapshot, grad_norm_ms=1000 * norm,
        bad_step_rerun_ms=1000 * bad_step, iters=len(off))
    row['guard_work_pct'] = 100 * (snapshot + norm) / statistics.median(off)
    row['median_diff_pct'] = 100 * (row['iteration_on_ms'] /
                                    row['iteration_off_ms'] - 1)
    with open(osp.join(REPO, args.json), 'w') as f:
        json.dump(row, f, indent=2)
    print('\n| iteration, no guard | iteration, guard | buffer snapshot | '
          'gradient norm | guard work / iteration | bad step (re-run) |')
    print('|---|---|---|---|---|---|')
    print(f'| {row["iteration_off_ms"]:.1f} ms | '
          f'{row["iteration_on_ms"]:.1f} ms | {row["snapshot_ms"]:.3f} ms | '
          f'{row["grad_norm_ms"]:.3f} ms | {row["guard_work_pct"]:.2f} % | '
          f'{row["bad_step_rerun_ms"]:.1f} ms |')
    print(f'(medians over {len(off)} iterations of each mode, one CPU '
          f'thread, {row["parameters"]:,} parameters; the iterations\' '
          f'median difference {row["median_diff_pct"]:+.2f} % is the noise '
          'of the iteration time; the guard\'s own work is timed alone)')


if __name__ == '__main__':
    main()
