"""Which ranks are stuck, and the text that says so.

Every round, :class:`~.monitor.HangMonitor` gathers one :class:`RankStatus`
per rank; :func:`hang_found` says whether a rank has gone ``timeout``
seconds without finishing an iteration. Then every rank's stacks are
gathered (:class:`RankStacks`) and :func:`find_stuck` tells the stuck ranks
from those that only wait for them:

1. a rank that did not answer the watchdog at all (frozen process) is stuck;
2. a rank whose Runner thread is *not* waiting for its peers (its
   innermost frame is not in ``torch.distributed``, DDP, a DDP backward or
   mmengine's ``dist``) and has been idle for at least half the timeout is
   stuck where it is (the half leaves out ranks that are busy but
   progressing, and keeps those that stopped a moment after the first
   one); of several such ranks, those with the fewest finished iterations
   (under NCCL, collectives are asynchronous and a waiting rank blocks
   later, at a sync point such as ``loss.item()``, an iteration ahead);
3. if every rank waits in a collective, those with the fewest finished
   iterations are stuck (they are behind: a collective the others never
   called); with equal counts all are named (mismatched collectives).

The verdict depends only on the gathered data, so every rank reaches the
same one.
"""
import datetime
import socket
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence

from ...constants import HANG_MESSAGE_PREFIX
from .stacks import (Frame, describe_frame, format_frames, in_collective,
                     innermost)

#: Loop phases, by code (the code travels in the gathered status tensor).
PHASES = ('start', 'train', 'val', 'test', 'done')


@dataclass
class RankStatus:
    """One rank's progress, as gathered every round.

    Args:
        rank (int): Global rank.
        count (int): Iterations finished in all loops so far.
        phase (str): One of :data:`PHASES`.
        iteration (int): Index of the iteration the rank is in (as
            ``runner.iter`` counts, 0-based), in its current loop.
        idle (float): Seconds since the rank last finished an iteration
            (or entered a loop or epoch).
        done (bool): The rank has finished its run (``after_run``).
    """
    rank: int
    count: int
    phase: str
    iteration: int
    idle: float
    done: bool = False

    def to_row(self) -> List[float]:
        """The status as the floats of the gathered tensor."""
        return [
            float(self.count),
            float(PHASES.index(self.phase)),
            float(self.iteration), self.idle,
            float(self.done)
        ]

    @classmethod
    def from_row(cls, rank: int, row: Sequence[float]) -> 'RankStatus':
        """Inverse of :meth:`to_row`."""
        return cls(rank, int(row[0]), PHASES[int(row[1])], int(row[2]),
                   float(row[3]), bool(row[4]))

    @property
    def where(self) -> str:
        """``train iteration 2``, ``start``, ``done``."""
        if self.phase in ('start', 'done'):
            return 'before the first loop' if self.phase == 'start' \
                else 'finished'
        return f'{self.phase} iteration {self.iteration}'


@dataclass
class RankStacks:
    """One rank's stacks at the moment a hang was found.

    Args:
        rank (int): Global rank.
        host (str): Host name.
        pid (int): Process id.
        frames (list[tuple]): The Runner thread's stack, outermost first.
        dump (str): ``faulthandler``'s all-thread dump.
    """
    rank: int
    host: str
    pid: int
    frames: List[Frame] = field(default_factory=list)
    dump: str = ''

    @property
    def innermost(self) -> Optional[Frame]:
        """The Runner thread's innermost frame outside the stdlib."""
        return innermost(self.frames)

    @property
    def waiting(self) -> bool:
        """Whether the Runner thread waits in a collective."""
        return in_collective(self.frames)


@dataclass
class HangVerdict:
    """Stuck ranks and the ranks that wait for them.

    Args:
        stuck (list[int]): Ranks stuck where their stacks say.
        waiting (list[int]): Ranks waiting for them in a collective.
        running (list[int]): Ranks neither stuck nor waiting (ahead of
            the stuck ones, e.g. in a loop without collectives).
        finished (list[int]): Ranks that finished their run.
        unresponsive (list[int]): Ranks that did not answer the watchdog.
        reason (str): How the stuck ranks were told apart.
    """
    stuck: List[int]
    waiting: List[int]
    running: List[int]
    finished: List[int]
    unresponsive: List[int]
    reason: str


def hang_found(statuses: Sequence[RankStatus], timeout: float) -> bool:
    """Whether a rank that has not finished went ``timeout`` s idle."""
    return any(not s.done and s.idle >= timeout for s in statuses)


