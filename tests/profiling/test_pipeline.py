"""tools/profile_pipeline.py and the doctor's data.throughput, through the
shipped pillar02 config (CBGS, ObjectSample, 9 sweeps) on the generated
data. Numbers are checked for sense, never against wall-clock targets.

The tool runs in a process forked from this one (its work is the
profiler's code); the fresh worker it times is a new interpreter that the
profiler starts itself (marker ``launch``). The doctor's check and the
profiler's parts run in this process."""
import copy
import json
import random
from pathlib import Path

import numpy as np
import pytest
import torch

from projects.mmdet3d_plugin.doctor.checks.throughput import (
    check_throughput, plan_throughput)
from projects.mmdet3d_plugin.doctor.context import (DoctorContext,
                                                    DoctorOptions)
from projects.mmdet3d_plugin.doctor.preflight import _checks
from projects.mmdet3d_plugin.profiling.dataset import build_train_dataset
from projects.mmdet3d_plugin.profiling.feed import estimate_feed
from projects.mmdet3d_plugin.profiling.steady import measure_steady_state
from projects.mmdet3d_plugin.profiling.timing import timed_pipeline
from tests.helpers.train_tool import fork_tool

REPO = Path(__file__).resolve().parents[2]
PILLAR02 = str(REPO / 'configs' / 'centerpoint' /
               'centerpoint_pillar02_second_secfpn_8xb4-cyclic-20e_nus-3d.py')
# The shipped config's train pipeline (preset fast_pipeline).
PIPELINE = [
    'FastLoadPointsFromFile', 'FastLoadPointsFromMultiSweeps',
    'LoadAnnotations3D', 'FastObjectSample', 'FastGlobalRotScaleTrans',
    'RandomFlip3D', 'FastPointsRangeFilter', 'ObjectRangeFilter',
    'ObjectNameFilter', 'FastPointShuffle', 'Pack3DDetInputs'
]


@pytest.fixture(scope='module')
def pillar02(nus_synthetic):
    return build_train_dataset(PILLAR02, data_root=str(nus_synthetic))


@pytest.mark.launch
def test_tool_profiles_every_transform(nus_synthetic, tmp_path):
    out = tmp_path / 'profile.json'
    tool = fork_tool(  # library: the profiler; its fresh worker: launch
        'profile_pipeline', PILLAR02, '--data-root', nus_synthetic,
        '--samples', '2', '--warmup', '1', '--step-time', '0.5',
        '--workers', '3', '--json', out)
    output, _ = tool.communicate(timeout=600)
    assert tool.returncode == 0, output[-3000:]
    profile = json.loads(out.read_text())
    assert [t['name'] for t in profile['transforms']] == PIPELINE
    for t in profile['transforms']:
        assert t['ms_per_sample'] > 0 and t['calls'] >= 2, t
        assert t['cpu_ms_per_sample'] >= 0, t
        assert t['name'] in output
    assert profile['ms_per_sample'] >= profile['pipeline_ms_per_sample'] > 0
    assert profile['samples_per_s_per_worker'] == pytest.approx(
        1000 / profile['ms_per_sample'])
    worker = profile['fresh_worker']
    assert set(worker) == {'import_s', 'build_s', 'first_sample_s',
                           'next_sample_s', 'to_first_sample_s'}
    assert all(v > 0 for v in worker.values()), worker
    # The first sample compiles ObjectSample's kernels; it starts after the
    # imports and the build.
    assert worker['to_first_sample_s'] > worker['import_s'] + \
        worker['build_s']
    feed = profile['feed']
    assert (feed['batch_size'], feed['step_time_s'], feed['workers']) == \
        (4, 0.5, 3)
    assert feed['workers_needed'] >= 1 and isinstance(feed['fed'], bool)
    assert profile['conditions']['torch_threads'] == 1
    assert 'worker(s) per GPU' in output
    assert 'database infos' not in output  # INFO logs


def test_timing_leaves_the_samples_unchanged(pillar02):
    _, dataset = pillar02
    # ObjectSample's sampler keeps a position in the GT database: two
    # copies in the same state, the same seeds.
    plain_set, timed_set = copy.deepcopy(dataset), copy.deepcopy(dataset)

    def sample(dataset):
        random.seed(3)
        np.random.seed(3)
        torch.manual_seed(3)
        return dataset[5]

    plain = sample(plain_set)
    with timed_pipeline(timed_set) as clock:
        timed = sample(timed_set)
    assert sum(clock.calls) >= len(PIPELINE)
    assert torch.equal(plain['inputs']['points'], timed['inputs']['points'])
    plain_boxes = plain['data_samples'].gt_instances_3d.bboxes_3d.tensor
    assert torch.equal(
        plain_boxes, timed['data_samples'].gt_instances_3d.bboxes_3d.tensor)
    assert [type(t).__name__ for t in
            timed_set.dataset.pipeline.transforms] == PIPELINE


@pytest.mark.parametrize('step_time, status', [(1000.0, 'pass'),
                                               (1e-4, 'warn')])
def test_doctor_throughput(pillar02, step_time, status):
    cfg, dataset = pillar02
    ctx = DoctorContext(
        DoctorOptions(config=PILLAR02, world_size=8, step_time=step_time),
        tmp_dir='')
    ctx.provide('cfg', cfg)
    ctx.provide('dataset.train', dataset)
    before = torch.get_num_threads()
    torch.set_num_threads(3)  # not the tests' 1, nor the profile's
    rng, threads = np.random.get_state()[1].copy(), torch.get_num_threads()
    try:
        line = check_throughput(ctx)
        threads_after = torch.get_num_threads()
    finally:
        torch.set_num_threads(before)
    assert line.status == status, line
    # The doctor's process is left as it was.
    assert (np.random.get_state()[1] == rng).all()
    assert threads_after == threads
    assert 'ms/sample as one worker on one core' in line.detail
    assert '4 worker(s) per GPU' in line.detail
    if status == 'warn':
        assert 'train_dataloader.num_workers=' in line.fix
        assert '/dev/shm' in line.fix and 'per node of 8 GPU(s)' in line.fix


def test_doctor_runs_the_check_once_the_first_batch_came():
    checks = {name: needs for name, _, needs, _ in _checks()}
    assert checks['data.throughput'] == ('dataset.train', 'train_iterator')


@pytest.mark.parametrize('ms, batch, workers, step, needed, fed', [
    (250.0, 4, 4, 0.2, 5, False),
    (250.0, 4, 5, 0.2, 5, True),
    (10.0, 2, 0, 1.0, 1, False),  # the main process loads between steps
    (100.0, 4, 4, None, 2, True),  # assumed: 4 x 0.05 s
])
def test_estimate_feed(ms, batch, workers, step, needed, fed):
    feed = estimate_feed(ms, batch, workers, step)
    assert (feed.workers_needed, feed.fed) == (needed, fed)
    assert ('assumed' in feed.step_time_source) == (step is None)


def test_warning_names_the_fast_pipeline_preset_when_there_is_one(pillar02):
    _, dataset = pillar02
    steady = measure_steady_state(dataset, samples=1, warmup=1)
    feed = estimate_feed(steady.ms_per_sample, 4, 1, 1e-4)
    line = plan_throughput(steady, feed, 2, 4, fast_preset='fast_pipeline')
    assert "presets = ['fast_pipeline']" in line.fix
    assert 'more than the 4 cores here' in line.fix
