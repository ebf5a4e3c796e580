"""What per-sample seeding changes against stock: the demo (``make demo``'s
job: generated data, 2 CPU processes, devkit evaluation) trained with each
seed under the plugin's default loops, each sample's random numbers drawn
from its ``(seed, epoch, position)`` (``seeded``), and with
``exact_resume = False`` (``stock``: mmengine's loops, each worker's
random state walking on from sample to sample).

    python benchmarks/bench_seeded_draws.py [--seeds 0 1 2]
        [--work-dir work_dirs/bench_seeded_draws]
        [--json work_dirs/bench_seeded_draws.json]

Each run takes as long as ``make demo`` (about 450 s on 2 cores). The
per-sample distribution of every augmentation is the same in both modes;
the sequence differs, so the mAP of one seed differs, and the spread over
seeds says whether that matters.
"""
import argparse
import json
import os.path as osp
import statistics
import sys

REPO = osp.dirname(osp.dirname(osp.abspath(__file__)))
sys.path.insert(0, REPO)

MODES = {'seeded': None, 'stock': dict(exact_resume=False)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--seeds', type=int, nargs='+', default=[0, 1, 2])
    parser.add_argument('--work-dir', default='work_dirs/bench_seeded_draws')
    parser.add_argument('--json', default='work_dirs/bench_seeded_draws.json')
    args = parser.parse_args()
    from projects.mmdet3d_plugin.demo.quickstart import run_quickstart

    rows = []
    for seed in args.seeds:
        for mode, options in MODES.items():
            summary = run_quickstart(
                osp.join(args.work_dir, f'{mode}_seed{seed}'), seed=seed,
                options=options)
            rows.append(dict(mode=mode, seed=seed, map=summary['map'],
                             nds=summary['nds'],
                             wall_seconds=summary['wall_seconds']))
            with open(args.json, 'w') as f:
                json.dump(rows, f, indent=2)

    print(f'\n| mode | {" | ".join(f"seed {s}" for s in args.seeds)} '
          '| mean mAP | mean NDS |')
    print('|---' * (len(args.seeds) + 3) + '|')
    for mode in MODES:
        mine = [r for r in rows if r['mode'] == mode]
        cells = ' | '.join(f'{r["map"]:.4f} / {r["nds"]:.4f}' for r in mine)
        print(f'| {mode} | {cells} | '
              f'{statistics.mean(r["map"] for r in mine):.4f} | '
              f'{statistics.mean(r["nds"] for r in mine):.4f} |')
    print(f'(mAP / NDS per seed; JSON: {args.json})')


if __name__ == '__main__':
    main()
