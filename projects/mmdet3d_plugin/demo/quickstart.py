"""The main job: generated nuScenes data -> 2-process training -> evaluation.

``tools/quickstart.py`` (``make demo``) calls :func:`run_quickstart`. It runs
the same path a user runs on a cluster, on a laptop CPU in minutes:

1. generate the nuScenes-format dataset and mmdet3d's info files (once);
2. train the small CenterPoint config with ``tools/dist_train.sh`` (torchrun,
   2 CPU processes over gloo), spawn DataLoader workers,
   ``DDPUnusedParamHook``, ``StragglerHook`` and TensorBoard scalars (an
   accumulation preset with ``accum``);
3. evaluate the trained checkpoint, and the same model untrained, on
   ``mini_val`` through ``SafeNuScenesMetric``'s fast backend, and once
   more with nuscenes-devkit (``backend='devkit'``) to show the same
   numbers;
4. print mAP, NDS, a per-class table, the unused-parameter summary and,
   last, one line of what ``StragglerHook`` saw; save the loss curve, a
   bird's-eye view of one ``mini_val`` frame and
   ``quickstart_summary.json``.
"""
import contextlib
import copy
import json
import os
import os.path as osp
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Dict, Optional, Tuple

from mmengine.config import Config
from mmengine.runner import Runner

from ..cli.runner_setup import build_runner
from ..constants import DEMO_ITERS, NUSCENES_CLASSES, REPO_ROOT
from ..config.data_root import redirect_data_root
from ..config.loading import load_config
from ..dist.ports import free_port
from ..engine.straggler.report import REPORT_FILE as RANK_TIMING_FILE
from ..engine.straggler.report import summary_line
from ..synthetic.writer import prepare_synthetic_nuscenes
from .bev_figure import draw_bev, predict_frame

CONFIG = (REPO_ROOT / 'configs' / 'centerpoint' /
          'centerpoint_pillar_synthetic.py')
METRIC_PREFIX = 'NuScenes metric/pred_instances_3d_NuScenes/'
#: Prefix of the same metric computed by nuscenes-devkit in the demo.
DEVKIT_PREFIX = 'NuScenes devkit/pred_instances_3d_NuScenes/'
#: The mini_val sample drawn in bird's-eye view.
BEV_SAMPLE = 0
#: Iterations per StragglerHook window: the last report covers the last 50.
STRAGGLER_INTERVAL = 50


def _say(msg: str) -> None:
    print(f'[quickstart] {msg}', flush=True)


def derived_config(path: Path, base: Path, data_root: Path,
                   overrides: Dict[str, object], presets=()) -> Path:
    """Write ``base`` pointed at ``data_root``, with overrides, as one file.

    Args:
        path (Path): File to write.
        base (Path): Config to start from (a ``*_synthetic`` config).
        data_root (Path): Root of the generated dataset.
        overrides (dict): Keys merged onto the config (nested dicts merge).
        presets (Sequence[str]): Preset names, merged later by
            ``load_config``.
    """
    cfg = redirect_data_root(Config.fromfile(str(base)),
                             str(Path(data_root).resolve()))
    cfg.merge_from_dict(overrides)
    if presets:
        cfg.presets = list(presets)
    cfg.dump(str(path))
    return path


def stretched_schedule(cfg: Config, iters: int) -> list:
    """``cfg``'s iteration-based ``param_scheduler`` stretched from its
    ``train_cfg.max_iters`` to ``iters`` (same warm-up share, same curve)."""
    scale = iters / cfg.train_cfg.max_iters
    schedulers = []
    for scheduler in copy.deepcopy(cfg.param_scheduler):
        if scheduler.get('by_epoch', True):
            raise ValueError(
                f'quickstart: --iters needs iteration-based schedulers; '
                f'{scheduler["type"]} in {CONFIG.name} has by_epoch=True')
        for key in ('begin', 'end', 'T_max'):
            if key in scheduler:
                scheduler[key] = int(round(scheduler[key] * scale))
        schedulers.append(scheduler)
    return schedulers


