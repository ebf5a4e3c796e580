"""mmdet3d's train pipeline against the plugin's Fast* transforms (preset
'fast_pipeline'), on the same data, in one run.

The shipped CenterPoint pillar02 config's train pipeline (10 sweeps,
GT-database sampling, augmentation, filters, shuffle) on the generated
nuScenes-format data at nuScenes density (34,720 points per key frame and
sweep; made once and cached in data/.cache, about 700 MB), one core
(``torch.set_num_threads(1)``, one BLAS / OpenMP thread):

- steady state after ``--warmup`` samples: ms per sample of each transform
  and of the whole pipeline (CPU time of the one thread, so other work on
  the machine does not count; the wall time too), samples/s, stock / ours;
- every sample of both compared (points, boxes, labels, metadata: bit for
  bit, and the numpy / Python / torch random state after each);
- the first sample in a fresh process (a subprocess per pipeline): the
  time of the first ``dataset[i]`` after building the dataset, which
  includes mmdet3d's numba compilation for stock, and the process's whole
  time to that sample (imports included).

Prints a table and writes JSON (default
``benchmarks/results/bench_pipeline.json``).

    python benchmarks/bench_pipeline.py
    python benchmarks/bench_pipeline.py --samples 80 --seeds 0 1 2
    python benchmarks/bench_pipeline.py --smoke
"""
import argparse
import copy
import json
import os
import os.path as osp
import subprocess
import sys
import time

# One core: no BLAS / OpenMP threads either (stock's float64 products run
# on numpy's BLAS; mmengine sets the same for its DataLoader workers).
for _name in ('OMP_NUM_THREADS', 'OPENBLAS_NUM_THREADS', 'MKL_NUM_THREADS'):
    os.environ[_name] = '1'

REPO = osp.dirname(osp.dirname(osp.abspath(__file__)))
if REPO not in sys.path:
    sys.path.insert(0, REPO)

PILLAR02 = osp.join(
    REPO, 'configs', 'centerpoint',
    'centerpoint_pillar02_second_secfpn_8xb4-cyclic-20e_nus-3d.py')
VARIANTS = ('stock', 'fast')
#: Targets of the issue ("Feed the GPUs", parts 4 and 5).
SPEEDUP_TARGET = 3.0
FIRST_SAMPLE_TARGET_S = 1.0


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--config', default=PILLAR02)
    parser.add_argument(
        '--data-root',
        default=None,
        help='generated dataset to use (default: the cached dense one, '
        'made if missing)')
    parser.add_argument('--points-per-frame', type=int, default=34720)
    parser.add_argument('--samples', type=int, default=40,
                        help='timed samples per seed')
    parser.add_argument('--warmup', type=int, default=5)
    parser.add_argument('--seeds', type=int, nargs='+', default=[0, 1])
    parser.add_argument('--smoke', action='store_true',
                        help='4 samples, 1 warm-up, 1 seed')
    parser.add_argument('--out',
                        default=osp.join(REPO, 'benchmarks', 'results',
                                         'bench_pipeline.json'))
    parser.add_argument('--child-first', choices=VARIANTS,
                        help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.smoke:
        args.samples, args.warmup, args.seeds = 4, 1, [0]
    return args


def _pipelines(cfg):
    """(stock, fast) configs of the train dataset (CBGS unwrapped)."""
    from projects.mmdet3d_plugin.config.presets import (load_preset,
                                                        replace_transform_types)
    fast_types = load_preset('fast_pipeline')['transform_types']
    dataset = cfg.train_dataloader.dataset
    while dataset.get('type') in ('CBGSDataset', 'RepeatDataset',
                                  'ClassBalancedDataset'):
        dataset = dataset.dataset
    stock = copy.deepcopy(dataset)
    replace_transform_types(stock, {v: k for k, v in fast_types.items()})
    fast = copy.deepcopy(stock)
    replace_transform_types(fast, fast_types)
    return dict(stock=stock, fast=fast)


def _load(args):
    from mmengine.registry import init_default_scope

    from projects.mmdet3d_plugin import load_config
    from projects.mmdet3d_plugin.config.data_root import redirect_data_root
    cfg = load_config(args.config)
    redirect_data_root(cfg, args.data_root)
    init_default_scope('mmdet3d')
    return _pipelines(cfg)


def _build(dataset_cfg, seed=0):
    from mmdet3d.registry import DATASETS, TRANSFORMS
    from tests.helpers.pipeline_equality import seed_all
    seed_all(seed)  # the GT-database samplers shuffle when built
    dataset = DATASETS.build(dict(dataset_cfg, pipeline=[]))
    transforms = [TRANSFORMS.build(copy.deepcopy(t))
                  for t in dataset_cfg.pipeline]
    return dataset, transforms


def run_child(args):
    """First sample of one pipeline in this fresh process."""
    import torch
    torch.set_num_threads(1)
    started = float(os.environ['BENCH_STARTED'])
    t0 = time.perf_counter()
    dataset_cfg = _load(args)[args.child_first]
    from mmdet3d.registry import DATASETS
    dataset = DATASETS.build(dataset_cfg)
    built = time.perf_counter()
    dataset.prepare_data(0)
    first = time.perf_counter()
    dataset.prepare_data(1)
    second = time.perf_counter()
    print(json.dumps(dict(
        imports_and_build_s=built - t0,
        first_sample_s=first - built,
        second_sample_s=second - first,
        process_to_first_sample_s=time.time() - started -
        (second - first))))


def first_sample(args, variant):
    env = dict(os.environ, BENCH_STARTED=repr(time.time()))
    cmd = [sys.executable, osp.abspath(__file__), '--child-first', variant,
           '--config', args.config, '--data-root', args.data_root]
    proc = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True,
                          text=True, check=True)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _inputs(dataset, index):
    results = copy.deepcopy(dataset.get_data_info(index))
    results['box_type_3d'] = dataset.box_type_3d
    results['box_mode_3d'] = dataset.box_mode_3d
    return results


