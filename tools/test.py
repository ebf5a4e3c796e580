"""Test and evaluate a checkpoint (mmdet3d 1.4 flags)."""
import os.path as osp
import sys

sys.path.insert(0, osp.dirname(osp.dirname(osp.abspath(__file__))))

from projects.mmdet3d_plugin.cli import (  # noqa: E402
    record_errors, run_tool, test, test_parser)


def parse_args():
    return test_parser().parse_args()


def main():
    # Under torchrun / the Slurm launchers, an uncaught error goes to the
    # rank's torch elastic error file for the failure report.
    run_tool(record_errors(test), parse_args())


if __name__ == '__main__':
    main()
