"""The tools answer ``--help`` and a wrong config path before the heavy
stack loads, and the failure report works when mmcv is broken.

What is checked is which modules a tool process loaded, not its time
(benchmarks/bench_startup.py measures that). Each check is a fresh
interpreter running a tool as users start it: every test here is a real
launch (marker ``launch``)."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.launch

REPO = Path(__file__).resolve().parents[2]
HEAVY = ('torch', 'mmcv', 'mmdet3d', 'mmdet3d.models', 'mmdet.models')
# Runs a tool as a script, then prints which heavy modules it loaded.
PROBE = """
import json, runpy, sys
sys.argv = sys.argv[1:]
try:
    runpy.run_path(sys.argv[0], run_name='__main__')
except SystemExit as e:
    code = e.code
else:
    code = 0
print(json.dumps([m for m in {heavy!r} if m in sys.modules]))
sys.exit(code)
"""


def _probe(*args, pythonpath=str(REPO)):
    proc = subprocess.run(
        [sys.executable, '-c', PROBE.format(heavy=HEAVY), *args], cwd=REPO,
        capture_output=True, text=True, timeout=120,
        env={**os.environ, 'PYTHONPATH': pythonpath})
    loaded = json.loads(proc.stdout.strip().splitlines()[-1])
    return proc, loaded


@pytest.mark.parametrize('tool', [
    'train', 'test', 'failure_report', 'create_synthetic_nuscenes',
    'create_data', 'doctor', 'migrate_config', 'migrate_checkpoint',
    'check_pickle', 'find_unused_params', 'profile_pipeline', 'quickstart',
    'replay_step'])
def test_help_loads_no_heavy_module(tool):
    proc, loaded = _probe(f'tools/{tool}.py', '--help')
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert 'usage:' in proc.stdout
    assert loaded == [], f'tools/{tool}.py --help loaded {loaded}'


@pytest.mark.parametrize('tool', ['train', 'test', 'check_pickle',
                                  'find_unused_params', 'migrate_config',
                                  'profile_pipeline'])
def test_missing_config_is_one_line_before_the_stack(tool, tmp_path):
    args = [f'tools/{tool}.py', str(tmp_path / 'missing.py')]
    if tool in ('migrate_config', 'test'):
        args.append(str(tmp_path / 'out.py'))
    proc, loaded = _probe(*args)
    errors = [line for line in proc.stderr.splitlines()
              if line.startswith('error: ')]
    assert proc.returncode == 1, proc.stderr[-2000:]
    assert len(errors) == 1 and 'missing.py' in errors[0], proc.stderr
    assert 'Traceback' not in proc.stderr
    assert not set(loaded) & {'mmcv', 'mmdet3d'}, loaded


def test_replay_step_names_a_missing_work_dir_before_the_stack(tmp_path):
    proc, loaded = _probe('tools/replay_step.py', str(tmp_path / 'gone'),
                          '--iteration', '3')
    assert proc.returncode == 1, proc.stderr[-2000:]
    assert proc.stderr.splitlines()[0].startswith(
        "error: replay_step: '") and 'gone' in proc.stderr, proc.stderr
    assert loaded == [], loaded


def test_package_import_loads_no_heavy_module():
    proc = subprocess.run(
        [sys.executable, '-c', 'import sys, projects.mmdet3d_plugin; '
         f'print([m for m in {HEAVY!r} if m in sys.modules])'],
        cwd=REPO, capture_output=True, text=True, timeout=60,
        env={**os.environ, 'PYTHONPATH': str(REPO)})
    assert proc.stdout.strip() == '[]', proc.stderr[-2000:]


def test_failure_report_works_with_a_broken_mmcv(tmp_path, monkeypatch):
    from torch.distributed.elastic.multiprocessing.errors import ErrorHandler

    # Rank 0's error file, as torch elastic writes it.
    rank_dir = tmp_path / 'logs' / 'attempt_0' / '0'
    rank_dir.mkdir(parents=True)
    monkeypatch.setenv('TORCHELASTIC_ERROR_FILE', str(rank_dir / 'error.json'))
    try:
        raise ValueError('boom from rank 0')
    except ValueError as e:
        ErrorHandler().record_exception(e)
    broken = tmp_path / 'site' / 'mmcv'
    broken.mkdir(parents=True)
    (broken / '__init__.py').write_text(
        "raise ImportError('mmcv is broken on purpose')\n")
    proc, loaded = _probe(
        'tools/failure_report.py', str(tmp_path / 'logs'), '--exit-code',
        '1', '--work-dir', str(tmp_path / 'work'),
        pythonpath=f'{tmp_path / "site"}{os.pathsep}{REPO}')
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert 'Why the run failed' in proc.stderr, proc.stderr[-3000:]
    assert 'ValueError: boom from rank 0' in proc.stderr, proc.stderr[-3000:]
    assert not set(loaded) & {'mmcv', 'mmdet3d'}, loaded
    report = json.loads((tmp_path / 'work' / 'failure_report.json')
                        .read_text())
    assert 'boom from rank 0' in json.dumps(report)
