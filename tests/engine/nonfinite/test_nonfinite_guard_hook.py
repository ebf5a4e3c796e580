"""Non-finite steps through ``tools/train.py`` (``NonFiniteGuardHook`` is
on by default), on the toys of ``tests/helpers/nonfinite_toys.py``, each
run in ranks forked from the test process (the hook is the subject, not
the launcher):

* ``nan``: 40 shuffled samples, sample 7 with a NaN feature, a BatchNorm
  layer, 2 gloo ranks as ``tools/dist_train.sh`` runs them, 3 epochs:
  exactly the steps whose batch held sample 7 are skipped, on both ranks,
  each named with the rank, the sample, the loss term and ``fc1``; rc 0,
  final weights and BatchNorm statistics finite;
* ``diverge``: SGD with lr 1e4, 2 ranks, each with the error file torchrun
  gives a rank (``tests/helpers/train_tool.py``): the run stops by
  itself after 3 bad steps in a row, non-zero; ``tools/failure_report.py``
  on those error files (what ``tools/dist_run.py`` runs after a failed
  launch) names the cause ``nonfinite``; every checkpoint it wrote is
  finite;
* ``poisoned``: a weight made infinite after iteration 5 (one process,
  a checkpoint every iteration; the loss stays finite, tanh saturates):
  ``iter_5.pth`` is not written and the run stops, ``last_checkpoint``
  names ``iter_4.pth``, the last finite one.

``tools/replay_step.py`` runs forked too: its subject here is the step it
rebuilds from the records; its start-up and bad input are
``tests/tools/test_startup.py``'s. The failure report after a real
``tools/dist_train.sh`` launch: ``tests/failures/test_report.py``.
"""
import json
from pathlib import Path

import pytest
import torch

from projects.mmdet3d_plugin.constants import FAILURE_REPORT_NAME
from tests.helpers.toy_config import toy_config, write_toy_config
from tests.helpers.train_tool import (finish, fork_dist_train, fork_tool,
                                      fork_train)

TOYS = ['tests.helpers.fault_helpers', 'tests.helpers.nonfinite_toys']


@pytest.fixture(scope='module')
def runs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp('nonfinite')
    nan = write_toy_config(
        tmp / 'nan.py', imports=TOYS, model=dict(type='BNToyModel'),
        dataset=dict(type='NaNToyDataset', size=40, nan_index=7),
        max_epochs=3, ckpt_interval=5,
        custom_hooks=[dict(type='RecordIndicesHook')])
    # The same runs with samples that name nothing (plain tensors), under
    # the resumable loops and under mmengine's loop and DefaultSampler.
    plain = {name: write_toy_config(
        tmp / f'{name}.py', imports=TOYS, model=dict(type='BNToyModel'),
        dataset=dict(type='PlainNaNToyDataset', size=40, nan_index=7),
        max_epochs=3, ckpt_interval=5, **keys)
        for name, keys in [('plain', {}),
                           ('plain_mmengine', dict(exact_resume=False))]}
    # mmengine's iteration-based loop and InfiniteSampler: the iterator
    # starts with the loop, before any hook.
    infinite = toy_config(
        imports=TOYS, model=dict(type='BNToyModel'),
        dataset=dict(type='NaNToyDataset', size=40, nan_index=7),
        max_iters=30, ckpt_interval=None, exact_resume=False)
    infinite['train_dataloader']['sampler']['type'] = 'InfiniteSampler'
    diverge = write_toy_config(tmp / 'diverge.py', imports=TOYS,
                               max_iters=60, ckpt_interval=1, num_workers=0,
                               lr=1e4)
    poisoned = write_toy_config(
        tmp / 'poisoned.py', imports=TOYS, max_iters=20, ckpt_interval=1,
        num_workers=0,
        custom_hooks=[dict(type='PoisonWeightsHook', at_iter=5)])
    done = finish({
        'nan': fork_dist_train(nan, tmp / 'nan'),  # hook: skipped steps
        # hook: the records' dataset indices
        **{name: fork_dist_train(config, tmp / name)
           for name, config in plain.items()},
        'infinite': fork_train(write_toy_config(  # hook: the same
            tmp / 'infinite.py', infinite), tmp / 'infinite'),
        # hook: the stop; its ranks' error files make the report
        'diverge': fork_dist_train(diverge, tmp / 'diverge',
                                   errors=tmp / 'diverge_logs'),
        'poisoned': fork_train(poisoned, tmp / 'poisoned'),  # hook
    })
    # report: what tools/dist_run.py runs after the failed launch
    done['report'] = finish({'report': fork_tool(
        'failure_report', tmp / 'diverge_logs', '--exit-code', 1,
        '--work-dir', tmp / 'diverge')})['report']
    return tmp, done


def _finite(path: Path) -> bool:
    checkpoint = torch.load(path, map_location='cpu', weights_only=False)
    tensors = list(checkpoint['state_dict'].values())
    for state in checkpoint['optimizer']['state'].values():
        tensors += [v for v in state.values() if torch.is_tensor(v)]
    return all(bool(torch.isfinite(t.float()).all()) for t in tensors)


def _batches(work: Path) -> dict:
    """``{(iteration, rank): the batch's sample indices}`` that
    ``RecordIndicesHook`` wrote (from the samples' own ``index``)."""
    batches = {}
    for rank in (0, 1):
        for line in (work / f'indices_rank{rank}.jsonl').read_text(
                ).splitlines():
            iteration, _, indices = json.loads(line)
            batches[iteration, rank] = indices
    return batches


