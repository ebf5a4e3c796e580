"""One preflight for a training config, before a multi-GPU launch.

``tools/doctor.py CONFIG`` runs, in one process (plus the DataLoader workers
it starts), the checks that otherwise fail hours into a distributed job:

- env: Python, torch and its distributed backends, mmcv's compiled ops
  (Voxelization runs), package versions against
  ``requirements/mminstall.txt``, spconv for sparse models, the DataLoader
  start method of ``env_cfg.mp_cfg``;
- config: it loads (presets, 0.x keys, plugin), every ``type=`` resolves in
  its registry, data paths exist, info files are mmdet3d 1.x, each nuScenes
  evaluator finds the tables of its version, dataloader settings are valid;
- data: a sample of the files the pipelines open is whole (key frames,
  sweeps, GT-database objects, images: ``tools/check_data.py``'s check,
  read), the train and val datasets build and pickle for the start method
  (offending attribute paths named), a real DataLoader delivers its first
  batch, and free ``/dev/shm`` and host RAM hold what the node's workers
  need, from that batch's bytes and the workers' measured memory, and
  the workers deliver the samples a step consumes (a few samples timed
  per transform, as ``tools/profile_pipeline.py`` does);
- model: the Runner builds, N train iterations run, and parameters unused
  in all or some iterations are named with the ``find_unused_parameters``
  setting DDP needs; one step's peak of tensor memory against the GPUs'
  (``--gpu-memory``, or the local GPU's) and what activation
  checkpointing, half the batch with ``--accum 2`` and mixed precision
  would give;
- optim: float16 / bfloat16 possible here (bfloat16's slowdown measured on
  the model where the CPU emulates it), accumulation with BatchNorm,
  the effective batch and the LR with and without auto-scaling, finite
  losses;
- dist: the backend the launchers pick here starts, the world size fits,
  the timeouts of the run are ordered.

Each check prints one line, ``pass``, ``warn`` or ``fail``, with the fix for
the last two. A check that crashes fails with its exception and the others
still run; checks that need its result say ``skipped: ...``. Nothing is
written outside a temporary folder unless ``--json`` asks for it.

Examples:
    >>> report = run_doctor('configs/centerpoint/my_config.py', iters=3,
    ...                     world_size=8)
    >>> report.exit_code, report.get('model.unused_params').status
    (0, 'pass')
"""
import logging
import multiprocessing
import tempfile
import time
import warnings
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Dict, List, Optional

from ..cli.parsers import LAUNCHERS
from ..quiet_logger import quiet_logger
from .checks import config as cfg_
from .checks import (data, dist, env, files, gpu_memory, memory, model,
                     optim, registry_types, throughput)
from .context import (CheckResult, DoctorContext, DoctorOptions, FAIL, PASS,
                      WARN)

#: Order of the areas in the checklist.
AREAS = ('env', 'config', 'data', 'model', 'optim', 'dist')
_MARK = {PASS: 'pass', WARN: 'WARN', FAIL: 'FAIL'}
#: Fix shown when a check raises, for checks whose exception points at one
#: part of the config.
CRASH_FIXES = {
    'config.load': 'fix the config file (the exception names the line or '
    'key); python -c "from mmengine import Config; Config.fromfile(PATH)" '
    'shows the same error',
    'data.dataset.train': 'fix train_dataloader.dataset (the exception '
    'names the setting or file)',
    'data.dataset.val': 'fix val_dataloader.dataset (the exception names '
    'the setting or file)',
    'model.build': 'fix the model section of the config (the exception '
    'names the module and argument)',
    'model.train': 'the exception comes from the forward / loss / backward '
    'of the model on a real batch; reproduce it with tools/train.py and '
    'train_dataloader.num_workers=0',
}


