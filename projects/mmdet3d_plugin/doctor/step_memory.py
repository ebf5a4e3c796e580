"""The memory one training step needs: the peak of live tensor bytes (what
a GPU's ``torch.cuda.max_memory_allocated`` shows) and, on the CPU, the
peak resident memory of the process.

On a CUDA device the figure is ``torch.cuda.max_memory_allocated`` over
the step. On the CPU, torch keeps no such statistic; the profiler records
every allocation and free of torch's CPU allocator (``profile_memory``),
and the peak is the largest running sum of them over the step, plus the
tensors alive when it started. Both count the batch, the activations, the
gradients and the optimizer state the step creates, and kernels' scratch
buffers; neither counts the CUDA context or the allocator's cache.

Examples:
    >>> usage = measure_step(lambda: model.train_step(batch, optim_wrapper),
    ...                      held=[model, optim_wrapper.optimizer])
    >>> usage.peak_bytes, usage.rss_peak_bytes
"""
import contextlib
import os
import re
import sys
import time
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator, Optional

import torch

_HWM = re.compile(rb'^VmHWM:\s+(\d+) kB', re.M)
_RSS = re.compile(rb'^VmRSS:\s+(\d+) kB', re.M)


@dataclass
class StepMemory:
    """What :func:`measure_step` measured.

    Args:
        peak_bytes (int): Live tensor bytes at the step's peak (held
            tensors included).
        held_bytes (int): Bytes of the tensors alive before the step
            (weights, buffers, optimizer state, gradients).
        seconds (float): Wall time of the step, measurement included.
        rss_peak_bytes (int, optional): On the CPU, the process's peak
            resident memory during the step above its resident memory
            before; None where Linux cannot reset the peak.
        device (str): 'cuda' or 'cpu'.
    """
    peak_bytes: int
    held_bytes: int
    seconds: float
    rss_peak_bytes: Optional[int] = None
    device: str = 'cpu'


def held_bytes(objects: Iterable[Any]) -> int:
    """Bytes of the tensor storages reachable from modules (parameters,
    gradients, buffers) and optimizers (their state), each storage once.
    """
    storages = {}

    def add(tensor):
        if isinstance(tensor, torch.Tensor):
            storage = tensor.untyped_storage()
            storages[storage.data_ptr()] = storage.nbytes()

    for obj in objects:
        if isinstance(obj, torch.nn.Module):
            for param in obj.parameters():
                add(param)
                add(param.grad)
            for buffer in obj.buffers():
                add(buffer)
        elif isinstance(obj, torch.optim.Optimizer):
            for state in obj.state.values():
                for value in state.values():
                    add(value)
    return sum(storages.values())


def _status_kb(pattern: 're.Pattern') -> Optional[int]:
    try:
        with open('/proc/self/status', 'rb') as f:
            found = pattern.search(f.read())
    except OSError:
        return None
    return int(found.group(1)) * 1024 if found else None


def _reset_rss_peak() -> bool:
    """Reset the process's peak RSS (Linux >= 4.0: ``clear_refs`` 5)."""
    try:
        with open('/proc/self/clear_refs', 'w') as f:
            f.write('5')
        return True
    except OSError:
        return False


@contextlib.contextmanager
def _quiet_stderr() -> Iterator[None]:
    """File descriptor 2 to /dev/null: libkineto prints its profiler
    start and stop lines from C++ whatever its log level (torch 2.13)."""
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(os.devnull, 'w') as null:
            os.dup2(null.fileno(), 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def _cpu_peak(events) -> int:
    """The largest running sum of the allocator's memory events."""
    memory = [e for e in events if e.name() == '[memory]'
              and e.device_type() == torch.autograd.DeviceType.CPU]
    start = ((lambda e: e.start_ns()) if memory
             and hasattr(memory[0], 'start_ns') else (lambda e: e.start_us()))
    total = peak = 0
    for event in sorted(memory, key=start):
        total += event.nbytes()
        peak = max(peak, total)
    return peak


def measure_step(step: Callable[[], Any],
                 held: Iterable[Any] = (),
                 device: Optional[str] = None,
                 live: bool = True) -> StepMemory:
    """Run ``step()`` once and measure its memory.

    Args:
        step (callable): One training step (forward, backward, optimizer).
        held (Iterable): Modules and optimizers whose tensors are alive
            before the step (:func:`held_bytes`); on CUDA the allocator
            counts them itself.
        device (str, optional): 'cuda' or 'cpu'. Defaults to 'cuda' where
            a CUDA device is available.
        live (bool): On the CPU, record the allocator (the live tensor
            peak); False measures only the resident memory and the time,
            without the profiler's own cost (``peak_bytes`` is then 0).
            Defaults to True.

    Returns:
        StepMemory: The step's peak.
    """
    if device is None:
        device = 'cuda' if torch.cuda.is_available() else 'cpu'
    start = time.perf_counter()
    if device == 'cuda':
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
        step()
        torch.cuda.synchronize()
        peak = torch.cuda.max_memory_allocated()
        return StepMemory(peak, base, time.perf_counter() - start,
                          device='cuda')
    from torch.profiler import ProfilerActivity, profile
    base = held_bytes(held)
    rss_before = _status_kb(_RSS)
    resettable = _reset_rss_peak()
    if live:
        prof = profile(activities=[ProfilerActivity.CPU], profile_memory=True)
        with _quiet_stderr():  # libkineto's start line
            prof.__enter__()
        try:
            step()
        finally:
            with _quiet_stderr():  # and its stop line
                prof.__exit__(None, None, None)
    else:
        step()
    rss_peak = _status_kb(_HWM)
    seconds = time.perf_counter() - start
    peak = _cpu_peak(prof.profiler.kineto_results.events()) if live else 0
    rss = (rss_peak - rss_before if resettable and rss_peak is not None
           and rss_before is not None else None)
    return StepMemory(base + peak if live else 0, base, seconds, rss, 'cpu')
