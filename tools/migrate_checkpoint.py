"""Convert a mmdet3d 0.x checkpoint's box head to the 1.x box convention.

Usage::

    python tools/migrate_checkpoint.py IN OUT [--config NEW_CONFIG]
        [--from-convention old|new] [--head centerpoint|anchor3d|detr]

mmdet3d 1.0.0rc0 changed LiDAR boxes from (w, l, h, θ) to (l, w, h,
-θ-π/2). OUT gets the head's last layers converted (CenterPoint's
``CenterHead``, anchor heads, DETR-style ``reg_branches``), written
atomically with ``meta['box_convention'] = 'mmdet3d>=1.0'``; the table of
what changed is printed, and for anchor heads the config lines the 1.x
config must carry (checked against ``--config`` when given). A
checkpoint already converted or written by 1.x is left alone. Bad input
prints one ``error:`` line and exits 1 (``--debug`` shows the traceback).
See docs/migrating_0x_projects.md.
"""
import os.path as osp
import sys

sys.path.insert(0, osp.dirname(osp.dirname(osp.abspath(__file__))))

from projects.mmdet3d_plugin.box_convention.tool import (  # noqa: E402
    check_paths, migrate_parser, run_from_args)
from projects.mmdet3d_plugin.cli.run_tool import run_tool  # noqa: E402


def parse_args(argv=None):
    return migrate_parser().parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    run_tool(check_paths, args)
    return run_tool(run_from_args, args)


if __name__ == '__main__':
    sys.exit(main())
