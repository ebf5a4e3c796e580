"""The shipped full-size CenterPoint pillar02 config resumes exactly: its
own epoch-based loop, CBGS, ObjectSample's GT database, multi-sweep
loading and augmentation, 2 DataLoader workers, on the generated data.

The config sets no seed; both runs here get seed 0, to be compared.
Killed by SIGKILL after iteration 3 with a checkpoint every 2 iterations,
``tools/train.py --resume`` continues from iteration 2: the losses of
iterations 3-5 equal an uninterrupted run's (batch 1 to fit 2 cores).
"""
import signal
import textwrap
from pathlib import Path

from tests.helpers.run_logs import losses
from tests.helpers.train_tool import start_train

REPO = Path(__file__).resolve().parents[2]
PILLAR02 = (REPO / 'configs' / 'centerpoint' /
            'centerpoint_pillar02_second_secfpn_8xb4-cyclic-20e_nus-3d.py')


def _config(path: Path, hook: dict) -> Path:
    path.write_text(textwrap.dedent(f"""\
        _base_ = [{str(PILLAR02)!r}]
        custom_imports = dict(
            imports=['projects.mmdet3d_plugin',
                     'tests.helpers.fault_helpers'],
            allow_failed_imports=False)
        train_dataloader = dict(batch_size=1, num_workers=2,
                                persistent_workers=False)
        val_cfg = None
        val_dataloader = None
        val_evaluator = None
        default_hooks = dict(
            checkpoint=dict(_delete_=True, type='CheckpointHook',
                            interval=2, by_epoch=False),
            logger=dict(type='LoggerHook', interval=1))
        log_processor = dict(by_epoch=False, window_size=1)
        randomness = dict(seed=0)
        custom_hooks = [{hook!r}]
        """))
    return path


def test_pillar02_resumes_inside_its_epoch_exactly(nus_synthetic, tmp_path):
    stop = _config(tmp_path / 'stop.py',
                   dict(type='StopAfterHook', after_iter=5,
                        exit_process=True))
    kill = _config(tmp_path / 'kill.py', dict(
        type='FailAtIterHook', at_iter=3, when='after', action='SIGKILL'))
    full, work = tmp_path / 'full', tmp_path / 'work'
    uninterrupted = start_train(stop, full, '--data-root', nus_synthetic)
    killed = start_train(kill, work, '--data-root', nus_synthetic)
    out = killed.communicate(timeout=900)[0]
    assert killed.returncode == -signal.SIGKILL, out[-5000:]
    # Resumed while the uninterrupted run trains its last iterations.
    resumed = start_train(stop, work, '--data-root', nus_synthetic, '--resume')
    full_out = uninterrupted.communicate(timeout=900)[0]
    assert uninterrupted.returncode == 0, full_out[-5000:]
    out = resumed.communicate(timeout=900)[0]
    assert resumed.returncode == 0, out[-5000:]
    assert 'Auto resumed from the latest checkpoint' in out
    assert 'resume: data continues at epoch 1, sample 2 of ' in out

    expected, got = losses(full), losses(work)
    assert sorted(expected) == [1, 2, 3, 4, 5]
    assert sorted(got) == [1, 2, 3, 4, 5]
    assert {i: got[i] for i in (3, 4, 5)} == {
        i: expected[i] for i in (3, 4, 5)}
