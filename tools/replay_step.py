"""Replay one recorded training step in one process.

Example::

    python tools/replay_step.py work_dirs/centerpoint_pillar02 --iteration 1234
    python tools/replay_step.py work_dirs/toy --iteration 4 --rank 1

Rebuilds the batch that rank R trained at iteration N from the data
position of the newest checkpoint before N (each sample from its own
random state, as in the run), loads that checkpoint's weights, and prints
the batch's samples, its loss terms, the model inputs that hold NaN / Inf,
the first module whose output does, and whether the step was skipped as
``nonfinite.json`` records it.
"""
import os.path as osp
import sys

sys.path.insert(0, osp.dirname(osp.dirname(osp.abspath(__file__))))

from projects.mmdet3d_plugin.cli.run_tool import run_tool  # noqa: E402
from projects.mmdet3d_plugin.cli.parsers import (check_work_dir,  # noqa: E402
                                                 replay_parser)


def main():
    args = replay_parser().parse_args()
    run_tool(check_work_dir, args)
    # The stack loads here, after the arguments are checked.
    from projects.mmdet3d_plugin.cli.replay_step import replay_step
    run_tool(replay_step, args)
    return 0


if __name__ == '__main__':
    sys.exit(main())
