"""The stacks the suite ran on, and the known bad ones, from the installed
distributions' metadata only (nothing heavy is imported here).

mmdet3d 1.4.0 asserts ``mmcv>=2.0.0rc4, <2.2.0`` when it is imported, and
OpenMMLab publishes mmcv 2.1.0 wheels with CUDA ops only up to torch 2.1,
so most GPU users of mmdet3d 1.4.0 run torch 2.1. :data:`TESTED_STACKS` is
what ``make test`` and ``make test-torch2.1`` ran (docs/install.md);
:func:`stack_problems` names the combinations that cannot work, with the
fix; :func:`mmcv_ops_problem` tells why ``import mmcv.ops`` failed. The
doctor's ``env.stack`` and ``env.mmcv_ops`` checks print them.
"""
from dataclasses import dataclass
from importlib import metadata
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

from packaging.version import Version

#: The distributions that make a stack, in the order a line names them.
STACK_PACKAGES = ('torch', 'mmcv', 'mmengine', 'mmdet', 'mmdet3d')
#: Distributions that take mmcv's place and that mmdet3d 1.4.0 refuses or
#: cannot run.
MMCV_REPLACEMENTS = ('onedl-mmcv', 'mmcv-lite')
#: What mmdet3d 1.4.0's ``__init__`` asserts of mmcv.
MMDET3D_MMCV_RANGE = ('2.0.0rc4', '2.2.0')
#: How to install mmcv 2.1.0 for the installed torch.
INSTALL_MMCV = ('bash tools/install.sh (it takes a wheel for the installed '
                "torch from ../shared/wheels or OpenMMLab's index "
                'https://download.openmmlab.com/mmcv/dist/<cu121>/<torch2.1>/'
                'index.html for torch 2.0 / 2.1 with CUDA, else compiles '
                'mmcv with MMCV_WITH_OPS=1)')


@dataclass(frozen=True)
class TestedStack:
    """One stack the whole suite and ``make demo`` ran on.

    Args:
        name (str): What it is.
        versions (dict): Distribution -> version (torch without its local
            part: 2.1.2+cu121 is 2.1.2).
        mmcv_from (str): Where its mmcv came from.
    """
    name: str
    versions: Dict[str, str]
    mmcv_from: str


_COMMON = dict(mmcv='2.1.0', mmengine='0.10.7', mmdet='3.2.0',
               mmdet3d='1.4.0')

#: The stacks that were run (Python 3.11), oldest torch first.
TESTED_STACKS: Tuple[TestedStack, ...] = (
    TestedStack('the official-wheel stack (torch 2.1, the torch of '
                "OpenMMLab's mmcv 2.1.0 wheels)",
                dict(torch='2.1.2', **_COMMON),
                'mmcv 2.1.0 built for torch 2.1.2 (OpenMMLab wheels on '
                'CUDA; ../shared/wheels/torch-2.1.2 on CPU)'),
    TestedStack("today's torch", dict(torch='2.13.0', **_COMMON),
                'mmcv 2.1.0 built for torch 2.13.0 (../shared/wheels)'),
)


def installed_versions(path: Optional[Sequence[str]] = None
                       ) -> Dict[str, str]:
    """Installed version of each distribution of a stack (and of mmcv's
    replacements), local parts dropped; absent ones are left out.

    Args:
        path (Sequence[str], optional): Where to look for distributions.
            Defaults to None: ``sys.path``.
    """
    found: Dict[str, str] = {}
    kwargs = {} if path is None else dict(path=list(path))
    for dist in metadata.distributions(**kwargs):
        name = (dist.metadata['Name'] or '').lower().replace('_', '-')
        if name in STACK_PACKAGES + MMCV_REPLACEMENTS and name not in found:
            found[name] = Version(dist.version).public
    return found


def tested_stack(versions: Dict[str, str]) -> Optional[TestedStack]:
    """The tested stack ``versions`` is, or None."""
    for stack in TESTED_STACKS:
        if all(versions.get(k) == v for k, v in stack.versions.items()):
            return stack
    return None


def describe(versions: Dict[str, str]) -> str:
    """``torch 2.1.2, mmcv 2.1.0, ...`` (missing ones named so)."""
    return ', '.join(f'{name} {versions.get(name, "not installed")}'
                     for name in STACK_PACKAGES + MMCV_REPLACEMENTS
                     if name in versions or name in STACK_PACKAGES)


def stack_problems(versions: Dict[str, str]) -> List[Tuple[str, str]]:
    """The known bad parts of a stack, as ``(cause, fix)`` pairs; empty when
    none is known.

    Args:
        versions (dict): From :func:`installed_versions`.
    """
    low, high = MMDET3D_MMCV_RANGE
    problems = []
    mmcv = versions.get('mmcv')
    if 'onedl-mmcv' in versions:
        problems.append((
            f"onedl-mmcv {versions['onedl-mmcv']} is installed: it installs "
            "the 'mmcv' package at version >= 2.2, which mmdet3d 1.4.0's "
            f'__init__ refuses (assert mmcv>={low}, <{high}: "MMCV==... is '
            'used but incompatible")',
            f'pip uninstall -y onedl-mmcv mmcv, then {INSTALL_MMCV}'))
    if 'mmcv-lite' in versions and mmcv is None:
        problems.append((
            f"mmcv-lite {versions['mmcv-lite']} is installed: it has no "
            "compiled ops (mmcv.ops: voxelization, sparse ops), which "
            "mmdet3d's LiDAR models need",
            f'pip uninstall -y mmcv-lite, then {INSTALL_MMCV}'))
    if mmcv is not None and not (Version(low) <= Version(mmcv) <
                                 Version(high)):
        problems.append((
            f'mmcv {mmcv} is installed; mmdet3d 1.4.0 asserts '
            f'mmcv>={low}, <{high} when imported ("MMCV=={mmcv} is used but '
            'incompatible")',
            f'pip uninstall -y mmcv, then {INSTALL_MMCV}'))
    return problems


def mmcv_ops_problem(error: str, torch_version: str) -> Tuple[str, str]:
    """Cause and fix of a failed ``import mmcv.ops``.

    Args:
        error (str): ``'<ExceptionType>: <message>'`` of the failure.
        torch_version (str): The installed torch.
    """
    if 'undefined symbol' in error:
        return (f'mmcv\'s compiled ops were built against another torch '
                f'than the installed torch {torch_version} ({error})',
                f'pip uninstall -y mmcv, then install mmcv 2.1.0 built for '
                f'torch {torch_version}: {INSTALL_MMCV}')
    if "mmcv._ext" in error or 'No module named' in error:
        return (f'mmcv has no compiled ops ({error}): mmcv-lite, or mmcv '
                'built without MMCV_WITH_OPS=1',
                f'pip uninstall -y mmcv mmcv-lite, then {INSTALL_MMCV}')
    return (f'cannot import mmcv.ops ({error})',
            f'reinstall mmcv 2.1.0 for torch {torch_version}: '
            f'{INSTALL_MMCV}')


def tested_summary(stacks: Iterable[TestedStack] = TESTED_STACKS) -> str:
    """``torch 2.1.2 / 2.13.0 with mmcv 2.1.0, ...`` for one line."""
    stacks = list(stacks)
    torches = ' or '.join(s.versions['torch'] for s in stacks)
    rest = ', '.join(f'{k} {v}' for k, v in stacks[0].versions.items()
                     if k != 'torch')
    return f'torch {torches} with {rest}'
