"""The doctor's env.stack and env.mmcv_ops: the installed stack is a tested
one (CI runs this on torch 2.1.2 and 2.13), and the known bad ones give
their cause and fix: distributions written as real ``*.dist-info``
folders, and a real mmcv built for the other torch (the work area's
wheels) imported by this torch."""
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import torch

from projects.mmdet3d_plugin.compat import stacks
from projects.mmdet3d_plugin.compat.stacks import (TESTED_STACKS,
                                                   installed_versions,
                                                   mmcv_ops_problem)
from projects.mmdet3d_plugin.compat.torch_api import torch_at_least
from projects.mmdet3d_plugin.constants import REPO_ROOT
from projects.mmdet3d_plugin.doctor.checks.env import check_stack

WHEELS = REPO_ROOT.parent / 'shared' / 'wheels'


def _dist_info(root: Path, name: str, version: str) -> None:
    folder = root / f'{name.replace("-", "_")}-{version}.dist-info'
    folder.mkdir(parents=True)
    (folder / 'METADATA').write_text(
        f'Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n')


def _site(tmp_path, **versions) -> list:
    """A folder of dist-info for ``versions`` (``onedl_mmcv`` for
    ``onedl-mmcv``), searched before sys.path as pip's would be."""
    for name, version in versions.items():
        _dist_info(tmp_path, name.replace('_', '-'), version)
    return [str(tmp_path)] + sys.path


def test_the_installed_stack_is_a_tested_one():
    versions = installed_versions()
    assert versions['torch'] == torch.__version__.split('+')[0]
    stack = stacks.tested_stack(versions)
    assert stack is not None, versions
    result = check_stack(None)
    assert result.status == 'pass', result
    assert result.detail.startswith(
        f"torch {versions['torch']}, mmcv 2.1.0, mmengine 0.10.7, mmdet "
        '3.2.0, mmdet3d 1.4.0, ')
    assert f'tested ({stack.name})' in result.detail
    assert ('weights-only' in result.detail) == torch_at_least('2.6')
    assert [s.versions['torch'] for s in TESTED_STACKS] == ['2.1.2',
                                                            '2.13.0']


@pytest.mark.parametrize('versions, cause, fix', [
    (dict(mmcv='2.2.0'), 'mmcv 2.2.0 is installed; mmdet3d 1.4.0 asserts '
     'mmcv>=2.0.0rc4, <2.2.0', 'pip uninstall -y mmcv, then bash '
     'tools/install.sh'),
    (dict(onedl_mmcv='2.3.1', mmcv='2.3.1'), 'onedl-mmcv 2.3.1 is '
     "installed: it installs the 'mmcv' package at version >= 2.2",
     'pip uninstall -y onedl-mmcv mmcv'),
], ids=['mmcv-2.2', 'onedl-mmcv'])
def test_an_mmcv_that_mmdet3d_refuses_fails_with_cause_and_fix(
        tmp_path, versions, cause, fix):
    result = check_stack(None, _site(tmp_path, **versions))
    assert result.status == 'fail'
    assert cause in result.detail
    assert result.fix.startswith(fix)
    assert 'download.openmmlab.com/mmcv/dist' in result.fix


def test_an_untested_torch_is_a_warning_naming_the_tested_ones(tmp_path):
    result = check_stack(None, _site(tmp_path, torch='2.4.1'))
    assert result.status == 'warn'
    assert result.detail.startswith('torch 2.4.1, mmcv 2.1.0')
    assert 'not a tested stack (tested: torch 2.1.2 or 2.13.0 with mmcv ' \
        '2.1.0, mmengine 0.10.7, mmdet 3.2.0, mmdet3d 1.4.0)' in \
        result.detail
    assert 'docs/install.md' in result.fix
    # torch >= 2.6 with mmengine 0.10.7: the weights-only note.
    newer = check_stack(None, _site(tmp_path / 'newer', torch='2.7.1'))
    assert 'mmengine #1655' in newer.detail


def _other_torch_wheel() -> Path:
    """mmcv 2.1.0 built for the torch that is not installed."""
    if torch.__version__.startswith('2.1.2'):
        return WHEELS / 'mmcv-2.1.0-cp311-cp311-linux_x86_64.whl'
    return WHEELS / 'torch-2.1.2' / 'mmcv-2.1.0-cp311-cp311-linux_x86_64.whl'


def test_mmcv_built_for_another_torch_is_named(tmp_path):
    """A real mismatch: the mmcv wheel built for the other tested torch,
    imported by this one, fails with ``undefined symbol``."""
    wheel = _other_torch_wheel()
    if not wheel.is_file():
        pytest.skip(f'{wheel} is not here (the work area\'s prebuilt mmcv '
                    'wheels)')
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(tmp_path)
    probe = ('import sys; sys.path.insert(0, sys.argv[1]); import mmcv; '
             'assert mmcv.__file__.startswith(sys.argv[1]), mmcv.__file__\n'
             'try:\n    import mmcv.ops\n'
             'except (ImportError, OSError) as exc:\n'
             '    print(f"{type(exc).__name__}: {exc}")\n')
    error = subprocess.run(
        [sys.executable, '-c', probe, str(tmp_path)], capture_output=True,
        text=True, timeout=300).stdout.strip()
    assert 'undefined symbol' in error, error
    cause, fix = mmcv_ops_problem(error, torch.__version__)
    assert cause.startswith("mmcv's compiled ops were built against another "
                            f'torch than the installed torch '
                            f'{torch.__version__}')
    assert fix.startswith('pip uninstall -y mmcv, then install mmcv 2.1.0 '
                          f'built for torch {torch.__version__}')


def test_mmcv_without_ops_is_named(tmp_path):
    result = check_stack(None, _site(tmp_path, mmcv_lite='2.1.0'))
    # mmcv itself is installed here too: mmcv-lite beside it is no problem.
    assert result.status == 'pass'
    cause, fix = mmcv_ops_problem(
        "ModuleNotFoundError: No module named 'mmcv._ext'", '2.1.2')
    assert cause.startswith('mmcv has no compiled ops')
    assert fix.startswith('pip uninstall -y mmcv mmcv-lite')
