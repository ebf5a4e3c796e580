"""What ``tools/train.py`` and ``tools/test.py`` do, importable and testable.

The scripts stay thin: they parse arguments with :func:`train_parser` /
:func:`test_parser` and hand them to :func:`train` / :func:`test`.
"""
import argparse
import importlib
import logging
import os
import os.path as osp
import uuid
from typing import Optional

import torch
from mmengine.config import Config
from mmengine.logging import print_log
from mmengine.runner import Runner

from mmdet3d.registry import RUNNERS  # finds mmengine's runners too

from ..compat.cpu_dist import init_cpu_dist
from ..config.data_root import redirect_data_root
from ..config.loading import add_cfg_options, load_config
from ..config.presets import add_train_flags, apply_train_flags
from ..datasets.forkserver import setup_forkserver_preload
from ..engine.amp import check_amp_supported
from ..engine.hooks.atomic_checkpoint_hook import use_atomic_checkpoints
from .errors import run_tool  # noqa: F401  used by tools/*.py

PLUGIN = 'projects.mmdet3d_plugin'


def _common_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument('--work-dir', help='the dir to save logs and models')
    parser.add_argument(
        '--data-root', metavar='DIR',
        help="point every dataset, evaluator and ObjectSample's GT database "
        'at this data root (a config\'s data_root variable is substituted '
        'when the file is read, so --cfg-options data_root=... cannot)')
    add_cfg_options(parser)
    parser.add_argument(
        '--launcher',
        choices=['none', 'pytorch', 'slurm', 'mpi'],
        default='none',
        help='job launcher')
    # torch.distributed.launch passes --local-rank on torch >= 2.0 and
    # --local_rank before; torchrun passes neither (it sets LOCAL_RANK).
    parser.add_argument('--local_rank', '--local-rank', type=int, default=0)
    parser.add_argument(
        '--debug',
        action='store_true',
        help='show the traceback of input errors instead of one error line '
        '(same as MMDET3D_PLUGIN_DEBUG=1)')


def train_parser() -> argparse.ArgumentParser:
    """Flags of mmdet3d 1.4's ``tools/train.py`` plus the plugin's."""
    parser = argparse.ArgumentParser(description='Train a 3D detector')
    parser.add_argument('config', help='train config file path')
    add_train_flags(parser)
    parser.add_argument(
        '--sync_bn',
        choices=['none', 'torch', 'mmcv'],
        default='none',
        help='convert BatchNorm layers to SyncBatchNorm')
    parser.add_argument(
        '--auto-scale-lr',
        action='store_true',
        help='scale the LR by world size x batch size x accumulation')
    parser.add_argument(
        '--resume',
        nargs='?',
        type=str,
        const='auto',
        help='resume from this checkpoint, or from the latest one in the '
        'work dir when no path is given')
    _common_args(parser)
    return parser


def test_parser() -> argparse.ArgumentParser:
    """Flags of mmdet3d 1.4's ``tools/test.py`` that apply to LiDAR models."""
    parser = argparse.ArgumentParser(description='Test (and evaluate) a model')
    parser.add_argument('config', help='test config file path')
    parser.add_argument('checkpoint', help='checkpoint file')
    _common_args(parser)
    return parser


def import_plugins(cfg: Config) -> None:
    """Import this plugin and the legacy ``plugin_dir`` of a config.

    Configs written for UniAD / BEVFormer say ``plugin = True`` and
    ``plugin_dir = 'projects/mmdet3d_plugin/'``; the directory is imported as
    a module relative to the working directory. Configs that import the
    plugin through ``custom_imports`` were already handled by
    ``Config.fromfile``.
    """
    importlib.import_module(PLUGIN)
    if not cfg.get('plugin', False):
        return
    plugin_dir = cfg.get('plugin_dir')
    if not plugin_dir:
        raise ValueError(
            'config: `plugin = True` needs `plugin_dir`, e.g. '
            "plugin_dir = 'projects/mmdet3d_plugin/'")
    module = osp.normpath(plugin_dir).replace(os.sep, '.').strip('.')
    try:
        importlib.import_module(module)
    except ImportError as e:
        raise ImportError(
            f'config: cannot import plugin_dir={plugin_dir!r} as module '
            f'{module!r} ({e}); run from the directory that holds it, or put '
            'that directory on PYTHONPATH') from e
    print_log(f'imported plugin_dir {plugin_dir!r}', logger='current')


def load(config: str, cfg_options: Optional[dict], launcher: str,
         work_dir: Optional[str], data_root: Optional[str] = None) -> Config:
    """Load a config for our tools: plugin, presets, 0.x keys, overrides,
    and the data root when one is given."""
    cfg = load_config(config, cfg_options=cfg_options)
    if data_root is not None:
        redirect_data_root(cfg, data_root)
    import_plugins(cfg)
    cfg.launcher = launcher
    if work_dir is not None:
        cfg.work_dir = work_dir
    elif cfg.get('work_dir', None) is None:
        cfg.work_dir = osp.join('./work_dirs',
                                osp.splitext(osp.basename(config))[0])
    return cfg


