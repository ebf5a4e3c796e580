"""dist.budget: the watchdog's round and group timeouts, the process
group's timeout read from a config, the evaluators' ``dist_wait_timeout``
and ``timeout_problems``, which reports timeouts that are not ordered with
the fix."""
import pytest
from mmengine.config import Config

from projects.mmdet3d_plugin.compat.torch_api import torch_at_least
from projects.mmdet3d_plugin.dist.budget import (
    PROCESS_GROUP_DEFAULT_TIMEOUT, WATCHDOG_GROUP_MARGIN, dist_wait_timeouts,
    nccl_setting_problems,
    process_group_timeout, timeout_problems, watchdog_group_timeout,
    watchdog_interval)


def _cfg(dist_timeout=None, hooks=(), **evaluators):
    cfg = dict(custom_hooks=list(hooks), **evaluators)
    if dist_timeout is not None:
        cfg['env_cfg'] = dict(dist_cfg=dict(backend='nccl',
                                            timeout=dist_timeout))
    return cfg


@pytest.mark.parametrize('timeout, interval, expected', [
    (20, None, 5.0),  # a quarter of the timeout ...
    (1800, None, 10.0),  # ... at most 10 s
    (1800, 3, 3.0),  # an explicit interval wins
])
def test_watchdog_interval(timeout, interval, expected):
    result = watchdog_interval(timeout, interval)
    assert result == expected and type(result) is float


@pytest.mark.parametrize('timeout, interval, expected', [
    (1800, 10, 1800.0),  # a whole timeout ...
    (10, 20, 2 * 20 + WATCHDOG_GROUP_MARGIN),  # ... or two rounds + margin
])
def test_watchdog_group_timeout(timeout, interval, expected):
    assert watchdog_group_timeout(timeout, interval) == expected


@pytest.mark.parametrize('cfg, backend, expected', [
    (_cfg(), 'nccl', (PROCESS_GROUP_DEFAULT_TIMEOUT['nccl'], False)),
    (_cfg(), 'gloo', (1800.0, False)),
    (_cfg(), 'mpi', (1800.0, False)),
    (dict(env_cfg=dict(dist_cfg=None)), 'nccl',
     (PROCESS_GROUP_DEFAULT_TIMEOUT['nccl'], False)),
    (_cfg(dist_timeout=7200), 'nccl', (7200.0, True)),
    (_cfg(dist_timeout=7200), 'gloo', (7200.0, True)),
])
def test_process_group_timeout(cfg, backend, expected):
    assert process_group_timeout(cfg, backend) == expected


def test_dist_wait_timeouts_of_single_and_listed_evaluators():
    cfg = _cfg(
        val_evaluator=dict(type='SafeNuScenesMetric', dist_wait_timeout=900),
        test_evaluator=[
            dict(type='SafeNuScenesMetric'),
            dict(type='SafeNuScenesMetric', dist_wait_timeout=60)])
    assert dist_wait_timeouts(cfg) == {
        'val_evaluator': 900.0, 'test_evaluator[1]': 60.0}
    assert dist_wait_timeouts(_cfg(val_evaluator=None)) == {}


def test_ordered_timeouts_have_no_problem():
    cfg = _cfg(dist_timeout=3600,
               hooks=[dict(type='DistWatchdogHook', timeout=1800),
                      dict(type='EmptyCacheHook')],
               val_evaluator=dict(type='Metric', dist_wait_timeout=14400))
    assert timeout_problems(cfg) == []
    assert timeout_problems(Config(cfg)) == []


def test_watchdog_slower_than_the_default_nccl_timeout():
    # The defaults: 1800 s + 10 s against NCCL's 600 s (torch >= 2.2) or
    # 1800 s (torch 2.1, default_pg_timeout for every backend).
    nccl = 600 if torch_at_least('2.2') else 1800
    assert PROCESS_GROUP_DEFAULT_TIMEOUT['nccl'] == nccl
    cfg = _cfg(hooks=[dict(type='DistWatchdogHook')])
    assert timeout_problems(cfg) == [
        "DistWatchdogHook: timeout=1800 s (+ interval 10 s) is not below "
        f"the process group's collective timeout ({nccl} s, torch's nccl "
        "default): nccl would end a hung job first, without stacks. Fix: "
        f"set the hook's timeout to about {nccl // 2}, or raise "
        "env_cfg.dist_cfg.timeout above 1810"]


