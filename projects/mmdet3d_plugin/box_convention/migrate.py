"""``tools/migrate_checkpoint.py``: a 0.x checkpoint's box head converted
to mmdet3d 1.x's box convention, written atomically.

:func:`migrate_checkpoint` reads the checkpoint, tells its convention
(``convention.py``; ``--from-convention`` where it cannot), finds the
head in its state dict (``--head`` where there are several): a
``CenterHead`` (``centerpoint.py``), an anchor head (``anchor3d.py``, with
the config lines the 1.x config must carry, checked against ``--config``
when given) or DETR-style ``reg_branches`` (``detr.py``), converts it, and
writes the result with ``meta['box_convention'] = 'mmdet3d>=1.0'`` and
what was changed. A checkpoint that is already converted or was written
by 1.x is left alone (nothing written). The optimizer state is dropped:
its moments are in the old layout, so the result is for ``load_from``,
not ``--resume``.
"""
import copy
import io
import os.path as osp
import re
import time
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

import torch
from mmengine.runner.checkpoint import CheckpointLoader

from ..compat.checkpoints import allow_mmengine_checkpoints
from ..fileio.atomic import atomic_write
from .anchor3d import (AnchorHead, anchor_head_prefixes, check_new_config,
                       check_rotations, check_shapes, config_lines,
                       convert_anchor_head, direction_swap, new_offset_for,
                       read_anchor_head)
from .boxes import NEW_CONVENTION
from .centerpoint import centerhead_keys, convert_centerhead
from .centerpoint import head_prefix as centerhead_prefix
from .convention import (Convention, from_anchor_config, from_meta,
                         mmdet3d_version)
from .detr import convert_reg_branches, reg_branch_keys
from .detr import head_prefix as detr_prefix
from .old_config import find_head, read_config_text

#: ``--head`` choices.
HEADS = ('centerpoint', 'anchor3d', 'detr')
#: What each head is, for messages.
HEAD_NAMES = {
    'centerpoint': 'CenterHead (CenterPoint)',
    'anchor3d': 'anchor head (Anchor3DHead and its kind)',
    'detr': 'DETR-style reg_branches (DETR3D, BEVFormer, UniAD)',
}
#: The command that converts a checkpoint.
MIGRATE_CMD = 'python tools/migrate_checkpoint.py {src} {dst}'
#: Keys of a checkpoint dropped from the converted one.
DROPPED = ('optimizer', )


@dataclass
class Migration:
    """What :func:`migrate_checkpoint` did.

    Args:
        src (str): The checkpoint read.
        dst (str): The checkpoint written (when ``written``).
        convention (Convention): The source's convention and how it is
            known.
        head (str, optional): The converted head (:data:`HEADS`).
        prefix (str): Its state-dict prefix.
        rows (list[tuple[str, str]]): ``(key, operation)`` per change.
        config_lines (list[str]): Lines the 1.x config must carry.
        config_checked (str, optional): The ``--config`` checked.
        dropped (list[str]): Top-level keys left out of ``dst``.
        written (bool): Whether ``dst`` was written.
        seconds (dict): Time to read, convert and write.
    """
    src: str
    dst: str
    convention: Convention
    head: Optional[str] = None
    prefix: str = ''
    rows: List[Tuple[str, str]] = field(default_factory=list)
    config_lines: List[str] = field(default_factory=list)
    config_checked: Optional[str] = None
    dropped: List[str] = field(default_factory=list)
    written: bool = False
    seconds: Dict[str, float] = field(default_factory=dict)

    def format(self) -> str:
        """The tool's report: the table (key, operation) and the config
        lines."""
        if not self.written:
            return (f'migrate_checkpoint: {self.src}: nothing to convert: '
                    f'{self.convention.reason}; its boxes are already in '
                    f'the 1.x convention. Nothing written; load {self.src} '
                    'itself.')
        width = max([len('key')] + [len(key) for key, _ in self.rows])
        lines = [
            f'migrate_checkpoint: {self.src} -> {self.dst}',
            f'from: the 0.x box convention ({self.convention.reason})',
            f'head: {HEAD_NAMES[self.head]} at {self.prefix or "(root)"}',
            '',
            f'{"key":<{width}}  operation',
            '-' * (width + 11),
        ]
        lines += [f'{key:<{width}}  {op}' for key, op in self.rows]
        lines.append('')
        if self.config_lines:
            checked = (f'{self.config_checked} carries them' if
                       self.config_checked else 'give the config these '
                       '--cfg-options keys, or pass --config to check it')
            lines.append(f'the 1.x config must carry ({checked}; rotations '
                         'and ranges as in the 0.x config):')
            lines += [f'  {line}' for line in self.config_lines]
        dropped = (f'; left out: {", ".join(self.dropped)} (its state is in '
                   'the old layout: use the result with load_from, not '
                   '--resume)' if self.dropped else '')
        lines.append(
            f'{len(self.rows)} tensors converted; '
            f"meta['box_convention'] = {NEW_CONVENTION!r}{dropped}")
        lines.append('time: ' + ', '.join(
            f'{k} {v:.2f} s' for k, v in self.seconds.items()))
        return '\n'.join(lines)


