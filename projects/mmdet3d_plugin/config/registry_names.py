"""The names registered in mmengine registries, and the registered names
closest to a config ``type`` that none of them knows (the hint of the
doctor's ``config.types`` and of the 0.x model translation).

A registry resolves a name in itself and in the registries above it
(``parent``: mmdet3d's ``MODELS`` -> mmengine's), so both are searched.
"""
import difflib
from typing import Any, Iterable, Iterator, List

#: How many close names a hint lists.
MAX_CLOSE = 3
#: ``difflib.get_close_matches`` similarity a close name needs.
CLOSE_CUTOFF = 0.6


def registry_chain(registries: Iterable[Any]) -> Iterator[Any]:
    """Each of ``registries``, each followed by the registries above it.

    Args:
        registries (Iterable[Registry]): mmengine registries.

    Yields:
        Registry: e.g. mmdet3d's ``MODELS``, then mmengine's ``MODELS``.
    """
    for registry in registries:
        while registry is not None:
            yield registry
            registry = registry.parent


def registered_names(registries: Iterable[Any]) -> List[str]:
    """Every name registered in ``registries`` or above them, sorted.

    Args:
        registries (Iterable[Registry]): mmengine registries.

    Returns:
        list[str]: The names, without scope.
    """
    names = set()
    for registry in registry_chain(registries):
        names.update(registry.module_dict)
    return sorted(names)


def closest_names(kind: str, registries: Iterable[Any]) -> List[str]:
    """The names of ``registries`` (and above) closest to a ``type``.

    Args:
        kind (str): The unknown type, bare or scoped (``'mmdet.FPNN'``:
            the part after the last dot is matched).
        registries (Iterable[Registry]): mmengine registries.

    Returns:
        list[str]: At most :data:`MAX_CLOSE` names, closest first; empty
        when none is similar enough.

    Examples:
        >>> closest_names('CenterPointBBoxCoderr', [TASK_UTILS])
        ['CenterPointBBoxCoder']
    """
    return difflib.get_close_matches(
        kind.rsplit('.', 1)[-1],
        registered_names(registries),
        n=MAX_CLOSE,
        cutoff=CLOSE_CUTOFF)
