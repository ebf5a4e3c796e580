"""Translate the 0.x ``model`` dict.

Follows mmdet3d's own 0.x -> 1.x migration (the config pairs it ships):

* ``voxel_layer`` / ``pts_voxel_layer`` move to
  ``data_preprocessor=dict(type='Det3DDataPreprocessor', voxel=True,
  voxel_layer=...)`` (``voxel_type='dynamic'`` for ``max_num_points=-1``);
  every translated model gets a ``Det3DDataPreprocessor``, and the image
  ``Normalize`` / ``Pad`` steps of the pipelines become its ``mean``,
  ``std``, ``bgr_to_rgb`` and ``pad_size_divisor``;
* ``MaxIoUAssigner`` with a 3D IoU calculator becomes ``Max3DIoUAssigner``
  (:data:`RENAMED`), renamed arguments get their 1.x names
  (:data:`RENAMED_ARGS`: ``PartAggregationROIHead.part_roi_extractor`` ->
  ``bbox_roi_extractor``);
* types registered in mmdet but not in mmdet3d get the ``mmdet.`` scope
  (``FocalLoss``, ``FPN``, ``ResNet``, ...);
* ``file_client_args`` anywhere becomes ``backend_args``.

A type that is registered neither in mmdet3d (with mmengine's and mmcv's
layers) nor in mmdet is refused: one ``ValueError`` naming every such type
with its key path and the closest registered names. Types under
``train_cfg`` / ``test_cfg`` are settings (``nms_type='rotate'``,
``nms=dict(type='nms')``) except those of ``assigner``, ``sampler``,
``iou_calculator`` and ``bbox_coder``, which are checked as well;
``roi_layer`` types must be ``mmcv.ops`` classes.
"""
from typing import Dict, Iterator, List, Optional, Tuple

from mmcv import ops
from mmdet.registry import MODELS as MMDET_MODELS
from mmdet.registry import TASK_UTILS as MMDET_TASK_UTILS
from mmdet3d.models.detectors import Base3DDetector
from mmdet3d.registry import MODELS, TASK_UTILS
from mmengine.registry import WEIGHT_INITIALIZERS

from ..registry_names import closest_names, registry_chain
from .state import TranslationState

#: 0.x type -> (1.x type, condition on the 0.x dict); the rename applies
#: when the condition holds.
RENAMED = {
    'MaxIoUAssigner': ('Max3DIoUAssigner', 'a 3D iou_calculator'),
}
#: type -> {0.x argument: 1.x argument}.
RENAMED_ARGS = {
    'PartAggregationROIHead': {'part_roi_extractor': 'bbox_roi_extractor'},
}
#: IoU calculators that make a ``MaxIoUAssigner`` a 3D one.
_IOU_3D = ('BboxOverlapsNearest3D', 'BboxOverlaps3D')
#: Keys under ``train_cfg`` / ``test_cfg`` whose dicts are built from a
#: registry (the other ``type`` keys there are settings).
_BUILT_IN_CFG = ('assigner', 'sampler', 'iou_calculator', 'bbox_coder')
#: Keys whose ``type`` names an ``mmcv.ops`` class, looked up with
#: ``getattr(mmcv.ops, type)`` rather than a registry.
_OPS_KEYS = ('roi_layer', )
_VOXEL_KEYS = ('voxel_layer', 'pts_voxel_layer')
#: Image pipeline steps that 1.x does in the data preprocessor.
_IMAGE_STEPS = ('Normalize', 'NormalizeMultiviewImage', 'Pad',
                'PadMultiViewImage')


def is_legacy_model(model) -> bool:
    """Whether ``model`` is a 0.x model dict by itself: it has a voxel
    layer, which 1.x moved to the data preprocessor. (In a config with
    other 0.x keys, any model without a data preprocessor is translated.)"""
    return isinstance(model, dict) and 'data_preprocessor' not in model \
        and any(key in model for key in _VOXEL_KEYS)


