"""``tools/migrate_checkpoint.py`` on 0.x checkpoints of shipped-config
size: CenterPoint voxel0075 and pillar02, the VoxelNet pillar config and a
DETR3D-sized one with and without box refinement
(``tests/helpers/old_checkpoints.py``: each model's state dict, an AdamW
state and a 0.x ``meta``).

For each: the conversion in this process (``migrate_checkpoint``: read,
convert, write, as it times them) and the tool as users start it (a fresh
interpreter: ``python tools/migrate_checkpoint.py IN OUT``, wall and CPU
with its imports). Target: under 5 s each (issue 53). Prints a table and
writes JSON (default ``benchmarks/results/bench_migrate_checkpoint.json``).

    python benchmarks/bench_migrate_checkpoint.py [--names voxel0075 ...]
"""
import argparse
import json
import os
import os.path as osp
import resource
import subprocess
import sys
import tempfile
import time

REPO = osp.dirname(osp.dirname(osp.abspath(__file__)))
if REPO not in sys.path:
    sys.path.insert(0, REPO)

TARGET_S = 5.0


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def measure(name: str, folder: str) -> dict:
    """One checkpoint: its size, the in-process conversion's phases and the
    tool's wall and CPU seconds."""
    import torch
    from projects.mmdet3d_plugin.box_convention.migrate import (
        migrate_checkpoint)
    from tests.helpers.old_checkpoints import old_checkpoint
    src = osp.join(folder, f'{name}.pth')
    torch.save(old_checkpoint(name), src)
    # DETR3D's 0.x checkpoints say mmdet3d 0.17.1, which the tool asks
    # about.
    flags = ['--from-convention', 'old'] if name.startswith('detr3d') \
        else []
    start = time.perf_counter()
    migration = migrate_checkpoint(
        src, osp.join(folder, f'{name}_1x_in_process.pth'),
        from_convention='old' if flags else None)
    in_process = time.perf_counter() - start
    cpu = _children_cpu()
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, 'tools/migrate_checkpoint.py', src,
         osp.join(folder, f'{name}_1x.pth'), *flags],
        cwd=REPO, capture_output=True, text=True, timeout=600)
    tool_wall = time.perf_counter() - start
    if proc.returncode:
        raise RuntimeError(f'{name}: the tool exited {proc.returncode}:\n'
                           f'{proc.stderr[-3000:]}')
    row = dict(
        name=name, mb=round(os.path.getsize(src) / 1e6, 1),
        tensors=len(migration.rows),
        read_s=round(migration.seconds['read'], 3),
        convert_s=round(migration.seconds['convert'], 4),
        write_s=round(migration.seconds['write'], 3),
        in_process_s=round(in_process, 3),
        tool_wall_s=round(tool_wall, 2),
        tool_cpu_s=round(_children_cpu() - cpu, 2),
        under_target=tool_wall < TARGET_S)
    for path in os.listdir(folder):
        os.remove(osp.join(folder, path))
    return row


def main() -> None:
    from tests.helpers.old_checkpoints import NAMES
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--names', nargs='+', default=list(NAMES),
                        choices=NAMES)
    parser.add_argument(
        '--json', default=osp.join(REPO, 'benchmarks', 'results',
                                   'bench_migrate_checkpoint.json'))
    args = parser.parse_args()
    os.environ.setdefault('OMP_NUM_THREADS', '1')
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        for name in args.names:
            rows.append(measure(name, folder))
    header = ('| checkpoint | MB | tensors converted | read s | convert s | '
              'write s | in process s | tool wall s | tool CPU s |')
    print(header)
    print('|---' * 9 + '|')
    for r in rows:
        print(f"| {r['name']} | {r['mb']} | {r['tensors']} | {r['read_s']} | "
              f"{r['convert_s']} | {r['write_s']} | {r['in_process_s']} | "
              f"{r['tool_wall_s']} | {r['tool_cpu_s']} |")
    print(f'target: under {TARGET_S:g} s each: '
          f"{'met' if all(r['under_target'] for r in rows) else 'missed'}")
    os.makedirs(osp.dirname(args.json), exist_ok=True)
    with open(args.json, 'w') as f:
        json.dump(dict(rows=rows, target_s=TARGET_S,
                       python=sys.version.split()[0],
                       torch=__import__('torch').__version__), f, indent=2)
    print(f'JSON: {args.json}')


if __name__ == '__main__':
    main()
