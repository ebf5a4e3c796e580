"""``ObjectSample``'s GT-database infos as columns in shared memory.

mmdet3d's ``DataBaseSampler`` keeps its database as Python dicts, one per
object (about 0.9 GB for nuScenes trainval's ~631,000 objects). A forked
DataLoader worker copies every page whose objects it reads (reading writes
their reference counts), so its memory grows with each object drawn; a
spawn or forkserver worker unpickles a whole copy of its own.

:func:`pack_db_infos` stores each class's list as columns: one array per
key (numbers, numpy scalars and equally shaped arrays stacked; strings as
one UTF-8 byte buffer with offsets; anything else pickled, one buffer with
offsets), all of them in one :class:`~..shared_infos.SharedArrays`: no
copy under fork, mapped by spawn and forkserver workers. A
:class:`PackedInfoList` is a sequence whose item ``i`` is a new dict equal
to the object's info (same keys in the same order, same types and values,
arrays bit for bit): ``BatchSampler`` draws from it as from the list, and
nothing it returns outlives the sample that drew it.
"""
import operator
import pickle
from collections.abc import Sequence
from typing import Dict, List, Tuple

import numpy as np

from ..shared_infos import SharedArrays, shared_memory_supported

# How a key's values are stored: the arrays each kind takes, and how one
# value is read back.
_STR, _INT, _FLOAT, _BOOL, _NONE = 'str', 'int', 'float', 'bool', 'none'
_SCALAR, _ARRAY, _OBJECT = 'scalar', 'array', 'object'
_INT64 = np.iinfo(np.int64)


def _buffer(chunks: List[bytes]) -> Tuple[np.ndarray, np.ndarray]:
    """``chunks`` as one byte array and the int64 offsets of each."""
    offsets = np.zeros(len(chunks) + 1, dtype=np.int64)
    np.cumsum([len(c) for c in chunks], out=offsets[1:])
    return np.frombuffer(b''.join(chunks), dtype=np.uint8), offsets


def _same_array_kind(values: list) -> bool:
    first = values[0]
    return (type(first) is np.ndarray and first.dtype != object
            and all(type(v) is np.ndarray and v.dtype == first.dtype
                    and v.shape == first.shape for v in values))


def _pack_column(values: list) -> Tuple[str, List[np.ndarray]]:
    """The kind and arrays of one key's values (all objects, in order)."""
    kinds = {type(v) for v in values}
    if kinds == {str}:
        try:
            return _STR, list(_buffer([v.encode() for v in values]))
        except UnicodeEncodeError:
            pass  # lone surrogates: pickled below
    elif kinds == {int}:
        if _INT64.min <= min(values) and max(values) <= _INT64.max:
            return _INT, [np.array(values, dtype=np.int64)]
    elif kinds == {float}:
        return _FLOAT, [np.array(values, dtype=np.float64)]
    elif kinds == {bool}:
        return _BOOL, [np.array(values, dtype=bool)]
    elif kinds == {type(None)}:
        return _NONE, []
    elif len(kinds) == 1 and issubclass(next(iter(kinds)), np.generic) \
            and values[0].dtype != object:
        return _SCALAR, [np.array(values, dtype=values[0].dtype)]
    elif kinds == {np.ndarray} and _same_array_kind(values):
        return _ARRAY, [np.stack(values)]
    return _OBJECT, list(_buffer(
        [pickle.dumps(v, protocol=pickle.HIGHEST_PROTOCOL) for v in values]))


def _read(kind: str, arrays: Tuple[np.ndarray, ...], i: int):
    if kind == _STR:
        data, offsets = arrays
        return data[offsets[i]:offsets[i + 1]].tobytes().decode()
    if kind == _INT:
        return int(arrays[0][i])
    if kind == _FLOAT:
        return float(arrays[0][i])
    if kind == _BOOL:
        return bool(arrays[0][i])
    if kind == _NONE:
        return None
    if kind == _SCALAR:
        return arrays[0][i]
    if kind == _ARRAY:
        return arrays[0][i].copy()  # writable and its own, as unpickled
    data, offsets = arrays
    return pickle.loads(data[offsets[i]:offsets[i + 1]])