@dataclass
class DoctorReport:
    """What :func:`run_doctor` found.

    Args:
        options (DoctorOptions): What was checked.
        results (list[CheckResult]): One per checklist line, in area order.
        seconds (float): Wall time of the whole run.
    """
    options: DoctorOptions
    results: List[CheckResult] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def failed(self) -> List[CheckResult]:
        """The lines with status 'fail'."""
        return [r for r in self.results if r.status == FAIL]

    @property
    def exit_code(self) -> int:
        """0 when nothing failed, 1 otherwise."""
        return 1 if self.failed else 0

    def get(self, check: str) -> CheckResult:
        """The line named ``check``.

        Raises:
            KeyError: If there is none; the message lists the names.
        """
        for result in self.results:
            if result.check == check:
                return result
        raise KeyError(
            f'doctor report: no check named {check!r}; the checks are '
            f'{[r.check for r in self.results]}')

    def to_json(self) -> List[Dict[str, Any]]:
        """The lines as JSON objects (check, status, detail, fix, seconds).
        """
        return [r.to_dict() for r in self.results]

    def format(self) -> str:
        """The checklist as printed by ``tools/doctor.py``."""
        opts = self.options
        width = max([len(r.check) for r in self.results] + [10])
        lines = [
            f'doctor: {opts.config} (world size {opts.world_size}, launcher '
            f'{opts.launcher}, {opts.iters} train iterations)'
        ]
        for r in self.results:
            lines.append(f'[{_MARK[r.status]}] {r.check:<{width}}  {r.detail}')
            if r.status != PASS and r.fix:
                lines.append(f'       {"":<{width}}  fix: {r.fix}')
        counts = {s: sum(r.status == s for r in self.results)
                  for s in (PASS, WARN, FAIL)}
        lines.append(
            f'doctor: {counts[PASS]} pass, {counts[WARN]} warn, '
            f'{counts[FAIL]} fail in {self.seconds:.1f} s' +
            (' -- fix the failures before launching' if counts[FAIL] else ''))
        return '\n'.join(lines)


def _checks() -> List:
    """All checks in run order, as ``(name, fn, needs, provides)``.

    ``needs`` and ``provides`` name what checks hand on (see
    :meth:`DoctorContext.run`): a check whose needs are missing is skipped.
    """
    cfg = ('cfg', )
    return [
        ('env.python', env.check_python, (), ()),
        ('env.torch', env.check_torch, (), ()),
        ('env.stack', env.check_stack, (), ()),
        ('env.mmcv_ops', env.check_mmcv_ops, (), ()),
        ('env.versions', env.check_versions, (), ()),
        ('config.load', cfg_.check_load, (), cfg),
        ('env.spconv', env.check_spconv, cfg, ()),
        ('env.mp_start_method', env.check_start_method, cfg,
         ('start_method', )),
        ('env.fork_deadlock', env.check_fork_deadlock, cfg, ()),
        ('config.plugin', cfg_.check_plugin, cfg, ()),
        ('config.types', registry_types.check_types, cfg, ()),
        ('config.data_paths', cfg_.check_data_paths, cfg, ('info_files', )),
        ('config.info_files', cfg_.check_info_files, ('info_files', ), ()),
        ('config.data_version', cfg_.check_data_version, cfg, ()),
        ('config.dataloaders', cfg_.check_dataloaders, cfg, ()),
        ('dist.backend', dist.check_backend, cfg, ()),
        ('dist.world_size', dist.check_world_size, cfg, ()),
        ('dist.timeouts', dist.check_timeouts, cfg, ()),
        ('optim.amp', optim.check_amp, cfg, ('amp_ok', )),
        ('optim.lr', optim.check_lr, cfg, ()),
        ('data.files', files.check_data_files, cfg, ()),
        ('data.dataset.train', partial(data.build_dataset, split='train'),
         cfg, ('dataset.train', )),
        ('data.dataset.val', partial(data.build_dataset, split='val'), cfg,
         ('dataset.val', )),
        ('data.pickle.train', partial(data.check_pickle, split='train'),
         ('dataset.train', 'start_method'), ()),
        ('data.pickle.val', partial(data.check_pickle, split='val'),
         ('dataset.val', 'start_method'), ()),
        ('data.first_batch', data.check_first_batch,
         ('dataset.train', 'start_method'), ('train_iterator', )),
        ('data.shm', memory.check_shm, ('train_iterator', ), ()),
        ('data.host_ram', memory.check_host_ram, ('train_iterator', ), ()),
        ('data.throughput', throughput.check_throughput,
         ('dataset.train', 'train_iterator'), ()),
        ('model.build', model.check_build, cfg, ('runner', )),
        ('optim.bf16_speed', optim.check_bf16_speed, ('runner', ),
         ('bf16_emulated', )),
        ('model.train', model.check_train, ('runner', 'dataset.train'),
         ('train_stats', )),
        ('model.gpu_memory', gpu_memory.check_gpu_memory,
         ('runner', 'memory_batch'), ()),
        ('model.unused_params', model.check_unused, ('train_stats', ), ()),
        ('optim.accumulation_bn', optim.check_accumulation_bn, ('runner', ),
         ()),
        ('optim.loss', optim.check_loss, ('train_stats', ), ()),
    ]


def _area_rank(result: CheckResult) -> int:
    area = result.check.split('.', 1)[0]
    return AREAS.index(area) if area in AREAS else len(AREAS)


