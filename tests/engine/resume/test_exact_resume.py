"""Exact resume on an epoch-based toy: the loops and hooks in ranks forked
from the test process (``fork_train`` / ``fork_dist_train``), torchrun's
restarts and its preemption exit through ``tools/dist_train.sh`` (tests
marked ``launch``).

The toy (``tests/helpers/toy_config.py``'s, by epoch): 40 samples in
batches of 4, shuffled, two fork DataLoader workers adding noise from
numpy's global RNG, SGD with momentum, the LR halved after the first
epoch, a checkpoint every 3 iterations (by iteration). An epoch is 10
iterations with one process, 5 with two.

Forked ranks (the fixture ``forked``; the 2-rank reference ``ref2`` is
theirs too):

* one process killed by SIGKILL after iteration 14, ``--resume``;
* 2 ranks killed after iteration 7 (checkpoint 6; rank 1 SIGKILLed, rank
  0 ends at its next collective), resumed on 1 process with ``--resume
  iter_6.pth``: the epoch's samples are each trained once;
* checkpoints every N minutes, the newest two kept;
* the iteration-based toy (10 iterations, an epoch of 6), one process
  killed after ``iter_4.pth``, a half-written checkpoint left behind:
  ``--resume`` sweeps it and goes on from stream position 16 without
  loading the skipped batches, across the epoch boundary.

Real launches (the fixture ``launched``, compared with the forked
``ref2``):

* 2 gloo ranks under ``MAX_RESTARTS=1 tools/dist_train.sh``, rank 1
  SIGKILLed after iteration 7: torchrun restarts both, they resume alone;
* 2 ranks, SIGTERM to rank 1 inside iteration 7: the ranks agree to stop
  after iteration 8 (no rank can be past it), the checkpoint of iteration
  8, every rank exits 85 and ``dist_run`` says preempted; ``--resume``
  (forked ranks) continues;
* restarts running out: the report lists each attempt.

Every loss logged (the resumed run's where an iteration was redone)
equals the uninterrupted run's, and the final weights are bit-identical.
"""
import json
import signal
from pathlib import Path

import pytest
import torch

from projects.mmdet3d_plugin.constants import PREEMPTED_EXIT_CODE
from projects.mmdet3d_plugin.fileio.atomic import is_temporary
from tests.helpers.toy_config import write_toy_config
from tests.helpers.run_logs import losses, records
from tests.helpers.train_tool import (finish, fork_dist_train, fork_train,
                                      start_dist_train)

EPOCHS, SIZE, INTERVAL = 3, 40, 3
ITERS = {1: 30, 2: 15}
# The iteration-based toy: killed right after iter_4.pth.
ITER_BASED, KILL_AFTER = 10, 4
LEFTOVER = f'.iter_{KILL_AFTER + 2}.pth.atomic-tmp-k1ll3d'
KILL = dict(type='FailAtIterHook', when='after', action='SIGKILL')


def _config(path: Path, hooks=(), with_index=False) -> Path:
    hooks = list(hooks) + ([dict(type='RecordIndicesHook')]
                           if with_index else [])
    return write_toy_config(
        path, dataset=dict(type='FaultToyDataset', size=SIZE,
                           with_index=with_index),
        max_epochs=EPOCHS, ckpt_interval=INTERVAL, custom_hooks=hooks)


TIMED_MINUTES = 0.004  # 0.24 s; every iteration here takes 0.1 s or more


def _timed_config(path: Path) -> Path:
    # PaceHook's 0.1 s after each iteration: a timed save at least every
    # third iteration, however fast the machine.
    return write_toy_config(
        path,
        imports=['tests.helpers.fault_helpers', 'tests.helpers.slurm_toy'],
        dataset=dict(type='FaultToyDataset', size=SIZE), max_epochs=1,
        ckpt_interval=1000,
        custom_hooks=[dict(type='PaceHook', seconds=0.1)])


def weights(path: Path) -> dict:
    return torch.load(path, map_location='cpu',
                      weights_only=False)['state_dict']


