"""``tools/doctor.py``'s command line: its flags, ``--train-args`` folded
into them, the run and the ``--json`` file.

Only argparse and mmengine's ``DictAction`` load with this module, so the
tool answers ``--help`` and bad flags before the checks load the stack:
:func:`run_from_args` imports the preflight (:mod:`.preflight`) when it
runs, after ``env.stack``'s metadata part (an mmcv that mmdet3d refuses
when imported stops the doctor with its cause and fix before the stack
loads).

Public API::

    doctor_parser() -> argparse.ArgumentParser
    parse_gpu_memory(text: str) -> int
    merge_train_args(args: argparse.Namespace) -> argparse.Namespace
    run_from_args(args: argparse.Namespace) -> int
    main(argv: Optional[Sequence[str]] = None) -> int
"""
import argparse
import os
import re
from typing import Optional, Sequence

from ..cli.parsers import (LAUNCHERS, add_cfg_options, add_debug_flag,
                           add_train_flags, train_parser)
from ..fileio.atomic import atomic_write_json


_SIZE = re.compile(r'^\s*(\d+(?:\.\d+)?)\s*(g|gb|gib|m|mb|mib)?\s*$', re.I)


def parse_gpu_memory(text: str) -> int:
    """``--gpu-memory`` in bytes: ``16G``, ``80GB``, ``24576M`` (G means
    GiB, as GPUs are sold) or a bare number of GiB."""
    found = _SIZE.match(str(text))
    if found is None or float(found.group(1)) <= 0:
        raise argparse.ArgumentTypeError(
            f'expected a size such as 16G, 80GB or 24576M, got {text!r}')
    unit = (found.group(2) or 'g').lower()[0]
    return int(float(found.group(1)) * (2**30 if unit == 'g' else 2**20))


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
        '--gpu-memory', type=parse_gpu_memory, default=None, metavar='SIZE',
        help="memory of the run's GPUs, e.g. 16G or 80GB: one training "
        'step is measured against it, with and without activation '
        'checkpointing, --accum 2 and mixed precision (default: the local '
        "GPU's; without a GPU the check is skipped)")
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


def merge_train_args(args: argparse.Namespace) -> argparse.Namespace:
    """Fold ``--train-args`` into the doctor's own flags.

    They are parsed by ``tools/train.py``'s parser, so a flag training
    would reject is rejected here. A setting given both ways must agree:
    the doctor has to check what will run.
    """
    if not args.train_args:
        return args
    parser = train_parser()
    parser.prog = 'tools/doctor.py --train-args (tools/train.py flags)'
    train = parser.parse_args([args.config, *args.train_args])
    merged = argparse.Namespace(**vars(args))
    for key, unset in (('accum', None), ('amp', None), ('launcher', 'none')):
        mine, theirs = getattr(args, key), getattr(train, key)
        if mine != unset and theirs != unset and mine != theirs:
            flag = '--' + key
            raise ValueError(
                f'tools/doctor.py: {flag} {mine} differs from {flag} '
                f'{theirs} in --train-args; give it once, as training '
                'will run it')
        if theirs != unset:
            setattr(merged, key, theirs)
    merged.auto_scale_lr = args.auto_scale_lr or train.auto_scale_lr
    if train.cfg_options:
        merged.cfg_options = {**(args.cfg_options or {}),
                              **train.cfg_options}
    return merged


def run_from_args(args: argparse.Namespace) -> int:
    """Run the doctor on parsed ``tools/doctor.py`` flags, print the
    checklist, write ``--json``; returns the exit code."""
    args = merge_train_args(args)
    # The checks import mmdet3d, which refuses some mmcv installs on import
    # (mmcv >= 2.2, onedl-mmcv): those are told from metadata first.
    from .checks.env import stack_blocker
    blocker = stack_blocker()
    if blocker is not None:
        print(f'doctor: {args.config}\n[FAIL] {blocker.check}  '
              f'{blocker.detail}\n       fix: {blocker.fix}\ndoctor: '
              'stopped before the other checks, which import mmdet3d: fix '
              'this first', flush=True)
        if args.json:
            atomic_write_json([blocker.to_dict()], args.json)
        return 1
    # The checks load the heavy stack, after the arguments are parsed.
    from .preflight import run_doctor
    world_size = args.world_size
    if world_size is None:
        world_size = int(
            os.environ.get('WORLD_SIZE') or os.environ.get('SLURM_NTASKS')
            or 1)
    nnodes = int(os.environ.get('NNODES', 1) or 1)
    report = run_doctor(
        args.config,
        iters=args.iters,
        cfg_options=args.cfg_options,
        world_size=world_size,
        launcher=args.launcher,
        data_root=args.data_root,
        nnodes=nnodes,
        verbose=args.verbose,
        amp=args.amp,
        accum=args.accum,
        auto_scale_lr=args.auto_scale_lr,
        step_time=args.step_time,
        gpu_memory=args.gpu_memory)
    print(report.format(), flush=True)
    if args.json:
        atomic_write_json(report.to_json(), args.json)
    return report.exit_code


def main(argv: Optional[Sequence[str]] = None) -> int:
    """``tools/doctor.py`` with ``argv``, without the one-line error
    printer; returns the exit code."""
    return run_from_args(doctor_parser().parse_args(argv))
