"""How long the tools take to answer before any work: ``--help`` and a
missing config, next to ``python -c "import mmdet3d.models"``.

    python benchmarks/bench_startup.py [--repeat 3] [--baseline DIR]
        [--json work_dirs/bench_startup.json]

Each command runs ``--repeat`` times in a fresh process (the median is
shown); CPU-s is the child's user + system time. ``--baseline DIR`` runs
the same commands in another checkout (e.g. a ``git worktree`` of an
earlier commit) in the same run, side by side. The acceptance is each tool
at most a quarter of the ``import mmdet3d.models`` row.
"""
import argparse
import json
import os
import os.path as osp
import resource
import statistics
import subprocess
import sys
import time

REPO = osp.dirname(osp.dirname(osp.abspath(__file__)))
COMMANDS = [
    ('import mmdet3d.models', ['-c', 'import mmdet3d.models']),
    ('tools/train.py --help', ['tools/train.py', '--help']),
    ('tools/test.py --help', ['tools/test.py', '--help']),
    ('tools/train.py missing.py', ['tools/train.py', 'missing.py']),
    ('tools/failure_report.py --help', ['tools/failure_report.py', '--help']),
    ('tools/create_synthetic_nuscenes.py --help',
     ['tools/create_synthetic_nuscenes.py', '--help']),
    ('tools/doctor.py --help', ['tools/doctor.py', '--help']),
]


def run_once(repo, args):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run([sys.executable, *args], cwd=repo,
                   env={**os.environ, 'PYTHONPATH': repo},
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime -
                                                 before.ru_stime)
    return wall, cpu


def measure(repo, repeat):
    rows = {}
    for name, args in COMMANDS:
        runs = [run_once(repo, args) for _ in range(repeat)]
        rows[name] = dict(wall_s=statistics.median(r[0] for r in runs),
                          cpu_s=statistics.median(r[1] for r in runs))
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--repeat', type=int, default=3)
    parser.add_argument('--baseline', metavar='DIR',
                        help='another checkout to measure in the same run')
    parser.add_argument('--json', default='work_dirs/bench_startup.json')
    args = parser.parse_args()
    results = {'this': measure(REPO, args.repeat)}
    if args.baseline:
        results['baseline'] = measure(osp.abspath(args.baseline),
                                      args.repeat)
    reference = results['this']['import mmdet3d.models']['wall_s']
    head = f'{"command":44s} {"wall s":>7s} {"CPU s":>6s} {"/import":>8s}'
    if args.baseline:
        head += f' {"base wall":>9s} {"base CPU":>8s}'
    print(head)
    for name, _ in COMMANDS:
        row = results['this'][name]
        line = (f'{name:44s} {row["wall_s"]:7.2f} {row["cpu_s"]:6.2f} '
                f'{row["wall_s"] / reference:8.2f}')
        if args.baseline:
            base = results['baseline'][name]
            line += f' {base["wall_s"]:9.2f} {base["cpu_s"]:8.2f}'
        print(line)
    os.makedirs(osp.dirname(osp.abspath(args.json)), exist_ok=True)
    with open(args.json, 'w') as f:
        json.dump(results, f, indent=1)
    print(f'wrote {args.json}')


if __name__ == '__main__':
    main()
