"""``tools/check_data.py`` on a root of nuScenes v1.0-trainval size, in
stat mode: wall and CPU seconds of the whole tool (imports, config, info
files, listing, checking), per ``--workers``; target at most 60 s on 2
cores.

The generator writes about 6 key frames per second here (OpenCV images and
the devkit's tables included), so 34,149 key frames would take well over
an hour, and mmdet3d's converter more. The root is instead tiled from the
generated root of the tests (``data/.cache``: 80 train and 20 val key
frames with 10 sweeps each, six cameras and the GT database, made by the
generator and mmdet3d's converter): its info dicts are copied to the real
v1.0-trainval counts (28,130 train, 6,019 val key frames), each copy with
its own token, ``sample_idx`` and file names, its 10 sweeps and its
instances; the GT-database infos likewise, copied with their samples
(``image_idx``). The info files are pickled as mmengine pickles them
(protocol 2), each sample written out in full (:class:`_PerSamplePickler`):
the same bytes per sample as the converter's own file, and as slow to
load.
Every LiDAR file the infos name (key frames, sweeps, GT-database objects)
is written with 2 points (40 bytes): stat mode reads sizes, not points.
Camera images are not written: the pillar02 config loads none. The root
is kept (``--root``, default ``data/bench_check_data``, about 3.5 GB of
small files) and reused while its marker matches; the files are in the
page cache when measured (they were just written or checked), as on a
machine that has read them before.

Also: ``--read`` mode's threads against a process pool, on the generated
root at nuScenes density that the tests use (``data/.cache``: 30 key
frames and their sweeps of 34,720 points, 694 KB each, and the GT
database), in this process.

Prints a table and writes JSON (default
``benchmarks/results/bench_check_data.json``).

    python benchmarks/bench_check_data.py [--workers 1 4 8] \
        [--root data/bench_check_data] [--rebuild]
"""
import argparse
import json
import math
import os
import os.path as osp
import pickle
import resource
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context

REPO = osp.dirname(osp.dirname(osp.abspath(__file__)))
if REPO not in sys.path:
    sys.path.insert(0, REPO)

PILLAR02 = osp.join(
    REPO, 'configs', 'centerpoint',
    'centerpoint_pillar02_second_secfpn_8xb4-cyclic-20e_nus-3d.py')
#: nuScenes v1.0-trainval: key frames of the train and val splits.
TRAIN_KEYFRAMES = 28130
VAL_KEYFRAMES = 6019
#: Points written into every LiDAR file (5 float32 each).
POINTS_PER_FILE = 2
TARGET_S = 60.0
MARKER = '.bench_check_data.json'


def _renamed(raw: str, copy: int) -> str:
    """``raw`` with ``_tNNN`` before the first dot of its file name."""
    head, sep, name = raw.rpartition('/')
    stem, dot, ext = name.partition('.')
    return f'{head}{sep}{stem}_t{copy:03d}{dot}{ext}'


def _tiled_info(info: dict, copy: int, sample_idx: int) -> dict:
    """A copy of one info with its own token, index and file names."""
    out = dict(info)
    out['token'] = info['token'][:-3] + f'{copy:03d}'
    out['sample_idx'] = sample_idx
    out['lidar_points'] = dict(
        info['lidar_points'],
        lidar_path=_renamed(info['lidar_points']['lidar_path'], copy))
    out['lidar_sweeps'] = [
        dict(sweep, lidar_points=dict(
            sweep['lidar_points'],
            lidar_path=_renamed(sweep['lidar_points']['lidar_path'], copy)))
        for sweep in info['lidar_sweeps']
    ]
    out['images'] = {
        cam: dict(image, img_path=_renamed(image['img_path'], copy))
        for cam, image in info['images'].items()
    }
    return out


