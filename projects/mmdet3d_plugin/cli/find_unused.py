"""Train a few iterations in this process and report unused parameters."""
import copy
import tempfile
from typing import Optional

from mmengine.config import Config
from mmengine.hooks import Hook
from mmengine.runner import Runner

from mmdet3d.registry import RUNNERS
from ..engine.unused_params.ddp_unused_param_hook import DDPUnusedParamHook
from ..engine.unused_params.table import format_table
from .runner_setup import isolate_runner


class _Stop(Exception):
    """Ends a preflight run after its iterations."""


def find_unused_parameters(cfg: Config, iters: int = 3,
                           work_dir: Optional[str] = None) -> dict:
    """Train ``iters`` steps in this process and report unused parameters.

    Runs without DDP, validation or checkpoints; logs go to a temporary
    work_dir unless ``work_dir`` is given. The model's usage of its
    parameters does not depend on DDP, so the report predicts what
    multi-GPU training with the config will hit; parameters that depend on
    the rank (not on the data) only show up in a distributed run with
    :class:`~projects.mmdet3d_plugin.engine.hooks.DDPUnusedParamHook`.

    Args:
        cfg (Config): A training config (``Config.fromfile``).
        iters (int): Train iterations to check. Defaults to 3.
        work_dir (str, optional): Where logs and ``unused_params.json`` go.
            Defaults to None (a temporary directory, removed afterwards).

    Returns:
        dict: The report, as :func:`build_report` makes it, plus ``table``
        (the text table).

    Examples:
        >>> cfg = Config.fromfile('configs/centerpoint/my_config.py')
        >>> report = find_unused_parameters(cfg, iters=2)
        >>> report['unused_on_all_ranks']
        ['pts_bbox_head.task_heads.5.reg.0.conv.weight', ...]
    """
    if isinstance(iters, bool) or not isinstance(iters, int) or iters < 1:
        raise ValueError(
            f'find_unused_parameters: iters must be a positive int, got '
            f'{iters!r}')
    # Unformatted config text: yapf takes seconds on a full mmdet3d config,
    # and the Runner formats it several times.
    cfg = Config(
        copy.deepcopy(cfg.to_dict()),
        filename=cfg.filename,
        format_python_code=False)
    cfg.launcher = 'none'
    cfg.resume = False
    for key in ('val_dataloader', 'val_cfg', 'val_evaluator',
                'test_dataloader', 'test_cfg', 'test_evaluator'):
        cfg[key] = None
    if cfg.get('default_hooks') is not None:
        cfg.default_hooks['checkpoint'] = None
    kept = [
        h for h in cfg.get('custom_hooks') or []
        if h.get('type') not in ('DDPUnusedParamHook', DDPUnusedParamHook)
    ]
    cfg.custom_hooks = kept
    tmp = tempfile.TemporaryDirectory(prefix='find_unused_') \
        if work_dir is None else None
    cfg.work_dir = tmp.name if tmp is not None else work_dir
    isolate_runner(cfg, 'find_unused_params')
    checker = DDPUnusedParamHook(check_iters=iters, interval=0)

    class _StopAfter(Hook):
        priority = 'LOWEST'

        def after_train_iter(self, runner, batch_idx, data_batch=None,
                             outputs=None):
            if len(checker.summary.iterations) >= iters:
                raise _Stop

    try:
        runner = (RUNNERS.build(cfg)
                  if 'runner_type' in cfg else Runner.from_cfg(cfg))
        runner.register_hook(checker)
        runner.register_hook(_StopAfter())
        try:
            runner.train()
        except _Stop:
            pass
        if checker.report is None:
            raise RuntimeError(
                'find_unused_parameters: training ran no iteration; check '
                'that train_dataloader yields batches and train_cfg has '
                'iterations left')
        report = dict(checker.report)
        report['table'] = format_table(checker.summary, checker.group_depth,
                                       checker.max_names)
        return report
    finally:
        if tmp is not None:
            tmp.cleanup()
