"""Each sample loaded from its own random state, with nothing put around
the dataset.

torch's DataLoader fetches a batch with ``dataset.__getitems__(indices)``
when the dataset has that attribute (``_MapDatasetFetcher.fetch``, in the
main process and in every worker). :func:`seed_samples` sets it on the
train dataset itself, as an attribute of the instance: the dataset stays
the object, the class and the nesting that mmengine's loops would give
upstream hooks, so ``isinstance`` checks, one-level unwrapping
(``dataset.dataset``) and writes (``dataset.pipeline = ...``) reach the
dataset the workers read, as they do without exact resume.
"""
from typing import List, Optional

from ...constants import GT_DRAWS
from ..bad_samples.replace import SampleReplacer, load_named
from .gt_database import seed_gt_samplers
from .sample_key import SampleKey, seed_all, seed_sample


class SeededItems:
    """``dataset.__getitems__`` that loads sample ``key`` (a
    :class:`SampleKey` from ``ResumableSampler``) from the random state of
    its ``(seed, epoch, position)``.

    Before each sample's pipeline runs, numpy's global RNG, ``random`` and
    torch's CPU generator are seeded for that sample; with ``gt_draws=
    'per_sample'`` the ``ObjectSample`` GT-database samplers in the
    dataset's pipelines draw from that state (:func:`seed_gt_samplers`,
    checked at every batch, so a pipeline a hook puts in place draws so
    too). A sample's augmentation then depends neither on the worker that
    loads it nor on the run's history. Plain ``int`` indices are read
    without seeding. Samples are read one by one (``dataset[i]``).

    A sample that fails to load is replaced through :attr:`replacer`
    (``BadSampleHook`` sets it: a replacement chosen and seeded from the
    failed sample's key); without one, a data error is raised naming the
    file and the sample (``BadSampleError``).

    Args:
        dataset: The train dataset (outermost, as the DataLoader holds it).
        gt_draws (str): One of ``constants.GT_DRAWS``. Defaults to
            ``'per_sample'``.
    """

    def __init__(self, dataset, gt_draws: str = 'per_sample') -> None:
        if gt_draws not in GT_DRAWS:
            raise ValueError(
                f'exact resume: gt_draws={gt_draws!r}; use one of '
                f'{GT_DRAWS} (config key gt_database_draws)')
        self.dataset = dataset
        self.gt_draws = gt_draws
        self.replacer: Optional[SampleReplacer] = getattr(
            self, 'replacer', None)

    def __call__(self, keys) -> List[dict]:
        if self.gt_draws == 'per_sample':
            seed_gt_samplers(self.dataset)
        samples = []
        for key in keys:
            if isinstance(key, SampleKey):
                seed_sample(key)
            if self.replacer is None:
                samples.append(load_named(self.dataset, int(key)))
            else:
                samples.append(
                    self.replacer.load(self.dataset, key, seed_all))
        return samples


def seed_samples(dataset, gt_draws: str = 'per_sample') -> SeededItems:
    """Make the DataLoader load every :class:`SampleKey` of ``dataset``
    from its own random state (:class:`SeededItems` as the instance's
    ``__getitems__``). Calling it again only updates ``gt_draws``.

    Args:
        dataset: The train dataset the DataLoader holds.
        gt_draws (str): One of ``constants.GT_DRAWS``. Defaults to
            ``'per_sample'``.

    Returns:
        SeededItems: What the DataLoader now calls.
    """
    items = vars(dataset).get('__getitems__')
    if isinstance(items, SeededItems):
        items.__init__(dataset, gt_draws)
    else:
        items = SeededItems(dataset, gt_draws)
        dataset.__getitems__ = items
    if gt_draws == 'per_sample':
        seed_gt_samplers(dataset)
    return items
