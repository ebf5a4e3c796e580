"""DistWatchdogHook: a hung rank is found, named with its frame, and the
job ends with nothing left behind.

The hook's behaviour runs in 2 gloo ranks forked from the test process
(``fork_dist_train``; their error files in a folder of their own,
``tests/helpers/train_tool.py``), in process, or as units:

* rank 1 sleeps forever at iteration 2 (forked ranks): both ranks exit with
  the watchdog's status (75) soon after ``timeout``, the ranks' log lines,
  their torch elastic error files and ``hang_report.txt`` name the stuck
  rank and frame, and no process of the run (DataLoader workers included)
  is left;
* a rank that raises is not taken for a hang, and the watchdog does not
  hold the job up (forked ranks);
* ``action='report'`` under DDP (forked ranks), and in train, val and test
  loops (in process): one report per stall, training goes on (each stall
  of the in-process run lasts over 3x the timeout; the test counts the
  reports of each stall, not of the run, so a slow step elsewhere on a
  loaded machine does not change the verdict);
* the stuck-rank decision, the error file (read back by torch elastic's
  own ``ProcessFailure``) and argument checks.

One real launch (marker ``launch``), whose subject is the launcher: the
same hang under ``tools/dist_train.sh``, where torchrun reports the
watchdog's exit status and error files, the launcher's report names the
stuck rank and frame, and no process of the launch is left.
"""
import json
import re
import time
import uuid
from pathlib import Path

import psutil
import pytest
from mmengine.evaluator import BaseMetric
from mmengine.hooks import Hook
from mmengine.runner import Runner
from torch.distributed.elastic.multiprocessing.errors import (
    ChildFailedError, ProcessFailure)

import projects.mmdet3d_plugin  # noqa: F401  registers the hook
from mmdet3d.registry import METRICS
from projects.mmdet3d_plugin.constants import (HANG_EXIT_CODE,
                                               HANG_MESSAGE_PREFIX,
                                               HANG_REPORT_NAME)
from projects.mmdet3d_plugin.failures.error_files import RankErrorHandler
from projects.mmdet3d_plugin.engine.hooks import DistWatchdogHook
from projects.mmdet3d_plugin.engine.watchdog.abort import DistWatchdogHang
from projects.mmdet3d_plugin.engine.watchdog.verdict import (PhaseStatus,
                                                             RankStacks,
                                                             RankStatus,
                                                             find_stuck,
                                                             hang_found)
from projects.mmdet3d_plugin.engine.watchdog.hang_text import hang_message

# Mostly waits (timeouts, sleeps): started first, beside CPU-bound modules.
pytestmark = pytest.mark.waits


REPO = Path(__file__).resolve().parents[3]
HELPERS = REPO / 'tests' / 'helpers'
from tests.helpers.fault_helpers import (FaultToyDataset,  # noqa: E402
                                         FaultToyModel)
from tests.helpers.toy_config import write_toy_config  # noqa: E402
# registers SleepOnRankHook
from tests.helpers import hang_helpers  # noqa: E402,F401
from tests.helpers.train_tool import (error_files,  # noqa: E402
                                      fork_dist_train, start_dist_train)

TIMEOUT = 10
#: Upper bound for a run that must end by itself; reaching it means a hang.
HANG = 300
SLEEP_LINE = next(
    i for i, line in enumerate(
        (HELPERS / 'hang_helpers.py').read_text().splitlines(), 1)
    if 'the hang: this line is the stuck frame' in line)
STUCK_FRAME = f'tests/helpers/hang_helpers.py:{SLEEP_LINE} in _maybe_sleep'
STUCK = 'rank 1 stuck in train iteration 2 at ' + STUCK_FRAME


def _hang_config(tmp_path: Path, hooks: list, max_iters: int = 8) -> Path:
    return write_toy_config(
        tmp_path / 'hang.py',
        imports=['tests.helpers.fault_helpers', 'tests.helpers.hang_helpers'],
        max_iters=max_iters, num_workers=1, custom_hooks=hooks)