@pytest.fixture(scope='module')
def forked(tmp_path_factory):
    """The runs in forked ranks, the independent ones side by side."""
    tmp = tmp_path_factory.mktemp('exact_resume')
    ref = _config(tmp / 'ref.py')
    ref_idx = _config(tmp / 'ref_idx.py', with_index=True)
    iter_killed = write_toy_config(
        tmp / 'iter_kill.py', max_iters=ITER_BASED,
        custom_hooks=[dict(KILL, at_iter=KILL_AFTER)])
    # loop: each run's subject is the plugin's loops and hooks.
    first = finish({
        'ref1': fork_train(ref, tmp / 'ref1'),
        'kill1': fork_train(
            _config(tmp / 'k1.py', [dict(KILL, at_iter=14)]),
            tmp / 'kill1'),
        'ref2': fork_dist_train(ref_idx, tmp / 'ref2'),
        'world2': fork_dist_train(_config(tmp / 'w2.py', [dict(
            KILL, at_iter=7, ranks=[1])], with_index=True), tmp / 'world2'),
        'timed1': fork_train(_timed_config(tmp / 'timed.py'),
                             tmp / 'timed1', '--checkpoint-minutes',
                             TIMED_MINUTES),
        'iter_ref': fork_train(write_toy_config(
            tmp / 'iter_ref.py', max_iters=ITER_BASED), tmp / 'iter_ref'),
        'iter_kill': fork_train(iter_killed, tmp / 'iter_kill'),
    })
    # What a writer killed during a save leaves behind, swept on resume.
    (tmp / 'iter_kill' / LEFTOVER).write_bytes(b'\x80\x02partial')
    second = finish({
        'resume1': fork_train(ref, tmp / 'kill1', '--resume'),
        # A checkpoint named, as users resume from another work dir.
        'world1': fork_train(ref_idx, tmp / 'world2', '--resume',
                             tmp / 'world2' / 'iter_6.pth'),
        'iter_resume': fork_train(iter_killed, tmp / 'iter_kill',
                                  '--resume'),
    })
    return tmp, dict(first, **second)


@pytest.fixture(scope='module')
def launched(forked):
    """The runs whose subject is torchrun under ``tools/dist_train.sh``
    (the 2-rank reference is ``forked``'s)."""
    tmp = forked[0]
    first = finish({
        # launcher: torchrun restarts the ranks (MAX_RESTARTS=1).
        'restart2': start_dist_train(_config(tmp / 'k2.py', [dict(
            KILL, at_iter=7, ranks=[1], first_attempt_only=True)]),
            tmp / 'restart2', 1),
        # launcher: SIGTERM to a rank, dist_run's exit 85.
        'term2': start_dist_train(_config(tmp / 't2.py', [dict(
            type='FailAtIterHook', at_iter=6, ranks=[1], action='SIGTERM',
            first_attempt_only=True)]), tmp / 'term2'),
        # launcher: restarts run out, dist_run's report of each attempt.
        'exhaust2': start_dist_train(_config(tmp / 'x2.py', [dict(
            type='FailAtIterHook', at_iter=2, ranks=[1])]), tmp / 'exhaust2',
            1),
    })
    second = finish({
        # loop: the resume of the preempted run's checkpoint.
        'term2_resume': fork_dist_train(_config(tmp / 'ref.py'),
                                        tmp / 'term2', '--resume'),
    })
    return tmp, dict(forked[1], **first, **second)


def _ok(runs, name):
    out, code = runs[1][name]
    assert code == 0, f'{name}: rc {code}\n{out[-6000:]}'
    return out


def test_one_process_resume_after_sigkill_is_exact(forked):
    tmp = forked[0]
    assert forked[1]['kill1'][1] == -signal.SIGKILL
    out = _ok(forked, 'resume1')
    assert (f'Auto resumed from the latest checkpoint '
            f'{tmp}/kill1/iter_12.pth') in out
    assert 'resume: data continues at epoch 2, sample 8 of 40' in out
    assert 'Advance dataloader' not in out
    expected = losses(tmp / 'ref1')
    assert sorted(expected) == list(range(1, ITERS[1] + 1))
    assert len(set(expected.values())) == ITERS[1]
    assert losses(tmp / 'kill1') == expected
    final = f'iter_{ITERS[1]}.pth'
    got, want = weights(tmp / 'kill1' / final), weights(tmp / 'ref1' / final)
    assert got.keys() == want.keys()
    assert all(torch.equal(got[k], want[k]) for k in want)


@pytest.mark.slow
@pytest.mark.launch
def test_torchrun_restart_resumes_by_itself_exactly(launched):
    tmp = launched[0]
    out = _ok(launched, 'restart2')
    line = next(x for x in out.splitlines() if 'restart: attempt' in x)
    assert ('restart: attempt 2 of 2 (torchrun restart 1 of 1): resumed '
            f'from {tmp}/restart2/iter_6.pth at iteration 6; iterations '
            'lost: 1; data continues at epoch 2, sample 8 of 40') in line
    _ok(launched, 'ref2')
    # The forked reference's ranks train as torchrun's do (one thread
    # each): the same losses, bit-identical weights.
    expected = losses(tmp / 'ref2')
    assert sorted(expected) == list(range(1, ITERS[2] + 1))
    assert losses(tmp / 'restart2') == expected
    final = f'iter_{ITERS[2]}.pth'
    got = weights(tmp / 'restart2' / final)
    want = weights(tmp / 'ref2' / final)
    assert all(torch.equal(got[k], want[k]) for k in want)


@pytest.mark.launch
def test_sigterm_saves_the_iteration_and_exits_85(launched):
    tmp = launched[0]
    out, code = launched[1]['term2']
    assert code == PREEMPTED_EXIT_CODE, out[-6000:]
    assert 'PreemptionHook: SIGTERM on rank 1; saved' in out
    assert 'dist_run: preempted' in out
    assert 'failure_report' not in out
    work = tmp / 'term2'
    # 0 iterations lost: the checkpoint is of the last iteration trained.
    assert f'saved {work}/iter_8.pth (iteration 8)' in out
    assert 'Iter(train) [ 8/15]' in out and 'Iter(train) [ 9/15]' not in out
    resumed = _ok(launched, 'term2_resume')
    assert f'Auto resumed from the latest checkpoint {work}/iter_8.pth' in \
        resumed
    assert losses(work) == losses(tmp / 'ref2')


def test_resume_on_fewer_ranks_trains_each_sample_of_the_epoch_once(forked):
    tmp = forked[0]
    # Rank 1 killed; rank 0 ended at its next collective, past no
    # iteration of rank 1's.
    assert forked[1]['world2'][1] != 0
    out = _ok(forked, 'world1')
    assert 'resumed epoch: 1, iter: 6' in out, out[-5000:]
    assert ('data continues at epoch 2, sample 8 of 40 (saved with '
            'world_size 2 x batch_size 4, now 1 x 4: no sample of the epoch '
            'is repeated or skipped, but the batches are grouped '
            'differently, so losses cannot match an uninterrupted run '
            'exactly)') in out
    work = tmp / 'world2'

    def indices(rank):
        return [json.loads(x) for x in
                (work / f'indices_rank{rank}.jsonl').read_text().splitlines()]

    # The 2-rank run trained iterations 1-7 and saved iteration 6, the
    # first of epoch 2 (index 1); the 1-process run appended the rest.
    killed = [indices(0)[:7], indices(1)]
    assert [len(r) for r in killed] == [7, 7]
    before = [i for run in killed for it, ep, idx in run
              if ep == 1 and it <= 6 for i in idx]
    after = [i for it, ep, idx in indices(0)[7:] if ep == 1 for i in idx]
    assert len(before) == 8 and len(after) == SIZE - 8
    assert sorted(before + after) == list(range(SIZE))


@pytest.mark.launch
def test_restarts_run_out_and_the_report_lists_each_attempt(launched):
    out, code = launched[1]['exhaust2']
    assert code == 1, out[-6000:]
    report = out[out.index('Why the run failed'):]
    assert 'Attempts (2, torchrun restarts included)' in report, report
    assert '  attempt 1: rank 1' in report and '  attempt 2: rank 1' in report
    saved = json.loads((launched[0] / 'exhaust2' / 'failure_report.json')
                       .read_text())
    assert [(a['attempt'], a['rank']) for a in saved['attempts']] == [
        (0, 1), (1, 1)]
    assert all('injected fault: rank 1 fails at iteration 2' in a['error']
               for a in saved['attempts'])


def test_checkpoints_every_n_minutes_keep_the_newest_two(forked):
    tmp = forked[0]
    out = _ok(forked, 'timed1')
    saved = [line for line in out.splitlines()
             if f'{TIMED_MINUTES:g} min after the last checkpoint' in line]
    assert len(saved) >= 3, out[-4000:]
    work = tmp / 'timed1'
    timed = [int(line.split('saved iter_')[1].split('.pth')[0])
             for line in saved]
    kept = sorted(int(p.stem.split('_')[1]) for p in work.glob('iter_*.pth'))
    # The newest two timed ones, and the last one CheckpointHook saves at
    # the end (save_last).
    assert kept == sorted(set(timed[-2:]) | {10}), (kept, timed)
    assert (work / 'last_checkpoint').read_text() == str(work / 'iter_10.pth')


def test_iteration_based_resume_after_sigkill_is_exact(forked):
    tmp, done = forked
    out, code = done['iter_kill']
    assert code == -signal.SIGKILL, out[-5000:]
    work = tmp / 'iter_kill'
    out = _ok(forked, 'iter_resume')
    assert f'resumed epoch: 0, iter: {KILL_AFTER}' in out, out[-5000:]
    # The skipped batches are not loaded (mmengine's loop would "Advance
    # dataloader 4 steps"): the sampler starts at stream position 16.
    assert 'Advance dataloader' not in out, out[-5000:]
    assert (f'resume: data continues at stream position {KILL_AFTER * 4}'
            in out), out[-5000:]
    assert f'removed {work / LEFTOVER}' in out, out[-5000:]
    assert not [p for p in work.iterdir() if is_temporary(p.name)]
    _ok(forked, 'iter_ref')
    expected, resumed = records(tmp / 'iter_ref'), records(work)
    assert sorted(expected) == list(range(1, ITER_BASED + 1))
    # The data is random per load and the LR steps at iteration 6: equal
    # losses and LRs mean the same batches, augmentation, weights, momentum
    # and LR.
    assert len({rec['loss'] for rec in expected.values()}) == ITER_BASED
    assert ({i: (r['loss'], r['lr']) for i, r in resumed.items()} ==
            {i: (r['loss'], r['lr']) for i, r in expected.items()})
