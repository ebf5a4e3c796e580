"""The flags of ``tools/check_data.py`` (argparse and mmengine's
``DictAction`` only: the tool answers ``--help`` and bad flags before the
config and the stack load)."""
import argparse

from mmengine.config import DictAction

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
