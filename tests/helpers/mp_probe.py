"""A worker target that imports nothing heavy, for start-method tests.

Unpickling a target imports its module in the worker; this one is kept
light so that what a worker finds in ``sys.modules`` is what its start
method gave it.
"""
import sys


def report_modules(names, queue):
    """Put the subset of ``names`` already imported in this process."""
    queue.put(sorted(name for name in names if name in sys.modules))