def _hung_config(tmp: Path) -> Path:
    """2 ranks; rank 1 sleeps forever before iteration 2 (writing
    ``tmp/sleeping`` then)."""
    return _hang_config(tmp, [
        dict(type='SleepOnRankHook', rank=1, at_iter=2,
             marker=str(tmp / 'sleeping')),
        dict(type='DistWatchdogHook', timeout=TIMEOUT),
    ])


def _alive(pids) -> list:
    alive = []
    for pid in pids:
        try:
            if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                alive.append(pid)
        except psutil.NoSuchProcess:
            pass
    return alive


def _wait_noting_processes(run, roots: list) -> set:
    """Wait up to :data:`HANG` s for ``run`` (a launcher or forked ranks),
    noting every process under ``roots`` meanwhile (DataLoader workers
    included); kill it and fail past that."""
    tree = set()
    deadline = time.monotonic() + HANG
    while run.poll() is None and time.monotonic() < deadline:
        for root in roots:
            try:
                tree.update(p.pid for p in
                            psutil.Process(root).children(recursive=True))
            except psutil.NoSuchProcess:
                pass
        time.sleep(0.5)
    if run.poll() is None:
        for pid in _alive(tree):
            psutil.Process(pid).kill()
        run.kill()
        out, _ = run.communicate()
        pytest.fail(f'the hung run was not ended:\n{out[-5000:]}')
    return tree


def _no_process_left(tree: set) -> None:
    deadline = time.monotonic() + 30
    while _alive(tree) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _alive(tree), [psutil.Process(p).cmdline() for p in
                              _alive(tree)]


@pytest.fixture(scope='module')
def hung_run(tmp_path_factory):
    """2 forked gloo ranks; rank 1 sleeps forever before iteration 2."""
    tmp = tmp_path_factory.mktemp('hang')
    errors = tmp / 'errors'
    run = fork_dist_train(  # hook: the watchdog ends the hang
        _hung_config(tmp), tmp / 'work', errors=errors)
    tree = set(run.pids) | _wait_noting_processes(run, run.pids)
    out, _ = run.communicate()
    assert (tmp / 'sleeping').is_file(), out[-5000:]  # rank 1 fell asleep
    [report] = (tmp / 'work').glob(f'*/{HANG_REPORT_NAME}')
    return dict(run=run, out=out, tree=tree, report=report.read_text(),
                errors=error_files(errors))


@pytest.mark.slow
def test_hang_is_ended_by_the_watchdog(hung_run):
    # What the run did, not how long the test waited (the fixture's HANG
    # deadline is only a guard): both ranks exited with the watchdog's
    # status, each logged why, and the watchdog's own clock says it acted
    # once the rank had been idle for its timeout, not before (the upper
    # bound, 3x a round past the timeout, only catches a watchdog that
    # waits far longer than it should on a loaded machine).
    out = hung_run['out']
    assert hung_run['run'].returncodes == [HANG_EXIT_CODE] * 2, out[-5000:]
    flat = ' '.join(out.split())
    assert f'{HANG_MESSAGE_PREFIX}: {STUCK}' in flat, out[-5000:]
    for rank in (0, 1):
        assert f'Ending rank {rank} with exit status {HANG_EXIT_CODE}.' \
            in flat, out[-5000:]
    idle = re.search(r'no iteration finished for (\d+) s \(timeout '
                     f'{TIMEOUT:g} s', flat)
    assert idle is not None, out[-5000:]
    assert TIMEOUT <= int(idle.group(1)) < 3 * (TIMEOUT + 10), idle.group(0)


