"""``results_nusc.json``, the devkit's result file, written from arrays.

The stock metric builds a dict per box and ``json.dump``-s them: about 15 µs
a box, 45 s for the 3 million boxes of the nuScenes val split at 500 boxes a
sample, and gigabytes of dicts. :func:`write_results_json` writes the same
text layout (``json.dump``'s separators, the same keys in the same order)
straight from :class:`~.nusc_format.NuscBoxes`, with a numba loop.

Numbers are written with up to 15 significant digits (at most 14 after the
point) instead of Python's shortest round-trip ``repr``: the value a reader
parses is within 1e-14 relative of the stock file's, far below the 1e-6 the
devkit's metrics are compared at. Samples holding a non-finite or huge
number are written by ``json.dumps`` instead.
"""
import json
import os
import os.path as osp
import tempfile
from typing import Dict, List, Sequence

import numba
import numpy as np

from .nusc_format import ATTRIBUTES, NUM_VALUES, NuscBoxes

# Values at or above this magnitude go through json.dumps.
_MAX_FAST = 1e15
# Samples per numba call.
_CHUNK = 256
# Upper bound of the bytes of one box beyond its token and names.
_BOX_BYTES = 13 * 24 + 200

_POW10 = 10.0**np.arange(16)
_PAIRS = np.frombuffer(''.join(f'{i:02d}' for i in range(100)).encode(),
                       np.uint8)
_IPOW10 = 10**np.arange(16, dtype=np.int64)


@numba.njit(cache=True)
def _put(buf, pos, data):
    for k in range(len(data)):
        buf[pos + k] = data[k]
    return pos + len(data)


@numba.njit(cache=True)
def _put_digits(buf, end, n, width):
    """Write ``n`` as ``width`` digits ending before ``end``, two at a
    time."""
    k = end
    while width >= 2:
        pair = (n % 100) * 2
        n //= 100
        buf[k - 2] = _PAIRS[pair]
        buf[k - 1] = _PAIRS[pair + 1]
        k -= 2
        width -= 2
    if width:
        buf[k - 1] = 48 + n % 10


@numba.njit(cache=True)
def _put_float(buf, pos, v, pow10, ipow10):
    """Write ``v`` (finite, ``|v| < 1e15``) as a JSON number."""
    if v < 0 or (v == 0 and np.signbit(v)):
        buf[pos] = 45  # '-'
        pos += 1
        v = -v
    digits = 1
    while digits < 15 and v >= pow10[digits]:
        digits += 1
    decimals = min(15 - digits, 14)
    n = np.int64(np.rint(v * pow10[decimals]))
    whole = n // ipow10[decimals]
    frac = n - whole * ipow10[decimals]
    width = 1
    while width < 16 and whole >= ipow10[width]:
        width += 1
    _put_digits(buf, pos + width, whole, width)
    pos += width
    buf[pos] = 46  # '.'
    pos += 1
    # Fraction without trailing zeros, at least one digit.
    if frac == 0:
        decimals = 1
    else:
        while frac % 10 == 0:
            frac //= 10
            decimals -= 1
    _put_digits(buf, pos + decimals, frac, decimals)
    return pos + decimals


@numba.njit(cache=True)
def _write_chunk(buf, values, labels, attrs, box_start, box_end, tokens,
                 token_start, token_end, names, name_start, name_end, lits,
                 lit_start, lit_end, pow10, ipow10):
    """Write the samples' ``"token": [...]`` entries, comma separated."""
    pos = 0
    for s in range(len(box_start)):
        if s > 0:
            pos = _put(buf, pos, lits[lit_start[0]:lit_end[0]])  # ', '
        tok = tokens[token_start[s]:token_end[s]]
        buf[pos] = 34
        pos = _put(buf, pos + 1, tok)
        pos = _put(buf, pos, lits[lit_start[1]:lit_end[1]])  # '": ['
        for b in range(box_start[s], box_end[s]):
            if b > box_start[s]:
                pos = _put(buf, pos, lits[lit_start[0]:lit_end[0]])
            pos = _put(buf, pos, lits[lit_start[2]:lit_end[2]])
            pos = _put(buf, pos, tok)
            # translation, size, rotation, velocity: 3, 3, 4, 2 numbers.
            col = 0
            for field, count in enumerate((3, 3, 4, 2)):
                pos = _put(buf, pos, lits[lit_start[3 + field]:
                                          lit_end[3 + field]])
                for k in range(count):
                    if k > 0:
                        pos = _put(buf, pos, lits[lit_start[0]:lit_end[0]])
                    pos = _put_float(buf, pos, values[b, col], pow10, ipow10)
                    col += 1
            name = labels[b]
            pos = _put(buf, pos, lits[lit_start[7]:lit_end[7]])
            pos = _put(buf, pos, names[name_start[name]:name_end[name]])
            pos = _put(buf, pos, lits[lit_start[8]:lit_end[8]])
            pos = _put_float(buf, pos, values[b, col], pow10, ipow10)
            pos = _put(buf, pos, lits[lit_start[9]:lit_end[9]])
            attr = attrs[b]
            pos = _put(buf, pos, names[name_start[attr]:name_end[attr]])
            pos = _put(buf, pos, lits[lit_start[10]:lit_end[10]])
        buf[pos] = 93  # ']'
        pos += 1
    return pos