def test_exactly_the_steps_with_the_nan_sample_are_skipped(runs):
    tmp, done = runs
    out, code = done['nan']
    assert code == 0, out[-6000:]
    work = tmp / 'nan'
    batches = _batches(work)
    # iteration -> the rank whose batch held sample 7
    holding = {it: rank for (it, rank), idx in batches.items() if 7 in idx}
    assert len(holding) == 3  # once per epoch
    records = json.loads((work / 'nonfinite.json').read_text())
    assert [r['iteration'] for r in records] == sorted(holding)
    for record in records:
        [named] = record['ranks']
        assert named['rank'] == holding[record['iteration']]
        # Named from the sampler's order, and by what the samples carry.
        assert named['dataset_indices'] == batches[
            record['iteration'], named['rank']]
        assert 7 in [s['index'] for s in named['samples']]
        assert named['nonfinite_terms'] == {'loss': 'nan'}
        assert named['first_module'] == 'fc1'
        assert named['nonfinite_inputs'] == ['inputs']
        assert (f'non-finite step: iteration {record["iteration"]} skipped '
                'on every rank') in out
    assert _finite(work / 'iter_15.pth')  # BatchNorm statistics included


@pytest.mark.parametrize('name', ['plain', 'plain_mmengine'])
def test_a_plain_dataset_batch_is_named_by_its_indices(runs, name):
    """Samples that are plain tensors: each record names the dataset
    indices of the bad rank's batch, the ones the dict-sample run (the
    same sampler seed and order) trained at that iteration on that
    rank."""
    tmp, done = runs
    out, code = done[name]
    assert code == 0, out[-6000:]
    batches = _batches(tmp / 'nan')
    records = json.loads((tmp / name / 'nonfinite.json').read_text())
    assert len(records) == 3, records
    for record in records:
        [named] = record['ranks']
        indices = named['dataset_indices']
        assert 7 in indices and named['samples'] == []
        assert indices == batches[record['iteration'], named['rank']]
        assert (f'iteration {record["iteration"]} skipped on every rank '
                f'(gradient norm nan); rank {named["rank"]}: loss=nan; '
                f'dataset indices [{", ".join(map(str, indices))}]; '
                'non-finite inputs: inputs; first non-finite module: fc1'
                ) in out


def test_the_first_pass_of_mmengines_iteration_loop_is_named(runs):
    """``IterBasedTrainLoop`` starts its iterator before the hook can
    follow it: the batch is made again from the sampler's stream, and
    is the one the samples' own ``index`` names."""
    tmp, done = runs
    out, code = done['infinite']
    assert code == 0, out[-6000:]
    records = json.loads((tmp / 'infinite' / 'nonfinite.json').read_text())
    assert len(records) >= 2, records
    for record in records:
        [named] = record['ranks']
        assert 7 in named['dataset_indices']
        assert named['dataset_indices'] == [s['index']
                                            for s in named['samples']]


def _replayed(work: Path, record: dict) -> str:
    # tool, forked: the subject is the replayed step, not the start-up
    proc = fork_tool('replay_step', work, '--iteration', record['iteration'])
    out = proc.communicate(timeout=600)[0]
    assert proc.returncode == 0, out[-6000:]
    return out


def test_replay_step_rebuilds_a_skipped_step(runs):
    """The first record with a checkpoint before it (every 5 iterations):
    the same rank, samples, loss and module, from the data position."""
    work = runs[0] / 'nan'
    record = next(r for r in json.loads((work / 'nonfinite.json').read_text())
                  if r['iteration'] > 5)
    out = _replayed(work, record)
    [named] = record['ranks']
    assert (f'replay of iteration {record["iteration"]}, rank '
            f'{named["rank"]} of 2') in out, out[-3000:]
    assert ('  dataset indices: ' + ', '.join(
        map(str, named['dataset_indices'])) + '\n') in out
    assert '  sample index 7\n' in out
    assert '  loss terms: loss=nan' in out
    assert '  first non-finite module: fc1' in out
    assert 'the run skipped it: the same' in out


def test_replay_step_of_the_diverging_run(runs):
    work = runs[0] / 'diverge'
    record = json.loads((work / 'nonfinite.json').read_text())[0]
    out = _replayed(work, record)
    assert 'the run skipped it: the same' in out, out[-3000:]


def test_a_diverging_run_stops_and_names_the_cause(runs):
    tmp, done = runs
    out, code = done['diverge']
    assert code != 0, out[-6000:]
    work = tmp / 'diverge'
    records = json.loads((work / 'nonfinite.json').read_text())
    assert [r['in_a_row'] for r in records][-1] == 3
    report = json.loads((work / FAILURE_REPORT_NAME).read_text())
    assert report['cause']['key'] == 'nonfinite', report['cause']
    text, code = done['report']
    assert code == 0 and 'Likely cause: non-finite steps' in text, text
    saved = sorted(work.glob('iter_*.pth'))
    assert saved and all(_finite(p) for p in saved)
    last = Path((work / 'last_checkpoint').read_text().strip())
    assert last in saved


def test_a_poisoned_checkpoint_is_never_written(runs):
    tmp, done = runs
    out, code = done['poisoned']
    work = tmp / 'poisoned'
    assert code != 0 and 'NonFiniteStateError' in out, out[-6000:]
    assert sorted(int(p.stem[5:]) for p in work.glob('iter_*.pth')) == [
        1, 2, 3, 4]
    assert ('iter_5.pth not written: model.fc1.weight holds NaN or Inf, and '
            'the run stops') in out
    assert (work / 'last_checkpoint').read_text().strip().endswith(
        'iter_4.pth')
