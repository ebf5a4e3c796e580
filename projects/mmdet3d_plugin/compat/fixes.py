"""Apply the stack fixes of this folder, once per process.

:func:`apply_fixes` runs when the plugin registers its classes
(``projects.mmdet3d_plugin.registration.register_plugin``): the weights-only
``torch.load`` of mmengine checkpoints, spconv's backward on CPU, the
config's text formatted once per content, the DataLoader iterators'
queue threads joined at their shutdown, and the
switchable fixes (``dbsampler``, ``centerhead_init``) that
``MMDET3D_PLUGIN_COMPAT_OFF`` does not switch off (``inventory``).
"""
from typing import Set

from . import centerhead_init, dbsampler
from .checkpoints import allow_mmengine_checkpoints
from .config_text import format_config_text_once
from .dataloader_feeders import join_queue_feeders_at_shutdown
from .inventory import switched_off
from .spconv_cpu import let_spconv_train_on_cpu

#: Names of the switchable fixes applied in this process.
applied: Set[str] = set()


def apply_fixes() -> Set[str]:
    """Apply every fix (a second call does nothing more).

    Returns:
        set[str]: The names of the switchable fixes applied in this
        process.
    """
    allow_mmengine_checkpoints()
    let_spconv_train_on_cpu()
    format_config_text_once()
    join_queue_feeders_at_shutdown()
    off = switched_off()
    for fix in (dbsampler, centerhead_init):
        if fix.NAME not in off and fix.NAME not in applied and fix.apply():
            applied.add(fix.NAME)
    return applied
