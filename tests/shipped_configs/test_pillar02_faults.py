"""The shipped full-size CenterPoint pillar02 config survives its own data
and a SIGKILL: its own epoch-based loop, CBGS, ``FastObjectSample``'s GT
database, multi-sweep loading and augmentation, 2 DataLoader workers,
``tools/train.py``, seed 0 (the config sets none), batch 1 over the first 6
train frames: the sampler's first four batches are frames 3, 5, 2, 4
(``RecordSamplesHook`` records what was trained).

A copy of the generated data is broken three ways: frame ``sample_idx`` 5
has NaN intensities in its key-frame file; a sweep that frame 2 reads and a
GT-database file that frame 4 pastes are truncated mid-point (both found by
loading those samples here, as the run will, and watching Python's ``open``
audit event). ``BadSampleHook`` runs with ``check_points=False``, so the
NaN frame reaches the model. Four runs, each ``tools/train.py`` (or
``tools/replay_step.py``) in a process forked from the test process
(``fork_train`` / ``fork_tool``: their subjects are the hooks and the loop,
not the tool's start):

* ``full``: 4 iterations, checkpoints after iterations 1 (where the resume
  and the replay start) and 4 (the weights checked);
* ``killed``: SIGKILL after iteration 1; ``resumed``: ``--resume`` from
  ``iter_1.pth``, inside the epoch, to iteration 4;
* ``replay``: ``tools/replay_step.py`` rebuilds iteration 2 from ``full``'s
  ``iter_1.pth``.

The steps of frame 5 are skipped (iteration 2, and 4, where it replaces
frame 4) and named (token, NaN points, the voxel encoder) and the weights
stay finite; the two broken samples are replaced and recorded with their
files and tokens; the resumed run skips the same
step, makes the same replacements and logs the same losses as ``full``.
"""
import json
import shutil
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import torch

from tests.helpers.broken_files import owners, train_infos, truncate
from tests.helpers.run_logs import losses
from tests.helpers.train_tool import finish, fork_tool, fork_train

REPO = Path(__file__).resolve().parents[2]
PILLAR02 = (REPO / 'configs' / 'centerpoint' /
            'centerpoint_pillar02_second_secfpn_8xb4-cyclic-20e_nus-3d.py')
FRAMES = 6
ITERS = 4
NAN_FRAME = 5

pytestmark = [pytest.mark.slow, pytest.mark.full_size,
              pytest.mark.timeout(1800)]


def _config(path: Path, hooks: str = '') -> Path:
    path.write_text(textwrap.dedent(f"""\
        _base_ = [{str(PILLAR02)!r}]
        custom_imports = dict(
            imports=['projects.mmdet3d_plugin',
                     'tests.helpers.fault_hooks',
                     'tests.helpers.nonfinite_toys'],
            allow_failed_imports=False)
        custom_hooks = [
            dict(type='RecordSamplesHook'),
            dict(type='BadSampleHook', check_points=False),
            dict(type='StopAfterHook', after_iter={ITERS},
                 exit_process=True){hooks}]
        train_dataloader = dict(batch_size=1, num_workers=2,
                                persistent_workers=False,
                                dataset=dict(dataset=dict(indices={FRAMES})))
        val_cfg = None
        val_dataloader = None
        val_evaluator = None
        default_hooks = dict(
            checkpoint=dict(_delete_=True, type='CheckpointHook',
                            interval={ITERS - 1}, save_begin=1,
                            by_epoch=False),
            logger=dict(type='LoggerHook', interval=1))
        log_processor = dict(by_epoch=False, window_size=1)
        randomness = dict(seed=0)
        """))
    return path


_AUDIT: list = []


def _files_read(root: Path, positions) -> list:
    """``[(sample_idx, [sweep and GT-database files])]`` the run reads for
    the samples at ``positions`` of its first epoch, loaded here as its
    DataLoader will (each sample from its own random state), seen through
    Python's ``open`` audit event."""
    from mmengine.registry import init_default_scope
    from mmengine.runner import set_random_seed

    from mmdet3d.registry import DATASETS
    from projects.mmdet3d_plugin import load_config
    from projects.mmdet3d_plugin.config.data_root import redirect_data_root
    from projects.mmdet3d_plugin.engine.resume.sample_key import SampleKey
    from projects.mmdet3d_plugin.engine.resume.sampler import (
        ResumableSampler)
    from projects.mmdet3d_plugin.engine.resume.seeded_items import (
        seed_samples)
    cfg = redirect_data_root(load_config(str(PILLAR02)), str(root))
    cfg.train_dataloader.dataset.dataset.indices = FRAMES
    init_default_scope('mmdet3d')
    # CBGSDataset draws its index map with numpy's global RNG when it is
    # built: seeded as the run's Runner seeds it.
    set_random_seed(0)
    dataset = DATASETS.build(cfg.train_dataloader.dataset)
    items = seed_samples(dataset)
    order = ResumableSampler(dataset, seed=0).order(0)
    opened = []
    sys.addaudithook(lambda event, args: opened.append(args[0]) if (
        event == 'open' and _AUDIT and isinstance(args[0], str)) else None)
    read = []
    for position in positions:
        _AUDIT.append(True)
        [sample] = items([SampleKey(order[position], 0, 0, position)])
        _AUDIT.clear()
        read.append((sample['data_samples'].metainfo['sample_idx'],
                     [p for p in opened if '/sweeps/' in p
                      or 'gt_database' in p]))
        opened.clear()
    return read


def _nan_intensities(root: Path, info: dict) -> None:
    path = root / 'samples' / 'LIDAR_TOP' / info['lidar_points'][
        'lidar_path']
    points = np.fromfile(path, dtype=np.float32).reshape(-1, 5)
    points[::50, 3] = np.nan
    points.tofile(path)


