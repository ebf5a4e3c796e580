"""Every file a config's data pipelines will open, found from the config
and its info files, without building a dataset.

:func:`data_files` walks the datasets of ``train_dataloader``,
``val_dataloader`` and ``test_dataloader`` (``CBGSDataset``,
``RepeatDataset``, ``ConcatDataset`` and other wrappers unwrapped in the
config dicts), reads the info files they name and returns one
:class:`DataFile` per file, its path joined as mmdet3d 1.4's
``Det3DDataset`` and the transforms join it (``data_prefix`` under
``data_root``):

- ``lidar``: each sample's key frame, ``data_prefix['pts']`` +
  ``lidar_points.lidar_path``, when the pipeline has
  ``LoadPointsFromFile``; its ``load_dim`` (default 6) is the expected
  point width;
- ``sweep``: the sweeps ``LoadPointsFromMultiSweeps`` may open: all of a
  sample's ``lidar_sweeps`` when it draws ``sweeps_num`` of them at random
  (training, and any pipeline without ``test_mode=True``), the first
  ``sweeps_num`` with ``test_mode=True``; each path's file name under
  ``data_prefix['pts']`` when the info's path contains ``samples`` (the
  previous key frame), else under ``data_prefix['sweeps']``; width
  ``load_dim`` (default 5);
- ``gt_database``: ``ObjectSample``'s ground-truth objects: the entries of
  ``db_sampler.info_path`` of the classes in ``sample_groups`` that its
  ``prepare`` filters keep (``filter_by_difficulty``,
  ``filter_by_min_points``), each ``path`` under the sampler's
  ``data_root``; width the ``load_dim`` of its ``points_loader`` (the
  sampler's default loader: 4); the sample an object was cut from is its
  ``image_idx``, matched to the ``sample_idx`` of the dataset's infos;
- ``image``: every camera's ``img_path`` of each sample (under
  ``data_prefix[camera]``, else ``data_prefix['img']``, with
  ``modality.use_camera``), when the pipeline has
  ``LoadMultiViewImageFromFiles``, ``LoadImageFromFileMono3D`` or
  ``LoadImageFromFile`` (which reads one of them: the list is a superset).

A transform is recognised by its type name, scope prefix left out: the
stock name or a name that ends with it (``FastLoadPointsFromFile``,
``FastObjectSample``); a class given as ``type`` by the names of its
bases. Nested ``transforms`` (``MultiScaleFlipAug3D``) are walked.
A dataset's ``indices`` keep their samples (frame-based datasets).

A file opened by several samples or datasets is one :class:`DataFile`
holding every sample token, in the order found, key frames first: the
previous key frame, which a sample opens as a sweep, stays a ``lidar``
file whose first token is its own sample. The same file read with two
widths is two entries. Paths with a URI (``s3://``) and datasets with a
non-local ``backend_args`` are left out, with a warning.

The info files are read by :mod:`.info_files`, each once, keeping only
the tokens and paths. Nothing of torch, mmcv or mmdet3d is imported.

Public API::

    data_files(cfg: Config, data_root: Optional[str] = None,
               sections: Sequence[str] = SECTIONS) -> List[DataFile]

Examples:
    >>> from projects.mmdet3d_plugin.config.loading import load_config
    >>> cfg = load_config('configs/centerpoint/centerpoint_pillar02_'
    ...                   'second_secfpn_8xb4-cyclic-20e_nus-3d.py')
    >>> files = data_files(cfg, data_root='data/nus_trainval')
    >>> files[0].kind, files[0].path, files[0].load_dim, files[0].token
    ('lidar', 'data/nus_trainval/samples/LIDAR_TOP/n015-...pcd.bin', 5,
     'e93e98b63d3b40209056d129dc53ceee')
"""
import copy
import logging
import os
import os.path as osp
from typing import (Dict, Iterable, Iterator, List, NamedTuple, Optional,
                    Sequence, Tuple)

from mmengine.config import Config
from mmengine.logging import print_log

from ..config.data_root import redirect_data_root
from .info_files import (DbObject, InfoSample, create_data_cmd, gc_paused,
                         read_db_infos, read_samples)

