"""``tools/migrate_checkpoint.py``: its flags (:func:`migrate_parser`) and
its run (:func:`run_from_args`). Only argparse loads with this module, so
the tool answers ``--help`` and a missing file before torch and mmdet3d
load: :func:`run_from_args` imports the conversion when it runs.
"""
import argparse
import os.path as osp
from typing import Optional, Sequence

#: ``--head`` and ``--from-convention`` choices (``migrate.HEADS``,
#: ``boxes.CONVENTIONS``, named here to keep the parser light).
HEAD_CHOICES = ('centerpoint', 'anchor3d', 'detr')
CONVENTION_CHOICES = ('old', 'new')


def migrate_parser() -> argparse.ArgumentParser:
    """Flags of ``tools/migrate_checkpoint.py``."""
    parser = argparse.ArgumentParser(
        description="Convert a mmdet3d 0.x checkpoint's box head to the 1.x "
        'box convention (l, w, h, -θ-π/2): CenterPoint, anchor heads '
        '(PointPillars, SECOND, VoxelNet) and DETR-style heads (DETR3D, '
        'BEVFormer). Writes OUT atomically and prints what changed; for '
        'anchor heads, the config lines the 1.x config must carry.')
    parser.add_argument('src', metavar='IN', help='the 0.x checkpoint')
    parser.add_argument('dst', metavar='OUT',
                        help='the converted checkpoint to write')
    parser.add_argument(
        '--config', metavar='NEW_CONFIG',
        help='the 1.x config the weights are for: its head is checked '
        '(anchor sizes, dir_offset, shapes); refused with the line to '
        'change')
    parser.add_argument(
        '--from-convention', choices=CONVENTION_CHOICES,
        help="the checkpoint's box convention where its meta does not tell "
        '(mmdet3d 0.17.0 to 0.18.x, or no version): old = (w, l, h, θ), '
        'trained before 1.0.0rc0')
    parser.add_argument(
        '--head', choices=HEAD_CHOICES,
        help='the head to convert where the state dict holds several')
    parser.add_argument(
        '--debug', action='store_true',
        help='show the traceback of input errors instead of one error line '
        '(same as MMDET3D_PLUGIN_DEBUG=1)')
    return parser


def check_paths(args: argparse.Namespace) -> None:
    """IN and ``--config`` exist, OUT is not IN's folder.

    Raises:
        FileNotFoundError: Naming the missing file.
        ValueError: If OUT is a folder.
    """
    if not osp.isfile(args.src):
        raise FileNotFoundError(
            f'migrate_checkpoint: checkpoint {args.src!r} does not exist.')
    if args.config is not None and not osp.isfile(args.config):
        raise FileNotFoundError(
            f'migrate_checkpoint: --config {args.config!r} does not exist.')
    if osp.isdir(args.dst):
        raise ValueError(
            f'migrate_checkpoint: OUT {args.dst!r} is a folder; name the '
            'file to write, e.g. checkpoint_1x.pth.')


def run_from_args(args: argparse.Namespace) -> int:
    """Convert with parsed flags and print the report; returns 0."""
    # torch, mmengine and mmdet3d load here, after the flags are checked.
    from .migrate import migrate_checkpoint
    migration = migrate_checkpoint(
        args.src, args.dst, config=args.config,
        from_convention=args.from_convention, head=args.head)
    print(migration.format(), flush=True)
    return 0


def main(argv: Optional[Sequence[str]] = None) -> int:
    """``tools/migrate_checkpoint.py`` with ``argv``, without the one-line
    error printer; returns the exit status."""
    args = migrate_parser().parse_args(argv)
    check_paths(args)
    return run_from_args(args)
