"""Check a training config on this machine before a (multi-GPU) launch.

Runs, in one process, the checks that otherwise fail hours into a
distributed job: environment, config, data loading and pickling, a few train
iterations with the unused-parameter check, mixed precision, accumulation,
LR scaling and the distributed backend. Prints a pass / warn / fail
checklist with a fix per problem and exits 1 if a check fails.

Example::

    python tools/doctor.py configs/centerpoint/my_config.py --world-size 8
"""
import os.path as osp
import sys

sys.path.insert(0, osp.dirname(osp.dirname(osp.abspath(__file__))))

from projects.mmdet3d_plugin.cli.run_tool import run_tool  # noqa: E402
from projects.mmdet3d_plugin.doctor.tool import (  # noqa: E402
    doctor_parser, run_from_args)


def parse_args():
    return doctor_parser().parse_args()


def main():
    # The checks load the heavy stack in run_from_args, after the
    # arguments are parsed.
    return run_tool(run_from_args, parse_args())


if __name__ == '__main__':
    sys.exit(main())