#: The kinds of file, in the order they are listed and reported.
KINDS = ('lidar', 'sweep', 'gt_database', 'image')
#: The dataloaders whose datasets are read.
SECTIONS = ('train_dataloader', 'val_dataloader', 'test_dataloader')
#: Stock names of the transforms that open files.
POINTS_LOADER = 'LoadPointsFromFile'
SWEEPS_LOADER = 'LoadPointsFromMultiSweeps'
IMAGE_LOADERS = ('LoadMultiViewImageFromFiles', 'LoadImageFromFileMono3D',
                 'LoadImageFromFile')
OBJECT_SAMPLE = 'ObjectSample'
# mmdet3d 1.4's defaults for what a config may leave out.
#: ``Det3DDataset``'s ``data_prefix``.
DEFAULT_DATA_PREFIX = {'pts': 'velodyne', 'img': ''}
#: ``LoadPointsFromFile``'s ``load_dim``.
POINTS_LOAD_DIM = 6
#: ``LoadPointsFromMultiSweeps``'s ``load_dim`` and ``sweeps_num``.
SWEEPS_LOAD_DIM = 5
SWEEPS_NUM = 10
#: ``load_dim`` of ``DataBaseSampler``'s default ``points_loader``.
DB_POINTS_LOAD_DIM = 4


class DataFile(NamedTuple):
    """One file a pipeline opens.

    Args:
        kind (str): 'lidar', 'sweep', 'gt_database' or 'image'.
        path (str): The path as the transform opens it.
        load_dim (int | None): float32 values per point (None: an image).
        tokens (tuple[str]): Samples that open it (nuScenes sample tokens,
            else ``'sample_idx N'``), in the order found; a GT-database
            object's: the sample it was cut from ((), if no info of the
            dataset has its ``image_idx``).
        class_name (str, optional): A GT-database object's class.
        image_idx (int, optional): A GT-database object's ``image_idx``
            (the ``sample_idx`` of the sample it was cut from).
    """
    kind: str
    path: str
    load_dim: Optional[int]
    tokens: Tuple[str, ...]
    class_name: Optional[str] = None
    image_idx: Optional[int] = None

    @property
    def token(self) -> str:
        """The first sample token ('' if none)."""
        return self.tokens[0] if self.tokens else ''

    def owner(self) -> str:
        """Whose file it is, for a report line: ``sample <token>``
        (``+N more``), or ``car of sample <token> (image_idx 3)``."""
        if self.kind == 'gt_database':
            sample = f'sample {self.token}' if self.token else 'no sample'
            return (f'{self.class_name} of {sample} '
                    f'(image_idx {self.image_idx})')
        if not self.tokens:
            return 'no sample'
        more = len(self.tokens) - 1
        return f'sample {self.token}' + (f' (+{more} more)' if more else '')

    def to_dict(self) -> dict:
        """The JSON object of this file."""
        out = dict(kind=self.kind, path=self.path, load_dim=self.load_dim,
                   tokens=list(self.tokens))
        if self.kind == 'gt_database':
            out.update(class_name=self.class_name, image_idx=self.image_idx)
        return out


def in_kind_order(kinds: Iterable[str]) -> List[str]:
    """``kinds`` in :data:`KINDS` order, other names after them, sorted."""
    kinds = set(kinds)
    return [k for k in KINDS if k in kinds] + sorted(kinds - set(KINDS))


class _Plan(NamedTuple):
    """One (unwrapped) dataset whose pipeline opens files."""
    where: str
    dataset: dict
    ann_file: str
    points: List[dict]
    sweeps: List[dict]
    images: List[dict]
    samplers: List[dict]


def _is_remote(path: Optional[str]) -> bool:
    return path is not None and '://' in str(path)


def _remote(entry: dict, *paths: Optional[str]) -> bool:
    backend = (entry.get('backend_args') or {}).get('backend', 'local')
    return backend not in ('local', 'disk') or any(map(_is_remote, paths))


def _join(root: Optional[str], path: str) -> str:
    """``path`` under ``root`` unless absolute, as mmengine's dataset joins
    ``data_root`` with ``ann_file`` and ``data_prefix``."""
    if not root or osp.isabs(path):
        return path
    return osp.join(root, path)


