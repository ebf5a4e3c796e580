"""fp32 vs fp16 vs bf16 vs fp16 + x4 accumulation on full-size CenterPoint.

Trains mmdet3d's ``centerpoint_pillar02_second_secfpn_8xb4-cyclic-20e_nus-3d``
model (full size: 512 x 512 BEV grid, 10 classes in 6 tasks) for a few
iterations per mode on random point clouds in the nuScenes range with random
boxes, no dataset needed. Each mode is the config's optimizer wrapper with
the plugin's presets applied (merged and validated as ``tools/train.py`` does)
and starts from the same weights and batches. Prints a table and writes
JSON: seconds per iteration (median after warm-up), peak GPU memory
(``torch.cuda.max_memory_allocated``), whether every loss and the final
weights are finite, and how many optimizer steps the loss scaler skipped for
inf/NaN gradients.

Needs the plugin installed (``pip install -e .``) in an environment with
torch + CUDA, mmcv 2.x built with CUDA ops (its ``Voxelization`` runs on the
GPU), mmdet 3.x and mmdet3d 1.x. The script checks this first and says what
is missing. ``--device cpu`` runs a smoke test on CPU (float16 modes are
skipped there: float16 autocast needs CUDA).

Exit status: 0 all modes ran with finite losses; 1 a mode produced a
non-finite loss or weights; 2 the environment cannot run the check.
"""
import argparse
import json
import math
import os.path as osp
import platform
import statistics
import sys
import time

sys.path.insert(0, osp.dirname(osp.dirname(osp.abspath(__file__))))

CONFIG = ('mmdet3d::centerpoint/centerpoint_pillar02_second_secfpn_'
          '8xb4-cyclic-20e_nus-3d.py')
# name -> presets applied to the config's optim_wrapper.
MODES = {
    'fp32': [],
    'fp16': ['fp16'],
    'bf16': ['bf16'],
    'fp16+accum_x4': ['grad_accum_x4', 'fp16'],
}
NEEDS = ('needs: the plugin installed with `pip install -e .` in an '
         'environment with torch (CUDA build), mmcv 2.x compiled with CUDA '
         'ops (e.g. the mmcv wheel from download.openmmlab.com matching your '
         'torch and CUDA versions, or `MMCV_WITH_OPS=1 FORCE_CUDA=1 pip '
         'install mmcv`), mmdet 3.x and mmdet3d 1.x')


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--device', default='cuda', choices=['cuda', 'cpu'])
    parser.add_argument(
        '--iters', type=int, default=16,
        help='timed iterations per mode (after the warm-up)')
    parser.add_argument(
        '--warmup', type=int, default=None,
        help='untimed iterations per mode (default 4 on cuda, 1 on cpu)')
    parser.add_argument(
        '--batch-size', type=int, default=None,
        help='samples per iteration (default 4 = the config\'s 8xb4 per GPU '
        'on cuda, 1 on cpu)')
    parser.add_argument(
        '--points', type=int, default=None,
        help='points per sample (default 250000 ~ 10 nuScenes sweeps on '
        'cuda, 30000 on cpu)')
    parser.add_argument(
        '--modes', nargs='+', default=list(MODES), choices=list(MODES))
    parser.add_argument('--seed', type=int, default=0)
    parser.add_argument(
        '--out', default='work_dirs/benchmarks/gpu_amp_check.json',
        help='JSON file to write')
    args = parser.parse_args(argv)
    cpu = args.device == 'cpu'
    if args.warmup is None:
        args.warmup = 1 if cpu else 4
    if args.batch_size is None:
        args.batch_size = 1 if cpu else 4
    if args.points is None:
        args.points = 30000 if cpu else 250000
    return args


def fail_environment(message: str) -> None:
    print(f'gpu_amp_check: cannot run: {message}\n{NEEDS}', file=sys.stderr)
    sys.exit(2)


def self_check(device: str) -> dict:
    """Import the stack and run mmcv's voxelization on ``device``."""
    try:
        import torch
        import mmcv
        import mmdet
        import mmdet3d
        import mmengine
        import projects.mmdet3d_plugin  # noqa: F401
    except ImportError as e:
        fail_environment(f'import failed ({e})')
    info = dict(
        torch=torch.__version__, mmcv=mmcv.__version__,
        mmdet=mmdet.__version__, mmdet3d=mmdet3d.__version__,
        mmengine=mmengine.__version__, python=platform.python_version(),
        device=device)
    if device == 'cuda':
        if not torch.cuda.is_available():
            fail_environment(
                'torch.cuda.is_available() is False (torch '
                f'{torch.__version__}, CUDA build: {torch.version.cuda}); '
                'use --device cpu for a smoke test')
        info.update(
            gpu=torch.cuda.get_device_name(), cuda=torch.version.cuda,
            bf16_supported=torch.cuda.is_bf16_supported())
    try:
        from mmcv.ops import Voxelization
        layer = Voxelization(
            voxel_size=[0.2, 0.2, 8], point_cloud_range=[-51.2, -51.2, -5.0,
                                                         51.2, 51.2, 3.0],
            max_num_points=20, max_voxels=100)
        points = torch.rand(64, 5, device=device) * 10
        layer(points)
    except Exception as e:  # noqa: BLE001  any failure means "no ops"
        fail_environment(
            f'mmcv.ops.Voxelization failed on {device} ({type(e).__name__}: '
            f'{e}); mmcv {mmcv.__version__} lacks compiled {device} ops')
    return info


