"""``tools/create_data.py``'s nuScenes preparation: mmdet3d's converter's
products, computed in parallel shards and resumable.

:func:`create_nuscenes_infos` writes what mmdet3d 1.4.0's ``tools/
create_data.py nuscenes`` writes for one version (the v2 info files,
``<prefix>_dbinfos_train.pkl`` and ``<prefix>_gt_database/``), equal to
them (docs/data_preparation.md), in two phases over worker processes:

1. infos: the devkit's tables read once, then each shard of samples (in
   the tables' order) built by :class:`~.infos.SampleInfoBuilder`; the
   shards merged into each split's list in the converter's order;
2. GT database: each shard of train samples by
   :func:`~.gt_database.sample_objects`, its files written into the work
   folder; the shards' objects merged, ``group_id`` numbered across them.

Each finished shard is on disk (:mod:`.shards`), so a killed run started
again with the same arguments redoes only the shards it lacks. The
products are written only at the end, each to a temporary name renamed
into place; a bad file stops the run with its name and sample token before
that, leaving earlier products as they were.
"""
import gc
import os
import pickle
import shutil
import time
from pathlib import Path
from typing import Dict, List, Optional, Set, Union

from threadpoolctl import threadpool_limits

from .converter import VERSION_SPLITS, checked_root, info_paths
from .fragments import (add_fragment, end_info_file, load_fragment,
                        pickle_fragment, start_info_file)
from .infos import CLASSES, SampleInfoBuilder
from .parallel import pending, run_shards
from .shards import ShardStore, replace_path, shard_ranges, work_key
from .upstream import converter_helpers, devkit_tables

#: The most samples per shard (both phases) unless told otherwise.
DEFAULT_SHARD_SIZE = 64
#: Without a shard size, a phase is cut into at least this many shards (of
#: at most :data:`DEFAULT_SHARD_SIZE` samples): on a small root (v1.0-mini)
#: a few 64-sample shards leave a worker idle while the last one runs.
MIN_SHARDS = 32
#: The layout of the shards on disk, part of the work folder's key: a
#: folder left by a killed run of a version with another layout is not
#: read (2: infos shards hold pickled fragments, :mod:`.fragments`).
SHARD_LAYOUT = 2

# The phase state the forked workers inherit.
_STATE: dict = {}


def split_scene_tokens(nusc, version: str):
    """The train and val scene tokens as the converter picks them (a
    scene of neither goes to val; ``v1.0-test``: its scenes as 'train')."""
    splits = converter_helpers()
    if version == 'v1.0-trainval':
        train, val = splits.train, splits.val
    elif version == 'v1.0-test':
        train, val = splits.test, []
    else:
        train, val = splits.mini_train, splits.mini_val
    by_name = {s['name']: s['token'] for s in nusc.scene}
    return ({by_name[n] for n in train if n in by_name},
            {by_name[n] for n in val if n in by_name})


