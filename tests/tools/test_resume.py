"""``tools/train.py --resume`` after SIGKILL continues the loss trajectory
of an uninterrupted run exactly.

The toy run (``fault_helpers.write_config``) is iteration-based with a
shuffled sampler, two fork DataLoader workers adding noise from numpy's
global RNG, SGD with momentum and a step LR schedule, seed 0 in
deterministic mode. It is killed by SIGKILL right after ``iter_4.pth`` is
saved; an epoch is 6 iterations, so the resumed part crosses an epoch
boundary.
"""
import json
import signal
import subprocess
from pathlib import Path

from projects.mmdet3d_plugin.fileio.atomic import is_temporary

REPO = Path(__file__).resolve().parents[2]
HELPERS = REPO / 'tests' / 'helpers'
from tests.helpers.fault_helpers import write_config  # noqa: E402
from tests.helpers.train_tool import start_train  # noqa: E402

MAX_ITERS = 10
KILL_AFTER = 4


def _finish(proc: subprocess.Popen) -> str:
    out, _ = proc.communicate(timeout=600)
    return out


def _scalars(work: Path) -> dict:
    """``{iter: (loss, lr)}`` from every run folder of a work dir."""
    records = {}
    for run in sorted(p for p in work.iterdir() if p.is_dir()):
        path = run / 'vis_data' / 'scalars.json'
        for line in path.read_text().splitlines():
            rec = json.loads(line)
            if 'loss' in rec:
                assert rec['iter'] not in records, f'iter {rec["iter"]} twice'
                records[rec['iter']] = (rec['loss'], rec['lr'])
    return records


def test_resume_after_sigkill_matches_uninterrupted_run(tmp_path):
    reference = write_config(tmp_path / 'reference.py', max_iters=MAX_ITERS)
    killed = write_config(
        tmp_path / 'killed.py', max_iters=MAX_ITERS,
        custom_hooks=[dict(type='FailAtIterHook', at_iter=KILL_AFTER,
                           when='after', action='SIGKILL')])
    full, work = tmp_path / 'full', tmp_path / 'work'

    # The two first runs are independent: run them side by side.
    ref_proc = start_train(reference, full)
    kill_proc = start_train(killed, work)
    ref_out, kill_out = _finish(ref_proc), _finish(kill_proc)
    assert ref_proc.returncode == 0, ref_out[-5000:]
    assert kill_proc.returncode == -signal.SIGKILL, kill_out[-5000:]
    assert (work / 'last_checkpoint').read_text() == str(
        work / f'iter_{KILL_AFTER}.pth')
    assert not (work / f'iter_{KILL_AFTER + 2}.pth').exists()

    # What a writer killed during a save leaves behind, swept on resume.
    leftover = work / f'.iter_{KILL_AFTER + 2}.pth.atomic-tmp-k1ll3d'
    leftover.write_bytes(b'\x80\x02partial')

    proc = start_train(killed, work, '--resume')
    out = _finish(proc)
    assert proc.returncode == 0, out[-5000:]
    assert f'resumed epoch: 0, iter: {KILL_AFTER}' in out, out[-5000:]
    # The skipped batches are not loaded (mmengine's loop would "Advance
    # dataloader 4 steps"): the sampler starts at stream position 16.
    assert 'Advance dataloader' not in out, out[-5000:]
    assert f'resume: data continues at stream position {KILL_AFTER * 4}' \
        in out, out[-5000:]
    assert f'removed {leftover}' in out, out[-5000:]
    assert not [p for p in work.iterdir() if is_temporary(p.name)]

    expected, resumed = _scalars(full), _scalars(work)
    assert sorted(expected) == list(range(1, MAX_ITERS + 1))
    assert sorted(resumed) == sorted(expected)
    # The data is random per load and the LR steps at iteration 6: equal
    # losses mean the same batches, augmentation, weights, momentum and LR.
    assert len({loss for loss, _ in expected.values()}) == MAX_ITERS
    assert resumed == expected
