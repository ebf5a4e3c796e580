"""The root-cause report that ends a failed distributed launch.

The first part checks the cause table (every cause's classification), the
frame finder, the error files and the causes-versus-victims logic on
constructed failures, in process.

The second runs ``tools/train.py`` on 2 gloo ranks with a fault injected
(``failure_faults.py``):

* in ranks forked from the test process, each with the error file a
  launcher gives a rank (``tests/helpers/train_tool.py``), the report
  built in process from those files (``report_failed_run``, what
  ``tools/failure_report.py`` runs after a failed launch): the subject is
  the report of what real ranks record, for every rank raising the same
  error, DDP's unused-parameter error and a DataLoader worker killed by
  SIGBUS;
* as real launches (marker ``launch``), one per cause family, where the
  launcher is the subject: ``tools/dist_train.sh`` with one rank raising
  (a recorded error; torchrun stops the victim, keeps the error files in
  the work dir, and the report is the last 40 lines of the output) and one
  rank SIGKILLed (a signal: only torchrun's exit status names it), and
  ``tools/slurm_train.sh`` from a login node (srun's tasks, their error
  files, the report after srun).
"""
import importlib.util
import json
import os
import re
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from torch.distributed.elastic.multiprocessing.errors import ErrorHandler

from projects.mmdet3d_plugin.constants import (FAILURE_REPORT_NAME,
                                               HANG_EXIT_CODE,
                                               HANG_MESSAGE_PREFIX,
                                               HANG_REPORT_NAME)
from projects.mmdet3d_plugin.failures.error_files import RankErrorHandler
from projects.mmdet3d_plugin.failures.frames import exception_lines, user_frame
from projects.mmdet3d_plugin.failures.causes import is_peer_death
from projects.mmdet3d_plugin.dist.ports import free_port
from projects.mmdet3d_plugin.engine.watchdog.abort import DistWatchdogHang
from projects.mmdet3d_plugin.failures.causes import (CAUSES, find_cause,
                                                     signal_hint)
from projects.mmdet3d_plugin.failures.collect import RankFailure, collect_failures
from projects.mmdet3d_plugin.config.presets import known_presets
from projects.mmdet3d_plugin.failures.build import build_report
from projects.mmdet3d_plugin.failures.text import format_report
from projects.mmdet3d_plugin.failures.error_files import read_error_file
from projects.mmdet3d_plugin.failures.record import record_errors
from projects.mmdet3d_plugin.failures.report import report_failed_run
from projects.mmdet3d_plugin.failures.collect import EXIT_STATUS_NAME
from projects.mmdet3d_plugin.failures.rank_info import (ERROR_FILE_ENV,
                                                        RANK_INFO_NAME,
                                                        stop_rank_info)

REPO = Path(__file__).resolve().parents[2]
HELPERS = REPO / 'tests' / 'helpers'
from tests.helpers.dist_env import wait_or_kill  # noqa: E402
from tests.helpers.train_tool import fork_dist_train  # noqa: E402
from tests.helpers.failure_faults import (BAD_BATCH_FAULT, FAULT_MESSAGE,  # noqa: E402
                                          write_failure_config)
from tests.helpers.slurm_cluster import PARTITION  # noqa: E402

# -- the cause table --------------------------------------------------------

DDP_TEXT = ('RuntimeError: Expected to have finished reduction in the prior '
            'iteration before starting a new one. This error indicates that '
            'your module has parameters that were not used in producing '
            'loss.')


