"""Samples that fail to load, replaced by samples chosen from their data
position, so that the run's data stays a function of its positions.

A sample whose loading raises a data error (a missing, truncated or
unreadable file: :mod:`.errors`), or whose points are not finite, is
recorded and replaced. The replacement's index and random state are
functions of the failed sample's ``(seed, epoch, position)`` and of the
attempt, never of the worker, the process or what was loaded before: a
resumed or restarted run, any ``num_workers`` and any world size make the
same replacements (given the same files). The whole sample is replaced,
also when only one of its sweeps is missing: dropping the sweep would
train on a sample with fewer points and other time lags than every other
one, and changing mmdet3d's transform for it would change every sample's
draws; a replaced sample is a whole, ordinary sample.
"""
import json
import os
import os.path as osp
from typing import Any, Optional, Tuple

import numpy as np
import torch

from ...failures.exceptions import BadSampleError
from ...datasets.wrappers import walk_datasets
from .errors import (DATA_ERRORS, describe, error_text, failed_file,
                     failed_sample, sample_name)

#: Tag mixed into a replacement's seeds (samples use ``(seed, epoch,
#: position)`` and the main process its own tag).
REPLACE_TAG = 1 << 41
#: Replacements tried for one position before the run stops.
MAX_ATTEMPTS = 32


def _seeds(key) -> Tuple[int, ...]:
    """The integers a key's replacements are derived from."""
    if hasattr(key, 'position'):
        return (key.seed % 2**63, key.epoch, key.position)
    return (int(key), )


def replacement(key, attempt: int, size: int) -> Tuple[int, int]:
    """The index and the seed of the ``attempt``-th replacement of sample
    ``key`` (a ``SampleKey`` or a plain index) in a dataset of ``size``.

    Args:
        key (int): The failed sample's key.
        attempt (int): 0 for the first replacement.
        size (int): ``len(dataset)``.

    Returns:
        tuple[int, int]: The index to load and the seed to load it with.
    """
    words = np.random.SeedSequence(
        [*_seeds(key), REPLACE_TAG, attempt]).generate_state(3, np.uint32)
    seed = (int(words[1]) << 31) ^ int(words[2])
    return int(words[0]) % size, seed


def nonfinite_count(sample: Any) -> int:
    """How many values of a loaded sample's points (``inputs['points']``)
    are NaN or Inf; 0 for a sample without points."""
    inputs = sample.get('inputs') if isinstance(sample, dict) else None
    points = inputs.get('points') if isinstance(inputs, dict) else None
    if isinstance(points, torch.Tensor):
        return int(points.numel() - torch.isfinite(points).sum())
    if isinstance(points, np.ndarray):
        return int(points.size - np.isfinite(points).sum())
    return 0


def _info_of(dataset, sample_idx) -> Optional[dict]:
    """The info of ``sample_idx`` in the innermost dataset (its
    ``get_data_info``), or None."""
    inner = list(walk_datasets(dataset, concat=False))[-1]
    if not hasattr(inner, 'get_data_info') or not isinstance(
            sample_idx, int) or not 0 <= sample_idx < len(inner):
        return None
    info = inner.get_data_info(sample_idx)
    return info if info.get('sample_idx', sample_idx) == sample_idx else None


def nonfinite_file(dataset, sample: Any) -> Tuple[Optional[str], dict]:
    """The file of a sample with non-finite points that holds them (its key
    frame or a sweep, read again) and what names the sample."""
    samples = sample.get('data_samples') if isinstance(sample, dict) else None
    meta = dict(getattr(samples, 'metainfo', {}) or {})
    info = _info_of(dataset, meta.get('sample_idx'))
    named = sample_name(info if info is not None else meta)
    paths = [named.get('lidar_path')]
    for sweep in (info or {}).get('lidar_sweeps') or ():
        paths.append((sweep.get('lidar_points') or {}).get('lidar_path'))
    for path in paths:
        if path and osp.isfile(path) and not np.isfinite(
                np.fromfile(path, dtype=np.float32)).all():
            return path, named
    return named.get('lidar_path'), named


class SampleReplacer:
    """Loads a sample, replacing it while it fails, and records each
    failure as one JSON line of ``<records_dir>/rank<R>-<pid>.jsonl`` (one
    file per process: DataLoader workers write their own).

    Args:
        records_dir (str): Folder of the records (the work dir's
            ``bad_samples/``).
        rank (int): The process's rank.
        check_points (bool): Whether samples with non-finite points are
            replaced too. Defaults to True.
    """

    def __init__(self, records_dir: str, rank: int,
                 check_points: bool = True) -> None:
        self.records_dir = records_dir
        self.rank = rank
        self.check_points = check_points

    def load(self, dataset, key, seed_with) -> Any:
        """``dataset[key]``, or the first replacement that loads.

        Args:
            dataset: The dataset the DataLoader reads.
            key (int): The sample's key (``SampleKey`` or index); its own
                random state is already set.
            seed_with (callable): Seeds the process's random state from an
                integer (for the replacements).

        Returns:
            The sample, or its replacement.

        Raises:
            BadSampleError: If :data:`MAX_ATTEMPTS` replacements failed.
        """
        index = int(key)
        for attempt in range(MAX_ATTEMPTS + 1):
            sample, failure = self._try(dataset, index)
            if failure is None:
                return sample
            index, seed = replacement(key, attempt, len(dataset))
            self._record(key, failure, index)
            seed_with(seed)
        raise BadSampleError(
            f'bad samples: {MAX_ATTEMPTS} replacements of position '
            f'{getattr(key, "position", int(key))} failed to load, the last: '
            f'{describe(failure["file"], failure, failure["error"])}. Fix: '
            'check the data with tools/check_data.py CONFIG')

    def _try(self, dataset, index: int) -> Tuple[Any, Optional[dict]]:
        """The sample at ``index`` and None, or None and what failed
        (file, error, and what names the sample)."""
        try:
            sample = dataset[index]
        except DATA_ERRORS as exc:
            file = failed_file(exc)
            if file is None:
                raise
            return None, dict(failed_sample(exc), file=file, index=index,
                              error=error_text(exc))
        bad = nonfinite_count(sample) if self.check_points else 0
        if not bad:
            return sample, None
        file, named = nonfinite_file(dataset, sample)
        return None, dict(named, file=file, index=index,
                          error=f'{bad} non-finite point values')

    def _record(self, key, failure: dict, replaced_by: int) -> None:
        record = dict(failure, rank=self.rank,
                      epoch=getattr(key, 'epoch', None),
                      position=getattr(key, 'position', None),
                      replaced_by=replaced_by)
        os.makedirs(self.records_dir, exist_ok=True)
        path = osp.join(self.records_dir,
                        f'rank{self.rank}-{os.getpid()}.jsonl')
        with open(path, 'a') as stream:
            stream.write(json.dumps(record, default=str) + '\n')


def load_named(dataset, index: int) -> Any:
    """``dataset[index]`` where samples are not replaced: a data error is
    raised again as :class:`BadSampleError` naming the file and the
    sample (the original error chained)."""
    try:
        return dataset[index]
    except DATA_ERRORS as exc:
        file = failed_file(exc)
        if file is None:
            raise
        raise BadSampleError(
            'bad sample: ' + describe(file, failed_sample(exc),
                                      error_text(exc)) +
            '. Fix: check the data with tools/check_data.py CONFIG; '
            'BadSampleHook (on by default in tools/train.py) replaces such '
            'samples') from exc
