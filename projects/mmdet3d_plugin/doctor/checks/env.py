"""Doctor checks of the machine: Python, torch, the torch / mmcv / mmdet3d
stack (tested, or known bad: ``compat/stacks.py``), compiled mmcv ops,
package versions against ``requirements/mminstall.txt``, spconv, and the
multiprocessing start method a run will use."""
import multiprocessing
import os.path as osp
import platform
import sys
from importlib import metadata
from typing import Dict, List, Optional, Sequence, Tuple

from ...compat.python_fork import FIX as FORK_FIX
from ...compat.python_fork import fork_deadlock
from ...compat.stacks import (StackProblem, checkpoint_note, closest_stack,
                              describe, differences, installed_versions,
                              mmcv_install_fix, mmcv_ops_problem,
                              mmcv_problems, tested_stack, tested_summary)
from ...constants import REPO_ROOT
from ..context import CheckResult, DoctorContext, failed, passed, warned

REQUIREMENTS = str(REPO_ROOT / 'requirements' / 'mminstall.txt')
MIN_PYTHON = (3, 8)

#: Distribution name -> how to install a supported version (mmcv:
#: ``mmcv_install_fix`` of ``compat/stacks.py``).
_INSTALL = {
    'mmengine': 'pip install "{spec}"',
    'mmdet': 'mim install "{spec}"',
    'mmdet3d': 'mim install "{spec}"',
    'nuscenes-devkit': 'pip install "{spec}"',
}
#: Model types that run sparse 3D convolutions.
SPARSE_TYPE_MARKERS = ('Sparse', 'MinkUNet', 'Spconv', 'Minkowski')


def check_python(ctx: DoctorContext) -> CheckResult:
    """Python version."""
    version = platform.python_version()
    if sys.version_info[:2] < MIN_PYTHON:
        return failed(
            'env.python', f'Python {version}',
            f'use Python >= {".".join(map(str, MIN_PYTHON))}, as mmengine '
            'and mmdet3d 1.x require')
    return passed('env.python', f'Python {version} ({sys.executable})')


def check_torch(ctx: DoctorContext) -> CheckResult:
    """torch, CUDA devices and the distributed backends it was built with."""
    import torch
    import torch.distributed as dist
    parts = [f'torch {torch.__version__}']
    if torch.cuda.is_available():
        names = sorted({
            torch.cuda.get_device_name(i)
            for i in range(torch.cuda.device_count())
        })
        parts.append(f'CUDA {torch.version.cuda}, '
                     f'{torch.cuda.device_count()} GPU(s): '
                     f'{", ".join(names)}')
    else:
        built = torch.version.cuda
        parts.append('no CUDA device' +
                     (f' (built with CUDA {built})' if built else
                      ' (CPU-only build)'))
    if not dist.is_available():
        return failed(
            'env.torch', '; '.join(parts) + '; torch.distributed is not '
            'available', 'install a torch build with distributed support '
            '(the official wheels have it)')
    backends = [
        name for name, ok in (('nccl', dist.is_nccl_available()),
                              ('gloo', dist.is_gloo_available()),
                              ('mpi', dist.is_mpi_available())) if ok
    ]
    parts.append(f'distributed backends: {", ".join(backends) or "none"}')
    return passed('env.torch', '; '.join(parts))


def cuda_words() -> str:
    """``CPU build, no CUDA device`` / ``CUDA 12.1 build, no CUDA device``
    / ``CUDA 12.1, 8 CUDA device(s)``: torch's CUDA and whether a device is
    there."""
    import torch
    hip = getattr(torch.version, 'hip', None)
    if torch.version.cuda is None and not hip:
        return 'CPU build, no CUDA device'
    if hip:
        return f'ROCm {hip} build, ' + (
            f'{torch.cuda.device_count()} device(s)'
            if torch.cuda.is_available() else 'no device')
    if torch.cuda.is_available():
        return (f'CUDA {torch.version.cuda}, '
                f'{torch.cuda.device_count()} CUDA device(s)')
    return f'CUDA {torch.version.cuda} build, no CUDA device'


def _stack_failed(line: str, problems: Sequence[StackProblem]) -> CheckResult:
    return failed('env.stack', f'{line}: ' + '; '.join(
        p.cause for p in problems), '; '.join(p.fix for p in problems))