@pytest.mark.parametrize('text,exit_code,key', [
    (DDP_TEXT, 1, 'ddp_unused_parameters'),
    ('RuntimeError: DDPUnusedParamHook: DDP stopped at iteration 1', 1,
     'ddp_unused_parameters'),
    ('RuntimeError: DataLoader worker (pid 5) is killed by signal: Bus '
     'error.', 1, 'shm_full'),
    ('RuntimeError: unable to write to file </torch_81_2_0>: No space left '
     'on device (28)', 1, 'shm_full'),
    ('', -signal.SIGBUS, 'shm_full'),
    ("OSError: [Errno 28] No space left on device: 'work/iter_2.pth'", 1,
     None),
    ('', -signal.SIGKILL, 'host_oom'),
    ('RuntimeError: DataLoader worker (pid 7) is killed by signal: Killed.',
     1, 'host_oom'),
    ('torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 '
     'GiB', 1, 'cuda_oom'),
    ('RuntimeError: [../gloo/transport/tcp/unbound_buffer.cc:81] Timed out '
     'waiting 1800000ms for recv operation to complete', 1, 'dist_timeout'),
    ('RuntimeError: [Rank 0] Watchdog caught collective operation timeout: '
     'WorkNCCL(SeqNum=9, OpType=ALLREDUCE) ran for 1800081 milliseconds '
     'before timing out.', 1, 'dist_timeout'),
    ('torch.distributed.DistBackendError: NCCL error in: '
     'ProcessGroupNCCL.cpp:1970, unhandled system error', 1, 'nccl_error'),
    (f'{HANG_MESSAGE_PREFIX}: rank 1 stuck at iteration 2', HANG_EXIT_CODE,
     'hang'),
    ('', HANG_EXIT_CODE, 'hang'),
    ("AttributeError: module 'numpy' has no attribute 'long'", 1,
     'upstream_bug'),
    ('', -signal.SIGSEGV, 'native_crash'),
    ('projects.mmdet3d_plugin.failures.exceptions.NonFiniteStepsError: '
     'NonFiniteGuardHook: 3 non-finite steps in a row', 1, 'nonfinite'),
    ('NonFiniteStateError: AtomicCheckpointHook: iter_5.pth not written', 1,
     'nonfinite'),
    ('projects.mmdet3d_plugin.failures.exceptions.BadSamplesError: '
     'BadSampleHook: 11 broken files met, more than max_bad_samples=10', 1,
     'data'),
    ('BadSampleError: Caught BadSampleError in DataLoader worker process 0.'
     '\nbad sample: samples/LIDAR_TOP/a.pcd.bin (token 76de, sample_idx 5): '
     'ValueError: cannot reshape array of size 6834 into shape (5)', 1,
     'data'),
    ('ValueError: config: data_root does not exist', 1, None),
    ('', 1, None),
])
def test_cause_table(text, exit_code, key):
    cause = find_cause(text, exit_code)
    assert (cause.key if cause else None) == key


def test_gpu_oom_fix_names_the_levers_and_the_doctor():
    fix = find_cause('torch.OutOfMemoryError: CUDA out of memory.', 1).fix
    for lever in ("presets = ['activation_checkpointing']", '--accum 2',
                  '--amp bf16', 'tools/doctor.py CONFIG --gpu-memory 16G'):
        assert lever in fix, lever
    assert 'activation_checkpointing' in known_presets()


def test_every_cause_has_a_fix_and_a_way_to_be_found():
    for cause in CAUSES:
        assert cause.title and cause.explanation and cause.fix, cause.key
        assert cause.patterns or cause.signals or cause.exit_codes, cause.key


@pytest.mark.parametrize('text,peer', [
    ('RuntimeError: [../pair.cc:553] Connection closed by peer '
     '[127.0.0.1]:36495', True),
    ('RuntimeError: [../pair.cc:537] Read error [127.0.0.1]:31885: '
     'Connection reset by peer', True),
    ('torch.distributed.DistNetworkError: failed to recv, got 0 bytes', True),
    ('ValueError: Connection settings are wrong', False),
])
def test_peer_death(text, peer):
    assert is_peer_death(text) is peer


@pytest.mark.parametrize('name,start', [
    ('Killed.', ' SIGKILL is most often the out-of-memory killer'),
    ('SIGKILL', ' SIGKILL is most often the out-of-memory killer'),
    ('Bus error.', ' SIGBUS in a DataLoader worker is most often /dev/shm'),
    ('Terminated', ''),
])
def test_signal_hint_for_the_tools_error_printer(name, start):
    hint = signal_hint(name)
    assert hint.startswith(start) and (hint == '') == (start == '')


# -- frames -----------------------------------------------------------------

TORCH = '/venv/lib/python3.11/site-packages/torch/nn/parallel/distributed.py'
CALLSTACK = textwrap.dedent(f'''\
    Traceback (most recent call last):
      File "/venv/lib/python3.11/site-packages/mmdet3d/models/x.py", line 5, in loss
        raise KeyError('k')
    KeyError: 'k'

    The above exception was the direct cause of the following exception:

    Traceback (most recent call last):
      File "/repo/tools/train.py", line 22, in main
        run_tool(train, args)
      File "/repo/projects/mmdet3d_plugin/apis/launch.py", line 429, in train
        runner.train()
      File "{TORCH}", line 1775, in _pre_forward
        raise RuntimeError(...)
    RuntimeError: first line
    second line
    ''')  # noqa: E501


