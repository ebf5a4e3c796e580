"""Doctor checks of optimisation: mixed precision possible here, gradient
accumulation through BatchNorm, the effective batch and LR, finite losses."""
import math
from typing import Dict, List, Tuple

from ...config.optim_wrapper import (accumulative_counts_of, first_wrapper,
                                     precision_of)
from ...engine.amp import (bf16_cpu_slowdown, check_amp_supported,
                           cpu_precision_fix, warn_accumulation_with_batchnorm)
from ...engine.cpu_bf16 import cpu_bf16_native
from ...engine.lr_scaling import effective_batch_size, effective_lr
from ...engine.runner import PluginRunner
from ..context import (CheckResult, DoctorContext, failed, one_line, passed,
                       warned)


def machine_precisions() -> List[str]:
    """Autocast dtypes that run on this machine (tried on a tiny matmul);
    bfloat16 on a CPU without native support is listed as
    'bfloat16 (emulated, slow)'."""
    import torch
    device = 'cuda' if torch.cuda.is_available() else 'cpu'
    out = ['float32']
    for name, dtype in (('float16', torch.float16),
                        ('bfloat16', torch.bfloat16)):
        if name == 'float16' and device == 'cpu':
            continue  # mmengine's AmpOptimWrapper refuses CPU
        if name == 'bfloat16' and device == 'cuda' and \
                not torch.cuda.is_bf16_supported():
            continue
        try:
            with torch.autocast(device_type=device, dtype=dtype):
                a = torch.ones(4, 4, device=device)
                product = a @ a
            if product.dtype == dtype:
                emulated = device == 'cpu' and name == 'bfloat16' and \
                    not cpu_bf16_native()
                out.append(f'{name} (emulated, slow)' if emulated else name)
        except (RuntimeError, ValueError):
            continue
    return out


def check_amp(ctx: DoctorContext) -> CheckResult:
    """The configured precision runs on this machine."""
    import torch

    optim_wrapper = first_wrapper(ctx.cfg)
    possible = machine_precisions()
    device = 'CUDA' if torch.cuda.is_available() else 'CPU'
    here = f'this {device} machine runs {", ".join(possible)}'
    if optim_wrapper is None:
        ctx.provide('amp_ok', True)
        return passed('optim.amp', f'no optim_wrapper; {here}')
    precision = precision_of(optim_wrapper)
    kind = optim_wrapper.get('type', 'OptimWrapper')
    try:
        check_amp_supported(ctx.cfg)
    except RuntimeError as exc:
        ctx.provide('amp_ok', False)
        message = str(exc).split(': ', 1)[-1].split('; ', 1)[0]
        if device == 'CPU':
            fix = cpu_precision_fix() + ', or run on a CUDA machine'
        else:
            fix = ("use presets = ['fp16_dynamic'] (--amp fp16) on this GPU, "
                   'or drop the AMP preset')
        return failed('optim.amp', one_line(f'{message}; {here}'), fix)
    if not any(p.split()[0] == precision for p in possible):
        ctx.provide('amp_ok', False)
        return failed(
            'optim.amp', f'{kind} trains in {precision}, but {here}',
            'train in float32 with --amp fp32, or drop the AMP preset')
    ctx.provide('amp_ok', True)
    return passed('optim.amp', f'{kind} trains in {precision}; {here}')


def check_bf16_speed(ctx: DoctorContext) -> CheckResult:
    """bfloat16 on a CPU without native support: the slowdown, measured on
    the model's own first convolution (a warning)."""
    model = ctx.artifacts['runner'].model
    slowdown = bf16_cpu_slowdown(model, ctx.cfg)
    ctx.provide('bf16_emulated', slowdown is not None)
    if slowdown is not None:
        detail, fix = slowdown.split('. Fix: ', 1)
        return warned('optim.bf16_speed', detail, fix)
    precision = precision_of(first_wrapper(ctx.cfg) or {})
    if precision != 'bfloat16':
        return passed('optim.bf16_speed', f'trains in {precision}')
    return passed('optim.bf16_speed',
                  'bfloat16 runs natively here (GPU, or a CPU with '
                  'AVX512-BF16 / AMX)')


def check_accumulation_bn(ctx: DoctorContext) -> CheckResult:
    """Gradient accumulation through BatchNorm layers (a warning)."""
    from mmengine.logging import MMLogger
    from torch.nn.modules.batchnorm import _BatchNorm

    model = ctx.artifacts['runner'].model
    counts = accumulative_counts_of(ctx.cfg) or 1
    norms = [n for n, m in model.named_modules() if isinstance(m, _BatchNorm)]
    if counts <= 1:
        return passed('optim.accumulation_bn',
                      f'no gradient accumulation ({len(norms)} BatchNorm '
                      'layers normalise over the whole per-GPU batch)')
    logger = MMLogger.get_current_instance()
    level = logger.level
    logger.setLevel('ERROR')  # the checklist line says it instead
    try:
        warns = warn_accumulation_with_batchnorm(model, ctx.cfg)
    finally:
        logger.setLevel(level)
    if not warns:
        return passed(
            'optim.accumulation_bn', f'accumulation x{counts} and no '
            f'BatchNorm layer: updates match a {counts}x larger batch')
    batch = (ctx.cfg.get('train_dataloader') or {}).get('batch_size', '?')
    return warned(
        'optim.accumulation_bn', f'accumulation x{counts} with {len(norms)} '
        f'BatchNorm layer(s) (e.g. {norms[0]}): they normalise over the '
        f'{batch} samples of one iteration, not the {counts}x larger batch '
        'of an update, so results can differ from a truly larger batch',
        'prefer a larger train_dataloader.batch_size with fewer '
        'accumulation steps when memory allows; with several GPUs, '
        "sync_bn = 'torch' makes the statistics span all GPUs")