def load_checkpoint_file(path: str) -> Dict[str, Any]:
    """Read a checkpoint as the Runner's ``load_from`` does (weights-only
    on torch >= 2.6, mmengine's own objects allowed).

    Returns:
        dict: ``{'state_dict': ..., 'meta': ..., ...}``; a file holding a
        bare state dict comes back as ``{'state_dict': it, 'meta': {}}``.

    Raises:
        FileNotFoundError: If ``path`` does not exist.
        ValueError: If it holds no state dict.
    """
    if not osp.isfile(path):
        raise FileNotFoundError(
            f'migrate_checkpoint: checkpoint {path!r} does not exist.')
    allow_mmengine_checkpoints()
    checkpoint = CheckpointLoader.load_checkpoint(path, map_location='cpu')
    if isinstance(checkpoint, dict) and isinstance(
            checkpoint.get('state_dict'), dict):
        return checkpoint
    if isinstance(checkpoint, dict) and checkpoint and all(
            isinstance(v, torch.Tensor) for v in checkpoint.values()):
        return {'state_dict': checkpoint, 'meta': {}}
    got = (f'keys {sorted(map(str, checkpoint))[:8]}' if isinstance(
        checkpoint, dict) else f'a {type(checkpoint).__name__}')
    raise ValueError(
        f"migrate_checkpoint: {path!r} holds {got}, not a checkpoint (a "
        "dict with 'state_dict', or a state dict).")


def find_heads(state_dict: Dict[str, torch.Tensor]) -> Dict[str, Any]:
    """The heads of :data:`HEADS` found in ``state_dict``, each with what
    its conversion takes (keys or prefixes)."""
    found = {
        'centerpoint': centerhead_keys(state_dict),
        'anchor3d': anchor_head_prefixes(state_dict),
        'detr': reg_branch_keys(state_dict),
    }
    return {name: what for name, what in found.items() if what}


def unconverted_note(checkpoint: Any, filename: str) -> Optional[str]:
    """One line for a run that loads a checkpoint of a box head this tool
    converts, written by mmdet3d before 1.0.0rc0 and not converted
    (``load_from``, ``--resume``, ``tools/test.py``), else None.

    Args:
        checkpoint (dict): The loaded checkpoint.
        filename (str): Where it was loaded from.

    Returns:
        str | None: The warning, naming the command that converts it.
    """
    if not isinstance(checkpoint, dict) or not isinstance(
            checkpoint.get('state_dict'), dict):
        return None
    meta = checkpoint.get('meta')
    meta = meta if isinstance(meta, dict) else {}
    convention = from_meta(meta)
    ambiguous = convention.name is None and mmdet3d_version(meta) is not None
    # The meta first: a 1.x checkpoint (every resume) needs no key scan.
    if (convention.name != 'old' and not ambiguous) or not find_heads(
            checkpoint['state_dict']):
        return None
    stem = str(filename)
    stem = stem[:-4] if stem.endswith('.pth') else stem
    command = MIGRATE_CMD.format(src=filename, dst=stem + '_1x.pth')
    maybe = ''
    if ambiguous:
        maybe = ' (unless it was trained on the v1.0.0.dev0 branch)'
        command += ' --from-convention old'
    return (f'checkpoint {filename} is in the mmdet3d 0.x box convention'
            f'{maybe}: {convention.reason}; 1.x reads its boxes (w, l, h, '
            "θ) as (l, w, h, θ'), so sizes come out swapped and yaws "
            f'turned; convert it first: {command}')


def _head_keys(state_dict) -> str:
    modules = []
    for key in state_dict:
        if 'head' in key.split('.')[0]:
            module = '.'.join(key.split('.')[:3])
            if module not in modules:
                modules.append(module)
    shown = modules[:10] or list(state_dict)[:10]
    return ', '.join(shown) + (' ...' if len(modules) > 10 else '')


