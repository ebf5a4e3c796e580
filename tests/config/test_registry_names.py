"""The registered names closest to an unknown ``type``: one function for
the doctor's ``config.types`` and the 0.x model translation."""
from mmengine.registry import Registry

from projects.mmdet3d_plugin.config.registry_names import (closest_names,
                                                           registered_names,
                                                           registry_chain)


def _registries():
    """A root registry (as mmengine's) and a child (as mmdet3d's)."""
    root = Registry('toy model', scope='toy_root')
    child = Registry('toy model', parent=root, scope='toy_child')
    root.register_module(name='ConvModule', module=object)
    child.register_module(name='CenterPointBBoxCoder', module=object)
    return root, child


def test_names_of_a_registry_and_those_above_it():
    root, child = _registries()
    assert list(registry_chain([child, root])) == [child, root, root]
    assert registered_names([child]) == ['CenterPointBBoxCoder',
                                         'ConvModule']
    assert registered_names([root]) == ['ConvModule']


def test_closest_names_match_the_bare_name():
    _, child = _registries()
    assert closest_names('toy.CenterPointBBoxCoderr', [child]) == \
        ['CenterPointBBoxCoder']
    assert closest_names('ConvModul', [child]) == ['ConvModule']
    assert closest_names('Qwxyz', [child]) == []
