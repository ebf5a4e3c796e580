"""What DataLoader workers cost to start, stock NuScenesDataset vs ours.

Writes a synthetic info file of nuScenes-trainval size (28,130 infos with
cameras, 10 LiDAR sweeps with transforms, ~40 instances and their camera
projections each; no point or image files), then for the stock
``NuScenesDataset`` and ``SafeNuScenesDataset`` under fork, spawn and
forkserver measures:

- bytes pickled per worker (what each spawn / forkserver worker receives;
  fork workers inherit the dataset and receive nothing);
- time to the first batch, from ``iter(loader)``; for forkserver also a
  second ("warm") iterator, once the fork server runs;
- time to iterate ``--batches`` batches;
- summed worker memory (USS and PSS from ``/proc/<pid>/smaps_rollup``) after
  those batches, and the same minus the workers' memory at 2 infos (the
  part that grows with the dataset);
- under spawn, the USS that as many fresh processes pay just to import torch,
  and to import the dataset's module (the floor any spawned worker pays,
  whatever the dataset holds).

Each dataset class runs in its own process: the stock one with Python's
default fork server, ours after ``setup_forkserver_preload(start=True)``, as
the plugin's tools call it where the start method is set. The pipeline only
reads infos (``LoadAnnotations3D`` + ``Pack3DDetInputs``). Prints a table
with stock / ours ratios and the targets, and writes JSON.

    python benchmarks/bench_worker_start.py --infos 28130 --workers 4 \
        --out work_dirs/bench_worker_start.json
    python benchmarks/bench_worker_start.py --smoke
"""
# Spawned and forkserver workers import this file as __mp_main__: keep the
# module level light, heavy imports live inside functions.
import argparse
import json
import multiprocessing
import os
import os.path as osp
import subprocess
import sys
import tempfile
import time

REPO = osp.dirname(osp.dirname(osp.abspath(__file__)))
if REPO not in sys.path:
    sys.path.insert(0, REPO)

