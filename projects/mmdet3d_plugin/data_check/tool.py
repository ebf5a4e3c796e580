"""``tools/check_data.py``: every broken data file of a config, before a
launch.

Its flags (:func:`check_data_parser`), then the check: loads the config as
tools/train.py does (``config.loading.read_config``: presets, 0.x keys;
then ``--cfg-options`` and ``--data-root``), lists the files its
pipelines will open (:func:`.data_files.data_files`), checks them
(:func:`.check.check_files`), prints the table and the broken files, and
writes the JSON report. Only argparse and mmengine's ``DictAction`` and
logger load with this module, so the tool answers ``--help`` and bad
flags before the config and the stack load: :func:`check_data` imports
the config loader when it runs.

Public API::

    check_data_parser() -> argparse.ArgumentParser
    check_data(config: str, data_root: Optional[str] = None,
               cfg_options: Optional[dict] = None, read: bool = False,
               workers: int = DEFAULT_WORKERS, progress: bool = False)
        -> CheckedData
    run_from_args(args: argparse.Namespace) -> int
    main(argv: Optional[Sequence[str]] = None) -> int
"""
import argparse
import sys
import time
from dataclasses import dataclass
from typing import Dict, Optional, Sequence

from mmengine.config import DictAction

from ..quiet_logger import quiet_logger
from .check import check_files
from .check_report import DataCheckReport
from .data_files import data_files

#: Threads of ``--workers`` unless given (docs/data_check.md: stat mode on
#: a local disk gains little from more; a network file system gains more).
DEFAULT_WORKERS = 4
#: The JSON report unless ``--json`` names another file.
DEFAULT_JSON = 'data_check.json'


def positive_int(text: str) -> int:
    """argparse type: an integer >= 1."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(
            f'expected an integer >= 1, got {text!r}')
    return value


def check_data_parser() -> argparse.ArgumentParser:
    """Flags of ``tools/check_data.py``."""
    parser = argparse.ArgumentParser(
        description='Find every broken data file a config\'s pipelines '
        'will open (key frames, sweeps, GT-database objects, images) '
        'before a launch. Exits 0 when none is broken, 1 when a file is, 2 '
        'when the check cannot run (bad arguments, missing config or info '
        'file).')
    parser.add_argument('config', help='train config file path')
    parser.add_argument(
        '--data-root', metavar='DIR',
        help="check the data at this root: every dataset and ObjectSample's "
        'GT database moved as tools/train.py --data-root moves them')
    parser.add_argument(
        '--read', action='store_true',
        help='also read every file: whole points, finite values, images '
        'that decode (default: stat only: exists, regular, not empty, size '
        'a multiple of load_dim float32)')
    parser.add_argument(
        '--workers', type=positive_int, default=DEFAULT_WORKERS,
        metavar='N', help='threads that check files (default: '
        '%(default)s)')
    parser.add_argument(
        '--json', metavar='PATH', default=DEFAULT_JSON,
        help='write the counts and every broken file as JSON to PATH '
        '(default: %(default)s in the current folder)')
    parser.add_argument(
        '--progress', action='store_true',
        help='show the progress bar on stderr even when it is not a '
        'terminal')
    parser.add_argument(
        '--cfg-options', nargs='+', action=DictAction, metavar='KEY=VALUE',
        help='override settings of the config, as key=value pairs')
    parser.add_argument(
        '--debug', action='store_true',
        help='show the traceback of input errors instead of one error line '
        '(same as MMDET3D_PLUGIN_DEBUG=1)')
    return parser


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
    # The config's stack loads here, after the tool's arguments are checked.
    from ..config.loading import merge_cfg_options, read_config
    start = time.perf_counter()
    # Warnings and errors only: the presets' INFO lines would come before
    # the table.
    with quiet_logger('check_data', level='WARNING'):
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
