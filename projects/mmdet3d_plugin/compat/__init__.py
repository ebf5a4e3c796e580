"""Fixes for today's torch / mmengine / mmdet3d stack, all in one place.

Each module names the upstream problem it works around and when it can go;
:mod:`.inventory` lists them, with everything else in the plugin that relies
on private upstream behaviour, and the versions each was reviewed against.
Applied once, on ``import projects.mmdet3d_plugin``; nothing here edits
files of another package on disk or changes numpy or torch globally.

1. ``checkpoints``: weights-only ``torch.load`` of mmengine checkpoints
   (torch >= 2.6, mmengine #1655).
2. ``cpu_dist``: DDP on a CPU-only torch (mmengine #1460).
3. ``spconv_cpu``: spconv's backward without CUDA.
4. ``dbsampler``: ``ObjectSample`` / ``DataBaseSampler`` on numpy >= 1.24
   (mmdet3d #2821); switchable.
5. ``centerhead_init``: CenterPoint's heatmap bias starts at ``init_bias``
   (mmdet3d #1554); switchable.
6. ``nuscenes_class_names``: the devkit's ``DetectionConfig`` with
   ``class_names`` as a list, which pickles (nuscenes-devkit 1.2.0); the
   dataset and the metric hold it (not applied at import).
7. ``restart_store``: process groups of a torchrun restart that do not
   read the keys of the attempt before (applied by the launch code, not at
   import).

The upstream errors the plugin knows without working around them are rows
of the cause table, ``diagnostics.causes.KNOWN_ERRORS``.
"""
from . import centerhead_init, dbsampler
from .checkpoints import allow_mmengine_checkpoints
from .cpu_dist import CPUDistributedDataParallel, init_cpu_dist
from .inventory import (OFF_VARIABLE, OVERRIDES, Override,
                        outside_reviewed_range, switched_off)
from .nuscenes_class_names import (PicklableDetectionConfig,
                                   reduce_detection_config)
from .spconv_cpu import let_spconv_train_on_cpu

__all__ = [
    'CPUDistributedDataParallel', 'OFF_VARIABLE', 'OVERRIDES', 'Override',
    'PicklableDetectionConfig',
    'allow_mmengine_checkpoints', 'init_cpu_dist', 'let_spconv_train_on_cpu',
    'outside_reviewed_range', 'reduce_detection_config', 'switched_off',
    'applied'
]

_OFF = switched_off()
#: Names of the switchable fixes applied in this process.
applied = set()

allow_mmengine_checkpoints()
let_spconv_train_on_cpu()
for _fix in (dbsampler, centerhead_init):
    if _fix.NAME not in _OFF and _fix.apply():
        applied.add(_fix.NAME)
