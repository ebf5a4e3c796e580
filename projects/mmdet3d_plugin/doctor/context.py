"""Check results and the state the doctor's checks share.

A check is a function of a :class:`DoctorContext`; it returns one
:class:`CheckResult` or a list of them. :meth:`DoctorContext.run` times it,
turns an exception into a ``fail`` that carries the exception, and skips it
(a ``warn`` whose detail starts with ``skipped:``) when a check it needs did
not produce what it needs, so one failure never hides the others.
"""
import time
import traceback
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Dict, List, Optional, Sequence, Union

from ..cli.run_tool import error_line, user_error_message, worker_death_message
from ..failures.causes import known_error

PASS = 'pass'
WARN = 'warn'
FAIL = 'fail'
STATUSES = (PASS, WARN, FAIL)


@dataclass
class CheckResult:
    """One line of the checklist.

    Args:
        check (str): Name, ``<area>.<what>``, e.g. ``'data.pickle.train'``.
        status (str): 'pass', 'warn' or 'fail'.
        detail (str): What was found, one line.
        fix (str): For a warn or fail, the fix in one sentence (the config
            line where there is one). Defaults to ''.
        seconds (float): Time the check took. Defaults to 0.
    """
    check: str
    status: str
    detail: str
    fix: str = ''
    seconds: float = 0.0

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(
                f'CheckResult {self.check!r}: status must be one of '
                f'{STATUSES}, got {self.status!r}')

    def to_dict(self) -> Dict[str, Any]:
        """The JSON object of this line."""
        out = asdict(self)
        out['seconds'] = round(self.seconds, 3)
        return out


def passed(check: str, detail: str) -> CheckResult:
    """A ``pass`` line."""
    return CheckResult(check, PASS, detail)


def warned(check: str, detail: str, fix: str) -> CheckResult:
    """A ``warn`` line with its fix."""
    return CheckResult(check, WARN, detail, fix)


def failed(check: str, detail: str, fix: str) -> CheckResult:
    """A ``fail`` line with its fix."""
    return CheckResult(check, FAIL, detail, fix)


def one_line(text: str, limit: int = 400) -> str:
    """Collapse whitespace and shorten ``text`` for a checklist line."""
    text = ' '.join(str(text).split())
    return text if len(text) <= limit else text[:limit - 3] + '...'


def known_fix(exc: BaseException) -> str:
    """The fix of a known upstream error (``failures.causes``), or ''."""
    known = known_error(exc)
    return known.fix if known is not None else ''


def describe_exception(exc: BaseException) -> str:
    """``TypeError: ... (at file.py:12 in fn)`` on one line.

    A DataLoader worker killed by a signal, mmengine's registry ``KeyError``
    and known upstream bugs are explained as the plugin's tools explain them.
    """
    where = ''
    frames = traceback.extract_tb(exc.__traceback__)
    if frames:
        last = frames[-1]
        where = f' (at {last.filename.rsplit("/", 1)[-1]}:{last.lineno} ' \
            f'in {last.name})'
    known = known_error(exc)
    if known is not None:
        return one_line(f'{error_line(exc)} ({known.cause})')
    explained = worker_death_message(exc)
    if explained is None and isinstance(exc, KeyError):
        explained = user_error_message(exc)
    if explained is not None:
        return one_line(f'{type(exc).__name__}: {explained}')
    return one_line(f'{type(exc).__name__}: {exc}') + where