@pytest.mark.slow
def test_hang_error_files(hung_run):
    files = hung_run['errors']
    assert sorted(files) == [0, 1], hung_run['out'][-5000:]
    for rank, data in files.items():
        message = data['message']['message']
        assert message.startswith(HANG_MESSAGE_PREFIX), message
        assert STUCK in message, message
        # The traceback torchrun prints is the stuck rank's stack.
        stack = data['message']['extraInfo']['py_callstack']
        assert stack.startswith('Rank 1 (pid '), stack
        assert 'time.sleep(3600)' in stack, stack
        assert data['message']['extraInfo']['stuck_ranks'] == [1]
        report = data['message']['extraInfo']['hang_report']
        assert report.endswith(HANG_REPORT_NAME) and Path(report).is_file()
        assert data['message']['extraInfo']['mmdet3d_plugin']['rank'] == \
            rank


@pytest.mark.slow
def test_hang_report_names_stuck_and_waiting_ranks(hung_run):
    report = hung_run['report']
    assert re.search(r'^\s+1\s+STUCK\s+train iteration 2\s+2\s+[\d.]+\s+' +
                     re.escape(STUCK_FRAME), report, re.M), report
    assert re.search(r'^\s+0\s+waiting\s+train iteration 2\s', report,
                     re.M), report
    # faulthandler's dumps of both ranks, the Runner threads marked.
    for rank in (0, 1):
        assert f'=== rank {rank} (pid ' in report
    assert report.count('<- runs the Runner') == 2, report
    assert f'File "{HELPERS / "hang_helpers.py"}", line {SLEEP_LINE} in ' \
        '_maybe_sleep' in report, report


@pytest.mark.slow
def test_hang_leaves_no_process(hung_run):
    tree = hung_run['tree']
    # 2 ranks and their DataLoader workers (1 each) were seen.
    assert len(tree) >= 4, tree
    _no_process_left(tree)


@pytest.mark.slow
@pytest.mark.launch
def test_launcher_reports_the_hang_the_watchdog_ended(tmp_path):
    # The same hang under tools/dist_train.sh: torchrun sees both ranks
    # exit with the watchdog's status and reads the error files they
    # wrote, the launcher's report names the stuck rank and frame, and no
    # process of the launch (agent, ranks, workers) is left.
    proc = start_dist_train(  # launcher: torchrun ends a hung run
        _hung_config(tmp_path), tmp_path / 'work')
    tree = _wait_noting_processes(proc, [proc.pid])
    out, _ = proc.communicate()
    assert (tmp_path / 'sleeping').is_file(), out[-5000:]
    assert proc.returncode != 0, out[-5000:]
    assert f'exitcode  : {HANG_EXIT_CODE}' in out, out[-5000:]
    tail = '\n'.join(out.splitlines()[-40:])
    flat = ' '.join(tail.split())  # the launcher's report wraps lines
    assert HANG_MESSAGE_PREFIX in flat, tail
    assert STUCK in flat, tail
    files = dict(re.findall(r'rank\s+: (\d+) .*?error_file: (\S+)', out,
                            re.S))
    assert sorted(files) == ['0', '1'], out[-5000:]
    for path in files.values():
        message = json.loads(Path(path).read_text())['message']['message']
        assert message.startswith(f'{HANG_MESSAGE_PREFIX}: {STUCK}'), message
    # The launcher, torchrun's agent, 2 ranks and their workers were seen.
    assert len(tree) >= 4, tree
    _no_process_left(tree | {proc.pid})


@pytest.mark.slow
def test_raising_rank_is_not_a_hang(tmp_path):
    config = _hang_config(tmp_path, [
        dict(type='FailAtIterHook', at_iter=2, ranks=[1]),
        dict(type='DistWatchdogHook', timeout=TIMEOUT),
    ])
    run = fork_dist_train(  # hook: a raising rank is no hang
        config, tmp_path / 'work')
    out, _ = run.communicate(HANG)
    assert run.returncode != 0
    assert run.returncodes[1] == 1, (run.returncodes, out[-5000:])
    assert 'injected fault: rank 1 fails at iteration 2' in out, out[-5000:]
    assert HANG_MESSAGE_PREFIX not in out, out[-5000:]
    assert HANG_EXIT_CODE not in run.returncodes
    assert not list((tmp_path / 'work').glob(f'*/{HANG_REPORT_NAME}'))


