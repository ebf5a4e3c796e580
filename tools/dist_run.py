"""torchrun that ends a failed run with the root-cause report.

    python tools/dist_run.py [torchrun options] SCRIPT [script args]

Runs torchrun (``torch.distributed.run``) in this process with the same
arguments, so signals reach it as before. When ranks fail, torchrun's
summary is printed as usual; then each failed rank's exit status (torch
elastic's ``ChildFailedError.failures``: exit code or signal, pid, time)
is saved as ``exit_status.json`` in ``--log-dir`` (when not given:
``<work_dir>/torchrun_logs/<date>_<host>_<pid>``, the work dir being the
script's ``--work-dir`` or mmdet3d's default ``work_dirs/<config name>``),
with the ranks torchrun stopped after the failure
(``failures/exit_status.py``), and ``tools/failure_report.py`` prints the
report last.
The exit status is torchrun's, except when the failed ranks exited with
85 (``PreemptionHook``: a preemption signal, the checkpoint of the last
iteration saved): then one line says so, no report is made, and the
status is 85, which ``tools/slurm_train.sh`` and job schedulers can act
on. Only torch, the plugin's constants and ``failures/exit_status.py``
are imported here: the report loads after a failure.
"""
import logging
import os
import os.path as osp
import signal
import socket
import subprocess
import sys
import tempfile
import time
import traceback

from torch.distributed import run as torchrun
from torch.distributed.elastic.multiprocessing.errors import ChildFailedError

sys.path.insert(0, osp.dirname(osp.dirname(osp.abspath(__file__))))

from projects.mmdet3d_plugin.constants import (  # noqa: E402
    PREEMPTED_EXIT_CODE)
from projects.mmdet3d_plugin.failures.exit_status import (  # noqa: E402
    PROCESS_LOGGER, StoppedRanks, save_exit_status)

REPORT_TOOL = osp.join(osp.dirname(osp.abspath(__file__)),
                       'failure_report.py')


def default_work_dir(script_args):
    """``--work-dir`` of the script, else mmdet3d's default for its
    config (``work_dirs/<config name>``); None without a config."""
    for i, arg in enumerate(script_args):
        if arg == '--work-dir' and i + 1 < len(script_args):
            return script_args[i + 1]
        if arg.startswith('--work-dir='):
            return arg.split('=', 1)[1]
    if script_args and script_args[0].endswith('.py'):
        name = osp.splitext(osp.basename(script_args[0]))[0]
        return osp.join('work_dirs', name)
    return None


def default_log_dir(work_dir):
    """``<work_dir>/torchrun_logs/<date>_<host>_<pid>``: a folder of this
    launch's own (a temporary one without a work dir)."""
    if not work_dir:
        return tempfile.mkdtemp(prefix='torchrun_')
    stamp = time.strftime('%Y%m%d_%H%M%S')
    return osp.join(work_dir, 'torchrun_logs',
                    f'{stamp}_{socket.gethostname()}_{os.getpid()}')


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    args = torchrun.parse_args(argv)
    work_dir = default_work_dir(args.training_script_args)
    if not args.log_dir:
        args.log_dir = default_log_dir(work_dir)
        argv = ['--log-dir', args.log_dir] + argv
    stopped = StoppedRanks()
    logging.getLogger(PROCESS_LOGGER).addHandler(stopped)
    try:
        torchrun.main(argv)
        return 0
    except ChildFailedError as error:
        save_exit_status(args.log_dir, error, stopped.signals)
        codes = {f.exitcode for f in error.failures.values()}
        # A rank still exiting when torchrun stops the others gets its
        # SIGTERM (-15).
        if PREEMPTED_EXIT_CODE in codes and codes <= {
                PREEMPTED_EXIT_CODE, -signal.SIGTERM}:
            print(f'dist_run: preempted: every rank saved and exited with '
                  f'{PREEMPTED_EXIT_CODE} after a preemption signal; resume '
                  'with --resume (a restarted or requeued run does so by '
                  'itself)', file=sys.stderr, flush=True)
            return PREEMPTED_EXIT_CODE
        # What `python -m torch.distributed.run` prints, then the report.
        traceback.print_exc()
        sys.stderr.flush()
        status = 1
    command = [sys.executable, REPORT_TOOL, args.log_dir,
               '--exit-code', str(status)]
    if work_dir:
        command += ['--work-dir', work_dir]
    subprocess.call(command, env=dict(os.environ, PYTHONUNBUFFERED='1'))
    return status


if __name__ == '__main__':
    sys.exit(main())