def test_innermost_user_frame_skips_torch_and_reads_the_last_traceback():
    frame = user_frame(CALLSTACK)
    assert (frame.file, frame.line, frame.function) == (
        '/repo/projects/mmdet3d_plugin/apis/launch.py', 429, 'train')
    site = user_frame(CALLSTACK.split('The above')[0])
    assert str(site) == 'mmdet3d/models/x.py:5 in loss'
    assert exception_lines(CALLSTACK) == [
        "KeyError: 'k'", 'RuntimeError: first line', 'second line']


# -- error files ------------------------------------------------------------


def test_torch_error_file_is_read(tmp_path, monkeypatch):
    """A file written by torch elastic's own handler (no plugin fields)."""
    path = tmp_path / 'error.json'
    monkeypatch.setenv(ERROR_FILE_ENV, str(path))
    try:
        raise KeyError('missing')
    except KeyError as e:
        ErrorHandler().record_exception(e)
    error = read_error_file(str(path))
    assert error['message'] == "KeyError: 'missing'"
    assert 'test_torch_error_file_is_read' in error['callstack']
    assert error['extra'] == {}
    path.write_text(json.dumps({'message': 'a string message'}))
    assert read_error_file(str(path))['message'] == 'a string message'
    path.write_text('{not json')
    assert read_error_file(str(path)) is None


def _fail_here():
    raise ValueError('bad value')


def test_record_errors_writes_rank_host_and_frame(tmp_path, monkeypatch):
    path = tmp_path / '3' / 'error.json'
    path.parent.mkdir()
    monkeypatch.setenv(ERROR_FILE_ENV, str(path))
    monkeypatch.setenv('RANK', '3')
    monkeypatch.setenv('WORLD_SIZE', '4')
    try:
        with pytest.raises(ValueError, match='bad value'):
            record_errors(_fail_here)()
    finally:
        stop_rank_info()
    error = read_error_file(str(path))
    line = _fail_here.__code__.co_firstlineno + 1
    assert error['message'] == 'ValueError: bad value'
    assert error['extra']['rank'] == 3
    assert error['extra']['frame'] == \
        f'tests/failures/test_report.py:{line} in _fail_here'
    info = json.loads((path.parent / RANK_INFO_NAME).read_text())
    assert info['rank'] == 3 and info['world_size'] == 4
    assert info['memory']['peak_rss_mb'] > 0
    # torchrun's reader takes it as its own format.
    failures = collect_failures(str(tmp_path))
    assert [(f.rank, f.message) for f in failures] == [
        (3, 'ValueError: bad value')]


# -- causes versus victims --------------------------------------------------

GLOO_PEER = ('RuntimeError: [/w/gloo/transport/tcp/pair.cc:553] Connection '
             'closed by peer [127.0.0.1]:36495. This is typically caused by '
             'a remote worker crashing.')


def _flat(text: str) -> str:
    """The printed report with its line wrapping undone."""
    return ' '.join(text.split())


def _failure(rank, exit_code, message='', time=100.0, **kwargs):
    return RankFailure(rank=rank, host='node1', exit_code=exit_code,
                       message=message, time=time, **kwargs)


def test_first_cause_is_the_root_and_peers_are_victims():
    report = build_report([
        _failure(0, -15, GLOO_PEER, time=100.2),
        _failure(1, 1, 'ValueError: bad box', time=100.1,
                 frame='tests/x.py:3 in f'),
        _failure(2, -15, time=100.3),
    ], world_size=3)
    assert report['first_failure']['rank'] == 1
    assert report['cause']['key'] == 'exception'
    assert [v['rank'] for v in report['victims']] == [0, 2]
    text = _flat(format_report(report))
    assert 'First failure: rank 1 on node1, exit code 1' in text
    assert ' at tests/x.py:3 in f ' in text
    assert 'rank 0: SIGTERM (exit code -15), lost a peer: RuntimeError: ' \
        'Connection closed by peer [127.0.0.1]:36495.' in text
    assert 'rank 2: SIGTERM (exit code -15), stopped by the launcher' in text


