"""The main job (``make demo``): generate data, train on 2 CPU processes,
evaluate with nuscenes-devkit, report."""
import argparse
import os.path as osp
import sys

sys.path.insert(0, osp.dirname(osp.dirname(osp.abspath(__file__))))

from projects.mmdet3d_plugin.cli.run_tool import run_tool  # noqa: E402
from projects.mmdet3d_plugin.cli.parsers import add_debug_flag  # noqa: E402
from projects.mmdet3d_plugin.constants import (DEMO_ITERS,  # noqa: E402
                                               REPO_ROOT)


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument('--work-dir', default='work_dirs/quickstart')
    parser.add_argument('--data-root', default='data/nuscenes_synthetic')
    parser.add_argument('--gpus', type=int, default=2,
                        help='training processes (CPU processes without CUDA)')
    parser.add_argument(
        '--accum', type=int, default=1, choices=[1, 2, 4, 8],
        help='gradient accumulation preset grad_accum_xN (default: 1, '
        'none: the schedule is tuned for 4 samples per update)')
    parser.add_argument(
        '--iters', type=int, default=DEMO_ITERS,
        help='training iterations; the config\'s one-cycle schedule is '
        f'stretched to them (default: {DEMO_ITERS})')
    parser.add_argument('--seed', type=int, default=0,
                        help='seed of the training run (default: 0)')
    parser.add_argument('--compare-untrained', action='store_true',
                        help='also evaluate the untrained model (about 10 s)')
    add_debug_flag(parser)
    return parser.parse_args()


def quickstart(args) -> int:
    # A root generated with another seed or size is refused from its
    # marker, before the demo's stack loads (after the arguments).
    from projects.mmdet3d_plugin.synthetic.writer import check_generated_root
    check_generated_root(osp.join(REPO_ROOT, args.data_root))
    from projects.mmdet3d_plugin.demo.quickstart import run_quickstart
    # The summary dict is printed and written to JSON by run_quickstart.
    run_quickstart(args.work_dir, data_root=args.data_root, gpus=args.gpus,
                   accum=args.accum, iters=args.iters,
                   compare_untrained=args.compare_untrained,
                   seed=args.seed)
    return 0


def main():
    return run_tool(quickstart, parse_args())


if __name__ == '__main__':
    sys.exit(main())
