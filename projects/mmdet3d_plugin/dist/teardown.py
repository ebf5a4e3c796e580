"""A run's distributed state, ended in order on every rank before the
interpreter's teardown.

A process group left to the interpreter's exit can abort a rank whose run
succeeded: gloo's threads still drop work whose tensors have Python
objects, which needs the GIL, and a thread that asks for the GIL while the
interpreter finalizes is ended by CPython (``pthread_exit``) inside C++
code that cannot unwind: ``terminate called without an active
exception``, ``Fatal Python error: Aborted``, a finished job reported as a
crash.

:func:`ended_in_order` wraps a tool's ``runner.train()`` /
``runner.test()`` (``cli/run.py``). When the run returns, or stops on
every rank at the same point (:func:`every_rank_stops`: an exception whose
class sets ``every_rank = True``, such as ``NonFiniteStepsError``, or
``PreemptionHook``'s ``SystemExit(85)``), each rank:

1. runs what the plugin's parts registered with :func:`at_run_end`, the
   newest first, told that every rank ends (``DistWatchdogHook``'s thread
   finished and joined, its group destroyed; ``PreemptionHook``'s store
   let go and, unless a preemption signal came, its signal handlers given
   back; rank 0's evaluation wait groups forgotten);
2. meets the others in a barrier of the default group, so no rank (the
   store's host among them) leaves while another still uses a group;
3. destroys every group (:func:`~.groups.destroy_group`: after a moment
   without the GIL, in which gloo's threads drop their last work).

``destroy_process_group`` forgets the groups; the model's DDP wrapper
still holds the default one. The tools run inside
:func:`run_objects_freed`, which frees the run's objects when it ends, so
the groups go with them and gloo's threads are joined while the
interpreter is whole.

A rank that raised alone (any other exception) runs step 1 only, told it
ends alone (the signal handlers go back; the watchdog is not waited for):
its peers wait in a collective that needs it, and its groups left to the
process's exit close their connections at once, which ends the peers'
collectives with an error instead of a wait of the collective timeout.
"""
import contextlib
import gc
import traceback
from typing import Callable, Iterator, List

import torch.distributed as torch_dist

from ..constants import PREEMPTED_EXIT_CODE
from .groups import destroy_group

#: What runs at the end of a run, oldest first: ``fn(together)``.
_AT_END: List[Callable[[bool], None]] = []


def at_run_end(fn: Callable[[bool], None]) -> Callable[[bool], None]:
    """Run ``fn(together)`` when the run ends, before the groups go.

    ``together`` is True when every rank ends at the same point (it may
    then make collectives with the other ranks), False for a rank that
    raised alone. Registering ``fn`` again moves it to the newest place.

    Args:
        fn (callable): Stops a thread, a group or a handler of this rank;
            it must not raise.

    Returns:
        callable: ``fn``, for :func:`cancel_run_end`.
    """
    cancel_run_end(fn)
    _AT_END.append(fn)
    return fn


def cancel_run_end(fn: Callable[[bool], None]) -> None:
    """Forget ``fn`` (its owner ended what it holds itself)."""
    while fn in _AT_END:
        _AT_END.remove(fn)


def every_rank_stops(exc: BaseException) -> bool:
    """Whether ``exc`` ends the run on every rank at the same point.

    True for an exception whose class sets ``every_rank = True`` (the
    ranks agreed to stop before raising it) and for ``SystemExit`` with
    :data:`~projects.mmdet3d_plugin.constants.PREEMPTED_EXIT_CODE`
    (``PreemptionHook``, after the agreed iteration).
    """
    if isinstance(exc, SystemExit):
        return exc.code == PREEMPTED_EXIT_CODE
    return bool(getattr(type(exc), 'every_rank', False))


def end_run(together: bool) -> None:
    """Steps 1-3 of this module (step 1 only when not ``together``); an
    error of step 1 is raised after the rest has run."""
    error = None
    while _AT_END:
        try:
            _AT_END.pop()(together)
        except Exception as exc:  # noqa: BLE001  raised at the end
            error = error or exc
    if together and torch_dist.is_available() and \
            torch_dist.is_initialized():
        if torch_dist.get_world_size() > 1:
            torch_dist.barrier()
        destroy_group()
    if error is not None:
        raise error


@contextlib.contextmanager
def ended_in_order() -> Iterator[None]:
    """End the run's distributed state in order however the body ends
    (see the module's text); the body's exception goes on unchanged, even
    when the end fails (a peer that died meanwhile). What an earlier run
    of this process left registered is not this run's, and is forgotten.
    """
    _AT_END.clear()
    try:
        yield
    except BaseException as exc:
        try:
            end_run(every_rank_stops(exc))
        except Exception:  # noqa: BLE001  the run's own error goes on
            pass
        raise
    end_run(True)


@contextlib.contextmanager
def run_objects_freed() -> Iterator[None]:
    """Free the run's objects (``gc.collect``: the Runner holds reference
    cycles) once the body, the tool's whole run, ends: the process groups
    its model still holds go with them and their threads end here rather
    than in the interpreter's teardown. After an error, the locals of the
    frames its traceback holds (the Runner among them) are cleared first;
    the traceback still prints."""
    try:
        yield
    except BaseException as exc:
        seen = set()
        while exc is not None and id(exc) not in seen:
            seen.add(id(exc))
            traceback.clear_frames(exc.__traceback__)
            exc = exc.__cause__ or exc.__context__
        gc.collect()
        raise
    gc.collect()