def steady_state(args, configs):
    """Per-transform seconds of both pipelines over the same samples, and
    whether every sample came out the same."""
    from tests.helpers.pipeline_equality import (difference, rng_difference,
                                                 rng_state, seed_all)
    built = {v: _build(configs[v]) for v in VARIANTS}
    names = [type(t).__name__ for t in built['stock'][1]]
    # CPU seconds of this thread in each transform (what one core spends,
    # whatever else runs on the machine), one row per timed sample; and
    # each sample's wall time.
    seconds = {v: [] for v in VARIANTS}
    wall = {v: [] for v in VARIANTS}
    mismatches, timed = [], 0
    dataset = built['stock'][0]
    for seed in args.seeds:
        built = {v: _build(configs[v], seed) for v in VARIANTS}
        for step in range(args.warmup + args.samples):
            index = step % len(dataset)
            outputs = {}
            for variant in VARIANTS:
                _, transforms = built[variant]
                seed_all(seed * 100003 + step)
                results = _inputs(dataset, index)
                row = [0.0] * len(names)
                started = time.perf_counter()
                for i, transform in enumerate(transforms):
                    start = time.thread_time()
                    results = transform(results)
                    row[i] = time.thread_time() - start
                    if results is None:
                        break
                if step >= args.warmup:
                    seconds[variant].append(row)
                    wall[variant].append(time.perf_counter() - started)
                outputs[variant] = (results, rng_state())
            found = difference(outputs['stock'][0], outputs['fast'][0]) or \
                rng_difference(outputs['stock'][1], outputs['fast'][1])
            if found:
                mismatches.append(f'seed {seed} step {step}: {found}')
            timed += step >= args.warmup
    import numpy as np
    fast_names = [type(t).__name__ for t in built['fast'][1]]
    ms = {v: 1000 * np.array(seconds[v]) for v in VARIANTS}
    rows = [
        dict(transform=name, fast=fast_name,
             stock_ms=float(np.median(ms['stock'][:, i])),
             fast_ms=float(np.median(ms['fast'][:, i])),
             stock_mean_ms=float(ms['stock'][:, i].mean()),
             fast_mean_ms=float(ms['fast'][:, i].mean()))
        for i, (name, fast_name) in enumerate(zip(names, fast_names))
    ]
    totals = {v: ms[v].sum(axis=1) for v in VARIANTS}
    walls = {v: 1000 * np.array(wall[v]) for v in VARIANTS}
    return rows, totals, walls, timed, mismatches