METHODS = ('fork', 'spawn', 'forkserver')
CLASSES = ('NuScenesDataset', 'SafeNuScenesDataset')
SMALL_INFOS = 2
PIPELINE = [
    dict(type='LoadAnnotations3D', with_bbox_3d=True, with_label_3d=True),
    dict(type='Pack3DDetInputs', keys=['gt_bboxes_3d', 'gt_labels_3d']),
]
PREFIX = dict(pts='samples/LIDAR_TOP', img='', sweeps='sweeps/LIDAR_TOP')


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--infos', type=int, default=28130)
    parser.add_argument('--workers', type=int, default=4)
    parser.add_argument('--batches', type=int, default=200)
    parser.add_argument('--batch-size', type=int, default=4)
    parser.add_argument('--methods',
                        nargs='+',
                        default=list(METHODS),
                        choices=METHODS)
    parser.add_argument(
        '--smoke',
        action='store_true',
        help='64 infos, 2 workers, 5 batches: checks that it runs')
    parser.add_argument('--out',
                        default=osp.join(REPO, 'work_dirs',
                                         'bench_worker_start.json'))
    parser.add_argument('--work-dir',
                        default=None,
                        help='where the info files go (default: a temp dir)')
    parser.add_argument('--child', choices=CLASSES, help=argparse.SUPPRESS)
    parser.add_argument('--child-out', help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.smoke:
        args.infos, args.workers, args.batches = 64, 2, 5
    if args.infos < args.batches * args.batch_size:
        args.batches = max(1, args.infos // args.batch_size)
    return args


# --------------------------------------------------------------- memory


def _ppid_map():
    parents = {}
    for name in os.listdir('/proc'):
        if not name.isdigit():
            continue
        try:
            with open(f'/proc/{name}/stat') as f:
                stat = f.read()
        except OSError:
            continue
        # Fields after the command name, which may contain spaces.
        fields = stat[stat.rindex(')') + 2:].split()
        parents[int(name)] = int(fields[1])
    return parents


def _descendants(pid):
    children = {}
    for child, parent in _ppid_map().items():
        children.setdefault(parent, []).append(child)
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return set(found), children


def _cmdline(pid):
    try:
        with open(f'/proc/{pid}/cmdline', 'rb') as f:
            return f.read().replace(b'\0', b' ').decode(errors='replace')
    except OSError:
        return ''


def worker_pids(before):
    """DataLoader workers: new descendants that are not helper servers."""
    now, children = _descendants(os.getpid())
    return sorted(
        pid for pid in now - before
        if not children.get(pid) and 'resource_tracker' not in _cmdline(pid))


def memory_of(pids):
    """Summed USS and PSS of ``pids`` in bytes."""
    uss = pss = 0
    for pid in pids:
        fields = {}
        with open(f'/proc/{pid}/smaps_rollup') as f:
            for line in f:
                parts = line.split()
                if len(parts) >= 3 and parts[-1] == 'kB':
                    fields[parts[0].rstrip(':')] = int(parts[1]) * 1024
        uss += fields.get('Private_Clean', 0) + fields.get('Private_Dirty', 0)
        pss += fields.get('Pss', 0)
    return uss, pss


def _import_probe(modules, conn):
    """Runs in a spawned process: import ``modules``, send back USS/PSS."""
    import importlib
    for name in modules:
        importlib.import_module(name)
    conn.send(memory_of([os.getpid()]))
    conn.close()


def import_floor(dataset, workers):
    """USS that ``workers`` spawned processes pay for imports alone.

    A spawned worker starts a fresh interpreter, so whatever it imports to
    unpickle the dataset is private to it however the infos are shared. Each
    probe runs while this process holds the same libraries, so shared file
    pages count as shared, as they do for real workers.
    """
    probes = dict(torch=['torch'],
                  dataset=['torch', type(dataset).__module__])
    ctx = multiprocessing.get_context('spawn')
    floor = {}
    for name, modules in probes.items():
        recv, send = ctx.Pipe(duplex=False)
        proc = ctx.Process(target=_import_probe, args=(modules, send))
        proc.start()
        uss, pss = recv.recv()
        proc.join()
        floor[name] = dict(modules=modules,
                           uss_bytes=uss * workers,
                           pss_bytes=pss * workers)
    return floor


# ---------------------------------------------------------------- child


def _build(cls_name, ann_file):
    from mmengine.registry import init_default_scope
    from mmdet3d.registry import DATASETS
    init_default_scope('mmdet3d')
    return DATASETS.build(
        dict(type=cls_name,
             data_root='',
             ann_file=ann_file,
             data_prefix=PREFIX,
             pipeline=PIPELINE))


def _loader(dataset, method, workers, batch_size):
    from mmengine.dataset import pseudo_collate
    from torch.utils.data import DataLoader
    return DataLoader(dataset,
                      batch_size=batch_size,
                      shuffle=False,
                      num_workers=workers,
                      multiprocessing_context=method,
                      collate_fn=pseudo_collate,
                      persistent_workers=False)


def _run_loader(dataset, method, workers, batch_size, batches):
    """First-batch time, time for ``batches`` batches, worker memory."""
    before, _ = _descendants(os.getpid())
    loader = _loader(dataset, method, workers, batch_size)
    start = time.perf_counter()
    it = iter(loader)
    next(it)
    first = time.perf_counter() - start
    for _ in range(batches - 1):
        next(it)
    total = time.perf_counter() - start
    pids = worker_pids(before)
    uss, pss = memory_of(pids)
    del it
    return dict(first_batch_s=first,
                iter_s=total,
                workers=len(pids),
                uss_bytes=uss,
                pss_bytes=pss)


def run_child(args):
    """Measure one dataset class under every start method."""
    from multiprocessing.reduction import ForkingPickler
    if args.child == 'SafeNuScenesDataset':
        from projects.mmdet3d_plugin.datasets.forkserver import (
            setup_forkserver_preload)
        setup_forkserver_preload(start=True)
    import projects.mmdet3d_plugin  # noqa: F401  registers the dataset
    start = time.perf_counter()
    big = _build(args.child, args.big_file)
    build_s = time.perf_counter() - start
    small = _build(args.child, args.small_file)
    payload = big.data_bytes.nbytes + big.data_address.nbytes
    start = time.perf_counter()
    pickled = len(ForkingPickler.dumps(big))
    pickle_s = time.perf_counter() - start
    result = dict(cls=args.child,
                  infos=args.infos,
                  build_s=build_s,
                  payload_bytes=payload,
                  pickled_bytes=pickled,
                  pickle_s=pickle_s,
                  methods={})
    for method in args.methods:
        row = _run_loader(big, method, args.workers, args.batch_size,
                          args.batches)
        if method == 'forkserver':
            warm = _run_loader(big, method, args.workers, args.batch_size, 1)
            row['first_batch_warm_s'] = warm['first_batch_s']
        base = _run_loader(small, method, args.workers, args.batch_size, 1)
        row['small_first_batch_s'] = base['first_batch_s']
        row['small_uss_bytes'] = base['uss_bytes']
        row['small_pss_bytes'] = base['pss_bytes']
        row['pickled_bytes'] = 0 if method == 'fork' else pickled
        result['methods'][method] = row
        print(f'[{args.child}] {method}: {row}', flush=True)
    if 'spawn' in args.methods:
        result['import_floor'] = import_floor(big, args.workers)
        print(f'[{args.child}] import floor: {result["import_floor"]}',
              flush=True)
    with open(args.child_out, 'w') as f:
        json.dump(result, f, indent=2)


# --------------------------------------------------------------- parent


def _mb(n):
    return f'{n / 2**20:,.1f} MB'


def _s(x):
    return f'{x:.2f} s'


def _ratio(a, b):
    return f'{a / b:.2f}x' if b else '-'


def format_table(results, args):
    stock, ours = results['NuScenesDataset'], results['SafeNuScenesDataset']
    lines = [
        f'{args.infos} infos, payload {_mb(ours["payload_bytes"])} '
        f'(stock {_mb(stock["payload_bytes"])}), {args.workers} workers, '
        f'{args.batches} batches of {args.batch_size}',
        f'{"method":<11}{"measure":<30}{"stock":>14}{"ours":>14}'
        f'{"stock/ours":>12}'
    ]

    def row(method, name, key, fmt, delta=None):
        s, o = stock['methods'][method], ours['methods'][method]
        sv = s[key] - (s[delta] if delta else 0)
        ov = o[key] - (o[delta] if delta else 0)
        lines.append(f'{method:<11}{name:<30}{fmt(sv):>14}{fmt(ov):>14}'
                     f'{_ratio(sv, ov):>12}')

    for method in args.methods:
        row(method, 'pickled per worker', 'pickled_bytes',
            lambda n: f'{n:,} B')
        row(method, 'first batch', 'first_batch_s', _s)
        if method == 'forkserver':
            row(method, 'first batch (warm server)', 'first_batch_warm_s', _s)
        row(method, f'first batch @{SMALL_INFOS} infos', 'small_first_batch_s',
            _s)
        row(method, f'{args.batches} batches', 'iter_s', _s)
        row(method, 'workers USS (sum)', 'uss_bytes', _mb)
        row(method, 'workers PSS (sum)', 'pss_bytes', _mb)
        row(method,
            f'USS growth vs {SMALL_INFOS} infos',
            'uss_bytes',
            _mb,
            delta='small_uss_bytes')
    if 'import_floor' in ours:
        for name, probe in ours['import_floor'].items():
            label = f'imports only ({name}) x{args.workers}'
            lines.append(f'{"spawn":<11}{label:<30}{"":>14}'
                         f'{_mb(probe["uss_bytes"]):>14}{"":>12}')
    return '\n'.join(lines)


def check_targets(ours):
    m, payload = ours['methods'], ours['payload_bytes']
    checks = []
    checks.append(('pickled per worker <= 1 MB', ours['pickled_bytes'],
                   ours['pickled_bytes'] <= 2**20))
    if 'spawn' in m:
        ratio = m['spawn']['first_batch_s'] / m['spawn']['small_first_batch_s']
        checks.append((f'spawn first batch vs {SMALL_INFOS} infos <= 1.1x',
                       round(ratio, 3), ratio <= 1.1))
    if 'forkserver' in m:
        warm = m['forkserver']['first_batch_warm_s']
        checks.append(('forkserver first batch (warm) <= 1 s', round(warm,
                                                                     3), warm
                       <= 1.0))
        cold = m['forkserver']['first_batch_s']
        checks.append(('forkserver first batch (first iterator) <= 1 s',
                       round(cold, 3), cold <= 1.0))
    for method, row in m.items():
        ratio = row['uss_bytes'] / payload
        checks.append(
            (f'{method}: workers USS <= 1.2x payload', round(ratio, 3), ratio
             <= 1.2))
        growth = (row['uss_bytes'] - row['small_uss_bytes']) / payload
        checks.append((f'{method}: workers USS growth <= 1.2x payload',
                       round(growth, 3), growth <= 1.2))
    return checks


def floor_context(ours):
    """How the spawn USS splits into imports and the rest (not a target)."""
    floor = ours.get('import_floor')
    if not floor or 'spawn' not in ours['methods']:
        return []
    payload = ours['payload_bytes']
    spawn = ours['methods']['spawn']['uss_bytes']
    return [
        f'spawn workers USS {_mb(spawn)} = {spawn / payload:.2f}x payload; '
        f'of it, importing torch alone is {_mb(floor["torch"]["uss_bytes"])}'
        f' ({floor["torch"]["uss_bytes"] / payload:.2f}x) and importing the '
        f'dataset\'s module {_mb(floor["dataset"]["uss_bytes"])} '
        f'({floor["dataset"]["uss_bytes"] / payload:.2f}x), with no infos.'
    ]


def run_parent(args):
    from tests.helpers.synthetic_infos import write_synthetic_infos
    work_dir = args.work_dir or tempfile.mkdtemp(prefix='bench_workers_')
    os.makedirs(work_dir, exist_ok=True)
    big_file = osp.join(work_dir, f'infos_{args.infos}.pkl')
    small_file = osp.join(work_dir, f'infos_{SMALL_INFOS}.pkl')
    start = time.perf_counter()
    if not osp.exists(big_file):
        write_synthetic_infos(big_file, args.infos)
    if not osp.exists(small_file):
        write_synthetic_infos(small_file, SMALL_INFOS)
    print(
        f'info files ready in {time.perf_counter() - start:.1f} s: '
        f'{big_file} ({_mb(osp.getsize(big_file))})',
        flush=True)
    results = {}
    for cls in CLASSES:
        child_out = osp.join(work_dir, f'{cls}.json')
        cmd = [
            sys.executable,
            osp.abspath(__file__), '--child', cls, '--child-out', child_out,
            '--infos',
            str(args.infos), '--workers',
            str(args.workers), '--batches',
            str(args.batches), '--batch-size',
            str(args.batch_size), '--methods', *args.methods, '--work-dir',
            work_dir
        ]
        subprocess.run(cmd, check=True, cwd=REPO)
        with open(child_out) as f:
            results[cls] = json.load(f)
    table = format_table(results, args)
    checks = check_targets(results['SafeNuScenesDataset'])
    print(table)
    print('targets (ours):')
    for name, value, ok in checks:
        print(f'  {"PASS" if ok else "MISS"}  {name}: {value}')
    for line in floor_context(results['SafeNuScenesDataset']):
        print(line)
    out = dict(args=dict(infos=args.infos,
                         workers=args.workers,
                         batches=args.batches,
                         batch_size=args.batch_size,
                         methods=args.methods),
               results=results,
               targets=[dict(name=n, value=v, ok=ok) for n, v, ok in checks],
               table=table)
    os.makedirs(osp.dirname(osp.abspath(args.out)), exist_ok=True)
    with open(args.out, 'w') as f:
        json.dump(out, f, indent=2)
    print(f'wrote {args.out}')
    return out


def main(argv=None):
    args = parse_args(argv)
    if args.child:
        work_dir = args.work_dir
        args.big_file = osp.join(work_dir, f'infos_{args.infos}.pkl')
        args.small_file = osp.join(work_dir, f'infos_{SMALL_INFOS}.pkl')
        run_child(args)
    else:
        run_parent(args)


if __name__ == '__main__':
    main()
