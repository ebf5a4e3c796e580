"""Checks of a prepared config that would otherwise fail after the work.

A nuScenes metric loads the devkit tables of the version its dataset's
metainfo names (mmdet3d's ``NuScenesMetric`` reads
``dataset_meta['version']``, and ``NuScenesDataset.METAINFO`` says
'v1.0-trainval' unless the config sets ``metainfo.version``), and finds out
only after every sample was predicted that the data root holds another
version. A DataLoader with ``persistent_workers=True`` and no workers raises
when it is built. A GT database that is not there stops the first train
batch. :func:`check_run_config` finds these before anything is built and
raises one error that names the key and the fix; the doctor reports the same
lines (:func:`data_version_problems`, :func:`dataloader_problems`).
"""
import os
import os.path as osp
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

import mmengine
from mmengine.config import Config

from mmdet3d.evaluation.metrics import NuScenesMetric
from mmdet3d.registry import DATASETS, METRICS

from .data_root import unwrap_datasets

#: The evaluator of each loop and the dataloader whose dataset it scores.
EVALUATED = (('val', 'val_evaluator', 'val_dataloader'),
             ('test', 'test_evaluator', 'test_dataloader'))
#: Dataloaders a train run builds, and a test run.
RUN_LOADERS = {
    'train': ('train_dataloader', 'val_dataloader'),
    'test': ('test_dataloader', ),
}
#: Loops whose evaluators a train run uses, and a test run.
RUN_LOOPS = {'train': ('val', ), 'test': ('test', )}


@dataclass
class VersionMismatch:
    """A nuScenes evaluator that would load a version its data root lacks.

    Args:
        loop (str): 'val' or 'test'.
        evaluator (str): The evaluator's config key and type.
        version (str): The version it would load.
        source (str): Where that version comes from.
        key (str): The config key that sets it.
        root (str): The metric's ``data_root``.
        held (list[str]): The versions the data root holds.
        evidence (str): Where ``held`` was read.
    """
    loop: str
    evaluator: str
    version: str
    source: str
    key: str
    root: str
    held: List[str]
    evidence: str

    @property
    def fix(self) -> Optional[str]:
        """``KEY=VERSION`` for ``--cfg-options``; None without a version
        to move to."""
        return f'{self.key}={self.held[0]}' if len(self.held) == 1 else None

    def describe(self) -> str:
        if not self.held:
            what = ('holds no v1.0-* table folder' if osp.isdir(self.root)
                    else 'does not exist')
            return (f'{self.evaluator} loads nuScenes {self.version} '
                    f'({self.source}) from {self.root}, which {what}')
        held = ' and '.join(self.held)
        return (f'{self.evaluator} evaluates nuScenes {self.version} '
                f'({self.source}), but {self.root} holds {held} '
                f'({self.evidence})')


def _registry_class(registry, name):
    if not isinstance(name, str):
        return name if isinstance(name, type) else None
    try:
        return registry.get(name)
    except Exception:  # Registry.get raises for some dotted names
        return None


def _is_nuscenes_metric(evaluator: dict) -> bool:
    cls = _registry_class(METRICS, evaluator.get('type'))
    return isinstance(cls, type) and issubclass(cls, NuScenesMetric)


def _dataset_version(loader: str, dataset) -> Optional[Tuple[str, str, str]]:
    """The version a loader's dataset puts in its metainfo, where it comes
    from, and the key that sets it; None for a dataset without one."""
    for depth, inner in enumerate(unwrap_datasets(dataset)):
        if 'ann_file' not in inner:
            continue
        key = f'{loader}.dataset' + '.dataset' * depth + '.metainfo.version'
        version = (inner.get('metainfo') or {}).get('version')
        if version:
            return version, key, key
        cls = _registry_class(DATASETS, inner.get('type'))
        default = getattr(cls, 'METAINFO', {}).get('version')
        if default:
            return default, f"the default of {cls.__name__}'s metainfo", key
        return None
    return None


def _table_versions(root: str) -> List[str]:
    if not osp.isdir(root):
        return []
    return sorted(name for name in os.listdir(root)
                  if name.startswith('v1.0-')
                  and osp.isdir(osp.join(root, name)))


def _info_version(ann_file: Optional[str]) -> Optional[str]:
    if not ann_file or '://' in str(ann_file) or not osp.isfile(ann_file):
        return None
    try:
        data = mmengine.load(ann_file)
    except Exception:  # a broken info file is the dataset checks' business
        return None
    metainfo = data.get('metainfo') if isinstance(data, dict) else None
    return (metainfo or {}).get('version')


def _evaluators(cfg: Config, name: str) -> List[Tuple[str, dict]]:
    evaluators = cfg.get(name)
    if isinstance(evaluators, (list, tuple)):
        return [(f'{name}[{i}]', e) for i, e in enumerate(evaluators)
                if isinstance(e, dict)]
    return [(name, evaluators)] if isinstance(evaluators, dict) else []


