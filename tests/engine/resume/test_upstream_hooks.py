"""Upstream hooks that reach into the train data, through ``tools/train.py``
(run in processes forked from the test process, ``fork_train``) and the
plugin's default loops (exact resume on), on the toy of
``tests/helpers/hook_toys.py``: each sample's logged ``tag`` says what its
pipeline did, ``l1`` what the model's head was switched to.

The run ``hooks``: 3 epochs of 10 iterations, 2 fork workers, with
mmdet3d's ``DisableObjectSampleHook(disable_after_epoch=1)`` and
``BenchmarkHook``, mmdet's ``YOLOXModeSwitchHook(num_last_epochs=1)``,
``PipelineSwitchHook(switch_epoch=2)`` and ``NumClassCheckHook``, and
mmengine's default hooks (``RuntimeInfoHook``, ``LoggerHook``,
``DistSamplerSeedHook``). The same run killed in its third epoch (after
iteration 25, checkpoint 24) and resumed trains every iteration as the
uninterrupted one did, as does the same run killed in its second epoch
(after iteration 16, checkpoint 15), the one in which
``DisableObjectSampleHook`` acted. ``PipelineSwitchHook(switch_epoch=1)``
switches with 0 workers and with 2 persistent ones (2 workers that are not
persistent: the run ``hooks``).
"""
import json

import pytest
import torch

from tests.helpers.hook_toys import CLASSES, write_hook_config
from tests.helpers.run_logs import records
from tests.helpers.train_tool import finish, fork_train

EPOCH_ITERS = 10
HOOKS = [
    dict(type='DisableObjectSampleHook', disable_after_epoch=1),
    dict(type='mmdet.YOLOXModeSwitchHook', num_last_epochs=1,
         skip_type_keys=['TagObjectSample']),
    dict(type='mmdet.PipelineSwitchHook', switch_epoch=2, switch_pipeline=[
        dict(type='TagObjectSample'), dict(type='Tag', value=100.0)]),
    dict(type='mmdet.NumClassCheckHook'),
    dict(type='BenchmarkHook'),
    dict(type='RecordIndicesHook'),
]
KILL = dict(type='FailAtIterHook', at_iter=25, when='after', action='SIGKILL')
#: Killed in epoch 2, the epoch DisableObjectSampleHook(1) turned
#: ObjectSample off at (after iteration 16, checkpoint 15).
KILL_EPOCH2 = dict(type='FailAtIterHook', at_iter=16, when='after',
                   action='SIGKILL')
#: PipelineSwitchHook at epoch 1 of 2, from a pipeline tagging 0 to one
#: tagging 1.
SWITCH = [dict(type='mmdet.PipelineSwitchHook', switch_epoch=1,
               switch_pipeline=[dict(type='Tag', value=1.0)])]
SWITCH_DATA = [dict(type='Tag', value=0.0)]
WORKERS = {'0-workers': (0, False), '2-persistent': (2, True)}


@pytest.fixture(scope='module')
def runs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp('upstream_hooks')
    hooks = write_hook_config(tmp / 'hooks.py', HOOKS)
    # hook: each run's subject is what the hooks do under the loops.
    procs = {
        'hooks': fork_train(hooks, tmp / 'hooks'),
        'killed': fork_train(
            write_hook_config(tmp / 'killed.py', HOOKS + [KILL]),
            tmp / 'resumed'),
        'killed2': fork_train(
            write_hook_config(tmp / 'killed2.py', HOOKS + [KILL_EPOCH2]),
            tmp / 'resumed2'),
    }
    for name, (workers, persistent) in WORKERS.items():
        procs[name] = fork_train(write_hook_config(
            tmp / f'{name}.py', SWITCH, max_epochs=2, size=20,
            num_workers=workers, persistent_workers=persistent,
            pipeline=SWITCH_DATA), tmp / name)
    done = finish(procs)
    done.update(finish(
        {'resumed': fork_train(hooks, tmp / 'resumed', '--resume'),
         'resumed2': fork_train(hooks, tmp / 'resumed2', '--resume')}))
    return tmp, done


def _ok(runs, name) -> str:
    out, code = runs[1][name]
    assert code == 0, f'{name}: rc {code}\n{out[-6000:]}'
    return out