def stack_blocker(path: Optional[Sequence[str]] = None
                  ) -> Optional[CheckResult]:
    """The ``env.stack`` failure that metadata alone tells (an mmcv that
    mmdet3d refuses when imported, mmcv-lite without mmcv), or None;
    imports nothing, so ``tools/doctor.py`` runs it before the checks,
    which import mmdet3d.

    Args:
        path (Sequence[str], optional): Where to look for distributions.
            Defaults to None: ``sys.path``.
    """
    versions = installed_versions(path)
    problems = [p for p in mmcv_problems(versions) if p.severe]
    return _stack_failed(describe(versions), problems) if problems else None


def check_stack(ctx: Optional[DoctorContext] = None,
                path: Optional[Sequence[str]] = None) -> CheckResult:
    """The torch / mmcv / mmengine / mmdet / mmdet3d / CUDA combination in
    one line, and whether it is one of the tested stacks
    (``compat/stacks.py``: ``TESTED_STACKS``; docs/install.md).

    A known bad stack fails with its cause and fix: an mmcv that mmdet3d
    1.4.0 refuses (mmcv >= 2.2, ``onedl-mmcv``) or mmcv-lite, read from the
    distributions' metadata before anything imports them, then an mmcv
    whose compiled ops were built against another torch or are missing
    (``import mmcv.ops``). Another stack warns and names the tested ones.
    On torch >= 2.6 with mmengine <= 0.10.7 the line says how mmengine's
    checkpoints load.

    Args:
        ctx (DoctorContext, optional): Unused. Defaults to None.
        path (Sequence[str], optional): Where to look for distributions, as
            :func:`importlib.metadata.distributions` takes it. Defaults to
            None: ``sys.path``.
    """
    import torch
    versions = installed_versions(path)
    cuda = torch.version.cuda
    line = f'{describe(versions)}; {cuda_words()}'
    problems = mmcv_problems(versions, cuda)
    if any(p.severe for p in problems):
        return _stack_failed(line, [p for p in problems if p.severe])
    try:
        import mmcv.ops  # noqa: F401  the one part metadata cannot tell
    except (ImportError, OSError) as exc:
        ops = mmcv_ops_problem(exc, versions, cuda)
        if ops is not None:
            return _stack_failed(line, [ops])
        # Another cause: env.mmcv_ops names it.
    notes = [p.cause for p in problems]
    note = checkpoint_note(versions)
    if note:
        notes.append(note)
    stack = tested_stack(versions)
    if stack is None:
        closest = closest_stack(versions)
        return warned(
            'env.stack', f'{line}: not a tested stack (against '
            f'{closest.name}: {", ".join(differences(versions, closest))})'
            + ''.join(f'; {n}' for n in notes),
            f'the tested stacks are {tested_summary()} (docs/install.md); '
            'this one may work within requirements/; a tested one installs '
            "into a new environment: bash tools/install.sh DIR (TORCH_SPEC="
            "'torch==2.1.2' for torch 2.1.2)"
            + ''.join(f'; {p.fix}' for p in problems))
    if problems:
        return warned('env.stack', f'{line}: a tested stack, '
                      f'{stack.name}, but ' + '; '.join(notes),
                      '; '.join(p.fix for p in problems))
    return passed('env.stack', f'{line}: a tested stack, {stack.name}'
                  + ''.join(f'; {n}' for n in notes))