@pytest.mark.slow
def test_report_action_under_ddp_keeps_training(tmp_path):
    # Rank 1 stalls 12 s; the report comes once, then both ranks finish
    # and the watchdog lets them leave together.
    config = _hang_config(tmp_path, [
        dict(type='SleepOnRankHook', rank=1, at_iter=2, seconds=12),
        dict(type='DistWatchdogHook', timeout=6, action='report'),
    ], max_iters=4)
    run = fork_dist_train(  # hook: action='report' under DDP
        config, tmp_path / 'work')
    out, _ = run.communicate(HANG)
    assert run.returncodes == [0, 0], out[-5000:]
    logged = [line for line in out.splitlines()
              if HANG_MESSAGE_PREFIX in line and 'action=report' in line]
    assert len(logged) == 2, logged  # once on each rank
    [report] = (tmp_path / 'work').glob(f'*/{HANG_REPORT_NAME}')
    text = report.read_text()
    assert 'rank 1 stuck in train iteration 2 at ' \
        'tests/helpers/hang_helpers.py:' \
        in text, text
    assert 'action report' in text
    assert (tmp_path / 'work' / 'iter_4.pth').is_file()


# -- one process: action='report' in train, val and test loops -------------


@METRICS.register_module()
class SampleCountMetric(BaseMetric):
    """Counts the evaluated samples."""

    def process(self, data_batch, data_samples) -> None:
        self.results.append(len(data_samples))

    def compute_metrics(self, results) -> dict:
        return dict(samples=sum(results))


#: The stalls of ``test_report_action_keeps_running``: (loop, iteration).
STALLS = [('train', 3), ('val', 1), ('test', 2)]


def test_report_action_keeps_running(tmp_path):
    # No epoch ends in training: mmengine sleeps 2 s there (a stall).
    train_loader = dict(
        dataset=FaultToyDataset(size=64),
        sampler=dict(type='DefaultSampler', shuffle=False),
        batch_size=4,
        num_workers=0)
    loader = dict(
        dataset=FaultToyDataset(size=16),
        sampler=dict(type='DefaultSampler', shuffle=False),
        batch_size=4,
        num_workers=0)
    # Each stall (3.5 s) lasts over 2x the timeout (1.5 s).
    watchdog = DistWatchdogHook(timeout=1.5, action='report', interval=0.1)
    sleeps = [dict(type='SleepOnRankHook', rank=0, at_iter=at, seconds=3.5,
                   phase=loop) for loop, at in STALLS]
    runner = Runner(
        model=FaultToyModel(),
        work_dir=str(tmp_path),
        experiment_name=f'watchdog_{uuid.uuid4().hex[:8]}',
        train_dataloader=train_loader,
        val_dataloader=loader,
        test_dataloader=loader,
        val_evaluator=dict(type='SampleCountMetric'),
        test_evaluator=dict(type='SampleCountMetric'),
        optim_wrapper=dict(optimizer=dict(type='SGD', lr=0.01)),
        train_cfg=dict(by_epoch=False, max_iters=6, val_interval=6),
        val_cfg=dict(),
        test_cfg=dict(),
        default_hooks=dict(checkpoint=None),
        custom_hooks=[*sleeps, watchdog],
        default_scope='mmdet3d')
    reader = ReportReader(Path(runner.log_dir) / HANG_REPORT_NAME, watchdog)
    runner.register_hook(reader)
    runner.train()
    runner.test()
    assert runner.iter == 6
    # Per stall, exactly one report (not one per round of the watchdog),
    # naming it; a report elsewhere (a step slowed by a loaded machine)
    # is not judged.
    for loop, at in STALLS:
        [(new, text)] = [(new, text) for where, new, text in reader.seen
                         if where == (loop, at)]
        assert new == 1, (loop, at, new, text)
        assert re.search(
            rf'rank 0 stuck in {loop} iteration {at} at '
            r'tests/helpers/hang_helpers.py:\d+ in _maybe_sleep',
            text), text
        assert 'action report' in text, text
    assert watchdog.monitor.reports >= len(STALLS)


