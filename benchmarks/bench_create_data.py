"""``tools/create_data.py`` (parallel, resumable) against mmdet3d's own
converter (``tools/create_data.py --reference``: mmdet3d 1.4.0's scripts
from the wheel, one process), side by side in one run on one generated
root at nuScenes density, and the products compared.

The root: ``tools/create_synthetic_nuscenes.py --keyframes-per-scene 40
--points-per-frame 34720`` (v1.0-mini: 10 scenes, 400 key frames, 320 of
them train, 10 sweeps each, about 2.8 GB), written once into ``--root``
(default ``data/bench_create_data``) and kept. Each tool runs in a fresh
interpreter on it, writing into its own output folder, ours first; every
file of the root is read once before (:func:`_warm_page_cache`), so that
neither tool waits on the disk (the first run on a cold root otherwise
pays for reading 2.8 GB); measured:

- wall and CPU seconds of the whole tool (children included);
- each phase's seconds and samples/s, as the tool reports them (infos:
  tables, samples, merge and files; GT database: samples, merge, files);
- start-up: the wall time outside the two phases (interpreter, imports,
  compiling, forking);
- peak memory: the sum of the resident sets of the tool's processes,
  sampled every 0.1 s;
- trainval extrapolated: start-up + each phase's seconds per sample x
  trainval's samples (34,149 key frames; 28,130 train for the GT
  database).

The outputs of an earlier run are renamed aside before the tools run and
removed after them; a run started within a minute of an earlier one's
removals waits first (:func:`settle_deletions`: on this machine's ext4,
creating files just after removing thousands costs each tool several
CPU-s).

Then the identity check (``create_data.compare.product_differences``):
info files and dbinfos equal after loading, every GT-database file
byte-identical. Prints a table, the machine's load average before and
after, and writes JSON (default ``benchmarks/results/
bench_create_data.json``)::

    python benchmarks/bench_create_data.py [--root data/bench_create_data]
        [--keyframes-per-scene 40] [--workers N]
"""
import argparse
import json
import os
import os.path as osp
import re
import resource
import shutil
import subprocess
import sys
import time

import psutil

REPO = osp.dirname(osp.dirname(osp.abspath(__file__)))
if REPO not in sys.path:
    sys.path.insert(0, REPO)

#: nuScenes v1.0-trainval: key frames of both splits, and of train.
TRAINVAL_SAMPLES = 34149
TRAIN_SAMPLES = 28130
NUSCENES_POINTS = 34720
#: Seconds between removing files and timing a tool (see
#: :func:`settle_deletions`).
DELETION_SETTLE_S = 65
_PHASE_RE = re.compile(r'(infos|GT database) (\d+) samples in ([\d.]+) s')


def _ensure_root(root: str, keyframes: int) -> None:
    if osp.isdir(osp.join(root, 'v1.0-mini')):
        return
    print(f'generating {root} ({10 * keyframes} key frames)...')
    subprocess.run([
        sys.executable,
        osp.join(REPO, 'tools', 'create_synthetic_nuscenes.py'),
        '--out-dir', root, '--keyframes-per-scene', str(keyframes),
        '--points-per-frame', str(NUSCENES_POINTS)
    ], check=True, cwd=REPO, env=dict(os.environ, PYTHONPATH=REPO))


def _tree_rss(proc: psutil.Process) -> int:
    total = 0
    for p in [proc] + proc.children(recursive=True):
        try:
            total += p.memory_info().rss
        except psutil.Error:
            pass
    return total


def _warm_page_cache(root: str) -> None:
    """Read every file under ``root`` once (into the page cache)."""
    files = size = 0
    start = time.perf_counter()
    buffer = bytearray(1 << 22)
    for folder, _, names in os.walk(root):
        for name in names:
            with open(osp.join(folder, name), 'rb', buffering=0) as f:
                while True:
                    n = f.readinto(buffer)
                    size += n
                    if n < len(buffer):
                        break
            files += 1
    print(f'read the root once ({files} files, {size / 2**30:.2f} GiB, '
          f'{time.perf_counter() - start:.1f} s) so that neither tool '
          'waits on the disk')


