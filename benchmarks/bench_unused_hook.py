"""What DDPUnusedParamHook and find_unused_parameters=True cost per iteration.

Trains the small CenterPoint config on the generated nuScenes-format data
with 2-process gloo DDP on CPU, in four modes, one after the other in the
same two processes (rounds alternate the modes to spread machine noise):

- ``no_hook``: find_unused_parameters=False, no hook (the baseline);
- ``hook_checking``: the hook checks every iteration;
- ``hook_past_window``: the hook checked iteration 0 only;
- ``find_unused_true``: find_unused_parameters=True, no hook.

The time of an iteration runs from the first ``before_train_iter`` to the
last ``after_train_iter`` hook (``train_step`` and all hooks, not data
loading), on rank 0; the first ``--warmup`` iterations of each run are
dropped. The hook's own ``before_train_iter`` + ``after_train_iter`` time
(registration, removal, gather, report) is timed apart, since on a shared
CPU machine the iteration times move by more than the hook costs. Prints a
table and writes JSON.

    python benchmarks/bench_unused_hook.py [--smoke] [--iters 10]
        [--rounds 2] [--out benchmarks/results/bench_unused_hook.json]
"""
import argparse
import json
import os
import os.path as osp
import statistics
import subprocess
import sys
import tempfile
import time

REPO = osp.dirname(osp.dirname(osp.abspath(__file__)))
sys.path.insert(0, REPO)

