"""``tools/replay_step.py``: one recorded training step again, in one
process: the batch a rank trained at iteration N, rebuilt from the data
position of the checkpoint before it (every sample from its own random
state, as in the run), through the checkpoint's weights; its loss terms,
its samples and the first module whose output is not finite."""
import json
import os.path as osp
from pathlib import Path
from typing import List, Optional, Tuple

import torch

from ..config.loading import load_config
from ..engine.nonfinite.first_module import first_nonfinite_module
from ..engine.nonfinite.records import (RECORDS_FILE, batch_samples,
                                        loss_terms, nonfinite_terms,
                                        sample_tokens)
from ..engine.resume.position import META_KEY
from ..engine.resume.sample_key import seed_iteration
from ..engine.resume.sampler import ResumableSampler
from .runner_setup import build_runner


def _record(work: Path, iteration: int) -> Optional[dict]:
    path = work / RECORDS_FILE
    if not path.is_file():
        return None
    return next((r for r in json.loads(path.read_text())
                 if r['iteration'] == iteration), None)


def _checkpoint_before(work: Path, iteration: int) -> Tuple[Path, int]:
    """The newest ``iter_K.pth`` of ``work`` with K < ``iteration``."""
    found = sorted((int(p.stem[5:]), p) for p in work.glob('iter_*.pth')
                   if p.stem[5:].isdigit() and int(p.stem[5:]) < iteration)
    if not found:
        raise FileNotFoundError(
            f'replay_step: no iter_K.pth with K < {iteration} in {work}. '
            'Fix: replay an iteration after the first checkpoint (the run '
            'saves by iteration with CheckpointHook(by_epoch=False))')
    return found[-1][1], found[-1][0]


def _dumped_config(work: Path) -> Path:
    configs = sorted(work.glob('*.py'))
    if len(configs) != 1:
        raise FileNotFoundError(
            f'replay_step: {len(configs)} config files in {work} '
            f'({", ".join(p.name for p in configs) or "none"}). Fix: name '
            "the run's config with --config")
    return configs[0]


def batch_keys(sampler: ResumableSampler, position: dict, rank: int,
               skip: int, drop_last: bool) -> List:
    """The sample keys of rank ``rank``'s batch ``skip`` batches after
    the checkpoint's ``position`` (``meta['data_position']``), as the
    resumed sampler would yield them."""
    sampler.seed = int(position['seed'])
    sampler.rank, sampler.world_size = rank, int(position['world_size'])
    size = int(position['batch_size'])
    epoch, start, seen = int(position['epoch']), int(position['position']), 0
    while True:
        sampler.set_epoch(epoch)
        sampler.resume_at(epoch, start)
        batch = []
        for key in sampler:
            batch.append(key)
            if len(batch) == size:
                if seen == skip:
                    return batch
                seen, batch = seen + 1, []
        if batch and not drop_last:
            if seen == skip:
                return batch
            seen += 1
        epoch, start = epoch + 1, 0


def replay_step(args) -> dict:
    """Replay ``args.iteration`` of ``args.rank`` from ``args.work_dir``
    and print what it found; returns it."""
    work = Path(args.work_dir)
    record = _record(work, args.iteration)
    rank = args.rank
    if rank is None:
        rank = record['ranks'][0]['rank'] if record else 0
    checkpoint, done = _checkpoint_before(work, args.iteration)
    meta = torch.load(checkpoint, map_location='cpu',
                      weights_only=False).get('meta', {})
    position = meta.get(META_KEY)
    if position is None:
        raise ValueError(
            f'replay_step: {checkpoint.name} has no data position (saved '
            'without exact resume). Fix: replay a run of the plugin\'s '
            'tools/train.py with exact resume on')

    cfg = load_config(str(args.config or _dumped_config(work)))
    cfg.work_dir = str(work / 'replay_step')
    cfg.launcher, cfg.resume, cfg.load_from = 'none', False, None
    cfg.train_dataloader.update(num_workers=0, persistent_workers=False)
    runner = build_runner(cfg)
    loader = runner.train_loop.dataloader
    if not isinstance(loader.sampler, ResumableSampler):
        raise ValueError(
            'replay_step: the train sampler is not ResumableSampler, so '
            'the batch cannot be rebuilt. Fix: replay a run with exact '
            'resume on (the default of tools/train.py)')
    keys = batch_keys(loader.sampler, position, rank,
                      args.iteration - done - 1, loader.drop_last)
    batch = loader.collate_fn(loader.dataset.__getitems__(keys))

    runner.load_checkpoint(str(checkpoint))
    model = runner.model
    model.train()
    seed_iteration(int(position['seed']), rank, args.iteration - 1)
    with torch.no_grad():
        data = model.data_preprocessor(batch, True)
        _, log_vars = model.parse_losses(model._run_forward(data,
                                                            mode='loss'))
    terms = loss_terms(log_vars)
    first, bad_inputs = first_nonfinite_module(model, batch)
    found = dict(
        iteration=args.iteration, rank=rank,
        world_size=int(position['world_size']), checkpoint=str(checkpoint),
        dataset_indices=[int(key) for key in keys],
        samples=batch_samples(batch, sample_tokens(loader.dataset)),
        loss_terms=terms, nonfinite_terms=nonfinite_terms(terms),
        nonfinite_inputs=bad_inputs, first_module=first)
    _print(found, done, record)
    return found


def _print(found: dict, done: int, record: Optional[dict]) -> None:
    note = ('' if done == found['iteration'] - 1 else
            f' (iterations {done + 1}-{found["iteration"] - 1} are not '
            f'replayed: the weights are iteration {done}\'s)')
    print(f'replay of iteration {found["iteration"]}, rank {found["rank"]} '
          f'of {found["world_size"]}, from {osp.basename(found["checkpoint"])}'
          f'{note}')
    print('  dataset indices: ' + ', '.join(map(str,
                                                found['dataset_indices'])))
    for sample in found['samples']:
        print('  sample ' + ', '.join(f'{k} {v}' for k, v in sample.items()))
    print('  loss terms: ' + ', '.join(
        f'{k}={v}' for k, v in found['loss_terms'].items()))
    print('  non-finite inputs: ' + (', '.join(found['nonfinite_inputs'])
                                     or 'none'))
    print(f'  first non-finite module: {found["first_module"] or "none"}')
    bad = bool(found['nonfinite_terms'])
    decision = 'skipped (non-finite loss)' if bad else 'kept'
    print(f'  decision: {decision}', end='')
    if record is None:
        print(f' (no record of iteration {found["iteration"]} in '
              f'{RECORDS_FILE})')
    else:
        mine = next((r for r in record['ranks']
                     if r['rank'] == found['rank']), None)
        same = (mine is not None and bad and mine['first_module'] ==
                found['first_module'] and mine['samples'] == found['samples']
                and mine.get('dataset_indices') in (
                    None, found['dataset_indices']))
        print(f'; the run skipped it: {"the same" if same else "differs"}')
