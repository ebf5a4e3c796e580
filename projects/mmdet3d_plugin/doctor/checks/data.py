"""Doctor checks of data loading: the datasets build, pickle for the
workers' start method, and a real DataLoader delivers its first batch."""
import copy
import time
from typing import Any

from ...datasets.builder import build_split_dataset
from ...datasets.wrappers import dataset_name
from ...pickling.audit import find_offenders, fix_hint
from ..context import (CheckResult, DoctorContext, describe_exception, failed,
                       known_fix, one_line, passed, warned)

#: Pickled bytes per worker above which the doctor warns.
LARGE_PICKLE = 256 * 2**20
#: Workers the first-batch check starts at most.
MAX_WORKERS = 2
#: Seconds to wait for a batch before calling the workers hung.
BATCH_TIMEOUT = 300


def _mib(num_bytes: int) -> str:
    if num_bytes < 2**20:
        return f'{num_bytes / 2**10:.1f} KiB'
    return f'{num_bytes / 2**20:.1f} MiB'


def build_dataset(ctx: DoctorContext, split: str) -> CheckResult:
    """Build ``<split>_dataloader.dataset`` as the Runner does."""
    check = f'data.dataset.{split}'
    loader = ctx.cfg.get(f'{split}_dataloader')
    if not loader or 'dataset' not in loader:
        if split == 'train':
            return failed(check, 'the config has no train_dataloader.dataset',
                          'inherit a dataset config, e.g. _base_ = '
                          "['../_base_/datasets/nus-3d.py']")
        ctx.provide(f'dataset.{split}', None)
        return passed(check, f'no {split}_dataloader (nothing to check)')
    start = time.perf_counter()
    dataset = build_split_dataset(ctx.cfg, split)
    if hasattr(dataset, 'full_init'):
        dataset.full_init()
    seconds = time.perf_counter() - start
    ctx.provide(f'dataset.{split}', dataset)
    if len(dataset) == 0:
        return failed(
            check, f'{dataset_name(dataset)} is empty',
            f'point {split}_dataloader.dataset.ann_file at an info file '
            'with samples (check the split and the class filter)')
    return passed(
        check, f'{dataset_name(dataset)}: {len(dataset)} samples, built '
        f'in {seconds:.1f} s')


def check_pickle(ctx: DoctorContext, split: str) -> CheckResult:
    """The dataset pickles as a spawn / forkserver worker receives it."""
    from multiprocessing.reduction import ForkingPickler

    check = f'data.pickle.{split}'
    dataset = ctx.artifacts[f'dataset.{split}']
    if dataset is None:
        return passed(check, f'no {split}_dataloader (nothing to check)')
    method = ctx.artifacts['start_method']
    loader = ctx.cfg.get(f'{split}_dataloader') or {}
    workers = int(loader.get('num_workers', 0) or 0)
    try:
        start = time.perf_counter()
        size = len(ForkingPickler.dumps(dataset))
        seconds = time.perf_counter() - start
    except Exception as exc:  # pickle raises many kinds of error
        offenders = find_offenders(dataset, time_limit=20.0)
        if offenders:
            listed = '; '.join(str(o) for o in offenders[:3])
            first = offenders[0]
            fix = (f'make `{first.path}` of {dataset_name(dataset)} '
                   f'picklable: {fix_hint(first.obj)}')
        else:
            listed = f'{type(exc).__name__}: {exc}'
            fix = ('make every attribute of the dataset and its pipeline '
                   'picklable (module-level classes and functions)')
        if method == 'fork':
            return warned(
                check, one_line(
                    f"workers start with 'fork', so this run does not pickle "
                    'the dataset, but spawn / forkserver would fail: '
                    f'{listed}'), fix)
        return failed(
            check, one_line(
                f"{method!r} workers cannot receive the dataset: {listed}"),
            fix + "; or, where fork is safe, env_cfg = dict(mp_cfg=dict("
            "mp_start_method='fork'))")
    per_worker = f'{_mib(size)} pickled in {seconds:.2f} s'
    if method == 'fork':
        return passed(
            check, f"workers start with 'fork' and inherit the dataset; for "
            f'spawn it would be {per_worker} per worker')
    total = size * max(workers, 1)
    detail = (f'{per_worker} for each of {workers} {method} worker(s) '
              f'({_mib(total)} per process)')
    if size > LARGE_PICKLE:
        return warned(
            check, detail, f'every {method} worker unpickles its own copy: '
            f'lower {split}_dataloader.num_workers, or keep the infos in '
            "shared memory (type='SafeNuScenesDataset', serialize_data=True)")
    return passed(check, detail)


def check_first_batch(ctx: DoctorContext) -> CheckResult:
    """A real DataLoader with 1-2 workers under the run's start method
    delivers its first batch; the iterator is kept for the model check."""
    from mmengine.registry import init_default_scope
    from mmengine.runner import Runner
    dataset = ctx.artifacts['dataset.train']
    method = ctx.artifacts['start_method']
    loader_cfg = copy.deepcopy(dict(ctx.cfg.train_dataloader))
    configured = int(loader_cfg.get('num_workers', 0) or 0)
    workers = min(max(configured, 1), MAX_WORKERS)
    loader_cfg.update(
        dataset=prebuilt(dataset),
        num_workers=workers,
        persistent_workers=False,
        multiprocessing_context=method)
    if not loader_cfg.get('timeout'):
        loader_cfg['timeout'] = BATCH_TIMEOUT
    init_default_scope(ctx.cfg.get('default_scope', 'mmdet3d'))
    seed = (ctx.cfg.get('randomness') or {}).get('seed')
    loader = Runner.build_dataloader(loader_cfg, seed=seed)
    start = time.perf_counter()
    try:
        iterator = iter(loader)
        batch = next(iterator)
    except Exception as exc:  # from the workers or from starting them
        pickle_line = [
            r for r in ctx.results
            if r.check == 'data.pickle.train' and r.status != 'pass'
        ]
        if pickle_line:
            fix = ('fix data.pickle.train first: the workers cannot receive '
                   'the dataset')
        else:
            fix = known_fix(exc) or (
                'the error comes from loading a sample in a worker; '
                'reproduce it with train_dataloader.num_workers=0')
        return failed('data.first_batch', describe_exception(exc), fix)
    seconds = time.perf_counter() - start
    ctx.provide('train_loader', loader)
    ctx.provide('train_iterator', iterator)
    ctx.artifacts['first_batch'] = batch
    size = _batch_len(batch)
    return passed(
        'data.first_batch', f'first batch ({size} samples) in {seconds:.1f} '
        f's from {workers} {method} worker(s), worker start-up included '
        f'(the run uses {configured} per process)')


def prebuilt(dataset: Any) -> dict:
    """A dataset config that builds to ``dataset`` itself.

    ``Runner.build_dataloader`` deep-copies its config, which a dataset that
    refuses to be pickled (``SafeNuScenesDataset`` with a lambda in its
    pipeline) also refuses; a function is copied by reference, so the
    already built dataset reaches the DataLoader untouched.
    """

    def build():
        return dataset

    return dict(type=build)


def _batch_len(batch: Any) -> int:
    if isinstance(batch, dict):
        for value in batch.values():
            if isinstance(value, (list, tuple)):
                return len(value)
            if hasattr(value, '__len__'):
                return len(value)
    if isinstance(batch, (list, tuple)):
        return len(batch)
    return 1