def data_version_problems(cfg: Config) -> List[VersionMismatch]:
    """The nuScenes evaluators whose version their data root lacks.

    For each ``NuScenesMetric`` (stock or the plugin's subclass) of
    ``val_evaluator`` / ``test_evaluator``: the version its dataset's
    metainfo will carry, against the ``v1.0-*`` table folders under the
    metric's ``data_root`` and the ``version`` in the metainfo of its
    ``ann_file``. Remote roots are not checked.

    Args:
        cfg (Config): The prepared config (data root redirected).

    Returns:
        list[VersionMismatch]: One per evaluator that would fail.
    """
    out = []
    info_versions: Dict[str, Optional[str]] = {}  # val and test share one
    for loop, section, loader in EVALUATED:
        dataset = (cfg.get(loader) or {}).get('dataset')
        for key, evaluator in _evaluators(cfg, section):
            root = evaluator.get('data_root')
            if not root or '://' in str(root) or evaluator.get(
                    'format_only') or not _is_nuscenes_metric(evaluator):
                continue
            found = _dataset_version(loader, dataset)
            if found is None:
                continue
            version, source, version_key = found
            tables = _table_versions(root)
            ann_file = evaluator.get('ann_file')
            if ann_file not in info_versions:
                info_versions[ann_file] = _info_version(ann_file)
            info = info_versions[ann_file]
            name = f"{key} ({evaluator.get('type')})"
            if version in tables and info in (None, version):
                continue
            if info is not None and info != version and (
                    info in tables or not tables):
                held = [info]
                evidence = (f'{osp.basename(evaluator["ann_file"])} says '
                            f'{info}' + (f', tables {info}/' if tables else
                                         ''))
            else:
                held = tables
                evidence = 'its table folders ' + ', '.join(
                    f'{t}/' for t in tables)
            out.append(VersionMismatch(loop, name, version, source,
                                       version_key, root, held, evidence))
    return out


def version_error(problems: Sequence[VersionMismatch]) -> str:
    """One line for all version mismatches, with the ``--cfg-options`` (or
    the data root) that fixes them."""
    groups = {}
    for p in problems:
        groups.setdefault((p.version, p.root, tuple(p.held)), []).append(p)
    parts = []
    for group in groups.values():
        text = group[0].describe()
        others = [p.evaluator for p in group[1:]]
        parts.append(text + (f'; so does {" and ".join(others)}'
                             if others else ''))
    text = '; '.join(parts)
    fixes = list(dict.fromkeys(p.fix for p in problems if p.fix))
    if fixes and len(fixes) == len({p.key for p in problems}):
        return f'{text}. Fix: --cfg-options {" ".join(fixes)}'
    roots = ' / '.join(dict.fromkeys(p.root for p in problems))
    versions = ' / '.join(dict.fromkeys(p.version for p in problems))
    return (f'{text}. Fix: point the data at a nuScenes root that holds '
            f'{versions}/ (--data-root DIR moves every dataset and '
            f'evaluator), or set the version with --cfg-options '
            f'{problems[0].key}=<a version under {roots}>')


def dataloader_problems(cfg: Config,
                        loaders: Sequence[str] = ('train_dataloader',
                                                  'val_dataloader',
                                                  'test_dataloader')
                        ) -> List[str]:
    """Dataloader settings that torch's ``DataLoader`` refuses when built.

    Args:
        cfg (Config): The prepared config.
        loaders (Sequence[str]): The dataloader keys to look at.

    Returns:
        list[str]: One message per problem, naming the key and the fix.
    """
    out = []
    for loader in loaders:
        settings = cfg.get(loader) or {}
        workers = settings.get('num_workers', 0)
        if settings.get('persistent_workers') and not workers:
            out.append(
                f'{loader}: persistent_workers=True needs num_workers > 0 '
                f'(got num_workers={workers!r}; torch\'s DataLoader refuses '
                'it). Fix: --cfg-options '
                f'{loader}.persistent_workers=False, or set '
                f'{loader}.num_workers to 1 or more')
    return out


def gt_database_problems(cfg: Config) -> List[str]:
    """``ObjectSample`` GT databases (``db_sampler.info_path``) that are not
    on disk (remote paths are not checked)."""
    out = []
    loader = cfg.get('train_dataloader') or {}
    for depth, dataset in enumerate(unwrap_datasets(loader.get('dataset'))):
        for i, step in enumerate(dataset.get('pipeline') or []):
            sampler = step.get('db_sampler') if isinstance(step,
                                                           dict) else None
            path = (sampler or {}).get('info_path')
            if not path or '://' in str(path) or osp.isfile(path):
                continue
            root = osp.dirname(path) or '.'
            key = ('train_dataloader.dataset' + '.dataset' * depth +
                   f'.pipeline[{i}].db_sampler.info_path')
            out.append(
                f'{key}: the GT database {path} of ObjectSample does not '
                f'exist. Fix: create it with `python tools/create_data.py '
                f'nuscenes --root-path {root} --out-dir {root} --extra-tag '
                'nuscenes` (it writes the info files and the GT database), '
                'pass --data-root DIR where they are, or remove ObjectSample '
                'from the train pipeline')
    return out


def check_run_config(cfg: Config, run: str) -> None:
    """Stop before anything is built when the run would fail after work.

    Args:
        cfg (Config): The prepared config.
        run (str): 'train' (train and val loops) or 'test'.

    Raises:
        ValueError: With one line naming every problem and its fix: a
            nuScenes version the data root does not hold, persistent
            workers without workers.
        FileNotFoundError: For a GT database that is not on disk.
    """
    if run not in RUN_LOOPS:
        raise ValueError(
            f"check_run_config: run must be 'train' or 'test', got {run!r}")
    loops, loaders = RUN_LOOPS[run], RUN_LOADERS[run]
    if run == 'train' and cfg.get('val_cfg') is None:
        # No val loop: neither its evaluator nor its dataloader is built.
        loops, loaders = (), loaders[:1]
    versions = data_version_problems(cfg)
    if any(p.loop in loops for p in versions):
        # This run's loop first; the other's mismatch needs the same fix.
        versions.sort(key=lambda p: p.loop not in loops)
        raise ValueError(version_error(versions))
    problems = dataloader_problems(cfg, loaders)
    if problems:
        raise ValueError('; '.join(problems))
    if run == 'train':
        missing = gt_database_problems(cfg)
        if missing:
            raise FileNotFoundError('; '.join(missing))
