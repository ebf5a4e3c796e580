"""Doctor check: does one training step of the config fit a GPU, and what
would each lever give.

The step is measured on this machine with the config's batch
(``doctor/step_memory.py``: the live tensor peak, what a GPU's
``torch.cuda.max_memory_allocated`` shows; in fp32 on a CPU), then again
with each lever that lowers it: preset ``'activation_checkpointing'``,
half the batch with ``--accum 2`` (the same samples per update), and
mixed precision where it runs at speed here (fp16 on a CUDA GPU, bf16 on a
GPU or a CPU with native bfloat16; mmdet3d keeps ``SparseEncoder`` in fp32
under AMP). The capacity is ``--gpu-memory`` (``16G``,
``tool.parse_gpu_memory``) or the local GPU's;
without either the check says how to ask. The verdict is
:func:`plan_gpu_memory`, a function of plain numbers.
"""
import copy
from dataclasses import dataclass
from typing import Any, List, Optional

import torch
from mmengine.config import Config
from mmengine.model import is_model_wrapper

from ...config.presets import force_float32, merge_train_flags
from ...engine.cpu_bf16 import cpu_bf16_native
from ...engine.activation_checkpointing.checkpointing import (
    AUTO, checkpointed_modules, turn_off_activation_checkpointing,
    turn_on_activation_checkpointing)
from ..context import CheckResult, DoctorContext, failed, passed, warned
from ..step_memory import measure_step

CHECK = 'model.gpu_memory'
#: Share of the GPU's memory the step's tensors may take: the CUDA context
#: and the caching allocator's blocks take the rest.
HEADROOM = 0.85


def gib(num_bytes: float) -> str:
    return f'{num_bytes / 2**30:.1f} GiB'


@dataclass
class Lever:
    """One way to lower the step's peak.

    Args:
        name (str): What it is, e.g. ``'activation_checkpointing'``.
        how (str): The line that turns it on.
        peak_bytes (int, optional): Its measured peak; None if not
            measured here.
        why_not (str): Why it was not measured. Defaults to ''.
    """
    name: str
    how: str
    peak_bytes: Optional[int] = None
    why_not: str = ''

    def describe(self) -> str:
        if self.peak_bytes is None:
            return f'{self.name}: not measured here ({self.why_not})'
        return f'{self.name} {gib(self.peak_bytes)} ({self.how})'


def plan_gpu_memory(peak_bytes: int, capacity_bytes: int, where: str,
                    levers: List[Lever]) -> CheckResult:
    """The verdict for a step peak against a GPU's memory.

    Args:
        peak_bytes (int): The step's live tensor peak.
        capacity_bytes (int): The GPU's memory.
        where (str): How the peak was measured, for the line.
        levers (list[Lever]): What each lever gives.

    Returns:
        CheckResult: pass when the peak is within :data:`HEADROOM` of the
        capacity; warn above it; fail above the capacity. A warn or fail
        names the levers that fit, smallest peak first.
    """
    usable = capacity_bytes * HEADROOM
    detail = (f'one training step peaks at {gib(peak_bytes)} of tensors '
              f'({where}); the GPU has {gib(capacity_bytes)}')
    listed = '; '.join(lever.describe() for lever in levers)
    if peak_bytes <= usable:
        return passed(CHECK, f'{detail}: fits with '
                      f'{gib(capacity_bytes - peak_bytes)} to spare' +
                      (f'. Levers: {listed}' if listed else ''))
    fitting = sorted((lv for lv in levers if lv.peak_bytes is not None
                      and lv.peak_bytes <= usable),
                     key=lambda lv: lv.peak_bytes)
    fix = ('; '.join(f'{lv.how} ({gib(lv.peak_bytes)})' for lv in fitting)
           if fitting else
           'none of the levers measured here fits alone: combine them, or '
           'train on a GPU with more memory') + (
               f'. Levers: {listed}' if listed else '')
    if peak_bytes <= capacity_bytes:
        return warned(CHECK, f'{detail}: above the {HEADROOM:.0%} the '
                      'CUDA context and the allocator leave', fix)
    return failed(CHECK, f'{detail}: it does not fit (CUDA out of memory)',
                  fix)


