"""A run's distributed state ends in order (``dist/teardown.py``).

* In process: which exceptions end every rank together, the order and
  the flag of what ``at_run_end`` registered, the body's error going on.
* In ranks forked from the test process (the run's end is the subject,
  not the launcher): ``tools/train.py`` on 2 gloo ranks for each way a run
  ends (``tests/helpers/run_ends.py``): finished (3 times in a row, and
  once by iteration, its DataLoader workers alive to the end), stopped by
  ``NonFiniteGuardHook`` and preempted. After the tool's ``main``
  returned, each rank reports what is left: no process group, no thread
  but the main one, Python's or native (gloo's threads are joined when the
  Runner that holds the group is freed), no child process, and how long
  the tool took. A finished run prints nothing after its last log line
  but that report.
* A real launch (marker ``launch``), where ``tools/dist_train.sh`` is the
  subject: the finished run exits 0 and prints nothing after its last log
  line (an abort at a rank's exit would print ``terminate called``, and
  torchrun would report the rank failed).
"""
import json
import os
import runpy
import signal
import sys
import threading
import time

import psutil
import pytest
import torch.distributed as torch_dist

from projects.mmdet3d_plugin.constants import PREEMPTED_EXIT_CODE
from projects.mmdet3d_plugin.dist.teardown import (at_run_end, cancel_run_end,
                                                   ended_in_order,
                                                   every_rank_stops)
from projects.mmdet3d_plugin.failures.exceptions import (NonFiniteStateError,
                                                         NonFiniteStepsError)
from tests.helpers.dist_env import wait_or_kill
from tests.helpers.run_ends import (aborts, after_last_log_line,
                                    start_run_end, write_run_end_configs)
from tests.helpers.toy_config import write_toy_config
from tests.helpers.train_tool import REPO, ForkedRanks

END_STATE = 'END_STATE '


def test_which_errors_end_every_rank_together():
    assert every_rank_stops(NonFiniteStepsError('x'))
    assert every_rank_stops(NonFiniteStateError('x'))
    assert every_rank_stops(SystemExit(PREEMPTED_EXIT_CODE))
    assert not every_rank_stops(SystemExit(1))
    assert not every_rank_stops(ValueError('one rank'))
    assert not every_rank_stops(KeyboardInterrupt())


def test_the_newest_end_runs_first_and_is_told_how_the_run_ended():
    calls = []

    def first(together):
        calls.append(('first', together))

    def second(together):
        calls.append(('second', together))

    def stale(together):
        calls.append(('stale', together))

    at_run_end(stale)  # an earlier run's: not this run's to end
    with ended_in_order():
        at_run_end(first)
        at_run_end(second)
    assert calls == [('second', True), ('first', True)]
    calls.clear()
    with pytest.raises(ValueError, match='alone'):
        with ended_in_order():
            at_run_end(first)
            at_run_end(second)
            cancel_run_end(second)
            raise ValueError('alone')
    assert calls == [('first', False)]
    calls.clear()
    with pytest.raises(NonFiniteStepsError):
        with ended_in_order():
            at_run_end(first)
            raise NonFiniteStepsError('every rank')
    assert calls == [('first', True)]


def test_the_run_error_goes_on_when_an_end_fails():
    def broken(together):
        raise RuntimeError('Connection closed by peer')

    with pytest.raises(NonFiniteStepsError, match='the run'):
        with ended_in_order():
            at_run_end(broken)
            raise NonFiniteStepsError('the run')
    # After a run that returned, the end's error is the run's.
    with pytest.raises(RuntimeError, match='Connection closed'):
        with ended_in_order():
            at_run_end(broken)


def _train_then_report(config, work) -> None:
    """A rank: ``tools/train.py`` as ``__main__``, then one line with what
    is left of the run (its exit status kept)."""
    sys.argv = [str(REPO / 'tools' / 'train.py'), str(config), '--launcher',
                'pytorch', '--work-dir', str(work)]
    start = time.monotonic()
    try:
        runpy.run_path(sys.argv[0], run_name='__main__')
    finally:
        tasks = os.listdir('/proc/self/task')
        print(END_STATE + json.dumps(dict(
            group=torch_dist.is_initialized(),
            python_threads=sorted(t.name for t in threading.enumerate()),
            native_threads=len(tasks),
            children=len(psutil.Process().children()),
            seconds=time.monotonic() - start)), flush=True)


