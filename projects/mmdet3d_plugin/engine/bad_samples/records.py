"""The records of replaced samples: the JSON lines each loading process
writes into ``<work_dir>/bad_samples/`` (:class:`.replace.SampleReplacer`),
read as they grow, and gathered into ``<work_dir>/bad_samples.json``: one
entry per broken file (file, token, error, first iteration, count)."""
import json
import os
import os.path as osp
from typing import Dict, List

from ...fileio.atomic import atomic_write

#: The gathered records, in the work dir.
RECORDS_FILE = 'bad_samples.json'
#: The folder of the loading processes' record lines, in the work dir.
RECORDS_DIR = 'bad_samples'


class RecordReader:
    """Reads the record lines of every rank's loading processes as they are
    written (each file from where the last read stopped) and keeps one
    entry per broken file.

    Args:
        records_dir (str): The folder the processes write into.
    """

    def __init__(self, records_dir: str) -> None:
        self.records_dir = records_dir
        self._read: Dict[str, int] = {}
        self.entries: Dict[str, dict] = {}
        #: Whether lines were read since the entries were last written.
        self.unwritten = False

    def read(self, iteration: int) -> List[dict]:
        """Read what was written since the last call; the entries of files
        not seen before, stamped with ``iteration`` (the iteration during
        which the run met them; the DataLoader's workers load a few
        batches ahead).

        Args:
            iteration (int): The current iteration, 1-based.

        Returns:
            list[dict]: The new entries.
        """
        try:
            names = sorted(os.listdir(self.records_dir))
        except FileNotFoundError:
            return []
        new = []
        for name in names:
            path = osp.join(self.records_dir, name)
            start = self._read.get(name, 0)
            if not name.endswith('.jsonl') or os.stat(path).st_size <= start:
                continue
            with open(path) as stream:
                stream.seek(start)
                text = stream.read()
            done = text.rfind('\n') + 1  # a line being written waits
            self._read[name] = start + done
            self.unwritten = self.unwritten or done > 0
            for line in text[:done].splitlines():
                entry = self._add(json.loads(line), iteration)
                if entry is not None:
                    new.append(entry)
        return new

    def _add(self, record: dict, iteration: int):
        entry = self.entries.get(record['file'])
        if entry is not None:
            entry['count'] += 1
            if record['rank'] not in entry['ranks']:
                entry['ranks'].append(record['rank'])
            return None
        entry = {k: record.get(k)
                 for k in ('file', 'token', 'sample_idx', 'error')}
        entry.update(first_iteration=iteration, count=1,
                     ranks=[record['rank']], replaced_by=record['replaced_by'])
        self.entries[record['file']] = entry
        return entry

    def write(self, work_dir: str) -> str:
        """Write the entries to ``<work_dir>/bad_samples.json`` (a list,
        in the order they were met) and return its path."""
        path = osp.join(work_dir, RECORDS_FILE)
        self.unwritten = False
        atomic_write(json.dumps(list(self.entries.values()), indent=2,
                                default=str), path)
        return path

    def start(self, work_dir: str, resumed: bool) -> None:
        """Skip the record lines written before this run started, and
        take up the entries of the run it resumes (its
        ``bad_samples.json``)."""
        path = osp.join(work_dir, RECORDS_FILE)
        if resumed and osp.isfile(path):
            with open(path) as stream:
                self.entries = {e['file']: e for e in json.load(stream)}
        if osp.isdir(self.records_dir):
            for name in os.listdir(self.records_dir):
                self._read[name] = os.stat(
                    osp.join(self.records_dir, name)).st_size
