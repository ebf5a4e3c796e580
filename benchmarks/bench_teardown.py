"""How 2-rank runs end through ``tools/dist_train.sh``: the exit status of
each, and whether any rank aborted at its teardown.

Three kinds of run of the tests' toys (``tests/helpers``), 2 gloo ranks on
this machine, one after the other:

- ``finished``: ``BNToyModel`` on 40 samples, one with a NaN feature, 3
  epochs (15 iterations, 3 non-finite steps skipped as designed): exit 0,
  and nothing printed after the last log line;
- ``stopped``: SGD with lr 1e4: ``NonFiniteGuardHook`` stops the run on
  every rank after 3 non-finite steps in a row: exit 1, the failure
  report's cause ``nonfinite``;
- ``preempted``: rank 1 gets SIGTERM inside iteration 6 of 10
  (``PreemptionHook``): the ranks save iteration 7 and exit 85,
  ``dist_run: preempted``.

The toys and what counts as an abort are ``tests/helpers/run_ends.py``'s.
A run counts as clean when its status is its kind's, its output holds none
of ``terminate called``, ``Aborted``, ``Fatal Python error``,
``Segmentation fault``, ``core dumped``, and: a finished run printed
nothing after its last log line, a stopped run's failure report names the
cause ``nonfinite``, a preempted run ends with ``dist_run: preempted``.
The JSON has each rank's exit status as torchrun recorded it (none after
exit 0). Prints a table, writes JSON.

    python benchmarks/bench_teardown.py [--finished 50] [--stopped 20]
        [--preempted 20] [--json work_dirs/bench_teardown.json]
"""
import argparse
import json
import os
import os.path as osp
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = osp.dirname(osp.dirname(osp.abspath(__file__)))
sys.path.insert(0, REPO)

from tests.helpers.dist_env import process_tree  # noqa: E402
from tests.helpers.run_ends import (aborts, after_last_log_line,  # noqa: E402
                                    start_run_end, write_run_end_configs)

HANG_SECONDS = 300


def rank_codes(work: Path) -> dict:
    """Rank -> exit status, as torchrun recorded the failed ranks
    (``exit_status.json``; none after a run that exited 0)."""
    codes = {}
    for path in work.glob('torchrun_logs/*/exit_status.json'):
        for rank, proc in json.loads(path.read_text())['failures'].items():
            codes[rank] = proc['exitcode']
    return codes


def one_run(kind: str, config: Path, expected: int, work: Path) -> dict:
    """Launch ``tools/dist_train.sh CONFIG 2`` and judge how it ended."""
    start = time.perf_counter()
    proc = start_run_end(config, work)
    try:
        out = proc.communicate(timeout=HANG_SECONDS)[0]
    except subprocess.TimeoutExpired:
        tree = process_tree(proc.pid)
        os.killpg(proc.pid, 9)
        out = (proc.communicate()[0] + '\n[bench_teardown: hung, killed]\n'
               + tree)
    seconds = time.perf_counter() - start
    found = aborts(out)
    trailing = after_last_log_line(out)
    checks = dict(status=proc.returncode == expected, no_abort=not found)
    if kind == 'finished':
        checks['nothing_after_last_log_line'] = not trailing
    elif kind == 'stopped':
        report = work / 'failure_report.json'
        cause = json.loads(report.read_text())['cause']['key'] \
            if report.is_file() else None
        checks['report_cause_nonfinite'] = cause == 'nonfinite'
    else:
        checks['dist_run_preempted'] = 'dist_run: preempted' in out
    return dict(kind=kind, returncode=proc.returncode, expected=expected,
                rank_codes=rank_codes(work), seconds=round(seconds, 2),
                aborts=found,
                trailing=trailing[-5:], ok=all(checks.values()),
                checks=checks, tail=None if all(checks.values())
                else out[-4000:])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--finished', type=int, default=50)
    parser.add_argument('--stopped', type=int, default=20)
    parser.add_argument('--preempted', type=int, default=20)
    parser.add_argument('--json', default='work_dirs/bench_teardown.json')
    args = parser.parse_args(argv)

    import torch
    counts = dict(finished=args.finished, stopped=args.stopped,
                  preempted=args.preempted)
    runs = []
    with tempfile.TemporaryDirectory(prefix='bench_teardown_') as tmp:
        configs = write_run_end_configs(Path(tmp))
        for kind, count in counts.items():
            config, expected = configs[kind]
            for i in range(count):
                result = one_run(kind, config, expected,
                                 Path(tmp) / f'{kind}_{i}')
                runs.append(result)
                print(f'{kind} {i + 1}/{count}: rc {result["returncode"]}'
                      f'{"" if result["ok"] else " NOT CLEAN"} '
                      f'({result["seconds"]:.1f} s)', flush=True)

    rows = []
    for kind, count in counts.items():
        mine = [r for r in runs if r['kind'] == kind]
        if not mine:
            continue
        rows.append(dict(
            kind=kind, runs=len(mine), expected_rc=mine[0]['expected'],
            rc_as_expected=sum(r['returncode'] == r['expected']
                               for r in mine),
            aborted=sum(bool(r['aborts']) for r in mine),
            clean=sum(r['ok'] for r in mine),
            median_s=round(statistics.median(r['seconds'] for r in mine),
                           1)))
    header = ('kind', 'runs', 'expected rc', 'rc as expected', 'aborted',
              'clean', 'median s')
    print(f'\ntorch {torch.__version__}, Python '
          f'{sys.version.split()[0]}, tools/dist_train.sh CONFIG 2 (gloo)')
    print('| ' + ' | '.join(header) + ' |')
    print('|' + '---|' * len(header))
    for row in rows:
        print('| ' + ' | '.join(str(v) for v in row.values()) + ' |')
    os.makedirs(osp.dirname(osp.abspath(args.json)), exist_ok=True)
    with open(args.json, 'w') as f:
        json.dump(dict(torch=torch.__version__, python=sys.version.split()[0],
                       table=rows, runs=runs), f, indent=1)
    print(f'\nwritten: {args.json}')
    return 0 if all(r['ok'] for r in runs) else 1


if __name__ == '__main__':
    sys.exit(main())
