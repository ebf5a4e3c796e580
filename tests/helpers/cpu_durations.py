"""``--cpu-durations=N``: the N tests that cost the most CPU time.

pytest's ``--durations`` reports wall time, which on a loaded machine says
more about the neighbours than about the test. This plugin reports what
the suite's budget counts: user + sys CPU seconds of the test process and
of every process it started and waited for (tool launches, torchrun and its
ranks), per test, setup (module fixtures included), call and teardown
together. Under pytest-xdist each worker measures its own tests and the
figures travel to the controller in the reports' ``user_properties``.
"""
import resource
from collections import defaultdict

import pytest

KEY = 'cpu_s'


def _cpu_seconds() -> float:
    """User + sys CPU seconds of this process and its waited-for
    children."""
    total = 0.0
    for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN):
        usage = resource.getrusage(who)
        total += usage.ru_utime + usage.ru_stime
    return total


def pytest_addoption(parser):
    parser.getgroup('terminal reporting').addoption(
        '--cpu-durations', type=int, default=None, metavar='N',
        help='show the N tests that cost the most CPU time (0: all)')


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_setup(item):
    yield from _measured(item, 'setup')


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    yield from _measured(item, 'call')


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item):
    yield from _measured(item, 'teardown')


def _measured(item, when: str):
    start = _cpu_seconds()
    yield
    item.user_properties.append((f'{KEY}_{when}', _cpu_seconds() - start))


class CpuReport:
    """Sums each test's phases as their reports arrive, prints the table."""

    def __init__(self, count: int):
        self.count = count
        self.seconds = defaultdict(float)

    def pytest_runtest_logreport(self, report):
        for name, value in report.user_properties:
            if name == f'{KEY}_{report.when}':
                self.seconds[report.nodeid] += value

    def pytest_terminal_summary(self, terminalreporter):
        ranked = sorted(self.seconds.items(), key=lambda kv: -kv[1])
        shown = ranked if self.count == 0 else ranked[:self.count]
        write = terminalreporter.write_line
        terminalreporter.write_sep(
            '=', f'slowest {len(shown)} CPU durations (user + sys, '
            'children included)')
        for nodeid, seconds in shown:
            write(f'{seconds:9.2f}s  {nodeid}')
        write(f'{sum(self.seconds.values()):9.2f}s  in all '
              f'{len(self.seconds)} tests')


def pytest_configure(config):
    count = config.getoption('cpu_durations')
    if count is not None:
        config.pluginmanager.register(CpuReport(count), 'cpu-durations')
