"""The text of a hang: the message (log, error file, launcher report), the
stuck ranks' stacks as a traceback, and ``hang_report.txt``."""
import datetime
import socket
from typing import Dict, List, Optional, Sequence

from ...constants import HANG_MESSAGE_PREFIX
from ...failures.frames import describe_frame
from ...failures.stacks import format_frames
from .verdict import PhaseStatus, HangVerdict, RankStacks, RankStatus

#: The setting that gives a declared phase its timeout, by phase name.
TIMEOUT_SETTINGS = {'evaluation': 'dist_wait_timeout'}


def _rank_words(ranks: Sequence[int]) -> str:
    if len(ranks) == 1:
        return f'rank {ranks[0]}'
    return 'ranks ' + ', '.join(str(r) for r in ranks)


def _stuck_where(rank: int, statuses: Dict[int, RankStatus],
                 stacks: Dict[int, RankStacks]) -> str:
    status = statuses.get(rank)
    where = status.where if status is not None else 'an unknown iteration'
    if rank not in stacks:
        return f'in {where} (no stack: it did not answer)'
    return f'in {where} at {describe_frame(stacks[rank].innermost)}'


def _overdue_phase(verdict: HangVerdict, statuses: Dict[int, RankStatus],
                   timeout: float) -> Optional[PhaseStatus]:
    """The declared phase of the first stuck rank that outlasted it."""
    for rank in verdict.stuck:
        status = statuses.get(rank)
        if status is not None and status.declared is not None and \
                status.overdue(timeout):
            return status.declared
    return None


def phase_words(phase: PhaseStatus) -> str:
    """``for 25 s, about to outlast its dist_wait_timeout of 30 s (...)``.
    """
    setting = TIMEOUT_SETTINGS.get(phase.name, 'timeout')
    lead = phase.timeout - phase.deadline
    return (f'for {phase.elapsed:.0f} s, about to outlast its {setting} of '
            f'{phase.timeout:g} s (the watchdog ends a declared phase '
            f'{lead:g} s before its timeout, when the ranks waiting in it '
            'would fail without stacks')


def hang_message(verdict: HangVerdict,
                 statuses: Dict[int, RankStatus],
                 stacks: Dict[int, RankStacks],
                 timeout: float,
                 report_path: Optional[str] = None) -> str:
    """The one-paragraph summary (error file, log).

    It starts with
    :data:`~projects.mmdet3d_plugin.constants.HANG_MESSAGE_PREFIX`, then
    names the stuck ranks, where they are (the loop and iteration, or the
    declared phase) and their ``file:line in function``.

    Args:
        verdict (HangVerdict): From :func:`~.verdict.find_stuck`.
        statuses (dict[int, RankStatus]): The gathered statuses.
        stacks (dict[int, RankStacks]): The gathered stacks.
        timeout (float): The watchdog's timeout.
        report_path (str, optional): ``hang_report.txt``, named at the end.

    Returns:
        str: The message.
    """
    idle = max((statuses[r].idle for r in verdict.stuck if r in statuses),
               default=max((s.idle for s in statuses.values()), default=0))
    if len(verdict.stuck) == 1:
        rank = verdict.stuck[0]
        where = f'rank {rank} stuck ' + _stuck_where(rank, statuses, stacks)
    else:
        where = f'{_rank_words(verdict.stuck)} stuck; ' + '; '.join(
            f'rank {r} ' + _stuck_where(r, statuses, stacks)
            for r in verdict.stuck)
    phase = _overdue_phase(verdict, statuses, timeout)
    if phase is not None:
        head = f'{where}, {phase_words(phase)}; {verdict.reason})'
    else:
        head = (f'{where}, no iteration finished for {idle:.0f} s (timeout '
                f'{timeout:g} s; {verdict.reason})')
    parts = [f'{HANG_MESSAGE_PREFIX}: {head}']
    if verdict.waiting:
        first = verdict.waiting[0]
        verb = 'waits' if len(verdict.waiting) == 1 else 'wait'
        declared = statuses[first].declared if first in statuses else None
        inside = f', in {declared.words}' if declared else ''
        parts.append(
            f'{_rank_words(verdict.waiting).capitalize()} {verb} in a '
            f'collective (rank {first} at '
            f'{describe_frame(stacks[first].innermost)}{inside})')
    if verdict.running:
        first = verdict.running[0]
        parts.append(
            f'{_rank_words(verdict.running).capitalize()} not in a '
            f'collective (rank {first} at '
            f'{describe_frame(stacks[first].innermost)}, idle '
            f'{statuses[first].idle:.0f} s)')
    if verdict.finished:
        parts.append(f'{_rank_words(verdict.finished).capitalize()} '
                     'finished')
    if report_path:
        parts.append(f'Stacks of every rank: {report_path}')
    return '. '.join(parts) + '.'


