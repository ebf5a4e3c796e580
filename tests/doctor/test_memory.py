"""tools/doctor.py's /dev/shm and host RAM checks.

The numbers come from a real first batch of the small CenterPoint config on
the generated data (real DataLoader workers). The free /dev/shm and the
available RAM are passed in, for every status: the live figures depend on
the container and on what else runs beside the tests, so the one test that
measures them only checks that the line is well formed.
"""
from pathlib import Path

import pytest
import torch

import projects.mmdet3d_plugin  # noqa: F401  registers the plugin
from projects.mmdet3d_plugin.doctor.checks import memory
from projects.mmdet3d_plugin.doctor.context import (STATUSES, DoctorContext,
                                                    DoctorOptions)
from projects.mmdet3d_plugin.doctor.preflight import _checks, _release

REPO = Path(__file__).resolve().parents[2]
SYNTHETIC = REPO / 'configs' / 'centerpoint' / \
    'centerpoint_pillar_synthetic.py'
MiB = 2**20
#: What the checks need, in the doctor's order.
NEEDED = ('config.load', 'env.mp_start_method', 'data.dataset.train',
          'data.first_batch')


@pytest.fixture(scope='module')
def first_batch_ctx(nus_synthetic, tmp_path_factory):
    """The doctor's context after data.first_batch (workers alive), for a
    2-process run with 2 workers per process."""
    options = DoctorOptions(
        config=str(SYNTHETIC),
        world_size=2,
        launcher='pytorch',
        data_root=str(nus_synthetic),
        cfg_options={'train_dataloader.num_workers': 2})
    ctx = DoctorContext(options=options,
                        tmp_dir=str(tmp_path_factory.mktemp('doctor')))
    for name, fn, needs, provides in _checks():
        if name in NEEDED:
            [line] = ctx.run(name, fn, needs=needs, provides=provides)
            assert line.status != 'fail', line
    yield ctx
    _release(ctx)


def test_checks_are_registered():
    names = [name for name, *_ in _checks()]
    first = names.index('data.first_batch')
    assert names[first + 1:first + 3] == ['data.shm', 'data.host_ram']


def test_batch_bytes_are_measured(first_batch_ctx):
    batch = first_batch_ctx.artifacts['first_batch']
    points = batch['inputs']['points']
    expected = sum(p.untyped_storage().nbytes() for p in points)
    # The points dominate; boxes and labels add a little.
    measured = memory.tensor_bytes(batch)
    assert expected <= measured < expected + MiB, (measured, expected)
    # Views of one storage count once.
    base = torch.zeros(1000)
    assert memory.tensor_bytes([base, base[:10], {'a': base[5:]}]) == 4000


def _shm_formula(ctx) -> str:
    """The need ``data.shm`` states for this context: 2 processes x 2
    workers x prefetch_factor 2 batches."""
    batch = memory.tensor_bytes(ctx.artifacts['first_batch'])
    return ('2 process(es) x 2 worker(s) x prefetch_factor 2 x '
            f'{memory._size(batch)} per batch = {memory._size(8 * batch)}')


def test_shm_with_room_passes(first_batch_ctx):
    batch = memory.tensor_bytes(first_batch_ctx.artifacts['first_batch'])
    free = int(8 * batch / memory.HEADROOM)  # the need fills HEADROOM
    line = memory.check_shm(first_batch_ctx, free_bytes=free)
    assert line.check == 'data.shm'
    assert line.status == 'pass', line
    assert line.detail == (f'{_shm_formula(first_batch_ctx)} in flight; '
                           f'/dev/shm has {memory._size(free)} free'), line


