"""What DistWatchdogHook costs per iteration outside a hang (target: 0.1 ms).

Three measurements in one process, the watchdog thread running:

- ``hook_call``: the hook's ``after_train_iter`` alone (what the Runner
  thread does per iteration: store a tuple), timed over many calls;
- ``dispatch``: ``runner.call_hook('before_train_iter')`` plus
  ``runner.call_hook('after_train_iter')`` of a real Runner whose only hook
  is this one, minus the same with no hook (mmengine's per-hook dispatch
  included: the per-iteration cost);
- ``train_iter``: median time of a toy model's training iteration with and
  without the hook, with the watchdog's rounds every 10 ms (a hundred times
  more often than the default, so their GIL share shows); on a shared CPU
  machine this difference is mostly noise, hence the first two rows.

Prints a table and writes JSON.

    python benchmarks/bench_watchdog.py [--calls 200000] [--iters 300]
        [--out benchmarks/results/bench_watchdog.json]
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

TARGET_MS = 0.1


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--calls', type=int, default=200_000)
    parser.add_argument('--repeats', type=int, default=5)
    parser.add_argument('--iters', type=int, default=300)
    parser.add_argument(
        '--out',
        default=osp.join(REPO, 'benchmarks', 'results',
                         'bench_watchdog.json'))
    return parser.parse_args(argv)


NO_DEFAULT_HOOKS = dict(runtime_info=None, timer=None, logger=None,
                        param_scheduler=None, checkpoint=None,
                        sampler_seed=None)


def build_runner(work_dir, hooks, max_iters, default_hooks=None):
    from mmengine.runner import Runner
    from tests.helpers.fault_helpers import FaultToyDataset, FaultToyModel
    return Runner(
        model=FaultToyModel(),
        work_dir=work_dir,
        train_dataloader=dict(
            dataset=FaultToyDataset(size=100_000),
            sampler=dict(type='DefaultSampler', shuffle=False),
            batch_size=4,
            num_workers=0),
        optim_wrapper=dict(optimizer=dict(type='SGD', lr=0.01)),
        train_cfg=dict(by_epoch=False, max_iters=max_iters),
        default_hooks=default_hooks or dict(
            checkpoint=None, logger=dict(type='LoggerHook', interval=10**6)),
        custom_hooks=hooks,
        log_level='WARNING',
        default_scope='mmdet3d')


def per_call_us(fn, calls, repeats):
    """Best and median microseconds per call over ``repeats`` batches."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        times.append((time.perf_counter() - start) / calls * 1e6)
    return min(times), statistics.median(times)


class IterTimer:
    """Hook that records each train iteration's duration (seconds)."""

    priority = 'VERY_HIGH'

    def __init__(self):
        self.times = []
        self._start = None

    def before_train_iter(self, runner, batch_idx, data_batch=None):
        self._start = time.perf_counter()

    def after_train_iter(self, runner, batch_idx, data_batch=None,
                         outputs=None):
        self.times.append(time.perf_counter() - self._start)


def main(argv=None):
    args = parse_args(argv)
    from mmengine.hooks import Hook
    import projects.mmdet3d_plugin  # noqa: F401  registers the hook
    from projects.mmdet3d_plugin.engine.hooks import DistWatchdogHook

    rows = {}
    with tempfile.TemporaryDirectory() as tmp:
        # 1) The hook's own call, thread running (default interval).
        # No default hooks: the dispatch rows compare this hook with none.
        runner = build_runner(osp.join(tmp, 'a'), [], 1, NO_DEFAULT_HOOKS)
        hook = DistWatchdogHook(timeout=1800)
        hook.before_run(runner)
        hook.before_train(runner)
        rows['hook_call'] = per_call_us(
            lambda: hook.after_train_iter(runner, 0), args.calls,
            args.repeats)

        # 2) mmengine dispatch of both iteration hooks, with and without.
        def both():
            runner.call_hook('before_train_iter', batch_idx=0,
                             data_batch=None)
            runner.call_hook('after_train_iter', batch_idx=0,
                             data_batch=None, outputs=None)

        without = per_call_us(both, args.calls // 4, args.repeats)
        runner.register_hook(hook)
        with_hook = per_call_us(both, args.calls // 4, args.repeats)
        rows['dispatch'] = (with_hook[0] - without[0],
                            with_hook[1] - without[1])
        hook.after_run(runner)

        # 3) Whole iterations of a toy model, rounds every 10 ms.
        medians = {}
        for name, hooks in (('without', []), ('with', [
                DistWatchdogHook(timeout=1800, interval=0.01)])):
            timer = type('Timer', (IterTimer, Hook), {})()
            runner = build_runner(osp.join(tmp, name), hooks + [timer],
                                  args.iters)
            runner.train()
            medians[name] = statistics.median(timer.times[10:]) * 1e6
        rows['train_iter'] = (medians['with'] - medians['without'], None)

    print(f'{"measurement":<12}  {"best_us":>9}  {"median_us":>9}  '
          f'{"target_us":>9}')
    for name, (best, median) in rows.items():
        med = f'{median:9.3f}' if median is not None else f'{"-":>9}'
        print(f'{name:<12}  {best:9.3f}  {med}  {TARGET_MS * 1000:9.1f}')
    print(f'toy iteration: {medians["without"]:.0f} us without the hook, '
          f'{medians["with"]:.0f} us with it (median of {args.iters - 10})')
    report = dict(
        target_ms=TARGET_MS,
        calls=args.calls,
        repeats=args.repeats,
        iters=args.iters,
        rows_us={k: dict(best=v[0], median=v[1])
                 for k, v in rows.items()},
        toy_iteration_us=medians,
        per_iteration_ms=rows['dispatch'][1] / 1000,
        python=sys.version.split()[0],
        cpus=os.cpu_count())
    os.makedirs(osp.dirname(args.out), exist_ok=True)
    with open(args.out, 'w') as f:
        json.dump(report, f, indent=2)
    print(f'wrote {args.out}')


if __name__ == '__main__':
    main()