def _counts_accumulation(cfg) -> bool:
    """Whether the config's Runner counts accumulation in auto_scale_lr."""
    from mmdet3d.registry import RUNNERS

    kind = cfg.get('runner_type')
    if not kind:
        return False
    cls = RUNNERS.get(kind) if isinstance(kind, str) else kind
    return isinstance(cls, type) and issubclass(cls, PluginRunner)


def lr_plan(cfg, world_size: int) -> Tuple[Dict, List[str]]:
    """Effective batch and the LR with and without auto-scaling.

    Returns:
        tuple[dict, list[str]]: Numbers (``base_lr``, ``batch_size``,
        ``accumulative_counts``, ``effective_batch``, ``base_batch_size``,
        ``scaled_lr``, ``enabled``, ``run_lr``), and problems found.
    """
    problems = []
    wrapper = first_wrapper(cfg) or {}
    base_lr = (wrapper.get('optimizer') or {}).get('lr')
    batch_size = int((cfg.get('train_dataloader') or {}).get('batch_size', 1))
    counts = int(accumulative_counts_of(cfg) or 1)
    counted = _counts_accumulation(cfg)
    effective = effective_batch_size(world_size, batch_size, counts)
    auto = cfg.get('auto_scale_lr') or {}
    base_bs = auto.get('base_batch_size')
    enabled = bool(auto.get('enable', False))
    scaled = None
    if base_lr is not None and base_bs:
        scaled = effective_lr(base_lr, base_bs, world_size, batch_size,
                              counts if counted else 1)
    run_lr = scaled if enabled and scaled is not None else base_lr
    if counts > 1 and enabled and not counted:
        problems.append('accumulation')
    return dict(
        base_lr=base_lr,
        batch_size=batch_size,
        accumulative_counts=counts,
        effective_batch=effective,
        base_batch_size=base_bs,
        scaled_lr=scaled,
        enabled=enabled,
        run_lr=run_lr), problems


def check_lr(ctx: DoctorContext) -> CheckResult:
    """The effective batch size and the LR the run will use."""
    ws = ctx.options.world_size
    plan, problems = lr_plan(ctx.cfg, ws)
    batch = (f'effective batch = world size {ws} x batch_size '
             f'{plan["batch_size"]} x accumulation '
             f'{plan["accumulative_counts"]} = {plan["effective_batch"]}')
    if plan['base_lr'] is None:
        return warned('optim.lr', f'{batch}; the optimizer sets no lr',
                      'set optim_wrapper.optimizer.lr')
    base_bs = plan['base_batch_size']
    if not base_bs:
        return warned(
            'optim.lr', f'{batch}; LR {plan["base_lr"]:g} as configured; '
            'auto_scale_lr.base_batch_size is not set, so nothing says which '
            'batch the LR was tuned for',
            'auto_scale_lr = dict(enable=False, base_batch_size=<total batch '
            'the LR was tuned for, e.g. 32>)')
    scaled = plan['scaled_lr']
    both = (f'{batch}; LR {plan["base_lr"]:g} tuned for batch {base_bs}, '
            f'{scaled:.4g} with auto-scale')
    if problems:
        return warned(
            'optim.lr', f'{both}, but runner_type={ctx.cfg.runner_type!r} '
            'leaves the accumulation out of auto_scale_lr',
            "runner_type = 'PluginRunner' (the default of the plugin's "
            'load_config) scales by world size x batch x accumulation')
    if plan['enabled']:
        return passed('optim.lr', f'{both}: the run uses {scaled:.4g} '
                      '(auto_scale_lr on)')
    if plan['effective_batch'] == base_bs:
        return passed(
            'optim.lr', f'{both}: the run uses {plan["base_lr"]:g} '
            '(auto_scale_lr off, batch matches)')
    return warned(
        'optim.lr', f'{both}: the run uses {plan["base_lr"]:g} (auto_scale_lr '
        f'off) for a batch of {plan["effective_batch"]}',
        f'auto_scale_lr = dict(enable=True, base_batch_size={base_bs}) (or '
        f'tools/train.py --auto-scale-lr) to train with LR {scaled:.4g}, or '
        f'set optim_wrapper.optimizer.lr={scaled:.4g}')


def check_loss(ctx: DoctorContext) -> CheckResult:
    """The losses stay finite over the iterations."""
    losses = ctx.artifacts['train_stats']['losses']
    bad = [(i, name, value) for i, row in enumerate(losses)
           for name, value in row.items() if not math.isfinite(value)]
    if bad:
        listed = ', '.join(f'{name}={value} at iteration {i + 1}'
                           for i, name, value in bad[:4])
        return failed(
            'optim.loss', f'non-finite losses: {listed}',
            'lower optim_wrapper.optimizer.lr or add optim_wrapper.clip_grad='
            "dict(max_norm=35, norm_type=2); with float16 use preset "
            "'fp16_dynamic'; check the data for NaN/inf points and empty "
            'boxes')
    names = [k for k in losses[-1] if k != 'loss']
    total = [row.get('loss') for row in losses]
    shown = ', '.join(f'{v:.4g}' for v in total if v is not None)
    parts = f' ({", ".join(names[:8])}{", ..." if len(names) > 8 else ""})' \
        if names else ''
    return passed(
        'optim.loss',
        one_line(f'finite in all {len(losses)} iterations: loss {shown}'
                 f'{parts}'))
