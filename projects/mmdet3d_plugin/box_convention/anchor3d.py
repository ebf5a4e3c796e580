"""Anchor heads (``Anchor3DHead``: PointPillars, SECOND, the VoxelNet-style
configs; ``FreeAnchor3DHead``, ``PartA2RPNHead``) across the box
convention change: the weights and the config lines that go with them.

The head's 1x1 convolutions predict, at each place, for anchor
``a = s * R + r`` (size ``s``, rotation ``r`` of ``R = 2``, rotations
``[0, 1.57]``): class ``c`` in channel ``a * K + c`` of ``conv_cls``,
delta ``k`` of the code ``(x, y, z, size0, size1, h, yaw[, vx, vy])`` in
channel ``a * C + k`` of ``conv_reg``, and direction bin ``b`` in channel
``a * 2 + b`` of ``conv_dir_cls`` (``Anchor3DRangeGenerator``'s anchor
order, ``Anchor3DHead._init_layers``). mmdet3d's ``DeltaXYZWLHRBBoxCoder``
decodes the same way in 0.x and 1.x. Under ``θ' = -θ - π/2`` the 0.x
anchor of rotation 0 is the 1.x anchor of rotation π/2 and the other way
round, with its sizes swapped (the config's ``sizes`` (w, l, h) ->
(l, w, h)). So:

* ``conv_cls``, ``conv_reg``, ``conv_dir_cls``: the two rotation slots of
  every size swap places;
* ``conv_reg``: deltas 3 <-> 4 swap, delta 6 (yaw) is negated and its bias
  gets ``π/2 - r0 - r1`` added (0.000796 for rotations ``[0, 1.57]``,
  which are not exactly 0 and π/2: without it every yaw would be
  0.0008 rad off);
* ``conv_dir_cls``: the direction bins stay or swap, as the two configs'
  ``dir_offset`` say (:func:`direction_swap`).

The direction classifier learnt ``b = floor(((θ - o) mod 2π) / π)`` for
the 0.x ``dir_offset`` ``o`` (0.x computed targets with a limit offset of
0 whatever the config said) and 1.x decodes with its ``o'`` and
``dir_limit_offset=0``. ``θ' - o' = -(θ - o) + c`` with
``c = -o - π/2 - o'``: for ``c = π`` the bins stay (``b' = b``), for
``c = 0`` they swap (``b' = 1 - b``), for anything else no permutation of
channels gives the 0.x yaw (at 1.x's shipped nuScenes ``-0.7854`` after
0.x's ``0.7854``, about half the boxes would point backwards). So the new
config must carry a ``dir_offset`` that fits, and the tool writes it:
KITTI-style heads (0.x ``dir_offset=0``, whose 0.x evaluation subtracted
π) keep 1.x's default ``-π/2`` with the bins swapped; nuScenes, Lyft and
Waymo heads (0.x ``0.7854``) need ``π/2 - 0.7854`` (bins kept) or
``-0.7854 - π/2`` (bins swapped). The map is its own inverse.
"""
import math
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple

import torch

from .old_config import NOT_LITERAL

#: Head types whose layers and anchors are converted here.
HEAD_TYPES = ('Anchor3DHead', 'FreeAnchor3DHead', 'PartA2RPNHead')
#: The head's layers: ``conv_cls``, ``conv_reg`` and (optional)
#: ``conv_dir_cls``.
LAYERS = ('conv_cls', 'conv_reg', 'conv_dir_cls')
#: Anchor rotations the conversion knows: about 0 and about π/2.
ROTATION_TOLERANCE = 0.01
#: How close ``c`` must be to 0 or π (radians); configs round π/4 to
#: 0.7854 (3.7e-6 off).
OFFSET_TOLERANCE = 1e-3
#: ``Anchor3DHead``'s defaults of each convention (0.x: v0.18.1; 1.x:
#: v1.0.0rc0 on).
DEFAULTS = {
    'old': dict(dir_offset=0.0, dir_limit_offset=1,
                sizes=[[1.6, 3.9, 1.56]]),
    'new': dict(dir_offset=-math.pi / 2, dir_limit_offset=0,
                sizes=[[3.9, 1.6, 1.56]]),
}
DEFAULT_ROTATIONS = [0, 1.57]
DEFAULT_CODE_SIZE = 7


