"""The fault hooks of the tests (``tests/helpers/fault_hooks.py``), on a
stand-in runner: when they fire, on which ranks, and what they do."""
import signal
from types import SimpleNamespace

import pytest

from mmdet3d.registry import HOOKS
from tests.helpers.fault_hooks import (FAULT_MESSAGE, FailAtIterHook,
                                       StopAfterHook)


def _runner(iteration: int):
    return SimpleNamespace(iter=iteration,
                           train_loop=SimpleNamespace(stop_training=False))


def _fires(hook, iteration: int, phase: str) -> bool:
    try:
        if phase == 'before':
            hook.before_train_iter(_runner(iteration), 0)
        else:
            hook.after_train_iter(_runner(iteration), 0)
    except RuntimeError:
        return True
    return False


@pytest.mark.parametrize('when, fires_at', [
    # 2 iterations done: before runner.iter 2, or right after runner.iter 1.
    ('before', ('before', 2)),
    ('after', ('after', 1)),
])
def test_fails_once_at_iterations_done(when, fires_at):
    hook = HOOKS.build(dict(type='FailAtIterHook', at_iter=2, when=when))
    assert hook.priority == ('NORMAL' if when == 'before' else 'LOWEST')
    fired = [(phase, i) for i in range(5) for phase in ('before', 'after')
             if _fires(hook, i, phase)]
    assert fired == [fires_at]


def test_message_error_and_ranks():
    hook = FailAtIterHook(at_iter=3)  # rank 0 here, every rank by default
    with pytest.raises(RuntimeError, match='^' + FAULT_MESSAGE.format(
            rank=0, iter=3) + '$'):
        hook.before_train_iter(_runner(3), 0)
    hook = FailAtIterHook(at_iter=0, error='ValueError', message='bad {iter}')
    with pytest.raises(ValueError, match='^bad 0$'):
        hook.before_train_iter(_runner(0), 0)
    for ranks in (1, [1, 2]):
        FailAtIterHook(at_iter=0, ranks=ranks).before_train_iter(
            _runner(0), 0)  # not rank 0: nothing


def test_signal_action(monkeypatch):
    sent = []
    monkeypatch.setattr('os.kill', lambda pid, sig: sent.append(sig))
    hook = FailAtIterHook(at_iter=1, action='SIGTERM', when='after')
    hook.after_train_iter(_runner(0), 0)
    assert sent == [signal.SIGTERM]


def test_first_attempt_only(monkeypatch):
    hook = FailAtIterHook(at_iter=0, first_attempt_only=True)
    for name in ('TORCHELASTIC_RESTART_COUNT', 'SLURM_RESTART_COUNT'):
        monkeypatch.setenv(name, '1')
        hook.before_train_iter(_runner(0), 0)  # a restart: nothing
        monkeypatch.setenv(name, '0')
    with pytest.raises(RuntimeError):
        hook.before_train_iter(_runner(0), 0)


@pytest.mark.parametrize('kwargs, match', [
    (dict(action='SIGNOPE'), "unknown action 'SIGNOPE'"),
    (dict(action='SIG_DFL'), "unknown action 'SIG_DFL'"),
    (dict(when='during'), "when must be 'before' or 'after'"),
    (dict(error='KeyboardInterrupt'), 'must name a built-in exception'),
    (dict(error='Nope'), 'must name a built-in exception'),
])
def test_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        FailAtIterHook(at_iter=0, **kwargs)


def test_stop_after():
    hook = HOOKS.build(dict(type='StopAfterHook', after_iter=3))
    assert hook.priority == 'LOWEST'
    for i in range(3):
        runner = _runner(i)
        hook.after_train_iter(runner, 0)
        assert runner.train_loop.stop_training == (i == 2)
    with pytest.raises(SystemExit) as exc:
        StopAfterHook(after_iter=3, exit_process=True).after_train_iter(
            _runner(2), 0)
    assert exc.value.code == 0
    StopAfterHook(after_iter=3, exit_process=True).after_train_iter(
        _runner(1), 0)