def _trash(root: str) -> str:
    return root.rstrip('/') + '_trash'


def settle_deletions(root: str) -> None:
    """Wait until the last run's removals are :data:`DELETION_SETTLE_S`
    old: ext4 without a journal (this machine's) skips, for each file it
    creates, the inodes freed in the last 60 s (``recently_deleted``), so
    2,400 files created right after removing the previous outputs cost
    0.5-0.9 ms CPU each instead of 0.03 ms, whichever tool runs."""
    stamp = osp.join(_trash(root), '.removed')
    if osp.exists(stamp):
        wait = DELETION_SETTLE_S - (time.time() - osp.getmtime(stamp))
        if wait > 0:
            print(f'waiting {wait:.0f} s for the last run\'s removals to '
                  'settle (ext4 skips recently freed inodes)')
            time.sleep(wait)


def _set_aside(root: str, out: str) -> None:
    """Move an earlier output out of the way (a rename: nothing is freed
    before the tools run; :func:`_remove_set_aside` removes it after)."""
    for path in (out, out + '.log'):
        if osp.exists(path):
            os.makedirs(_trash(root), exist_ok=True)
            os.rename(path, osp.join(_trash(root), '%s-%d' % (
                osp.basename(path), time.time_ns())))


def _remove_set_aside(root: str) -> None:
    trash = _trash(root)
    if not osp.isdir(trash):
        return
    for name in os.listdir(trash):
        path = osp.join(trash, name)
        if name != '.removed':
            if osp.isdir(path):
                shutil.rmtree(path)
            else:
                os.remove(path)
    stamp_removal(root)


def stamp_removal(root: str) -> None:
    """Note that files of runs on ``root`` were just removed (for
    :func:`settle_deletions`; ``profile_create_data.py`` notes its own)."""
    os.sync()
    os.makedirs(_trash(root), exist_ok=True)
    with open(osp.join(_trash(root), '.removed'), 'w') as f:
        f.write(f'{time.time()}\n')


