"""What ``tools/train.py`` and ``tools/test.py`` do, importable and testable.

The scripts stay thin: they parse arguments with
:func:`~.parsers.train_parser` / :func:`~.parsers.test_parser` and hand
them to :func:`train` / :func:`test`, which prepare the config with
:func:`~.prepare.prepare_run` and run it; the run's threads and process
groups end in order on every rank when it ends (``dist/teardown.py``).
"""
import argparse
import logging
import os
import os.path as osp

from mmengine.config import Config
from mmengine.logging import print_log
from mmengine.runner import BaseLoop, Runner

from ..compat.checkpoints import weights_only_note
from ..compat.python_fork import FIX as FORK_FIX
from ..compat.python_fork import fork_deadlock
from ..dist.teardown import ended_in_order
from ..engine.checkpoint_fit import check_checkpoint_fits
from ..failures.rank_info import note_rank_context
from .prepare import prepare_run
from .runner_setup import build_runner, setup_distributed


def _set_local_rank(args: argparse.Namespace) -> None:
    if 'LOCAL_RANK' not in os.environ:
        os.environ['LOCAL_RANK'] = str(args.local_rank)


def prepare_train(args: argparse.Namespace) -> Config:
    """The config ``tools/train.py``'s flags give (see :func:`prepare_run`).
    """
    return prepare_run(
        args.config, 'train', cfg_options=args.cfg_options, amp=args.amp,
        accum=args.accum, data_root=args.data_root, launcher=args.launcher,
        work_dir=args.work_dir, sync_bn=args.sync_bn,
        auto_scale_lr=args.auto_scale_lr, resume=args.resume,
        checkpoint_minutes=args.checkpoint_minutes)


def prepare_test(args: argparse.Namespace) -> Config:
    """The config ``tools/test.py``'s flags give (see :func:`prepare_run`).
    """
    return prepare_run(
        args.config, 'test', cfg_options=args.cfg_options,
        amp=getattr(args, 'amp', None), data_root=args.data_root,
        launcher=args.launcher, work_dir=args.work_dir,
        checkpoint=args.checkpoint)


def _runner(cfg: Config) -> Runner:
    """The Runner of a prepared config, its folders noted for the failure
    report."""
    note_rank_context(work_dir=osp.abspath(cfg.work_dir))
    setup_distributed(cfg)
    runner = build_runner(cfg)
    note_rank_context(log_dir=osp.abspath(runner.log_dir))
    return runner


def warn_fork_deadlock(cfg: Config) -> None:
    """One warning when this interpreter has CPython gh-112275 and the
    run forks DataLoader workers (``compat/python_fork.py``)."""
    problem = fork_deadlock()
    mp_cfg = (cfg.get('env_cfg') or {}).get('mp_cfg') or {}
    workers = (cfg.get('train_dataloader') or {}).get('num_workers', 0)
    if problem and workers and mp_cfg.get('mp_start_method',
                                          'fork') == 'fork':
        print_log(f'{problem}. Fix: {FORK_FIX}', logger='current',
                  level=logging.WARNING)


def note_checkpoint_loading(loads_checkpoint: bool) -> None:
    """One line when the run loads a checkpoint on a torch older than
    weights-only loading by default (``compat/checkpoints.py``)."""
    note = weights_only_note() if loads_checkpoint else None
    if note:
        print_log(note, logger='current', level=logging.INFO)


def end_data_loading(runner: Runner, names) -> None:
    """Let go of the DataLoader iterator of each loop among ``names`` that
    the runner built (``dataloader_iterator``, the iteration-based loops'),
    so its workers end now through the iterator's own shutdown.

    Left to the cycle collector with the Runner (``dist/teardown.py``
    frees it), the iterator's queues are closed before it and torch's
    ``_shutdown_workers`` then waits 5 s, twice, for each worker. A loop
    still a config dict is not built here.
    """
    for name in names:
        # mmengine's property builds a loop that is still a dict.
        if not isinstance(vars(runner).get(f'_{name}'), BaseLoop):
            continue
        loop = getattr(runner, name)
        if getattr(loop, 'dataloader_iterator', None) is not None:
            loop.dataloader_iterator = None


def train(args: argparse.Namespace) -> Runner:
    """Train as mmdet3d's ``tools/train.py`` does, with the plugin's extras."""
    _set_local_rank(args)
    runner = _runner(prepare_train(args))
    warn_fork_deadlock(runner.cfg)
    note_checkpoint_loading(bool(runner.cfg.get('load_from')
                                 or runner.cfg.get('resume')))
    try:
        with ended_in_order():
            runner.train()
    finally:
        end_data_loading(runner, ('train_loop', 'val_loop'))
    return runner


def test(args: argparse.Namespace) -> dict:
    """Test a checkpoint as mmdet3d's ``tools/test.py`` does."""
    _set_local_rank(args)
    runner = _runner(prepare_test(args))
    note_checkpoint_loading(True)
    check_checkpoint_fits(runner.model, args.checkpoint, args.config)
    try:
        with ended_in_order():
            metrics = runner.test()
    finally:
        end_data_loading(runner, ('test_loop', ))
    if metrics is None:
        print_log('test: no metrics were returned', logger='current',
                  level=logging.WARNING)
    return metrics
