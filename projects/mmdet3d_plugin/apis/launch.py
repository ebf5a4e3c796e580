"""What ``tools/train.py`` and ``tools/test.py`` do, importable and testable.

The scripts stay thin: they parse arguments with :func:`train_parser` /
:func:`test_parser` and hand them to :func:`train` / :func:`test`.
"""
import argparse
import importlib
import logging
import os
import os.path as osp
import re
import sys
import uuid
from typing import List, Optional, Tuple

import torch
from mmengine.config import Config
from mmengine.logging import print_log
from mmengine.runner import Runner

from mmdet3d.registry import RUNNERS  # finds mmengine's runners too

from ..constants import PLUGIN_MODULE as PLUGIN
from ..compat.cpu_dist import init_cpu_dist
from ..config.data_root import redirect_data_root
from ..config.loading import add_cfg_options, load_config
from ..config.run_checks import check_run_config
from ..config.presets import (FP32_FLAG, add_train_flags, apply_train_flags,
                              force_float32)
from ..datasets.forkserver import setup_forkserver_preload
from ..engine.amp import check_amp_supported
from ..engine.checkpoint_fit import check_checkpoint_fits
from ..engine.hooks.atomic_checkpoint_hook import use_atomic_checkpoints
from ..failures.error_files import record_errors  # noqa: F401  tools/*.py
from ..failures.rank_info import note_rank_context
from .errors import run_tool  # noqa: F401  used by tools/*.py


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
    parser.add_argument(
        '--amp', choices=[FP32_FLAG], default=None,
        help='"fp32": evaluate in float32 whatever the config sets '
        '(val_cfg / test_cfg fp16, AMP optimizer wrappers)')
    _common_args(parser)
    return parser


class PluginDirCollisionError(ImportError):
    """A config's ``plugin_dir`` names a module that is already imported
    from another folder (this package, most often).

    Args:
        detail (str): What was expected and what was found, one line.
        fix (str): What to do, one sentence.
    """

    def __init__(self, detail: str, fix: str):
        super().__init__(f'config: {detail}; {fix}')
        self.detail = detail
        self.fix = fix


def _import_roots() -> List[str]:
    """The working directory, then ``sys.path``, as absolute folders."""
    roots = []
    for entry in [os.getcwd()] + sys.path:
        root = osp.abspath(entry or os.getcwd())
        if osp.isdir(root) and root not in roots:
            roots.append(root)
    return roots


def locate_plugin_dir(plugin_dir: str) -> Tuple[str, str, Optional[str]]:
    """Where a config's legacy ``plugin_dir`` is, and its module name.

    UniAD / BEVFormer run from their repository's root, and ``plugin_dir``
    is relative to it: the folder is looked up under the working directory
    first, then under the entries of ``sys.path``.

    Args:
        plugin_dir (str): The config's ``plugin_dir``, e.g.
            ``'projects/mmdet3d_plugin/'``.

    Returns:
        tuple[str, str, str | None]: The module name (the path with dots),
        the folder the module is imported from (the working directory, or
        the ``sys.path`` entry where it was found), and the real path of
        the plugin folder, None when no such folder exists.

    Raises:
        ValueError: If ``plugin_dir`` does not map to a module name.
    """
    path = osp.normpath(plugin_dir)
    roots = _import_roots()
    root = roots[0]
    if osp.isabs(path):
        inside = [r for r in roots
                  if osp.commonpath([r, path]) == r and r != path]
        if inside:
            root = inside[0]
        path = osp.relpath(path, root)
    parts = path.split(os.sep)
    if not all(part.isidentifier() for part in parts):
        raise ValueError(
            f'config: plugin_dir={plugin_dir!r} must be a folder inside the '
            f'working directory ({root}) whose path, with dots, is a module '
            f'name, got {".".join(parts)!r}; run from the repository that '
            "holds the plugin and give the path relative to it, e.g. "
            "plugin_dir='projects/mmdet3d_plugin/'")
    for candidate in [root] + roots:
        if osp.isdir(osp.join(candidate, path)):
            return '.'.join(parts), candidate, osp.realpath(
                osp.join(candidate, path))
    return '.'.join(parts), root, None


def _module_folders(module) -> List[str]:
    """The folders a module's submodules are imported from (or its file)."""
    folders = list(getattr(module, '__path__', None) or [])
    if not folders and getattr(module, '__file__', None):
        folders = [module.__file__]
    return [osp.realpath(f) for f in folders]


def _module_name_suggestion(root: str) -> str:
    name = re.sub(r'\W+', '_', osp.basename(root).lower()).strip('_')
    if not name or not name.isidentifier() or name[0].isdigit():
        name = 'my'
    return f'{name}_plugin'


def _collision(plugin_dir: str, module: str, root: str,
               folder: str) -> Optional[PluginDirCollisionError]:
    """The longest part of ``module`` already imported from elsewhere."""
    ours = _module_folders(sys.modules[PLUGIN])[0]
    parts = module.split('.')
    for i in range(len(parts), 0, -1):
        name = '.'.join(parts[:i])
        imported = sys.modules.get(name)
        expected = osp.realpath(osp.join(root, *parts[:i]))
        if imported is None:
            continue
        got = _module_folders(imported)
        if expected in got:
            continue
        got_text = ', '.join(got) or repr(imported)
        ours_or_parent = got in ([ours], [osp.dirname(ours)])
        if name == PLUGIN and got == [ours]:
            what = (f'a different folder with the same module name as this '
                    f'package ({ours}): one process imports one module '
                    f'{PLUGIN}, and the tools run on this package, so your '
                    'plugin would not be imported')
        elif name == module:
            what = (f'a different folder with the same module name as the '
                    f'imported module {name} ({got_text})')
        else:
            whose = ', the parent of this package' if ours_or_parent else ''
            what = (f'but its parent package {name} is imported from '
                    f'{got_text}{whose}, not from {expected}, so {module} '
                    'cannot be imported from there')
        new = _module_name_suggestion(root)
        fix = (f'give your plugin a top-level module name of its own: move '
               f'{folder} to {osp.join(root, new)}, set plugin_dir='
               f"'{new}/' and change its imports of {module} to {new}")
        if ours_or_parent:
            fix += ("; or run it with your repository's own tools, without "
                    'this package')
        return PluginDirCollisionError(
            f'plugin_dir={plugin_dir!r} is {folder}, {what}', fix)
    return None


