"""Time a config's train pipeline, transform by transform, and the
DataLoader workers per GPU that feed a training step.

Example::

    python tools/create_synthetic_nuscenes.py --out-dir data/nus_dense \
        --points-per-frame 34720
    python tools/create_data.py nuscenes --root-path data/nus_dense \
        --out-dir data/nus_dense --extra-tag nuscenes --version v1.0-mini
    python tools/profile_pipeline.py configs/centerpoint/\
centerpoint_pillar02_second_secfpn_8xb4-cyclic-20e_nus-3d.py \
        --data-root data/nus_dense --samples 20 --step-time 0.25 \
        --json work_dirs/profile_pillar02.json

Prints steady-state milliseconds per sample of each transform (one worker
on one core, warm-up samples excluded), a fresh worker's start-up to its
first sample (numba compilation included), samples/s per worker and the
``num_workers`` per GPU for the step time.
"""
import os.path as osp
import sys

sys.path.insert(0, osp.dirname(osp.dirname(osp.abspath(__file__))))

from projects.mmdet3d_plugin.cli.run_tool import run_tool  # noqa: E402
from projects.mmdet3d_plugin.cli.parsers import check_config_file  # noqa: E402
from projects.mmdet3d_plugin.profiling.tool import (  # noqa: E402
    profile_parser, run_from_args)


def parse_args():
    return profile_parser().parse_args()


def main():
    args = parse_args()
    run_tool(check_config_file, args)
    # The pipeline's stack loads in run_from_args, after the arguments are
    # checked.
    return run_tool(run_from_args, args)


if __name__ == '__main__':
    sys.exit(main())
