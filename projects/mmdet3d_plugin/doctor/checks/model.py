"""Doctor checks of the model: it builds with the config's Runner, trains N
iterations in this process, and uses its parameters as DDP expects.

Which parameters an iteration used is recorded with the marks of
``DDPUnusedParamHook`` (``engine.unused_params.marks.mark_gradients``: a
``Tensor.register_post_accumulate_grad_hook`` per parameter; mmengine
zero-grads inside ``train_step``, so ``p.grad`` says nothing afterwards);
a parameter never used is dead weight, one used in some iterations only
belongs to a data-dependent branch. Both make DDP fail with
``find_unused_parameters=False``.
"""
import copy
import itertools
import time
from typing import Any, Dict, List, Set

from ...cli.runner_setup import build_runner, isolate_runner
from ...config.presets import force_float32
from ...engine.nonfinite.first_module import first_nonfinite_module
from ...engine.nonfinite.records import (batch_samples, describe, loss_terms,
                                         nonfinite_terms, sample_tokens)
from ...engine.unused_params.summary import UnusedParamSummary
from ...engine.unused_params.advice import (configured_find_unused,
                                            wrapper_config_line)
from ...engine.unused_params.marks import mark_gradients
from ..context import CheckResult, DoctorContext, failed, passed, warned
from .data import prebuilt


def runner_config(ctx: DoctorContext):
    """The config the doctor builds its Runner from.

    Same as the run's, except: no launcher (one process), the work_dir and
    logs in a temporary folder, no resume, and the log level raised so the
    checklist stays readable.
    """
    cfg = copy.deepcopy(ctx.cfg)
    cfg.launcher = 'none'
    cfg.work_dir = ctx.tmp_dir
    cfg.resume = False
    isolate_runner(cfg, 'doctor')
    if not ctx.options.verbose:
        cfg.log_level = 'ERROR'
    return cfg


def check_build(ctx: DoctorContext) -> CheckResult:
    """Build the Runner (and with it the model) as tools/train.py does."""
    from torch.nn.modules.batchnorm import _BatchNorm

    runner = build_runner(runner_config(ctx))
    ctx.provide('runner', runner)
    ctx.loggers.append(runner.logger)
    model = runner.model
    params = list(model.parameters())
    total = sum(p.numel() for p in params)
    trainable = sum(p.numel() for p in params if p.requires_grad)
    norms = sum(isinstance(m, _BatchNorm) for m in model.modules())
    return passed(
        'model.build', f'{type(runner).__name__} built {type(model).__name__}'
        f': {_count(total)} parameters ({_count(trainable)} trainable), '
        f'{norms} BatchNorm layer(s)')


def _count(n: int) -> str:
    return f'{n / 1e6:.2f} M' if n >= 10**5 else f'{n:,}'


def _batches(ctx: DoctorContext):
    """Train batches: the first-batch check's workers, else in-process."""
    from mmengine.registry import init_default_scope
    from mmengine.runner import Runner

    first = ctx.artifacts.pop('first_batch', None)
    iterator = ctx.artifacts.get('train_iterator')
    if iterator is not None:
        source = 'the data.first_batch workers'
        head = [first] if first is not None else []
        return itertools.chain(head, iterator), source
    loader_cfg = copy.deepcopy(dict(ctx.cfg.train_dataloader))
    loader_cfg.update(
        dataset=prebuilt(ctx.artifacts['dataset.train']),
        num_workers=0,
        persistent_workers=False)
    loader_cfg.pop('multiprocessing_context', None)
    loader_cfg.pop('prefetch_factor', None)
    init_default_scope(ctx.cfg.get('default_scope', 'mmdet3d'))
    loader = Runner.build_dataloader(loader_cfg)
    return iter(loader), 'this process (num_workers=0: the worker loader ' \
        'failed)'


def _scalar(value: Any) -> float:
    if hasattr(value, 'detach'):
        value = value.detach().float().mean().item()
    return float(value)