@dataclass
class DoctorOptions:
    """What the doctor was asked to check.

    Args:
        config (str): Config file.
        iters (int): Train iterations to run. Defaults to 3.
        cfg_options (dict, optional): ``--cfg-options`` overrides.
        world_size (int): Processes the run will start, over all nodes.
            Defaults to 1.
        launcher (str): The launcher the run will use. Defaults to 'none'.
        data_root (str, optional): Point every dataset and evaluator at this
            root first. Defaults to None.
        nnodes (int): Nodes the world size is spread over. Defaults to 1.
        verbose (bool): Keep the Runner's and the datasets' INFO logs.
            Defaults to False.
        amp (str, optional): tools/train.py's ``--amp`` mode. Defaults to
            None.
        accum (int, optional): tools/train.py's ``--accum``. Defaults to
            None.
        auto_scale_lr (bool): tools/train.py's ``--auto-scale-lr``.
            Defaults to False.
        step_time (float, optional): Seconds of one training step, for
            ``data.throughput``. Defaults to None (assumed).
        gpu_memory (int, optional): Bytes of the GPUs' memory, for
            ``model.gpu_memory``. Defaults to None (the local GPU's).
    """
    config: str
    iters: int = 3
    cfg_options: Optional[Dict[str, Any]] = None
    world_size: int = 1
    launcher: str = 'none'
    data_root: Optional[str] = None
    nnodes: int = 1
    verbose: bool = False
    amp: Optional[str] = None
    accum: Optional[int] = None
    auto_scale_lr: bool = False
    step_time: Optional[float] = None
    gpu_memory: Optional[int] = None

    @property
    def procs_per_node(self) -> int:
        """Training processes (GPUs) on one node."""
        return max(self.world_size // max(int(self.nnodes), 1), 1)

    @property
    def uses_ddp(self) -> bool:
        """Whether the run wraps its model in DistributedDataParallel."""
        return self.launcher != 'none' or self.world_size > 1


@dataclass
class DoctorContext:
    """Options, results so far and what checks hand to later checks.

    Args:
        options (DoctorOptions): What to check.
        tmp_dir (str): A temporary directory the checks may write into
            (the Runner's work_dir); removed after the run.
        loggers (list): Loggers the run created, reset afterwards.
    """
    options: DoctorOptions
    tmp_dir: str
    results: List[CheckResult] = field(default_factory=list)
    artifacts: Dict[str, Any] = field(default_factory=dict)
    failed_checks: Dict[str, str] = field(default_factory=dict)
    loggers: List[Any] = field(default_factory=list)

    @property
    def cfg(self):
        """The loaded config (None until ``config.load`` passed)."""
        return self.artifacts.get('cfg')

    def run(self,
            name: str,
            fn: Callable[['DoctorContext'],
                         Union[CheckResult, Sequence[CheckResult]]],
            needs: Sequence[str] = (),
            provides: Sequence[str] = (),
            crash_fix: str = '') -> List[CheckResult]:
        """Run one check and record its lines.

        Args:
            name (str): Name of the line written when the check crashes or
                is skipped.
            fn (callable): The check.
            needs (Sequence[str]): Artifacts it needs (see
                :meth:`provide`); if one is missing, the check is skipped.
            provides (Sequence[str]): Artifacts it is expected to provide;
                the skip lines of later checks blame those it did not on
                ``name`` (on the check that failed, when this one was
                skipped itself).
            crash_fix (str): Fix shown when the check raises. Defaults to
                '' (a hint to read the exception).

        Returns:
            list[CheckResult]: The lines added.
        """
        missing = [key for key in needs if key not in self.artifacts]
        upstream = [self.failed_checks[k] for k in missing
                    if k in self.failed_checks]
        if missing:
            by_culprit: Dict[str, List[str]] = {}
            for key in missing:
                by_culprit.setdefault(self.failed_checks.get(key, ''),
                                      []).append(key)
            why = '; '.join(
                f'{", ".join(keys)} missing' +
                (f' ({culprit} failed)' if culprit else '')
                for culprit, keys in by_culprit.items())
            fix = (f'fix {", ".join(dict.fromkeys(upstream))} first, then '
                   'rerun' if upstream else 'fix the failures above, then '
                   'rerun')
            lines = [warned(name, f'skipped: {why}', fix)]
        else:
            start = time.perf_counter()
            try:
                out = fn(self)
                lines = [out] if isinstance(out, CheckResult) else list(out)
            except Exception as exc:  # a crashing check is a failed check
                lines = [
                    failed(
                        name, describe_exception(exc), known_fix(exc) or
                        crash_fix or
                        'read the exception above; it names the setting or '
                        'file to fix')
                ]
            seconds = time.perf_counter() - start
            for line in lines:
                line.seconds = seconds / max(len(lines), 1)
        # A skipped check passes the blame on to the check that failed.
        culprit = upstream[0] if missing and upstream else name
        for key in provides:
            if key not in self.artifacts:
                self.failed_checks.setdefault(key, culprit)
        self.results.extend(lines)
        return lines

    def provide(self, key: str, value: Any) -> None:
        """Hand ``value`` to later checks under ``key``."""
        self.artifacts[key] = value
