"""The train dataloader config, made one that resumes exactly."""
import copy
from typing import Optional, Tuple

from .sampler import REPLACEABLE_SAMPLERS

SAMPLER_TYPE = 'mmdet3d.ResumableSampler'
_KEPT = {False: ('shuffle', 'seed', 'round_up'), True: ('shuffle', 'seed')}


def resumable_dataloader(dataloader: dict,
                         stream: bool = False) -> Tuple[dict, Optional[str]]:
    """``dataloader`` with :class:`ResumableSampler` in place of
    mmengine's sampler.

    ``DefaultSampler`` and ``InfiniteSampler`` are replaced, keeping their
    arguments; the dataset is kept as it is (the loops seed its samples
    once it is built: ``seeded_items``). The input is not changed.

    Args:
        dataloader (dict): A ``train_dataloader`` config.
        stream (bool): For an iteration-based loop: the sampler never ends
            (a ``DefaultSampler`` there reshuffles at each pass, as it
            would, without the DataLoader restarting). Defaults to False.

    Returns:
        tuple[dict, str | None]: The new config, and None; or the input
        unchanged and why it cannot resume exactly (another sampler).
    """
    sampler = dict(dataloader.get('sampler') or {})
    kind = sampler.get('type')
    if kind in ('ResumableSampler', SAMPLER_TYPE):
        new = copy.deepcopy(dataloader)
        if stream:
            new['sampler']['infinite'] = True
    elif isinstance(kind, (str, type)) and kind in REPLACEABLE_SAMPLERS:
        infinite = stream or REPLACEABLE_SAMPLERS[kind]
        kept = {k: sampler[k] for k in _KEPT[infinite] if k in sampler}
        new = copy.deepcopy(dataloader)
        new['sampler'] = dict(type=SAMPLER_TYPE, infinite=infinite, **kept)
    else:
        name = getattr(kind, '__name__', kind)
        return dataloader, (
            f'train_dataloader.sampler is {name!r}, not DefaultSampler or '
            'InfiniteSampler, so a resume inside an epoch cannot skip to '
            'the position it stopped at and the epoch is replayed from its '
            "start. Fix: use sampler=dict(type='DefaultSampler', "
            "shuffle=True) (or 'InfiniteSampler'), or checkpoint at epoch "
            'ends')
    return new, None