@dataclass
class AnchorHead:
    """What the conversion needs of an anchor head's config.

    Args:
        path (str): Its config path, e.g. ``'model.bbox_head'``.
        type (str): Its type.
        generator (str): ``anchor_generator.type``.
        ranges (list): ``anchor_generator.ranges``.
        sizes (list[list[float]]): ``anchor_generator.sizes``.
        rotations (list[float]): ``anchor_generator.rotations``.
        dir_offset (float): ``dir_offset``.
        dir_limit_offset (float): ``dir_limit_offset``.
        use_direction_classifier (bool): Whether it has ``conv_dir_cls``.
        code_size (int): ``bbox_coder.code_size``.
        num_classes (int): Channels per anchor of ``conv_cls``.
    """
    path: str
    type: str
    generator: str
    ranges: list
    sizes: List[List[float]]
    rotations: List[float]
    dir_offset: float
    dir_limit_offset: float
    use_direction_classifier: bool
    code_size: int
    num_classes: int

    @property
    def num_anchors(self) -> int:
        """Anchors at each place (``num_base_anchors``)."""
        return len(self.sizes) * len(self.rotations)


def anchor_head_prefixes(state_dict: Dict[str, torch.Tensor]) -> List[str]:
    """State-dict prefixes of the anchor heads (``'bbox_head.'``): modules
    with ``conv_cls`` and ``conv_reg`` weights of 1x1 convolutions."""
    prefixes = []
    for key, value in state_dict.items():
        if key.endswith('conv_reg.weight') and value.dim() == 4:
            prefix = key[:-len('conv_reg.weight')]
            if f'{prefix}conv_cls.weight' in state_dict:
                prefixes.append(prefix)
    return prefixes


def _number(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f'migrate_checkpoint: {where} is {value!r}, not a '
                         'number.')
    return float(value)


def _sizes(value: Any, where: str) -> List[List[float]]:
    if value is NOT_LITERAL or not isinstance(value, (list, tuple)):
        raise ValueError(f'migrate_checkpoint: {where} is {value!r}, not a '
                         'list of anchor sizes.')
    flat = [_number(v, where) for v in _flatten(value)]
    if len(flat) % 3:
        raise ValueError(f'migrate_checkpoint: {where} has {len(flat)} '
                         'numbers, not sizes of three.')
    return [flat[i:i + 3] for i in range(0, len(flat), 3)]


def _flatten(value) -> list:
    if isinstance(value, (list, tuple)):
        return [x for item in value for x in _flatten(item)]
    return [value]


