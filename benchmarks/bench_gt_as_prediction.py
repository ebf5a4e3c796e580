"""The box convention's cost and its cure, measured by nuscenes-devkit:
the generated val split's ground truth submitted as a 0.x model's
predictions (``tests/helpers/gt_as_predictions.py``), unconverted and
converted (the box map; the tool's CenterHead conversion and 1.x's
decoder), scored through ``SafeNuScenesMetric(backend='devkit')``.

Prints mASE / mAOE / mAP / NDS per way and the scale and orientation
error per class, and writes JSON (default
``benchmarks/results/bench_gt_as_prediction.json``).

    python benchmarks/bench_gt_as_prediction.py [--seed 0]
"""
import argparse
import contextlib
import io
import json
import os
import os.path as osp
import sys
import tempfile

REPO = osp.dirname(osp.dirname(osp.abspath(__file__)))
if REPO not in sys.path:
    sys.path.insert(0, REPO)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--seed', type=int, default=0,
                        help='seed of the generated data (default 0, the '
                        "tests' data)")
    parser.add_argument(
        '--json', default=osp.join(REPO, 'benchmarks', 'results',
                                   'bench_gt_as_prediction.json'))
    args = parser.parse_args()
    from projects.mmdet3d_plugin.synthetic.writer import (
        prepare_synthetic_nuscenes)
    from tests.helpers.gt_as_predictions import ROWS, gt_as_prediction_table
    from tests.helpers.synthetic_data import synthetic_cache_dir
    root = prepare_synthetic_nuscenes(synthetic_cache_dir(seed=args.seed),
                                      seed=args.seed)
    with tempfile.TemporaryDirectory() as out, \
            contextlib.redirect_stdout(io.StringIO()):  # the devkit's tables
        table = gt_as_prediction_table(root, out)
    print('| predictions | mASE | mAOE | mAP | NDS |')
    print('|---|---|---|---|---|')
    for row in ROWS:
        s = table[row]
        print(f"| {row} | {s['mASE']:.4f} | {s['mAOE']:.4f} | "
              f"{s['mAP']:.4f} | {s['NDS']:.4f} |")
    classes = [k[:-len('_scale_err')] for k in table[ROWS[0]]
               if k.endswith('_scale_err')]
    print('\n| class | ' + ' | '.join(
        f'ASE / AOE {row}' for row in ROWS) + ' |')
    print('|---' * (len(ROWS) + 1) + '|')
    for name in classes:
        cells = [f"{table[row][f'{name}_scale_err']:.4f} / "
                 f"{table[row][f'{name}_orient_err']:.4f}" for row in ROWS]
        print(f'| {name} | ' + ' | '.join(cells) + ' |')
    os.makedirs(osp.dirname(args.json), exist_ok=True)
    with open(args.json, 'w') as f:
        json.dump(dict(seed=args.seed, root=str(root), table=table), f,
                  indent=2)
    print(f'\nJSON: {args.json}')


if __name__ == '__main__':
    main()