def test_identical_errors_are_shown_once():
    worker = 'RuntimeError: DataLoader worker (pid {}) is killed by signal: ' \
        'Bus error.'
    report = build_report([
        _failure(r, 1, worker.format(4000 + r), time=100 + r / 10)
        for r in range(4)
    ], world_size=4)
    assert len(report['errors']) == 1
    assert report['errors'][0]['ranks'] == [0, 1, 2, 3]
    assert report['cause']['key'] == 'shm_full'
    text = format_report(report)
    assert text.count('is killed by signal: Bus error') == 1
    assert 'ranks 0, 1, 2, 3 (the same error on every rank):' in text


def test_recorded_error_decides_over_a_later_signal():
    # Rank 0 lost its peer, then torchrun had to SIGKILL it.
    report = build_report([_failure(0, -9, GLOO_PEER, time=101),
                           _failure(1, 1, 'ValueError: a', time=100)])
    assert report['cause']['key'] == 'exception'
    assert [v['rank'] for v in report['victims']] == [0]


def test_rank_that_raised_then_got_sigterm_is_not_called_sigtermed():
    report = build_report([_failure(0, 1, GLOO_PEER, time=101),
                           _failure(1, -15, 'ValueError: a', time=100)])
    assert report['first_failure']['rank'] == 1
    assert report['first_failure']['exit'] == (
        'raised an exception, then got SIGTERM while exiting (exit code -15)')
    assert [v['rank'] for v in report['victims']] == [0]


def test_two_different_causes_are_both_listed():
    report = build_report([
        _failure(0, 1, 'ValueError: a', time=101),
        _failure(1, -9, time=100),
    ])
    assert report['first_failure']['rank'] == 1
    assert report['cause']['key'] == 'host_oom'
    assert [e['ranks'] for e in report['errors']] == [[1], [0]]


def test_hang_names_the_stuck_rank_and_the_hang_report(tmp_path):
    (tmp_path / HANG_REPORT_NAME).write_text('stacks')
    message = (f'{HANG_MESSAGE_PREFIX}: no rank finished an iteration for '
               '20 s; stuck: rank 1 at iteration 2, tests/x.py:9 in '
               'before_train_iter\nrank 0 at iteration 2, waiting in '
               'all_reduce')
    report = build_report([
        _failure(0, HANG_EXIT_CODE, message, time=130,
                 info=dict(log_dir=str(tmp_path))),
        _failure(1, -15, time=131),
    ], world_size=2)
    assert report['cause']['key'] == 'hang'
    assert report['stuck_ranks'] == [1]
    assert report['hang_report'] == str(tmp_path / HANG_REPORT_NAME)
    text = _flat(format_report(report))
    assert 'Likely cause: hang' in text
    assert 'Stuck: rank 1' in text
    assert 'tests/x.py:9 in before_train_iter' in text
    assert 'rank 1: SIGTERM (exit code -15), stuck (named by the watchdog)' \
        in text
    assert str(tmp_path / HANG_REPORT_NAME) in text


def test_watchdog_error_files_read_as_a_hang(tmp_path, monkeypatch):
    """The error files DistWatchdogHook writes, in torchrun's layout."""
    hang_report = tmp_path / 'work' / '20261201_000000' / HANG_REPORT_NAME
    hang_report.parent.mkdir(parents=True)
    hang_report.write_text('stacks of every rank')
    message = (f'{HANG_MESSAGE_PREFIX}: rank 1 stuck in train iteration 2 '
               'at tests/helpers/hang_helpers.py:30 in before_train_iter, no '
               'iteration finished for 21 s (timeout 20 s; no rank '
               'progressed). Rank 0 waits in a collective (rank 0 at '
               'torch/distributed/distributed_c10d.py:10 in all_reduce). '
               f'Stacks of every rank: {hang_report}.')
    attempt = tmp_path / 'logs' / 'none_abc' / 'attempt_0'
    statuses = {}
    for rank in (0, 1):
        path = attempt / str(rank) / 'error.json'
        path.parent.mkdir(parents=True)
        monkeypatch.setenv(ERROR_FILE_ENV, str(path))
        RankErrorHandler().record_exception(DistWatchdogHang(
            message, f'Rank 1 stack\nDistWatchdogHang: {message}\n',
            stuck_ranks=[1], hang_report=str(hang_report)))
        statuses[str(rank)] = dict(local_rank=rank, pid=100 + rank,
                                   exitcode=HANG_EXIT_CODE, timestamp=1,
                                   error_file=str(path))
    (tmp_path / 'logs' / EXIT_STATUS_NAME).write_text(
        json.dumps(dict(host='node1', failures=statuses)))
    text, path = report_failed_run(str(tmp_path / 'logs'), 1,
                                   str(tmp_path / 'work'))
    report = json.loads(Path(path).read_text())
    assert report['cause']['key'] == 'hang'
    assert report['stuck_ranks'] == [1]
    assert report['errors'][0]['ranks'] == [0, 1]
    assert report['hang_report'] == str(hang_report)
    flat = _flat(text)
    assert 'exit code 75 (ended by DistWatchdogHook)' in flat
    assert 'rank 1 stuck in train iteration 2 at ' \
        'tests/helpers/hang_helpers.py:30 ' \
        'in before_train_iter' in flat
    assert 'Stuck: rank 1 ' in flat
    assert f"every rank's stack: {hang_report}" in flat