def read_anchor_head(head: dict, path: str, convention: str) -> AnchorHead:
    """Read an anchor head's config dict, with its convention's defaults.

    Args:
        head (dict): The head's config (a 0.x checkpoint's config text
            read by :func:`.old_config.read_config_text`, or a loaded 1.x
            config).
        path (str): Its config path, for messages.
        convention (str): ``'old'`` or ``'new'`` (which defaults apply).

    Returns:
        AnchorHead: The settings.

    Raises:
        ValueError: For a head type not converted here, or values that are
            not numbers.
    """
    kind = head.get('type')
    if kind not in HEAD_TYPES:
        raise ValueError(
            f'migrate_checkpoint: {path} is a {kind!r}; the anchor '
            f'conversion knows {", ".join(HEAD_TYPES)} (one set of anchors '
            'for the whole head).')
    defaults = DEFAULTS[convention]
    generator = head.get('anchor_generator') or {}
    sizes = _sizes(generator.get('sizes', defaults['sizes']),
                   f'{path}.anchor_generator.sizes')
    rotations = [
        _number(r, f'{path}.anchor_generator.rotations')
        for r in _flatten(generator.get('rotations', DEFAULT_ROTATIONS))
    ]
    coder = head.get('bbox_coder') or {}
    loss_cls = head.get('loss_cls') or {}
    num_classes = int(_number(head.get('num_classes'),
                              f'{path}.num_classes'))
    if not loss_cls.get('use_sigmoid', False):
        num_classes += 1  # the softmax's background channel
    return AnchorHead(
        path=path,
        type=kind,
        generator=str(generator.get('type', 'Anchor3DRangeGenerator')),
        ranges=[[_number(v, f'{path}.anchor_generator.ranges')
                 for v in _flatten(r)]
                for r in generator.get('ranges', [])],
        sizes=sizes,
        rotations=rotations,
        dir_offset=_number(head.get('dir_offset', defaults['dir_offset']),
                           f'{path}.dir_offset'),
        dir_limit_offset=_number(
            head.get('dir_limit_offset', defaults['dir_limit_offset']),
            f'{path}.dir_limit_offset'),
        use_direction_classifier=bool(
            head.get('use_direction_classifier', True)),
        code_size=int(_number(coder.get('code_size', DEFAULT_CODE_SIZE),
                              f'{path}.bbox_coder.code_size')),
        num_classes=num_classes)


def check_rotations(head: AnchorHead) -> None:
    """The two rotations the conversion swaps: about 0, then about π/2."""
    rotations = head.rotations
    if len(rotations) != 2 or abs(rotations[0]) > ROTATION_TOLERANCE or \
            abs(rotations[1] - math.pi / 2) > ROTATION_TOLERANCE:
        raise ValueError(
            f'migrate_checkpoint: {head.path}.anchor_generator.rotations is '
            f'{rotations}; the anchor conversion swaps the rotations 0 and '
            'π/2 ([0, 1.57], every mmdet3d config): other rotations are not '
            'converted.')


def check_shapes(head: AnchorHead, state_dict: Dict[str, torch.Tensor],
                 prefix: str, config: str) -> None:
    """The layers' output channels are those of ``head``'s anchors.

    Raises:
        ValueError: Naming the layer, its shape and what the config gives.
    """
    anchors = head.num_anchors
    expected = {
        'conv_cls': (anchors * head.num_classes,
                     f'{anchors} anchors x {head.num_classes} classes'),
        'conv_reg': (anchors * head.code_size,
                     f'{anchors} anchors x code size {head.code_size}'),
    }
    if head.use_direction_classifier:
        expected['conv_dir_cls'] = (anchors * 2, f'{anchors} anchors x 2')
    for layer, (channels, why) in expected.items():
        key = f'{prefix}{layer}.weight'
        if key not in state_dict:
            raise ValueError(
                f'migrate_checkpoint: {config} has {head.path} with '
                f'{layer}, the checkpoint has no {key}.')
        got = state_dict[key].shape[0]
        if got != channels:
            raise ValueError(
                f'migrate_checkpoint: {key} has {got} output channels, '
                f'{config} gives {channels} ({why}: {len(head.sizes)} '
                f'sizes x {len(head.rotations)} rotations); its shape '
                f'{tuple(state_dict[key].shape)} does not fit the config.')


def _gap(c: float) -> Tuple[float, float]:
    """Distances of ``c`` (mod 2π) to 0 and to π."""
    c = c % (2 * math.pi)
    return min(c, 2 * math.pi - c), abs(c - math.pi)


def direction_swap(old_offset: float, new_offset: float) -> Optional[bool]:
    """Whether the direction bins swap between the two ``dir_offset``s.

    Returns:
        bool | None: True (``b' = 1 - b``), False (``b' = b``), or None
        when no permutation gives the 0.x directions.
    """
    to_zero, to_pi = _gap(-old_offset - math.pi / 2 - new_offset)
    if to_zero < OFFSET_TOLERANCE:
        return True
    if to_pi < OFFSET_TOLERANCE:
        return False
    return None


