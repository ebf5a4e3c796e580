"""CPython gh-112275: a process forked from a threaded process can
deadlock in the child right after ``fork()`` (``PyOS_AfterFork_Child``
waits for a lock another thread held at the fork). A training process runs
threads (the plugin's monitors, torch's, the logger's), and mmengine
starts DataLoader workers with ``fork`` by default, so a worker can hang
before it loads a sample. It hung one of our test runs once (a worker of
rank 1). Fixed in 3.8.20, 3.9.20, 3.10.15 and 3.11.10 (September 2024;
python/cpython#112336 and its backports); 3.12 and later never had it.

Not a workaround (nothing here changes Python): what the doctor and
``tools/train.py`` tell a user of an affected interpreter.
"""
import sys
from typing import Optional, Sequence

#: The first release of each affected line that has the fix.
FIXED = {(3, 8): 20, (3, 9): 20, (3, 10): 15, (3, 11): 10}
#: The start method configs set to avoid it (SafeNuScenesDataset makes
#: forkserver / spawn workers cheap: its infos are shared, not pickled).
FIX = ("a Python with the fix (3.11.10 or later, or 3.12+), or workers "
       "that are not forked: env_cfg = dict(mp_cfg=dict(mp_start_method="
       "'forkserver')) with SafeNuScenesDataset")


def fork_deadlock(version: Sequence[int] = tuple(sys.version_info[:3])
                  ) -> Optional[str]:
    """What is wrong with forking DataLoader workers on this interpreter,
    or None where nothing is.

    Args:
        version (tuple[int]): ``(major, minor, micro)``. Defaults to this
            interpreter's.

    Returns:
        str | None: One sentence naming the version, the bug and the
        release that fixed it.
    """
    major, minor, micro = (tuple(version) + (0, 0, 0))[:3]
    fixed = FIXED.get((major, minor))
    if fixed is None or micro >= fixed:
        return None
    return (f'Python {major}.{minor}.{micro} has CPython gh-112275: a '
            'DataLoader worker forked from the threaded training process '
            'can deadlock right after fork() (stuck in PyOS_AfterFork_Child) '
            f'and hang the run; fixed in {major}.{minor}.{fixed}')
