"""Doctor checks of the config: it loads with the plugin, its data paths
exist, and its info files are in mmdet3d's 1.x format."""
import os.path as osp
import sys
from typing import Dict, List, Optional, Tuple

from ...constants import CUSTOM_IMPORTS, PLUGIN_MODULE as PLUGIN
from ...cli.prepare import prepare_run
from ...config.data_root import unwrap_datasets
from ...config.plugin_dir import plugin_dir_collision
from ...config.run_checks import (data_version_problems, dataloader_problems,
                                  version_error)
from ...datasets.builder import SPLITS
from ...datasets.info_checks import describe_info_format
from ...create_data.converter import mmdet3d_converter_dir
from ..context import (CheckResult, DoctorContext, failed, one_line, passed,
                       warned)
from .registry_types import config_types, lookup, mmdet3d_registries

EVALUATORS = ('val_evaluator', 'test_evaluator')


def check_load(ctx: DoctorContext) -> CheckResult:
    """Prepare the config as tools/train.py does (``cli.prepare_run``: the
    config and its presets, ``--cfg-options``, then ``--amp`` / ``--accum``
    / ``--data-root``, ``--auto-scale-lr``, the plugin).

    Unlike tools/train.py it does not stop on what the other checks
    report: a precision this machine cannot run (``optim.amp``), a
    ``plugin_dir`` that collides with this package (the config loads
    without that plugin, and ``config.plugin`` fails), the data and
    dataloader checks (``config.data_version``, ``config.dataloaders``) and
    the timeouts (``dist.timeouts``).
    """
    opts = ctx.options
    cfg = prepare_run(
        opts.config, 'train', cfg_options=opts.cfg_options, amp=opts.amp,
        accum=opts.accum, data_root=opts.data_root,
        auto_scale_lr=opts.auto_scale_lr, work_dir=ctx.tmp_dir, stop=False)
    notes = []
    if plugin_dir_collision(cfg) is not None:
        notes.append('plugin_dir not imported, see config.plugin')
    ctx.provide('cfg', cfg)
    notes.insert(0, f'runner {cfg.get("runner_type", "Runner")}')
    flags = [
        flag for flag, value in (('--amp', opts.amp), ('--accum', opts.accum),
                                 ('--auto-scale-lr', opts.auto_scale_lr))
        if value
    ]
    if flags:
        notes.append(f'with {" ".join(flags)} as tools/train.py applies them')
    if opts.data_root:
        notes.append(f'data_root redirected to {opts.data_root}')
    return passed('config.load', f'{opts.config} loads ({", ".join(notes)})')


def check_plugin(ctx: DoctorContext) -> CheckResult:
    """The plugin is imported, and the config says so itself; a legacy
    ``plugin_dir`` does not collide with it (a UniAD repository's own
    ``projects/mmdet3d_plugin/`` has this package's module name)."""
    if PLUGIN not in sys.modules:
        return failed(
            'config.plugin', f'{PLUGIN} is not imported', CUSTOM_IMPORTS)
    collision = plugin_dir_collision(ctx.cfg)
    if collision is not None:
        return failed('config.plugin', collision.detail, collision.fix)
    imports = (ctx.cfg.get('custom_imports') or {}).get('imports') or []
    if isinstance(imports, str):
        imports = [imports]
    registries = mmdet3d_registries()
    used = []
    for path, registry, kind in config_types(ctx.cfg):
        if not isinstance(kind, str) or registry not in registries:
            continue
        cls = lookup(registries[registry], kind)
        if cls is not None and getattr(cls, '__module__',
                                       '').startswith(PLUGIN):
            used.append(kind)
    used = sorted(set(used))
    declared = any(
        str(name) == PLUGIN or str(name).startswith(PLUGIN + '.')
        for name in imports) or ctx.cfg.get('plugin', False)
    if used and not declared:
        return warned(
            'config.plugin', f'the config uses the plugin\'s {used} but does '
            'not import the plugin itself; only the plugin\'s tools will '
            'find them', CUSTOM_IMPORTS)
    how = 'custom_imports' if declared else 'the plugin\'s tools'
    uses = f'; the config uses {", ".join(used)}' if used else ''
    return passed('config.plugin', f'{PLUGIN} imported (by {how}){uses}')


