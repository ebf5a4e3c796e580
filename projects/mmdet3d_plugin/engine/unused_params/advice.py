"""The cheapest correct ``find_unused_parameters`` setting, as the config
line to write, and the machine-readable report (``unused_params.json``)."""
from typing import Optional, Tuple

from mmengine.config import Config

from .summary import UnusedParamSummary

COST_NOTE = ('an extra traversal of the autograd graph every iteration, '
             'typically 5-10% of the iteration time')


def wrapper_config_line(cfg: Optional[Config], value: bool) -> str:
    """The config line that sets ``find_unused_parameters`` to ``value``.

    mmengine's Runner reads the top-level ``find_unused_parameters`` only
    when the config has no ``model_wrapper_cfg``; otherwise the key must go
    into ``model_wrapper_cfg``, which the line then repeats in full.

    Args:
        cfg (Config, optional): The training config. Defaults to None (the
            top-level line).
        value (bool): The setting to recommend.

    Returns:
        str: e.g. ``find_unused_parameters = True``.
    """
    wrapper = cfg.get('model_wrapper_cfg') if cfg is not None else None
    if not wrapper:
        return f'find_unused_parameters = {value}'
    wrapper = dict(wrapper.to_dict() if hasattr(wrapper, 'to_dict') else
                   wrapper)
    wrapper['find_unused_parameters'] = value
    ordered = {'type': wrapper.pop('type')} if 'type' in wrapper else {}
    ordered.update(wrapper)
    args = ', '.join(f'{key}={val!r}' for key, val in ordered.items())
    return f'model_wrapper_cfg = dict({args})'


def configured_find_unused(cfg: Optional[Config]) -> bool:
    """``find_unused_parameters`` as the config would give it to DDP."""
    if cfg is None:
        return False
    wrapper = cfg.get('model_wrapper_cfg')
    if wrapper:
        return bool(wrapper.get('find_unused_parameters', False))
    return bool(cfg.get('find_unused_parameters', False))


def recommend(summary: UnusedParamSummary,
              find_unused: bool,
              cfg: Optional[Config] = None,
              static_graph: bool = False) -> Tuple[str, Optional[str]]:
    """The cheapest correct ``find_unused_parameters`` setting.

    Args:
        summary (UnusedParamSummary): What the checks found.
        find_unused (bool): The setting DDP runs (or would run) with.
        cfg (Config, optional): The training config, to phrase the line as
            the config wraps its model. Defaults to None.
        static_graph (bool): Whether DDP runs with ``static_graph=True``.
            Defaults to False.

    Returns:
        tuple[str, str | None]: The advice, and the config line it asks for
        (None when nothing needs to change).
    """
    checked = len(summary.iterations)
    window = f'{checked} checked iteration{"s" if checked != 1 else ""}'
    dead = summary.unused_on_all_ranks
    partial = summary.unused_on_some_ranks
    if not summary.any_unused:
        if not find_unused:
            return (f'No parameter went unused in {window}: '
                    'find_unused_parameters=False (the default, and the '
                    'fastest) is right.', None)
        line = wrapper_config_line(cfg, False)
        return (f'No parameter went unused in {window}, yet '
                f'find_unused_parameters=True costs {COST_NOTE}. Set '
                f'`{line}` (or keep the graph check cheap with '
                'static_graph=True in model_wrapper_cfg). Keep True only if '
                'branches this window did not see can skip parameters; widen '
                'the check (check_iters, interval) to find out.', line)
    on = wrapper_config_line(cfg, True)
    fails = ('With find_unused_parameters=False, multi-GPU (DDP) training '
             'fails on a later iteration with "Expected to have finished '
             'reduction in the prior iteration".')
    if partial:
        count = f'{len(partial)} parameter{"s" if len(partial) != 1 else ""}'
        text = (f'{count} received no gradient on some ranks or in some '
                'iterations (rank- or data-dependent branches). ')
        if find_unused:
            text += f'They need find_unused_parameters=True: keep `{on}`.'
        else:
            text += (f'{fails} Set `{on}` (costs {COST_NOTE}), or make the '
                     'skipped branches touch their parameters (e.g. add '
                     '0 * their sum to the loss) and keep it False.')
        if dead:
            text += (f' The {len(dead)} parameters unused on every rank are '
                     'dead weight: freeze (requires_grad_(False)) or remove '
                     'them.')
        return text, on
    count = f'{len(dead)} parameter{"s" if len(dead) != 1 else ""}'
    if static_graph and not find_unused:
        return (f'{count} received no gradient on any rank in {window} (dead '
                'weight). DDP runs with static_graph=True, which copes with '
                'parameters unused the same way in every iteration; still, '
                'freeze (requires_grad_(False)) or remove them.', None)
    if find_unused:
        off = wrapper_config_line(cfg, False)
        return (f'{count} received no gradient on any rank in {window} (dead '
                'weight); find_unused_parameters=True is what lets DDP run. '
                'Freeze them (requires_grad_(False)) or remove them, then '
                f'set `{off}` to save {COST_NOTE}.', off)
    return (f'{count} received no gradient on any rank in {window} (dead '
            'weight). Cheapest fix: freeze them (requires_grad_(False)) or '
            f'remove them and keep find_unused_parameters=False. {fails} '
            f'Until they are frozen, `{on}` makes it run, at the cost of '
            f'{COST_NOTE}.', on)


def build_report(summary: UnusedParamSummary, *, ddp: bool,
                 find_unused: bool, static_graph: bool = False,
                 cfg: Optional[Config] = None) -> dict:
    """The machine-readable report (the content of ``unused_params.json``).

    Args:
        summary (UnusedParamSummary): What the checks found.
        ddp (bool): Whether the model runs inside DistributedDataParallel.
        find_unused (bool): ``find_unused_parameters`` of the DDP wrapper
            (False without DDP).
        static_graph (bool): ``static_graph`` of the DDP wrapper.
            Defaults to False.
        cfg (Config, optional): The training config. Defaults to None.

    Returns:
        dict: ``world_size``, ``iterations_checked``, ``ranks_reported``,
        ``complete`` (every rank reported), ``ddp``,
        ``find_unused_parameters`` (of the DDP wrapper; False without DDP),
        ``configured_find_unused_parameters`` (what the config asks for),
        ``static_graph``, ``num_parameters_checked``,
        ``unused_on_all_ranks`` (names), ``unused_on_some_ranks`` (name ->
        ranks), ``last_check`` (``iteration`` and ``unused``: name -> ranks),
        ``config_line`` (the line to set, or None) and ``recommendation``.
    """
    configured = configured_find_unused(cfg)
    advice, line = recommend(summary, find_unused if ddp else configured,
                             cfg, static_graph and ddp)
    return dict(
        world_size=summary.world_size,
        iterations_checked=list(summary.iterations),
        ranks_reported=sorted(summary.ranks_reported),
        complete=summary.complete,
        ddp=ddp,
        find_unused_parameters=bool(find_unused) if ddp else False,
        configured_find_unused_parameters=configured,
        static_graph=bool(static_graph),
        num_parameters_checked=len(summary.names),
        unused_on_all_ranks=summary.unused_on_all_ranks,
        unused_on_some_ranks=summary.unused_on_some_ranks,
        last_check=dict(
            iteration=summary.last_iteration,
            unused={
                summary.names[i]: ranks
                for i, ranks in summary.last_unused.items()
            }),
        config_line=line,
        recommendation=advice,
    )