def _tags(recs: dict, epoch: int) -> list:
    """The tags of 1-based ``epoch``'s iterations."""
    return [recs[i]['tag'] for i in range((epoch - 1) * EPOCH_ITERS + 1,
                                          epoch * EPOCH_ITERS + 1)]


def test_the_hooks_act_under_the_plugin_loops(runs):
    out = _ok(runs, 'hooks')
    recs = records(runs[0] / 'hooks')
    assert sorted(recs) == list(range(1, 3 * EPOCH_ITERS + 1))
    # Epoch 1: ObjectSample on (1 + a draw in [0, 0.1)).
    assert all(1.0 <= t < 1.1 for t in _tags(recs, 1)), _tags(recs, 1)
    # Epoch 2: ObjectSample off (DisableObjectSampleHook), the dataset's
    # skip keys set and the head's L1 on (YOLOXModeSwitchHook).
    assert _tags(recs, 2) == [1000.0] * EPOCH_ITERS
    assert [recs[i]['l1'] for i in (10, 11)] == [0.0, 1.0]
    # Epoch 3: PipelineSwitchHook's pipeline (a new ObjectSample, on).
    assert all(1101.0 <= t < 1101.1 for t in _tags(recs, 3)), _tags(recs, 3)
    assert 'Disable ObjectSample' in out and 'Switch pipeline now!' in out
    assert 'No mosaic and mixup aug now!' in out
    # BenchmarkHook; LoggerHook counts the epoch's batches.
    assert 'Training speed of epoch 3 is' in out
    assert 'Epoch(train) [3][10/10]' in out
    assert 'replayed before_train_epoch' not in out


def test_sampler_seed_hook_and_runtime_info(runs):
    _ok(runs, 'hooks')
    work = runs[0] / 'hooks'
    epochs = {}
    for line in (work / 'indices_rank0.jsonl').read_text().splitlines():
        _, epoch, indices = json.loads(line)
        epochs.setdefault(epoch, []).extend(indices)
    # DistSamplerSeedHook: each epoch all 40 samples, in a new order.
    assert all(sorted(v) == list(range(40)) for v in epochs.values())
    assert len({tuple(v) for v in epochs.values()}) == 3
    # RuntimeInfoHook read the dataset's metainfo: checkpoints carry it.
    meta = torch.load(work / 'iter_30.pth', map_location='cpu',
                      weights_only=False)['meta']
    assert tuple(meta['dataset_meta']['classes']) == CLASSES


def test_resumed_after_the_hooks_acted_every_iteration_is_the_same(runs):
    out = _ok(runs, 'resumed')
    assert runs[1]['killed'][1] != 0
    assert 'resumed epoch: 2, iter: 24' in out, out[-4000:]
    assert ('exact resume: replayed before_train_epoch of '
            'DisableObjectSampleHook for epochs 1-2') in out
    assert 'dataset metainfo from the resumed checkpoint' not in out
    ref, resumed = records(runs[0] / 'hooks'), records(runs[0] / 'resumed')
    assert sorted(resumed) == sorted(ref)
    for i in sorted(ref):
        assert [resumed[i][k] for k in ('loss', 'tag', 'l1')] == [
            ref[i][k] for k in ('loss', 'tag', 'l1')], f'iteration {i}'


def test_resumed_in_the_epoch_the_hook_acted_every_iteration_is_the_same(
        runs):
    out = _ok(runs, 'resumed2')
    assert runs[1]['killed2'][1] != 0
    assert 'resumed epoch: 1, iter: 15' in out, out[-4000:]
    ref, resumed = records(runs[0] / 'hooks'), records(runs[0] / 'resumed2')
    assert sorted(resumed) == sorted(ref)
    for i in sorted(ref):
        assert [resumed[i][k] for k in ('loss', 'tag', 'l1')] == [
            ref[i][k] for k in ('loss', 'tag', 'l1')], f'iteration {i}'


@pytest.mark.parametrize('name', list(WORKERS))
def test_pipeline_switch_hook_switches(runs, name):
    out = _ok(runs, name)
    recs = records(runs[0] / name)
    assert [recs[i]['tag'] for i in sorted(recs)] == [0.0] * 5 + [1.0] * 5
    assert 'Switch pipeline now!' in out