def test_all_ranks_terminated_from_outside():
    report = build_report([_failure(0, -15), _failure(1, -15)])
    assert report['cause']['key'] == 'terminated'
    assert report['victims'] == []


def test_only_victims_here_names_the_silent_rank():
    """Slurm: rank 1 left no error file (killed), rank 0 lost it."""
    report = build_report([_failure(0, None, GLOO_PEER),
                           _failure(1, None, time=None)])
    assert report['cause']['key'] == 'lost_peer'
    assert report['first_failure']['rank'] == 1
    assert [v['rank'] for v in report['victims']] == [0]


def _load_tool(name):
    spec = importlib.util.spec_from_file_location(
        f'{name}_tool', REPO / 'tools' / f'{name}.py')
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize('args,work_dir', [
    (['configs/x/my_config.py', '--launcher', 'pytorch'],
     'work_dirs/my_config'),
    (['c.py', '--work-dir', '/w', '--launcher', 'pytorch'], '/w'),
    (['c.py', 'ckpt.pth', '--work-dir=/w2'], '/w2'),
    ([], None),
])
def test_dist_run_finds_the_work_dir(args, work_dir):
    dist_run = _load_tool('dist_run')
    assert dist_run.default_work_dir(args) == work_dir
    # The launch's error files go under it, one folder per launch.
    if work_dir:
        log_dir = dist_run.default_log_dir(work_dir)
        assert os.path.dirname(log_dir) == f'{work_dir}/torchrun_logs'


# -- 2-rank runs -------------------------------------------------------------

#: Upper bound for a run that must end by itself; reaching it means a hang.
HANG = 300
REPORT_HEADER = 'Why the run failed'


def _launch(tmp_path, config, world_size=2):
    """Run tools/dist_train.sh; return (status, last 40 lines, JSON)."""
    env = dict(os.environ, PYTHONPATH=str(REPO), PYTHON=sys.executable,
               PORT=str(free_port()), OMP_NUM_THREADS='1')
    for name in ('MMDET3D_PLUGIN_DEBUG', 'TORCHRUN_LOG_DIR'):
        env.pop(name, None)
    work = tmp_path / 'work'
    proc = subprocess.Popen(
        ['bash', str(REPO / 'tools' / 'dist_train.sh'), str(config),
         str(world_size), '--work-dir', str(work)],
        cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        text=True, start_new_session=True)
    out = wait_or_kill(proc, HANG, 'the launch hung')
    tail = '\n'.join(out.splitlines()[-40:])
    assert REPORT_HEADER in tail, out[-6000:]
    print(tail[tail.index(REPORT_HEADER):])
    report = json.loads((work / FAILURE_REPORT_NAME).read_text())
    return proc.returncode, _flat(tail[tail.index(REPORT_HEADER):]), report


