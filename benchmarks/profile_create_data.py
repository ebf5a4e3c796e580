"""Where ``tools/create_data.py``'s per-sample time goes: each phase's
per-sample work in one process, on the benchmark's generated root.

- infos: ``create_data.infos.SampleInfoBuilder.build`` of every sample
  (the devkit's tables read once, as the tool reads them);
- GT database: ``create_data.gt_database.sample_objects`` of every train
  sample, its files written into a new folder of ``<root>_profile_db``
  each run (removed after). On this machine's ext4 (no journal) a file
  created within 60 s of removing others costs up to ~1 ms more: the GT
  phase waits for the removals of earlier runs of this script or of
  ``bench_create_data.py`` on the root to settle
  (``bench_create_data.settle_deletions``).

Each phase runs 20 samples to warm up, then all of them timed twice
(``time.process_time``: CPU ms a sample, the faster run counts: the
machine may be shared), then all of them again under
``cProfile``, whose functions are printed by their own time (the share of
the profiled run's total; the profiler slows small Python calls more than
numpy or numba ones). One BLAS thread, as the tool runs. Writes JSON
(default ``benchmarks/results/profile_create_data.json``)::

    python benchmarks/profile_create_data.py [--root data/bench_create_data]
        [--top 15]
"""
import argparse
import cProfile
import json
import os
import os.path as osp
import pstats
import shutil
import sys
import time

REPO = osp.dirname(osp.dirname(osp.abspath(__file__)))
if REPO not in sys.path:
    sys.path.insert(0, REPO)

WARMUP = 20


def _measure(name: str, items: list, make_work, top: int) -> dict:
    """The warm-up, two timed runs (the faster counts) and the profiled
    run, each with its own ``make_work(run)`` (fresh caches, a new
    folder)."""
    work = make_work('warmup')
    for item in items[:WARMUP]:
        work(item)
    cpu = []
    for run in range(2):
        work = make_work(f'run{run}')
        start = time.process_time()
        for item in items:
            work(item)
        cpu.append(time.process_time() - start)
    cpu_ms = min(cpu) / len(items) * 1000
    work = make_work('profiled')
    profile = cProfile.Profile()
    profile.enable()
    for item in items:
        work(item)
    profile.disable()
    stats = pstats.Stats(profile)
    total = sum(row[2] for row in stats.stats.values())
    rows = sorted(stats.stats.items(), key=lambda kv: -kv[1][2])[:top]
    functions = [
        dict(function=f'{osp.relpath(path, REPO) if path.startswith(REPO) else osp.basename(path)}:{line}({func})',  # noqa: E501
             calls=row[1], own_s=row[2], share=row[2] / total)
        for (path, line, func), row in rows
    ]
    print(f'\n{name}: {len(items)} samples, {cpu_ms:.2f} ms CPU a sample '
          f'(the faster of two runs: '
          f'{", ".join(f"{c / len(items) * 1000:.2f}" for c in cpu)}); '
          f'profiled {total:.2f} s, by own time:')
    for f in functions:
        print(f'  {f["share"] * 100:5.1f}%  {f["calls"]:>7}  {f["function"]}')
    return dict(samples=len(items), cpu_ms_per_sample=cpu_ms,
                profiled_s=total, functions=functions)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--root', default=osp.join(REPO, 'data',
                                                   'bench_create_data'))
    parser.add_argument('--top', type=int, default=15)
    parser.add_argument(
        '--json',
        default=osp.join(REPO, 'benchmarks', 'results',
                         'profile_create_data.json'))
    args = parser.parse_args()
    root = osp.abspath(args.root)
    if not osp.isdir(osp.join(root, 'v1.0-mini')):
        sys.exit(f'profile_create_data: expected a generated root at {root}; '
                 'got none; run benchmarks/bench_create_data.py once (it '
                 'generates it) or pass --root.')
    import numpy  # noqa: F401 (loads the BLAS threadpoolctl limits)
    from threadpoolctl import threadpool_limits
    threadpool_limits(limits=1, user_api='blas')

    from benchmarks.bench_create_data import settle_deletions, stamp_removal
    from projects.mmdet3d_plugin.create_data import gt_database
    from projects.mmdet3d_plugin.create_data.infos import SampleInfoBuilder
    from projects.mmdet3d_plugin.create_data.prepare import \
        split_scene_tokens
    from projects.mmdet3d_plugin.create_data.upstream import devkit_tables
    nusc = devkit_tables('v1.0-mini', root)
    train_scenes, _ = split_scene_tokens(nusc, 'v1.0-mini')
    results = dict(root=root)
    # a new builder each run: it keeps matrices and velocities by token
    results['infos'] = _measure(
        'infos', nusc.sample,
        lambda run: SampleInfoBuilder(nusc, False, 10).build, args.top)
    builder = SampleInfoBuilder(nusc, False, 10)

    train = []
    for sample in nusc.sample:
        if sample['scene_token'] in train_scenes:
            info, _ = builder.build(sample)
            info['sample_idx'] = len(train)
            train.append(info)
    gt_database.compile_kernels()
    parser_ = gt_database.TrainInfoParser(root)
    db_dir = root.rstrip('/') + '_profile_db'

    def objects(run):
        # each run creates its files, as the tool does (a new folder)
        folder = osp.join(db_dir, run)
        os.makedirs(folder)
        return lambda info: gt_database.sample_objects(
            parser_, info, info['sample_idx'], folder, 'nuscenes')

    shutil.rmtree(db_dir, ignore_errors=True)
    settle_deletions(root)
    try:
        results['gt'] = _measure('GT database', train, objects, args.top)
    finally:
        shutil.rmtree(db_dir, ignore_errors=True)
        stamp_removal(root)
    os.makedirs(osp.dirname(args.json), exist_ok=True)
    with open(args.json, 'w') as f:
        json.dump(results, f, indent=2)
    print(f'wrote {args.json}')


if __name__ == '__main__':
    main()
