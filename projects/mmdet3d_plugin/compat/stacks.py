"""The software stacks the plugin was run on, as data, and the stacks known
not to work, with their cause and fix.

:data:`TESTED_STACKS` is the table docs/install.md describes ("The stacks
that were run"): Python 3.11 with torch 2.1.2 (PyPI's cu121 wheel, the
torch of OpenMMLab's own mmcv 2.1.0 wheels) or torch 2.13.0 (the CPU
build), each with mmcv 2.1.0, mmengine 0.10.7, mmdet 3.2.0, mmdet3d 1.4.0,
nuscenes-devkit 1.2.0 and spconv 2.3.8. :func:`tested_stack` tells whether
the installed versions (:func:`installed_versions`, read from the
distributions' metadata) are one of them, comparing torch by its public
version (2.1.2+cu121 is 2.1.2).

The known bad stacks, each a :class:`StackProblem` (what was expected,
what was found, the fix):

- :func:`mmcv_problems`, from metadata alone, so before anything imports
  mmdet3d: mmcv >= 2.2 or ``onedl-mmcv``, which mmdet3d 1.4.0's
  ``__init__`` refuses (``import mmdet3d`` raises AssertionError), and
  ``mmcv-lite`` (mmcv without compiled ops);
- :func:`mmcv_ops_problem`, from the exception of ``import mmcv.ops``: an
  mmcv compiled against another torch (``undefined symbol``) or without its
  ops (``No module named 'mmcv._ext'``);
- :func:`checkpoint_note`: torch >= 2.6 with mmengine <= 0.10.7, handled
  by :mod:`.checkpoints` when the plugin registers (a note, not a problem).

The doctor's ``env.stack``, ``env.mmcv_ops`` and ``env.version.mmcv``
checks print them (``doctor/checks/env.py``). Importing this module is
cheap: it reads metadata (:mod:`importlib.metadata`) and imports neither
torch nor mmcv.
"""
import platform
import re
import sys
from dataclasses import dataclass, fields
from importlib import metadata
from typing import Dict, List, NamedTuple, Optional, Sequence, Tuple

#: The distributions of a stack, in the order a line names them.
STACK_PACKAGES = ('torch', 'mmcv', 'mmengine', 'mmdet', 'mmdet3d',
                  'nuscenes-devkit', 'spconv')
#: What mmdet3d 1.4.0's ``__init__`` asserts of mmcv (``mmcv_minimum_version``,
#: ``mmcv_maximum_version``) and the message of its AssertionError.
MMDET3D_MMCV_RANGE = ('2.0.0rc4', '2.2.0')
MMDET3D_MMCV_ASSERT = ('MMCV=={found} is used but incompatible. Please '
                       'install mmcv>={low}, <{high}.')
#: OpenMMLab's mmcv wheel index, and the torch / CUDA pairs it has mmcv
#: 2.1.0 wheels for.
OPENMMLAB_INDEX = ('https://download.openmmlab.com/mmcv/dist/{cuda}/'
                   'torch{torch}/index.html')
OPENMMLAB_PAIRS = {'2.0': ('11.7', '11.8'), '2.1': ('11.8', '12.1')}
#: The mmengine whose checkpoints weights-only ``torch.load`` rejects
#: (mmengine #1655, fixed after this release) and the torch that loads
#: weights-only by default.
MMENGINE_UNSAFE_CHECKPOINTS = '0.10.7'
TORCH_WEIGHTS_ONLY = '2.6'


@dataclass(frozen=True)
class Stack:
    """One stack the whole suite and ``make demo`` ran on.

    Args:
        torch (str): torch's public version (no local part).
        torch_build (str): Which build of it.
        python (str): Python ``major.minor``. Defaults to '3.11'.
        mmcv (str): Defaults to '2.1.0' (with its compiled ops).
        mmengine (str): Defaults to '0.10.7'.
        mmdet (str): Defaults to '3.2.0'.
        mmdet3d (str): Defaults to '1.4.0'.
        nuscenes_devkit (str): Defaults to '1.2.0'.
        spconv (str): Defaults to '2.3.8'.
    """
    torch: str
    torch_build: str
    python: str = '3.11'
    mmcv: str = '2.1.0'
    mmengine: str = '0.10.7'
    mmdet: str = '3.2.0'
    mmdet3d: str = '1.4.0'
    nuscenes_devkit: str = '1.2.0'
    spconv: str = '2.3.8'

    @property
    def name(self) -> str:
        """``torch 2.13.0 (CPU build)``."""
        return f'torch {self.torch} ({self.torch_build})'

    @property
    def versions(self) -> Dict[str, str]:
        """Distribution name -> version, in :data:`STACK_PACKAGES` order."""
        return {f.name.replace('_', '-'): getattr(self, f.name)
                for f in fields(self) if f.name not in ('torch_build',
                                                        'python')}