def _half_batch(batch: Any) -> Any:
    """The first half of a pseudo-collated batch (lists halved)."""
    if isinstance(batch, dict):
        return {k: _half_batch(v) for k, v in batch.items()}
    if isinstance(batch, (list, tuple)):
        return batch[:max(len(batch) // 2, 1)]
    return batch


def _batch_size(batch: Any) -> int:
    samples = batch.get('data_samples') if isinstance(batch, dict) else None
    return len(samples) if isinstance(samples, (list, tuple)) else 0


def capacity_of(ctx: DoctorContext) -> Optional[int]:
    """``--gpu-memory``, else the local GPU's memory, else None."""
    if ctx.options.gpu_memory is not None:
        return ctx.options.gpu_memory
    if torch.cuda.is_available():
        return torch.cuda.get_device_properties(0).total_memory
    return None


def check_gpu_memory(ctx: DoctorContext) -> CheckResult:
    """Measure one step and its levers; say whether it fits the GPU."""
    capacity = capacity_of(ctx)
    if capacity is None:
        return passed(CHECK, 'skipped: no GPU here; pass --gpu-memory 16G '
                      "(your GPUs' memory) to measure a step's peak "
                      'against it')
    runner = ctx.artifacts['runner']
    batch = ctx.artifacts['memory_batch']
    model = runner.model
    plain = model.module if is_model_wrapper(model) else model
    device = 'cuda' if next(plain.parameters()).is_cuda else 'cpu'
    optim_cfg = copy.deepcopy(ctx.cfg.optim_wrapper)
    precision_note = 'as configured'
    if device == 'cpu' or ctx.artifacts.get('amp_ok') is False:
        optim_cfg = force_float32(dict(optim_wrapper=optim_cfg),
                                  'doctor model.gpu_memory')['optim_wrapper']
        precision_note = 'fp32'

    def step_peak(data, wrapper_cfg=optim_cfg) -> int:
        wrapper = runner.build_optim_wrapper(copy.deepcopy(wrapper_cfg))
        wrapper.initialize_count_status(model, 0, 1)
        model.zero_grad(set_to_none=True)
        usage = measure_step(lambda: model.train_step(data, wrapper),
                             held=[plain, wrapper.optimizer], device=device)
        model.zero_grad(set_to_none=True)
        return usage.peak_bytes

    size = _batch_size(batch)
    peak = step_peak(batch)
    levers = []
    if not checkpointed_modules(plain):
        how = ("presets = ['activation_checkpointing'] (or --cfg-options "
               'activation_checkpointing=auto)')
        try:
            turn_on_activation_checkpointing(plain, AUTO)
        except ValueError as e:
            levers.append(Lever('activation_checkpointing', how,
                                why_not=str(e).split(';')[0]))
        else:
            try:
                levers.append(Lever('activation_checkpointing', how,
                                    step_peak(batch)))
            finally:
                turn_off_activation_checkpointing(plain)
    if size >= 2:
        half = max(size // 2, 1)
        levers.append(Lever(
            f'batch {half} with --accum 2',
            f'--cfg-options train_dataloader.batch_size={half} and --accum 2',
            step_peak(_half_batch(batch))))
    levers += _precision_levers(ctx, device, optim_cfg, batch, step_peak)
    where = (f'batch {size}, {precision_note}, measured on '
             f'{"this GPU" if device == "cuda" else "the CPU"}')
    return plan_gpu_memory(peak, capacity, where, levers)


def _precision_levers(ctx, device, optim_cfg, batch, step_peak):
    """fp16 / bf16 measured where they run at speed, else said why not."""
    levers = []
    for mode in ('fp16', 'bf16'):
        how = f'--amp {mode}'
        if device == 'cpu' and mode == 'fp16':
            levers.append(Lever(mode, how, why_not='fp16 autocast needs a '
                                'CUDA GPU'))
            continue
        if mode == 'bf16' and (
                (device == 'cuda' and not torch.cuda.is_bf16_supported())
                or (device == 'cpu' and not cpu_bf16_native())):
            levers.append(Lever(mode, how, why_not='bfloat16 is emulated '
                                'on this ' + ('GPU' if device == 'cuda'
                                              else 'CPU')))
            continue
        cfg = Config(dict(optim_wrapper=copy.deepcopy(optim_cfg)))
        merge_train_flags(cfg, amp=mode)
        levers.append(Lever(mode, how,
                            step_peak(batch, cfg.optim_wrapper.to_dict())))
    return levers
