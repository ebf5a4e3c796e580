"""Presets and train flags applied to a config in a test as the tools do:
merged, then validated once (``cli.prepare.prepare_run``'s order)."""
from projects.mmdet3d_plugin.config.optim_wrapper import \
    validate_optim_wrapper
from projects.mmdet3d_plugin.config.presets import (applied_by, merge_presets,
                                                    merge_train_flags)


def apply_presets(cfg, names):
    """Merge the presets ``names`` onto ``cfg`` and validate the result."""
    names = [names] if isinstance(names, str) else list(names or ())
    merge_presets(cfg, names)
    if names:
        validate_optim_wrapper(cfg, applied_by(presets=names))
    return cfg


def apply_train_flags(cfg, accum=None, amp=None):
    """tools/train.py's ``--accum`` / ``--amp``, then the validation."""
    merge_train_flags(cfg, accum=accum, amp=amp)
    where = applied_by(amp=amp, accum=accum)
    if where:
        validate_optim_wrapper(cfg, where)
    return cfg