class ReportReader(Hook):
    """After every iteration, how many reports the watchdog wrote during
    it, and the report then: ``seen`` holds ``((loop, iteration), new
    reports, report text or None)``.

    Args:
        path (Path): The hang report.
        watchdog (DistWatchdogHook): Whose reports are counted.
    """

    priority = 'HIGHEST'

    def __init__(self, path: Path, watchdog: DistWatchdogHook) -> None:
        self.path = path
        self.watchdog = watchdog
        self.reports = 0
        self.seen = []

    def _read(self, loop: str, iteration: int) -> None:
        reports = self.watchdog.monitor.reports
        text = self.path.read_text() if self.path.exists() else None
        self.seen.append(((loop, iteration), reports - self.reports, text))
        self.reports = reports

    def after_train_iter(self, runner, batch_idx, data_batch=None,
                         outputs=None) -> None:
        self._read('train', runner.iter)

    def after_val_iter(self, runner, batch_idx, data_batch=None,
                       outputs=None) -> None:
        self._read('val', batch_idx)

    def after_test_iter(self, runner, batch_idx, data_batch=None,
                        outputs=None) -> None:
        self._read('test', batch_idx)


# -- units ------------------------------------------------------------------

WAIT = ('/venv/site-packages/torch/distributed/distributed_c10d.py', 10,
        'all_reduce')
BACKWARD = ('/venv/site-packages/torch/autograd/graph.py', 979,
            '_engine_run_backward')
LOADER = ('/venv/site-packages/torch/utils/data/dataloader.py', 1133,
          '_try_get_data')
USER = ('/work/my_hook.py', 12, 'before_train_iter')
LOOP = ('/venv/site-packages/mmengine/runner/loops.py', 289, 'run')
#: torch elastic's ``record`` wraps the whole run: not a collective.
RECORD = ('/venv/site-packages/torch/distributed/elastic/multiprocessing/'
          'errors/__init__.py', 367, 'wrapper')


def _stacks(frames_by_rank):
    return {
        r: RankStacks(r, 'host', 100 + r, [RECORD, LOOP, inner])
        for r, inner in frames_by_rank.items()
    }


@pytest.mark.parametrize(
    'counts,idle,inner,stuck,waiting', [
        # A rank in its own code, the other waiting for it in DDP backward.
        ([5, 5], [30, 29], {0: BACKWARD, 1: USER}, [1], [0]),
        # Stuck in the DataLoader (workers hung), peers in a collective.
        ([5, 5, 5], [31, 30, 31], {0: WAIT, 1: LOADER, 2: WAIT}, [1],
         [0, 2]),
        # Drift: rank 0 progresses (idle 0.1 s) in its own code, rank 1 not.
        ([40, 7], [0.1, 30], {0: USER, 1: USER}, [1], []),
        # NCCL: the waiting rank blocks later, at a sync point in its own
        # code (loss.item()), an iteration ahead.
        ([6, 5], [30, 30], {0: USER, 1: USER}, [1], []),
        # Every rank in a collective: the one behind the others is stuck.
        ([6, 5, 6], [30, 30, 30], {0: WAIT, 1: WAIT, 2: BACKWARD}, [1],
         [0, 2]),
        # Every rank in a collective at the same count: all named.
        ([5, 5], [30, 30], {0: WAIT, 1: BACKWARD}, [0, 1], []),
        # Rank 1 did not answer: frozen.
        ([5, 5], [30, 30], {0: WAIT}, [1], [0]),
    ])