def choose_head(state_dict: Dict[str, torch.Tensor],
                head: Optional[str]) -> Tuple[str, Any]:
    """The head to convert: ``head`` if given, else the one found.

    Raises:
        ValueError: If ``head`` is not there, none is found (naming the
            keys found), or several are (pass ``--head``).
    """
    found = find_heads(state_dict)
    if head is not None:
        if head not in HEADS:
            raise ValueError(f'migrate_checkpoint: --head {head!r}: choose '
                             f'one of {", ".join(HEADS)}.')
        if head not in found:
            raise ValueError(
                f'migrate_checkpoint: --head {head}: the state dict has no '
                f'{HEAD_NAMES[head]}; its head keys: '
                f'{_head_keys(state_dict)}.')
        return head, found[head]
    if not found:
        raise ValueError(
            'migrate_checkpoint: the state dict holds no head this tool '
            f'converts ({"; ".join(HEAD_NAMES.values())}); its head keys: '
            f'{_head_keys(state_dict)}.')
    if len(found) > 1:
        raise ValueError(
            'migrate_checkpoint: the state dict holds '
            f'{" and ".join(HEAD_NAMES[n] for n in found)}; name the one '
            f'with the boxes with --head {"|".join(found)}.')
    return next(iter(found.items()))


def _source_convention(meta: Dict[str, Any], old_model: Any, head: str,
                       what: Any, from_convention: Optional[str]
                       ) -> Convention:
    told = from_meta(meta)
    if told.name == 'converted':
        return told
    if from_convention is not None:
        return Convention(from_convention,
                          f'--from-convention {from_convention}; '
                          f'{told.reason}')
    if told.name is not None:
        return told
    if head == 'anchor3d' and isinstance(old_model, dict):
        for prefix in what:
            evidence = from_anchor_config(find_head(old_model, prefix))
            if evidence is not None:
                return Convention(evidence.name,
                                  f'{told.reason}; its config: '
                                  f'{evidence.reason}')
    raise ValueError(
        f'migrate_checkpoint: cannot tell the box convention: '
        f'{told.reason}, and its config does not say; pass '
        '--from-convention old (trained with mmdet3d < 1.0.0rc0, (w, l, h, '
        'θ) boxes) or --from-convention new.')


def _new_head(config: str, prefix: str) -> dict:
    # The config loader (and with a 0.x config, mmdet3d's model registry)
    # loads only for --config: a conversion alone needs torch and mmengine.
    from ..config.loading import read_config
    cfg, _ = read_config(config)
    head = find_head(cfg.get('model'), prefix)
    if head is None:
        raise ValueError(
            f"migrate_checkpoint: {config} has no model.{prefix.rstrip('.')}"
            ' (the checkpoint\'s head is there).')
    return head


def _check_centerpoint(head: dict, state_dict, keys, config: str) -> None:
    if head.get('type') != 'CenterHead':
        raise ValueError(
            f'migrate_checkpoint: {config}: the head is a '
            f"{head.get('type')!r}, the checkpoint holds a CenterHead.")
    tasks = head.get('tasks') or []
    prefix = centerhead_prefix(keys)
    found = sorted({k.split('task_heads.')[1].split('.')[0] for k in keys})
    if len(found) != len(tasks):
        raise ValueError(
            f'migrate_checkpoint: {config} has {len(tasks)} tasks, the '
            f'checkpoint {len(found)} task heads: the shapes do not fit the '
            'config.')
    for t, task in enumerate(tasks):
        heatmap = re.compile(rf'^{re.escape(prefix)}task_heads\.{t}\.'
                             r'(?:task_head\.)?heatmap\.(\d+)\.bias$')
        layers = {int(m[1]): k for k in state_dict
                  for m in [heatmap.match(k)] if m}
        classes = len(task.get('class_names', ()))
        got = state_dict[layers[max(layers)]].shape[0] if layers else None
        if got != classes:
            raise ValueError(
                f'migrate_checkpoint: {config}: task {t} has {classes} '
                f"classes, the checkpoint's heatmap of task {t} "
                f'{got or "none"}: the shapes do not fit the config.')


def _check_detr(head: dict, state_dict, keys, config: str) -> None:
    code_size = head.get('code_size', 10)
    for key in keys:
        if state_dict[key].shape[0] != code_size:
            raise ValueError(
                f'migrate_checkpoint: {config}: code_size is {code_size}, '
                f'{key} has {state_dict[key].shape[0]} rows: the shapes do '
                'not fit the config.')


def _convert(migration: Migration, state_dict, head: str, what: Any,
             old_model: Any, config: Optional[str]) -> None:
    if head == 'centerpoint':
        migration.prefix = centerhead_prefix(what)
        if config:
            _check_centerpoint(_new_head(config, migration.prefix),
                               state_dict, what, config)
        migration.rows = convert_centerhead(state_dict, what)
    elif head == 'detr':
        migration.prefix = detr_prefix(what)
        if config:
            _check_detr(_new_head(config, migration.prefix), state_dict,
                        what, config)
        migration.rows = convert_reg_branches(state_dict, what)
    else:
        migration.prefix = ', '.join(what)
        for prefix in what:
            migration.rows += _convert_anchor_head(
                migration, state_dict, prefix, old_model, config)
    if config:
        migration.config_checked = config