def _packed(items: Sequence[bytes]):
    """Concatenated bytes and their start / end offsets."""
    data = np.frombuffer(b''.join(items) or b' ', np.uint8)
    ends = np.cumsum([len(x) for x in items]).astype(np.int64)
    return data, ends - [len(x) for x in items], ends


_LITERALS = [
    b', ', b'": [', b'{"sample_token": "', b'", "translation": [',
    b'], "size": [', b'], "rotation": [', b'], "velocity": [',
    b'], "detection_name": "', b'", "detection_score": ',
    b', "attribute_name": "', b'"}'
]


def _json_box(token: str, row: np.ndarray, name: str, attr: str) -> dict:
    return dict(sample_token=token,
                translation=row[0:3].tolist(),
                size=row[3:6].tolist(),
                rotation=row[6:10].tolist(),
                velocity=row[10:12].tolist(),
                detection_name=name,
                detection_score=float(row[12]),
                attribute_name=attr)


def _chunk_text(items: List, classes: Sequence[str]) -> bytes:
    """``"token": [...]`` entries of ``items`` ((token, NuscBoxes) pairs)."""
    fast = all(
        np.isfinite(b.values).all() and
        (np.abs(b.values) < _MAX_FAST).all() for _, b in items)
    if not fast:
        parts = []
        for token, boxes in items:
            annos = [
                _json_box(token, row, classes[label],
                          '' if attr < 0 else ATTRIBUTES[attr])
                for row, label, attr in zip(boxes.values, boxes.labels,
                                            boxes.attrs)
            ]
            parts.append(json.dumps(token) + ': ' + json.dumps(annos))
        return ', '.join(parts).encode()
    tokens = [json.dumps(t)[1:-1].encode() for t, _ in items]
    counts = np.array([len(b) for _, b in items], np.int64)
    box_end = np.cumsum(counts)
    values = np.concatenate([b.values for _, b in items]).reshape(
        -1, NUM_VALUES) if items else np.zeros((0, NUM_VALUES))
    labels = np.concatenate([b.labels for _, b in items]).astype(np.int64)
    # Attribute names follow the class names in the name table; '' last.
    attrs = np.concatenate([b.attrs for _, b in items]).astype(np.int64)
    attrs = np.where(attrs < 0, len(classes) + len(ATTRIBUTES),
                     len(classes) + attrs)
    names = [json.dumps(c)[1:-1].encode() for c in classes]
    names += [a.encode() for a in ATTRIBUTES] + [b'']
    tok_data, tok_start, tok_end = _packed(tokens)
    name_data, name_start, name_end = _packed(names)
    lit_data, lit_start, lit_end = _packed(_LITERALS)
    longest = max(len(x) for x in names)
    size = sum(len(t) + 8 for t in tokens) + int(counts.sum()) * (
        _BOX_BYTES + 2 * longest + max(len(t) for t in tokens))
    buf = np.empty(size, np.uint8)
    end = _write_chunk(buf, values, labels, attrs, box_end - counts, box_end,
                       tok_data, tok_start, tok_end, name_data, name_start,
                       name_end, lit_data, lit_start, lit_end, _POW10,
                       _IPOW10)
    return buf[:end].tobytes()


def write_results_json(path: str, samples: Dict[str, NuscBoxes],
                       classes: Sequence[str], meta: dict) -> str:
    """Write the devkit's result file ``{"meta": ..., "results": ...}``.

    Written to a temporary file in the same folder, then renamed onto
    ``path``: an interrupted write leaves the previous file (or none).

    Args:
        path (str): The ``results_nusc.json`` to write.
        samples (dict[str, NuscBoxes]): Boxes by sample token, in the
            file's order.
        classes (Sequence[str]): Names of the label indices.
        meta (dict): The file's ``meta`` (the metric's ``modality``).

    Returns:
        str: ``path``.
    """
    folder = osp.dirname(osp.abspath(path))
    os.makedirs(folder, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix='.results_nusc.', dir=folder)
    items = list(samples.items())
    try:
        with os.fdopen(fd, 'wb') as f:
            f.write(b'{"meta": ' + json.dumps(meta).encode() +
                    b', "results": {')
            for start in range(0, len(items), _CHUNK):
                if start:
                    f.write(b', ')
                f.write(_chunk_text(items[start:start + _CHUNK], classes))
            f.write(b'}}')
        os.replace(tmp, path)
    except BaseException:
        if osp.exists(tmp):
            os.remove(tmp)
        raise
    return path
