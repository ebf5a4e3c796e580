"""A real Slurm on this machine, for the launcher tests.

:class:`SlurmCluster` writes a ``slurm.conf`` of its own into a folder,
starts ``slurmctld -D`` and one ``slurmd -D -N nodeN`` per emulated node as
background processes (each slurmd on its own port, all on 127.0.0.1), waits
until ``sinfo`` shows every node idle (about a second), and on :meth:`stop`
cancels the jobs and kills the daemons and what they left running. State,
spool, pid and log files stay in the folder; ``auth/none`` and
``cred/none`` need no munge, and there is no accounting database. Clients
find the cluster through ``SLURM_CONF`` (:attr:`SlurmCluster.env`).

A requeued job pends (``Reason=BeginTime``) for ``cred_expire`` + 1 seconds
(default 120) and then waits for the scheduler's next pass (default every
60 s): the conf sets 5 s and a pass every second, so a requeued job starts
again within seconds, by itself.
"""
import ctypes
import os
import re
import shutil
import signal
import subprocess
import textwrap
import time
from pathlib import Path
from typing import Dict, Iterable, List, Optional

from projects.mmdet3d_plugin.dist.ports import free_port

#: What installs the daemons and clients on Debian / Ubuntu (as root).
SLURM_INSTALL = 'apt-get install -y slurmctld slurmd slurm-client'
_PROGRAMS = ('slurmctld', 'slurmd', 'sinfo', 'sbatch', 'srun', 'scontrol',
             'scancel')
#: Seconds a requeued job waits before it may start again (Slurm's
#: ``cred_expire``, default 120).
CRED_EXPIRE = 5
PARTITION = 'debug'
#: Seconds between Slurm's SIGTERM and its SIGKILL to a job's processes
#: (``KillWait``, default 30). A preempted toy rank finishes its iteration,
#: saves and exits in ~3 s on a quiet machine; on a loaded 2-core CI machine
#: (4 test workers) the batch shell was once SIGKILLed before it could say
#: "preempted", so the tests give it 120 s.
KILL_WAIT = 120
_PR_SET_PDEATHSIG = 1


def missing_programs() -> List[str]:
    """Slurm programs not on ``PATH``."""
    return [name for name in _PROGRAMS if shutil.which(name) is None]


def _machine() -> Dict[str, str]:
    """``CPUs``, ``RealMemory`` (and the rest) of ``slurmd -C``."""
    out = subprocess.run(['slurmd', '-C'], capture_output=True, text=True,
                         check=True).stdout
    return dict(re.findall(r'(\w+)=(\S+)', out.splitlines()[0]))


def _die_with_parent() -> None:
    """In a daemon: SIGTERM when the test process dies (even by SIGKILL)."""
    ctypes.CDLL(None).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


