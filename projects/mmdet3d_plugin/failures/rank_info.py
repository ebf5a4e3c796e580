"""What each rank leaves next to its error file while it runs.

A rank killed by a signal writes no error file, so every rank writes
``rank_info.json`` in the folder of its ``TORCHELASTIC_ERROR_FILE`` when
it starts: rank, host, pid, work and log folders, and a memory sample
refreshed every few seconds by a daemon thread (the rank's peak RSS as the
kernel counts it, its DataLoader workers' RSS, the host's available
memory). The report reads it to name a SIGKILLed rank's host and memory.
"""
import json
import os
import os.path as osp
import threading
import time
from typing import Dict, Optional

import psutil

from .error_files import ERROR_FILE_ENV
from .identity import rank_identity
from ..dist.durations import positive_seconds
from ..fileio.atomic import atomic_write

#: File next to the error file.
RANK_INFO_NAME = 'rank_info.json'
#: Seconds between memory samples.
SAMPLE_INTERVAL = 5.0
#: Every how many samples the child processes are summed too.
CHILDREN_EVERY = 6
_MB = 1024 * 1024


def _status_kb() -> Dict[str, int]:
    """This process's peak and current RSS (kB) from Linux's ``/proc``
    (psutil has no peak RSS on Linux)."""
    values = {}
    try:
        with open('/proc/self/status') as f:
            for line in f:
                key, _, rest = line.partition(':')
                if key in ('VmHWM', 'VmRSS'):
                    values[key] = int(rest.split()[0])
    except (OSError, ValueError, IndexError):
        pass
    return values


def memory_sample(children: bool = True) -> Dict[str, float]:
    """This process's memory and its children's, in MB.

    Args:
        children (bool): Also sum the child processes' RSS (psutil scans
            all processes for them, the costly part). Defaults to True.

    Returns:
        dict: ``peak_rss_mb`` (the kernel's high-water mark, VmHWM) and
        ``rss_mb`` (Linux only), ``workers`` and ``workers_rss_mb``
        (number and summed RSS of the child processes, when ``children``),
        ``host_total_mb`` and ``host_available_mb``.
    """
    own = _status_kb()
    sample = {}
    if 'VmHWM' in own:
        sample['peak_rss_mb'] = round(own['VmHWM'] / 1024, 1)
    if 'VmRSS' in own:
        sample['rss_mb'] = round(own['VmRSS'] / 1024, 1)
    if children:
        rss = []
        for child in psutil.Process().children():
            try:
                rss.append(child.memory_info().rss)
            except psutil.Error:
                pass  # it ended meanwhile
        sample['workers'] = len(rss)
        sample['workers_rss_mb'] = round(sum(rss) / _MB, 1)
    host = psutil.virtual_memory()
    sample['host_total_mb'] = round(host.total / _MB, 1)
    sample['host_available_mb'] = round(host.available / _MB, 1)
    return sample


class RankInfo:
    """``rank_info.json`` of this process, kept up to date.

    Args:
        path (str): The file to write.
        interval (float): Seconds between memory samples. Defaults to
            :data:`SAMPLE_INTERVAL`.
    """

    def __init__(self, path: str, interval: float = SAMPLE_INTERVAL) -> None:
        self.path = path
        self.interval = positive_seconds('RankInfo', 'interval', interval,
                                         f'interval={SAMPLE_INTERVAL}')
        self.data: Dict[str, object] = dict(rank_identity(),
                                            started=time.time())
        self._lock = threading.Lock()
        self._samples = 0
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None

    def update(self, **fields) -> None:
        """Add fields (``work_dir``, ``log_dir``) and rewrite the file."""
        with self._lock:
            self.data.update(fields)
            self._sample_and_write()

    def _sample_and_write(self) -> None:
        self._samples += 1
        sample = memory_sample(
            children=self._samples % CHILDREN_EVERY == 1)
        memory = dict(self.data.get('memory') or {})
        peak_workers = max(memory.get('workers_peak_rss_mb', 0.0),
                           sample.get('workers_rss_mb', 0.0))
        low = min(memory.get('host_min_available_mb', float('inf')),
                  sample.get('host_available_mb', float('inf')))
        memory.update(sample, workers_peak_rss_mb=peak_workers,
                      sampled=time.time())
        if low != float('inf'):
            memory['host_min_available_mb'] = low
        self.data['memory'] = memory
        try:
            # From any thread; rewritten often, hence not fsynced.
            atomic_write(json.dumps(self.data, indent=1), self.path,
                         durable=False)
        except OSError:
            pass  # the folder went away: the run is being torn down

    def start(self) -> 'RankInfo':
        """Write the file now and refresh it every ``interval`` seconds."""
        os.makedirs(osp.dirname(self.path) or '.', exist_ok=True)
        self.update()
        self._thread = threading.Thread(
            target=self._run, name='rank-info-sampler', daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop refreshing and join the thread (the file stays)."""
        self._stop.set()
        if self._thread is not None and \
                self._thread is not threading.current_thread():
            self._thread.join(timeout=self.interval + 5)
            self._thread = None

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            with self._lock:
                self._sample_and_write()


_current: Optional[RankInfo] = None


def start_rank_info(interval: float = SAMPLE_INTERVAL) -> Optional[RankInfo]:
    """Start this rank's ``rank_info.json`` if an error file is set.

    Args:
        interval (float): Seconds between memory samples.

    Returns:
        RankInfo | None: None outside torchrun / the Slurm launchers.
    """
    global _current
    error_file = os.environ.get(ERROR_FILE_ENV)
    if not error_file or _current is not None:
        return _current
    _current = RankInfo(
        osp.join(osp.dirname(osp.abspath(error_file)), RANK_INFO_NAME),
        interval).start()
    return _current


def stop_rank_info() -> None:
    """Stop this rank's sampler and forget it (the file stays)."""
    global _current
    if _current is not None:
        _current.stop()
    _current = None


def note_rank_context(**fields) -> None:
    """Record ``work_dir`` / ``log_dir`` of this rank, if it has a file.

    Args:
        **fields: JSON-serialisable values, e.g. ``work_dir='work_dirs/x'``.
    """
    if _current is not None:
        _current.update(**fields)


def current_rank_info() -> Dict[str, object]:
    """What this rank wrote so far (empty outside the launchers)."""
    return dict(_current.data) if _current is not None else {}