def fitting_offsets(old_offset: float) -> Tuple[float, float]:
    """The 1.x ``dir_offset`` that keeps the bins, and the one that swaps
    them, after 0.x ``old_offset``; each in ``[-π, π)``."""
    def wrapped(x):
        return x - math.floor(x / (2 * math.pi) + 0.5) * 2 * math.pi
    return (wrapped(math.pi / 2 - old_offset),
            wrapped(-old_offset - math.pi / 2))


def new_offset_for(old: AnchorHead) -> float:
    """The ``dir_offset`` the tool writes: 1.x's default ``-π/2`` when it
    fits (KITTI-style heads), else the one that keeps the bins."""
    default = DEFAULTS['new']['dir_offset']
    if direction_swap(old.dir_offset, default) is not None:
        return default
    return fitting_offsets(old.dir_offset)[0]


def _sizes_text(sizes: Sequence[Sequence[float]]) -> str:
    return '[' + ', '.join('[' + ', '.join(repr(float(v)) for v in size) +
                           ']' for size in sizes) + ']'


def new_sizes(old: AnchorHead) -> List[List[float]]:
    """The 1.x anchor sizes: each 0.x (w, l, h) as (l, w, h)."""
    return [[size[1], size[0], size[2]] for size in old.sizes]


def config_lines(old: AnchorHead, new_offset: float) -> List[str]:
    """The lines the 1.x config must carry for the converted weights (its
    ``--cfg-options`` keys), rotations and ranges as in the 0.x config."""
    return [
        f'{old.path}.anchor_generator.type={old.generator!r}',
        f'{old.path}.anchor_generator.sizes={_sizes_text(new_sizes(old))}',
        f'{old.path}.dir_offset={new_offset!r}',
        f'{old.path}.dir_limit_offset=0',
    ]


def check_new_config(old: AnchorHead, new: AnchorHead, config: str) -> bool:
    """Check a 1.x config's anchor head against the 0.x one.

    Args:
        old (AnchorHead): The 0.x head (the checkpoint's config).
        new (AnchorHead): The 1.x head (``--config``).
        config (str): The 1.x config file, for messages.

    Returns:
        bool: Whether the direction bins swap.

    Raises:
        ValueError: Naming the line to change.
    """
    want = new_sizes(old)
    if len(new.sizes) != len(want) or any(
            abs(a - b) > 1e-4 * max(1.0, abs(b))
            for got, size in zip(new.sizes, want) for a, b in zip(got, size)):
        raise ValueError(
            f'migrate_checkpoint: {config}: {new.path}.anchor_generator.'
            f'sizes is {_sizes_text(new.sizes)}; the converted weights need '
            f'the 0.x sizes as (l, w, h): set {new.path}.anchor_generator.'
            f'sizes={_sizes_text(want)}.')
    if new.generator != old.generator:
        raise ValueError(
            f'migrate_checkpoint: {config}: {new.path}.anchor_generator.type '
            f'is {new.generator!r}, the 0.x config has {old.generator!r} '
            f"(the anchors' centres differ): set {new.path}.anchor_generator."
            f'type={old.generator!r}.')
    new_ranges, old_ranges = _flatten(new.ranges), _flatten(old.ranges)
    if len(new_ranges) != len(old_ranges) or any(
            abs(a - b) > 1e-6 for a, b in zip(new_ranges, old_ranges)):
        raise ValueError(
            f'migrate_checkpoint: {config}: {new.path}.anchor_generator.'
            f'ranges is {new.ranges}, the 0.x config has {old.ranges}: set '
            f'{new.path}.anchor_generator.ranges={old.ranges}.')
    if len(new.rotations) != len(old.rotations) or any(
            abs(a - b) > 1e-6 for a, b in zip(new.rotations, old.rotations)):
        raise ValueError(
            f'migrate_checkpoint: {config}: {new.path}.anchor_generator.'
            f'rotations is {new.rotations}, the 0.x config has '
            f'{old.rotations}: set {new.path}.anchor_generator.rotations='
            f'{old.rotations}.')
    if new.dir_limit_offset != 0:
        raise ValueError(
            f'migrate_checkpoint: {config}: {new.path}.dir_limit_offset is '
            f'{new.dir_limit_offset:g}; 1.x trains and decodes directions '
            f'with 0: set {new.path}.dir_limit_offset=0.')
    swap = direction_swap(old.dir_offset, new.dir_offset)
    if swap is None:
        keep, swapped = fitting_offsets(old.dir_offset)
        raise ValueError(
            f'migrate_checkpoint: {config}: {new.path}.dir_offset is '
            f'{new.dir_offset:g}; after the 0.x dir_offset '
            f'{old.dir_offset:g} no permutation of the direction channels '
            'gives the 0.x yaws (about half the boxes would point '
            f'backwards): set {new.path}.dir_offset={keep!r} (bins kept) or '
            f'{swapped!r} (bins swapped).')
    if new.use_direction_classifier != old.use_direction_classifier:
        raise ValueError(
            f'migrate_checkpoint: {config}: {new.path}.'
            f'use_direction_classifier is {new.use_direction_classifier}, '
            f'the 0.x config has {old.use_direction_classifier}: set it to '
            f'{old.use_direction_classifier}.')
    return swap


