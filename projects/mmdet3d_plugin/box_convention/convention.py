"""Which box convention a checkpoint's weights are in, from its ``meta``.

A checkpoint converted by ``tools/migrate_checkpoint.py`` says so
(``meta['box_convention']``). One written by mmengine (any mmdet3d 1.x
run) has ``meta['mmengine_version']`` and no ``mmdet3d_version``; mmcv
1.x runners wrote ``mmdet3d_version``, ``mmcv_version``, ``config``
(text), ``CLASSES``, ``epoch`` and ``iter``. mmdet3d released the new
convention with 1.0.0rc0 (PR #677), but the v1.0.0.dev0 branch had it
from September 2021 while it still said 0.17.0 to 0.18.x: a version
before 0.17.0 is old, one from 1.0.0rc0 on is new, and one between says
nothing by itself. Then the config text can: an anchor head's sizes
((w, l, h) in 0.x, so the width first for long anchors) and its
``dir_offset`` (0.7854 in 0.x's nuScenes, Lyft and Waymo heads, -0.7854
after). A CenterPoint or DETR-style head has nothing in its config that
changed, and the user says (``--from-convention``).
"""
from dataclasses import dataclass
from typing import Any, Dict, Optional

from packaging.version import InvalidVersion, Version

from .boxes import FIRST_NEW_RELEASE, NEW_CONVENTION

#: Versions before this one are all old (PR #677 landed on the
#: v1.0.0.dev0 branch after 0.17.0).
LAST_OLD_ONLY = '0.17.0'


@dataclass(frozen=True)
class Convention:
    """A checkpoint's box convention and how it is known.

    Args:
        name (str, optional): ``'old'``, ``'new'``, ``'converted'`` (new,
            by ``tools/migrate_checkpoint.py``) or None (cannot tell).
        reason (str): How it is known, for messages.
    """
    name: Optional[str]
    reason: str


def mmdet3d_version(meta: Dict[str, Any]) -> Optional[Version]:
    """``meta["mmdet3d_version"]`` as a version, None if absent or not one."""
    try:
        return Version(str(meta['mmdet3d_version']))
    except (KeyError, InvalidVersion):
        return None


def from_meta(meta: Any) -> Convention:
    """The convention that ``meta`` alone tells.

    Args:
        meta (dict | None): The checkpoint's ``meta``.

    Returns:
        Convention: Its name is None for versions 0.17.0 to 0.18.x and for
        a checkpoint without mmdet3d's or mmengine's version.
    """
    meta = meta if isinstance(meta, dict) else {}
    if meta.get('box_convention') == NEW_CONVENTION:
        return Convention('converted',
                          'converted by tools/migrate_checkpoint.py '
                          f"(meta['box_convention'] = {NEW_CONVENTION!r})")
    version = mmdet3d_version(meta)
    if version is None:
        if 'mmengine_version' in meta:
            return Convention('new', 'written by mmengine '
                              f"{meta['mmengine_version']} (mmdet3d 1.x)")
        return Convention(None, 'its meta names no mmdet3d version')
    text = f'written by mmdet3d {version}'
    if version >= Version(FIRST_NEW_RELEASE):
        return Convention('new', f'{text} (>= {FIRST_NEW_RELEASE})')
    if version < Version(LAST_OLD_ONLY):
        return Convention('old', f'{text} (< {LAST_OLD_ONLY}, before PR '
                          '#677)')
    return Convention(None, f'{text}: 0.17.0 to 0.18.x are old in the '
                      'releases and new on the v1.0.0.dev0 branch')


def from_anchor_config(head: Any) -> Optional[Convention]:
    """The convention an anchor head's config text tells, if it does.

    Args:
        head (dict): The head's dict in a checkpoint's config text.

    Returns:
        Convention | None: From its anchor sizes, those longer one way by
        more than 10 %: ``'old'`` when more have the width first (0.x's
        (w, l, h); nuScenes' barrier anchor is wider than long, so it is
        a majority), ``'new'`` when more have the length first; and from
        ``dir_offset``: 0.7854 is 0.x's nuScenes, Lyft and Waymo value,
        -0.7854 1.x's. None when they disagree or say nothing.
    """
    if not isinstance(head, dict):
        return None
    generator = head.get('anchor_generator')
    sizes = generator.get('sizes') if isinstance(generator, dict) else None
    said = []
    if isinstance(sizes, (list, tuple)):
        rows = sizes if sizes and isinstance(sizes[0], (list, tuple)) \
            else [sizes]
        rows = [size for size in rows if isinstance(size, (list, tuple))
                and len(size) == 3 and all(
                    isinstance(v, (int, float)) for v in size)]
        width_first = sum(size[0] < 0.9 * size[1] for size in rows)
        length_first = sum(size[1] < 0.9 * size[0] for size in rows)
        if width_first != length_first:
            name = 'old' if width_first > length_first else 'new'
            said.append((name, f'{max(width_first, length_first)} of its '
                         f'{len(rows)} anchor sizes have the '
                         f"{'width' if name == 'old' else 'length'} first"))
    offset = head.get('dir_offset')
    if isinstance(offset, (int, float)) and abs(abs(offset) - 0.7854) < 1e-3:
        said.append(('old' if offset > 0 else 'new',
                     f'dir_offset={offset:g}'))
    names = {name for name, _ in said}
    if len(names) != 1:
        return None
    return Convention(names.pop(), ', '.join(reason for _, reason in said))
