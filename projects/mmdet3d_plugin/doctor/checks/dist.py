"""Doctor checks of distributed training: the backend the launchers pick on
this machine works, the world size asked for fits it, and the run's
timeouts are ordered."""
import os
import os.path as osp

from ...cli.prepare import process_group_backend
from ...dist.budget import timeout_problems
from ..context import CheckResult, DoctorContext, failed, passed, warned


def backend_of(cfg) -> str:
    """The backend tools/train.py starts: the config's (nccl by default)
    with CUDA, gloo without (see
    :func:`cli.runner_setup.setup_distributed`)."""
    import torch
    if not torch.cuda.is_available():
        return 'gloo'
    dist_cfg = (cfg.get('env_cfg') or {}).get('dist_cfg') or {}
    return dist_cfg.get('backend', 'nccl')


def _try_backend(backend: str, tmp_dir: str) -> str:
    """Start a one-process group over a file store and all-reduce."""
    import torch
    import torch.distributed as dist
    if dist.is_initialized():
        return 'a process group is already running here; not started again'
    device = 'cuda' if backend == 'nccl' else 'cpu'
    store = dist.FileStore(osp.join(tmp_dir, 'dist_store'), 1)
    dist.init_process_group(backend, store=store, rank=0, world_size=1)
    try:
        value = torch.ones(1, device=device)
        dist.all_reduce(value)
        if float(value.item()) != 1.0:
            raise RuntimeError(f'all_reduce returned {value.item()}')
    finally:
        dist.destroy_process_group()
    return f'a 1-process {backend} group all-reduces'


def check_backend(ctx: DoctorContext) -> CheckResult:
    """The backend of this machine starts and all-reduces."""
    import torch.distributed as dist
    backend = backend_of(ctx.cfg)
    available = {
        'nccl': dist.is_nccl_available(),
        'gloo': dist.is_gloo_available(),
        'mpi': dist.is_mpi_available(),
    }.get(backend, False)
    import torch
    why = ('CUDA is available' if torch.cuda.is_available() else
           'no CUDA: tools/train.py starts gloo and wraps the model in '
           'CPUDistributedDataParallel')
    if not available:
        return failed(
            'dist.backend', f'the launchers pick {backend} ({why}), but this '
            'torch build lacks it', "env_cfg = dict(dist_cfg=dict(backend="
            "'gloo')), or install a torch build with " + backend)
    try:
        done = _try_backend(backend, ctx.tmp_dir)
    except Exception as exc:  # backend start-up raises many kinds
        return failed(
            'dist.backend', f'{backend} ({why}) failed to start: '
            f'{type(exc).__name__}: {exc}',
            'check the NCCL / driver installation (NCCL_DEBUG=INFO shows '
            "why), or env_cfg = dict(dist_cfg=dict(backend='gloo'))")
    how = 'DDP' if ctx.options.uses_ddp else 'a distributed run'
    return passed('dist.backend', f'{how} would use {backend} ({why}); {done}')


def check_world_size(ctx: DoctorContext) -> CheckResult:
    """The processes asked for fit this node's GPUs (or CPU cores)."""
    import torch
    opts = ctx.options
    nnodes = max(int(opts.nnodes), 1)
    if opts.world_size % nnodes:
        return failed(
            'dist.world_size', f'world size {opts.world_size} does not '
            f'divide over {nnodes} nodes', 'start the same number of '
            'processes on every node (GPUS per node x NNODES)')
    per_node = opts.world_size // nnodes
    loader = ctx.cfg.get('train_dataloader') or {}
    workers = int(loader.get('num_workers', 0) or 0)
    cores = os.cpu_count() or 1
    nodes = f' on each of {nnodes} nodes' if nnodes > 1 else ''
    if torch.cuda.is_available():
        gpus = torch.cuda.device_count()
        if per_node > gpus:
            return failed(
                'dist.world_size', f'{per_node} processes{nodes} but this '
                f'node has {gpus} GPU(s)', f'start at most {gpus} processes '
                'per node (tools/dist_train.sh CONFIG GPUS), or set NNODES '
                'for a multi-node run')
        fits = f'{per_node} of {gpus} GPU(s)'
    else:
        if per_node > cores:
            return failed(
                'dist.world_size', f'{per_node} CPU processes{nodes} but '
                f'this machine has {cores} cores', f'start at most {cores} '
                'processes, or train on GPUs')
        fits = f'{per_node} CPU process(es) on {cores} cores'
    total = per_node * (1 + workers)
    detail = (f'world size {opts.world_size}: {fits}{nodes}, '
              f'{total} processes with {workers} DataLoader worker(s) each')
    if total > 2 * cores:
        return warned(
            'dist.world_size', detail + f' for {cores} cores',
            f'lower train_dataloader.num_workers to about '
            f'{max(cores // per_node - 1, 1)} per process')
    return passed('dist.world_size', detail)


def check_timeouts(ctx: DoctorContext) -> CheckResult:
    """The watchdog, the process group and the evaluation wait timeouts are
    ordered (``dist.timeout_problems``): the error tools/train.py stops
    with, as a checklist line."""
    backend = process_group_backend()
    problems = [p.split('. Fix: ', 1)
                for p in timeout_problems(ctx.cfg, backend)]
    if problems:
        return failed('dist.timeouts', '; '.join(p[0] for p in problems),
                      '; '.join(p[-1] for p in problems))
    return passed(
        'dist.timeouts', 'the watchdog ends a hang before the process '
        f'group ({backend}) times out, and evaluation waits are positive '
        '(or none is configured)')