class PackedInfoList(Sequence):
    """A list of info dicts held as columns (see :func:`pack_db_infos`).

    ``infos[i]`` is a new dict equal to the ``i``-th info packed: the same
    keys in the same order, values of the same types (``int`` as ``int``,
    a ``numpy.int32`` as one, arrays of the same dtype and shape, bit for
    bit, writable). Infos whose keys differ from the first's are packed
    whole (pickled), so any list packs.

    Args:
        keys (tuple): ``(key, kind, number of arrays)`` per key, in order.
        arrays (tuple[np.ndarray]): The arrays of every key, in order.
        length (int): The number of infos.
    """

    def __init__(self, keys: tuple, arrays: tuple, length: int) -> None:
        self._keys = keys
        self._arrays = tuple(arrays)
        self._length = length
        columns, start = [], 0
        for key, kind, count in keys:
            columns.append((key, kind, self._arrays[start:start + count]))
            start += count
        self._columns = tuple(columns)

    @classmethod
    def pack(cls, infos: List[dict]) -> 'PackedInfoList':
        """Pack ``infos`` (a list of dicts) into arrays."""
        infos = list(infos)
        names = tuple(infos[0]) if infos else ()
        if not all(isinstance(info, dict) and tuple(info) == names
                   for info in infos):
            names = None  # keys differ: each info pickled whole
        keys, arrays = [], []
        if names is None:
            kind, packed = _OBJECT, list(_buffer([
                pickle.dumps(info, protocol=pickle.HIGHEST_PROTOCOL)
                for info in infos]))
            keys.append((None, kind, len(packed)))
            arrays += packed
        else:
            for name in names:
                kind, packed = _pack_column([info[name] for info in infos])
                keys.append((name, kind, len(packed)))
                arrays += packed
        return cls(tuple(keys), tuple(arrays), len(infos))

    def __len__(self) -> int:
        return self._length

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(self._length))]
        i = operator.index(index)
        if i < 0:
            i += self._length
        if not 0 <= i < self._length:
            raise IndexError(f'PackedInfoList: index {index} out of range '
                             f'for {self._length} infos')
        if self._columns and self._columns[0][0] is None:
            return _read(_OBJECT, self._columns[0][2], i)
        return {key: _read(kind, arrays, i)
                for key, kind, arrays in self._columns}

    @property
    def nbytes(self) -> int:
        """Bytes of the arrays that hold the infos."""
        return sum(a.nbytes for a in self._arrays)

    @classmethod
    def _in_shared(cls, keys: tuple, shared: SharedArrays, start: int,
                   length: int) -> 'PackedInfoList':
        """The list whose arrays are ``shared.arrays[start:]``'s first."""
        count = sum(n for _, _, n in keys)
        packed = cls(keys, shared.arrays[start:start + count], length)
        packed._shared = (shared, start)
        return packed

    def __reduce__(self):
        shared = self.__dict__.get('_shared')
        if shared is not None:  # the file's descriptor, not the arrays
            return (PackedInfoList._in_shared,
                    (self._keys, *shared, self._length))
        return (PackedInfoList, (self._keys, self._arrays, self._length))


def pack_db_infos(db_infos: Dict[str, list],
                  share: bool = True) -> Dict[str, PackedInfoList]:
    """``{class: PackedInfoList}`` of a GT database's ``{class: infos}``,
    the arrays of all classes in one :class:`SharedArrays` where
    ``share`` and the system allows (pickled by value otherwise).

    Args:
        db_infos (dict[str, list[dict]]): ``DataBaseSampler.db_infos``.
        share (bool): Whether to move the arrays into shared memory.
            Defaults to True.

    Returns:
        dict[str, PackedInfoList]: The same classes in the same order.
    """
    packed = {name: PackedInfoList.pack(infos)
              for name, infos in db_infos.items()}
    if not share or not shared_memory_supported():
        return packed
    shared = SharedArrays([a for each in packed.values()
                           for a in each._arrays])
    # Each list keeps the mapping alive; pickling the lists sends the
    # shared file's descriptor, once per pickle however many classes.
    result, start = {}, 0
    for name, each in packed.items():
        result[name] = PackedInfoList._in_shared(each._keys, shared, start,
                                                 len(each))
        start += len(each._arrays)
    return result


__all__ = ['PackedInfoList', 'pack_db_infos']
