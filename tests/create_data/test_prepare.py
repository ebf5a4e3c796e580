"""``tools/create_data.py``'s parallel, resumable preparation
(``create_data.prepare``) against mmdet3d's own converter
(``create_data.converter``, ``--reference``) on one small generated root:
equal products, a run killed with SIGKILL in the GT database and started
again, bad files, and a shipped CenterPoint config training on them."""
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from projects.mmdet3d_plugin.create_data.compare import product_differences
from projects.mmdet3d_plugin.create_data.converter import (
    info_paths, run_mmdet3d_converter)
from projects.mmdet3d_plugin.create_data.prepare import create_nuscenes_infos
from projects.mmdet3d_plugin.synthetic.scene import SyntheticNuScenesConfig
from projects.mmdet3d_plugin.synthetic.writer import \
    generate_synthetic_nuscenes
from tests.helpers.train_tool import REPO, fork_train, start_tool, tool_env

SAMPLES_PER_SCENE = 3  # 30 samples, 24 of them train


@pytest.fixture(scope='module')
def root(tmp_path_factory) -> Path:
    """A small generated root with our products in it (two workers,
    shards of four samples; in this process under pytest-xdist, whose
    worker runs a thread: ``parallel.py``)."""
    path = tmp_path_factory.mktemp('create_data') / 'nus'
    generate_synthetic_nuscenes(
        path, seed=3,
        config=SyntheticNuScenesConfig(samples_per_scene=SAMPLES_PER_SCENE))
    create_nuscenes_infos(path, gt_database=True, workers=2, shard_size=4)
    return path


@pytest.fixture(scope='module')
def reference(root, tmp_path_factory) -> Path:
    """mmdet3d's converter's products for the same root."""
    out = tmp_path_factory.mktemp('reference')
    run_mmdet3d_converter(root, out_dir=out, gt_database=True)
    return out


def test_products_equal_mmdet3d_converters(root, reference):
    tolerated, mismatches = product_differences(root, reference, 'v1.0-mini')
    assert mismatches == []
    assert tolerated == {}  # every value the same bits
    files = list((root / 'nuscenes_gt_database').iterdir())
    assert len(files) > 100
    assert not list(root.glob('.create_data-*'))  # the work folder is gone


def _gt_shards(out: Path):
    return list(out.glob('.create_data-*/gt/[0-9]*.pkl'))


@pytest.mark.launch
def test_sigkill_in_gt_database_then_restart_redoes_only_missing_shards(
        root, reference, tmp_path):
    # launch: the tool killed and started again is the subject.
    out = tmp_path / 'out'
    args = ['nuscenes', '--root-path', root, '--out-dir', out,
            '--workers', '1', '--shard-size', '1']
    total = 24
    with open(tmp_path / 'first.log', 'w') as log:
        first = subprocess.Popen(
            [sys.executable, str(REPO / 'tools' / 'create_data.py'),
             *map(str, args)], cwd=REPO, env=tool_env(), stdout=log,
            stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 300
        while len(_gt_shards(out)) < total // 3 and first.poll() is None \
                and time.monotonic() < deadline:
            time.sleep(0.001)
        first.send_signal(signal.SIGKILL)
        first.wait(60)
    log_text = (tmp_path / 'first.log').read_text()
    assert first.returncode == -signal.SIGKILL, log_text[-2000:]
    done = len(_gt_shards(out))
    assert 0 < done < total, log_text[-2000:]
    assert not (out / 'nuscenes_dbinfos_train.pkl').exists()
    assert not (out / 'nuscenes_infos_train.pkl').exists()

    # restarted with two workers: the same shards (--shard-size), the pool
    # of a tool that runs no other thread
    args[args.index('--workers') + 1] = '2'
    second = start_tool('create_data', *args)
    output, _ = second.communicate(timeout=600)
    assert second.returncode == 0, output[-3000:]
    assert 'infos: 30 of 30 samples done by an earlier run; 0 to go' \
        in output
    assert (f'GT database: {done} of {total} samples done by an earlier '
            f'run; {total - done} to go in {total - done} shards') in output
    assert (f'GT database {total} samples, {total - done} of them in this '
            'run, in ') in output
    tolerated, mismatches = product_differences(out, reference, 'v1.0-mini')
    assert (tolerated, mismatches) == ({}, [])
    assert sorted(p.name for p in out.iterdir()) == sorted(
        p.name for p in info_paths(out, gt_database=True))


def _linked_copy(root: Path, dst: Path) -> Path:
    shutil.copytree(root, dst, copy_function=os.symlink,
                    ignore=shutil.ignore_patterns('*.pkl', '*_gt_database'))
    return dst


def _sample_of_sweep(root: Path):
    import pickle
    info = pickle.loads((root / 'nuscenes_infos_train.pkl').read_bytes())
    first = info['data_list'][0]
    sweep = first['lidar_sweeps'][0]['lidar_points']['lidar_path']
    return first['token'], sweep.split('nuscenes/', 1)[1]


def test_truncated_sweep_stops_before_any_product(root, tmp_path):
    bad = _linked_copy(root, tmp_path / 'bad')
    token, rel = _sample_of_sweep(root)
    data = (root / rel).read_bytes()
    (bad / rel).unlink()
    (bad / rel).write_bytes(data[:-7])  # not a whole number of points
    out = tmp_path / 'out'
    out.mkdir()
    good = (root / 'nuscenes_infos_train.pkl').read_bytes()
    (out / 'nuscenes_infos_train.pkl').write_bytes(good)
    with pytest.raises(ValueError) as err:
        create_nuscenes_infos(bad, out_dir=out, gt_database=True, workers=2,
                              shard_size=8)
    message = str(err.value)
    assert str(bad.resolve() / rel) in message and token in message
    assert f'size {len(data) - 7} bytes is not a multiple of 20' in message
    # the earlier product is as it was; nothing else was written
    assert (out / 'nuscenes_infos_train.pkl').read_bytes() == good
    assert not (out / 'nuscenes_dbinfos_train.pkl').exists()


def test_missing_key_frame_names_file_and_sample(root, tmp_path):
    bad = _linked_copy(root, tmp_path / 'bad')
    lidar = sorted((bad / 'samples' / 'LIDAR_TOP').iterdir())[5]
    lidar.unlink()
    with pytest.raises(FileNotFoundError,
                       match=f'{lidar.resolve()} of sample [0-9a-f]+ is '
                       'missing'):
        create_nuscenes_infos(bad, out_dir=tmp_path / 'out', workers=1)


def test_shipped_centerpoint_config_trains_on_our_products(root, tmp_path):
    config = REPO / 'configs' / 'centerpoint' / \
        'centerpoint_pillar_synthetic.py'
    ranks = fork_train(config, tmp_path / 'work', '--data-root', root,
                       '--cfg-options', 'train_cfg.max_iters=2',
                       'default_hooks.logger.interval=1')
    output, _ = ranks.communicate(timeout=600)
    assert ranks.returncode == 0, output[-4000:]
    assert 'Iter(train) [2/2]' in output
    losses = [float(x.split()[0]) for x in output.split(' loss: ')[1:]]
    assert losses and np.isfinite(losses).all()
