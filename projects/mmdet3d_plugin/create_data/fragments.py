"""An info file written from list fragments pickled by the workers: the
parent joins bytes instead of pickling every record again.

mmdet3d's info file is one pickle of ``dict(metainfo=..., data_list=[...])``.
:func:`pickle_fragment` pickles a run of records (a shard's, in a worker) as
the items of a list, protocol 2 (mmengine's ``dump``'s): one pickler for
the run, so the records share its memo (a key string is written once per
fragment). Protocol 2 names each memo slot explicitly (``BINPUT n``), so a
fragment whose slots count from 0 again overwrites the slots of the one
before it, which nothing reads again: the fragments join in any number.
:func:`start_info_file`, :func:`add_fragment` and :func:`end_info_file`
write the dict around them, one fragment in memory at a time; loading the
file gives the same objects as pickling the whole dict at once.
:func:`load_fragment` reads one fragment's records back (the GT phase's
workers read their samples' records so, from the infos shards).
"""
import io
import pickle
from typing import BinaryIO, Iterable, List

#: mmengine's ``dump`` protocol; the one whose memo slots are explicit.
PROTOCOL = 2
_PROTO = b'\x80\x02'
_STOP = pickle.STOP
_MARK = pickle.MARK
_APPENDS = pickle.APPENDS


def _items(objects: Iterable) -> bytes:
    """``objects`` pickled one after another with one pickler, each
    without its ``PROTO`` and ``STOP``: the opcodes that push them."""
    buffer = io.BytesIO()
    pickler = pickle.Pickler(buffer, protocol=PROTOCOL)
    parts = []
    for obj in objects:
        start = buffer.tell()
        pickler.dump(obj)
        end = buffer.tell()
        view = buffer.getbuffer()
        if view[start:start + 2] != _PROTO or view[end - 1:end] != _STOP:
            raise RuntimeError(
                'pickle_fragment: expected each dump to start with PROTO 2 '
                'and end with STOP; got another layout (a changed pickle '
                'module?).')
        parts.append(bytes(view[start + 2:end - 1]))
        del view
    return b''.join(parts)


def pickle_fragment(records: List) -> bytes:
    """The pickle opcodes that push ``records``, for :func:`add_fragment`."""
    return _items(records)


def load_fragment(fragment: bytes) -> list:
    """The records of one fragment, as a list."""
    return pickle.loads(_PROTO + _MARK + fragment + pickle.LIST + _STOP)


def start_info_file(f: BinaryIO, metainfo: dict) -> None:
    """Begin ``dict(metainfo=metainfo, data_list=[...])`` in the binary
    file ``f``; :func:`add_fragment` adds the list's items,
    :func:`end_info_file` closes the dict."""
    f.write(_PROTO + pickle.EMPTY_DICT + _MARK)
    f.write(_items(['metainfo', metainfo, 'data_list']))
    f.write(pickle.EMPTY_LIST)


def add_fragment(f: BinaryIO, fragment: bytes) -> None:
    """Append the records of ``fragment`` (:func:`pickle_fragment`) to the
    list of the info file begun in ``f``."""
    f.write(_MARK + fragment + _APPENDS)


def end_info_file(f: BinaryIO) -> None:
    """Close the dict begun by :func:`start_info_file`."""
    f.write(pickle.SETITEMS + _STOP)
