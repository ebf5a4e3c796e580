"""Errors of the upstream stack that the plugin knows, with cause and fix.

The doctor and the tools' error printer look an exception up here, so a
known upstream bug is named (issue, fix) instead of shown as a bare
traceback, also when it was raised in a DataLoader worker and arrives as the
worker's traceback text.
"""
import re
from typing import NamedTuple, Optional

from ..constants import CUSTOM_IMPORTS
from .inventory import OFF_VARIABLE


class KnownError(NamedTuple):
    """An upstream error: its text, its cause and the fix."""
    pattern: 're.Pattern'
    cause: str
    fix: str


KNOWN_ERRORS = (
    KnownError(
        re.compile(r"module 'numpy' has no attribute 'long'"),
        "mmdet3d 1.4.0's DataBaseSampler (ObjectSample's GT-database "
        'sampling) uses np.long, removed in numpy 1.24 (mmdet3d #2821; fixed '
        'by PR #2872, in no release yet)',
        f'import the plugin ({CUSTOM_IMPORTS}), which registers a fixed '
        f'DataBaseSampler, and leave dbsampler_np_long out of {OFF_VARIABLE}'),
    KnownError(
        re.compile(r'Weights only load failed'),
        'torch >= 2.6 loads with weights_only=True and mmengine <= 0.10.7 '
        'checkpoints hold other objects (mmengine #1655)',
        'import the plugin (it allows exactly the objects mmengine writes), '
        'or load the file with weights_only=False only if you trust it'),
    KnownError(
        re.compile(r"cannot pickle 'dict_keys' object"),
        "nuscenes-devkit 1.2.0's DetectionConfig keeps class_names as "
        "dict_keys, which spawn / forkserver DataLoader workers cannot "
        'receive',
        "use type='SafeNuScenesDataset' / 'SafeNuScenesMetric' from the "
        'plugin, or mp_start_method=fork'),
)


def known_error(exc: BaseException) -> Optional[KnownError]:
    """The :class:`KnownError` matching ``exc`` or its causes, if any."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        text = str(exc)
        for known in KNOWN_ERRORS:
            if known.pattern.search(text):
                return known
        exc = exc.__cause__ or exc.__context__
    return None
