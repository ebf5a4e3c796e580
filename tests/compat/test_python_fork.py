"""CPython gh-112275 by version (``compat/python_fork.py``), and what the
doctor says of this interpreter."""
import pytest

from projects.mmdet3d_plugin.compat.python_fork import fork_deadlock


@pytest.mark.parametrize('version,fixed', [
    ((3, 11, 7), '3.11.10'), ((3, 11, 9), '3.11.10'), ((3, 11, 10), None),
    ((3, 10, 14), '3.10.15'), ((3, 10, 15), None), ((3, 9, 19), '3.9.20'),
    ((3, 8, 10), '3.8.20'), ((3, 12, 0), None), ((3, 13, 1), None),
    ((3, 14, 0), None),
])
def test_the_versions_that_have_it(version, fixed):
    problem = fork_deadlock(version)
    if fixed is None:
        assert problem is None
    else:
        assert problem.startswith('Python {}.{}.{} has CPython '
                                  'gh-112275'.format(*version))
        assert problem.endswith(f'fixed in {fixed}')
