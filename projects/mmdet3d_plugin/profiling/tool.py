"""``tools/profile_pipeline.py``'s command line: its flags, the run and
the ``--json`` file.

Only argparse and mmengine's ``DictAction`` load with this module, so the
tool answers ``--help`` and bad flags before the stack loads:
:func:`run_from_args` imports the profiler (:mod:`.pipeline`) when it
runs.

Public API::

    profile_parser() -> argparse.ArgumentParser
    run_from_args(args: argparse.Namespace) -> int
"""
import argparse

from ..cli.parsers import add_cfg_options, add_debug_flag
from ..fileio.atomic import atomic_write_json
from ..quiet_logger import quiet_logger
from .feed import ASSUMED_GPU_S_PER_SAMPLE


def profile_parser() -> argparse.ArgumentParser:
    """Flags of ``tools/profile_pipeline.py``."""
    parser = argparse.ArgumentParser(
        description='Time each transform of a config\'s train pipeline as '
        'one DataLoader worker on one core, a fresh worker\'s start-up, '
        'and the num_workers per GPU that feed a training step.')
    parser.add_argument('config', help='train config file path')
    parser.add_argument(
        '--data-root', metavar='DIR',
        help='point every dataset and the GT database at this data root')
    parser.add_argument(
        '--samples', type=int, default=20,
        help='samples measured in steady state (default: %(default)s)')
    parser.add_argument(
        '--warmup', type=int, default=2,
        help='samples loaded first and not measured (default: '
        '%(default)s)')
    parser.add_argument(
        '--workers', type=int, default=None, metavar='K',
        help='workers per GPU to judge (default: the config\'s '
        'train_dataloader.num_workers)')
    parser.add_argument(
        '--step-time', type=float, default=None, metavar='S',
        help='seconds of one training step (default: batch size x '
        f'{ASSUMED_GPU_S_PER_SAMPLE} s, an assumed GPU time per sample)')
    parser.add_argument(
        '--no-fresh-worker', dest='fresh_worker', action='store_false',
        help='skip the fresh worker\'s start-up (a new process)')
    add_cfg_options(parser)
    parser.add_argument(
        '--json', metavar='OUT', help='also write the profile as JSON')
    parser.add_argument(
        '--verbose', action='store_true',
        help='show the INFO logs of building the dataset')
    add_debug_flag(parser)
    return parser


def run_from_args(args: argparse.Namespace) -> int:
    """Profile with parsed flags, print the table, write ``--json``."""
    if args.workers is not None and args.workers < 0:
        raise ValueError('tools/profile_pipeline.py: --workers must be >= '
                         f'0; got {args.workers}.')
    # The pipeline's stack loads here, after the arguments are checked.
    from .pipeline import profile_pipeline

    # The INFO tables of the dataset and the GT database would bury the
    # profile.
    with quiet_logger('profile_pipeline', quiet=not args.verbose):
        profile = profile_pipeline(
            args.config, data_root=args.data_root,
            cfg_options=args.cfg_options, samples=args.samples,
            warmup=args.warmup, workers=args.workers,
            step_time=args.step_time, fresh_worker=args.fresh_worker)
    print(profile.format(), flush=True)
    if args.json:
        atomic_write_json(profile.to_json(), args.json)
        print(f'wrote {args.json}')
    return 0