def stuck_callstack(verdict: HangVerdict, stacks: Dict[int, RankStacks],
                    message: str) -> str:
    """The stuck ranks' Runner-thread stacks as a Python traceback ending
    in ``message`` (torchrun prints it as the failure's traceback)."""
    blocks = []
    for rank in verdict.stuck:
        if rank in stacks:
            blocks.append(f'Rank {rank} (pid {stacks[rank].pid}, host '
                          f'{stacks[rank].host}), the thread that runs the '
                          'Runner (most recent call last):\n' +
                          format_frames(stacks[rank].frames))
    return ''.join(blocks) + f'DistWatchdogHang: {message}\n'


def _phase_lines(statuses: Dict[int, RankStatus],
                 world_size: int) -> List[str]:
    lines = []
    for rank in range(world_size):
        phase = statuses[rank].declared if rank in statuses else None
        if phase is not None:
            setting = TIMEOUT_SETTINGS.get(phase.name, 'timeout')
            lines.append(
                f'rank {rank} in {phase.words}: {phase.elapsed:.1f} s of '
                f'its {setting} of {phase.timeout:g} s (ended at '
                f'{phase.deadline:g} s)')
    return ['', 'declared phases:'] + lines if lines else []


def format_report(verdict: HangVerdict,
                  statuses: Dict[int, RankStatus],
                  stacks: Dict[int, RankStacks],
                  world_size: int,
                  timeout: float,
                  action: str,
                  message: str) -> str:
    """The text of ``hang_report.txt``: summary, table, declared phases,
    all stacks."""
    now = datetime.datetime.now(datetime.timezone.utc)
    lines = [
        'DistWatchdogHook hang report',
        f'written: {now.isoformat(timespec="seconds")} on '
        f'{socket.gethostname()}; timeout {timeout:g} s; action {action}',
        '',
        message,
        '',
        f'{"rank":>4}  {"state":<12}  {"where":<22}  {"finished":>8}  '
        f'{"idle_s":>7}  frame',
    ]
    for rank in range(world_size):
        status = statuses.get(rank)
        state = ('STUCK' if rank in verdict.stuck else
                 'waiting' if rank in verdict.waiting else
                 'running' if rank in verdict.running else
                 'finished' if rank in verdict.finished else 'unknown')
        where = '?'
        if status is not None:
            where = status.declared.name if status.declared else \
                status.loop_where
        count = status.count if status else '?'
        idle = f'{status.idle:.1f}' if status else '?'
        frame = describe_frame(stacks[rank].innermost) \
            if rank in stacks else '<no answer>'
        lines.append(f'{rank:>4}  {state:<12}  {where:<22}  {count:>8}  '
                     f'{idle:>7}  {frame}')
    lines += _phase_lines(statuses, world_size)
    for rank in range(world_size):
        lines.append('')
        if rank not in stacks:
            lines.append(f'=== rank {rank}: no stacks (did not answer) ===')
            continue
        info = stacks[rank]
        lines.append(f'=== rank {rank} (pid {info.pid}, host {info.host}): '
                     'all threads, most recent call first ===')
        lines.append(info.dump.rstrip())
    return '\n'.join(lines) + '\n'
