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
from projects.mmdet3d_plugin.doctor.parser import doctor_parser  # noqa: E402


def parse_args():
    return doctor_parser().parse_args()


def main():
    args = parse_args()
    # The checks load the heavy stack, after the arguments are parsed.
    from projects.mmdet3d_plugin.doctor.preflight import run_from_args
    return run_tool(run_from_args, args)


if __name__ == '__main__':
    sys.exit(main())
