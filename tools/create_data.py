"""Create mmdet3d 1.x info files with mmdet3d's own nuScenes converter.

Same command line as mmdet3d's ``tools/create_data.py`` for nuScenes, for a
dataset root anywhere (mmdet3d's version only works from a checkout whose
``data/nuscenes`` is the root)::

    python tools/create_data.py nuscenes --root-path data/nus_synthetic \
        --out-dir data/nus_synthetic --extra-tag nuscenes --version v1.0-mini

writes ``nuscenes_infos_train.pkl``, ``nuscenes_infos_val.pkl`` and, as
mmdet3d's does, the ground-truth database for ``ObjectSample``
(``nuscenes_dbinfos_train.pkl``, ``nuscenes_gt_database/``; skip it with
``--no-gt-database``) into ``--out-dir``. ``--version v1.0-trainval`` does
the same for the full dataset (the devkit's ``train`` / ``val`` scenes) and
``--version v1.0-test`` writes ``nuscenes_infos_test.pkl`` (no database);
mmdet3d's ``--version v1.0`` is these two calls. A bad root or argument
prints one ``error:`` line and exits 1 (``--debug`` shows the traceback).
"""
import argparse
import os.path as osp
import sys

sys.path.insert(0, osp.dirname(osp.dirname(osp.abspath(__file__))))

from projects.mmdet3d_plugin.cli.run_tool import run_tool  # noqa: E402
from projects.mmdet3d_plugin.cli.parsers import add_debug_flag  # noqa: E402


def parse_args():
    parser = argparse.ArgumentParser(description='nuScenes info converter')
    parser.add_argument('dataset', choices=['nuscenes'])
    parser.add_argument('--root-path', required=True, help='dataset root')
    parser.add_argument(
        '--out-dir', default=None, help='where the infos go (default: root)')
    parser.add_argument('--extra-tag', default='nuscenes')
    parser.add_argument(
        '--version',
        default='v1.0-mini',
        help='v1.0-mini (default), v1.0-trainval or v1.0-test')
    parser.add_argument('--max-sweeps', type=int, default=10)
    parser.add_argument(
        '--gt-database',
        action=argparse.BooleanOptionalAction,
        default=True,
        help='build the ground-truth database for ObjectSample (default)')
    add_debug_flag(parser)
    return parser.parse_args()


def create_data(args) -> int:
    # mmdet3d's converter loads after the arguments.
    from projects.mmdet3d_plugin.create_data.converter import \
        create_nuscenes_infos
    paths = create_nuscenes_infos(
        args.root_path,
        out_dir=args.out_dir,
        info_prefix=args.extra_tag,
        version=args.version,
        max_sweeps=args.max_sweeps,
        gt_database=args.gt_database)
    for path in paths:
        print(f'Wrote {path}')
    return 0


def main():
    return run_tool(create_data, parse_args())


if __name__ == '__main__':
    sys.exit(main())
