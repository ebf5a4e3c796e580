"""The doctor's ``env.stack`` (``compat/stacks.py``): the installed stack is
a tested one (CI runs this module on torch 2.1.2 and on torch 2.13), and
each known bad stack fails with its cause and fix, found as users meet it:
distributions written as real ``*.dist-info`` folders on the metadata
search path, and a real mmcv built for the other torch (the work area's
prebuilt wheels) imported by this torch in a fresh interpreter."""
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import torch

from projects.mmdet3d_plugin.compat import stacks
from projects.mmdet3d_plugin.compat.stacks import (TESTED_STACKS, describe,
                                                   installed_versions,
                                                   public_version)
from projects.mmdet3d_plugin.doctor.checks import env

REPO = Path(__file__).resolve().parents[2]
WHEELS = REPO.parent / 'shared' / 'wheels'
TORCH = public_version(torch.__version__)
#: torch's version as its metadata has it (2.1.2 for PyPI's cu121 build).
TORCH_META = installed_versions()['torch']
#: What the fix names for this environment.
INSTALL = f'bash tools/install.sh {sys.prefix}'
#: OpenMMLab's mmcv index for this torch / CUDA pair, where it has one.
OPENMMLAB = {
    ('2.1', '12.1'): 'https://download.openmmlab.com/mmcv/dist/cu121/'
                     'torch2.1/index.html',
    ('2.1', '11.8'): 'https://download.openmmlab.com/mmcv/dist/cu118/'
                     'torch2.1/index.html',
}.get(('.'.join(TORCH.split('.')[:2]), torch.version.cuda))


def _dist_info(root: Path, **versions: str) -> Path:
    """Write one ``<name>-<version>.dist-info/METADATA`` per distribution
    (``nuscenes_devkit`` for ``nuscenes-devkit``) into ``root``."""
    for name, version in versions.items():
        folder = root / f'{name}-{version}.dist-info'
        folder.mkdir(parents=True)
        (folder / 'METADATA').write_text(
            'Metadata-Version: 2.1\n'
            f'Name: {name.replace("_", "-")}\nVersion: {version}\n')
    return root


def test_the_installed_stack_is_a_tested_one(tmp_path):
    versions = installed_versions()
    stack = stacks.tested_stack(versions)
    assert stack is not None, versions
    assert stack.torch == TORCH
    result = env.check_stack()
    assert result.status == 'pass', result
    assert result.detail.startswith(
        f'{describe(versions)}; {env.cuda_words()}: a tested stack, '
        f'{stack.name}')
    assert result.detail.startswith(
        f'torch {versions["torch"]}, mmcv 2.1.0, mmengine 0.10.7, mmdet '
        '3.2.0, mmdet3d 1.4.0, nuscenes-devkit 1.2.0, spconv 2.3.8, '
        'Python 3.11.')
    # torch >= 2.6 with mmengine 0.10.7: how mmengine's checkpoints load.
    note = 'mmengine #1655' in result.detail
    assert note == (tuple(map(int, TORCH.split('.')[:2])) >= (2, 6))
    if note:
        assert 'compat/checkpoints.py: allow_mmengine_checkpoints' in \
            result.detail
        assert 'needs weights_only=False, for files you trust' in \
            result.detail
    # The doctor runs it, after env.torch; a missing config fails alone.
    from projects.mmdet3d_plugin.doctor.preflight import run_doctor
    report = run_doctor(str(tmp_path / 'missing.py'), iters=1)
    assert report.get('env.stack').detail == result.detail
    names = [r.check for r in report.results]
    assert names.index('env.torch') < names.index('env.stack') < \
        names.index('env.mmcv_ops')
    assert [r.check for r in report.failed] == ['config.load']


def test_tested_stacks_are_those_of_docs_install_md():
    assert [(s.torch, s.python) for s in TESTED_STACKS] == [
        ('2.1.2', '3.11'), ('2.13.0', '3.11')]
    page = ' '.join((REPO / 'docs' / 'install.md').read_text().split())
    for stack in TESTED_STACKS:
        assert f'Python {stack.python}' in page
        for name, version in stack.versions.items():
            assert (f'{name} {version}' if name != 'torch' else
                    f'| {version}') in page, (name, version)