def phase_shard_size(samples: int, shard_size: Optional[int]) -> int:
    """``shard_size``, or without one the phase's samples over
    :data:`MIN_SHARDS` (rounded up), at most :data:`DEFAULT_SHARD_SIZE`:
    a function of the data alone, so a restarted run cuts the same
    shards whatever its ``--workers``."""
    if shard_size is not None:
        return shard_size
    return max(1, min(DEFAULT_SHARD_SIZE, -(-samples // MIN_SHARDS)))


def _info_shard(index: int) -> int:
    """Build a shard's records and write them, each split's pickled as a
    fragment of its info file's list (:mod:`.fragments`), with the
    ignored classes of the split's last sample in the shard."""
    start, stop = _STATE['ranges'][index]
    builder, samples = _STATE['builder'], _STATE['samples']
    records: Dict[str, List[dict]] = {}
    last_ignored: Dict[str, Set[str]] = {}
    for i in range(start, stop):
        split, position = _STATE['places'][i]
        if split is None:
            continue
        info, last_ignored[split] = builder.build(samples[i])
        info['sample_idx'] = position
        records.setdefault(split, []).append(info)
    _STATE['store'].write(
        index,
        dict(
            last_ignored=last_ignored,
            fragments={
                split: pickle_fragment(rows)
                for split, rows in records.items()
            }))
    return stop - start


def _train_records(start: int, stop: int) -> List[dict]:
    """The train records ``[start, stop)``, read from the fragments of the
    infos shards that hold them (``train_spans``: each infos shard's first
    train record and count)."""
    records = []
    for index, (first, count) in enumerate(_STATE['train_spans']):
        if count and first < stop and first + count > start:
            shard = _STATE['info_store'].read(index)
            rows = load_fragment(shard['fragments']['train'])
            records += rows[max(start - first, 0):stop - first]
    return records


def _gt_shard(index: int) -> int:
    start, stop = _STATE['ranges'][index]
    objects = [
        _STATE['sample_objects'](_STATE['dataset'], info, i,
                                 _STATE['db_dir'], _STATE['info_prefix'])
        for i, info in zip(range(start, stop), _train_records(start, stop))
    ]
    _STATE['store'].write(index, objects)
    return stop - start


def _gt_startup(root: Path, timings: Dict[str, float]) -> dict:
    """The GT phase's state, for its workers to inherit: torch (for one
    mmdet3d step, :mod:`.gt_database`), the numba kernels compiled, the
    train infos' parser. Imported here, not at the top: without the GT
    database (``--no-gt-database``, the test version) torch never loads."""
    t0 = time.perf_counter()
    from .gt_database import TrainInfoParser, compile_kernels, sample_objects
    compile_kernels()
    timings['gt_startup_s'] = time.perf_counter() - t0
    return dict(
        dataset=TrainInfoParser(str(root)), sample_objects=sample_objects)


def _metainfo(last_ignored: Set[str], version: str) -> dict:
    """``update_nuscenes_infos``'s ``metainfo``: its categories take the
    ignored classes of the split's last sample, as mmdet3d 1.4.0's do."""
    categories = {k: i for i, k in enumerate(CLASSES)}
    for name in last_ignored:
        categories[name] = -1
    metainfo = dict(
        categories=categories,
        dataset='nuscenes',
        version=version,
        info_version='1.1')
    return metainfo


def phase_summary(timings: Dict[str, float]) -> str:
    """One line with each phase's samples, seconds and samples/s (the
    benchmark reads it); after a restart, the samples/s of those this run
    did (``<phase>_run_samples``)."""
    parts = []
    for phase, label in (('infos', 'infos'), ('gt', 'GT database')):
        if f'{phase}_s' in timings:
            n, sec = timings[f'{phase}_samples'], timings[f'{phase}_s']
            done = timings.get(f'{phase}_run_samples', n)
            rate = done / sec if sec > 0 else float('inf')
            what = f'{n} samples' if done == n else \
                f'{n} samples, {done} of them in this run,'
            parts.append(f'{label} {what} in {sec:.2f} s '
                         f'({rate:.1f} samples/s)')
    return 'create_data: ' + '; '.join(parts)


def create_nuscenes_infos(root_path: Union[str, Path],
                          out_dir: Optional[Union[str, Path]] = None,
                          info_prefix: str = 'nuscenes',
                          version: str = 'v1.0-mini',
                          max_sweeps: int = 10,
                          gt_database: bool = False,
                          workers: Optional[int] = None,
                          shard_size: Optional[int] = None,
                          timings: Optional[Dict[str, float]] = None
                          ) -> List[Path]:
    """Create the info files (and the GT database) of a nuScenes root.

    Args:
        root_path (str | Path): Dataset root holding ``<version>/*.json``,
            ``samples/``, ``sweeps/`` and ``maps/``.
        out_dir (str | Path, optional): Where the products go. Defaults to
            ``root_path``.
        info_prefix (str): File name prefix. Defaults to ``'nuscenes'``.
        version (str): ``'v1.0-mini'``, ``'v1.0-trainval'`` or
            ``'v1.0-test'`` (no GT database). Defaults to ``'v1.0-mini'``.
        max_sweeps (int): Sweeps per key frame. Defaults to 10.
        gt_database (bool): Also build the GT database for
            ``ObjectSample``. Defaults to False.
        workers (int, optional): Worker processes. Defaults to the cores
            this process may use.
        shard_size (int, optional): Samples per shard. Defaults to a
            phase's samples / :data:`MIN_SHARDS`, at most 64
            (:func:`phase_shard_size`).
        timings (dict, optional): Filled with each phase's samples and
            seconds: ``infos_samples``, ``infos_s`` (reading the tables,
            the shards, merging them, writing the info files; the first
            and the last also as ``tables_s``, ``infos_write_s``),
            ``gt_samples``, ``gt_s`` (the shards, merging them, writing
            the dbinfos and moving the folder into place); the samples
            this run did (the rest by an earlier one) as
            ``infos_run_samples``, ``gt_run_samples``; the GT phase's
            start-up (before the phases) as ``gt_startup_s``.

    Returns:
        list[Path]: The products (see :func:`.converter.info_paths`).
    """
    wanted = info_paths(
        out_dir or root_path, version, info_prefix, gt_database=gt_database)
    root = checked_root(root_path, version, max_sweeps)
    workers = workers or len(os.sched_getaffinity(0))
    timings = {} if timings is None else timings
    # One BLAS thread, as for mmdet3d's converter: the per-record 3x3
    # inversions and small products wait on OpenBLAS's threads otherwise
    # (milliseconds each on a busy machine); the workers inherit it.
    with threadpool_limits(limits=1, user_api='blas'):
        _prepare(root, Path(out_dir or root).resolve(), info_prefix, version,
                 max_sweeps, gt_database, workers, shard_size, timings)
    return wanted


def _prepare(root: Path, out: Path, info_prefix: str, version: str,
             max_sweeps: int, gt_database: bool, workers: int,
             shard_size: Optional[int], timings: Dict[str, float]) -> None:
    """The two phases and the products (see :func:`create_nuscenes_infos`).
    """
    out.mkdir(parents=True, exist_ok=True)
    gt_database = gt_database and 'train' in VERSION_SPLITS[version]
    work = out / ('.create_data-' + work_key(
        str(root), version, info_prefix, max_sweeps, gt_database,
        shard_size, SHARD_LAYOUT))
    splits = VERSION_SPLITS[version]
    test = version == 'v1.0-test'

    # The GT phase's start-up (torch for one mmdet3d step, the numba
    # kernels compiled) before the phases are timed, and before forking:
    # the infos need neither (nor mmdet3d, nor the devkit's package:
    # .upstream). Run during the infos shards instead, in a thread, it took
    # as long, sharing the cores with the workers.
    gt_state = _gt_startup(root, timings) if gt_database else None

    # Phase 1: infos.
    t_infos = time.perf_counter()
    gc.disable()
    try:
        nusc = devkit_tables(version, str(root))
    finally:
        gc.enable()
    train_scenes, _ = split_scene_tokens(nusc, version)
    timings['tables_s'] = time.perf_counter() - t_infos

    # each sample's split and place in it (None: in no split)
    places, counts = [], {split: 0 for split in splits}
    for sample in nusc.sample:
        split = splits[0] if sample['scene_token'] in train_scenes else (
            None if test else 'val')
        places.append((split, counts[split] if split else None))
        if split:
            counts[split] += 1

    info_ranges = shard_ranges(
        len(nusc.sample), phase_shard_size(len(nusc.sample), shard_size))
    info_store = ShardStore(work / 'infos')
    _STATE.update(
        builder=SampleInfoBuilder(nusc, test, max_sweeps),
        samples=nusc.sample,
        places=places,
        ranges=info_ranges,
        store=info_store)
    try:
        shards, sizes = pending(info_store.done(len(info_ranges)),
                                info_ranges)
        timings['infos_samples'] = len(nusc.sample)
        timings['infos_run_samples'] = sum(sizes)
        timings['infos_shards_s'] = run_shards(
            'infos', _info_shard, shards, sizes, workers, len(nusc.sample))
    finally:
        _STATE.clear()
    del nusc

    # The info files from the shards' fragments, one shard in memory at a
    # time (the categories need each split's last ignored classes first).
    t0 = time.perf_counter()
    last_ignored = {split: set() for split in splits}
    for shard in info_store.read_all(len(info_ranges)):
        last_ignored.update(shard['last_ignored'])
    staged = []
    files = {}
    try:
        for split in splits:
            path = out / f'{info_prefix}_infos_{split}.pkl'
            files[split] = open(work / path.name, 'wb')
            start_info_file(files[split],
                            _metainfo(last_ignored[split], version))
            staged.append((work / path.name, path))
        for shard in info_store.read_all(len(info_ranges)):
            for split, fragment in shard['fragments'].items():
                add_fragment(files[split], fragment)
        for f in files.values():
            end_info_file(f)
    finally:
        for f in files.values():
            f.close()
    timings['infos_write_s'] = time.perf_counter() - t0
    timings['infos_s'] = time.perf_counter() - t_infos

    # Phase 2: the GT database of the train split.
    if gt_database:
        t_gt = time.perf_counter()
        db_dir = work / 'gt' / 'database'
        db_dir.mkdir(parents=True, exist_ok=True)
        # the workers read their samples' records from the infos shards
        train_count = counts['train']
        train_spans = []
        for start, stop in info_ranges:
            rows = [p for split, p in places[start:stop] if split == 'train']
            train_spans.append((rows[0] if rows else 0, len(rows)))
        gt_ranges = shard_ranges(train_count,
                                 phase_shard_size(train_count, shard_size))
        store_gt = ShardStore(work / 'gt')
        _STATE.update(
            gt_state,
            train_spans=train_spans,
            info_store=info_store,
            ranges=gt_ranges,
            store=store_gt,
            db_dir=str(db_dir),
            info_prefix=info_prefix)
        try:
            shards, sizes = pending(store_gt.done(len(gt_ranges)), gt_ranges)
            timings['gt_samples'] = train_count
            timings['gt_run_samples'] = sum(sizes)
            timings['gt_shards_s'] = run_shards(
                'GT database', _gt_shard, shards, sizes, workers,
                train_count)
        finally:
            _STATE.clear()
        all_db_infos: Dict[str, list] = {}
        group_counter = 0
        for shard in store_gt.read_all(len(gt_ranges)):
            for objects in shard:
                for name, db_info in objects:
                    db_info['group_id'] += group_counter
                    all_db_infos.setdefault(name, []).append(db_info)
                group_counter += len(objects)
        with open(work / f'{info_prefix}_dbinfos_train.pkl', 'wb') as f:
            pickle.dump(all_db_infos, f)

    # The products, each complete, renamed into place.
    for tmp, path in staged:
        replace_path(tmp, path)
    if gt_database:
        replace_path(work / f'{info_prefix}_dbinfos_train.pkl',
                     out / f'{info_prefix}_dbinfos_train.pkl')
        replace_path(db_dir, out / f'{info_prefix}_gt_database')
        timings['gt_s'] = time.perf_counter() - t_gt
    shutil.rmtree(work, ignore_errors=True)
