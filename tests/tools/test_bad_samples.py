"""Broken files through the tools, on copies of the generated data:

* the small CenterPoint config under ``tools/dist_train.sh`` (2 gloo
  ranks, 2 workers each), 20 frames, every sweep loaded, one key-frame file
  truncated mid-point and one sweep file deleted: two passes over the data,
  rc 0, both files in ``bad_samples.json`` with their tokens;
* half the key-frame files deleted: the run stops before its first
  iteration with one line naming the missing files and the fix;
* the shipped full-size pillar02 config (CBGS, FastObjectSample,
  ``tools/train.py``, the 4 batches of frames 3, 5, 2, 4 of the nonfinite
  test) with a sweep of frame 2 and a GT-database file that frame 4 pastes
  truncated (found by loading those samples here, as the run will): the
  run trains, both are recorded, and a run killed after iteration 1 and
  resumed makes the same replacements and logs the same losses."""
import json
import pickle
import shutil
import sys
import textwrap
from pathlib import Path

import pytest

from tests.helpers.run_logs import losses
from tests.helpers.train_tool import finish, start_dist_train, start_train

REPO = Path(__file__).resolve().parents[2]
SMALL = REPO / 'configs' / 'centerpoint' / 'centerpoint_pillar_synthetic.py'
PILLAR02 = (REPO / 'configs' / 'centerpoint' /
            'centerpoint_pillar02_second_secfpn_8xb4-cyclic-20e_nus-3d.py')


def _infos(root: Path) -> dict:
    infos = pickle.loads((root / 'nuscenes_infos_train.pkl').read_bytes())
    return {i['sample_idx']: i for i in infos['data_list']}


def _owners(infos: dict, path: Path) -> set:
    """The tokens of the frames that read the point file ``path``: as
    their key frame or among their sweeps (a key frame is a sweep of the
    frames after it)."""
    return {info['token'] for info in infos.values() if path.name in [
        Path(s['lidar_points']['lidar_path']).name
        for s in [info] + info['lidar_sweeps']]}


def _key_frame(root: Path, info: dict) -> Path:
    return root / 'samples' / 'LIDAR_TOP' / info['lidar_points']['lidar_path']