def check_mmcv_ops(ctx: DoctorContext) -> CheckResult:
    """mmcv's compiled ops import and run (Voxelization on a few points)."""
    import torch
    try:
        import mmcv
        from mmcv.ops import Voxelization
    except (ImportError, OSError) as exc:
        versions = installed_versions()
        known = mmcv_ops_problem(exc, versions, torch.version.cuda)
        if known is not None:
            return failed('env.mmcv_ops', known.cause, known.fix)
        return failed(
            'env.mmcv_ops', f'cannot import mmcv.ops ({type(exc).__name__}: '
            f'{exc})', mmcv_install_fix(versions, torch.version.cuda))
    layer = Voxelization(
        voxel_size=[1.0, 1.0, 1.0],
        point_cloud_range=[0, 0, 0, 4, 4, 4],
        max_num_points=4,
        max_voxels=8)
    # Two points in the middle of each of four voxels.
    centres = torch.tensor([[0.5, 0.5, 0.5], [1.5, 0.5, 0.5],
                            [0.5, 2.5, 0.5], [3.5, 3.5, 3.5]])
    points = torch.cat([centres.repeat(2, 1), torch.ones(8, 1)], dim=1)
    devices = ['cpu'] + (['cuda'] if torch.cuda.is_available() else [])
    for device in devices:
        try:
            voxels, coors, counts = layer(points.to(device))
        except Exception as exc:  # a missing kernel raises many kinds
            return failed(
                'env.mmcv_ops', f'mmcv {mmcv.__version__}: Voxelization on '
                f'{device} failed: {type(exc).__name__}: {exc}',
                'pip uninstall -y mmcv, then ' + mmcv_install_fix(
                    installed_versions(), torch.version.cuda))
        if voxels.shape[0] != 4 or sorted(counts.tolist()) != [2] * 4:
            return failed(
                'env.mmcv_ops', f'mmcv {mmcv.__version__}: Voxelization on '
                f'{device} put 8 points in {voxels.shape[0]} voxels, '
                'expected 4 voxels of 2 points',
                'pip uninstall -y mmcv, then ' + mmcv_install_fix(
                    installed_versions(), torch.version.cuda))
    return passed(
        'env.mmcv_ops', f'mmcv {mmcv.__version__}: mmcv.ops imports, '
        f'Voxelization runs on {" and ".join(devices)}')


def read_requirements(path: str = REQUIREMENTS) -> Dict[str, str]:
    """Distribution name -> specifier from a requirements file.

    Args:
        path (str): The file. Defaults to ``requirements/mminstall.txt``.

    Returns:
        dict[str, str]: e.g. ``{'mmcv': '>=2.0.0rc4,<2.2.0'}``.
    """
    from packaging.requirements import Requirement
    out = {}
    with open(path) as f:
        for line in f:
            line = line.split('#', 1)[0].strip()
            if not line:
                continue
            req = Requirement(line)
            out[req.name] = str(req.specifier)
    return out


def check_versions(ctx: DoctorContext) -> List[CheckResult]:
    """One line per package of ``requirements/mminstall.txt``."""
    from packaging.version import Version
    if not osp.isfile(REQUIREMENTS):
        return [
            warned(
                'env.versions', f'{REQUIREMENTS} not found; versions not '
                'checked', 'run the doctor from the plugin checkout '
                '(pip install -e . keeps requirements/ there)')
        ]
    from packaging.specifiers import SpecifierSet
    versions = installed_versions()
    # What mmcv's place holds instead (mmcv >= 2.2, onedl-mmcv, mmcv-lite):
    # the cause and fix env.stack gives.
    mmcv_problem = next((p for p in mmcv_problems(versions) if p.severe),
                        None)
    lines = []
    for name, spec in read_requirements().items():
        check = f'env.version.{name}'
        if name == 'mmcv':
            install = mmcv_install_fix(versions)
        else:
            install = _INSTALL.get(name, 'pip install "{spec}"').format(
                spec=f'{name}{spec}')
        try:
            version = metadata.version(name)
        except metadata.PackageNotFoundError:
            version = None
        if name == 'mmcv' and mmcv_problem is not None:
            lines.append(failed(check, mmcv_problem.cause, mmcv_problem.fix))
        elif version is not None and SpecifierSet(spec).contains(
                Version(version), prereleases=True):
            lines.append(passed(check, f'{name} {version} (need {spec})'))
        elif version is None:
            lines.append(
                failed(check, f'{name} is not installed (need {spec})',
                       install))
        else:
            lines.append(
                failed(check, f'{name} {version} is outside the supported '
                       f'range {spec}', install))
    return lines


def sparse_types(model_cfg) -> List[str]:
    """Types in a model config that run sparse 3D convolutions."""
    found = []

    def walk(node):
        if isinstance(node, dict):
            kind = node.get('type')
            if isinstance(kind, str) and any(m in kind
                                             for m in SPARSE_TYPE_MARKERS):
                found.append(kind)
            for value in node.values():
                walk(value)
        elif isinstance(node, (list, tuple)):
            for value in node:
                walk(value)

    walk(model_cfg)
    return sorted(set(found))