def format_table(result):
    rows, total = result['transforms'], result['pipeline']
    lines = [
        f'{result["samples"]} samples (after {result["warmup"]} warm-up, '
        f'seeds {result["seeds"]}), {result["points_per_frame"]} points per '
        f'frame, one core; identical samples: {result["identical"]}',
        'ms: CPU time of the one thread, median over the samples (means '
        'in the JSON)',
        f'{"transform":<28}{"stock ms":>10}{"ours ms":>10}{"stock/ours":>12}'
        f'  ours']
    for row in rows:
        ours = row['fast'] if row['fast'] != row['transform'] else '(stock)'
        lines.append(
            f'{row["transform"]:<28}{row["stock_ms"]:>10.2f}'
            f'{row["fast_ms"]:>10.2f}'
            f'{row["stock_ms"] / max(row["fast_ms"], 1e-9):>11.2f}x  {ours}')
    lines.append(
        f'{"whole pipeline":<28}{total["stock_ms"]:>10.2f}'
        f'{total["fast_ms"]:>10.2f}{total["speedup"]:>11.2f}x')
    lines.append(
        f'{"whole pipeline (mean)":<28}{total["stock_mean_ms"]:>10.2f}'
        f'{total["fast_mean_ms"]:>10.2f}{total["mean_speedup"]:>11.2f}x')
    lines.append(
        f'{"whole pipeline (wall)":<28}{total["stock_wall_ms"]:>10.2f}'
        f'{total["fast_wall_ms"]:>10.2f}'
        f'{total["stock_wall_ms"] / total["fast_wall_ms"]:>11.2f}x')
    lines.append(
        f'{"samples/s (one core)":<28}{total["stock_samples_per_s"]:>10.2f}'
        f'{total["fast_samples_per_s"]:>10.2f}')
    first = result['first_sample']
    for key, label in (('first_sample_s', 'first sample, fresh process'),
                       ('second_sample_s', 'its second sample'),
                       ('process_to_first_sample_s',
                        'process start to first sample')):
        lines.append(f'{label + " (s)":<28}{first["stock"][key]:>10.2f}'
                     f'{first["fast"][key]:>10.2f}')
    return '\n'.join(lines)


def run_parent(args):
    import numpy as np
    import torch
    torch.set_num_threads(1)
    if args.data_root is None:
        from tests.helpers.synthetic_data import prepare_dense_synthetic
        args.data_root = str(prepare_dense_synthetic(
            points_per_frame=args.points_per_frame))
    configs = _load(args)
    rows, totals, walls, timed, mismatches = steady_state(args, configs)
    # Medians over the samples: robust to other processes on the cores.
    stock_ms = float(np.median(totals['stock']))
    fast_ms = float(np.median(totals['fast']))
    result = dict(
        config=osp.relpath(args.config, REPO), data_root=args.data_root,
        points_per_frame=args.points_per_frame, samples=timed,
        warmup=args.warmup, seeds=args.seeds, transforms=rows,
        pipeline=dict(stock_ms=stock_ms, fast_ms=fast_ms,
                      stock_mean_ms=float(totals['stock'].mean()),
                      fast_mean_ms=float(totals['fast'].mean()),
                      stock_wall_ms=float(np.median(walls['stock'])),
                      fast_wall_ms=float(np.median(walls['fast'])),
                      speedup=stock_ms / fast_ms,
                      mean_speedup=float(totals['stock'].mean() /
                                         totals['fast'].mean()),
                      stock_samples_per_s=1000 / stock_ms,
                      fast_samples_per_s=1000 / fast_ms),
        identical=not mismatches, mismatches=mismatches[:20],
        first_sample={v: first_sample(args, v) for v in VARIANTS})
    print(format_table(result))
    checks = [
        (f'samples/s >= {SPEEDUP_TARGET:g}x stock',
         round(result['pipeline']['speedup'], 2),
         result['pipeline']['speedup'] >= SPEEDUP_TARGET),
        ('identical samples and random states', not mismatches,
         not mismatches),
        (f'first sample in a fresh process <= {FIRST_SAMPLE_TARGET_S:g} s',
         round(result['first_sample']['fast']['first_sample_s'], 3),
         result['first_sample']['fast']['first_sample_s'] <=
         FIRST_SAMPLE_TARGET_S),
    ]
    print('targets (ours):')
    for name, value, ok in checks:
        print(f'  {"PASS" if ok else "MISS"}  {name}: {value}')
    for line in mismatches[:5]:
        print('  mismatch:', line)
    result['targets'] = [dict(name=n, value=v, ok=ok) for n, v, ok in checks]
    os.makedirs(osp.dirname(osp.abspath(args.out)), exist_ok=True)
    with open(args.out, 'w') as f:
        json.dump(result, f, indent=2)
    print(f'wrote {args.out}')
    return 0 if all(ok for _, _, ok in checks) else 1


def main():
    args = parse_args()
    if args.child_first:
        run_child(args)
        return 0
    return run_parent(args)


if __name__ == '__main__':
    sys.exit(main())