class ParamUseRecorder:
    """Which trainable parameters receive a gradient, per iteration (the
    marks of ``DDPUnusedParamHook``, :func:`mark_gradients`).

    Args:
        model (nn.Module): The (unwrapped) model.
    """

    def __init__(self, model) -> None:
        named = [(n, p) for n, p in model.named_parameters()
                 if p.requires_grad]
        self.names = [n for n, _ in named]
        self.shapes = [tuple(p.shape) for _, p in named]
        self.iterations: List[Set[int]] = []
        self._used, self._handles = mark_gradients([p for _, p in named])

    def next_iteration(self) -> None:
        """Close the current iteration's record and start a new one."""
        self.iterations.append(
            {i for i, used in enumerate(self._used) if used})
        # In place: the hooks hold this bytearray.
        self._used[:] = bytes(len(self._used))

    def remove(self) -> None:
        """Remove the gradient hooks."""
        for handle in self._handles:
            handle.remove()
        self._handles = []


def check_train(ctx: DoctorContext) -> CheckResult:
    """Train ``iters`` iterations in this process and record losses and
    parameter use."""
    runner = ctx.artifacts['runner']
    model = runner.model
    iters = ctx.options.iters
    notes = []
    optim_cfg = copy.deepcopy(ctx.cfg.optim_wrapper)
    fp32_since = None
    if ctx.artifacts.get('amp_ok') is False:
        fp32_since = 'optim.amp failed'
    elif ctx.artifacts.get('bf16_emulated'):
        fp32_since = ('bfloat16 is emulated on this CPU '
                      '(optim.bf16_speed)')
    if fp32_since:
        optim_cfg = force_float32(
            dict(optim_wrapper=optim_cfg),
            'doctor model.train')['optim_wrapper']
        notes.append(f'in float32, since {fp32_since}')
    if hasattr(model, 'init_weights'):
        model.init_weights()
    if ctx.cfg.get('load_from'):
        runner.load_checkpoint(ctx.cfg.load_from)
        notes.append(f'from {ctx.cfg.load_from}')
    optim_wrapper = runner.build_optim_wrapper(optim_cfg)
    optim_wrapper.initialize_count_status(model, 0, iters)
    batches, source = _batches(ctx)
    model.train()
    recorder = ParamUseRecorder(model)
    losses: List[Dict[str, float]] = []
    nonfinite: List[dict] = []
    start = time.perf_counter()
    try:
        for i, batch in zip(range(iters), batches):
            if i == 0:
                ctx.provide('memory_batch', batch)  # model.gpu_memory's
            log_vars = model.train_step(batch, optim_wrapper)
            recorder.next_iteration()
            losses.append({k: _scalar(v) for k, v in log_vars.items()})
            if nonfinite_terms(loss_terms(log_vars)):
                nonfinite.append(_nonfinite_record(
                    model, ctx.artifacts.get('dataset.train'), i + 1, batch,
                    log_vars, len(nonfinite)))
    finally:
        recorder.remove()
        ctx.artifacts.pop('train_iterator', None)
        ctx.artifacts.pop('train_loader', None)
    seconds = time.perf_counter() - start
    if not losses:
        return failed(
            'model.train', 'the train dataloader yielded no batch',
            'check train_dataloader: batch_size, drop_last and the dataset '
            'length')
    ctx.provide(
        'train_stats',
        dict(
            names=recorder.names,
            shapes=recorder.shapes,
            used=recorder.iterations,
            losses=losses,
            nonfinite=nonfinite))
    if nonfinite:
        return failed(
            'model.train', f'{len(nonfinite)} of {len(losses)} iterations '
            f'had a non-finite loss; the first: {describe(nonfinite[0])}',
            'check the samples named (their files), as non-finite inputs '
            'point at the data; a loss that grows at once points at the LR '
            '(lower it, warm up, clip gradients). In training '
            'NonFiniteGuardHook skips such steps and records them in '
            'nonfinite.json in this format')
    first, last = losses[0].get('loss'), losses[-1].get('loss')
    trend = (f', loss {first:.4g} -> {last:.4g}'
             if first is not None and last is not None else '')
    extra = f' ({"; ".join(notes)})' if notes else ''
    return passed(
        'model.train', f'{len(losses)} iterations in {seconds:.1f} s '
        f'({seconds / len(losses):.2f} s/iter, batches from {source})'
        f'{trend}{extra}')


