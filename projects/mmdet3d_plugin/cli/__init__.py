"""What the tools call: their flags, the one way a run is prepared
(:func:`prepare_run`), the train / test entry points, the error printer and
find-unused."""
from ..failures.error_files import record_errors  # used by tools/*.py
from .errors import add_debug_flag, run_tool, user_error_message
from .find_unused import find_unused_parameters
from .parsers import test_parser, train_parser
from .prepare import process_group_backend, prepare_run, timeout_error
from .run import prepare_test, prepare_train, test, train
from .runner import build_runner, isolate_runner, setup_distributed

__all__ = [
    'add_debug_flag', 'build_runner', 'find_unused_parameters',
    'isolate_runner', 'prepare_run', 'prepare_test', 'prepare_train',
    'process_group_backend', 'record_errors', 'run_tool',
    'setup_distributed', 'test', 'test_parser', 'timeout_error', 'train',
    'train_parser', 'user_error_message'
]