def _type_is(transform: dict, stock: str) -> bool:
    """Whether ``transform``'s type is ``stock`` by name (see the module
    docstring)."""
    kind = transform.get('type')
    if isinstance(kind, type):
        return any(cls.__name__.endswith(stock) for cls in kind.__mro__)
    if isinstance(kind, str):
        return kind.rpartition('.')[2].endswith(stock)
    return False


def _walk(transforms) -> Iterator[dict]:
    """The transform dicts of a pipeline, nested ``transforms`` included."""
    for transform in transforms or ():
        if isinstance(transform, dict):
            yield transform
            yield from _walk(transform.get('transforms'))


def _leaf_datasets(dataset, where: str) -> Iterator[Tuple[str, dict]]:
    """``(config key, dataset dict)`` of the datasets that wrappers hold."""
    if not isinstance(dataset, dict):
        return
    inner = dataset.get('dataset')
    children = dataset.get('datasets')
    if isinstance(inner, dict):
        yield from _leaf_datasets(inner, f'{where}.dataset')
    elif isinstance(children, (list, tuple)):
        for i, child in enumerate(children):
            yield from _leaf_datasets(child, f'{where}.datasets[{i}]')
    else:
        yield where, dataset


def _prepared(db_infos: Dict[str, List[DbObject]],
              prepare: Optional[dict]) -> Dict[str, List[DbObject]]:
    """``DataBaseSampler``'s ``prepare`` filters, in order; other
    (custom) preparation functions keep every object."""
    db_infos = dict(db_infos)
    for name, value in (prepare or {}).items():
        if name == 'filter_by_difficulty':
            db_infos = {
                key: [obj for obj in objects if obj.difficulty not in value]
                for key, objects in db_infos.items()
            }
        elif name == 'filter_by_min_points':
            for key, least in value.items():
                if int(least) > 0 and key in db_infos:
                    db_infos[key] = [
                        obj for obj in db_infos[key]
                        if obj.num_points >= int(least)
                    ]
    return db_infos


def _opened_sweeps(sweeps: Tuple[str, ...], loader: dict) -> Tuple[str, ...]:
    """The sweeps ``LoadPointsFromMultiSweeps`` may open: all of them
    when it draws ``sweeps_num`` at random, the first ``sweeps_num`` in
    test mode."""
    num = int(loader.get('sweeps_num', SWEEPS_NUM))
    if len(sweeps) <= num or not loader.get('test_mode', False):
        return sweeps
    return sweeps[:num]


def _indexed(samples: List[InfoSample], indices,
             where: str) -> List[InfoSample]:
    """The samples a dataset's ``indices`` keep (mmengine's meaning)."""
    if indices is None:
        return samples
    if isinstance(indices, int):
        return samples[:indices]
    try:
        return [samples[i] for i in indices]
    except (IndexError, TypeError) as exc:
        raise ValueError(
            f'data_check: {where}.indices {indices!r} do not index its '
            f'{len(samples)} samples ({exc}); give an int (the first N) or '
            'a list of sample indices.') from None


def _merged(found: Iterable[tuple]) -> List[DataFile]:
    """One :class:`DataFile` per path and width, from ``(kind, path,
    load_dim, token, class_name, image_idx)`` in the order found; the
    tokens of a file found again are added to the first one's."""
    merged: Dict[tuple, list] = {}
    for kind, path, load_dim, token, class_name, image_idx in found:
        entry = merged.get((path, load_dim))
        if entry is None:
            merged[(path, load_dim)] = [
                kind, path, load_dim, [token] if token else [], class_name,
                image_idx
            ]
        elif token and token not in entry[3]:
            entry[3].append(token)
    return [
        DataFile(kind, path, load_dim, tuple(tokens), class_name, image_idx)
        for kind, path, load_dim, tokens, class_name, image_idx in
        merged.values()
    ]