def _remote(path: str, backend_args: Optional[dict]) -> bool:
    if '://' in str(path):
        return True
    backend = (backend_args or {}).get('backend', 'local')
    return backend not in ('local', 'disk')


def _join(root: Optional[str], path: str) -> str:
    if not root or osp.isabs(path):
        return path
    return osp.join(root, path)


def data_paths(cfg) -> List[Tuple[str, str, str]]:
    """Files and folders the run reads, as ``(config key, path, kind)``.

    ``kind`` is 'info' (an info file, format checked), 'file' or 'dir'.
    Remote paths (``s3://``, non-local ``backend_args``) are left out.
    """
    out: List[Tuple[str, str, str]] = []

    def add(key, path, kind, backend_args=None):
        if path and not _remote(path, backend_args):
            out.append((key, str(path), kind))

    for split in SPLITS:
        loader = cfg.get(f'{split}_dataloader') or {}
        for i, dataset in enumerate(unwrap_datasets(loader.get('dataset'))):
            if 'ann_file' not in dataset and 'data_root' not in dataset:
                continue
            key = f'{split}_dataloader.dataset' + '.dataset' * i
            backend_args = dataset.get('backend_args')
            root = dataset.get('data_root')
            add(f'{key}.data_root', root, 'dir', backend_args)
            if dataset.get('ann_file'):
                add(f'{key}.ann_file', _join(root, dataset['ann_file']),
                    'info', backend_args)
            for name, prefix in (dataset.get('data_prefix') or {}).items():
                if isinstance(prefix, str) and prefix:
                    add(f'{key}.data_prefix.{name}', _join(root, prefix),
                        'dir', backend_args)
            for j, step in enumerate(dataset.get('pipeline') or []):
                sampler = step.get('db_sampler') if isinstance(step,
                                                               dict) else None
                if isinstance(sampler, dict) and sampler.get('info_path'):
                    add(f'{key}.pipeline[{j}].db_sampler.info_path',
                        sampler['info_path'], 'file',
                        sampler.get('backend_args'))
    for name in EVALUATORS:
        evaluators = cfg.get(name)
        items = evaluators if isinstance(evaluators, (list, tuple)) else [
            evaluators
        ]
        for i, evaluator in enumerate(items):
            if isinstance(evaluator, dict) and evaluator.get('ann_file'):
                listed = isinstance(evaluators, (list, tuple))
                key = name + (f'[{i}]' if listed else '')
                # Metrics read ann_file as given, not under data_root.
                add(f'{key}.ann_file', evaluator['ann_file'], 'info',
                    evaluator.get('backend_args'))
    if cfg.get('load_from'):
        add('load_from', cfg.load_from, 'file')
    return out


def _fix_for_missing(cfg, missing: List[Tuple[str, str, str]]) -> str:
    key, path, kind = missing[0]
    if kind == 'info' or key.endswith('db_sampler.info_path'):
        root = osp.dirname(path) or '.'
        return (f'create the info files with `python tools/create_data.py '
                f'nuscenes --root-path {root} --out-dir {root} --extra-tag '
                'nuscenes`, or point the config at them (--data-root DIR '
                'moves every dataset and evaluator)')
    if key == 'load_from':
        return 'set load_from to an existing checkpoint, or load_from = None'
    return (f'set {key} to an existing folder (the dataset is expected under '
            'data_root), or pass --data-root DIR')


def check_data_paths(ctx: DoctorContext) -> CheckResult:
    """Every data root, info file, data prefix and checkpoint exists."""
    paths = data_paths(ctx.cfg)
    ctx.provide('info_files', sorted({p for _, p, k in paths if k == 'info'
                                      and osp.isfile(p)}))
    missing = [(key, path, kind) for key, path, kind in paths
               if not (osp.isdir(path) if kind == 'dir' else osp.isfile(path))]
    if missing:
        listed = '; '.join(f'{key}: {path}' for key, path, _ in missing[:4])
        more = f' (+{len(missing) - 4} more)' if len(missing) > 4 else ''
        return failed(
            'config.data_paths', f'{len(missing)} of {len(paths)} paths do '
            f'not exist: {listed}{more}', _fix_for_missing(ctx.cfg, missing))
    if not paths:
        return warned(
            'config.data_paths', 'the config names no local data paths',
            'nothing to do if the data is remote; otherwise set data_root '
            'and ann_file of the datasets')
    return passed('config.data_paths', f'all {len(paths)} data roots, info '
                  'files, data prefixes and files exist')