def write_job_config(work_dir: Path, data_root: Path, iters: Optional[int],
                     accum: int, seed: Optional[int] = None,
                     options: Optional[dict] = None) -> Path:
    """Write the job's config: the small CenterPoint config plus the extras.

    Shows the plugin's pieces composed the way a user writes them: a preset
    by name, the unused-parameter and straggler hooks, spawn workers,
    TensorBoard scalars. ``options``: more top-level keys (benchmarks:
    ``exact_resume=False``).
    """
    loader = dict(num_workers=1, persistent_workers=True)
    overrides = {
        'randomness': dict(seed=seed),
        'visualizer': dict(vis_backends=[
            dict(type='LocalVisBackend'),
            dict(type='TensorboardVisBackend'),
        ]),
        'custom_hooks': [
            dict(type='DDPUnusedParamHook'),
            dict(type='StragglerHook', interval=STRAGGLER_INTERVAL),
        ],
        'env_cfg': dict(mp_cfg=dict(mp_start_method='spawn')),
        'train_dataloader': loader,
        'test_dataloader': loader,
        # Evaluated once after training, by evaluate(); mmengine's iteration
        # loop would otherwise also validate at the last iteration.
        'val_cfg': None,
        'val_dataloader': None,
        'val_evaluator': None,
    }
    if iters is not None:
        overrides['train_cfg'] = dict(max_iters=iters)
        overrides['param_scheduler'] = stretched_schedule(
            Config.fromfile(str(CONFIG)), iters)
        overrides['default_hooks'] = dict(
            checkpoint=dict(interval=iters))
    overrides.update(options or {})
    return derived_config(
        work_dir / 'quickstart_config.py', CONFIG, data_root, overrides,
        presets=[f'grad_accum_x{accum}'] if accum > 1 else [])


def train_distributed(config: Path, work_dir: Path, gpus: int) -> None:
    """Run ``tools/dist_train.sh`` and stream its log."""
    env = dict(os.environ, PYTHON=sys.executable, PORT=str(free_port()))
    cmd = ['bash', str(REPO_ROOT / 'tools' / 'dist_train.sh'), str(config),
           str(gpus), '--work-dir', str(work_dir)]
    _say('$ ' + ' '.join(cmd))
    proc = subprocess.run(cmd, cwd=REPO_ROOT, env=env)
    if proc.returncode != 0:
        raise RuntimeError(
            f'quickstart: training failed (exit {proc.returncode}); the log '
            f'is above and under {work_dir}')


def evaluate(config: Path, work_dir: Path, checkpoint: Optional[str],
             with_devkit: bool = False) -> Tuple[Dict[str, float], Runner]:
    """Evaluate on mini_val in this process; random weights without a
    checkpoint. The metrics' log line (every class and threshold) goes to
    the log file only; :func:`per_class_table` shows them. With
    ``with_devkit``, the same predictions are also evaluated by
    nuscenes-devkit, under :data:`DEVKIT_PREFIX`; the devkit prints its
    own summary, which goes to ``devkit_eval.txt`` in the work dir."""
    cfg = load_config(str(config))
    if with_devkit:
        fast = dict(cfg.test_evaluator, backend='fast')
        cfg.test_evaluator = [
            fast, dict(fast, backend='devkit', prefix='NuScenes devkit')
        ]
    cfg.work_dir = str(work_dir)
    cfg.log_level = 'WARNING'
    cfg.launcher = 'none'
    cfg.load_from = checkpoint
    cfg.env_cfg = dict(cfg.get('env_cfg', {}), mp_cfg=dict(
        mp_start_method='fork'))
    cfg.test_dataloader.num_workers = 0
    cfg.test_dataloader.persistent_workers = False
    cfg.pop('custom_hooks', None)
    runner = build_runner(cfg)
    if not with_devkit:
        return runner.test(), runner
    with open(work_dir / 'devkit_eval.txt', 'w') as printed, \
            contextlib.redirect_stdout(printed):
        metrics = runner.test()
    return metrics, runner


def _last_log_dir(work_dir: Path) -> Path:
    runs = sorted(p for p in work_dir.iterdir()
                  if p.is_dir() and re.fullmatch(r'\d{8}_\d{6}', p.name))
    if not runs:
        raise FileNotFoundError(f'quickstart: no run log under {work_dir}')
    return runs[-1]


