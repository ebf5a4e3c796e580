"""A training step's memory and time with and without preset
'activation_checkpointing', for the shipped full-size configs.

Each config at ``--batch-size`` (4, the configs' own) on the generated
nuScenes-format data at nuScenes density (34,720 points per key frame and
sweep; cached in data/.cache), its own train pipeline, one fresh process
per config and variant (``plain``, ``checkpointed``), AdamW, torch's
default threads:

- step 1: the process's peak resident memory above its resident memory
  before the step (``rss MiB``; what the issue measured: glibc keeps freed
  memory, so only a process's first step shows its need);
- step 2: the step's wall time (``s/step``);
- step 3, under the profiler: the peak of live tensor bytes, weights,
  gradients and optimizer state included (``live MiB``; what a GPU's
  ``torch.cuda.max_memory_allocated`` would show in fp32, measured by
  ``projects/mmdet3d_plugin/doctor/step_memory.py``).

The same batch in every step. Prints a table and writes JSON (default
``benchmarks/results/bench_activation_checkpointing.json``).

    python benchmarks/bench_activation_checkpointing.py
    python benchmarks/bench_activation_checkpointing.py --configs voxel0075
"""
import argparse
import json
import os
import os.path as osp
import subprocess
import sys
import time

REPO = osp.dirname(osp.dirname(osp.abspath(__file__)))
if REPO not in sys.path:
    sys.path.insert(0, REPO)

VARIANTS = ('plain', 'checkpointed')
CONFIGS = ('voxel0075', 'voxel01', 'pillar02', 'voxelnet_pillar02',
           'voxelnet_voxel01')
#: The issue's acceptance for voxel0075 at batch 4.
PEAK_TARGET = 0.5
TIME_TARGET = 1.35


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--configs', nargs='+', default=list(CONFIGS),
                        choices=CONFIGS)
    parser.add_argument('--batch-size', type=int, default=4)
    parser.add_argument('--out', default=osp.join(
        REPO, 'benchmarks', 'results',
        'bench_activation_checkpointing.json'))
    parser.add_argument('--child', nargs=2, metavar=('CONFIG', 'VARIANT'),
                        help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def run_child(args) -> None:
    """The three steps of one config and variant, in this fresh process;
    prints one JSON line."""
    import torch
    from projects.mmdet3d_plugin.doctor.step_memory import measure_step
    from projects.mmdet3d_plugin.engine.activation_checkpointing \
        .checkpointing import turn_on_activation_checkpointing
    from tests.helpers.model_steps import model_and_batch
    from tests.helpers.synthetic_data import prepare_dense_synthetic

    name, variant = args.child
    _, model, data = model_and_batch(name, prepare_dense_synthetic(),
                                     args.batch_size)
    modules = []
    if variant == 'checkpointed':
        modules = turn_on_activation_checkpointing(model, 'auto')
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)

    def step():
        losses = model(**data, mode='loss')
        total, _ = model.parse_losses(losses)
        total.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    first = measure_step(step, [model, optimizer], 'cpu', live=False)
    second = measure_step(step, [model, optimizer], 'cpu', live=False)
    third = measure_step(step, [model, optimizer], 'cpu', live=True)
    print(json.dumps(dict(
        config=name, variant=variant, modules=len(modules),
        rss_mib=first.rss_peak_bytes / 2**20,
        first_step_s=first.seconds, step_s=second.seconds,
        live_mib=third.peak_bytes / 2**20,
        held_mib=third.held_bytes / 2**20,
        threads=torch.get_num_threads())))


def main() -> None:
    args = parse_args()
    if args.child:
        return run_child(args)
    from tests.helpers.synthetic_data import prepare_dense_synthetic
    prepare_dense_synthetic()
    rows = []
    for name in args.configs:
        for variant in VARIANTS:
            start = time.perf_counter()
            proc = subprocess.run(
                [sys.executable, __file__, '--child', name, variant,
                 '--batch-size', str(args.batch_size)],
                capture_output=True, text=True, cwd=REPO)
            if proc.returncode:
                sys.exit(f'{name} {variant} failed:\n{proc.stderr[-3000:]}')
            row = json.loads(proc.stdout.strip().splitlines()[-1])
            row['process_s'] = time.perf_counter() - start
            rows.append(row)
            print(f'{name} {variant}: {row}', flush=True)
    table = ['| config | batch | rss MiB plain | rss ckpt | ratio | live '
             'MiB plain | live ckpt | ratio | s/step plain | s/step ckpt '
             '| ratio | modules |', '|' + '---|' * 12]
    summary = {}
    for name in args.configs:
        plain, ckpt = (next(r for r in rows if r['config'] == name
                            and r['variant'] == v) for v in VARIANTS)
        ratios = dict(rss=ckpt['rss_mib'] / plain['rss_mib'],
                      live=ckpt['live_mib'] / plain['live_mib'],
                      time=ckpt['step_s'] / plain['step_s'])
        summary[name] = ratios
        table.append(
            f"| {name} | {args.batch_size} | {plain['rss_mib']:,.0f} | "
            f"{ckpt['rss_mib']:,.0f} | {ratios['rss']:.2f}x | "
            f"{plain['live_mib']:,.0f} | {ckpt['live_mib']:,.0f} | "
            f"{ratios['live']:.2f}x | {plain['step_s']:.1f} | "
            f"{ckpt['step_s']:.1f} | {ratios['time']:.2f}x | "
            f"{ckpt['modules']} |")
    print('\n'.join(table))
    if 'voxel0075' in summary:
        ratios = summary['voxel0075']
        print(f"voxel0075 batch {args.batch_size}: peak {ratios['live']:.2f}x "
              f"live / {ratios['rss']:.2f}x rss (target <= {PEAK_TARGET}x), "
              f"time {ratios['time']:.2f}x (target <= {TIME_TARGET}x)")
    os.makedirs(osp.dirname(args.out), exist_ok=True)
    with open(args.out, 'w') as f:
        json.dump(dict(batch_size=args.batch_size, rows=rows,
                       ratios=summary, table=table), f, indent=1)
    print(f'wrote {args.out}')


if __name__ == '__main__':
    main()
