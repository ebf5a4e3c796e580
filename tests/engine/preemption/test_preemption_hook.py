"""``PreemptionHook``'s DataLoader workers: they ignore the preemption
signals from their start, and the process's end with them is quiet.

* the end of a process is its interpreter exit, which forked ranks skip
  (they end with ``os._exit``), so those runs are real launches of
  ``tools/train.py`` (the toy, iteration-based, two persistent fork
  workers started when the loop is built): one that succeeds prints no
  traceback, one that raises at iteration 2 shows its own error and not a
  worker's. ``AwaitWorkersAtExitHook`` waits at exit for the killed
  workers without reaping them, so a worker end that torch would report
  is reported whatever the timing;
* SIGTERM to every process of a rank (as Slurm signals a job step),
  workers included, in a forked rank: the run stops as preempted (85);
  its train workers, started with the loop before any hook ran, and its
  idle val workers (persistent, after a validation) survived it.

The 2-rank ``tools/dist_train.sh`` run of the generated config that ends
quietly: ``tests/tools/test_launchers.py``; SIGTERM to a rank under
torchrun: ``tests/engine/resume/test_exact_resume.py``.
"""
import os
import signal
import subprocess
import time

import pytest

from projects.mmdet3d_plugin.constants import PREEMPTED_EXIT_CODE
from tests.helpers.toy_config import toy_config, write_toy_config
from tests.helpers.train_tool import finish, fork_train, start_train

WORKER_ERROR = 'killed by signal'
PROBE = dict(type='AwaitWorkersAtExitHook')


@pytest.fixture(scope='module')
def ended(tmp_path_factory):
    """``{name: (output, returncode)}`` of a run that succeeds and one
    that raises, each in a fresh interpreter."""
    tmp = tmp_path_factory.mktemp('preemption_exit')

    def config(name, *hooks):
        return write_toy_config(tmp / f'{name}.py', max_iters=8,
                                persistent_workers=True,
                                custom_hooks=[PROBE, *hooks])

    return finish({
        # tool: the interpreter's exit functions, after the run
        'ok': start_train(config('ok'), tmp / 'ok'),
        'fails': start_train(
            config('fails', dict(type='FailAtIterHook', at_iter=2)),
            tmp / 'fails'),
    }, timeout=300)


@pytest.mark.launch
def test_a_run_that_succeeds_prints_no_traceback(ended):
    out, code = ended['ok']
    assert code == 0, out[-5000:]
    assert 'Iter(train) [8/8]' in out, out[-3000:]
    assert 'Traceback' not in out and WORKER_ERROR not in out, out[-5000:]


@pytest.mark.launch
def test_a_run_that_fails_shows_its_own_error(ended):
    out, code = ended['fails']
    assert code == 1, out[-5000:]
    assert 'RuntimeError: injected fault: rank 0 fails at iteration 2' \
        in out, out[-5000:]
    assert out.count('Traceback') == 1 and WORKER_ERROR not in out, \
        out[-5000:]


def test_sigterm_to_every_process_of_a_rank_preempts(tmp_path):
    # Slow samples: the run is still training when the signal comes. A
    # validation after iteration 2 leaves its persistent workers idle.
    cfg = toy_config(
        max_iters=40, persistent_workers=True, ckpt_interval=None,
        dataset=dict(type='FaultToyDataset', size=24, load_ms=50),
        val_dataloader=dict(
            batch_size=4, num_workers=2, persistent_workers=True,
            sampler=dict(type='DefaultSampler', shuffle=False),
            dataset=dict(type='FaultToyDataset', size=8)),
        val_evaluator=dict(type='FaultToyMetric'),
        val_cfg=dict(type='ValLoop'))
    cfg['train_cfg']['val_interval'] = 2
    config = write_toy_config(tmp_path / 'term.py', cfg)
    # hook: PreemptionHook's handler in the rank, its workers ignoring
    ranks = fork_train(config, tmp_path / 'work')
    deadline = time.monotonic() + 120
    while 'Iter(train) [ 4/40]' not in ranks.output():
        assert ranks.poll() is None and time.monotonic() < deadline, \
            ranks.output()[-5000:]
        time.sleep(0.05)
    os.killpg(ranks.pids[0], signal.SIGTERM)  # the rank and its workers
    try:
        out = ranks.communicate(timeout=120)[0]
    except subprocess.TimeoutExpired:
        pytest.fail('the run did not stop after SIGTERM')
    assert ranks.returncode == PREEMPTED_EXIT_CODE, out[-5000:]
    assert 'PreemptionHook: SIGTERM; saved' in out, out[-5000:]
    assert 'Iter(val) [2/2]' in out, out[-5000:]
    assert WORKER_ERROR not in out and 'exited unexpectedly' not in out, \
        out[-5000:]