def _fork(tmp_path, config):
    """Run tools/train.py in 2 forked ranks, each with its error file,
    and build the report from those files; return (the ranks' status, the
    report's text, its JSON), as :func:`_launch`."""
    work, errors = tmp_path / 'work', tmp_path / 'errors'
    # report: what real ranks record, read without a launcher
    ranks = fork_dist_train(config, work, errors=errors)
    try:
        out = ranks.communicate(timeout=HANG)[0]
    except subprocess.TimeoutExpired:
        pytest.fail('the ranks hung:\n' + ranks.communicate()[0][-5000:])
    text, path = report_failed_run(str(errors), ranks.returncode, str(work))
    assert REPORT_HEADER in text, out[-6000:]
    print(text)
    assert path == str(work / FAILURE_REPORT_NAME)
    return ranks.returncode, _flat(text), json.loads(Path(path).read_text())


def _raise_line() -> int:
    source = (HELPERS / 'fault_hooks.py').read_text().splitlines()
    return next(i for i, line in enumerate(source, 1)
                if line.strip().startswith('raise self.error('))


@pytest.mark.slow
@pytest.mark.launch
def test_one_rank_raises(tmp_path):
    config = write_failure_config(
        tmp_path / 'raise.py',
        hooks=[dict(BAD_BATCH_FAULT, ranks=[1])])
    # launcher: torchrun stops the victim and keeps the error files
    status, report_text, report = _launch(tmp_path, config)
    assert status == 1
    assert 'First failure: rank 1 on ' in report_text
    assert f'ValueError: {FAULT_MESSAGE}' in report_text
    assert f'at tests/helpers/fault_hooks.py:{_raise_line()} in _fail' \
        in report_text
    victims = report_text.split('Victims')[1].split('Likely cause')[0]
    assert ' rank 0: ' in victims
    assert report['first_failure']['rank'] == 1
    assert [v['rank'] for v in report['victims']] == [0]
    # The launch's error files are kept in the work dir.
    assert Path(report['log_dir']).parent == tmp_path / 'work' / \
        'torchrun_logs'
    assert Path(report['first_failure']['error_file']).is_file()


_STOPPED_RANK_SCRIPT = """\
import os, sys, time
sys.path.insert(0, {repo!r})
from projects.mmdet3d_plugin.failures.record import record_errors


@record_errors
def main():
    if os.environ['RANK'] == '1':
        raise ValueError('rank 1 failed')
    time.sleep(120)  # rank 0: alive until torchrun stops it


main()
"""


@pytest.mark.launch
def test_dist_run_names_the_rank_it_stopped(tmp_path):
    """The rank torchrun stops after another failed is a victim on every
    torch: torch 2.13 lists it in ``ChildFailedError.failures`` (SIGTERM),
    torch 2.1 does not (``tools/dist_run.py`` keeps it from torchrun's
    warning)."""
    # launcher: what torchrun records of the ranks it stops is the subject
    script = tmp_path / 'ranks.py'
    script.write_text(_STOPPED_RANK_SCRIPT.format(repo=str(REPO)))
    logs = tmp_path / 'logs'
    env = dict(os.environ, PYTHONPATH=str(REPO), OMP_NUM_THREADS='1')
    proc = subprocess.Popen(
        [sys.executable, str(REPO / 'tools' / 'dist_run.py'),
         '--nproc-per-node', '2', '--master-port', str(free_port()),
         '--log-dir', str(logs), str(script)],
        cwd=tmp_path, env=env, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True, start_new_session=True)
    out = wait_or_kill(proc, HANG, 'the launch hung')
    assert proc.returncode == 1, out[-3000:]
    status = json.loads((logs / EXIT_STATUS_NAME).read_text())
    assert list(status['failures']) in (['1'], ['0', '1'], ['1', '0'])
    if '0' not in status['failures']:
        assert len(status['stopped']) == 1, status
    text = _flat(out[out.index(REPORT_HEADER):])
    assert 'First failure: rank 1 on ' in text
    assert 'ValueError: rank 1 failed' in text
    victims = text.split('Victims')[1].split('Likely cause')[0]
    assert ' rank 0: ' in victims, text
    report = json.loads((logs / FAILURE_REPORT_NAME).read_text())
    assert [v['rank'] for v in report['victims']] == [0]


@pytest.mark.slow
@pytest.mark.launch
def test_one_rank_sigkilled(tmp_path):
    config = write_failure_config(
        tmp_path / 'kill.py',
        hooks=[dict(BAD_BATCH_FAULT, ranks=[1], action='SIGKILL')])
    # launcher: torchrun's exit status is what names a signal
    status, report_text, report = _launch(tmp_path, config)
    assert status == 1
    assert 'First failure: rank 1 on ' in report_text
    assert 'SIGKILL (exit code -9)' in report_text
    assert 'Likely cause: host out of memory' in report_text
    assert "out-of-memory killer" in report_text
    assert re.search(r'peak RSS of rank 1 \d+\.\d\d GB', report_text)
    assert report['cause']['key'] == 'host_oom'


