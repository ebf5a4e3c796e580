"""Check that a config's dataset pickles for spawn / forkserver workers.

Builds ``<split>_dataloader.dataset``, pickles it as a DataLoader worker
started by spawn receives it, loads it in a spawned process, and prints the
size, the time and any attribute that cannot be pickled. Exits 1 on failure.

Example::

    python tools/check_pickle.py configs/my_config.py --split val
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def parse_args():
    from projects.mmdet3d_plugin.config.loading import (  # noqa: E402
        add_cfg_options)
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
    return parser.parse_args()


def main():
    args = parse_args()
    from projects.mmdet3d_plugin.config.loading import (  # noqa: E402
        load_config)
    from projects.mmdet3d_plugin.datasets.pickle_audit import (  # noqa: E402
        build_split_dataset, check_picklable, format_report)
    cfg = load_config(args.config, args.cfg_options)
    dataset = build_split_dataset(cfg, args.split)
    report = check_picklable(dataset, load_in_spawn=not args.no_load)
    print(format_report(report, type(dataset).__name__))
    return 0 if report.ok else 1


if __name__ == '__main__':
    sys.exit(main())
