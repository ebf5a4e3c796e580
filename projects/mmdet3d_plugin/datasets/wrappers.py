"""The dataset(s) inside mmengine / mmdet3d dataset wrappers.

A wrapper holds one dataset as ``.dataset`` (``CBGSDataset``,
``RepeatDataset``, ``ClassBalancedDataset``) or several as ``.datasets``
(``ConcatDataset``). These functions read built datasets
(:func:`share_index_lists` moves the wrappers' index lists into shared
memory); ``config.data_root.unwrap_datasets`` walks the same nesting in a
config's dataset dicts.
"""
import itertools
from typing import Any, Iterator, List, Set

from .shared_infos import SharedIndexList, shared_memory_supported

#: Names :func:`dataset_name` shows at most.
MAX_NAMED = 4


def walk_datasets(dataset: Any, concat: bool = True) -> Iterator[Any]:
    """``dataset`` and the datasets it wraps, at any depth, outermost
    first (depth-first: a wrapper's ``dataset``, then each of its
    ``datasets``). A dataset reached twice is yielded once.

    Args:
        dataset: A built dataset, possibly wrapped. None yields nothing.
        concat (bool): Whether to enter the ``datasets`` of a
            ``ConcatDataset`` as well. False follows each wrapper's
            ``dataset`` only: the chain down to the one dataset whose
            samples the outermost returns (it ends at a ``ConcatDataset``).
            Defaults to True.

    Yields:
        The datasets, ``dataset`` itself first.

    Examples:
        >>> [type(d).__name__ for d in walk_datasets(cbgs)]
        ['CBGSDataset', 'SafeNuScenesDataset']
    """
    yield from _walk(dataset, concat, set())


def _walk(dataset: Any, concat: bool, seen: Set[int]) -> Iterator[Any]:
    if dataset is None or id(dataset) in seen:
        return
    seen.add(id(dataset))
    yield dataset
    yield from _walk(getattr(dataset, 'dataset', None), concat, seen)
    if concat:
        for each in getattr(dataset, 'datasets', None) or ():
            yield from _walk(each, concat, seen)


def dataset_name(dataset: Any) -> str:
    """The types of ``dataset`` and the datasets it wraps, for messages.

    Args:
        dataset: A built dataset, possibly wrapped.

    Returns:
        str: e.g. ``'CBGSDataset of SafeNuScenesDataset'`` (at most
        :data:`MAX_NAMED` names).
    """
    chain = itertools.islice(walk_datasets(dataset, concat=False), MAX_NAMED)
    return ' of '.join(type(each).__name__ for each in chain)


#: Index lists of mmengine's and mmdet3d's dataset wrappers, by attribute.
WRAPPER_INDEX_LISTS = ('sample_indices', 'repeat_indices')


def share_index_lists(dataset) -> List[str]:
    """Move the index lists of ``dataset``'s wrappers
    (:data:`WRAPPER_INDEX_LISTS`: ``CBGSDataset``'s,
    ``ClassBalancedDataset``'s) into shared memory
    (:class:`SharedIndexList`), so DataLoader workers neither copy nor
    receive them; nothing on systems without ``/proc``.

    Args:
        dataset: A built dataset, possibly wrapped, fully initialized or
            not (lazy wrappers are left as they are).

    Returns:
        list[str]: What was moved, e.g. ``['CBGSDataset.sample_indices']``.
    """
    moved = []
    if not shared_memory_supported():
        return moved
    for each in walk_datasets(dataset):
        for name in WRAPPER_INDEX_LISTS:
            values = vars(each).get(name)
            if isinstance(values, list) and all(
                    type(v) is int for v in values):
                setattr(each, name, SharedIndexList(values))
                moved.append(f'{type(each).__name__}.{name}')
    return moved
