"""What the tools call: train / test entry points, the error printer,
find-unused and the quickstart."""
from .errors import run_tool
from .find_unused import find_unused_parameters
from .launch import build_runner, test, train
from .quickstart import run_quickstart

__all__ = [
    'build_runner', 'find_unused_parameters', 'run_quickstart', 'run_tool',
    'test', 'train'
]