def test_every_rank_raises_the_same_error(tmp_path):
    config = write_failure_config(
        tmp_path / 'all.py', hooks=[BAD_BATCH_FAULT])
    status, report_text, report = _fork(tmp_path, config)
    assert status == 1
    assert report_text.count(FAULT_MESSAGE) == 1
    assert 'ranks 0, 1 (the same error on every rank):' in report_text
    assert report['errors'][0]['ranks'] == [0, 1]
    assert report['victims'] == []


def test_unused_branch_without_the_hook(tmp_path):
    # Rank 1 never runs branch_b; find_unused_parameters=False, no hook.
    config = write_failure_config(
        tmp_path / 'unused.py',
        model=dict(type='ToyBranchModel', rank_branches=['ab', 'a'],
                   with_dead=False),
        dataset=dict(type='ToyBranchDataset', size=32))
    status, report_text, report = _fork(tmp_path, config)
    assert status == 1
    assert 'Expected to have finished reduction' in report_text
    assert 'Likely cause: unused parameters under DDP' in report_text
    assert "custom_hooks = [dict(type='DDPUnusedParamHook')]" in report_text
    assert 'unused_params.json' in report_text
    assert report['cause']['key'] == 'ddp_unused_parameters'


def test_dataloader_worker_killed_by_sigbus(tmp_path):
    config = write_failure_config(
        tmp_path / 'sigbus.py', num_workers=1,
        dataset=dict(type='SigbusWorkerDataset', rank=1))
    status, report_text, report = _fork(tmp_path, config)
    assert status == 1
    assert 'First failure: rank 1 on ' in report_text
    assert 'killed by signal: Bus error' in report_text
    assert 'Likely cause: shared memory (/dev/shm) too small' in report_text
    assert '--shm-size' in report_text and '--ipc=host' in report_text
    assert "Docker's default /dev/shm is 64 MB" in report_text
    assert report['cause']['key'] == 'shm_full'


@pytest.mark.slow
@pytest.mark.launch
def test_slurm_train_reports_after_srun(tmp_path, slurm):
    # From a "login node": srun makes a job of its own on the tests' Slurm
    # (the `slurm` fixture); GRES= as its nodes have no GPUs.
    config = write_failure_config(
        tmp_path / 'raise.py',
        hooks=[dict(BAD_BATCH_FAULT, ranks=[1])])
    work = tmp_path / 'work'
    env = dict(slurm.env, PYTHONPATH=str(REPO), PYTHON=sys.executable,
               MASTER_PORT=str(free_port()), OMP_NUM_THREADS='1', GPUS='2',
               GPUS_PER_NODE='2', CPUS_PER_TASK='1', GRES='')
    env.pop('MMDET3D_PLUGIN_DEBUG', None)
    proc = subprocess.run(  # launcher: srun's tasks, then the report
        ['bash', str(REPO / 'tools' / 'slurm_train.sh'), PARTITION, 'job',
         str(config), str(work)],
        cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        text=True, timeout=HANG)
    tail = '\n'.join(proc.stdout.splitlines()[-40:])
    assert REPORT_HEADER in tail, proc.stdout[-6000:]
    print(tail[tail.index(REPORT_HEADER):])
    text = _flat(tail[tail.index(REPORT_HEADER):])
    # srun's status: the highest of its tasks' (rank 1 exited 1, rank 0,
    # ended by --kill-on-bad-exit, 128 + SIGTERM).
    assert proc.returncode == 128 + signal.SIGTERM
    assert 'First failure: rank 1 on ' in text
    assert f'ValueError: {FAULT_MESSAGE}' in text
    report = json.loads((work / FAILURE_REPORT_NAME).read_text())
    assert [v['rank'] for v in report['victims']] == [0]
    # Each task wrote its own error file / rank info under the log folder.
    assert sorted(p.parent.name for p in (work / 'error_files').glob(
        f'*/*/{RANK_INFO_NAME}')) == ['0', '1']