def plot_loss(scalars: Path, out: Path) -> int:
    """Plot the training loss from mmengine's ``scalars.json``."""
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    steps, losses = [], []
    for line in scalars.read_text().splitlines():
        rec = json.loads(line)
        if 'loss' in rec and 'iter' in rec:
            steps.append(rec['iter'])
            losses.append(rec['loss'])
    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.plot(steps, losses)
    ax.set_xlabel('iteration')
    ax.set_ylabel('training loss')
    ax.set_yscale('log')
    ax.set_title('CenterPoint (small) on generated nuScenes')
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(out, dpi=100)
    plt.close(fig)
    return len(steps)


def backend_agreement(metrics: Dict[str, float]) -> str:
    """Compare the fast backend's metrics with nuscenes-devkit's."""
    fast = {k[len(METRIC_PREFIX):]: v for k, v in metrics.items()
            if k.startswith(METRIC_PREFIX)}
    devkit = {k[len(DEVKIT_PREFIX):]: v for k, v in metrics.items()
              if k.startswith(DEVKIT_PREFIX)}
    if fast.keys() != devkit.keys() or not fast:
        raise RuntimeError('quickstart: the fast and devkit backends '
                           f'reported different metrics: {sorted(fast)} vs '
                           f'{sorted(devkit)}')
    worst = max(0.0 if v != v and devkit[k] != devkit[k] else
                abs(v - devkit[k]) for k, v in fast.items())
    verdict = 'the same numbers' if worst <= 1e-6 else 'DIFFERENT numbers'
    return (f'fast evaluation backend and nuscenes-devkit: {verdict} on all '
            f'{len(fast)} metrics (largest difference {worst:.1e})')


def per_class_table(trained: dict, untrained: Optional[dict]) -> str:
    """Per class: AP (mean over the 4 distance thresholds) and the five
    true-positive errors of the trained model; AP of the untrained one."""

    def ap(metrics, name):
        vals = [metrics[f'{METRIC_PREFIX}{name}_AP_dist_{d}']
                for d in ('0.5', '1.0', '2.0', '4.0')]
        return sum(vals) / len(vals)

    errors = ('trans_err', 'scale_err', 'orient_err', 'vel_err', 'attr_err')
    head = f'{"class":<22}{"AP":>7}' + ''.join(
        f'{e.split("_")[0]:>8}' for e in errors)
    head += f'{"AP untrained":>14}' if untrained else ''
    rows = [head, '-' * len(head)]
    for name in NUSCENES_CLASSES:
        row = f'{name:<22}{ap(trained, name):>7.3f}'
        for err in errors:
            value = trained.get(f'{METRIC_PREFIX}{name}_{err}', float('nan'))
            row += f'{value:>8.3f}'
        if untrained:
            row += f'{ap(untrained, name):>14.3f}'
        rows.append(row)
    return '\n'.join(rows)


