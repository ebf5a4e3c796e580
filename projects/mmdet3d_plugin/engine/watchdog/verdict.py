"""Which ranks are stuck.

Every round, :class:`~.monitor.HangMonitor` gathers one :class:`RankStatus`
per rank; :func:`hang_found` says whether a rank has gone ``timeout``
seconds without finishing an iteration, or has outlasted a long phase it
declared (``dist.long_phase``, e.g. rank 0's evaluation with the metric's
``dist_wait_timeout``): a rank inside a declared phase is judged against
that phase's own timeout, not the watchdog's. The watchdog ends such a
phase :data:`PHASE_LEAD` seconds before its timeout runs out
(:func:`phase_deadline`), since then the ranks that wait in it fail on
their own, without stacks. Then every rank's stacks are gathered
(:class:`RankStacks`) and :func:`find_stuck` tells the stuck ranks from
those that only wait for them:

1. a rank that did not answer the watchdog at all (frozen process) is stuck;
2. a rank whose Runner thread is *not* waiting for its peers (its
   innermost frame is not in ``torch.distributed``, DDP, a DDP backward or
   mmengine's ``dist``) and has been idle for at least half of what it is
   allowed (the watchdog's timeout, or its phase's deadline) is stuck
   where it is (the half leaves out ranks that are busy but progressing,
   and keeps those that stopped a moment after the first one); of several
   such ranks, those with the fewest finished iterations (under NCCL,
   collectives are asynchronous and a waiting rank blocks later, at a sync
   point such as ``loss.item()``, an iteration ahead);
3. if every rank waits in a collective, those with the fewest finished
   iterations are stuck (they are behind: a collective the others never
   called); with equal counts all are named (mismatched collectives).

The verdict depends only on the gathered data, so every rank reaches the
same one. :mod:`.hang_text` writes what it says.
"""
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence

from ...failures.frames import Frame, innermost
from ...failures.stacks import in_collective
from ...dist.phase import Phase

#: Loop phases, by code (the code travels in the gathered status tensor).
PHASES = ('start', 'train', 'val', 'test', 'done')
#: Seconds before a declared phase's timeout at which the watchdog ends it
#: (at most a quarter of the timeout).
PHASE_LEAD = 5.0


def phase_deadline(timeout: float) -> float:
    """Seconds into a declared phase at which the watchdog ends it.

    Args:
        timeout (float): The phase's own timeout.

    Returns:
        float: ``timeout - min(PHASE_LEAD, timeout / 4)``.
    """
    return timeout - min(PHASE_LEAD, timeout / 4)


@dataclass(frozen=True)
class PhaseStatus:
    """A declared long phase (``dist.current_phase()``) as gathered.

    Args:
        name (str): What runs, e.g. ``'evaluation'``.
        detail (str): Where, e.g. ``'rank 0 computes
            SafeNuScenesMetric.compute_metrics'``.
        timeout (float): Seconds the phase may last.
        elapsed (float): Seconds since it began.
    """
    name: str
    detail: str
    timeout: float
    elapsed: float

    @classmethod
    def of(cls, phase: Optional[Phase],
           now: Optional[float] = None) -> Optional['PhaseStatus']:
        """The status of ``phase`` (None for None) at ``now``
        (``time.monotonic()``)."""
        if phase is None:
            return None
        return cls(phase.name, phase.detail, phase.timeout,
                   phase.elapsed(now))

    @property
    def deadline(self) -> float:
        """:func:`phase_deadline` of its timeout."""
        return phase_deadline(self.timeout)

    @property
    def words(self) -> str:
        """``evaluation (rank 0 computes X.compute_metrics)``."""
        return f'{self.name} ({self.detail})' if self.detail else self.name


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
            (or entered a loop or epoch, or was seen in a declared phase).
        done (bool): The rank has finished its run (``after_run``).
            Defaults to False.
        declared (PhaseStatus, optional): The long phase the rank declared
            and is in. Defaults to None.
    """
    rank: int
    count: int
    phase: str
    iteration: int
    idle: float
    done: bool = False
    declared: Optional[PhaseStatus] = None

    @property
    def clock(self) -> float:
        """Seconds counted against :meth:`allowed`: the declared phase's
        elapsed time, else :attr:`idle`."""
        return self.declared.elapsed if self.declared else self.idle

    def allowed(self, timeout: float) -> float:
        """Seconds the rank may go: its phase's deadline, else ``timeout``
        (the watchdog's)."""
        return self.declared.deadline if self.declared else timeout

    def overdue(self, timeout: float) -> bool:
        """Whether the rank has not finished and its :attr:`clock` reached
        :meth:`allowed`."""
        return not self.done and self.clock >= self.allowed(timeout)

    @property
    def loop_where(self) -> str:
        """``train iteration 2``, ``before the first loop``, ``finished``."""
        if self.phase in ('start', 'done'):
            return 'before the first loop' if self.phase == 'start' \
                else 'finished'
        return f'{self.phase} iteration {self.iteration}'

    @property
    def where(self) -> str:
        """:attr:`loop_where`, or the declared phase: ``evaluation (rank 0
        computes X.compute_metrics)``."""
        return self.declared.words if self.declared else self.loop_where


@dataclass
class RankStacks:
    """One rank's stacks at the moment a hang was found.

    Args:
        rank (int): Global rank.
        host (str): Host name.
        pid (int): Process id.
        frames (list[Frame]): The Runner thread's stack, outermost first.
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
    """Whether a rank that has not finished went ``timeout`` s idle, or
    reached its declared phase's deadline (:meth:`RankStatus.overdue`)."""
    return any(s.overdue(timeout) for s in statuses)


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
            and statuses[r].clock >= statuses[r].allowed(timeout) / 2]
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
