"""Create mmdet3d 1.x info files and GT database of a nuScenes root: the
products of mmdet3d's own converter, in parallel and resumable.

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

The work is split over ``--workers`` processes (default: the cores) in
shards of ``--shard-size`` samples kept on disk as they finish
(``<out-dir>/.create_data-<key>/``): a killed run, started again with the
same arguments, redoes only the missing shards. The products equal
mmdet3d's converter's (docs/data_preparation.md); ``--reference`` runs
that converter itself instead (one process, nothing resumable).
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
    parser.add_argument(
        '--workers',
        type=int,
        default=None,
        help='worker processes (default: the cores this process may use)')
    parser.add_argument(
        '--shard-size',
        type=int,
        default=None,
        help='samples per shard, the unit a restarted run redoes '
        "(default: a phase's samples / 32, at most 64)")
    parser.add_argument(
        '--reference',
        action='store_true',
        help="run mmdet3d's own converter (one process) instead")
    add_debug_flag(parser)
    args = parser.parse_args()
    if args.workers is not None and args.workers < 1:
        parser.error(f'--workers must be >= 1; got {args.workers}')
    if args.shard_size is not None and args.shard_size < 1:
        parser.error(f'--shard-size must be >= 1; got {args.shard_size}')
    return args


def create_data(args) -> int:
    # The converters (torch, mmdet3d, the devkit) load after the arguments.
    kwargs = dict(
        out_dir=args.out_dir,
        info_prefix=args.extra_tag,
        version=args.version,
        max_sweeps=args.max_sweeps,
        gt_database=args.gt_database,
        timings={})
    if args.reference:
        from projects.mmdet3d_plugin.create_data.converter import \
            run_mmdet3d_converter
        paths = run_mmdet3d_converter(args.root_path, **kwargs)
    else:
        from projects.mmdet3d_plugin.create_data.prepare import \
            create_nuscenes_infos
        paths = create_nuscenes_infos(
            args.root_path,
            workers=args.workers,
            shard_size=args.shard_size,
            **kwargs)
    from projects.mmdet3d_plugin.create_data.prepare import phase_summary
    print(phase_summary(kwargs['timings']))
    for path in paths:
        print(f'Wrote {path}')
    return 0


def main():
    return run_tool(create_data, parse_args())


if __name__ == '__main__':
    sys.exit(main())
