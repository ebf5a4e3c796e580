"""Shared state of the 0.x -> 1.x config translation.

:class:`TranslationState` holds the config dict being rewritten, the rows
``(old key, new key, value)`` of the migration table and the places where
``file_client_args`` became ``backend_args``; every section module
(:mod:`.optimizer`, :mod:`.loop`, :mod:`.schedule`, :mod:`.hooks`,
:mod:`.data`, :mod:`.runtime`) rewrites its keys through it. A setting with
no faithful mmengine equivalent is refused with a ``ValueError`` whose
message starts with ``legacy config:`` and names the key and what to write
instead.
"""
import copy
from typing import Any, Dict, List, Optional, Tuple

#: A migration-table row: ``(old key, new key, value)``.
Row = Tuple[str, str, Any]


class TranslationState:
    """Holds the config dict being rewritten and the migration rows.

    Args:
        cfg (dict): The config as a plain dict; rewritten in place.
    """

    def __init__(self, cfg: Dict):
        self.cfg = cfg
        self.rows: List[Row] = []
        self.backend_args_places: List[str] = []

    def row(self, old: str, new: str, value: Any) -> None:
        """Add the row ``(old, new, value)`` to the migration table."""
        self.rows.append((old, new, value))

    def pop(self, key: str):
        """Remove ``key`` from the config and return its value."""
        return self.cfg.pop(key)

    def pop_section(self, key: str) -> Optional[dict]:
        """Remove the dict ``key`` from the config and return a copy of it;
        None when the config has no ``key`` or sets it to None."""
        if key not in self.cfg:
            return None
        section = self.pop(key)
        return None if section is None else dict(section)

    def loop(self) -> Tuple[Optional[bool], Optional[int]]:
        """(by_epoch, max length) of the training loop, if known."""
        train_cfg = self.cfg.get('train_cfg') or {}
        if 'max_epochs' in train_cfg:
            return True, train_cfg['max_epochs']
        if 'max_iters' in train_cfg:
            return False, train_cfg['max_iters']
        return None, None


def merge_or_replace(base: Optional[Dict], new: Dict) -> Dict:
    """Merge ``new`` into ``base`` if they are the same type, else replace.

    A 0.x dict without ``type`` (a partial override) or with the same type
    as the 1.x one updates it key by key; another type replaces it.

    Args:
        base (dict, optional): The 1.x dict, or None.
        new (dict): The 0.x dict.

    Returns:
        dict: A new dict; neither argument is changed.
    """
    if not base or ('type' in new and new['type'] != base.get('type')):
        return copy.deepcopy(new)
    merged = copy.deepcopy(dict(base))
    for key, value in new.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = merge_or_replace(merged[key], value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged
