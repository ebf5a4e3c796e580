"""Faults during training end the run promptly, with the cause shown, and
leave the last checkpoint intact.

* one rank raising in a 2-rank gloo run of ``tools/train.py`` (ranks
  forked from the test process, as ``tools/dist_train.sh`` runs them: the
  subject is the other rank seeing its peer go, not torchrun, whose
  handling of a raising rank ``tests/failures/test_report.py`` launches);
* SIGTERM arriving while a checkpoint is being written (``tools/train.py``
  in one forked process: ``PreemptionHook`` installs its handler there);
* a DataLoader worker killed by SIGKILL, under fork and under spawn (a
  Runner in the test process).
"""
import gc
import os
import re
import signal
import subprocess
import time
import uuid
from pathlib import Path

import pytest
import torch
import torch.multiprocessing as mp
from mmengine.runner import Runner

from projects.mmdet3d_plugin.constants import PREEMPTED_EXIT_CODE
from projects.mmdet3d_plugin.fileio.atomic import is_temporary
from projects.mmdet3d_plugin.cli.run_tool import worker_death_message
from tests.helpers.fault_helpers import FaultToyModel, SelfKillingDataset
from tests.helpers.toy_config import toy_config, write_toy_config
from tests.helpers.train_tool import ForkedRanks, fork_dist_train, fork_train

#: Upper bound for a run that must end by itself; reaching it means a hang.
HANG = 300


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def _rank_outputs(ranks: ForkedRanks, what: str) -> list:
    """Each rank's output, once every rank has ended; fail the test (the
    ranks killed) past :data:`HANG` seconds."""
    try:
        ranks.wait(HANG)
    except subprocess.TimeoutExpired:
        ranks.kill()
        pytest.fail(f'{what}:\n{ranks.communicate()[0][-5000:]}')
    outputs = [Path(log).read_text(errors='replace') for log in ranks.logs]
    ranks.communicate()
    return outputs


def test_failing_rank_ends_every_rank(tmp_path):
    config = write_toy_config(
        tmp_path / 'ddp_fault.py', max_iters=6, num_workers=1,
        custom_hooks=[dict(type='FailAtIterHook', at_iter=2, ranks=[1])])
    # hook: rank 1 raises, rank 0 must not wait for a collective timeout
    ranks = fork_dist_train(config, tmp_path / 'work')
    out0, out1 = _rank_outputs(ranks, 'the run hung after rank 1 failed')
    assert ranks.returncodes[0] != 0 and ranks.returncodes[1] != 0, \
        out0[-3000:] + out1[-3000:]
    # The cause, from the failing rank, is in its output ...
    assert 'RuntimeError: injected fault: rank 1 fails at iteration 2' \
        in out1, out1[-5000:]
    # ... rank 0 did not wait for a collective timeout: gloo saw the peer
    # go (closed or reset, as the peer's socket ended before or during
    # gloo's read) ...
    assert 'RuntimeError:' in out0 and re.search(
        r'Connection (closed|reset) by peer', out0), out0[-5000:]
    # ... and no process of the run (ranks, DataLoader workers) is left.
    deadline = time.monotonic() + 30
    while any(map(_group_alive, ranks.pids)) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not any(map(_group_alive, ranks.pids)), 'processes outlived a rank'
    # Rank 0 saved iter_2 before the fault; it is complete.
    ckpt = torch.load(tmp_path / 'work' / 'iter_2.pth', weights_only=False)
    assert ckpt['meta']['iter'] == 2


def _checkpoints(work: Path):
    return sorted(work.glob('iter_*.pth'),
                  key=lambda p: int(p.stem.split('_')[1]))


def test_sigterm_while_saving_keeps_last_checkpoint(tmp_path):
    # 12M floats: every checkpoint is ~48 MB, so writes take a while and
    # the signal is sent while one is in progress.
    work = tmp_path / 'work'
    cfg = toy_config(
        model=dict(type='FaultToyModel', ballast=12_000_000), max_iters=40,
        ckpt_interval=1, num_workers=0)
    cfg['default_hooks']['checkpoint']['max_keep_ckpts'] = 2
    config = write_toy_config(tmp_path / 'sigterm.py', cfg)
    # hook: PreemptionHook's handler in the process of its own
    proc = fork_train(config, work)
    caught_writing = False
    deadline = time.monotonic() + HANG
    while proc.poll() is None and time.monotonic() < deadline:
        names = os.listdir(work) if work.exists() else []
        writing = any(is_temporary(n) for n in names)
        # Wait for a write in progress (at most until iter_8 is saved).
        if 'last_checkpoint' in names and (writing or 'iter_8.pth' in names):
            caught_writing = writing
            proc.send_signal(signal.SIGTERM)
            break
        time.sleep(0.001)
    try:
        err = proc.communicate(timeout=HANG)[0]
    except subprocess.TimeoutExpired:
        pytest.fail('training did not stop after SIGTERM')
    # PreemptionHook (added by tools/train.py) turns SIGTERM into: finish
    # the iteration, save it, exit 85.
    assert proc.returncode == PREEMPTED_EXIT_CODE, err[-3000:]

    # The pointer names a complete checkpoint; every checkpoint is complete.
    pointer = (work / 'last_checkpoint').read_text()
    assert Path(pointer).is_file(), pointer
    for path in _checkpoints(work):
        ckpt = torch.load(path, weights_only=False)
        assert ckpt['meta']['iter'] == int(path.stem.split('_')[1])
        assert ckpt['state_dict']['ballast'].numel() == 12_000_000
    # SIGTERM waited for the write in progress: no partial file is left.
    assert not [n for n in os.listdir(work) if is_temporary(n)]
    print(f'SIGTERM sent during a checkpoint write: {caught_writing}')


@pytest.fixture
def restore_start_method():
    method = mp.get_start_method(allow_none=True)
    yield
    mp.set_start_method(method, force=True)


@pytest.mark.parametrize('start_method', [
    'fork', pytest.param('spawn', marks=pytest.mark.launch)])  # fresh
def test_killed_worker_fails_the_run(start_method, tmp_path,
                                     restore_start_method):
    runner = Runner(
        model=FaultToyModel(),
        work_dir=str(tmp_path),
        experiment_name=f'killed_worker_{uuid.uuid4().hex[:8]}',
        train_dataloader=dict(
            dataset=SelfKillingDataset(kill_index=5),
            sampler=dict(type='DefaultSampler', shuffle=False),
            batch_size=2,
            num_workers=1,
            multiprocessing_context=start_method),
        optim_wrapper=dict(optimizer=dict(type='SGD', lr=0.01)),
        train_cfg=dict(by_epoch=False, max_iters=8),
        default_hooks=dict(checkpoint=None),
        env_cfg=dict(mp_cfg=dict(mp_start_method=start_method)),
        default_scope='mmdet3d')
    with pytest.raises(RuntimeError,
                       match=r'DataLoader worker \(pid(\(s\))? \d+\)') as info:
        runner.train()
    # The batch holding sample 5 (iteration 3) was never trained; the error
    # may arrive an iteration earlier (SIGCHLD while prefetching).
    assert runner.iter <= 2
    message = worker_death_message(info.value)
    # Shut the worker down now: torch's SIGCHLD handler watches its pid
    # until the iterator is collected, and would fire in later tests.
    del info, runner
    gc.collect()
    assert message is not None and re.match(
        r'DataLoader worker \(pid \d+\) is killed by signal: Killed\. '
        r'SIGKILL is most often the out-of-memory killer', message), message


def _waitable(pid):
    while os.waitid(os.P_PID, pid,
                    os.WEXITED | os.WNOHANG | os.WNOWAIT) is None:
        time.sleep(0.01)


def test_lost_batch_names_the_killed_worker():
    """A worker killed while its batch was in transfer: the main process
    sees ConnectionResetError; the dead child is found and named, also
    when another child that ended normally waits to be reaped before it
    (what ``waitid(P_ALL)`` would report)."""
    ended = os.fork()
    if ended == 0:
        os._exit(0)
    _waitable(ended)
    pid = os.fork()
    if pid == 0:
        os.kill(os.getpid(), signal.SIGKILL)
    try:
        _waitable(pid)
        try:
            try:
                raise ConnectionResetError(104, 'Connection reset by peer')
            except ConnectionResetError as e:
                raise RuntimeError('while receiving a batch') from e
        except RuntimeError as e:
            message = worker_death_message(e)
    finally:
        os.waitpid(pid, 0)
        os.waitpid(ended, 0)
    assert message is not None and message.startswith(
        f'DataLoader worker (pid {pid}) is killed by signal: SIGKILL (the '
        'main process lost the connection to it while receiving a batch). '
        'SIGKILL is most often the out-of-memory killer'), message
    assert worker_death_message(ValueError('unrelated')) is None
