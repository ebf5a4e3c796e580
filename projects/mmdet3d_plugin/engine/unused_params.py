"""Unused-parameter reports for DDP: classification, advice, table.

:class:`~projects.mmdet3d_plugin.engine.hooks.DDPUnusedParamHook` records which
parameters received no gradient in its checked iterations; this module turns
those records into a report (a dict, written as ``unused_params.json``), a
table for the log, and the cheapest ``find_unused_parameters`` setting that
is correct. :func:`~projects.mmdet3d_plugin.apis.find_unused_parameters`
runs the same check for a config in one process, before a multi-GPU job is
launched.
"""
from typing import Dict, Iterable, List, Optional, Sequence, Set, Tuple

from mmengine.config import Config

from ..diagnostics.unused_report import (  # noqa: F401  the hook's
    REPORT_FILE, is_ddp_unused_error, parse_unused_indices)

COST_NOTE = ('an extra traversal of the autograd graph every iteration, '
             'typically 5-10% of the iteration time')


class UnusedParamSummary:
    """Unused parameters over the checked iterations of all ranks.

    A parameter is *unused on all ranks* (dead weight) when no rank gave it
    a gradient in any checked iteration; it is *unused on some ranks* when it
    went without a gradient at least once somewhere but was used elsewhere
    (a rank- or data-dependent branch).

    Args:
        names (Sequence[str]): Names of the checked (trainable) parameters,
            as in ``named_parameters()`` of the unwrapped model.
        shapes (Sequence[tuple]): Their shapes, in the same order.
        world_size (int): Number of ranks that take part in the checks.
    """

    def __init__(self, names: Sequence[str], shapes: Sequence[tuple],
                 world_size: int) -> None:
        if len(names) != len(shapes):
            raise ValueError(
                f'UnusedParamSummary: got {len(names)} names but '
                f'{len(shapes)} shapes; pass one shape per parameter')
        self.names = list(names)
        self.shapes = [tuple(s) for s in shapes]
        self.world_size = int(world_size)
        self.iterations: List[int] = []
        self.ranks_reported: Set[int] = set()
        self._unused_ranks: Dict[int, Set[int]] = {}
        self._used: Set[int] = set()
        self.last_iteration: Optional[int] = None
        self.last_unused: Dict[int, List[int]] = {}
        self._dead: Optional[List[int]] = None

    def add_check(self, iteration: int,
                  unused_by_rank: Dict[int, Iterable[int]]) -> None:
        """Record one checked iteration.

        Args:
            iteration (int): The iteration (``runner.iter``) checked.
            unused_by_rank (dict[int, Iterable[int]]): For each rank that
                reported, the indices (into ``names``) of the parameters that
                received no gradient there.
        """
        self.iterations.append(int(iteration))
        self._dead = None
        last: Dict[int, List[int]] = {}
        everything = set(range(len(self.names)))
        for rank, indices in unused_by_rank.items():
            indices = set(indices)
            self.ranks_reported.add(int(rank))
            self._used |= everything - indices
            for i in indices:
                self._unused_ranks.setdefault(i, set()).add(int(rank))
                last.setdefault(i, []).append(int(rank))
        self.last_iteration = int(iteration)
        self.last_unused = {i: sorted(r) for i, r in sorted(last.items())}

    @property
    def complete(self) -> bool:
        """Whether every rank reported in at least one check."""
        return self.ranks_reported >= set(range(self.world_size))

    @property
    def dead(self) -> List[int]:
        """Indices of parameters no rank used in any checked iteration."""
        if self._dead is None:
            self._dead = [
                i for i in sorted(self._unused_ranks) if i not in self._used
            ] if self.complete else []
        return self._dead

    @property
    def partial(self) -> Dict[int, List[int]]:
        """Indices of the other unused parameters -> ranks they skipped."""
        dead = set(self.dead)
        return {
            i: sorted(ranks)
            for i, ranks in sorted(self._unused_ranks.items())
            if i not in dead
        }

    @property
    def unused_ranks(self) -> Dict[int, List[int]]:
        """Indices of all unused parameters -> ranks they skipped."""
        return {i: sorted(r) for i, r in sorted(self._unused_ranks.items())}

    @property
    def any_unused(self) -> bool:
        """Whether any parameter went without a gradient somewhere."""
        return bool(self._unused_ranks)

    @property
    def unused_on_all_ranks(self) -> List[str]:
        """Names of the dead-weight parameters."""
        return [self.names[i] for i in self.dead]

    @property
    def unused_on_some_ranks(self) -> Dict[str, List[int]]:
        """Name -> sorted ranks, for rank- or data-dependent parameters."""
        return {self.names[i]: r for i, r in self.partial.items()}


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


def _module_prefix(name: str, depth: int) -> str:
    parts = name.split('.')[:-1]
    return '.'.join(parts[:depth]) or '(model)'


def format_table(summary: UnusedParamSummary, group_depth: int = 3,
                 max_names: int = 3) -> str:
    """Unused parameters grouped by module prefix, one row per group.

    Args:
        summary (UnusedParamSummary): What the checks found.
        group_depth (int): Module path components kept in the prefix.
            Defaults to 3.
        max_names (int): Names shown per row. Defaults to 3.

    Returns:
        str: The table ('' when nothing went unused).
    """
    dead = set(summary.dead)
    rows: Dict[Tuple[str, str], List[int]] = {}
    for i, ranks in summary.unused_ranks.items():
        where = ('all ranks (dead)' if i in dead else 'rank' +
                 ('s ' if len(ranks) > 1 else ' ') +
                 ','.join(map(str, ranks)))
        key = (_module_prefix(summary.names[i], group_depth), where)
        rows.setdefault(key, []).append(i)
    if not rows:
        return ''
    table = [('module', 'unused on', 'count', 'shapes', 'names')]
    for (prefix, where), indices in rows.items():
        shapes = list(dict.fromkeys(summary.shapes[i] for i in indices))
        shown = ', '.join(str(s) for s in shapes[:max_names])
        if len(shapes) > max_names:
            shown += ', ...'
        names = [summary.names[i] for i in indices]
        listed = ', '.join(names[:max_names])
        if len(names) > max_names:
            listed += f', ... (+{len(names) - max_names})'
        table.append((prefix, where, str(len(indices)), shown, listed))
    widths = [max(len(row[c]) for row in table) for c in range(5)]
    lines = ['  '.join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip()
             for row in table]
    lines.insert(1, '  '.join('-' * w for w in widths))
    return '\n'.join(lines)


def describe(report: dict, table: str) -> str:
    """Headline, table and advice, as logged and printed."""
    unused = (len(report['unused_on_all_ranks']) +
              len(report['unused_on_some_ranks']))
    total = report['num_parameters_checked']
    setting = (f'find_unused_parameters={report["find_unused_parameters"]}'
               if report['ddp'] else 'no DDP')
    counted = (f'{unused} of {total} trainable parameters received no '
               'gradient' if unused else
               f'all {total} trainable parameters received a gradient')
    head = (f'DDPUnusedParamHook: {counted} in iterations '
            f'{report["iterations_checked"]} (world size '
            f'{report["world_size"]}, {setting})')
    if not report['complete']:
        head += (f'; only ranks {report["ranks_reported"]} reported, so '
                 'nothing is classified as dead weight')
    parts = [head]
    if table:
        parts.append(table)
    parts.append('Recommendation: ' + report['recommendation'])
    return '\n'.join(parts)