#: The stacks that were run, oldest torch first (docs/install.md).
TESTED_STACKS: Tuple[Stack, ...] = (
    # The torch of OpenMMLab's own mmcv 2.1.0 wheels.
    Stack(torch='2.1.2', torch_build="PyPI's cu121 wheel or OpenMMLab's "
          'stack'),
    Stack(torch='2.13.0', torch_build='CPU build'),
)


class StackProblem(NamedTuple):
    """A known bad part of a stack.

    Args:
        cause (str): What was expected and what was found.
        fix (str): The commands that fix it.
        severe (bool): Whether runs fail of it (else they work, but the
            install is fragile). Defaults to True.
    """
    cause: str
    fix: str
    severe: bool = True


def public_version(version: str) -> str:
    """``2.1.2+cu121`` -> ``2.1.2``."""
    return version.split('+', 1)[0]


def version_key(version: str) -> Tuple:
    """A sortable key of a version (``2.0.0rc4`` < ``2.0.0`` < ``2.2.0``):
    its release digits and an ``aN`` / ``bN`` / ``rcN`` suffix, all that
    the comparisons here need (and what mmengine's ``digit_version``, which
    mmdet3d's assertion uses, reads too)."""
    match = re.match(r'(\d+(?:\.\d+)*)(?:(a|b|rc)(\d+))?',
                     public_version(version).strip())
    if match is None:
        return ((0, ), (0, 0))
    release = tuple(int(x) for x in match.group(1).split('.'))
    release += (0, ) * (3 - len(release))
    pre = ((('a', 'b', 'rc').index(match.group(2)), int(match.group(3)))
           if match.group(2) else (3, 0))
    return release, pre


def installed_versions(path: Optional[Sequence[str]] = None
                       ) -> Dict[str, str]:
    """Installed versions of the stack's distributions, read from metadata.

    Keys: ``python``, those of :data:`STACK_PACKAGES` that are installed
    (``spconv`` also for the CUDA builds ``spconv-cu1xx``), and the
    distributions that take mmcv's place (``mmcv-lite``, ``onedl-mmcv*``)
    under their own names. Where a distribution is found twice, the first
    on the path is the one Python imports and the one given.

    Args:
        path (Sequence[str], optional): The folders to search, as
            :func:`importlib.metadata.distributions` takes them. Defaults to
            None: ``sys.path``.

    Returns:
        dict[str, str]: e.g. ``{'python': '3.11.7', 'torch': '2.13.0+cpu',
        'mmcv': '2.1.0', ...}``.
    """
    found = {'python': platform.python_version()}
    search = sys.path if path is None else list(path)
    for dist in metadata.distributions(path=search):
        name = re.sub(r'[-_.]+', '-', dist.metadata['Name'] or '').lower()
        if name.startswith('spconv-cu'):
            name = 'spconv'
        if (name in STACK_PACKAGES or name == 'mmcv-lite'
                or name.startswith('onedl-mmcv')) and name not in found:
            found[name] = dist.version
    return found


def describe(versions: Dict[str, str]) -> str:
    """``torch 2.13.0+cpu, mmcv 2.1.0, ..., Python 3.11.7``: the stack's
    distributions (``not installed`` where absent), then those that take
    mmcv's place."""
    parts = [f'{name} {versions.get(name, "not installed")}'
             for name in STACK_PACKAGES]
    parts += [f'{name} {version}'
              for name, version in versions.items()
              if name == 'mmcv-lite' or name.startswith('onedl-mmcv')]
    return ', '.join(parts + [f'Python {versions.get("python", "?")}'])


def differences(versions: Dict[str, str], stack: Stack) -> List[str]:
    """What of ``versions`` is not ``stack``: ``['torch 2.4.1 (tested
    2.13.0)', ...]``, empty when it is that stack."""
    out = []
    python = versions.get('python', '')
    if '.'.join(python.split('.')[:2]) != stack.python:
        out.append(f'Python {python} (tested {stack.python})')
    for name, tested in stack.versions.items():
        have = versions.get(name)
        if have is None:
            out.append(f'{name} not installed (tested {tested})')
        elif public_version(have) != tested:
            out.append(f'{name} {have} (tested {tested})')
    return out