def test_find_stuck(counts, idle, inner, stuck, waiting):
    statuses = {
        r: RankStatus(r, c, 'train', c, i)
        for r, (c, i) in enumerate(zip(counts, idle)) if r in inner
    }
    verdict = find_stuck(statuses, _stacks(inner), len(counts), timeout=20)
    assert verdict.stuck == stuck, verdict
    assert verdict.waiting == waiting, verdict
    assert sorted(verdict.stuck + verdict.waiting + verdict.running) == \
        list(range(len(counts))), verdict


def test_find_stuck_finished_rank_is_not_stuck():
    statuses = {0: RankStatus(0, 8, 'done', 8, 25, done=True),
                1: RankStatus(1, 5, 'train', 5, 25)}
    stacks = _stacks({0: USER, 1: USER})
    verdict = find_stuck(statuses, stacks, 2, timeout=20)
    assert (verdict.stuck, verdict.finished) == ([1], [0])
    message = hang_message(verdict, statuses, stacks, 20)
    assert message.startswith(
        f'{HANG_MESSAGE_PREFIX}: rank 1 stuck in train iteration 5 at '
        '/work/my_hook.py:12 in before_train_iter, no iteration finished for '
        '25 s (timeout 20 s'), message
    assert 'Rank 0 finished' in message


def test_message_names_every_stuck_rank():
    statuses = {r: RankStatus(r, 5, 'val', 3, 30) for r in range(3)}
    stacks = _stacks({0: WAIT, 1: BACKWARD, 2: LOADER})
    verdict = find_stuck(statuses, stacks, 3, timeout=20)
    assert verdict.stuck == [2]
    stacks = _stacks({0: WAIT, 1: BACKWARD, 2: WAIT})
    verdict = find_stuck(statuses, stacks, 3, timeout=20)
    message = hang_message(verdict, statuses, stacks, 20, '/w/hang.txt')
    assert message.startswith(
        f'{HANG_MESSAGE_PREFIX}: ranks 0, 1, 2 stuck; rank 0 in val '
        'iteration 3 at torch/distributed/distributed_c10d.py:10 in '
        'all_reduce; rank 1 in val iteration 3 at torch/autograd/graph.py'
        ':979 in _engine_run_backward; rank 2 '), message
    assert message.endswith('Stacks of every rank: /w/hang.txt.'), message
    # NCCL: the rank ahead blocks at a sync point in its own code.
    statuses = {0: RankStatus(0, 6, 'train', 6, 30),
                1: RankStatus(1, 5, 'train', 5, 31)}
    stacks = _stacks({0: USER, 1: LOADER})
    message = hang_message(find_stuck(statuses, stacks, 2, 20), statuses,
                           stacks, 20)
    assert message.startswith(
        f'{HANG_MESSAGE_PREFIX}: rank 1 stuck in train iteration 5 at '
        'torch/utils/data/dataloader.py:1133 in _try_get_data, no iteration '
        'finished for 31 s'), message
    assert 'Rank 0 not in a collective (rank 0 at /work/my_hook.py:12 in ' \
        'before_train_iter, idle 30 s)' in message, message


COMPUTE = ('/work/my_metric.py', 7, 'compute_metrics')


def _evaluation(rank, elapsed, timeout):
    detail = ('rank 0 computes MyMetric.compute_metrics' if rank == 0 else
              'waits for rank 0 to compute MyMetric.compute_metrics')
    return PhaseStatus('evaluation', detail, timeout, elapsed)


