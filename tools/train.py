"""Train a 3D detector (mmdet3d 1.4 flags plus --accum and --amp MODE).

The flags are parsed and the config path checked before torch, mmcv and
mmdet3d load, so ``--help`` and a wrong path answer at once.
"""
import os.path as osp
import sys

sys.path.insert(0, osp.dirname(osp.dirname(osp.abspath(__file__))))

from projects.mmdet3d_plugin.cli.run_tool import run_tool  # noqa: E402
from projects.mmdet3d_plugin.cli.parsers import (check_config_file,  # noqa: E402
                                                 train_parser)


def parse_args():
    return train_parser().parse_args()


def main():
    args = parse_args()
    run_tool(check_config_file, args)
    # The heavy stack loads here, after the arguments are checked.
    from projects.mmdet3d_plugin.cli.run import train
    from projects.mmdet3d_plugin.dist.teardown import run_objects_freed
    from projects.mmdet3d_plugin.failures.record import record_errors

    # Under torchrun / the Slurm launchers, an uncaught error goes to the
    # rank's torch elastic error file for the failure report.
    # The Runner, freed when the run ends, takes the process groups its
    # model holds with it while the interpreter is whole.
    with run_objects_freed():
        run_tool(record_errors(train), args)


if __name__ == '__main__':
    main()