def _convert_anchor_head(migration: Migration, state_dict, prefix: str,
                         old_model: Any, config: Optional[str]):
    path = 'model.' + prefix.rstrip('.')
    head_cfg = find_head(old_model, prefix) if isinstance(
        old_model, dict) else None
    if head_cfg is None:
        raise ValueError(
            f"migrate_checkpoint: the checkpoint's meta holds no 0.x config "
            f'with {path} (meta[\'config\']), so the anchor sizes and '
            'dir_offset its anchor head was trained with are unknown; an '
            'anchor head is converted only from a checkpoint that carries '
            'its config.')
    old: AnchorHead = read_anchor_head(head_cfg, path, 'old')
    check_rotations(old)
    check_shapes(old, state_dict, prefix, "the checkpoint's 0.x config")
    if config:
        new = read_anchor_head(_new_head(config, prefix), path, 'new')
        swap = check_new_config(old, new, config)
        check_shapes(new, state_dict, prefix, config)
        offset = new.dir_offset
    else:
        offset = new_offset_for(old)
        swap = direction_swap(old.dir_offset, offset)
    migration.config_lines += config_lines(old, offset)
    return convert_anchor_head(state_dict, prefix, old, swap)


def migrate_checkpoint(src: str,
                       dst: str,
                       config: Optional[str] = None,
                       from_convention: Optional[str] = None,
                       head: Optional[str] = None) -> Migration:
    """Convert the box head of checkpoint ``src`` and write ``dst``.

    Args:
        src (str): The 0.x checkpoint.
        dst (str): Where to write the converted one (atomically).
        config (str, optional): The 1.x config the result is for: checked
            (an anchor head's sizes and ``dir_offset``, the shapes).
        from_convention (str, optional): ``'old'`` or ``'new'`` where the
            checkpoint does not tell.
        head (str, optional): One of :data:`HEADS`, where the state dict
            holds several.

    Returns:
        Migration: What was done (``written`` False when there was nothing
        to convert).

    Raises:
        FileNotFoundError: If ``src`` or ``config`` does not exist.
        ValueError: For a head it does not know, a convention it cannot
            tell, or shapes or a config that do not fit.
    """
    if config is not None and not osp.isfile(config):
        raise FileNotFoundError(
            f'migrate_checkpoint: --config {config!r} does not exist.')
    start = time.perf_counter()
    checkpoint = load_checkpoint_file(src)
    read = time.perf_counter()
    meta = checkpoint.get('meta') if isinstance(checkpoint.get('meta'),
                                                dict) else {}
    state_dict = checkpoint['state_dict']
    told = from_meta(meta)
    if told.name == 'converted' or (told.name == 'new'
                                    and from_convention is None):
        return Migration(src, dst, told, seconds={'read': read - start})
    name, what = choose_head(state_dict, head)
    text = meta.get('config')
    old_cfg = read_config_text(text) if isinstance(text, str) else {}
    old_model = old_cfg.get('model')
    convention = _source_convention(meta, old_model, name, what,
                                    from_convention)
    migration = Migration(src, dst, convention, head=name,
                          seconds={'read': read - start})
    if convention.name != 'old':
        return migration
    # A copy that keeps the state dict's ``_metadata``: mmdet3d's sparse
    # convolutions read their layout version from it when they load (a
    # plain dict would have every spconv weight permuted on load).
    new_state = copy.copy(state_dict)
    _convert(migration, new_state, name, what, old_model, config)
    converted = time.perf_counter()
    out = {k: v for k, v in checkpoint.items() if k not in DROPPED}
    migration.dropped = [k for k in DROPPED if k in checkpoint]
    out['state_dict'] = new_state
    out['meta'] = dict(meta, box_convention=NEW_CONVENTION,
                       box_convention_migration=dict(
                           source=osp.basename(src),
                           source_convention=convention.reason,
                           head=name,
                           changes=[dict(key=k, operation=op)
                                    for k, op in migration.rows],
                           config_lines=list(migration.config_lines),
                           config_checked=migration.config_checked,
                           tool='tools/migrate_checkpoint.py'))
    buffer = io.BytesIO()
    torch.save(out, buffer)
    atomic_write(buffer.getvalue(), dst)
    migration.written = True
    migration.seconds.update(convert=converted - read,
                             write=time.perf_counter() - converted)
    return migration