def find_stuck(statuses: Dict[int, RankStatus],
               stacks: Dict[int, RankStacks],
               world_size: int,
               timeout: float) -> HangVerdict:
    """Tell stuck ranks from waiting ones (see the module docstring).

    Args:
        statuses (dict[int, RankStatus]): The last gathered statuses.
        stacks (dict[int, RankStacks]): The stacks gathered after the hang
            was found.
        world_size (int): Number of ranks.
        timeout (float): The watchdog's timeout in seconds.

    Returns:
        HangVerdict: The verdict.
    """
    unresponsive = [r for r in range(world_size)
                    if r not in statuses or r not in stacks]
    finished = [r for r in range(world_size)
                if r in statuses and statuses[r].done
                and r not in unresponsive]
    active = [r for r in range(world_size)
              if r not in unresponsive and r not in finished]
    busy = [r for r in active if not stacks[r].waiting
            and statuses[r].idle >= timeout / 2]
    if unresponsive:
        stuck = unresponsive + busy
        reason = ('did not answer the watchdog: the process is frozen '
                  '(stopped, or native code that holds the GIL)')
    elif busy:
        fewest = min(statuses[r].count for r in busy)
        stuck = [r for r in busy if statuses[r].count == fewest]
        reason = 'not waiting for other ranks' if len(stuck) == len(busy) \
            else ('not waiting for other ranks, and behind the others that '
                  'are not either (those wait at a sync point for it)')
    elif active:
        fewest = min(statuses[r].count for r in active)
        stuck = [r for r in active if statuses[r].count == fewest]
        if len(stuck) < len(active):
            reason = ('every rank waits in a collective; these are behind '
                      'the others (a collective the others did not call)')
        else:
            reason = ('every rank waits in a collective at the same '
                      'iteration: the ranks called different collectives, '
                      'or one waits for a peer that never sends')
    else:
        stuck, reason = [], 'no rank is running'
    others = [r for r in active if r not in stuck]
    waiting = [r for r in others if stacks[r].waiting]
    running = [r for r in others if not stacks[r].waiting]
    return HangVerdict(sorted(stuck), waiting, running, finished,
                       unresponsive, reason)


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


def hang_message(verdict: HangVerdict,
                 statuses: Dict[int, RankStatus],
                 stacks: Dict[int, RankStacks],
                 timeout: float,
                 report_path: Optional[str] = None) -> str:
    """The one-paragraph summary (error file, log): starts with
    :data:`~projects.mmdet3d_plugin.constants.HANG_MESSAGE_PREFIX`, then
    names the stuck ranks and their ``file:line in function``."""
    idle = max((statuses[r].idle for r in verdict.stuck if r in statuses),
               default=max((s.idle for s in statuses.values()), default=0))
    if len(verdict.stuck) == 1:
        rank = verdict.stuck[0]
        where = f'rank {rank} stuck ' + _stuck_where(rank, statuses, stacks)
    else:
        where = f'{_rank_words(verdict.stuck)} stuck; ' + '; '.join(
            f'rank {r} ' + _stuck_where(r, statuses, stacks)
            for r in verdict.stuck)
    parts = [
        f'{HANG_MESSAGE_PREFIX}: {where}, no iteration finished for '
        f'{idle:.0f} s (timeout {timeout:g} s; {verdict.reason})'
    ]
    if verdict.waiting:
        first = verdict.waiting[0]
        verb = 'waits' if len(verdict.waiting) == 1 else 'wait'
        parts.append(
            f'{_rank_words(verdict.waiting).capitalize()} {verb} in a '
            f'collective (rank {first} at '
            f'{describe_frame(stacks[first].innermost)})')
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


def format_report(verdict: HangVerdict,
                  statuses: Dict[int, RankStatus],
                  stacks: Dict[int, RankStacks],
                  world_size: int,
                  timeout: float,
                  action: str,
                  message: str) -> str:
    """The text of ``hang_report.txt``: summary, table, all stacks."""
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
        where = status.where if status else '?'
        count = status.count if status else '?'
        idle = f'{status.idle:.1f}' if status else '?'
        frame = describe_frame(stacks[rank].innermost) \
            if rank in stacks else '<no answer>'
        lines.append(f'{rank:>4}  {state:<12}  {where:<22}  {count:>8}  '
                     f'{idle:>7}  {frame}')
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