def tested_stack(versions: Optional[Dict[str, str]] = None
                 ) -> Optional[Stack]:
    """The tested stack the installed versions are, or None.

    Args:
        versions (dict, optional): From :func:`installed_versions`.
            Defaults to None: read them now.
    """
    if versions is None:
        versions = installed_versions()
    for stack in TESTED_STACKS:
        if not differences(versions, stack):
            return stack
    return None


def closest_stack(versions: Dict[str, str]) -> Stack:
    """The tested stack ``versions`` differs least from (the first of equal
    ones)."""
    return min(TESTED_STACKS, key=lambda s: len(differences(versions, s)))


def tested_summary() -> str:
    """The tested stacks in one sentence, from :data:`TESTED_STACKS`."""
    first = TESTED_STACKS[0]
    rest = ', '.join(f'{name} {version}'
                     for name, version in first.versions.items()
                     if name != 'torch')
    torches = ' or '.join(s.name for s in TESTED_STACKS)
    return f'Python {first.python} with {torches}, each with {rest}'


def mmcv_install_fix(versions: Dict[str, str],
                     cuda: Optional[str] = None, env: str = '') -> str:
    """How to install mmcv 2.1.0 with its compiled ops for the installed
    torch: ``tools/install.sh`` into this environment, or OpenMMLab's wheel
    index where it has the torch / CUDA pair.

    Args:
        versions (dict): From :func:`installed_versions`.
        cuda (str, optional): ``torch.version.cuda``; None where not known
            (or a CPU build).
        env (str): Variables to set for the install, e.g.
            ``'PIP_NO_CACHE_DIR=1 '``. Defaults to ''.
    """
    torch = versions.get('torch')
    target = f'torch {torch}' if torch else 'the installed torch'
    fix = (f'install the full mmcv 2.1.0 (with its compiled ops) built for '
           f'{target}: '
           f'{env}bash tools/install.sh {sys.prefix} (it takes a wheel built '
           'for this torch, or compiles mmcv with MMCV_WITH_OPS=1)')
    minor = '.'.join(public_version(torch).split('.')[:2]) if torch else None
    if minor in OPENMMLAB_PAIRS and cuda in OPENMMLAB_PAIRS[minor]:
        url = OPENMMLAB_INDEX.format(cuda='cu' + cuda.replace('.', ''),
                                     torch=minor)
        fix += f", or OpenMMLab's wheel: pip install mmcv==2.1.0 -f {url}"
    elif minor is None or (minor in OPENMMLAB_PAIRS and cuda is None):
        fix += (', or with torch 2.0 / 2.1 and CUDA 11.7 / 11.8 / 12.1 '
                "OpenMMLab's wheels: pip install mmcv==2.1.0 -f "
                + OPENMMLAB_INDEX.format(cuda='cu121', torch='2.1') +
                ' (your CUDA and torch in the path)')
    return fix


def mmcv_problems(versions: Dict[str, str],
                  cuda: Optional[str] = None) -> List[StackProblem]:
    """The known bad mmcv installs that metadata tells, without importing
    anything: an mmcv that mmdet3d 1.4.0 refuses (mmcv >= 2.2 or older
    than 2.0.0rc4, ``onedl-mmcv``) and ``mmcv-lite``.

    Args:
        versions (dict): From :func:`installed_versions`.
        cuda (str, optional): ``torch.version.cuda``, for the fix.

    Returns:
        list[StackProblem]: Empty when none is known.
    """
    problems = []
    low, high = MMDET3D_MMCV_RANGE
    mmcv = versions.get('mmcv')
    onedl = {name: version for name, version in versions.items()
             if name.startswith('onedl-mmcv')}
    refused = [f'{name} {version} (a fork that installs the mmcv package)'
               for name, version in onedl.items()]
    found = next(iter(onedl.values()), None)
    if mmcv is not None and not (version_key(low) <= version_key(mmcv) <
                                 version_key(high)):
        refused.insert(0, f'mmcv {mmcv}')
        found = mmcv
    if refused:
        message = MMDET3D_MMCV_ASSERT.format(found=found, low=low, high=high)
        problems.append(StackProblem(
            f'mmdet3d 1.4.0 needs mmcv>={low}, <{high}, found '
            f'{" and ".join(refused)}: its __init__ asserts the range '
            f'("{message}"), so import mmdet3d fails',
            f'pip uninstall -y mmcv {" ".join(onedl) or "onedl-mmcv"}, then '
            + mmcv_install_fix(versions, cuda)))
    lite = versions.get('mmcv-lite')
    if lite is not None:
        if mmcv is None:
            cause = ("mmdet3d's LiDAR models need mmcv with its compiled ops "
                     '(mmcv.ops: voxelization, NMS, sparse convolution), '
                     f'found mmcv-lite {lite} (mmcv without them) and no full '
                     'mmcv')
        else:
            cause = (f'found mmcv-lite {lite} beside mmcv {mmcv}: both '
                     'install the mmcv package, so each overwrites the '
                     "other's files and uninstalling one breaks the other")
        problems.append(StackProblem(
            cause, 'pip uninstall -y mmcv-lite mmcv, then '
            + mmcv_install_fix(versions, cuda),
            severe=mmcv is None))
    return problems