def run_tool(root: str, out: str, extra: list, env: dict) -> dict:
    """One ``tools/create_data.py`` run: wall, CPU, peak memory, phases."""
    cmd = [
        sys.executable, osp.join(REPO, 'tools', 'create_data.py'),
        'nuscenes', '--root-path', root, '--out-dir', out, *extra
    ]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    log_path = out + '.log'
    with open(log_path, 'w') as log:
        proc = subprocess.Popen(
            cmd, cwd=REPO, stdout=log, stderr=subprocess.STDOUT,
            env=dict(os.environ, PYTHONPATH=REPO, **env))
        ps = psutil.Process(proc.pid)
        peak = 0
        while proc.poll() is None:
            peak = max(peak, _tree_rss(ps))
            time.sleep(0.1)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    text = open(log_path).read()
    if proc.returncode:
        raise RuntimeError(f'{cmd} failed:\n{text[-3000:]}')
    phases = {}
    for line in text.splitlines():
        if line.startswith('create_data:'):
            for name, n, sec in _PHASE_RE.findall(line):
                key = 'infos' if name == 'infos' else 'gt'
                phases[key] = dict(samples=int(n), seconds=float(sec))
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime -
                                                before.ru_stime)
    startup = wall - sum(p['seconds'] for p in phases.values())
    trainval = startup + \
        phases['infos']['seconds'] / phases['infos']['samples'] * \
        TRAINVAL_SAMPLES + \
        phases['gt']['seconds'] / phases['gt']['samples'] * TRAIN_SAMPLES
    return dict(
        command=' '.join(cmd[1:]),
        wall_s=wall,
        cpu_s=cpu,
        startup_s=startup,
        peak_rss_mb=peak / 2**20,
        phases=phases,
        trainval_s=trainval)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--root', default=osp.join(REPO, 'data',
                                                   'bench_create_data'))
    parser.add_argument('--keyframes-per-scene', type=int, default=40)
    parser.add_argument('--workers', type=int, default=None)
    parser.add_argument(
        '--omp-threads',
        type=int,
        default=None,
        help='OMP_NUM_THREADS for both tools (default: unset, torch takes '
        'the cores)')
    parser.add_argument(
        '--json',
        default=osp.join(REPO, 'benchmarks', 'results',
                         'bench_create_data.json'))
    args = parser.parse_args()
    root = osp.abspath(args.root)
    _ensure_root(root, args.keyframes_per_scene)
    outs = {
        'ours': root.rstrip('/') + '_out_ours',
        'mmdet3d': root.rstrip('/') + '_out_mmdet3d'
    }
    for out in outs.values():
        _set_aside(root, out)
    settle_deletions(root)
    _warm_page_cache(root)
    load_before = os.getloadavg()
    ours_flags = [] if args.workers is None else [
        '--workers', str(args.workers)]
    env = {} if args.omp_threads is None else {
        'OMP_NUM_THREADS': str(args.omp_threads)}
    results = {
        'ours': run_tool(root, outs['ours'], ours_flags, env),
        'mmdet3d': run_tool(root, outs['mmdet3d'], ['--reference'], env),
    }
    load_after = os.getloadavg()

    from projects.mmdet3d_plugin.create_data.compare import \
        product_differences
    tolerated, mismatches = product_differences(outs['ours'],
                                                outs['mmdet3d'], 'v1.0-mini')
    gt_files = len(os.listdir(osp.join(outs['ours'],
                                       'nuscenes_gt_database')))

    print(f'\nroot: {root} ({results["ours"]["phases"]["infos"]["samples"]} '
          f'key frames, {results["ours"]["phases"]["gt"]["samples"]} train; '
          f'{os.cpu_count()} cores, OMP_NUM_THREADS '
          f'{env.get("OMP_NUM_THREADS", "unset")}); load average before '
          f'{load_before[0]:.2f}, after {load_after[0]:.2f}')
    header = (f'{"tool":<8} {"wall s":>7} {"CPU s":>7} {"start s":>7} '
              f'{"infos s":>7} {"inf/s":>6} {"GT s":>6} {"GT/s":>6} '
              f'{"peak MB":>8} {"trainval h":>10}')
    print(header)
    for name, r in results.items():
        inf, gt = r['phases']['infos'], r['phases']['gt']
        print(f'{name:<8} {r["wall_s"]:7.1f} {r["cpu_s"]:7.1f} '
              f'{r["startup_s"]:7.1f} {inf["seconds"]:7.1f} '
              f'{inf["samples"] / inf["seconds"]:6.1f} {gt["seconds"]:6.1f} '
              f'{gt["samples"] / gt["seconds"]:6.1f} '
              f'{r["peak_rss_mb"]:8.0f} {r["trainval_s"] / 3600:10.2f}')
    ours, ref = results['ours'], results['mmdet3d']
    speedups = dict(
        wall=ref['wall_s'] / ours['wall_s'],
        trainval=ref['trainval_s'] / ours['trainval_s'],
        infos_per_sample=(ref['phases']['infos']['seconds'] /
                          ours['phases']['infos']['seconds']),
        gt_per_sample=(ref['phases']['gt']['seconds'] /
                       ours['phases']['gt']['seconds']))
    print(f'speed-up: benchmark root wall {speedups["wall"]:.1f}x, '
          f'trainval extrapolated {speedups["trainval"]:.1f}x (infos '
          f'{speedups["infos_per_sample"]:.1f}x, GT database '
          f'{speedups["gt_per_sample"]:.1f}x per sample)')
    print(f'identity: {len(mismatches)} mismatches, tolerated keys '
          f'{tolerated or "none"} ({gt_files} GT-database files compared '
          'byte for byte)')
    for line in mismatches[:10]:
        print('  ' + line)
    _remove_set_aside(root)
    os.makedirs(osp.dirname(args.json), exist_ok=True)
    with open(args.json, 'w') as f:
        json.dump(dict(root=root, env=env, load_before=load_before,
                       load_after=load_after, results=results,
                       speedups=speedups, tolerated=tolerated,
                       mismatches=mismatches, gt_files=gt_files), f,
                  indent=2)
    print(f'wrote {args.json}')
    return 0 if not mismatches else 1


if __name__ == '__main__':
    sys.exit(main())
