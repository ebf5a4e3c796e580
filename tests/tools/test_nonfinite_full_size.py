"""The guard on the shipped full-size pillar02 config (CBGS, FastObjectSample,
multi-sweep loading), generated data whose frame ``sample_idx`` 5 has a
NaN intensity in its key-frame LiDAR file, ``tools/train.py``, 4
iterations of batch 1 over the first 6 train frames (seed 0: the batches
hold frames 3, 5, 2, 4, recorded by ``RecordSamplesHook``): the step of
frame 5 is skipped and named with its nuScenes token, the NaN points and
the voxel encoder; the run completes with finite weights. Killed after
iteration 1 and resumed with ``--resume``, it skips the same step;
``tools/replay_step.py`` rebuilds it from ``iter_1.pth``."""
import json
import pickle
import shutil
import textwrap
from pathlib import Path

import numpy as np
import pytest
import torch

from tests.helpers.train_tool import finish, replay_step, start_train

REPO = Path(__file__).resolve().parents[2]
PILLAR02 = (REPO / 'configs' / 'centerpoint' /
            'centerpoint_pillar02_second_secfpn_8xb4-cyclic-20e_nus-3d.py')
POISONED = 5
ITERS = 4


def _config(path: Path, hooks: str = '') -> Path:
    path.write_text(textwrap.dedent(f"""\
        _base_ = [{str(PILLAR02)!r}]
        custom_imports = dict(
            imports=['projects.mmdet3d_plugin',
                     'tests.helpers.nonfinite_toys'],
            allow_failed_imports=False)
        # BadSampleHook would replace frame 5 (its points are not finite):
        # here it reaches the model.
        custom_hooks = [dict(type='RecordSamplesHook'),
                        dict(type='BadSampleHook', check_points=False){hooks}]
        train_dataloader = dict(batch_size=1, num_workers=1,
                                dataset=dict(dataset=dict(indices=6)))
        train_cfg = dict(_delete_=True, type='IterBasedTrainLoop',
                         max_iters={ITERS})
        val_cfg = None
        val_dataloader = None
        val_evaluator = None
        default_hooks = dict(
            logger=dict(interval=1),
            checkpoint=dict(_delete_=True, type='CheckpointHook', interval=1,
                            by_epoch=False))
        log_processor = dict(by_epoch=False)
        randomness = dict(seed=0)
        """))
    return path


def _poison(root: Path) -> str:
    """NaN intensities in frame POISONED's key-frame file; its token."""
    infos = pickle.loads((root / 'nuscenes_infos_train.pkl').read_bytes())
    info = next(i for i in infos['data_list']
                if i['sample_idx'] == POISONED)
    path = root / 'samples' / 'LIDAR_TOP' / info['lidar_points'][
        'lidar_path']
    points = np.fromfile(path, dtype=np.float32).reshape(-1, 5)
    points[::50, 3] = np.nan
    points.tofile(path)
    return info['token']


@pytest.fixture(scope='module')
def runs(nus_synthetic, tmp_path_factory):
    tmp = tmp_path_factory.mktemp('nonfinite_full_size')
    root = tmp / 'root'
    shutil.copytree(nus_synthetic, root)
    token = _poison(root)
    flags = ['--data-root', str(root)]
    kill = (", dict(type='FailAtIterHook', at_iter=1, when='after', "
            "action='SIGKILL')")
    procs = {
        'full': start_train(_config(tmp / 'full.py'), tmp / 'full', *flags),
        'killed': start_train(_config(tmp / 'killed.py', kill),
                              tmp / 'resumed', *flags),
    }
    done = finish(procs, timeout=1200)
    done.update(finish({
        'resumed': start_train(_config(tmp / 'full.py'), tmp / 'resumed',
                               *flags, '--resume'),
        'replay': replay_step(tmp / 'full', 2)}, timeout=1200))
    return tmp, token, done


def _skipped(work: Path) -> list:
    return [(r['iteration'], r['ranks'])
            for r in json.loads((work / 'nonfinite.json').read_text())]


@pytest.mark.slow
def test_the_nan_frame_is_skipped_and_named(runs):
    tmp, token, done = runs
    out, code = done['full']
    assert code == 0, out[-6000:]
    work = tmp / 'full'
    batches = [json.loads(line) for line in
               (work / 'samples_rank0.jsonl').read_text().splitlines()]
    holding = [i for i, frames in batches if POISONED in frames]
    assert holding and holding[0] > 1, (
        f'frame {POISONED} is not in a batch after the first: {batches}; '
        'pick another frame of samples_rank0.jsonl')
    skipped = _skipped(work)
    assert [i for i, _ in skipped] == holding
    [rank] = skipped[0][1]
    assert rank['samples'][0]['token'] == token
    assert rank['samples'][0]['sample_idx'] == POISONED
    assert 'points' in rank['nonfinite_inputs'], rank
    assert rank['first_module'].startswith('pts_voxel_encoder'), rank
    assert any(v in ('nan', 'inf') for v in rank['nonfinite_terms'].values())
    state = torch.load(work / f'iter_{ITERS}.pth', map_location='cpu',
                       weights_only=False)['state_dict']
    assert all(bool(torch.isfinite(v.float()).all()) for v in state.values())


@pytest.mark.slow
def test_a_resumed_run_skips_the_same_step(runs):
    tmp, _, done = runs
    assert done['killed'][1] != 0
    out, code = done['resumed']
    assert code == 0, out[-6000:]
    assert 'resumed from' in out or 'Load checkpoint from' in out
    full, resumed = _skipped(tmp / 'full'), _skipped(tmp / 'resumed')
    assert [i for i, _ in resumed] == [i for i, _ in full]
    assert ([r[0]['samples'] for _, r in resumed] ==
            [r[0]['samples'] for _, r in full])


@pytest.mark.slow
def test_replay_step_rebuilds_the_skipped_step(runs):
    _, token, done = runs
    out, code = done['replay']
    assert code == 0, out[-6000:]
    assert 'replay of iteration 2, rank 0 of 1, from iter_1.pth' in out
    assert f'token {token}' in out
    assert ('  first non-finite module: pts_voxel_encoder.pfn_layers.0.'
            'linear') in out
    assert 'the run skipped it: the same' in out, out[-3000:]
