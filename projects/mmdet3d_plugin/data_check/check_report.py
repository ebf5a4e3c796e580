"""What a data check found: the table, the broken files and the JSON.

:class:`DataCheckReport` is what :func:`.check.check_files` returns.
``format()`` is what ``tools/check_data.py`` prints: one table (kind,
files, broken), then each broken file on its own line with its kind, its
sample and what is wrong. ``to_json()`` holds the counts and every broken
file. The exit status of the tool is :attr:`DataCheckReport.exit_code`:
:data:`EXIT_CLEAN`, :data:`EXIT_BROKEN`, or :data:`EXIT_USAGE` when the
check could not run (bad arguments, a missing config or info file).

Public API::

    DataCheckReport(counts: Dict[str, int], broken: List[BrokenFile],
                    read: bool = False, workers: int = 1,
                    seconds: float = 0.0, cpu_seconds: float = 0.0)
        .ok -> bool, .exit_code -> int, .broken_counts -> Dict[str, int],
        .format(title: str = '') -> str, .to_json() -> dict,
        .write_json(path: str) -> None
    BrokenFile(file: DataFile, problem: str)
"""
from dataclasses import dataclass, field
from typing import Dict, List

from ..fileio.atomic import atomic_write_json
from .data_files import DataFile, in_kind_order

#: Exit status: every file passed.
EXIT_CLEAN = 0
#: Exit status: a file is broken.
EXIT_BROKEN = 1
#: Exit status: the check could not run (bad arguments, missing config or
#: info file).
EXIT_USAGE = 2
#: What to do about broken files, printed under them.
FIX = ('replace or regenerate the broken files (a generated root: '
       'tools/create_synthetic_nuscenes.py, then tools/create_data.py, which '
       'also rebuilds the GT database), or remove their samples from the '
       'info files')


@dataclass
class BrokenFile:
    """A file that failed its check.

    Args:
        file (DataFile): The file.
        problem (str): What is wrong, one short phrase (``'missing'``,
            ``'size 27336 bytes is not a multiple of 20 (5 float32 per
            point)'``, ``'3 non-finite values'``).
    """
    file: DataFile
    problem: str

    def line(self) -> str:
        """``<kind>  <whose>  <path>: <problem>``."""
        return (f'{self.file.kind:<12} {self.file.owner()}  '
                f'{self.file.path}: {self.problem}')

    def to_dict(self) -> dict:
        """The JSON object: the file's fields and its problem."""
        return dict(self.file.to_dict(), problem=self.problem)


@dataclass
class DataCheckReport:
    """The result of checking a list of files.

    Args:
        counts (dict[str, int]): Files checked per kind.
        broken (list[BrokenFile]): The broken ones, in the order checked.
        read (bool): Whether the files were read (else only stat'ed).
            Defaults to False.
        workers (int): Threads that checked them. Defaults to 1.
        seconds (float): Wall time of the check. Defaults to 0.
        cpu_seconds (float): CPU time of this process during the check
            (all threads). Defaults to 0.
    """
    counts: Dict[str, int] = field(default_factory=dict)
    broken: List[BrokenFile] = field(default_factory=list)
    read: bool = False
    workers: int = 1
    seconds: float = 0.0
    cpu_seconds: float = 0.0

    @property
    def ok(self) -> bool:
        """Whether no file is broken."""
        return not self.broken

    @property
    def exit_code(self) -> int:
        """:data:`EXIT_CLEAN` or :data:`EXIT_BROKEN`."""
        return EXIT_CLEAN if self.ok else EXIT_BROKEN

    @property
    def files(self) -> int:
        """Files checked."""
        return sum(self.counts.values())

    @property
    def broken_counts(self) -> Dict[str, int]:
        """Broken files per kind (every kind of :attr:`counts`)."""
        out = {kind: 0 for kind in self.counts}
        for item in self.broken:
            out[item.file.kind] = out.get(item.file.kind, 0) + 1
        return out

    @property
    def mode(self) -> str:
        """'read' or 'stat'."""
        return 'read' if self.read else 'stat'

    def table(self) -> str:
        """Kind, files, broken; a total row."""
        broken = self.broken_counts
        lines = [f'{"kind":<12} {"files":>9} {"broken":>7}']
        for kind in in_kind_order(self.counts):
            lines.append(f'{kind:<12} {self.counts[kind]:>9} '
                         f'{broken.get(kind, 0):>7}')
        lines.append(f'{"total":<12} {self.files:>9} {len(self.broken):>7}')
        return '\n'.join(lines)

    def format(self, title: str = '') -> str:
        """The table, each broken file on its own line, and a verdict.

        Args:
            title (str): First line (e.g. the config). Defaults to ''.
        """
        what = ('exist, are regular files, are not empty and hold whole '
                'float32 points' + (', values finite, images decodable'
                                    if self.read else ''))
        lines = [title] if title else []
        lines.append(self.table())
        if self.broken:
            lines.append('broken files (kind, sample, path: problem):')
            lines += [item.line() for item in self.broken]
            lines.append(
                f'check_data: {len(self.broken)} of {self.files} files '
                f'broken ({self.mode} mode, {self.seconds:.1f} s); fix: '
                f'{FIX}')
        else:
            lines.append(
                f'check_data: all {self.files} files {what} ({self.mode} '
                f'mode, {self.seconds:.1f} s)')
        return '\n'.join(lines)

    def to_json(self) -> dict:
        """Counts per kind and every broken file."""
        broken = self.broken_counts
        return dict(
            mode=self.mode,
            workers=self.workers,
            seconds=round(self.seconds, 3),
            cpu_seconds=round(self.cpu_seconds, 3),
            files=self.files,
            broken_files=len(self.broken),
            counts={kind: dict(files=n, broken=broken.get(kind, 0))
                    for kind, n in self.counts.items()},
            broken=[item.to_dict() for item in self.broken])

    def write_json(self, path: str, **extra) -> None:
        """Write :meth:`to_json` (plus ``extra`` keys first) to ``path``,
        atomically, creating its folder."""
        atomic_write_json(dict(extra, **self.to_json()), path)