def _rank_outputs(out: str) -> list:
    """Each rank's output (they come one after the other)."""
    parts, current = [], []
    for line in out.splitlines():
        current.append(line)
        if line.startswith(END_STATE):
            parts.append('\n'.join(current))
            current = []
    return parts


@pytest.fixture(scope='module')
def ended(tmp_path_factory):
    tmp = tmp_path_factory.mktemp('run_ends')
    configs = write_run_end_configs(tmp)
    # By iteration: its DataLoader workers live to the run's end.
    configs['finished_iter'] = (write_toy_config(tmp / 'iter.py',
                                                 max_iters=10), 0)
    runs = {}
    # loop: the end of each kind of run, in warm ranks.
    for name, kind in [('finished_1', 'finished'), ('finished_2', 'finished'),
                       ('finished_3', 'finished'),
                       ('finished_iter', 'finished_iter'),
                       ('stopped', 'stopped'), ('preempted', 'preempted')]:
        config, expected = configs[kind]
        ranks = ForkedRanks(
            lambda c=config, w=tmp / name: _train_then_report(c, w),
            world_size=2)
        out = ranks.communicate(timeout=300)[0]
        runs[name] = (out, ranks.returncodes, expected)
    return runs


@pytest.mark.parametrize('name', ['finished_1', 'finished_2', 'finished_3',
                                  'finished_iter', 'stopped', 'preempted'])
def test_nothing_of_the_run_is_left_for_the_interpreters_exit(ended, name):
    out, codes, expected = ended[name]
    assert codes == [expected, expected], out[-6000:]
    outputs = _rank_outputs(out)
    assert len(outputs) == 2, out[-6000:]
    for rank_out in outputs:
        state = json.loads(rank_out.splitlines()[-1][len(END_STATE):])
        seconds = state.pop('seconds')
        assert state == dict(group=False, python_threads=['MainThread'],
                             native_threads=1, children=0), rank_out[-3000:]
        # The workers of a loader still iterating end through its own
        # shutdown: freed with the Runner, each would be waited for 10 s.
        assert seconds < 20, rank_out[-3000:]
        assert not aborts(rank_out)
        if name.startswith('finished'):
            assert after_last_log_line(rank_out) == [
                rank_out.splitlines()[-1]], rank_out[-3000:]


@pytest.mark.launch
def test_finished_run_exits_0_through_dist_train(tmp_path):
    # launcher: the ranks' real exit, and torchrun's status of it.
    config, _ = write_run_end_configs(tmp_path)['finished']
    proc = start_run_end(config, tmp_path / 'work')
    out = wait_or_kill(proc, 300, 'the launch hung')
    assert proc.returncode == 0, out[-6000:]
    assert not aborts(out)
    assert after_last_log_line(out) == [], out[-3000:]
    assert 'Saving checkpoint at 15 iterations' in out


def test_signal_handlers_are_given_back_after_a_run_that_raised(tmp_path):
    """PreemptionHook's handlers go back when a run raises alone too (a
    handler left behind caught SIGTERM in processes forked later)."""
    # hook: its end under ended_in_order, in process.
    from mmengine.runner import Runner

    import tests.helpers.fault_hooks  # noqa: F401  FailAtIterHook
    from tests.helpers.toy_models import runner_cfg
    cfg = runner_cfg(str(tmp_path), hook=dict(type='PreemptionHook'))
    cfg['custom_hooks'].append(dict(type='FailAtIterHook', at_iter=2,
                                    error='ValueError'))
    runner = Runner.from_cfg(cfg)
    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(ValueError, match='injected fault'):
        with ended_in_order():
            runner.train()
    assert signal.getsignal(signal.SIGTERM) is before