class SlurmCluster:
    """A Slurm controller and ``nodes`` slurmd daemons on this machine.

    Args:
        root (Path): Folder for the conf, state, spool and log files.
        nodes (int): Emulated nodes, ``node1`` .. ``nodeN``, each with the
            machine's CPUs and memory. Defaults to 1.
    """

    def __init__(self, root: Path, nodes: int = 1) -> None:
        missing = missing_programs()
        if missing:
            raise RuntimeError(
                f'SlurmCluster: the tests start a Slurm of their own, but '
                f'{", ".join(missing)} not found on PATH; install Slurm with '
                f'`{SLURM_INSTALL}` (as root; .ci/run does it)')
        self.root = Path(root)
        self.nodes = [f'node{i}' for i in range(1, nodes + 1)]
        self.conf = self.root / 'slurm.conf'
        self.env = dict(os.environ, SLURM_CONF=str(self.conf))
        self._procs: List[subprocess.Popen] = []
        self.start_seconds: Optional[float] = None

    # -- set-up ------------------------------------------------------------

    def write_conf(self) -> Path:
        """Write ``slurm.conf`` and make the folders it names."""
        for name in ('state', 'log', 'spool'):
            (self.root / name).mkdir(parents=True, exist_ok=True)
        machine = _machine()
        nodes = '\n'.join(
            f'NodeName={name} NodeAddr=127.0.0.1 NodeHostname=localhost '
            f'Port={free_port()} CPUs={machine["CPUs"]} '
            f'RealMemory={machine["RealMemory"]} State=UNKNOWN'
            for name in self.nodes)
        partition = (f'PartitionName={PARTITION} Nodes={",".join(self.nodes)}'
                     ' Default=YES MaxTime=INFINITE State=UP\n')
        root = self.root
        self.conf.write_text(textwrap.dedent(f"""\
            ClusterName=plugintest{os.getpid()}
            SlurmctldHost=localhost(127.0.0.1)
            SlurmctldPort={free_port()}
            SlurmUser=root
            SlurmdUser=root
            AuthType=auth/none
            CredType=cred/none
            AuthInfo=cred_expire={CRED_EXPIRE}
            MpiDefault=none
            ProctrackType=proctrack/linuxproc
            TaskPlugin=task/none
            SelectType=select/cons_tres
            SelectTypeParameters=CR_CPU
            SchedulerType=sched/builtin
            SchedulerParameters=sched_interval=1
            JobRequeue=1
            ReturnToService=2
            KillWait={KILL_WAIT}
            StateSaveLocation={root}/state
            SlurmdSpoolDir={root}/spool/%n
            SlurmctldPidFile={root}/slurmctld.pid
            SlurmdPidFile={root}/slurmd.%n.pid
            SlurmctldLogFile={root}/log/slurmctld.log
            SlurmdLogFile={root}/log/slurmd.%n.log
            SlurmctldDebug=info
            SlurmdDebug=info
            JobCompType=jobcomp/none
            AccountingStorageType=accounting_storage/none
            JobAcctGatherType=jobacct_gather/none
            """) + nodes + '\n' + partition)
        return self.conf

    def start(self, timeout: float = 60) -> 'SlurmCluster':
        """Start the daemons and wait until every node is idle."""
        begin = time.monotonic()
        self.write_conf()
        log = open(self.root / 'log' / 'daemons.out', 'ab')
        self._procs.append(self._daemon(['slurmctld', '-D', '-i'], log))
        for name in self.nodes:
            self._procs.append(self._daemon(['slurmd', '-D', '-N', name],
                                            log))
        deadline = begin + timeout
        while time.monotonic() < deadline:
            for proc in self._procs:
                if proc.poll() is not None:
                    self.stop()
                    raise RuntimeError(
                        f'SlurmCluster: {proc.args} exited '
                        f'{proc.returncode} while starting; see '
                        f'{self.root / "log"}')
            if self.idle_nodes() == set(self.nodes):
                self.start_seconds = time.monotonic() - begin
                return self
            time.sleep(0.5)
        states = self.run(['sinfo', '-N', '-h'], check=False).stdout
        self.stop()
        raise RuntimeError(
            f'SlurmCluster: nodes not idle after {timeout} s: {states}; see '
            f'{self.root / "log"}')

    def _daemon(self, cmd: List[str], log) -> subprocess.Popen:
        return subprocess.Popen(cmd, env=self.env, stdout=log,
                                stderr=subprocess.STDOUT,
                                start_new_session=True,
                                preexec_fn=_die_with_parent)

    def stop(self) -> None:
        """Cancel every job, kill the daemons and their job processes."""
        if not self._procs:
            return
        self.run(['scancel', '--full', '--quiet', '--user=root'],
                 check=False, timeout=10)
        for proc in reversed(self._procs):
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in self._procs:
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        # slurmstepd and the tasks it started outlive a killed slurmd.
        self._kill_leftovers()
        self._procs = []

    def _kill_leftovers(self) -> None:
        """SIGKILL the processes that run with this cluster's SLURM_CONF."""
        conf = f'SLURM_CONF={self.conf}'.encode()
        for proc in Path('/proc').iterdir():
            if not proc.name.isdigit() or int(proc.name) == os.getpid():
                continue
            try:
                environ = (proc / 'environ').read_bytes()
            except OSError:
                continue
            if conf in environ.split(b'\0'):
                try:
                    os.kill(int(proc.name), signal.SIGKILL)
                except ProcessLookupError:
                    pass

    # -- clients -----------------------------------------------------------

    def run(self, cmd: List[str], check: bool = True, timeout: float = 30,
            **kwargs) -> subprocess.CompletedProcess:
        """Run a Slurm client (``sinfo``, ``scontrol``, ...) on this
        cluster."""
        env = dict(self.env, **kwargs.pop('env', {}))
        return subprocess.run(cmd, env=env, capture_output=True, text=True,
                              check=check, timeout=timeout, **kwargs)

    def idle_nodes(self) -> set:
        """Names of the nodes ``sinfo`` shows idle."""
        proc = self.run(['sinfo', '-N', '-h', '-o', '%N %t'], check=False,
                        timeout=10)
        return {line.split()[0] for line in proc.stdout.splitlines()
                if line.split()[1:] == ['idle']}

    def sbatch(self, args: Iterable[str], env: Optional[dict] = None) -> str:
        """Submit a batch job; returns its id."""
        proc = self.run(['sbatch', '--parsable', *map(str, args)],
                        env=env or {})
        return proc.stdout.strip().split(';')[0]

    def job(self, job_id: str) -> Dict[str, str]:
        """``scontrol show job``'s fields of a job."""
        out = self.run(['scontrol', 'show', 'job', '-o', job_id]).stdout
        return dict(re.findall(r'(\w+(?::\w+)?)=(\S*)', out))

    def show_job(self, job_id: str) -> str:
        """``scontrol show job``'s text of a job."""
        return self.run(['scontrol', 'show', 'job', job_id]).stdout

    def wait_job(self, job_id: str, states: Iterable[str] = (
            'COMPLETED', 'FAILED', 'CANCELLED', 'TIMEOUT', 'NODE_FAIL',
            'OUT_OF_MEMORY', 'BOOT_FAIL', 'DEADLINE'),
                 timeout: float = 300, poll: float = 0.5) -> Dict[str, str]:
        """Wait until a job is in one of ``states``; returns its fields."""
        states = set(states)
        deadline = time.monotonic() + timeout
        while True:
            info = self.job(job_id)
            if info.get('JobState') in states:
                return info
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f'SlurmCluster: job {job_id} not in {sorted(states)} '
                    f'after {timeout} s:\n{self.show_job(job_id)}')
            time.sleep(poll)

    def __enter__(self) -> 'SlurmCluster':
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
