"""Write the synthetic nuScenes-format dataset.

Example::

    python tools/create_synthetic_nuscenes.py --out-dir data/nus_synthetic
    python tools/create_data.py nuscenes --root-path data/nus_synthetic \
        --out-dir data/nus_synthetic --extra-tag nuscenes --version v1.0-mini
"""
import argparse
import os.path as osp
import sys

sys.path.insert(0, osp.dirname(osp.dirname(osp.abspath(__file__))))

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
    return parser.parse_args()


def main():
    args = parse_args()
    cfg = SyntheticNuScenesConfig(samples_per_scene=args.samples_per_scene)
    root = generate_synthetic_nuscenes(args.out_dir, args.seed, args.version,
                                       cfg)
    print(f'Wrote {args.version} (seed {args.seed}) to {root}')


if __name__ == '__main__':
    main()
