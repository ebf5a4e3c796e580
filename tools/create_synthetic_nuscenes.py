"""Write the synthetic nuScenes-format dataset.

Example::

    python tools/create_synthetic_nuscenes.py --out-dir data/nus_synthetic
    python tools/create_data.py nuscenes --root-path data/nus_synthetic \
        --out-dir data/nus_synthetic --extra-tag nuscenes --version v1.0-mini

A bad argument prints one ``error:`` line and exits 1 (``--debug`` shows
the traceback).
"""
import argparse
import os.path as osp
import sys

sys.path.insert(0, osp.dirname(osp.dirname(osp.abspath(__file__))))

from projects.mmdet3d_plugin.apis.errors import (  # noqa: E402
    add_debug_flag, run_tool)
from projects.mmdet3d_plugin.synthetic.writer import (  # noqa: E402
    SyntheticNuScenesConfig, generate_synthetic_nuscenes)


def parse_args():
    parser = argparse.ArgumentParser(
        description='Write a small synthetic dataset in the nuScenes layout')
    parser.add_argument('--out-dir', required=True, help='dataset root')
    parser.add_argument('--version', default='v1.0-mini')
    parser.add_argument('--seed', type=int, default=0)
    parser.add_argument(
        '--samples-per-scene',
        type=int,
        default=SyntheticNuScenesConfig.samples_per_scene,
        help='key frames per scene (10 scenes)')
    add_debug_flag(parser)
    return parser.parse_args()


def create_synthetic_nuscenes(args) -> int:
    cfg = SyntheticNuScenesConfig(samples_per_scene=args.samples_per_scene)
    root = generate_synthetic_nuscenes(args.out_dir, args.seed, args.version,
                                       cfg)
    print(f'Wrote {args.version} (seed {args.seed}) to {root}')
    return 0


def main():
    return run_tool(create_synthetic_nuscenes, parse_args())


if __name__ == '__main__':
    sys.exit(main())