def _truncate(path: Path) -> None:
    """Cut a point file in the middle of a point."""
    path.write_bytes(path.read_bytes()[:path.stat().st_size // 40 * 20 + 8])


def _small_config(path: Path, iters: int) -> Path:
    path.write_text(textwrap.dedent(f"""\
        _base_ = [{str(SMALL)!r}]
        train_dataloader = dict(num_workers=2,
                                dataset=dict(indices=20))
        train_cfg = dict(max_iters={iters}, val_interval={iters})
        default_hooks = dict(logger=dict(interval=1),
                             checkpoint=dict(interval={iters}))
        val_cfg = None
        val_dataloader = None
        val_evaluator = None
        """))
    return path


@pytest.mark.slow
def test_two_ranks_train_through_a_truncated_key_frame_and_a_lost_sweep(
        nus_synthetic, tmp_path):
    root = tmp_path / 'root'
    shutil.copytree(nus_synthetic, root)
    info = _infos(root)
    truncated = _key_frame(root, info[3])
    _truncate(truncated)
    sweep = root / 'sweeps' / 'LIDAR_TOP' / Path(
        info[11]['lidar_sweeps'][0]['lidar_points']['lidar_path']).name
    sweep.unlink()
    # 20 frames, 2 ranks of 2: 5 iterations a pass, two passes; every
    # sweep of a frame loaded (10 of 10), so the deleted one is met.
    config = _small_config(tmp_path / 'small.py', iters=10)
    proc = start_dist_train(
        config, tmp_path / 'work', 0, '--data-root', root, '--cfg-options',
        'train_dataloader.dataset.pipeline.1.sweeps_num=10')
    out = proc.communicate(timeout=900)[0]
    assert proc.returncode == 0, out[-6000:]
    entries = json.loads((tmp_path / 'work' / 'bad_samples.json').read_text())
    named = {e['file']: e for e in entries}
    # A file read by several frames is named with the first one met.
    assert named[str(truncated)]['token'] in _owners(info, truncated)
    assert 'cannot reshape' in named[str(truncated)]['error']
    assert named[str(sweep)]['token'] in _owners(info, sweep)
    assert named[str(sweep)]['error'].startswith('FileNotFoundError')
    # Each trained twice (the workers may load some once more ahead).
    assert named[str(truncated)]['count'] >= 2
    assert out.count('bad sample replaced: ') == len(entries)
    assert 'Iter(train) [10/10]' in out


@pytest.mark.slow
def test_half_the_key_frames_missing_stops_before_training(
        nus_synthetic, tmp_path):
    root = tmp_path / 'root'
    shutil.copytree(nus_synthetic, root)
    info = _infos(root)
    for idx in sorted(info)[::2]:
        _key_frame(root, info[idx]).unlink()
    proc = start_train(_small_config(tmp_path / 'small.py', iters=40),
                       tmp_path / 'work', '--data-root', root)
    out = proc.communicate(timeout=600)[0]
    assert proc.returncode != 0
    # The config's 20 frames, every other one deleted.
    [line] = [ln for ln in out.splitlines() if 'files looked at' in ln]
    assert line.startswith('error: BadSampleHook: 10 of 20 key-frame files '
                           'looked at are missing'), out[-3000:]
    assert 'tools/check_data.py' in line
    assert 'Traceback' not in out and 'Iter(train)' not in out


def _files_read(root: Path, positions) -> list:
    """The sweep and GT-database files the pillar02 run of
    :func:`_pillar02_config` reads for the samples at ``positions`` of its
    first epoch (seed 0), loaded here as its DataLoader will (each sample
    from its own random state), seen through Python's ``open`` audit
    event."""
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
    cfg.train_dataloader.dataset.dataset.indices = 6
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


_AUDIT: list = []


def _pillar02_config(path: Path, hooks: str = '') -> Path:
    path.write_text(textwrap.dedent(f"""\
        _base_ = [{str(PILLAR02)!r}]
        custom_imports = dict(
            imports=['projects.mmdet3d_plugin',
                     'tests.helpers.nonfinite_toys'],
            allow_failed_imports=False)
        custom_hooks = [dict(type='RecordSamplesHook'){hooks}]
        train_dataloader = dict(batch_size=1, num_workers=1,
                                dataset=dict(dataset=dict(indices=6)))
        train_cfg = dict(_delete_=True, type='IterBasedTrainLoop',
                         max_iters=4)
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


@pytest.fixture(scope='module')
def pillar02_runs(nus_synthetic, tmp_path_factory):
    tmp = tmp_path_factory.mktemp('bad_samples_pillar02')
    root = tmp / 'root'
    shutil.copytree(nus_synthetic, root)
    # Iterations 3 and 4 train frames 2 and 4 (positions 2 and 3).
    (frame, third), (frame2, fourth) = _files_read(root, [2, 3])
    assert (frame, frame2) == (2, 4)
    sweep = Path(next(p for p in third if '/sweeps/' in p))
    gt_file = Path(next(p for p in fourth if 'gt_database' in p))
    _truncate(sweep)
    _truncate(gt_file)
    flags = ['--data-root', str(root)]
    kill = (", dict(type='FailAtIterHook', at_iter=1, when='after', "
            "action='SIGKILL')")
    done = finish({
        'full': start_train(_pillar02_config(tmp / 'full.py'), tmp / 'full',
                            *flags),
        'killed': start_train(_pillar02_config(tmp / 'killed.py', kill),
                              tmp / 'resumed', *flags)}, timeout=1200)
    done.update(finish({'resumed': start_train(
        _pillar02_config(tmp / 'full.py'), tmp / 'resumed', *flags,
        '--resume')}, timeout=1200))
    infos = _infos(root)
    tokens = {i: info['token'] for i, info in infos.items()}
    return tmp, sweep, gt_file, tokens, _owners(infos, sweep), done


def _entries(work: Path) -> dict:
    return {e['file']: e for e in json.loads(
        (work / 'bad_samples.json').read_text())}


@pytest.mark.slow
@pytest.mark.timeout(1800)  # three full-size runs, on a loaded machine
def test_full_size_pillar02_trains_through_a_broken_sweep_and_gt_file(
        pillar02_runs):
    tmp, sweep, gt_file, tokens, owners, done = pillar02_runs
    assert tokens[2] in owners
    out, code = done['full']
    assert code == 0, out[-6000:]
    batches = [json.loads(line) for line in
               (tmp / 'full' / 'samples_rank0.jsonl').read_text().splitlines()]
    assert [frames for _, frames in batches][:2] == [[3], [5]], batches
    entries = _entries(tmp / 'full')
    assert entries[str(sweep)]['token'] in owners, entries
    assert entries[str(gt_file)]['token'] == tokens[4], entries
    assert 'cannot reshape' in entries[str(gt_file)]['error']
    assert 'Iter(train) [4/4]' in out


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_a_resumed_run_makes_the_same_replacements(pillar02_runs):
    tmp, *_, done = pillar02_runs
    assert done['killed'][1] != 0
    out, code = done['resumed']
    assert code == 0, out[-6000:]
    full, resumed = _entries(tmp / 'full'), _entries(tmp / 'resumed')
    assert ({f: e['replaced_by'] for f, e in resumed.items()} ==
            {f: e['replaced_by'] for f, e in full.items()})
    assert losses(tmp / 'resumed') == losses(tmp / 'full')