def translate_model(state: TranslationState) -> None:
    """Rewrite a 0.x ``model`` into 1.x form (see the module docstring).

    A model that already has a ``data_preprocessor`` is taken as 1.x and
    left alone.

    Args:
        state (TranslationState): The translation in progress; runs after
            :func:`.data.translate_data`, whose pipelines it reads.

    Raises:
        ValueError: For types registered neither in mmdet3d nor in mmdet.
    """
    model = state.cfg.get('model')
    if not isinstance(model, dict) or 'data_preprocessor' in model:
        return
    model = dict(model)
    _check_registered(model, state.cfg.get('plugin_dir'))
    if not _is_3d_detector(model.get('type')):
        if any(key in model for key in _VOXEL_KEYS):
            raise ValueError(
                f"legacy config: model.type={model.get('type')!r} has a "
                'voxel layer but is not an mmdet3d 1.x detector '
                '(Base3DDetector), so its data_preprocessor cannot be '
                'inferred; add model.data_preprocessor = dict('
                "type='Det3DDataPreprocessor', voxel=True, voxel_layer=...) "
                'by hand.')
        return
    preprocessor = dict(type='Det3DDataPreprocessor')
    for key in _VOXEL_KEYS:
        if key in model:
            layer = dict(model.pop(key))
            preprocessor['voxel'] = True
            if layer.get('max_num_points') == -1:
                preprocessor['voxel_type'] = 'dynamic'
            preprocessor['voxel_layer'] = layer
            state.row(f'model.{key}', 'model.data_preprocessor.voxel_layer',
                      'voxel=True' + (', dynamic' if 'voxel_type' in
                                      preprocessor else ''))
    preprocessor.update(_image_preprocessing(state))
    model['data_preprocessor'] = preprocessor
    renamed, scoped = [], []
    model = _rewrite(model, 'model', renamed, scoped, in_cfg=False)
    for path, old, new in renamed:
        if old in RENAMED:
            state.row(f'{path}={old!r}', f'{path}={new!r}', RENAMED[old][1])
        else:
            state.row(path, path[:-len(old)] + new, 'renamed argument')
    if scoped:
        names = sorted({name for _, name in scoped})
        state.row(f'model: {len(scoped)} type(s) registered only in mmdet',
                  "type='mmdet.<name>'", ', '.join(names))
    state.cfg['model'] = model


def _is_3d_detector(kind) -> bool:
    """Whether ``kind`` names a subclass of mmdet3d's Base3DDetector."""
    cls = MODELS.get(kind) if isinstance(kind, str) else None
    return isinstance(cls, type) and issubclass(cls, Base3DDetector)


def _rewrite(value, path: str, renamed: List, scoped: List, in_cfg: bool):
    """``value`` (at ``path``) with renamed and scoped types."""
    if isinstance(value, (list, tuple)):
        return type(value)(
            _rewrite(v, f'{path}[{i}]', renamed, scoped, in_cfg)
            for i, v in enumerate(value))
    if not isinstance(value, dict):
        return value
    out = {}
    for key, item in value.items():
        if key == 'file_client_args':
            args = None if not item or dict(item).get('backend') == \
                'disk' else dict(item)
            out['backend_args'] = args
            continue
        if key in _OPS_KEYS:
            out[key] = item
            continue
        child_cfg = in_cfg or key in ('train_cfg', 'test_cfg')
        if child_cfg and key in _BUILT_IN_CFG:
            child_cfg = False
        out[key] = _rewrite(item, f'{path}.{key}', renamed, scoped,
                            child_cfg)
    kind = out.get('type')
    for old, new in RENAMED_ARGS.get(kind, {}).items():
        if old in out and new not in out:
            out[new] = out.pop(old)
            renamed.append((f'{path}.{old}', old, new))
    if isinstance(kind, str) and not in_cfg and '.' not in kind:
        new = _renamed(kind, out)
        if new != kind:
            renamed.append((f'{path}.type', kind, new))
            kind = out['type'] = new
        if not _in_mmdet3d(kind) and _in_mmdet(kind):
            out['type'] = f'mmdet.{kind}'
            scoped.append((f'{path}.type', kind))
    return out


def _renamed(kind: str, cfg: Dict) -> str:
    if kind == 'MaxIoUAssigner':
        iou = cfg.get('iou_calculator') or {}
        if isinstance(iou, dict) and iou.get('type') in _IOU_3D:
            return RENAMED[kind][0]
    return kind


#: The registries of a 1.x model's types (mmdet3d's, searched with the
#: registries above them), and mmdet's.
_MMDET3D_REGISTRIES = (MODELS, TASK_UTILS, WEIGHT_INITIALIZERS)
_MMDET_REGISTRIES = (MMDET_MODELS, MMDET_TASK_UTILS)


def _in_mmdet3d(kind: str) -> bool:
    """Registered in mmdet3d or in a registry above it (mmengine: BN,
    Conv2d, DCN of mmcv, initializers)."""
    MODELS.import_from_location()
    TASK_UTILS.import_from_location()
    return any(kind in r.module_dict
               for r in registry_chain(_MMDET3D_REGISTRIES))


def _in_mmdet(kind: str) -> bool:
    MMDET_MODELS.import_from_location()
    MMDET_TASK_UTILS.import_from_location()
    return kind in MMDET_MODELS.module_dict or \
        kind in MMDET_TASK_UTILS.module_dict


