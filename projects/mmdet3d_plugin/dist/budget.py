"""The timeouts of a distributed run, checked against each other.

Four timeouts must be ordered, and each was validated alone:

- the process group's collective timeout (``env_cfg.dist_cfg.timeout``;
  torch's default is 600 s for NCCL from torch 2.2, 1800 s for gloo and
  for NCCL on torch 2.1): NCCL aborts every
  rank, without a Python stack, once a collective waits that long;
- ``DistWatchdogHook.timeout``: seconds without progress that count as a
  hang; it must end a hang (``timeout + interval``) before the process
  group does, or the report with every rank's stack never comes;
- the watchdog's own gloo group waits ``watchdog_group_timeout`` for a
  round: never less than two rounds plus a margin;
- a metric's ``dist_wait_timeout`` (4 h by default): how long the ranks
  wait for rank 0 to evaluate, on the metric's own group. The watchdog
  counts that phase against it (:mod:`.phase`), not against its timeout.

:func:`timeout_problems` reads them from a config (and, under NCCL,
:func:`nccl_setting_problems` the environment: a timeout setting under the
name this torch does not read); the tools stop on a
problem where the run is prepared, the doctor reports it.
"""
import os
from typing import Dict, Iterator, List, Optional, Tuple

from ..compat.torch_api import nccl_env, torch_at_least

#: torch's default collective timeout when ``dist_cfg.timeout`` is unset:
#: torch 2.2 gave NCCL a default of its own (``default_pg_nccl_timeout``, 10
#: minutes); torch 2.1 used ``default_pg_timeout`` (30 minutes) for every
#: backend, enforced under NCCL since ``NCCL_ASYNC_ERROR_HANDLING`` defaults
#: to 1 there.
PROCESS_GROUP_DEFAULT_TIMEOUT = {
    'nccl': 600.0 if torch_at_least('2.2') else 1800.0,
    'gloo': 1800.0}
#: ``DistWatchdogHook``'s defaults.
WATCHDOG_DEFAULT_TIMEOUT = 1800.0
#: Seconds added to two rounds for the watchdog group's own timeout.
WATCHDOG_GROUP_MARGIN = 30.0
_WATCHDOG_TYPES = ('DistWatchdogHook', 'mmdet3d.DistWatchdogHook')


def watchdog_interval(timeout: float, interval: Optional[float]) -> float:
    """The watchdog's round length: ``interval``, or ``min(timeout / 4,
    10)`` when it is None."""
    return min(timeout / 4, 10.0) if interval is None else float(interval)


def watchdog_group_timeout(timeout: float, interval: float) -> float:
    """The collective timeout of the watchdog's own gloo group: a round
    may take a whole ``timeout`` when a rank is stuck in native code, and
    never less than two rounds plus a margin."""
    return max(float(timeout), 2 * float(interval) + WATCHDOG_GROUP_MARGIN)


def _watchdogs(cfg) -> Iterator[Tuple[float, float]]:
    for hook in cfg.get('custom_hooks') or []:
        if isinstance(hook, dict) and hook.get('type') in _WATCHDOG_TYPES:
            timeout = float(hook.get('timeout', WATCHDOG_DEFAULT_TIMEOUT))
            yield timeout, watchdog_interval(timeout, hook.get('interval'))


def process_group_timeout(cfg, backend: str) -> Tuple[float, bool]:
    """The process group's collective timeout and whether the config sets
    it (else torch's default for ``backend``)."""
    dist_cfg = (cfg.get('env_cfg') or {}).get('dist_cfg') or {}
    if dist_cfg.get('timeout'):
        return float(dist_cfg['timeout']), True
    return PROCESS_GROUP_DEFAULT_TIMEOUT.get(backend, 1800.0), False


def dist_wait_timeouts(cfg) -> Dict[str, float]:
    """``dist_wait_timeout`` of each evaluator that sets one."""
    out = {}
    for name in ('val_evaluator', 'test_evaluator'):
        evaluators = cfg.get(name)
        items = evaluators if isinstance(evaluators, (list, tuple)) else [
            evaluators
        ]
        for i, evaluator in enumerate(items):
            if isinstance(evaluator, dict) and \
                    'dist_wait_timeout' in evaluator:
                key = name + (f'[{i}]' if isinstance(evaluators,
                                                     (list, tuple)) else '')
                out[key] = float(evaluator['dist_wait_timeout'])
    return out


#: The NCCL settings of torch that enforce the collective timeout, without
#: prefix (:func:`~..compat.torch_api.nccl_env` gives this torch's name).
NCCL_TIMEOUT_SETTINGS = ('ASYNC_ERROR_HANDLING', 'BLOCKING_WAIT')


def nccl_setting_problems(environ: Optional[Dict[str, str]] = None
                          ) -> List[str]:
    """NCCL timeout settings set under the name this torch does not read
    (``TORCH_NCCL_*`` from torch 2.2, ``NCCL_*`` on torch 2.1), one message
    each.

    Args:
        environ (dict, optional): The environment. Defaults to
            ``os.environ``.

    Returns:
        list[str]: What is wrong and the fix; empty when nothing is.
    """
    environ = os.environ if environ is None else environ
    problems = []
    for setting in NCCL_TIMEOUT_SETTINGS:
        read = nccl_env(setting)
        other = ('NCCL_' if read.startswith('TORCH_') else
                 'TORCH_NCCL_') + setting
        if other in environ and read not in environ:
            problems.append(
                f'{other}={environ[other]} is set, but this torch reads '
                f'{read} (torch 2.2 renamed NCCL_{setting} to '
                f'TORCH_NCCL_{setting}; the new name means nothing to torch '
                f'2.1), so the setting is not applied. Fix: export '
                f'{read}={environ[other]}')
    return problems


def timeout_problems(cfg, backend: str = 'nccl') -> List[str]:
    """The timeouts of ``cfg`` that are not ordered, one message each.

    Args:
        cfg (Config | dict): The prepared config.
        backend (str): The process group's backend ('nccl' on GPUs, 'gloo'
            on CPUs). Defaults to 'nccl'.

    Returns:
        list[str]: What is wrong and the fix; empty when ordered.
    """
    problems = nccl_setting_problems() if backend == 'nccl' else []
    group, configured = process_group_timeout(cfg, backend)
    where = ('env_cfg.dist_cfg.timeout' if configured else
             f"torch's {backend} default")
    for timeout, interval in _watchdogs(cfg):
        if timeout + interval >= group:
            problems.append(
                f'DistWatchdogHook: timeout={timeout:g} s (+ interval '
                f'{interval:g} s) is not below the process group\'s '
                f'collective timeout ({group:g} s, {where}): {backend} would '
                'end a hung job first, without stacks. Fix: set the '
                f"hook's timeout to about {group / 2:g}, or raise "
                f'env_cfg.dist_cfg.timeout above {timeout + interval:g}')
    for key, wait in dist_wait_timeouts(cfg).items():
        if wait <= 0:
            problems.append(
                f'{key}: dist_wait_timeout={wait:g} must be positive. Fix: '
                f'set {key}.dist_wait_timeout to the longest evaluation '
                'you expect, e.g. 14400')
    return problems
