"""The one way a run is prepared: ``tools/train.py``, ``tools/test.py``,
``tools/find_unused_params.py`` and ``tools/doctor.py`` turn their flags
into the config the Runner gets with :func:`prepare_run`.

The order is mmdet3d's ``tools/train.py`` order, the plugin's flags last:

1. the config file: ``Config.fromfile``, its mmdet3d 0.x keys translated,
   its ``presets = [...]`` merged in order (``config.read_config``);
2. ``--cfg-options``;
3. ``--amp`` (a precision preset, or float32 with ``fp32``), then
   ``--accum``, then ``--data-root`` (every dataset, evaluator and GT
   database moved);
4. the run's own settings: the launcher, ``--work-dir`` (else
   ``./work_dirs/<config name>``); for training the run defaults (the
   table of ``engine/run_defaults.py``: the atomic checkpoint hook, with
   ``--checkpoint-minutes``, the loops that resume exactly,
   ``PreemptionHook``, ``NonFiniteGuardHook``, ``BadSampleHook``),
   ``--sync_bn``, ``--auto-scale-lr`` and ``--resume`` (in a restarted or
   requeued run without it: the newest checkpoint of the work dir); for
   testing the checkpoint as ``load_from``;
5. the config's legacy ``plugin_dir`` imported (``config.plugin_dir``);
6. ``optim_wrapper`` validated, once (an error names what set the value);
7. the checks that must come before anything is built, each raising one
   error that names the fix: the precision runs on this machine
   (training), :func:`~projects.mmdet3d_plugin.config.run_checks.
   check_run_config`, and the timeout budget of a distributed run
   (:func:`timeout_error`).

The doctor prepares the same config with ``stop=False``: it does not stop
on the problems of steps 5 and 7 but reports each as a check of its own
(``config.plugin``, ``optim.amp``, ``config.data_version``,
``config.dataloaders``, ``dist.timeouts``).
"""
import os.path as osp
from typing import Dict, Optional, Union

import torch
from mmengine.config import Config
from mmengine.logging import print_log
from mmengine.runner import find_latest_checkpoint

from ..config.data_root import redirect_data_root
from ..config.loading import merge_cfg_options, read_config, settings_source
from ..config.plugin_dir import PluginDirCollisionError, import_plugins
from ..config.optim_wrapper import validate_optim_wrapper
from ..config.presets import merge_train_flags
from ..config.run_checks import RUN_LOOPS, check_run_config
from ..dist.budget import timeout_problems
from ..engine.amp import check_amp_supported
from ..engine.resume.restart import checkpoint_seed, restart_attempt
from ..engine.run_defaults import apply_run_defaults


def process_group_backend() -> str:
    """The backend the launchers start here: 'nccl' with CUDA, 'gloo'
    without (see ``cli.runner_setup.setup_distributed``)."""
    return 'nccl' if torch.cuda.is_available() else 'gloo'


def timeout_error(cfg: Config, backend: Optional[str] = None) -> \
        Optional[str]:
    """The timeouts of ``cfg`` that are not ordered, as one error message.

    Args:
        cfg (Config): The prepared config.
        backend (str, optional): The process group's backend. Defaults to
            :func:`process_group_backend`.

    Returns:
        str | None: Each problem with its fix (``'. Fix: '``), joined by
        ``'; '``; None when the timeouts are ordered.
    """
    problems = timeout_problems(cfg, backend or process_group_backend())
    return '; '.join(problems) if problems else None


def keep_checkpoint_seed(cfg: Config, checkpoint: Optional[str]) -> None:
    """A resumed run whose config sets no seed takes the checkpoint's.

    mmengine restores the seed only after the datasets are built, so
    without this CBGS's resampling and the GT database's shuffle, drawn at
    construction, would differ from the run being continued.

    Args:
        cfg (Config): The config, changed in place.
        checkpoint (str, optional): The checkpoint resumed from.
    """
    randomness = cfg.get('randomness') or {}
    if randomness.get('seed') is not None or not checkpoint or \
            not osp.isfile(checkpoint):
        return
    seed = checkpoint_seed(checkpoint)
    if seed is not None:
        cfg.randomness = dict(randomness, seed=seed)
        print_log(f'resume: seed {seed} of {checkpoint} (the config sets '
                  'none)', logger='current')


def _restart_resume(work_dir: str) -> Optional[str]:
    """In a restarted or requeued run (torchrun ``--max-restarts``, Slurm
    requeue) without ``--resume``: the newest complete checkpoint of the
    work dir, or None (train from the start: none was saved yet)."""
    attempt = restart_attempt()
    if attempt is None:
        return None
    newest = find_latest_checkpoint(work_dir)
    if newest is None:
        print_log(f'restart: {attempt.text()}: no checkpoint in {work_dir} '
                  'yet, training starts from the beginning', logger='current')
    return newest