def _plans(cfg: Config, sections: Sequence[str]) -> List[_Plan]:
    """The datasets of ``sections`` whose pipelines open local files."""
    plans = []
    for section in sections:
        loader = cfg.get(section)
        if not isinstance(loader, dict):
            continue
        for where, dataset in _leaf_datasets(loader.get('dataset'),
                                             f'{section}.dataset'):
            transforms = list(_walk(dataset.get('pipeline')))
            points = [t for t in transforms if _type_is(t, POINTS_LOADER)]
            sweeps = [t for t in transforms if _type_is(t, SWEEPS_LOADER)]
            images = [t for t in transforms
                      if any(_type_is(t, name) for name in IMAGE_LOADERS)]
            samplers = [t['db_sampler'] for t in transforms
                        if _type_is(t, OBJECT_SAMPLE)
                        and isinstance(t.get('db_sampler'), dict)]
            if not (points or sweeps or images or samplers):
                continue
            if _remote(dataset, dataset.get('data_root'),
                       dataset.get('ann_file')):
                print_log(f'data_check: {where} reads remote files; they '
                          'are not checked', logger='current',
                          level=logging.WARNING)
                continue
            if not dataset.get('ann_file'):
                raise ValueError(
                    f'data_check: {where} has no ann_file; set it to the '
                    'info file of its samples, e.g. '
                    "ann_file='nuscenes_infos_train.pkl'.")
            for sampler in samplers:
                if not sampler.get('info_path'):
                    raise ValueError(
                        f'data_check: {where}.db_sampler has no info_path; '
                        "set it to the GT database's info file, e.g. "
                        "info_path=data_root + 'nuscenes_dbinfos_train.pkl'.")
            local = [s for s in samplers
                     if not _remote(s, s['info_path'], s.get('data_root'))]
            if len(local) < len(samplers):
                print_log(f'data_check: {where}.db_sampler reads a remote GT '
                          'database; it is not checked', logger='current',
                          level=logging.WARNING)
            ann_file = _join(dataset.get('data_root') or '',
                             dataset['ann_file'])
            plans.append(_Plan(where, dataset, ann_file, points, sweeps,
                               images, local))
    return plans


def _read_all(plans: List[_Plan]) -> Tuple[dict, dict]:
    """Every info file and GT-database info file of ``plans``, each read
    once."""
    samples: Dict[str, List[InfoSample]] = {}
    db_infos: Dict[str, dict] = {}
    for plan in plans:
        if plan.ann_file not in samples:
            samples[plan.ann_file] = read_samples(plan.ann_file)
        for sampler in plan.samplers:
            path = sampler['info_path']
            if path not in db_infos:
                db_infos[path] = read_db_infos(path, plan.where)
    return samples, db_infos


class _Resolved(NamedTuple):
    """A dataset's samples and folders, as its transforms see them."""
    plan: _Plan
    samples: List[InfoSample]
    token_of: Dict[Optional[int], str]
    prefix: Dict[str, str]
    use_lidar: bool
    use_camera: bool


def _resolved(plan: _Plan, all_samples: List[InfoSample]) -> _Resolved:
    dataset = plan.dataset
    root = dataset.get('data_root') or ''
    prefix = {
        key: _join(root, value)
        for key, value in (dataset.get('data_prefix')
                           or DEFAULT_DATA_PREFIX).items()
        if isinstance(value, str)
    }
    modality = dataset.get('modality')
    return _Resolved(
        plan, _indexed(all_samples, dataset.get('indices'), plan.where),
        {s.sample_idx: s.token for s in all_samples}, prefix,
        True if modality is None else modality.get('use_lidar', False),
        False if modality is None else modality.get('use_camera', False))


def _under(folder: str) -> str:
    """``folder`` with a trailing separator ('' stays ''): ``_under(f) +
    name`` is ``osp.join(f, name)`` for a relative name, without the
    call."""
    return osp.join(folder, '')


def _lidar_files(ds: _Resolved) -> Iterator[tuple]:
    pts = _under(ds.prefix.get('pts', ''))
    for loader in ds.plan.points:
        load_dim = int(loader.get('load_dim', POINTS_LOAD_DIM))
        for sample in ds.samples:
            raw = sample.lidar
            if raw:
                path = raw if not ds.use_lidar or osp.isabs(raw) else \
                    pts + raw
                yield 'lidar', path, load_dim, sample.token, None, None