def info_format(data) -> Tuple[str, str]:
    """Which mmdet3d info format ``data`` (a loaded info file) is in.

    Returns:
        tuple[str, str]: ``('1.x' | '0.x' | 'unknown', description)``.
    """
    fmt = describe_info_format(data)
    if fmt != 'unknown':
        infos, meta = (('data_list', 'metainfo') if fmt == '1.x' else
                       ('infos', 'metadata'))
        meta = data[meta] or {}
        version = meta.get('version', '?') if isinstance(meta, dict) else '?'
        return fmt, f'{len(data[infos])} samples, version {version}'
    if isinstance(data, dict):
        return 'unknown', f'a dict with keys {sorted(map(str, data))[:6]}'
    return 'unknown', f'a {type(data).__name__}'


def check_info_files(ctx: DoctorContext) -> CheckResult:
    """Info files are mmdet3d 1.x (``metainfo`` + ``data_list``)."""
    import mmengine
    files = ctx.artifacts.get('info_files') or []
    if not files:
        return warned(
            'config.info_files', 'no info file to check (none named, or '
            'none exists)', 'see config.data_paths')
    found: Dict[str, List[str]] = {}
    details = []
    for path in files:
        kind, what = info_format(mmengine.load(path))
        found.setdefault(kind, []).append(path)
        details.append(f'{osp.basename(path)}: {kind} ({what})')
    if found.get('0.x') or found.get('unknown'):
        bad = (found.get('0.x') or found.get('unknown'))[0]
        if found.get('0.x'):
            script = mmdet3d_converter_dir() / 'update_infos_to_v2.py'
            dataset = 'nuscenes' if 'nuscenes' in osp.basename(bad) \
                else '<dataset>'
            fix = ('regenerate it with tools/create_data.py (about 2 '
                   'minutes for v1.0-trainval on 2 cores); made by mmdet3d '
                   f'>= 1.0.0rc0, it converts too: python {script} --dataset '
                   f'{dataset} --pkl-path {bad} --out-dir '
                   f'{osp.dirname(bad) or "."} (which keeps the boxes as they '
                   'are: (w, l, h, θ) in infos made before 1.0.0rc0)')
        else:
            fix = ('regenerate it with tools/create_data.py nuscenes; mmdet3d '
                   "1.x reads {'metainfo': ..., 'data_list': [...]}")
        return failed(
            'config.info_files', one_line(
                f'{len(found.get("0.x", [])) + len(found.get("unknown", []))}'
                f' of {len(files)} info files are not in the 1.x format '
                f"('metainfo' + 'data_list'): " + '; '.join(details)), fix)
    return passed('config.info_files', '1.x format: ' + '; '.join(details))


def check_data_version(ctx: DoctorContext) -> CheckResult:
    """Every nuScenes evaluator loads a version its data root holds."""
    problems = data_version_problems(ctx.cfg)
    if problems:
        detail, fix = version_error(problems).split('. Fix: ', 1)
        return failed('config.data_version', detail, fix)
    return passed('config.data_version',
                  'every nuScenes evaluator finds the tables of its version '
                  '(or none is configured)')


def check_dataloaders(ctx: DoctorContext) -> CheckResult:
    """Dataloader settings torch's DataLoader accepts."""
    problems = dataloader_problems(ctx.cfg)
    if problems:
        detail, fix = problems[0].split('. Fix: ', 1)
        more = f' (+{len(problems) - 1} more)' if len(problems) > 1 else ''
        return failed('config.dataloaders', detail + more, fix)
    return passed('config.dataloaders',
                  'persistent_workers only with num_workers > 0')
