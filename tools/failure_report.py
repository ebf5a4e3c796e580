"""Explain why a distributed run failed, from its error files.

    python tools/failure_report.py LOG_DIR [--exit-code N] [--work-dir DIR]

LOG_DIR is the launch's log folder (torchrun's ``--log-dir``, or the Slurm
launchers' folder of per-task error files). Prints the root-cause report
and writes it as ``failure_report.json`` into the run's work dir (the one
the ranks recorded, else ``--work-dir``, else LOG_DIR). The launchers
(tools/dist_train.sh, dist_test.sh, slurm_train.sh, slurm_test.sh) run it
after a failure; run it by hand to see a report again. Exit status 0 (the
launcher keeps its own).
"""
import argparse
import os.path as osp
import sys

sys.path.insert(0, osp.dirname(osp.dirname(osp.abspath(__file__))))


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('log_dir', help="the launch's log folder")
    parser.add_argument('--exit-code', type=int,
                        help="the launcher's exit status")
    parser.add_argument('--work-dir',
                        help='where to write failure_report.json when no '
                        'rank recorded its work dir')
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    if not osp.isdir(args.log_dir):
        print(f'failure_report: {args.log_dir} is not a folder; give the '
              "launch's log folder (torchrun's --log-dir)", file=sys.stderr)
        return 0
    # Loaded after the arguments: the report imports torch (its error
    # files), never mmcv or mmdet3d, so it explains a broken install too.
    from projects.mmdet3d_plugin.failures.report import report_failed_run
    text, _ = report_failed_run(args.log_dir, args.exit_code, args.work_dir)
    print(text, file=sys.stderr, flush=True)
    return 0


if __name__ == '__main__':
    sys.exit(main())