def _sweep_files(ds: _Resolved) -> Iterator[tuple]:
    pts = _under(ds.prefix.get('pts', ''))
    sweeps = ds.prefix.get('sweeps')
    sweeps = None if sweeps is None else _under(sweeps)
    for loader in ds.plan.sweeps:
        load_dim = int(loader.get('load_dim', SWEEPS_LOAD_DIM))
        for sample in ds.samples:
            for raw in _opened_sweeps(sample.sweeps, loader):
                if not ds.use_lidar:
                    path = raw
                elif 'samples' in raw:
                    path = pts + raw.split(os.sep)[-1]
                elif sweeps is None:
                    raise ValueError(
                        f"data_check: {ds.plan.where}.data_prefix has no "
                        "'sweeps' key, but its infos have sweeps outside "
                        f"samples/ ({raw!r}); add sweeps='sweeps/LIDAR_TOP' "
                        "to data_prefix (mmdet3d's dataset raises KeyError: "
                        "'sweeps' at the first sample).")
                else:
                    path = sweeps + raw.split(os.sep)[-1]
                yield 'sweep', path, load_dim, sample.token, None, None


def _image_files(ds: _Resolved) -> Iterator[tuple]:
    if not ds.plan.images:
        return
    img = ds.prefix.get('img', '')
    for sample in ds.samples:
        for camera, raw in sample.images:
            path = osp.join(ds.prefix.get(camera, img), raw) \
                if ds.use_camera else raw
            yield 'image', path, None, sample.token, None, None


def _gt_database_files(ds: _Resolved, db_infos: Dict[str, dict]
                       ) -> Iterator[tuple]:
    """The GT-database objects ``ObjectSample``'s sampler may paste."""
    for sampler in ds.plan.samplers:
        info_path = sampler['info_path']
        db_root = _under(sampler.get('data_root') or '')
        loader = sampler.get('points_loader') or dict(
            load_dim=DB_POINTS_LOAD_DIM)
        load_dim = int(loader.get('load_dim', POINTS_LOAD_DIM))
        objects = _prepared(db_infos[info_path], sampler.get('prepare'))
        for name in sampler.get('sample_groups') or {}:
            if name not in objects:
                raise ValueError(
                    f'data_check: {ds.plan.where}.db_sampler.sample_groups '
                    f'names class {name!r}, which {info_path!r} has no '
                    f'objects of (it has {sorted(objects)}); rebuild the GT '
                    f'database with `{create_data_cmd(info_path)}` or '
                    'remove the class from sample_groups.')
            for obj in objects[name]:
                path = obj.path if osp.isabs(obj.path) else \
                    db_root + obj.path
                yield ('gt_database', path, load_dim,
                       ds.token_of.get(obj.image_idx, ''), name,
                       obj.image_idx)


def _found(datasets: List[_Resolved],
           db_infos: Dict[str, dict]) -> Iterator[tuple]:
    """Every file of every dataset, kind by kind in :data:`KINDS` order
    (so a key frame that is also a sweep is found as a key frame first)."""
    for make in (_lidar_files, _sweep_files):
        for ds in datasets:
            yield from make(ds)
    for ds in datasets:
        yield from _gt_database_files(ds, db_infos)
    for ds in datasets:
        yield from _image_files(ds)


def data_files(cfg: Config,
               data_root: Optional[str] = None,
               sections: Sequence[str] = SECTIONS) -> List[DataFile]:
    """Every file the pipelines of ``cfg``'s datasets will open.

    Args:
        cfg (Config): A loaded config (``config.loading.load_config``, or
            the config a tool prepared).
        data_root (str, optional): Point every dataset and the GT database
            at this root first, as ``--data-root`` of tools/train.py does
            (``config.data_root.redirect_data_root``, on a copy). Defaults
            to None (the config's roots).
        sections (Sequence[str]): The dataloaders to read. Defaults to
            :data:`SECTIONS` (train, val and test).

    Returns:
        list[DataFile]: The files, kind by kind in :data:`KINDS` order,
        each kind in the order of the config's datasets and samples.

    Raises:
        FileNotFoundError: If an info file or the GT database's info file
            does not exist.
        ValueError: If an info file is not mmdet3d 1.x, a dataset has no
            ``ann_file``, or a setting cannot be resolved (the message
            names the key and the fix).
    """
    if data_root is not None:
        cfg = redirect_data_root(copy.deepcopy(cfg), data_root)
    plans = _plans(cfg, sections)
    samples, db_infos = _read_all(plans)
    with gc_paused():
        datasets = [_resolved(plan, samples[plan.ann_file])
                    for plan in plans]
        return _merged(_found(datasets, db_infos))