def _set_run_settings(cfg: Config, run: str, config: str, launcher: str,
                      work_dir: Optional[str], sync_bn: str,
                      auto_scale_lr: bool, resume: Optional[str],
                      checkpoint: Optional[str],
                      checkpoint_minutes: Optional[float]) -> None:
    """Step 4 of the order: the settings that are the run's, not the
    model's."""
    cfg.launcher = launcher
    if work_dir is not None:
        cfg.work_dir = work_dir
    elif cfg.get('work_dir', None) is None:
        cfg.work_dir = osp.join('./work_dirs',
                                osp.splitext(osp.basename(config))[0])
    if run == 'test':
        cfg.load_from = checkpoint
        return
    apply_run_defaults(cfg, checkpoint_minutes)
    if sync_bn != 'none':
        cfg.sync_bn = sync_bn
    if auto_scale_lr:
        if 'base_batch_size' not in (cfg.get('auto_scale_lr') or {}):
            raise ValueError(
                f'{run}: --auto-scale-lr needs `auto_scale_lr = dict('
                'enable=False, base_batch_size=N)` in the config, N being the '
                'total batch size the LR was tuned for')
        cfg.auto_scale_lr.enable = True
    if resume is None:
        resume = _restart_resume(cfg.work_dir)
    if resume == 'auto':
        cfg.resume = True
        cfg.load_from = None
    elif resume is not None:
        if not osp.isfile(resume):
            raise FileNotFoundError(
                f'train: --resume {resume}: no such checkpoint; give an '
                'existing .pth file, or bare --resume for the latest one in '
                'the work dir')
        cfg.resume = True
        cfg.load_from = resume
    if cfg.get('resume'):
        keep_checkpoint_seed(
            cfg, cfg.load_from or find_latest_checkpoint(cfg.work_dir))


def prepare_run(config: str,
                run: str = 'train',
                *,
                cfg_options: Optional[Dict] = None,
                amp: Union[None, bool, str] = None,
                accum: Optional[int] = None,
                data_root: Optional[str] = None,
                launcher: str = 'none',
                work_dir: Optional[str] = None,
                sync_bn: str = 'none',
                auto_scale_lr: bool = False,
                resume: Optional[str] = None,
                checkpoint: Optional[str] = None,
                checkpoint_minutes: Optional[float] = None,
                stop: bool = True) -> Config:
    """Turn a config file and the tools' flags into the config the Runner
    gets, in the order of this module's docstring.

    Args:
        config (str): Config file (or ``package::path``).
        run (str): 'train' or 'test'. Defaults to 'train'.
        cfg_options (dict, optional): ``--cfg-options``, as parsed by
            mmengine's ``DictAction``. Defaults to None.
        amp (bool | str, optional): ``--amp`` ('fp16', 'fp16-static',
            'bf16', 'fp32'; True: 'fp16'). Defaults to None (the config's).
        accum (int, optional): ``--accum``. Defaults to None (the
            config's).
        data_root (str, optional): ``--data-root``. Defaults to None.
        launcher (str): ``--launcher``. Defaults to 'none'.
        work_dir (str, optional): ``--work-dir``. Defaults to None (the
            config's, else ``./work_dirs/<config name>``).
        sync_bn (str): ``--sync_bn`` (train). Defaults to 'none'.
        auto_scale_lr (bool): ``--auto-scale-lr`` (train). Defaults to
            False.
        resume (str, optional): ``--resume`` (train): 'auto' or a
            checkpoint. Defaults to None.
        checkpoint (str, optional): The checkpoint to test (test).
            Defaults to None.
        checkpoint_minutes (float, optional): ``--checkpoint-minutes``
            (train): also save every N minutes. Defaults to None.
        stop (bool): Raise on the problems found before building: a
            ``plugin_dir`` that collides, a precision this machine cannot
            train in, :func:`check_run_config`'s, the timeout budget. False
            (the doctor, which reports each as a check): a colliding
            ``plugin_dir`` is not imported and those checks are left out.
            Defaults to True.

    Returns:
        Config: The prepared config.

    Raises:
        ValueError: For bad flags or config values, or a problem of the
            checks (one line naming the fix).
        FileNotFoundError: For a missing checkpoint or GT database.
        PluginDirCollisionError: If ``plugin_dir`` collides (``stop``).
        AmpUnsupportedError: If this machine cannot train in the
            configured precision (``stop``, training).

    Examples:
        >>> cfg = prepare_run('configs/centerpoint/my_config.py', 'train',
        ...                   cfg_options={'train_cfg.max_iters': 100},
        ...                   amp='bf16', accum=4, data_root='data/nus/')
    """
    if run not in RUN_LOOPS:
        raise ValueError(
            f"prepare_run: run must be 'train' or 'test', got {run!r}")
    if run == 'test' and (checkpoint is None or not osp.isfile(checkpoint)):
        raise FileNotFoundError(
            f'test: checkpoint {checkpoint!r} does not exist')
    cfg, presets = read_config(config)
    merge_cfg_options(cfg, cfg_options)
    merge_train_flags(cfg, accum=accum, amp=amp)
    if data_root is not None:
        redirect_data_root(cfg, data_root)
    _set_run_settings(cfg, run, config, launcher, work_dir, sync_bn,
                      auto_scale_lr, resume, checkpoint, checkpoint_minutes)
    try:
        import_plugins(cfg)
    except PluginDirCollisionError:
        if stop:
            raise
        # Loaded without that plugin; the doctor's config.plugin fails.
    validate_optim_wrapper(
        cfg,
        settings_source(config, presets, cfg_options=bool(cfg_options),
                        amp=amp, accum=accum))
    if not stop:
        return cfg
    if run == 'train':
        check_amp_supported(cfg)
    check_run_config(cfg, run)
    problem = timeout_error(cfg)
    if problem is not None:
        raise ValueError(problem)
    return cfg