@pytest.mark.parametrize('installed, cause, fix', [
    (dict(mmcv='2.2.0'),
     'mmdet3d 1.4.0 needs mmcv>=2.0.0rc4, <2.2.0, found mmcv 2.2.0: its '
     '__init__ asserts the range ("MMCV==2.2.0 is used but incompatible. '
     'Please install mmcv>=2.0.0rc4, <2.2.0."), so import mmdet3d fails',
     'pip uninstall -y mmcv onedl-mmcv, then install the full mmcv 2.1.0 '
     f'(with its compiled ops) built for torch {TORCH_META}'),
    (dict(onedl_mmcv='2.3.6'),
     'mmdet3d 1.4.0 needs mmcv>=2.0.0rc4, <2.2.0, found onedl-mmcv 2.3.6 '
     '(a fork that installs the mmcv package): its __init__ asserts the '
     'range ("MMCV==2.3.6 is used but incompatible.',
     'pip uninstall -y mmcv onedl-mmcv, then install the full mmcv 2.1.0'),
], ids=['mmcv-2.2', 'onedl-mmcv'])
def test_an_mmcv_that_mmdet3d_refuses_fails_with_cause_and_fix(
        tmp_path, monkeypatch, installed, cause, fix):
    """The dist-info comes first on sys.path, as a newer install would."""
    monkeypatch.syspath_prepend(str(_dist_info(tmp_path, **installed)))
    result = env.check_stack()
    assert result.status == 'fail'
    assert cause in result.detail
    assert result.fix.startswith(fix)
    assert INSTALL in result.fix
    assert (OPENMMLAB in result.fix) if OPENMMLAB else \
        'download.openmmlab.com' not in result.fix
    # The same cause and fix where the doctor checks the versions, and
    # where tools/doctor.py checks before anything imports mmdet3d.
    [version] = [r for r in env.check_versions(None)
                 if r.check == 'env.version.mmcv']
    assert version.status == 'fail'
    assert cause in version.detail and version.fix.startswith(fix)
    blocker = env.stack_blocker()
    assert blocker.status == 'fail' and cause in blocker.detail
    assert blocker.fix.startswith(fix)


def test_mmcv_lite_without_mmcv_fails(tmp_path):
    """A site of its own (only the search path given): the stack with
    mmcv-lite in mmcv's place."""
    versions = installed_versions()
    site = _dist_info(
        tmp_path, torch=versions['torch'], mmcv_lite='2.1.0',
        mmengine='0.10.7', mmdet='3.2.0', mmdet3d='1.4.0',
        nuscenes_devkit='1.2.0', spconv='2.3.8')
    result = env.check_stack(path=[str(site)])
    assert result.status == 'fail'
    assert result.detail.startswith(
        f'torch {versions["torch"]}, mmcv not installed, mmengine 0.10.7')
    cause = ("mmdet3d's LiDAR models need mmcv with its compiled ops "
             '(mmcv.ops: voxelization, NMS, sparse convolution), found '
             'mmcv-lite 2.1.0 (mmcv without them) and no full mmcv')
    fix = ('pip uninstall -y mmcv-lite mmcv, then install the full mmcv '
           f'2.1.0 (with its compiled ops) built for torch '
           f'{versions["torch"]}: {INSTALL} (it takes a wheel built for this '
           'torch, or compiles mmcv with MMCV_WITH_OPS=1)')
    assert cause in result.detail
    assert result.fix.startswith(fix)
    # Before torch is imported (tools/doctor.py): the same cause and fix,
    # less the OpenMMLab index of torch's CUDA, which it does not know.
    blocker = env.stack_blocker([str(site)])
    assert blocker.status == 'fail'
    assert cause in blocker.detail and blocker.fix.startswith(fix)