def check_spconv(ctx: DoctorContext) -> CheckResult:
    """spconv for sparse-convolution models (mmcv's sparse ops are CUDA
    only)."""
    import torch
    kinds = sparse_types(ctx.cfg.get('model') or {})
    try:
        import spconv
        version: Optional[str] = getattr(spconv, '__version__', '?')
    except ImportError:
        version = None
    if not kinds:
        return passed(
            'env.spconv', 'the model has no sparse convolutions; spconv '
            + (f'{version} installed' if version else 'not needed'))
    if version is None:
        if torch.cuda.is_available():
            return warned(
                'env.spconv', f'{", ".join(kinds)} will use mmcv\'s CUDA '
                'sparse ops: spconv is not installed', 'pip install '
                'spconv-cu1xx (matching your CUDA) for faster sparse '
                'convolutions')
        return failed(
            'env.spconv', f'{", ".join(kinds)} needs sparse convolutions; '
            'spconv is not installed and mmcv\'s sparse ops need CUDA',
            'pip install spconv (the CPU build), or run on a CUDA machine')
    from mmdet3d.models.layers.spconv import IS_SPCONV2_AVAILABLE
    if not IS_SPCONV2_AVAILABLE:
        return failed(
            'env.spconv', f'spconv {version} is installed but mmdet3d '
            'cannot use it (needs spconv >= 2.0)', 'pip install "spconv>=2"'
            ' (spconv-cu1xx on CUDA machines)')
    import spconv.pytorch as spconv_pt
    device = 'cuda' if torch.cuda.is_available() else 'cpu'
    indices = torch.tensor([[0, 0, 0, 0], [0, 1, 1, 1], [0, 1, 2, 3]],
                           dtype=torch.int32, device=device)
    tensor = spconv_pt.SparseConvTensor(
        torch.ones(3, 4, device=device), indices, [4, 4, 4], 1)
    out = spconv_pt.SubMConv3d(4, 4, 3, indice_key='doctor').to(device)(
        tensor)
    if tuple(out.features.shape) != (3, 4):
        return failed(
            'env.spconv', f'spconv {version}: a sparse convolution on '
            f'{device} returned features of shape '
            f'{tuple(out.features.shape)}', 'reinstall spconv for this torch')
    return passed(
        'env.spconv', f'spconv {version} runs a sparse convolution on '
        f'{device} (for {", ".join(kinds)})')


def start_method_of(cfg) -> str:
    """The start method mmengine's Runner will set for DataLoader workers."""
    env_cfg = cfg.get('env_cfg') or {}
    mp_cfg = env_cfg.get('mp_cfg') or {}
    return mp_cfg.get('mp_start_method', 'fork')


def check_start_method(ctx: DoctorContext) -> CheckResult:
    """The ``env_cfg.mp_cfg.mp_start_method`` the Runner will set."""
    method = start_method_of(ctx.cfg)
    ctx.provide('start_method', method)
    available = multiprocessing.get_all_start_methods()
    if method not in available:
        return failed(
            'env.mp_start_method', f'env_cfg.mp_cfg.mp_start_method='
            f'{method!r} is not available here (available: {available})',
            "env_cfg = dict(mp_cfg=dict(mp_start_method='spawn'))")
    loader = ctx.cfg.get('train_dataloader') or {}
    workers = loader.get('num_workers', 0)
    if method == 'fork':
        if platform.system() == 'Darwin':
            return warned(
                'env.mp_start_method', "DataLoader workers start with 'fork'"
                ', which is unsafe on macOS', "env_cfg = dict(mp_cfg=dict("
                "mp_start_method='spawn'))")
        how = 'they inherit the dataset, nothing is pickled'
    else:
        how = 'each receives the dataset by pickle (checked below)'
    return passed(
        'env.mp_start_method', f"DataLoader workers ({workers} per process) "
        f"start with {method!r} (env_cfg.mp_cfg.mp_start_method): {how}")


def check_fork_deadlock(ctx: DoctorContext,
                        version: Tuple[int, ...] = tuple(
                            sys.version_info[:3])) -> CheckResult:
    """CPython gh-112275 (``compat/python_fork.py``) where DataLoader
    workers are forked; ``version`` defaults to this interpreter's."""
    problem = fork_deadlock(version)
    method = start_method_of(ctx.cfg)
    workers = (ctx.cfg.get('train_dataloader') or {}).get('num_workers', 0)
    if problem is None:
        return passed('env.fork_deadlock', f'Python '
                      f'{".".join(map(str, version))} does not have CPython '
                      'gh-112275 (a forked worker deadlocking after fork)')
    if method != 'fork' or not workers:
        return passed('env.fork_deadlock', f'{problem}; not reached here: '
                      f'workers start with {method!r} ({workers} per '
                      'process)')
    return warned('env.fork_deadlock', problem, FORK_FIX)
