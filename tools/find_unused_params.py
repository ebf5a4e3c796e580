"""Preflight for multi-GPU training: which parameters get no gradient?

Trains a few iterations of CONFIG in this one process (no DDP, validation or
checkpoints; logs in a temporary work dir unless --work-dir is given),
prints the unused parameters grouped by module and the cheapest correct
``find_unused_parameters`` setting.

    python tools/find_unused_params.py CONFIG [--iters N] [--cfg-options ...]

Exit status: 0 when every trainable parameter received a gradient, 1 when
some did not (DDP with find_unused_parameters=False would fail) or on bad
input (one ``error:`` line; ``--debug`` shows the traceback), 2 on usage
errors.
"""
import argparse
import os.path as osp
import sys

sys.path.insert(0, osp.dirname(osp.dirname(osp.abspath(__file__))))

from projects.mmdet3d_plugin.cli.run_tool import run_tool  # noqa: E402
from projects.mmdet3d_plugin.cli.parsers import (add_cfg_options,  # noqa: E402
                                                 add_debug_flag,
                                                 check_config_file)


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        description='Train N iterations in one process and list the '
        'parameters that received no gradient')
    parser.add_argument('config', help='train config file path')
    parser.add_argument(
        '--iters', type=int, default=3, help='iterations to check')
    parser.add_argument(
        '--work-dir',
        help='keep logs and unused_params.json here (default: a temporary '
        'directory, removed afterwards)')
    add_cfg_options(parser)
    add_debug_flag(parser)
    return parser.parse_args(argv)


def find_unused_params(args) -> int:
    check_config_file(args)
    # The training stack loads after the arguments are checked.
    from projects.mmdet3d_plugin.cli.find_unused import find_unused_parameters
    from projects.mmdet3d_plugin.cli.prepare import prepare_run
    from projects.mmdet3d_plugin.engine.unused_params.table import describe
    cfg = prepare_run(args.config, 'train', cfg_options=args.cfg_options)
    report = find_unused_parameters(cfg, args.iters, work_dir=args.work_dir)
    print(describe(report, report['table']))
    unused = report['unused_on_all_ranks'] or report['unused_on_some_ranks']
    return 1 if unused else 0


def main(argv=None) -> int:
    return run_tool(find_unused_params, parse_args(argv))


if __name__ == '__main__':
    sys.exit(main())
