"""docs/development.md's table of real launches stays true: every test it
names exists, and every test module with a real launch (marker ``launch``)
is in it."""
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TESTS = REPO / 'tests'
NAME = re.compile(r'`((?:\w+/)*test_\w+\.py)(?:::(\w+))?`')


def _table() -> str:
    page = (REPO / 'docs' / 'development.md').read_text()
    start = page.index('### The real launches and what each proves')
    return page[start:page.index('\n\n', page.index('| --- |', start))]


def _named() -> list:
    return [m.groups() for line in _table().splitlines()
            if line.startswith('| `') for m in NAME.finditer(
                line.split(' | ')[0])]


def test_every_named_test_exists():
    named = _named()
    assert len(named) > 20
    for path, func in named:
        source = TESTS / path
        assert source.is_file(), f'docs/development.md names {path}'
        if func:
            assert re.search(rf'^def {func}\(', source.read_text(),
                             re.M), f'docs/development.md names {path}::{func}'


def test_every_module_with_a_launch_is_listed():
    listed = {path for path, _ in _named()}
    marked = {str(path.relative_to(TESTS))
              for path in TESTS.rglob('test_*.py')
              if re.search(r'mark\.(launch|full_size)\b', path.read_text())}
    assert marked, 'no test is marked launch or full_size'
    assert marked <= listed, (
        f'not in docs/development.md\'s table of real launches: '
        f'{sorted(marked - listed)}')
