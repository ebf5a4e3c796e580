"""``tools/check_data.py``: every broken data file of a config, before a
launch.

Loads the config as tools/train.py does (``config.loading.read_config``:
presets, 0.x keys; then ``--cfg-options`` and ``--data-root``), lists
the files its pipelines will open (:func:`.files.data_files`), checks
them (:func:`.check.check_files`), prints the table and the broken files,
and writes the JSON report. This module loads the config's stack; the
tool imports it after its arguments are checked.

Public API::

    check_data(config: str, data_root: Optional[str] = None,
               cfg_options: Optional[dict] = None, read: bool = False,
               workers: int = DEFAULT_WORKERS, progress: bool = False)
        -> CheckedData
    run_from_args(args: argparse.Namespace) -> int
    main(argv: Optional[Sequence[str]] = None) -> int
"""
import argparse
import contextlib
import logging
import os
import sys
import time
from dataclasses import dataclass
from typing import Dict, Iterator, Optional, Sequence

from mmengine.logging import MMLogger

from ..config.loading import merge_cfg_options, read_config
from .check import check_files
from .files import data_files
from .parser import DEFAULT_WORKERS, check_data_parser
from .report import DataCheckReport


@dataclass
class CheckedData:
    """A config's data check.

    Args:
        config (str): The config file.
        data_root (str, optional): The ``--data-root`` it was checked at.
        report (DataCheckReport): What the check found.
        list_seconds (float): Time to load the config and list the files
            (the info files read).
    """
    config: str
    data_root: Optional[str]
    report: DataCheckReport
    list_seconds: float

    def title(self) -> str:
        """The first line the tool prints."""
        root = f' at {self.data_root}' if self.data_root else ''
        report = self.report
        return (f'check_data: {self.config}{root}: {report.files} files '
                f'listed in {self.list_seconds:.1f} s, checked in '
                f'{report.mode} mode by {report.workers} thread(s)')

    def format(self) -> str:
        """What ``tools/check_data.py`` prints."""
        return self.report.format(self.title())

    def write_json(self, path: str) -> None:
        """The report's JSON, with the config and the data root."""
        self.report.write_json(path, config=self.config,
                               data_root=self.data_root,
                               list_seconds=round(self.list_seconds, 3))


@contextlib.contextmanager
def _quiet_logs() -> Iterator[None]:
    """A current mmengine logger that prints warnings and errors only (the
    presets' INFO lines would come before the table); INFO again
    afterwards, as mmengine's default logger is."""
    logger = MMLogger.get_instance(
        f'check_data_{os.getpid()}_{time.monotonic_ns()}',
        log_level='WARNING')
    try:
        yield
    finally:
        logger.setLevel(logging.INFO)
        for handler in logger.handlers:
            handler.setLevel(logging.INFO)


def check_data(config: str,
               data_root: Optional[str] = None,
               cfg_options: Optional[Dict] = None,
               read: bool = False,
               workers: int = DEFAULT_WORKERS,
               progress: bool = False) -> CheckedData:
    """Check every file the pipelines of ``config`` will open.

    Args:
        config (str): Config file.
        data_root (str, optional): ``--data-root``. Defaults to None.
        cfg_options (dict, optional): ``--cfg-options``. Defaults to None.
        read (bool): Read every file, not only stat it. Defaults to False.
        workers (int): Threads that check files. Defaults to
            :data:`DEFAULT_WORKERS`.
        progress (bool): Show a progress bar on stderr. Defaults to False.

    Returns:
        CheckedData: The report and what was checked.

    Raises:
        FileNotFoundError: If an info file is missing.
        ValueError: For a config that cannot be read or resolved.
    """
    start = time.perf_counter()
    with _quiet_logs():
        cfg, _ = read_config(config)
        merge_cfg_options(cfg, cfg_options)
        files = data_files(cfg, data_root=data_root)
    listed = time.perf_counter() - start
    report = check_files(files, read=read, workers=workers,
                         progress=progress)
    return CheckedData(config, data_root, report, listed)


def run_from_args(args: argparse.Namespace) -> int:
    """Check with parsed ``tools/check_data.py`` flags, print the report,
    write ``--json``; returns the exit status (0 clean, 1 broken)."""
    checked = check_data(
        args.config, data_root=args.data_root, cfg_options=args.cfg_options,
        read=args.read, workers=args.workers,
        progress=args.progress or sys.stderr.isatty())
    print(checked.format(), flush=True)
    checked.write_json(args.json)
    print(f'check_data: report written to {args.json}', flush=True)
    return checked.report.exit_code


def main(argv: Optional[Sequence[str]] = None) -> int:
    """``tools/check_data.py`` with ``argv``, without the one-line error
    printer; returns the exit status."""
    return run_from_args(check_data_parser().parse_args(argv))
