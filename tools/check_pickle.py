"""Check that a config's dataset pickles for spawn / forkserver workers.

Builds ``<split>_dataloader.dataset``, pickles it as a DataLoader worker
started by spawn receives it, loads it in a spawned process, and prints the
size, the time and any attribute that cannot be pickled. Exits 1 on failure
(a bad config or argument: one ``error:`` line; ``--debug`` shows the
traceback).

Example::

    python tools/check_pickle.py configs/my_config.py --split val
"""
import argparse
import os.path as osp
import sys

sys.path.insert(0, osp.dirname(osp.dirname(osp.abspath(__file__))))

from projects.mmdet3d_plugin.cli.run_tool import run_tool  # noqa: E402
from projects.mmdet3d_plugin.cli.parsers import (add_cfg_options,  # noqa: E402
                                                 add_debug_flag,
                                                 check_config_file)


def parse_args():
    parser = argparse.ArgumentParser(
        description='Pickle the dataset of a config as a spawn worker would')
    parser.add_argument('config', help='config file path')
    parser.add_argument('--split',
                        default='train',
                        choices=['train', 'val', 'test'],
                        help='which <split>_dataloader.dataset to build')
    parser.add_argument('--no-load',
                        action='store_true',
                        help='skip unpickling in a spawned process')
    add_cfg_options(parser)
    add_debug_flag(parser)
    return parser.parse_args()


def check_pickle(args) -> int:
    check_config_file(args)
    # The dataset's stack loads after the arguments are checked.
    from projects.mmdet3d_plugin.config.loading import load_config
    from projects.mmdet3d_plugin.datasets.builder import build_split_dataset
    from projects.mmdet3d_plugin.pickling.check import (check_picklable,
                                                        format_report)
    cfg = load_config(args.config, args.cfg_options)
    dataset = build_split_dataset(cfg, args.split)
    report = check_picklable(dataset, load_in_spawn=not args.no_load)
    print(format_report(report, type(dataset).__name__))
    return 0 if report.ok else 1


def main():
    return run_tool(check_pickle, parse_args())


if __name__ == '__main__':
    sys.exit(main())