def plugin_dir_collision(cfg: Config) -> Optional[PluginDirCollisionError]:
    """The collision of the config's ``plugin_dir`` with imported modules.

    ``plugin_dir = 'projects/mmdet3d_plugin/'`` of a UniAD / BEVFormer
    repository names the module ``projects.mmdet3d_plugin``, the module
    name of this package: Python imports one of the two, and the other is
    shadowed. The module name and each of its parents that is already
    imported (``projects`` is this package's parent) must come from the
    ``plugin_dir`` folder; when one comes from another folder, the error
    names both folders and the fix. Nothing is imported here.

    Args:
        cfg (Config): A loaded config.

    Returns:
        PluginDirCollisionError | None: The error to raise or report; None
        when the config has no legacy plugin, its folder does not exist,
        or nothing collides (``plugin_dir`` is this package's own folder).
    """
    plugin_dir = cfg.get('plugin_dir') if cfg.get('plugin', False) else None
    if not plugin_dir:
        return None
    module, root, folder = locate_plugin_dir(plugin_dir)
    if folder is None:
        return None
    return _collision(plugin_dir, module, root, folder)


def import_plugins(cfg: Config) -> None:
    """Import this plugin and the legacy ``plugin_dir`` of a config.

    Configs written for UniAD / BEVFormer say ``plugin = True`` and
    ``plugin_dir = 'projects/mmdet3d_plugin/'``; the folder is looked up
    under the working directory (then under ``sys.path``) and imported as
    the module its path names, the working directory being added to the
    end of ``sys.path`` when needed. When that module name (or a parent,
    such as ``projects``) is already imported from another folder, as a
    UniAD repository's ``projects.mmdet3d_plugin`` collides with this
    package, nothing is imported and :class:`PluginDirCollisionError`
    names both folders (see :func:`plugin_dir_collision`). A
    ``plugin_dir`` that is this package's own folder is this package.
    Configs that import the plugin through ``custom_imports`` were
    already handled by ``Config.fromfile``.

    Raises:
        ValueError: If ``plugin = True`` comes without a usable
            ``plugin_dir``.
        PluginDirCollisionError: If the module name of ``plugin_dir`` is
            already imported from another folder.
        ImportError: If the folder is missing or fails to import.
    """
    importlib.import_module(PLUGIN)
    if not cfg.get('plugin', False):
        return
    plugin_dir = cfg.get('plugin_dir')
    if not plugin_dir:
        raise ValueError(
            'config: `plugin = True` needs `plugin_dir`, e.g. '
            "plugin_dir = 'projects/mmdet3d_plugin/'")
    module, root, folder = locate_plugin_dir(plugin_dir)
    if folder is None:
        raise ImportError(
            f'config: plugin_dir={plugin_dir!r} is not a folder under the '
            f'working directory ({root}) nor under sys.path; run from the '
            'repository that holds it, or put that repository on PYTHONPATH')
    collision = _collision(plugin_dir, module, root, folder)
    if collision is not None:
        raise collision
    if module in sys.modules:
        what = ('this package' if module == PLUGIN else 'already imported')
        print_log(f'plugin_dir {plugin_dir!r} is {folder} ({what})',
                  logger='current')
        return
    if root not in (osp.abspath(p or os.getcwd()) for p in sys.path):
        sys.path.append(root)
    try:
        importlib.import_module(module)
    except ImportError as e:
        raise ImportError(
            f'config: cannot import plugin_dir={plugin_dir!r} as module '
            f'{module!r} from {root} ({e}); fix the import error, or run from '
            'the repository that holds it') from e
    # A module of the same name earlier on sys.path would have won.
    collision = _collision(plugin_dir, module, root, folder)
    if collision is not None:
        raise collision
    print_log(f'imported plugin_dir {plugin_dir!r} from {folder}',
              logger='current')


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
    check_run_config(cfg, 'train')
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
    note_rank_context(work_dir=osp.abspath(cfg.work_dir))
    setup_distributed(cfg)
    runner = build_runner(cfg)
    note_rank_context(log_dir=osp.abspath(runner.log_dir))
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
    if getattr(args, 'amp', None) == FP32_FLAG:
        force_float32(cfg)
    check_run_config(cfg, 'test')
    cfg.load_from = args.checkpoint
    note_rank_context(work_dir=osp.abspath(cfg.work_dir))
    setup_distributed(cfg)
    runner = build_runner(cfg)
    check_checkpoint_fits(runner.model, args.checkpoint, args.config)
    note_rank_context(log_dir=osp.abspath(runner.log_dir))
    metrics = runner.test()
    if metrics is None:
        print_log('test: no metrics were returned', logger='current',
                  level=logging.WARNING)
    return metrics
