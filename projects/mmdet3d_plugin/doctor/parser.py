"""The flags of ``tools/doctor.py`` (argparse only: the tool answers
``--help`` and bad flags before the checks load the stack)."""
import argparse

from ..cli.parsers import add_cfg_options, add_debug_flag, add_train_flags

#: The launchers the doctor knows, as tools/train.py's ``--launcher``.
LAUNCHERS = ('none', 'pytorch', 'slurm', 'mpi')


def doctor_parser() -> argparse.ArgumentParser:
    """Flags of ``tools/doctor.py``."""
    parser = argparse.ArgumentParser(
        description='Check a training config on this machine, in one '
        'process, before a (multi-GPU) launch. Exits 1 if a check fails.')
    parser.add_argument('config', help='train config file path')
    parser.add_argument(
        '--iters', type=int, default=3,
        help='train iterations to run (default: 3)')
    add_cfg_options(parser)
    parser.add_argument(
        '--json', metavar='PATH',
        help='also write the checklist as a JSON list to PATH')
    parser.add_argument(
        '--world-size', type=int, default=None,
        help='processes the run will start, over all nodes (default: '
        '$WORLD_SIZE, $SLURM_NTASKS or 1); above 1 the model is checked '
        'for DDP. $NNODES (as for tools/dist_train.sh) spreads it over '
        'nodes')
    parser.add_argument(
        '--launcher', choices=LAUNCHERS, default='none',
        help='launcher of the run; anything but none means DDP')
    add_train_flags(parser)  # --accum N, --amp [MODE], as tools/train.py
    parser.add_argument(
        '--auto-scale-lr', action='store_true',
        help='check with tools/train.py --auto-scale-lr applied')
    parser.add_argument(
        '--data-root', metavar='DIR',
        help='point every dataset and evaluator at this data root')
    parser.add_argument(
        '--step-time', type=float, default=None, metavar='S',
        help='seconds of one training step, for data.throughput (default: '
        'the batch size x an assumed GPU time per sample)')
    parser.add_argument(
        '--verbose', action='store_true',
        help='show the INFO logs and warnings of the libraries')
    parser.add_argument(
        '--train-args', nargs=argparse.REMAINDER, default=[],
        metavar='ARGS',
        help='last: the tools/train.py flags of the run, as '
        'DOCTOR=1 tools/dist_train.sh passes them; --accum, --amp, '
        '--auto-scale-lr, --cfg-options and --launcher are checked, the '
        'others (--work-dir, --resume, ...) change nothing checked here')
    add_debug_flag(parser)
    return parser