@pytest.mark.parametrize('free,status', [
    (64 * MiB, 'fail'),  # Docker's default: the batches do not fit
    (None, 'warn'),  # between need and need / HEADROOM (set below)
])
def test_small_shm_fails_with_the_fix(first_batch_ctx, free, status):
    batch = memory.tensor_bytes(first_batch_ctx.artifacts['first_batch'])
    need = 8 * batch
    if free is None:
        free = int(need / 0.75)
    elif need < free:  # this data's batches are small: scale /dev/shm down
        free = need // 4
    line = memory.check_shm(first_batch_ctx, free_bytes=free)
    assert line.status == status, line
    assert '--shm-size=' in line.fix and '--ipc=host' in line.fix, line
    assert "Docker's default is 64 MB" in line.fix
    if status == 'fail':
        assert 'SIGBUS' in line.detail, line
        # A quarter of the room the batches need: neither fewer workers
        # nor prefetch_factor=1 fit, so the fix says no workers.
        assert 'num_workers=0' in line.fix, line


def test_shm_plan_suggests_what_fits():
    line = memory.plan_shm(free_bytes=1000 * MiB, procs=8, workers=8,
                           prefetch=2, batch_bytes=10 * MiB)
    assert line.status == 'fail', line  # 1280 MiB > 1000 MiB
    assert 'train_dataloader.num_workers=3' in line.fix, line
    assert 'train_dataloader.prefetch_factor=' not in line.fix, line
    assert memory.plan_shm(1000 * MiB, 8, 0, 2, 10 * MiB).status == 'pass'
    assert memory.plan_shm(None, 8, 2, 2, MiB).status == 'warn'


def test_host_ram_with_room_passes(first_batch_ctx):
    # 1 TiB: 2 x (1 + 3) resident processes fit in half of it unless one
    # holds 64 GiB, more than the machines the tests run on have.
    line = memory.check_host_ram(first_batch_ctx, available_bytes=2**40)
    assert line.check == 'data.host_ram'
    assert line.status == 'pass', line
    # 2 train workers per process, plus the val loader's 1.
    assert line.detail.startswith('2 process(es) x ('), line
    assert ' + 3 worker(s) x ' in line.detail, line
    assert line.detail.endswith(' resident, 1024.0 GiB available'), line


def test_live_figures_give_well_formed_lines(first_batch_ctx):
    # What /dev/shm and RAM hold here depends on the container and on the
    # tests beside this one: any status, but a line that states the need
    # and, unless it passes, the fix.
    shm = memory.check_shm(first_batch_ctx)
    ram = memory.check_host_ram(first_batch_ctx)
    for line, check in ((shm, 'data.shm'), (ram, 'data.host_ram')):
        assert line.check == check and line.status in STATUSES, line
        assert (line.status == 'pass') is (not line.fix), line
    assert _shm_formula(first_batch_ctx) in shm.detail, shm
    assert ram.detail.startswith('2 process(es) x ('), ram
    assert ' + 3 worker(s) x ' in ram.detail, ram


def test_small_host_ram_fails_with_the_fix(first_batch_ctx):
    line = memory.check_host_ram(first_batch_ctx, available_bytes=64 * MiB)
    assert line.status == 'fail', line
    assert 'SIGKILL' in line.detail
    assert "type='SafeNuScenesDataset', serialize_data=True" in line.fix
    line = memory.plan_host_ram(available_bytes=10 * 2**30, procs=8,
                                workers=4, worker_rss=500 * MiB,
                                main_rss=200 * MiB)
    # 8 x (200 + 4 x 500) MiB = 17.2 GiB > 10 GiB; 5 GiB / 8 - 200 MiB
    # leaves room for 0 workers of 500 MiB.
    assert line.status == 'fail', line
    assert 'start fewer processes per node' in line.fix, line
    # 17.2 GiB of 24 GiB: over half; (12 GiB / 8 - 200 MiB) / 500 MiB.
    line = memory.plan_host_ram(24 * 2**30, 8, 4, 500 * MiB, 200 * MiB)
    assert line.status == 'warn', line
    assert 'train_dataloader.num_workers (about 2 fit)' in line.fix, line
    assert memory.plan_host_ram(64 * 2**30, 8, 4, 500 * MiB,
                                200 * MiB).status == 'pass'