CONFIG = osp.join(REPO, 'configs/centerpoint/centerpoint_pillar_synthetic.py')
MODES = ('no_hook', 'hook_checking', 'hook_past_window', 'find_unused_true')


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--config', default=CONFIG)
    parser.add_argument(
        '--data-root',
        default=osp.join(REPO, 'data', 'nuscenes_synthetic'),
        help='generated dataset (made here if missing)')
    parser.add_argument('--iters', type=int, default=10)
    parser.add_argument('--warmup', type=int, default=2)
    parser.add_argument('--rounds', type=int, default=2)
    parser.add_argument('--batch-size', type=int, default=2)
    parser.add_argument(
        '--smoke',
        action='store_true',
        help='3 iterations, 1 warm-up, 1 round, batch size 1')
    parser.add_argument(
        '--out',
        default=osp.join(REPO, 'benchmarks', 'results',
                         'bench_unused_hook.json'))
    parser.add_argument('--worker', help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.smoke:
        args.iters, args.warmup, args.rounds, args.batch_size = 3, 1, 1, 1
    if args.iters <= args.warmup:
        parser.error('--iters must be larger than --warmup')
    return args


# -- worker (one rank) -----------------------------------------------------


def _timer_hooks(times):
    from mmengine.hooks import Hook

    class _Start(Hook):
        priority = 'HIGHEST'

        def before_train_iter(self, runner, batch_idx, data_batch=None):
            times.append(-time.perf_counter())

    class _Stop(Hook):
        priority = 'LOWEST'

        def after_train_iter(self,
                             runner,
                             batch_idx,
                             data_batch=None,
                             outputs=None):
            times[-1] += time.perf_counter()

    return _Start(), _Stop()


def _time_hook_methods(runner, self_times, gather_times):
    """Time the unused-parameter hook's own iteration methods, and apart
    the gather of the other rank's report in them (mostly waiting for that
    rank to finish the same iteration)."""
    from projects.mmdet3d_plugin.engine.hooks import DDPUnusedParamHook
    for hook in runner.hooks:
        if not isinstance(hook, DDPUnusedParamHook):
            continue
        for name in ('before_train_iter', 'after_train_iter', '_gather'):
            method = getattr(hook, name)

            def timed(*args, _method=method, _name=name, **kwargs):
                start = time.perf_counter()
                try:
                    return _method(*args, **kwargs)
                finally:
                    spent = time.perf_counter() - start
                    if _name == 'before_train_iter':
                        self_times.append(spent)
                        gather_times.append(0.0)
                    elif _name == 'after_train_iter':
                        self_times[-1] += spent
                    else:
                        gather_times[-1] += spent

            setattr(hook, name, timed)


def _make_cfg(args, mode, work_dir):
    from mmengine.config import Config

    from projects.mmdet3d_plugin.cli.prepare import prepare_run

    # The data root moves below, so the checks of the config's own paths
    # (stop=True) do not apply.
    cfg = prepare_run(args.config, 'train', launcher='pytorch',
                      work_dir=work_dir, stop=False)
    cfg = Config(
        cfg.to_dict(), filename=cfg.filename, format_python_code=False)
    loader = cfg.train_dataloader
    loader.dataset.data_root = args.data_root.rstrip('/') + '/'
    loader.update(
        batch_size=args.batch_size, num_workers=0, persistent_workers=False)
    for key in ('val_dataloader', 'val_cfg', 'val_evaluator',
                'test_dataloader', 'test_cfg', 'test_evaluator'):
        cfg[key] = None
    cfg.train_cfg = dict(
        type='IterBasedTrainLoop', max_iters=args.iters, val_interval=10**9)
    cfg.param_scheduler = []
    cfg.default_hooks.checkpoint = None
    cfg.default_hooks.logger = dict(type='LoggerHook', interval=10**6)
    cfg.randomness = dict(seed=0)
    cfg.experiment_name = mode + '_' + osp.basename(work_dir)
    cfg.model_wrapper_cfg = dict(
        type='CPUDistributedDataParallel',
        broadcast_buffers=False,
        find_unused_parameters=mode == 'find_unused_true')
    hooks = []
    if mode == 'hook_checking':
        hooks = [dict(type='DDPUnusedParamHook', check_iters=args.iters)]
    elif mode == 'hook_past_window':
        hooks = [dict(type='DDPUnusedParamHook', check_iters=1)]
    cfg.custom_hooks = hooks
    return cfg


def worker(args) -> None:
    from mmdet3d.registry import RUNNERS

    from projects.mmdet3d_plugin.compat.cpu_dist import init_cpu_dist
    init_cpu_dist(timeout=600)
    rank = int(os.environ['RANK'])
    results = {mode: [] for mode in MODES}
    self_times = {mode: [] for mode in MODES}
    gather_times = {mode: [] for mode in MODES}
    with tempfile.TemporaryDirectory(prefix='bench_unused_') as tmp:
        for round_idx in range(args.rounds):
            order = MODES if round_idx % 2 == 0 else MODES[::-1]
            for mode in order:
                work_dir = osp.join(tmp, f'{mode}_{round_idx}')
                cfg = _make_cfg(args, mode, work_dir)
                runner = RUNNERS.build(cfg)
                times, spent, gathered = [], [], []
                for hook in _timer_hooks(times):
                    runner.register_hook(hook)
                _time_hook_methods(runner, spent, gathered)
                runner.train()
                results[mode] += times[args.warmup:]
                self_times[mode] += spent[args.warmup:]
                gather_times[mode] += gathered[args.warmup:]
    if rank == 0:
        with open(args.worker, 'w') as f:
            json.dump(
                dict(
                    times=results,
                    hook_self=self_times,
                    hook_gather=gather_times), f)


# -- launcher --------------------------------------------------------------


def launch(args) -> dict:
    from projects.mmdet3d_plugin.dist.ports import free_port
    from projects.mmdet3d_plugin.synthetic.writer import (
        prepare_synthetic_nuscenes)
    from tests.helpers.dist_env import rendezvous_env
    prepare_synthetic_nuscenes(args.data_root, seed=0)
    port = free_port()
    with tempfile.TemporaryDirectory() as tmp:
        result_file = osp.join(tmp, 'times.json')
        argv = [
            sys.executable,
            osp.abspath(__file__), '--worker', result_file, '--config',
            args.config, '--data-root', args.data_root, '--iters',
            str(args.iters), '--warmup',
            str(args.warmup), '--rounds',
            str(args.rounds), '--batch-size',
            str(args.batch_size)
        ]
        procs = []
        for rank in range(2):
            env = dict(os.environ,
                       **rendezvous_env(rank, 2, port),
                       OMP_NUM_THREADS='1')
            procs.append(
                subprocess.Popen(
                    argv,
                    env=env,
                    cwd=REPO,
                    stdout=subprocess.DEVNULL if rank else None))
        codes = [proc.wait() for proc in procs]
        if any(codes):
            raise SystemExit(f'bench_unused_hook: ranks exited with {codes}')
        with open(result_file) as f:
            measured = json.load(f)
    times, hook_self = measured['times'], measured['hook_self']
    hook_gather = measured['hook_gather']
    modes = {}
    for mode in MODES:
        values = times[mode]
        modes[mode] = dict(
            median_s=statistics.median(values),
            mean_s=statistics.fmean(values),
            iterations=len(values),
            times_s=values,
            hook_self_median_s=statistics.median(hook_self[mode])
            if hook_self[mode] else 0.0,
            hook_gather_median_s=statistics.median(hook_gather[mode])
            if hook_gather[mode] else 0.0)
    base = modes['no_hook']['median_s']
    for mode in MODES:
        row = modes[mode]
        row['overhead_pct'] = 100 * (row['median_s'] / base - 1)
        row['hook_self_pct'] = 100 * row['hook_self_median_s'] / base
    return dict(
        config=osp.relpath(args.config, REPO),
        world_size=2,
        backend='gloo (CPU)',
        batch_size_per_rank=args.batch_size,
        iters_per_run=args.iters,
        warmup=args.warmup,
        rounds=args.rounds,
        modes=modes)


def print_table(report: dict) -> None:
    print(f'\n{report["config"]}: 2-process gloo DDP, batch '
          f'{report["batch_size_per_rank"]}/rank, '
          f'{report["rounds"]} round(s) x '
          f'{report["iters_per_run"] - report["warmup"]} timed iterations')
    print(f'{"mode":<18} {"median s/iter":>14} {"mean s/iter":>12} '
          f'{"vs no_hook":>11} {"hook methods ms/iter":>21} '
          f'{"of which gather":>16}')
    for mode, row in report['modes'].items():
        hook, gather = '-', '-'
        if mode.startswith('hook'):
            hook = (f'{1000 * row["hook_self_median_s"]:.3f} '
                    f'({row["hook_self_pct"]:.2f}%)')
            gather = f'{1000 * row["hook_gather_median_s"]:.3f}'
        print(f'{mode:<18} {row["median_s"]:>14.4f} {row["mean_s"]:>12.4f} '
              f'{row["overhead_pct"]:>+10.1f}% {hook:>21} {gather:>16}')


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.worker:
        worker(args)
        return 0
    report = launch(args)
    print_table(report)
    os.makedirs(osp.dirname(osp.abspath(args.out)), exist_ok=True)
    with open(args.out, 'w') as f:
        json.dump(report, f, indent=2)
    print(f'written: {args.out}')
    return 0


if __name__ == '__main__':
    sys.exit(main())
