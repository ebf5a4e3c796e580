"""Write the synthetic nuScenes-format dataset.

Example::

    python tools/create_synthetic_nuscenes.py --out-dir data/nus_synthetic
    python tools/create_data.py nuscenes --root-path data/nus_synthetic \
        --out-dir data/nus_synthetic --extra-tag nuscenes --version v1.0-mini

``--version v1.0-trainval`` writes the 850 official trainval scene names
(the devkit's ``train`` / ``val`` select 700 / 150 of them) and
``--version v1.0-test`` the 150 test scenes, without annotations; keep them
small with ``--keyframes-per-scene`` (1 or more). ``--points-per-frame
34720`` (the average of nuScenes' HDL-32E) writes key frames and sweeps of
that many points, objects included, instead of about 2700 and 1000 (the
default, unchanged). A bad argument prints
one ``error:`` line and exits 1 (``--debug`` shows the traceback).
"""
import argparse
import os.path as osp
import sys

sys.path.insert(0, osp.dirname(osp.dirname(osp.abspath(__file__))))

from projects.mmdet3d_plugin.cli.run_tool import run_tool  # noqa: E402
from projects.mmdet3d_plugin.cli.parsers import add_debug_flag  # noqa: E402
from projects.mmdet3d_plugin.synthetic.scene import (SyntheticNuScenesConfig)  # noqa: E402


def parse_args():
    parser = argparse.ArgumentParser(
        description='Write a small synthetic dataset in the nuScenes layout')
    parser.add_argument('--out-dir', required=True, help='dataset root')
    parser.add_argument(
        '--version',
        default='v1.0-mini',
        help='v1.0-mini (10 scenes, default), v1.0-trainval (850) or '
        'v1.0-test (150, no annotations): the official scene names')
    parser.add_argument('--seed', type=int, default=0)
    parser.add_argument(
        '--keyframes-per-scene',
        '--samples-per-scene',
        dest='samples_per_scene',
        type=int,
        default=SyntheticNuScenesConfig.samples_per_scene,
        help='key frames (samples) per scene; with 1, instances have no '
        'velocity (default: %(default)s)')
    parser.add_argument(
        '--points-per-frame',
        type=int,
        default=None,
        metavar='N',
        help='points of every LiDAR key frame and sweep, objects as dense '
        'as their frame (34720: the nuScenes HDL-32E average; default: '
        'about 2700 per key frame and 1000 per sweep)')
    add_debug_flag(parser)
    return parser.parse_args()


def create_synthetic_nuscenes(args) -> int:
    # The writer (OpenCV, the devkit's tables) loads after the arguments.
    from projects.mmdet3d_plugin.synthetic.writer import \
        generate_synthetic_nuscenes
    cfg = SyntheticNuScenesConfig(
        samples_per_scene=args.samples_per_scene,
        points_per_frame=args.points_per_frame)
    root = generate_synthetic_nuscenes(args.out_dir, args.seed, args.version,
                                       cfg)
    print(f'Wrote {args.version} (seed {args.seed}) to {root}')
    return 0


def main():
    return run_tool(create_synthetic_nuscenes, parse_args())


if __name__ == '__main__':
    sys.exit(main())
