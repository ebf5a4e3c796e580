"""Building the Runner of a prepared config: distributed training on
machines without CUDA, the fork server, and throw-away Runners of the
preflight tools."""
import uuid

import torch
from mmengine.config import Config
from mmengine.runner import Runner

from mmdet3d.registry import RUNNERS  # finds mmengine's runners too
from ..compat.cpu_dist import init_cpu_dist
from ..compat.restart_store import init_restart_safe_dist
from ..datasets.forkserver import setup_forkserver_preload


def setup_distributed(cfg: Config) -> None:
    """Make ``launcher != 'none'`` work on machines without CUDA, and
    torchrun's restarts everywhere (``compat.restart_store``).

    Starts a gloo process group (see :func:`compat.init_cpu_dist`) and wraps
    the model with ``CPUDistributedDataParallel``, keeping the config's
    ``find_unused_parameters`` and other wrapper settings.
    """
    if cfg.launcher == 'none':
        return
    dist_cfg = cfg.get('env_cfg', {}).get('dist_cfg', {})
    if torch.cuda.is_available():
        if cfg.launcher == 'pytorch':
            # Under torchrun: a store that restarts do not share.
            init_restart_safe_dist(dist_cfg.get('backend', 'nccl'),
                                   dist_cfg.get('timeout'))
        return
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