def setup_distributed(cfg: Config) -> None:
    """Make ``launcher != 'none'`` work on machines without CUDA.

    Starts a gloo process group (see :func:`compat.init_cpu_dist`) and wraps
    the model with ``CPUDistributedDataParallel``, keeping the config's
    ``find_unused_parameters`` and other wrapper settings.
    """
    if cfg.launcher == 'none' or torch.cuda.is_available():
        return
    dist_cfg = cfg.get('env_cfg', {}).get('dist_cfg', {})
    init_cpu_dist(timeout=dist_cfg.get('timeout'))
    wrapper = dict(cfg.get('model_wrapper_cfg') or {})
    wrapper_type = wrapper.get('type', 'MMDistributedDataParallel')
    if wrapper_type not in ('MMDistributedDataParallel',
                            'CPUDistributedDataParallel'):
        raise ValueError(
            f'config: model_wrapper_cfg.type={wrapper_type!r} cannot run on '
            'a machine without CUDA; use MMDistributedDataParallel (the '
            'default) or run on GPUs')
    wrapper['type'] = 'CPUDistributedDataParallel'
    wrapper.setdefault('broadcast_buffers', False)
    wrapper.setdefault('find_unused_parameters',
                       cfg.get('find_unused_parameters', False))
    cfg.model_wrapper_cfg = wrapper


def build_runner(cfg: Config) -> Runner:
    """Build the Runner named by ``runner_type`` (mmengine's by default).

    Under ``env_cfg.mp_cfg.mp_start_method='forkserver'`` the fork server is
    started first with torch, mmengine, mmdet3d and the plugin preloaded,
    so DataLoader workers start as fast as forked ones.
    """
    mp_cfg = cfg.get('env_cfg', {}).get('mp_cfg', {})
    if mp_cfg.get('mp_start_method') == 'forkserver':
        setup_forkserver_preload(start=True)
    if 'runner_type' in cfg:
        return RUNNERS.build(cfg)
    return Runner.from_cfg(cfg)


def isolate_runner(cfg: Config, prefix: str) -> Config:
    """Give a throw-away Runner its own logger and visualizer.

    Runners of one process share the logger and the visualizer of the same
    name, and mmdet3d's default runtime names its visualizer
    ``'visualizer'``: a Runner built later in the process would write to
    the first one's (possibly deleted) log folder. Used by the preflight
    tools, whose Runners live in temporary folders.

    Args:
        cfg (Config): Config to change in place.
        prefix (str): Start of the unique names.
    """
    name = f'{prefix}_{uuid.uuid4().hex[:8]}'
    cfg.experiment_name = name
    if isinstance(cfg.get('visualizer'), dict):
        cfg.visualizer.name = name
    return cfg


def _set_local_rank(args: argparse.Namespace) -> None:
    if 'LOCAL_RANK' not in os.environ:
        os.environ['LOCAL_RANK'] = str(args.local_rank)


def prepare_train(args: argparse.Namespace) -> Config:
    """Turn parsed train flags into the config the Runner will get."""
    _set_local_rank(args)
    cfg = load(args.config, args.cfg_options, args.launcher, args.work_dir,
               args.data_root)
    use_atomic_checkpoints(cfg)
    apply_train_flags(cfg, accum=args.accum, amp=args.amp)
    check_amp_supported(cfg)
    if args.sync_bn != 'none':
        cfg.sync_bn = args.sync_bn
    if args.auto_scale_lr:
        if 'base_batch_size' not in cfg.get('auto_scale_lr', {}):
            raise ValueError(
                'train: --auto-scale-lr needs `auto_scale_lr = dict('
                'enable=False, base_batch_size=N)` in the config, N being the '
                'total batch size the LR was tuned for')
        cfg.auto_scale_lr.enable = True
    if args.resume == 'auto':
        cfg.resume = True
        cfg.load_from = None
    elif args.resume is not None:
        if not osp.isfile(args.resume):
            raise FileNotFoundError(
                f'train: --resume {args.resume}: no such checkpoint; give an '
                'existing .pth file, or bare --resume for the latest one in '
                'the work dir')
        cfg.resume = True
        cfg.load_from = args.resume
    return cfg


def train(args: argparse.Namespace) -> Runner:
    """Train as mmdet3d's ``tools/train.py`` does, with the plugin's extras."""
    cfg = prepare_train(args)
    setup_distributed(cfg)
    runner = build_runner(cfg)
    runner.train()
    return runner


def test(args: argparse.Namespace) -> dict:
    """Test a checkpoint as mmdet3d's ``tools/test.py`` does."""
    _set_local_rank(args)
    if not osp.isfile(args.checkpoint):
        raise FileNotFoundError(
            f'test: checkpoint {args.checkpoint!r} does not exist')
    cfg = load(args.config, args.cfg_options, args.launcher, args.work_dir,
               args.data_root)
    cfg.load_from = args.checkpoint
    setup_distributed(cfg)
    runner = build_runner(cfg)
    metrics = runner.test()
    if metrics is None:
        print_log('test: no metrics were returned', logger='current',
                  level=logging.WARNING)
    return metrics