def test_mmcv_lite_beside_mmcv_warns(tmp_path, monkeypatch):
    """Both install the mmcv package; the ops still import here."""
    monkeypatch.syspath_prepend(str(_dist_info(tmp_path, mmcv_lite='2.1.0')))
    result = env.check_stack()
    assert result.status == 'warn'
    assert ': a tested stack, torch ' in result.detail
    assert 'but found mmcv-lite 2.1.0 beside mmcv 2.1.0: both install the ' \
        'mmcv package' in result.detail
    assert result.fix.startswith('pip uninstall -y mmcv-lite mmcv, then')
    assert env.stack_blocker() is None


@pytest.mark.parametrize('torch_version, weights_only_note', [
    ('2.4.1', False), ('2.7.1', True)])
def test_an_untested_torch_is_a_warning_naming_the_tested_stacks(
        tmp_path, torch_version, weights_only_note):
    site = _dist_info(tmp_path, torch=torch_version)
    result = env.check_stack(path=[str(site)] + sys.path)
    assert result.status == 'warn'
    assert result.detail.startswith(f'torch {torch_version}, mmcv 2.1.0, ')
    assert ': not a tested stack (against torch 2.1.2 (' in result.detail
    assert f'torch {torch_version} (tested 2.1.2))' in result.detail
    assert result.fix.startswith(
        f'the tested stacks are {stacks.tested_summary()} (docs/install.md)')
    assert stacks.tested_summary() == (
        "Python 3.11 with torch 2.1.2 (PyPI's cu121 wheel or OpenMMLab's "
        'stack) or torch 2.13.0 (CPU build), each with mmcv 2.1.0, '
        'mmengine 0.10.7, mmdet 3.2.0, mmdet3d 1.4.0, nuscenes-devkit '
        '1.2.0, spconv 2.3.8')
    assert ('mmengine #1655' in result.detail) == weights_only_note


# Imports mmcv.ops from the folder first on sys.path, then without its
# compiled ops; prints what the checks say each time.
PROBE = """
import glob, importlib, json, os, sys
sys.path.insert(0, sys.argv[1])
import mmcv
assert mmcv.__file__.startswith(sys.argv[1]), mmcv.__file__
from projects.mmdet3d_plugin.doctor.checks import env
out = {}
for case in ('other_torch', 'no_ops'):
    if case == 'no_ops':
        for lib in glob.glob(os.path.join(sys.argv[1], 'mmcv', '_ext*')):
            os.remove(lib)
        importlib.invalidate_caches()
    try:
        import mmcv.ops
    except (ImportError, OSError) as exc:
        problem = env.mmcv_ops_problem(exc, env.installed_versions())
        out[case] = dict(
            error=f'{type(exc).__name__}: {exc}',
            problem=problem and problem._asdict(),
            stack=env.check_stack().to_dict(),
            ops=env.check_mmcv_ops(None).to_dict())
print(json.dumps(out))
"""


def _other_torch_wheel() -> Path:
    """mmcv 2.1.0 built for the tested torch that is not this one."""
    name = 'mmcv-2.1.0-cp311-cp311-linux_x86_64.whl'
    if TORCH.startswith('2.1.'):
        return WHEELS / name  # built for torch 2.13.0
    return WHEELS / 'torch-2.1.2' / name