def _nonfinite_record(model, dataset, iteration: int, batch, log_vars,
                      before: int) -> dict:
    """A non-finite iteration as ``NonFiniteGuardHook`` records it."""
    terms = loss_terms(log_vars)
    first, inputs = first_nonfinite_module(model, batch)
    tokens = sample_tokens(dataset) if dataset is not None else {}
    return dict(
        iteration=iteration, epoch=0, grad_norm='not read',
        action='found by the doctor (training here is not guarded)',
        ranks=[dict(rank=0, nonfinite_terms=nonfinite_terms(terms),
                    loss_terms=terms, samples=batch_samples(batch, tokens),
                    nonfinite_inputs=inputs, first_module=first)],
        in_a_row=before + 1, skipped=before + 1)


def _names(names: List[str], limit: int = 3, depth: int = 3) -> str:
    """A few names, or their modules (``a.b.c.* (12)``) when there are many.
    """
    if len(names) > limit:
        groups: Dict[str, int] = {}
        for name in names:
            module = '.'.join(name.split('.')[:-1][:depth]) or name
            groups[module] = groups.get(module, 0) + 1
        names = [f'{module}.* ({count})' for module, count in groups.items()]
    shown = ', '.join(names[:limit])
    return shown + (f', ... (+{len(names) - limit} modules)'
                    if len(names) > limit else '')


def check_unused(ctx: DoctorContext) -> CheckResult:
    """Dead and batch-dependent parameters, and the ``find_unused_parameters``
    setting that DDP needs."""
    stats = ctx.artifacts['train_stats']
    summary = UnusedParamSummary(stats['names'], stats['shapes'], 1)
    everything = set(range(len(stats['names'])))
    for i, used in enumerate(stats['used']):
        summary.add_check(i, {0: everything - used})
    dead = summary.unused_on_all_ranks
    varying = list(summary.unused_on_some_ranks)
    configured = configured_find_unused(ctx.cfg)
    needed = bool(dead or varying)
    window = f'{len(stats["used"])} iterations'
    on = wrapper_config_line(ctx.cfg, True)
    off = wrapper_config_line(ctx.cfg, False)
    found = []
    if dead:
        found.append(f'{len(dead)} of {len(stats["names"])} trainable '
                     f'parameters never received a gradient in {window} '
                     f'({_names(dead)})')
    if varying:
        found.append(f'{len(varying)} received one in some iterations only '
                     f'({_names(varying)})')
    setting = (f'find_unused_parameters={configured} configured, '
               f'{needed} needed')
    if not needed:
        detail = (f'all {len(stats["names"])} trainable parameters received '
                  f'a gradient in each of {window}; {setting}')
        if configured:
            return warned(
                'model.unused_params', detail, f'`{off}`: True costs an '
                'extra autograd-graph traversal every iteration and nothing '
                'went unused')
        return passed('model.unused_params', detail)
    detail = '; '.join(found) + f'; {setting}'
    if configured:
        if dead:
            return warned(
                'model.unused_params', detail,
                f'freeze (requires_grad_(False)) or remove {_names(dead)}; '
                f'without parameters that vary, `{off}` is then faster')
        return passed('model.unused_params', detail)
    if dead and not varying:
        fix = (f'remove or freeze (requires_grad_(False)) {_names(dead)}, or '
               f'set `{on}`')
    else:
        fix = (f'set `{on}` (data-dependent branches need it)' +
               (f', and remove or freeze {_names(dead)}' if dead else ''))
    if ctx.options.uses_ddp:
        return failed(
            'model.unused_params',
            detail + '; DDP will stop with "Expected to have finished '
            'reduction in the prior iteration"', fix)
    return warned(
        'model.unused_params',
        detail + '; harmless in one process, fatal under DDP', fix)
