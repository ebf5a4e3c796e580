"""The config rewrite of the guard: NonFiniteGuardHook added once, a
config's own kept, ``nonfinite_guard = False`` leaves it out."""
from mmengine.config import Config

from projects.mmdet3d_plugin.engine.nonfinite.run_config import (
    use_nonfinite_guard)


def test_the_guard_is_added_once():
    cfg = use_nonfinite_guard(Config(dict(custom_hooks=[dict(type='X')])))
    assert [h['type'] for h in cfg.custom_hooks] == [
        'X', 'mmdet3d.NonFiniteGuardHook']
    assert use_nonfinite_guard(cfg).custom_hooks == cfg.custom_hooks


def test_a_configs_own_guard_and_the_opt_out_are_kept():
    own = dict(type='NonFiniteGuardHook', max_consecutive=5)
    assert use_nonfinite_guard(Config(dict(custom_hooks=[own]))
                               ).custom_hooks == [own]
    off = use_nonfinite_guard(Config(dict(nonfinite_guard=False)))
    assert 'custom_hooks' not in off