def make_batches(n_batches: int, batch_size: int, n_points: int, device,
                 seed: int):
    """Random nuScenes-like samples: points in range, 5 features, boxes
    with velocity, all 10 classes."""
    import torch
    from mmdet3d.structures import Det3DDataSample, LiDARInstance3DBoxes
    from mmengine.structures import InstanceData
    gen = torch.Generator().manual_seed(seed)
    low = torch.tensor([-51.2, -51.2, -5.0])
    high = torch.tensor([51.2, 51.2, 3.0])
    batches = []
    for _ in range(n_batches):
        inputs, samples = [], []
        for _ in range(batch_size):
            xyz = low + torch.rand(n_points, 3, generator=gen) * (high - low)
            feats = torch.rand(n_points, 2, generator=gen)  # intensity, t
            inputs.append(torch.cat([xyz, feats], dim=1).to(device))
            n_boxes = 30
            centers = torch.rand(n_boxes, 3, generator=gen) * torch.tensor(
                [90., 90., 2.]) - torch.tensor([45., 45., 2.])
            sizes = 0.5 + torch.rand(n_boxes, 3, generator=gen) * 4
            yaw = (torch.rand(n_boxes, 1, generator=gen) - 0.5) * 2 * math.pi
            velocity = torch.randn(n_boxes, 2, generator=gen)
            boxes = torch.cat([centers, sizes, yaw, velocity], dim=1)
            sample = Det3DDataSample()
            sample.gt_instances_3d = InstanceData(
                bboxes_3d=LiDARInstance3DBoxes(boxes, box_dim=9),
                labels_3d=torch.arange(n_boxes) % 10)
            sample.set_metainfo(dict(box_type_3d=LiDARInstance3DBoxes))
            samples.append(sample)
        batches.append(dict(inputs=dict(points=inputs), data_samples=samples))
    return batches


def run_mode(name: str, presets, cfg, batches, args) -> dict:
    """Build the model and wrapper for one mode and time its iterations."""
    import copy

    import torch
    from mmengine.optim import build_optim_wrapper
    from mmdet3d.registry import MODELS
    from projects.mmdet3d_plugin.engine.amp import check_amp_supported
    from projects.mmdet3d_plugin.config.optim_wrapper import \
        validate_optim_wrapper
    from projects.mmdet3d_plugin.config.presets import (applied_by,
                                                        merge_presets)

    row = dict(mode=name, presets=presets)
    mode_cfg = copy.deepcopy(cfg)
    merge_presets(mode_cfg, presets)
    validate_optim_wrapper(mode_cfg, applied_by(presets=presets))
    row['optim_wrapper'] = {
        k: v for k, v in mode_cfg.optim_wrapper.items()
        if k in ('type', 'dtype', 'loss_scale', 'accumulative_counts')
    }
    try:
        check_amp_supported(mode_cfg)
    except RuntimeError as e:
        row.update(status='skipped', reason=str(e),
                   note='float16 autocast needs a CUDA GPU')
        return row
    if 'bf16' in presets and args.device == 'cuda' and \
            not torch.cuda.is_bf16_supported():
        row.update(status='skipped', reason='GPU without bfloat16 support',
                   note='GPU without bfloat16 support')
        return row

    torch.manual_seed(args.seed)
    model = MODELS.build(mode_cfg.model)
    model.init_weights()  # as the Runner does (e.g. CenterHead's bias)
    model = model.to(args.device)
    model.train()
    wrapper = build_optim_wrapper(model, mode_cfg.optim_wrapper)
    counts = mode_cfg.optim_wrapper.get('accumulative_counts', 1)
    total = args.warmup + args.iters
    wrapper.initialize_count_status(model, 0, total)
    cuda = args.device == 'cuda'
    if cuda:
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
    times, losses = [], []
    # A step skipped by the GradScaler (inf/NaN gradients) leaves every
    # parameter unchanged; watch one.
    watched = next(p for p in model.parameters() if p.requires_grad)
    steps = skipped = 0
    for i in range(total):
        batch = batches[i % len(batches)]
        updates = (i + 1) % counts == 0 or i + 1 == total
        before = watched.detach().clone() if updates else None
        if cuda:
            torch.cuda.synchronize()
        start = time.perf_counter()
        log_vars = model.train_step(batch, optim_wrapper=wrapper)
        if cuda:
            torch.cuda.synchronize()
        elapsed = time.perf_counter() - start
        loss = log_vars['loss'].item()
        losses.append(loss)
        if i >= args.warmup:
            times.append(elapsed)
        if updates:
            steps += 1
            skipped += int(torch.equal(before, watched.detach()))
    scaler = getattr(wrapper, 'loss_scaler', None)
    weights_finite = all(
        bool(torch.isfinite(p).all()) for p in model.parameters())
    row.update(
        status='ok',
        iters=args.iters,
        optimizer_steps=steps,
        skipped_steps=skipped,
        final_loss_scale=(scaler.get_scale() if scaler is not None
                          and scaler.is_enabled() else None),
        sec_per_iter=statistics.median(times),
        sec_per_iter_mean=statistics.fmean(times),
        peak_mem_mib=(torch.cuda.max_memory_allocated() / 2**20
                      if cuda else None),
        loss_first=losses[0],
        loss_last=losses[-1],
        loss_finite=all(math.isfinite(v) for v in losses),
        weights_finite=weights_finite)
    del model, wrapper
    if cuda:
        torch.cuda.empty_cache()
    return row