def _exception_chain(exc: BaseException) -> List[BaseException]:
    chain = []
    while exc is not None and exc not in chain:
        chain.append(exc)
        exc = exc.__cause__ or exc.__context__
    return chain


def mmcv_ops_problem(exc: BaseException, versions: Dict[str, str],
                     cuda: Optional[str] = None) -> Optional[StackProblem]:
    """Why ``import mmcv.ops`` raised ``exc``, where it is a known cause:
    mmcv's compiled ops (``mmcv/_ext*.so``) built against another torch
    (``undefined symbol``, or a torch library it links missing), or an mmcv
    without them (``No module named 'mmcv._ext'``: mmcv-lite, or mmcv built
    without ``MMCV_WITH_OPS=1``).

    Args:
        exc (BaseException): What ``import mmcv.ops`` raised.
        versions (dict): From :func:`installed_versions`.
        cuda (str, optional): ``torch.version.cuda``, for the fix.

    Returns:
        StackProblem | None: None for another exception.
    """
    torch = versions.get('torch', 'the installed one')
    mmcv = versions.get('mmcv') or versions.get('mmcv-lite') or '?'
    for err in _exception_chain(exc):
        text = ' '.join(str(err).split())
        shown = f'{type(err).__name__}: {text}'
        if len(shown) > 300:
            shown = shown[:297] + '...'
        if 'undefined symbol' in text or re.search(
                r'lib(c10|torch)\w*\.so\S*: cannot open shared object',
                text):
            return StackProblem(
                f"mmcv {mmcv}'s compiled ops were built against a different "
                f'torch than the installed torch {torch}: import mmcv.ops '
                f'raised {shown}',
                "pip uninstall -y mmcv, then, without pip's cache (it may "
                'hold an mmcv wheel compiled for another torch), '
                + mmcv_install_fix(versions, cuda, env='PIP_NO_CACHE_DIR=1 '))
        if re.search(r"No module named '?mmcv\._ext", text):
            return StackProblem(
                f'mmcv {mmcv} has no compiled ops (mmcv-lite, or mmcv built '
                f'without MMCV_WITH_OPS=1): import mmcv.ops raised {shown}',
                'pip uninstall -y mmcv mmcv-lite, then '
                + mmcv_install_fix(versions, cuda))
    return None


def checkpoint_note(versions: Dict[str, str]) -> Optional[str]:
    """On torch >= 2.6 with mmengine <= 0.10.7, one sentence on loading
    mmengine's checkpoints (mmengine #1655); None on other stacks."""
    torch, mmengine = versions.get('torch'), versions.get('mmengine')
    if torch is None or mmengine is None or \
            version_key(torch) < version_key(TORCH_WEIGHTS_ONLY) or \
            version_key(mmengine) > version_key(MMENGINE_UNSAFE_CHECKPOINTS):
        return None
    return (f'torch {torch} loads checkpoints weights-only by default, '
            f"which rejects mmengine {mmengine}'s own checkpoints (mmengine "
            "#1655): the plugin allows mmengine's HistoryBuffer and numpy "
            "types in torch's safe globals when it registers "
            '(compat/checkpoints.py: allow_mmengine_checkpoints); a '
            'torch.load outside the plugin needs weights_only=False, for '
            'files you trust')