def _types(value, path: str, in_cfg: bool = False
           ) -> Iterator[Tuple[str, str]]:
    """``(key path, type)`` of every registry-built dict under ``value``."""
    if isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            yield from _types(item, f'{path}[{i}]', in_cfg)
    elif isinstance(value, dict):
        kind = value.get('type')
        if isinstance(kind, str) and not in_cfg:
            yield f'{path}.type', kind
        for key, item in value.items():
            if key in _OPS_KEYS and isinstance(item, dict):
                if not hasattr(ops, str(item.get('type'))):
                    yield f'{path}.{key}.type', f"mmcv.ops.{item.get('type')}"
                continue
            child_cfg = in_cfg or key in ('train_cfg', 'test_cfg')
            if child_cfg and key in _BUILT_IN_CFG:
                child_cfg = False
            yield from _types(item, f'{path}.{key}', child_cfg)


def _check_registered(model: Dict, plugin_dir: Optional[str]) -> None:
    """Refuse the types of ``model`` that no registry knows.

    Args:
        model (dict): The 0.x model dict.
        plugin_dir (str, optional): The config's 0.x ``plugin_dir``, named
            in the message as the plugin to port.
    """
    missing = []
    for path, kind in _types(model, 'model'):
        if kind.startswith('mmcv.ops.'):
            known = False
        elif '.' in kind:
            # Scoped ('mmdet.FPN', 'myplugin.X'): the registries resolve it.
            known = any(
                registry.get(kind) is not None
                for registry in _MMDET3D_REGISTRIES)
        else:
            known = _in_mmdet3d(kind) or _in_mmdet(kind)
        if not known:
            missing.append((path, kind))
    if not missing:
        return
    lines = []
    for path, kind in missing:
        close = closest_names(kind,
                              _MMDET3D_REGISTRIES + _MMDET_REGISTRIES)
        hint = f' (closest registered: {", ".join(close)})' if close \
            else ''
        lines.append(f'  {path} = {kind!r}{hint}')
    kinds = sorted({kind for _, kind in missing})
    plugin = f'the 0.x plugin in {plugin_dir!r} (plugin_dir)' \
        if plugin_dir else 'the plugin that registers them'
    raise ValueError(
        f'legacy config: the model uses {len(kinds)} type(s) registered '
        f'neither in mmdet3d 1.x nor in mmdet 3.x: {", ".join(kinds)}\n' +
        '\n'.join(lines) + '\nThese are model classes of a 0.x plugin (or '
        'of mmdet3d 0.x) with no 1.x counterpart; the config cannot run '
        f'until {plugin} is ported to mmdet3d 1.x (mmengine registries, a '
        'data_preprocessor, loss() / predict()) and imported with '
        "custom_imports = dict(imports=['<package>']). A misspelt type: "
        'use one of the names suggested.')


def _image_preprocessing(state: TranslationState) -> Dict:
    """Remove ``Normalize`` / ``Pad`` from the pipelines; return their
    settings as data preprocessor keys."""
    found: Dict = {}
    for where, pipeline in _pipelines(state.cfg):
        kept = _strip_image_steps(pipeline, found)
        if len(kept) != len(pipeline):
            pipeline[:] = kept
            state.row(f'{where}: Normalize / Pad',
                      'model.data_preprocessor', 'mean/std/pad')
    out = {}
    norm = found.get('Normalize') or found.get('NormalizeMultiviewImage')
    if norm:
        out['mean'] = list(norm['mean'])
        out['std'] = list(norm['std'])
        out['bgr_to_rgb'] = bool(norm.get('to_rgb', True))
    pad = found.get('Pad') or found.get('PadMultiViewImage')
    if pad and pad.get('size_divisor'):
        out['pad_size_divisor'] = pad['size_divisor']
    return out


def _strip_image_steps(pipeline: List, found: Dict) -> List:
    kept = []
    for step in pipeline:
        if not isinstance(step, dict):
            kept.append(step)
            continue
        if step.get('type') in _IMAGE_STEPS:
            found.setdefault(step['type'], step)
            continue
        if isinstance(step.get('transforms'), list):
            inner = _strip_image_steps(step['transforms'], found)
            if len(inner) != len(step['transforms']):
                step['transforms'][:] = inner
        kept.append(step)
    return kept


def _pipelines(cfg: Dict) -> Iterator[Tuple[str, List]]:
    """Every pipeline list in the config (dataloaders, nested datasets,
    top-level ``*_pipeline``)."""
    for key, value in cfg.items():
        if key.endswith('_pipeline') and isinstance(value, list):
            yield key, value
        elif key.endswith('_dataloader') and isinstance(value, dict):
            yield from _dataset_pipelines(value.get('dataset'),
                                          f'{key}.dataset')


def _dataset_pipelines(dataset: Optional[Dict], where: str):
    if not isinstance(dataset, dict):
        return
    if isinstance(dataset.get('pipeline'), list):
        yield f'{where}.pipeline', dataset['pipeline']
    yield from _dataset_pipelines(dataset.get('dataset'), f'{where}.dataset')
    for i, inner in enumerate(dataset.get('datasets') or []):
        yield from _dataset_pipelines(inner, f'{where}.datasets[{i}]')
