"""Find every broken data file a config's pipelines will open, before a
launch: key-frame LiDAR files, the sweeps, ``ObjectSample``'s GT-database
objects and camera images, listed from the config and its info files.

Example::

    python tools/check_data.py configs/centerpoint/\
centerpoint_pillar02_second_secfpn_8xb4-cyclic-20e_nus-3d.py \
        --data-root data/nuscenes --workers 8 --json work_dirs/data_check.json

Prints one table (kind, files, broken), then each broken file with its
kind, sample token and problem; writes the JSON report (``--json``,
default ``data_check.json``). ``--read`` also reads every file (whole
points, finite values, images that decode). Exits 0 when no file is
broken, 1 when one is, 2 when the check cannot run (bad arguments, a
missing config or info file: one ``error:`` line).
"""
import os.path as osp
import sys

sys.path.insert(0, osp.dirname(osp.dirname(osp.abspath(__file__))))

from projects.mmdet3d_plugin.cli.run_tool import run_tool  # noqa: E402
from projects.mmdet3d_plugin.cli.parsers import check_config_file  # noqa: E402
from projects.mmdet3d_plugin.data_check.check_report import (  # noqa: E402
    EXIT_USAGE)
from projects.mmdet3d_plugin.data_check.tool import (  # noqa: E402
    check_data_parser, run_from_args)


def parse_args():
    return check_data_parser().parse_args()


def main():
    args = parse_args()
    run_tool(check_config_file, args, status=EXIT_USAGE)
    # The config's stack loads in run_from_args, after the arguments are
    # checked.
    return run_tool(run_from_args, args, status=EXIT_USAGE)


if __name__ == '__main__':
    sys.exit(main())