@pytest.mark.parametrize('phases,idle,inner,hang,stuck,waiting', [
    # Rank 0 evaluates for 46 s of its 4 h, rank 1 waits: no hang, though
    # no iteration finished for longer than the timeout (20 s).
    ({0: (46, 14400), 1: (46, 14400)}, [50, 50], {0: COMPUTE, 1: WAIT},
     False, None, None),
    # Its dist_wait_timeout of 30 s is about to run out (ended 5 s before).
    ({0: (25.1, 30), 1: (25.0, 30)}, [29, 29], {0: COMPUTE, 1: WAIT},
     True, [0], [1]),
    ({0: (24, 30), 1: (24, 30)}, [29, 29], {0: COMPUTE, 1: WAIT},
     False, None, None),
    # Rank 0 evaluates within its timeout; rank 1, outside the phase, is
    # stuck in its own code: rank 1 is named, not rank 0.
    ({0: (40, 14400)}, [45, 45], {0: COMPUTE, 1: USER}, True, [1], []),
])
def test_declared_phase_is_judged_against_its_own_timeout(
        phases, idle, inner, hang, stuck, waiting):
    statuses = {
        r: RankStatus(r, 5, 'val', 10, i,
                      declared=_evaluation(r, *phases[r])
                      if r in phases else None)
        for r, i in enumerate(idle)
    }
    assert hang_found(statuses.values(), 20) is hang
    if not hang:
        return
    stacks = _stacks(inner)
    verdict = find_stuck(statuses, stacks, 2, timeout=20)
    assert (verdict.stuck, verdict.waiting) == (stuck, waiting), verdict


def test_message_names_the_overdue_phase():
    statuses = {r: RankStatus(r, 5, 'val', 10, 29,
                              declared=_evaluation(r, 25.2, 30))
                for r in (0, 1)}
    stacks = _stacks({0: COMPUTE, 1: WAIT})
    verdict = find_stuck(statuses, stacks, 2, timeout=20)
    message = hang_message(verdict, statuses, stacks, 20)
    assert message.startswith(
        f'{HANG_MESSAGE_PREFIX}: rank 0 stuck in evaluation (rank 0 computes '
        'MyMetric.compute_metrics) at /work/my_metric.py:7 in '
        'compute_metrics, for 25 s, about to outlast its dist_wait_timeout '
        'of 30 s (the watchdog ends a declared phase 5 s before its '
        'timeout'), message
    assert 'Rank 1 waits in a collective (rank 1 at torch/distributed/' \
        'distributed_c10d.py:10 in all_reduce, in evaluation (waits for ' \
        'rank 0 to compute MyMetric.compute_metrics))' in message, message


def test_error_file_reads_back_in_torch_elastic(tmp_path, monkeypatch):
    path = tmp_path / 'error.json'
    monkeypatch.setenv('TORCHELASTIC_ERROR_FILE', str(path))
    message = f'{HANG_MESSAGE_PREFIX}: rank 1 stuck in train iteration 2 ' \
        'at x.py:3 in f'
    RankErrorHandler().record_exception(
        DistWatchdogHang(message, 'Rank 1 stack\nDistWatchdogHang: ' +
                         message))
    failure = ProcessFailure(local_rank=1, pid=123, exitcode=HANG_EXIT_CODE,
                             error_file=str(path))
    assert failure.message['message'] == message
    summary = ChildFailedError('tools/train.py', {1: failure}).format_msg()
    assert 'traceback : Rank 1 stack' in summary, summary
    assert f'exitcode  : {HANG_EXIT_CODE}' in summary, summary


SECONDS = 'must be a positive, finite number of seconds, got '


@pytest.mark.parametrize('kwargs,match', [
    (dict(timeout=0), f'timeout {SECONDS}0 \\(int\\); e.g. timeout=1800'),
    (dict(timeout='30'),
     f"timeout {SECONDS}'30' \\(str\\); e.g. timeout=1800"),
    (dict(timeout=True),
     f'timeout {SECONDS}True \\(bool\\); e.g. timeout=1800'),
    (dict(action='kill'), "action must be one of \\('abort', 'report'\\)"),
    (dict(interval=-1),
     f'interval {SECONDS}-1 \\(int\\); e.g. interval=10'),
    (dict(timeout=5, interval=10), r'interval \(10 s\) must not exceed'),
])
def test_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=f'^DistWatchdogHook: {match}'):
        DistWatchdogHook(**kwargs)