@pytest.fixture(scope='module')
def runs(nus_synthetic, tmp_path_factory):
    tmp = tmp_path_factory.mktemp('pillar02_faults')
    root = tmp / 'root'
    shutil.copytree(nus_synthetic, root)
    infos = train_infos(root)
    _nan_intensities(root, infos[NAN_FRAME])
    # Iterations 3 and 4 train frames 2 and 4 (positions 2 and 3).
    (frame, third), (frame2, fourth) = _files_read(root, [2, 3])
    assert (frame, frame2) == (2, 4)
    sweep = Path(next(p for p in third if '/sweeps/' in p))
    gt_file = Path(next(p for p in fourth if 'gt_database' in p))
    truncate(sweep)
    truncate(gt_file)
    flags = ['--data-root', str(root)]
    kill = (", dict(type='FailAtIterHook', at_iter=1, when='after', "
            "action='SIGKILL')")
    full = _config(tmp / 'full.py')
    done = finish({
        # hook: the non-finite guard and the bad-sample hook
        'full': fork_train(full, tmp / 'full', *flags),
        # loop: a SIGKILL inside the epoch
        'killed': fork_train(_config(tmp / 'killed.py', kill),
                             tmp / 'resumed', *flags)}, timeout=1500)
    done.update(finish({
        # loop: the exact resume
        'resumed': fork_train(full, tmp / 'resumed', *flags, '--resume'),
        # report: the replay of the skipped step
        'replay': fork_tool('replay_step', tmp / 'full', '--iteration', 2)},
        timeout=1500))
    return dict(tmp=tmp, done=done, infos=infos, sweep=sweep,
                gt_file=gt_file)


def _ok(runs, name: str) -> str:
    out, code = runs['done'][name]
    assert code == 0, f'{name}: rc {code}\n{out[-6000:]}'
    return out


def _skipped(work: Path) -> list:
    return [(r['iteration'], r['ranks'])
            for r in json.loads((work / 'nonfinite.json').read_text())]


def _replaced(work: Path) -> dict:
    return {e['file']: e for e in json.loads(
        (work / 'bad_samples.json').read_text())}


def test_the_nan_frame_is_skipped_and_named(runs):
    _ok(runs, 'full')
    work = runs['tmp'] / 'full'
    batches = [json.loads(line) for line in
               (work / 'samples_rank0.jsonl').read_text().splitlines()]
    assert [frames for _, frames in batches][:2] == [[3], [NAN_FRAME]], (
        f'frames 3, {NAN_FRAME} are not the first batches: {batches}; '
        'pick other frames of samples_rank0.jsonl')
    holding = [i for i, frames in batches if NAN_FRAME in frames]
    skipped = _skipped(work)
    assert [i for i, _ in skipped] == holding
    [rank] = skipped[0][1]
    assert rank['samples'][0]['token'] == runs['infos'][NAN_FRAME]['token']
    assert rank['samples'][0]['sample_idx'] == NAN_FRAME
    assert 'points' in rank['nonfinite_inputs'], rank
    assert rank['first_module'].startswith('pts_voxel_encoder'), rank
    assert any(v in ('nan', 'inf') for v in rank['nonfinite_terms'].values())
    state = torch.load(work / f'iter_{ITERS}.pth', map_location='cpu',
                       weights_only=False)['state_dict']
    assert all(bool(torch.isfinite(v.float()).all()) for v in state.values())


def test_the_broken_files_are_replaced_and_named(runs):
    _ok(runs, 'full')
    work, infos = runs['tmp'] / 'full', runs['infos']
    assert infos[2]['token'] in owners(infos, runs['sweep'])
    entries = _replaced(work)
    assert set(entries) == {str(runs['sweep']), str(runs['gt_file'])}
    assert entries[str(runs['sweep'])]['token'] in owners(
        infos, runs['sweep']), entries
    assert entries[str(runs['gt_file'])]['token'] == infos[4]['token']
    assert 'cannot reshape' in entries[str(runs['gt_file'])]['error']
    assert sorted(losses(work)) == list(range(1, ITERS + 1))


def test_the_killed_run_resumes_inside_its_epoch_exactly(runs):
    assert runs['done']['killed'][1] != 0
    out = _ok(runs, 'resumed')
    assert 'Auto resumed from the latest checkpoint' in out
    assert 'resume: data continues at epoch 1, sample 1 of ' in out
    full, resumed = runs['tmp'] / 'full', runs['tmp'] / 'resumed'
    # The same step skipped, for the same samples.
    assert ([(i, r[0]['samples']) for i, r in _skipped(resumed)] ==
            [(i, r[0]['samples']) for i, r in _skipped(full)])
    assert ({f: e['replaced_by'] for f, e in _replaced(resumed).items()} ==
            {f: e['replaced_by'] for f, e in _replaced(full).items()})
    # Every loss logged, the skipped step's NaN included (json: NaN == NaN).
    assert sorted(losses(resumed)) == list(range(1, ITERS + 1))
    assert (json.dumps(losses(resumed), sort_keys=True) ==
            json.dumps(losses(full), sort_keys=True))


def test_replay_step_rebuilds_the_skipped_step(runs):
    out = _ok(runs, 'replay')
    assert 'replay of iteration 2, rank 0 of 1, from iter_1.pth' in out
    assert f"token {runs['infos'][NAN_FRAME]['token']}" in out
    assert ('  first non-finite module: pts_voxel_encoder.pfn_layers.0.'
            'linear') in out
    assert 'the run skipped it: the same' in out, out[-3000:]