def _tiled(infos: list, count: int) -> list:
    size = len(infos)
    return [
        _tiled_info(infos[i % size], i // size, i) for i in range(count)
    ]


class _PerSamplePickler(pickle.Pickler):
    """mmengine's pickling (protocol 2, with the memo), the memo cleared
    at each sample: the copies share their nested dicts and lists, which
    the memo would write once; so each sample is written out in full, as
    mmdet3d's converter writes its own (the same bytes per sample, the
    same time to load, within a few per cent)."""

    def __init__(self, file, samples: list) -> None:
        super().__init__(file, protocol=2)
        self.samples = {id(sample) for sample in samples}

    def persistent_id(self, obj):
        if id(obj) in self.samples:
            self.clear_memo()  # protocol 2 puts at explicit indices
        return None


def _dump_infos(infos: dict, path: str) -> int:
    with open(path, 'wb') as f:
        _PerSamplePickler(f, infos['data_list']).dump(infos)
    return os.path.getsize(path)


def _dump(obj, path: str) -> int:
    with open(path, 'wb') as f:
        pickle.dump(obj, f, protocol=2)
    return os.path.getsize(path)


def _fresh_object(obj: dict, idx: int, name: str) -> dict:
    """A GT-database object of its own (nothing shared that the memo would
    write once): copy ``obj`` cut from sample ``idx``."""
    return dict(obj, name=name.encode().decode(), image_idx=idx,
                path=f'nuscenes_gt_database/{idx}_{name}_{obj["gt_idx"]}.bin',
                box3d_lidar=obj['box3d_lidar'].copy(),
                difficulty=type(obj['difficulty'])(obj['difficulty']))


def _point_file_paths(root: str, infos: list) -> set:
    paths = set()
    for info in infos:
        paths.add(osp.join(root, 'samples', 'LIDAR_TOP',
                           info['lidar_points']['lidar_path']))
        for sweep in info['lidar_sweeps']:
            raw = sweep['lidar_points']['lidar_path']
            folder = 'samples' if 'samples' in raw else 'sweeps'
            paths.add(osp.join(root, folder, 'LIDAR_TOP',
                               raw.split(os.sep)[-1]))
    return paths


def build_root(base: str, root: str, rebuild: bool = False) -> dict:
    """Tile ``base`` into ``root`` (see the module docstring); returns what
    was written."""
    wanted = dict(base=osp.basename(base), train=TRAIN_KEYFRAMES,
                  val=VAL_KEYFRAMES, points_per_file=POINTS_PER_FILE,
                  pickle='protocol 2, memo per sample')
    marker = osp.join(root, MARKER)
    if not rebuild and osp.isfile(marker):
        with open(marker) as f:
            stats = json.load(f)
        if stats.get('params') == wanted:
            return stats
    start = time.perf_counter()
    with open(osp.join(base, 'nuscenes_infos_train.pkl'), 'rb') as f:
        train_file = pickle.load(f)
    with open(osp.join(base, 'nuscenes_infos_val.pkl'), 'rb') as f:
        val_file = pickle.load(f)
    with open(osp.join(base, 'nuscenes_dbinfos_train.pkl'), 'rb') as f:
        db_infos = pickle.load(f)
    base_train = train_file['data_list']
    train = _tiled(base_train, TRAIN_KEYFRAMES)
    val = _tiled(val_file['data_list'], VAL_KEYFRAMES)
    # The GT database of every train copy: objects follow their sample.
    size = len(base_train)
    copies = math.ceil(TRAIN_KEYFRAMES / size)
    tiled_db = {name: [] for name in db_infos}
    for copy in range(copies):
        for name, objects in db_infos.items():
            for obj in objects:
                idx = obj['image_idx'] + copy * size
                if idx < TRAIN_KEYFRAMES:
                    tiled_db[name].append(_fresh_object(obj, idx, name))
    os.makedirs(root, exist_ok=True)
    if osp.isfile(marker):
        os.remove(marker)
    metainfo = dict(train_file['metainfo'], version='v1.0-trainval')
    sizes = dict(
        train_pkl=_dump_infos(dict(metainfo=metainfo, data_list=train),
                              osp.join(root, 'nuscenes_infos_train.pkl')),
        val_pkl=_dump_infos(dict(metainfo=metainfo, data_list=val),
                            osp.join(root, 'nuscenes_infos_val.pkl')),
        db_pkl=_dump(tiled_db, osp.join(root,
                                        'nuscenes_dbinfos_train.pkl')))
    keyframes = {osp.join(root, 'samples', 'LIDAR_TOP',
                          i['lidar_points']['lidar_path'])
                 for i in train + val}
    points = _point_file_paths(root, train + val)
    gt_files = {osp.join(root, obj['path'])
                for objects in tiled_db.values() for obj in objects}
    payload = bytes(POINTS_PER_FILE * 5 * 4)
    for folder in ('samples/LIDAR_TOP', 'sweeps/LIDAR_TOP',
                   'nuscenes_gt_database'):
        os.makedirs(osp.join(root, folder), exist_ok=True)
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC
    for path in sorted(points | gt_files):
        if osp.isfile(path) and osp.getsize(path) == len(payload):
            continue  # written by an earlier build
        fd = os.open(path, flags, 0o644)
        os.write(fd, payload)
        os.close(fd)
    stats = dict(
        params=wanted, keyframes=len(keyframes),
        sweep_files=len(points - keyframes), gt_files=len(gt_files),
        files=len(points | gt_files),
        sweeps_per_keyframe=sum(len(i['lidar_sweeps'])
                                for i in train + val) / len(train + val),
        pkl_bytes=sizes, build_s=round(time.perf_counter() - start, 1))
    with open(marker, 'w') as f:
        json.dump(stats, f, indent=2)
    return stats


def run_tool(root: str, workers: int) -> dict:
    """``tools/check_data.py PILLAR02 --data-root ROOT --workers N`` in a
    fresh process: wall and CPU seconds, its exit status and report."""
    with tempfile.TemporaryDirectory() as tmp:
        out = osp.join(tmp, 'data_check.json')
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        proc = subprocess.run(
            [sys.executable, osp.join(REPO, 'tools', 'check_data.py'),
             PILLAR02, '--data-root', root, '--workers', str(workers),
             '--json', out], cwd=REPO, capture_output=True, text=True,
            env={**os.environ, 'PYTHONPATH': REPO})
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        report = json.load(open(out)) if osp.isfile(out) else {}
    if proc.returncode != 0:
        sys.stderr.write(proc.stdout[-3000:] + proc.stderr[-3000:])
    return dict(
        workers=workers, rc=proc.returncode, wall_s=round(wall, 2),
        cpu_s=round(after.ru_utime - before.ru_utime + after.ru_stime -
                    before.ru_stime, 2),
        list_s=report.get('list_seconds'), check_s=report.get('seconds'),
        check_cpu_s=report.get('cpu_seconds'), files=report.get('files'),
        broken=report.get('broken_files'))


def _chunk_problems(chunk, read):
    from projects.mmdet3d_plugin.data_check.check import file_problem
    return [file_problem(f, read) for f in chunk]


def _point_files(root: str) -> list:
    return [osp.join(folder, name)
            for folder in (osp.join(root, 'samples', 'LIDAR_TOP'),
                           osp.join(root, 'sweeps', 'LIDAR_TOP'),
                           osp.join(root, 'nuscenes_gt_database'))
            for name in os.listdir(folder)]


def compare_read(root: str, repeat: int = 3) -> list:
    """Read mode on ``root``: threads (this process) against a process
    pool (fork, 2 processes, their start included); the fastest of
    ``repeat`` runs each."""
    from projects.mmdet3d_plugin.config.loading import read_config
    from projects.mmdet3d_plugin.data_check.check import CHUNK, check_files
    from projects.mmdet3d_plugin.data_check.data_files import data_files
    files = data_files(read_config(PILLAR02)[0], data_root=root)
    check_files(files, read=True)  # the page cache, as for the others
    chunks = [files[i:i + CHUNK] for i in range(0, len(files), CHUNK)]

    def children_cpu():
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        return usage.ru_utime + usage.ru_stime

    def in_processes():
        with ProcessPoolExecutor(2, mp_context=get_context('fork')) as pool:
            list(pool.map(_chunk_problems, chunks, [True] * len(chunks)))

    runs = [(f'{n} thread(s)',
             lambda n=n: check_files(files, read=True, workers=n))
            for n in (1, 2, 4)]
    runs.append(('2 processes (fork)', in_processes))
    rows = []
    for how, run in runs:
        best = None
        for _ in range(repeat):
            start, cpu, kids = (time.perf_counter(), time.process_time(),
                                children_cpu())
            run()
            row = dict(how=how, files=len(files),
                       wall_s=round(time.perf_counter() - start, 3),
                       cpu_s=round(time.process_time() - cpu +
                                   children_cpu() - kids, 3))
            if best is None or row['wall_s'] < best['wall_s']:
                best = row
        rows.append(best)
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--root', default=osp.join(REPO, 'data',
                                                   'bench_check_data'))
    parser.add_argument('--workers', type=int, nargs='+', default=[1, 4, 8])
    parser.add_argument('--rebuild', action='store_true',
                        help='tile the root again even if its marker '
                        'matches')
    parser.add_argument('--no-read', dest='read', action='store_false',
                        help='skip the read-mode comparison')
    parser.add_argument(
        '--json', default=osp.join(REPO, 'benchmarks', 'results',
                                   'bench_check_data.json'))
    args = parser.parse_args()
    from projects.mmdet3d_plugin.synthetic.writer import (
        prepare_synthetic_nuscenes)
    from tests.helpers.synthetic_data import (prepare_dense_synthetic,
                                              synthetic_cache_dir)
    base = str(prepare_synthetic_nuscenes(synthetic_cache_dir(seed=0),
                                          seed=0))
    stats = build_root(base, args.root, args.rebuild)
    rows = [run_tool(args.root, workers) for workers in args.workers]
    dense = str(prepare_dense_synthetic(samples_per_scene=3)) \
        if args.read else None
    read = compare_read(dense) if args.read else []
    load = os.getloadavg()
    mib = {k: round(v / 2**20) for k, v in stats['pkl_bytes'].items()}
    print(f'root {args.root}: {stats["keyframes"]} key frames '
          f'({TRAIN_KEYFRAMES} train, {VAL_KEYFRAMES} val), '
          f'{stats["sweeps_per_keyframe"]:.1f} sweeps per key frame in the '
          f'infos, {stats["sweep_files"]} sweep files, '
          f'{stats["gt_files"]} GT-database files: {stats["files"]} files; '
          f'info files {mib["train_pkl"]} + {mib["val_pkl"]} MiB, GT '
          f'database infos {mib["db_pkl"]} MiB (tiled in '
          f'{stats["build_s"]} s)')
    print(f'{os.cpu_count()} cores, load average {load[0]:.1f} '
          f'{load[1]:.1f} {load[2]:.1f}; stat mode, page cache warm')
    print('wall and CPU s: the whole tool; list s: config and info files '
          'read, files listed; check s: every file stat\'ed; other s: '
          'Python, imports, report')
    print(f'{"workers":>7} {"wall s":>7} {"CPU s":>7} {"list s":>7} '
          f'{"check s":>8} {"other s":>8} {"files":>8} {"broken":>6} '
          f'{"rc":>3} {"<= 60 s":>8}')
    for row in rows:
        other = row['wall_s'] - (row['list_s'] or 0) - (row['check_s'] or 0)
        print(f'{row["workers"]:>7} {row["wall_s"]:>7.1f} '
              f'{row["cpu_s"]:>7.1f} {row["list_s"] or 0:>7.1f} '
              f'{row["check_s"] or 0:>8.1f} {other:>8.1f} '
              f'{row["files"] or 0:>8} {row["broken"] or 0:>6} '
              f'{row["rc"]:>3} '
              f'{"yes" if row["wall_s"] <= TARGET_S else "NO":>8}')
    if read:
        megabytes = sum(os.path.getsize(f) for f in _point_files(dense))
        print(f'read mode on {dense} ({read[0]["files"]} files, '
              f'{megabytes / 2**20:.0f} MiB, page cache warm):')
        print(f'{"":>2}{"how":<20} {"wall s":>7} {"CPU s":>7}')
        for row in read:
            print(f'  {row["how"]:<20} {row["wall_s"]:>7.2f} '
                  f'{row["cpu_s"]:>7.2f}')
    os.makedirs(osp.dirname(osp.abspath(args.json)), exist_ok=True)
    with open(args.json, 'w') as f:
        json.dump(dict(root=args.root, root_stats=stats, cores=os.cpu_count(),
                       load_average=load, target_s=TARGET_S, stat=rows,
                       read=read), f, indent=2)
        f.write('\n')
    print(f'wrote {args.json}')
    return 0 if all(r['rc'] == 0 and r['wall_s'] <= TARGET_S
                    for r in rows) else 1


if __name__ == '__main__':
    sys.exit(main())