def channel_order(num_anchors: int, per_anchor: int,
                  inner: Sequence[int]) -> List[int]:
    """Output channel ``a' * per_anchor + k`` of the new layer is channel
    ``a * per_anchor + inner[k]`` of the old one, ``a`` the anchor of the
    same size at the other rotation."""
    order = []
    for anchor in range(num_anchors):
        size, rotation = divmod(anchor, 2)
        source = size * 2 + 1 - rotation
        order += [source * per_anchor + k for k in inner]
    return order


def convert_anchor_head(state_dict: Dict[str, torch.Tensor], prefix: str,
                        head: AnchorHead,
                        swap_bins: bool) -> List[Tuple[str, str]]:
    """Convert the anchor head under ``prefix`` of ``state_dict`` (new
    tensors).

    Args:
        state_dict (dict): The state dict to change.
        prefix (str): The head's prefix, e.g. ``'bbox_head.'``.
        head (AnchorHead): Its settings (the 0.x config's; the shapes
            checked with :func:`check_shapes`).
        swap_bins (bool): Whether the direction bins swap
            (:func:`direction_swap`).

    Returns:
        list[tuple[str, str]]: ``(key, operation)`` of each change.
    """
    anchors = head.num_anchors
    classes, code = head.num_classes, head.code_size
    yaw_shift = math.pi / 2 - head.rotations[0] - head.rotations[1]
    code_order = list(range(code))
    code_order[3], code_order[4] = 4, 3
    rows = []
    slots = 'rotation slots 0 <-> 1 of each anchor size'
    plan = {
        'conv_cls': (channel_order(anchors, classes, range(classes)), slots),
        'conv_reg': (channel_order(anchors, code, code_order),
                     f'{slots}; deltas 3 <-> 4; delta 6 negated'),
    }
    if head.use_direction_classifier:
        plan['conv_dir_cls'] = (
            channel_order(anchors, 2, [1, 0] if swap_bins else [0, 1]),
            slots + ('; direction bins swapped' if swap_bins else
                     '; direction bins kept'))
    for layer, (order, operation) in plan.items():
        for param in ('weight', 'bias'):
            key = f'{prefix}{layer}.{param}'
            if key not in state_dict:
                continue
            old = state_dict[key]
            new = old[order]
            what = operation
            if layer == 'conv_reg':
                sign = old.new_ones(old.shape[0])
                sign[6::code] = -1
                new = new * sign.reshape(-1, *([1] * (old.dim() - 1)))
                if param == 'bias':
                    new[6::code] += yaw_shift
                    what += f', its bias + {yaw_shift:.6f} (π/2 - ' \
                        f'{head.rotations[0]:g} - {head.rotations[1]:g})'
            state_dict[key] = new
            rows.append((key, what))
    return rows