def print_table(rows, info) -> None:
    print(f"\nCenterPoint pillar02 (full size), {info['device']}"
          f"{' ' + info.get('gpu', '') if info.get('gpu') else ''}, "
          f"batch {info['batch_size']} x {info['points']} points, "
          f"{info['iters']} timed iterations per mode")
    header = ('mode', 's/iter', 'vs fp32', 'peak MiB', 'loss first->last',
              'finite', 'note')
    ok = {r['mode']: r for r in rows if r['status'] == 'ok'}
    base = ok.get('fp32', {}).get('sec_per_iter')
    lines = [header]
    for r in rows:
        if r['status'] != 'ok':
            lines.append((r['mode'], '-', '-', '-', '-', '-',
                          'skipped: ' + r['note']))
            continue
        speed = f"{base / r['sec_per_iter']:.2f}x" if base else '-'
        mem = f"{r['peak_mem_mib']:.0f}" if r['peak_mem_mib'] else '-'
        lines.append(
            (r['mode'], f"{r['sec_per_iter']:.3f}", speed, mem,
             f"{r['loss_first']:.3f}->{r['loss_last']:.3f}",
             'yes' if r['loss_finite'] and r['weights_finite'] else 'NO',
             f"{r['optimizer_steps']} optimizer steps, "
             f"{r['skipped_steps']} skipped (inf/NaN grads)"
             + (f", final loss scale {r['final_loss_scale']:g}"
                if r['final_loss_scale'] else '')))
    widths = [max(len(str(line[i])) for line in lines)
              for i in range(len(header))]
    for j, line in enumerate(lines):
        print('  '.join(str(c).ljust(w) for c, w in zip(line, widths)))
        if j == 0:
            print('  '.join('-' * w for w in widths))


def main(argv=None) -> int:
    args = parse_args(argv)
    info = self_check(args.device)
    info.update(batch_size=args.batch_size, points=args.points,
                iters=args.iters, warmup=args.warmup, config=CONFIG)
    print('gpu_amp_check: ' + ', '.join(f'{k} {v}' for k, v in info.items()))

    from mmengine.registry import init_default_scope
    from projects.mmdet3d_plugin import load_config
    init_default_scope('mmdet3d')
    cfg = load_config(CONFIG)
    batches = make_batches(2, args.batch_size, args.points, args.device,
                           args.seed)
    rows = []
    for name in args.modes:
        row = run_mode(name, MODES[name], cfg, batches, args)
        rows.append(row)
        if row['status'] == 'ok':
            print(f'gpu_amp_check: {name}: {row["sec_per_iter"]:.3f} s/iter')
        else:
            print(f'gpu_amp_check: {name}: skipped: {row["reason"]}')
    print_table(rows, info)
    out = dict(info=info, rows=rows)
    if osp.dirname(args.out):
        import os
        os.makedirs(osp.dirname(args.out), exist_ok=True)
    with open(args.out, 'w') as f:
        json.dump(out, f, indent=2, default=str)
    print(f'\nwrote {args.out}')
    bad = [r['mode'] for r in rows if r['status'] == 'ok'
           and not (r['loss_finite'] and r['weights_finite'])]
    if bad:
        print(f'gpu_amp_check: non-finite loss or weights in {bad}',
              file=sys.stderr)
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