def test_mmcv_built_for_another_torch_and_without_ops(tmp_path):
    """Real failures of ``import mmcv.ops``: the other torch's mmcv
    (``undefined symbol``), then the same mmcv without ``_ext``."""
    wheel = _other_torch_wheel()
    if not WHEELS.is_dir():
        pytest.skip(f'{WHEELS} is not here (the work area\'s prebuilt mmcv '
                    'wheels)')
    site = tmp_path / 'site'
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(site)
    try:
        proc = subprocess.run(
            [sys.executable, '-c', PROBE, str(site)], cwd=REPO,
            capture_output=True, text=True, timeout=300)
    finally:
        shutil.rmtree(site)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert set(out) == {'other_torch', 'no_ops'}, out
    torch_meta = TORCH_META
    uninstall = "pip uninstall -y mmcv, then, without pip's cache"

    other = out['other_torch']
    assert 'undefined symbol' in other['error'], other['error']
    cause = ("mmcv 2.1.0's compiled ops were built against a different "
             f'torch than the installed torch {torch_meta}: import mmcv.ops '
             'raised ImportError: ')
    fix = other['problem']['fix']
    assert other['problem']['cause'].startswith(cause)
    assert 'undefined symbol' in other['problem']['cause']
    assert fix.startswith(uninstall)
    assert (f'built for torch {torch_meta}: PIP_NO_CACHE_DIR=1 {INSTALL} '
            '(it takes a wheel built for this torch, or compiles mmcv with '
            'MMCV_WITH_OPS=1)') in fix
    for check in ('stack', 'ops'):
        result = other[check]
        assert result['status'] == 'fail', result
        assert cause in result['detail'] and result['fix'].startswith(
            uninstall), result

    no_ops = out['no_ops']
    assert "No module named 'mmcv._ext'" in no_ops['error'], no_ops['error']
    cause = ('mmcv 2.1.0 has no compiled ops (mmcv-lite, or mmcv built '
             'without MMCV_WITH_OPS=1): import mmcv.ops raised '
             "ModuleNotFoundError: No module named 'mmcv._ext'")
    fix = ('pip uninstall -y mmcv mmcv-lite, then install the full mmcv '
           f'2.1.0 (with its compiled ops) built for torch {torch_meta}: '
           f'{INSTALL}')
    assert no_ops['problem']['cause'] == cause
    assert no_ops['problem']['fix'].startswith(fix)
    for check in ('stack', 'ops'):
        result = no_ops[check]
        assert result['status'] == 'fail', result
        assert cause in result['detail'] and result['fix'].startswith(fix)


@pytest.mark.launch
def test_doctor_stops_on_a_refused_mmcv_before_importing_mmdet3d(tmp_path):
    """``tools/doctor.py`` as users start it, with mmcv 2.2.0 first on the
    path: one failing line with the fix, exit 1, mmdet3d never imported."""
    site = _dist_info(tmp_path / 'site', mmcv='2.2.0')
    report = tmp_path / 'report.json'
    probe = ('import runpy, sys\n'
             'sys.argv = sys.argv[1:]\n'
             'try:\n'
             '    runpy.run_path(sys.argv[0], run_name="__main__")\n'
             'except SystemExit as exc:\n'
             '    code = exc.code\n'
             'print("mmdet3d imported:", "mmdet3d" in sys.modules)\n'
             'sys.exit(code)\n')
    proc = subprocess.run(
        [sys.executable, '-c', probe, 'tools/doctor.py',
         'configs/centerpoint/centerpoint_pillar_synthetic.py', '--json',
         str(report)], cwd=REPO, capture_output=True, text=True,
        timeout=120, env={**os.environ, 'PYTHONPATH': f'{site}:{REPO}'})
    assert proc.returncode == 1, proc.stdout + proc.stderr[-3000:]
    lines = proc.stdout.splitlines()
    assert lines[1].startswith('[FAIL] env.stack  torch ')
    assert 'found mmcv 2.2.0: its __init__ asserts the range' in lines[1]
    assert lines[2].startswith(
        '       fix: pip uninstall -y mmcv onedl-mmcv, then install the '
        'full mmcv 2.1.0')
    assert lines[3].startswith('doctor: stopped before the other checks')
    assert lines[-1] == 'mmdet3d imported: False'
    [line] = json.loads(report.read_text())
    assert (line['check'], line['status']) == ('env.stack', 'fail')


@pytest.mark.launch
def test_importing_the_table_is_cheap():
    proc = subprocess.run(
        [sys.executable, '-c', 'import sys\n'
         'import projects.mmdet3d_plugin.compat.stacks\n'
         "print([m for m in ('torch', 'mmcv', 'mmengine', 'mmdet3d', "
         "'packaging') if m in sys.modules])"],
        cwd=REPO, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == '[]'