def run_quickstart(work_dir: str,
                   data_root: str = 'data/nuscenes_synthetic',
                   gpus: int = 2,
                   accum: int = 1,
                   iters: Optional[int] = DEMO_ITERS,
                   compare_untrained: bool = False,
                   seed: Optional[int] = 0,
                   options: Optional[dict] = None) -> dict:
    """Run the main job and return its summary (also written to JSON).

    Args:
        work_dir (str): Where checkpoints, logs and reports go.
        data_root (str): Where the generated dataset lives (made if
            missing). Defaults to 'data/nuscenes_synthetic'.
        gpus (int): Processes to train with. Defaults to 2.
        accum (int): Gradient accumulation preset. Defaults to 1 (none).
        iters (int, optional): Training iterations, the config's schedule
            stretched to them; the config's own when None. Defaults to
            :data:`DEMO_ITERS`.
        compare_untrained (bool): Also evaluate the untrained model.
            Defaults to False.
        seed (int, optional): Seed of the training run (``randomness``).
            Defaults to 0.
        options (dict, optional): More top-level config keys for the job
            (``benchmarks/bench_seeded_draws.py``: ``exact_resume=False``).
            Defaults to None.
    """
    start = time.time()
    work = Path(work_dir).resolve()
    work.mkdir(parents=True, exist_ok=True)

    _say(f'1/4 dataset: {data_root}')
    root = prepare_synthetic_nuscenes(REPO_ROOT / data_root if not osp.isabs(
        data_root) else data_root)

    accumulation = f'grad_accum_x{accum}' if accum > 1 else 'no accumulation'
    _say(f'2/4 training with {gpus} processes (torchrun, gloo), spawn '
         f'workers, {accumulation}, seed {seed}, DDPUnusedParamHook, '
         'StragglerHook')
    config = write_job_config(work, Path(root), iters, accum, seed, options)
    train_distributed(config, work, gpus)
    checkpoint = (work / 'last_checkpoint').read_text().strip()
    log_dir = _last_log_dir(work)

    _say('3/4 evaluating on mini_val (fast backend, then nuscenes-devkit)')
    trained, runner = evaluate(config, work / 'eval_trained', checkpoint,
                               with_devkit=True)
    agreement = backend_agreement(trained)
    untrained = (evaluate(config, work / 'eval_untrained', None)[0]
                 if compare_untrained else None)

    _say('4/4 reports')
    n_points = plot_loss(log_dir / 'vis_data' / 'scalars.json',
                         work / 'loss_curve.png')
    bev = draw_bev(
        predict_frame(runner, BEV_SAMPLE), NUSCENES_CLASSES,
        work / 'bev_mini_val.png',
        title=f'mini_val sample {BEV_SAMPLE}: ground truth (solid), '
        'predictions (dashed, score >= 0.3)')
    events = sorted(str(p) for p in log_dir.glob(
        'vis_data/events.out.tfevents.*'))
    unused_path = log_dir / 'unused_params.json'
    unused = json.loads(unused_path.read_text()) if unused_path.exists() \
        else {}
    timing_path = log_dir / RANK_TIMING_FILE
    timing = json.loads(timing_path.read_text()) if timing_path.exists() \
        else None
    iters_done = json.loads(
        (log_dir / 'vis_data' / 'scalars.json').read_text().splitlines()[-1]
    ).get('step', n_points)
    summary = dict(
        map=trained[f'{METRIC_PREFIX}mAP'],
        nds=trained[f'{METRIC_PREFIX}NDS'],
        untrained_map=untrained[f'{METRIC_PREFIX}mAP'] if untrained else None,
        untrained_nds=untrained[f'{METRIC_PREFIX}NDS'] if untrained else None,
        world_size=gpus,
        accumulative_counts=accum,
        iters=iters_done,
        wall_seconds=round(time.time() - start, 1),
        unused_on_all_ranks=unused.get('unused_on_all_ranks', []),
        unused_on_some_ranks=unused.get('unused_on_some_ranks', {}),
        recommendation=unused.get('recommendation'),
        straggler=None if timing is None else dict(
            slowest_rank=timing['slowest_rank'], bound=timing['bound'],
            report=str(timing_path)),
        checkpoint=checkpoint,
        log_dir=str(log_dir),
        loss_curve=str(work / 'loss_curve.png'),
        bev_figure=str(bev),
        tensorboard=events,
        seed=seed,
        backends=agreement,
    )
    (work / 'quickstart_summary.json').write_text(
        json.dumps(summary, indent=2) + '\n')

    print()
    print(per_class_table(trained, untrained))
    print()
    line = f'mAP {summary["map"]:.4f}  NDS {summary["nds"]:.4f}'
    if untrained:
        line += (f'   (untrained: mAP {summary["untrained_map"]:.4f}  '
                 f'NDS {summary["untrained_nds"]:.4f})')
    print(line)
    print(agreement)
    print(f'unused parameters: {len(summary["unused_on_all_ranks"])} on all '
          f'ranks, {len(summary["unused_on_some_ranks"])} on some ranks')
    if summary['recommendation']:
        print(f'  {summary["recommendation"]}')
    print(f'checkpoint : {checkpoint}')
    print(f'logs       : {log_dir}')
    print(f'loss curve : {summary["loss_curve"]}')
    print(f'BEV frame  : {summary["bev_figure"]}')
    print(f'tensorboard: {log_dir / "vis_data"} (tensorboard --logdir)')
    print(f'summary    : {work / "quickstart_summary.json"}')
    print(f'wall time  : {summary["wall_seconds"]} s')
    print(straggler_line(timing))
    return summary


def straggler_line(timing: Optional[dict]) -> str:
    """The demo's last line: what ``StragglerHook`` saw in the last
    window (its ``rank_timing.json``, or None when there is none)."""
    if timing is None:
        return f'StragglerHook: no {RANK_TIMING_FILE} in the run\'s log dir'
    first, last = timing['iterations']
    return f'{summary_line(timing)} [iterations {first}-{last}]'