def test_the_nccl_default_is_the_installed_torchs():
    """torch >= 2.2 names NCCL's own default (10 minutes); torch 2.1 has
    only default_pg_timeout, which NCCL then uses."""
    import torch.distributed.constants as constants
    if hasattr(constants, 'default_pg_nccl_timeout') and \
            constants.default_pg_nccl_timeout is not None:
        assert PROCESS_GROUP_DEFAULT_TIMEOUT['nccl'] == \
            constants.default_pg_nccl_timeout.total_seconds()
    elif not torch_at_least('2.2'):
        assert not hasattr(constants, 'default_pg_nccl_timeout')
        assert PROCESS_GROUP_DEFAULT_TIMEOUT['nccl'] == \
            constants.default_pg_timeout.total_seconds()
    assert PROCESS_GROUP_DEFAULT_TIMEOUT['gloo'] == \
        constants.default_pg_timeout.total_seconds()


@pytest.mark.parametrize('hook', [
    dict(type='DistWatchdogHook', timeout=1790, interval=10),
    dict(type='mmdet3d.DistWatchdogHook', timeout=1790, interval=10),
])
def test_watchdog_ending_with_the_configured_timeout(hook):
    # timeout + interval == the group's timeout is not below it.
    problems = timeout_problems(Config(_cfg(dist_timeout=1800,
                                            hooks=[hook])))
    assert len(problems) == 1
    assert "collective timeout (1800 s, env_cfg.dist_cfg.timeout)" in \
        problems[0]
    assert problems[0].endswith('raise env_cfg.dist_cfg.timeout above 1800')


def test_gloo_backend_uses_its_own_default():
    # 900 s + 10 s: below gloo's 1800 s; NCCL's 600 s from torch 2.2
    # (torch 2.1: 1800 s too).
    cfg = _cfg(hooks=[dict(type='DistWatchdogHook', timeout=900)])
    assert timeout_problems(cfg, backend='gloo') == []
    assert len(timeout_problems(cfg, backend='nccl')) == (
        1 if torch_at_least('2.2') else 0)


@pytest.mark.parametrize('wait', [0, -5])
def test_non_positive_dist_wait_timeout(wait):
    cfg = _cfg(test_evaluator=[dict(type='Metric'),
                               dict(type='Metric', dist_wait_timeout=wait)])
    assert timeout_problems(cfg) == [
        f'test_evaluator[1]: dist_wait_timeout={wait} must be positive. '
        'Fix: set test_evaluator[1].dist_wait_timeout to the longest '
        'evaluation you expect, e.g. 14400']


def test_an_nccl_setting_under_the_other_torchs_name_is_named():
    """torch 2.1 reads NCCL_ASYNC_ERROR_HANDLING / NCCL_BLOCKING_WAIT,
    torch >= 2.2 TORCH_NCCL_*: the name the installed torch ignores is a
    problem with the name it reads."""
    read = 'TORCH_NCCL_' if torch_at_least('2.2') else 'NCCL_'
    ignored = 'NCCL_' if read == 'TORCH_NCCL_' else 'TORCH_NCCL_'
    assert nccl_setting_problems({}) == []
    assert nccl_setting_problems({read + 'BLOCKING_WAIT': '1'}) == []
    problems = nccl_setting_problems({ignored + 'BLOCKING_WAIT': '1',
                                      ignored + 'ASYNC_ERROR_HANDLING': '3'})
    assert len(problems) == 2
    assert problems[0].startswith(f'{ignored}ASYNC_ERROR_HANDLING=3 is set, '
                                  f'but this torch reads {read}ASYNC_')
    assert problems[1].endswith(f'Fix: export {read}BLOCKING_WAIT=1')
    # Both names set: the one read is there, nothing to say.
    assert nccl_setting_problems({ignored + 'BLOCKING_WAIT': '1',
                                  read + 'BLOCKING_WAIT': '1'}) == []


def test_timeout_problems_name_the_ignored_nccl_setting(monkeypatch):
    ignored = ('NCCL_' if torch_at_least('2.2') else 'TORCH_NCCL_') + \
        'ASYNC_ERROR_HANDLING'
    for setting in ('ASYNC_ERROR_HANDLING', 'BLOCKING_WAIT'):
        for prefix in ('NCCL_', 'TORCH_NCCL_'):
            monkeypatch.delenv(prefix + setting, raising=False)
    cfg = _cfg(dist_timeout=3600, hooks=[dict(type='DistWatchdogHook')])
    assert timeout_problems(cfg, 'nccl') == []
    monkeypatch.setenv(ignored, '1')
    assert [p.split(' ')[0] for p in timeout_problems(cfg, 'nccl')] == [
        f'{ignored}=1']
    assert timeout_problems(cfg, 'gloo') == []