def _release(ctx: DoctorContext) -> None:
    """Stop DataLoader workers, close the Runner's log file, and leave the
    current mmengine logger as mmengine's default one is (INFO to the
    console), so that the caller's logs are not swallowed."""
    ctx.artifacts.pop('train_iterator', None)
    ctx.artifacts.pop('train_loader', None)
    runner = ctx.artifacts.pop('runner', None)
    if runner is not None:
        visualizer = getattr(runner, 'visualizer', None)
        if visualizer is not None and hasattr(visualizer, 'close'):
            visualizer.close()
    for logger in ctx.loggers:
        for handler in list(logger.handlers):
            if isinstance(handler, logging.FileHandler):
                handler.close()
                logger.removeHandler(handler)
            else:
                handler.setLevel(logging.INFO)
        logger.setLevel(logging.INFO)


def run_doctor(config: str,
               iters: int = 3,
               cfg_options: Optional[Dict[str, Any]] = None,
               world_size: int = 1,
               launcher: str = 'none',
               data_root: Optional[str] = None,
               nnodes: int = 1,
               verbose: bool = False,
               amp: Optional[str] = None,
               accum: Optional[int] = None,
               auto_scale_lr: bool = False,
               step_time: Optional[float] = None,
               gpu_memory: Optional[int] = None) -> DoctorReport:
    """Run every check on ``config`` in this process.

    Args:
        config (str): Config file.
        iters (int): Train iterations to run. Defaults to 3.
        cfg_options (dict, optional): ``--cfg-options`` overrides, as parsed
            by mmengine's ``DictAction``. Defaults to None.
        world_size (int): Processes the run will start over all nodes; with
            more than one the model runs under DDP. Defaults to 1.
        launcher (str): Launcher of the run ('none', 'pytorch', 'slurm',
            'mpi'); anything but 'none' means DDP. Defaults to 'none'.
        data_root (str, optional): Point every dataset and evaluator at this
            root (see :func:`redirect_data_root`). Defaults to None.
        nnodes (int): Nodes the world size is spread over. Defaults to 1.
        verbose (bool): Keep INFO logs and warnings of the libraries.
            Defaults to False.
        amp (str, optional): ``--amp`` of tools/train.py ('fp16', 'bf16',
            'fp16-static'). Defaults to None (the config's precision).
        accum (int, optional): ``--accum`` of tools/train.py. Defaults to
            None (the config's accumulation).
        auto_scale_lr (bool): ``--auto-scale-lr`` of tools/train.py.
            Defaults to False.
        step_time (float, optional): Seconds of one training step, for
            ``data.throughput``. Defaults to None (an assumed GPU time per
            sample).
        gpu_memory (int, optional): Bytes of memory of the run's GPUs, for
            ``model.gpu_memory``. Defaults to None (the local GPU's; the
            check is skipped without a GPU).

    Returns:
        DoctorReport: The checklist.
    """
    for name, value, minimum in (('iters', iters, 1),
                                 ('world_size', world_size, 1),
                                 ('nnodes', nnodes, 1)):
        if isinstance(value, bool) or not isinstance(value, int) or \
                value < minimum:
            raise ValueError(
                f'doctor: {name} must be an integer >= {minimum}, got '
                f'{value!r}')
    if step_time is not None and (
            isinstance(step_time, bool)
            or not isinstance(step_time, (int, float)) or step_time <= 0):
        raise ValueError(
            f'doctor: step_time must be a number of seconds > 0, got '
            f'{step_time!r}')
    if launcher not in LAUNCHERS:
        raise ValueError(
            f'doctor: launcher must be one of {LAUNCHERS}, got {launcher!r}')
    options = DoctorOptions(
        config=config,
        iters=iters,
        cfg_options=cfg_options,
        world_size=world_size,
        launcher=launcher,
        data_root=data_root,
        nnodes=nnodes,
        verbose=verbose,
        amp=amp,
        accum=accum,
        auto_scale_lr=auto_scale_lr,
        step_time=step_time,
        gpu_memory=gpu_memory)
    start = time.perf_counter()
    start_method = multiprocessing.get_start_method(allow_none=True)
    with tempfile.TemporaryDirectory(prefix='doctor_') as tmp_dir, \
            warnings.catch_warnings(), \
            quiet_logger('doctor', quiet=not verbose):
        if not verbose:
            warnings.simplefilter('ignore')
        ctx = DoctorContext(options=options, tmp_dir=tmp_dir)
        try:
            for name, fn, needs, provides in _checks():
                ctx.run(name, fn, needs=needs, provides=provides,
                        crash_fix=CRASH_FIXES.get(name, ''))
        finally:
            _release(ctx)
            # The Runner sets the start method of the process; put it back
            # (None included: set_start_method(None) unsets it).
            if multiprocessing.get_start_method(allow_none=True) != \
                    start_method:
                multiprocessing.set_start_method(start_method, force=True)
    results = sorted(ctx.results, key=_area_rank)
    return DoctorReport(options, results, time.perf_counter() - start)
