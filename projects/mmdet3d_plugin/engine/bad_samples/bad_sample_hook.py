"""A broken file costs one sample, not the run: samples that fail to load
are replaced and recorded, and a run with more of them than it tolerates
stopped.

``tools/train.py`` adds this hook to every training run
(``engine/run_defaults.py``; ``skip_bad_samples = False`` in a config
leaves it out). How a sample is replaced, and why a whole sample rather
than a sweep: ``replace.py`` beside this file.
"""
import os.path as osp
from typing import List, Optional

from mmengine.dist import get_rank
from mmengine.hooks import Hook

from mmdet3d.registry import HOOKS
from ...datasets.wrappers import walk_datasets
from ...failures.exceptions import BadSamplesError
from ..resume.seeded_items import SeededItems
from .errors import describe
from .records import RECORDS_DIR, RECORDS_FILE, RecordReader
from .replace import SampleReplacer

#: Key frames :meth:`BadSampleHook.check_root` looks at.
ROOT_SAMPLE = 200


@HOOKS.register_module()
class BadSampleHook(Hook):
    """Replaces every train sample that fails to load (a missing,
    truncated or unreadable file: key frame, sweep, GT-database object;
    or, with ``check_points``, non-finite points) by another, chosen from
    its data position, and records it; stops the run when more than
    ``max_bad_samples`` distinct files were bad across the ranks.

    The replacement is a function of the failed sample's ``(seed, epoch,
    position)``, so exact resume, restarts and batches that do not depend
    on ``num_workers`` still hold. Each broken file is one warning in the
    log and one entry of ``<work_dir>/bad_samples.json``: the file, the
    nuScenes sample token, the error, the first iteration it was met and
    how often. Needs the plugin's resumable loops (``tools/train.py``'s
    default; with ``exact_resume = False`` nothing is replaced and a data
    error names its file and sample). Before the first iteration it looks
    at up to 200 key frames of the train set and stops the run when most
    are missing (a data root or mount that is not there), half or more.

    Args:
        max_bad_samples (int): Stop when more distinct files than this
            were bad. Defaults to 10.
        check_points (bool): Also replace samples whose points hold NaN /
            Inf (False lets them reach the model, where
            ``NonFiniteGuardHook`` skips the step). Defaults to True.

    Examples:
        >>> custom_hooks = [dict(type='BadSampleHook', max_bad_samples=10)]
    """

    priority = 'ABOVE_NORMAL'

    def __init__(self, max_bad_samples: int = 10,
                 check_points: bool = True) -> None:
        if not isinstance(max_bad_samples, int) or max_bad_samples < 0:
            raise ValueError(
                'BadSampleHook: max_bad_samples must be an int >= 0; got '
                f'{max_bad_samples!r}')
        self.max_bad_samples = max_bad_samples
        self.check_points = bool(check_points)
        self.reader: Optional[RecordReader] = None
        self._resumed = False

    def after_load_checkpoint(self, runner, checkpoint: dict) -> None:
        self._resumed = True

    def sample_replacer(self, runner) -> SampleReplacer:
        """What the plugin's resumable loops give the train dataset's
        ``__getitems__`` when they build its DataLoader (before any
        worker starts, and before any hook runs)."""
        return SampleReplacer(osp.join(runner.work_dir, RECORDS_DIR),
                              get_rank(), self.check_points)

    def before_train(self, runner) -> None:
        dataset = runner.train_loop.dataloader.dataset
        self.check_root(dataset)
        items = vars(dataset).get('__getitems__')
        if not isinstance(items, SeededItems) or items.replacer is None:
            runner.logger.warning(
                'BadSampleHook: the train loop is not one of the plugin\'s '
                'resumable loops (exact_resume = False?): samples that fail '
                'to load are not replaced')
            return
        self.reader = RecordReader(items.replacer.records_dir)
        self.reader.start(runner.work_dir, self._resumed)

    def check_root(self, dataset) -> None:
        """Stop when half or more of up to :data:`ROOT_SAMPLE` key frames
        of the train set (evenly spaced) are missing.

        Raises:
            BadSamplesError: If half or more of them are missing.
        """
        inner = list(walk_datasets(dataset, concat=False))[-1]
        if not hasattr(inner, 'get_data_info') or not len(inner):
            return
        step = max(1, len(inner) // ROOT_SAMPLE)
        paths: List[str] = []
        for i in range(0, len(inner), step):
            path = (inner.get_data_info(i).get('lidar_points')
                    or {}).get('lidar_path')
            if isinstance(path, str) and '://' not in path:
                paths.append(path)
        missing = [p for p in paths if not osp.exists(p)]
        if paths and len(missing) * 2 >= len(paths):
            raise BadSamplesError(
                f'BadSampleHook: {len(missing)} of {len(paths)} key-frame '
                f'files looked at are missing (e.g. {missing[0]}): the data '
                'root is mostly missing. Fix: check data_root (--data-root) '
                'and that the storage is mounted; tools/check_data.py '
                'CONFIG lists every broken file')

    def after_train_iter(self, runner, batch_idx, data_batch=None,
                         outputs=None) -> None:
        self._gather(runner)

    def after_train(self, runner) -> None:
        self._gather(runner)

    def _gather(self, runner) -> None:
        if self.reader is None:
            return
        new = self.reader.read(runner.iter + 1)
        if get_rank() == 0 and self.reader.unwritten:
            self.reader.write(runner.work_dir)
        if not new:
            return
        entries = self.reader.entries
        for entry in new:
            runner.logger.warning(
                'bad sample replaced: ' +
                describe(entry['file'], entry, entry['error']) +
                f' (rank {entry["ranks"][0]}, iteration '
                f'{entry["first_iteration"]}, replaced by index '
                f'{entry["replaced_by"]}; {len(entries)} of at most '
                f'{self.max_bad_samples})')
        if len(entries) > self.max_bad_samples:
            first = ', '.join(e['file'] for e in list(entries.values())[:3])
            raise BadSamplesError(
                f'BadSampleHook: {len(entries)} broken files met, more than '
                f'max_bad_samples={self.max_bad_samples}; the first: '
                f'{first}. Each is in {runner.work_dir}/{RECORDS_FILE}. Fix: '
                'find every broken file with tools/check_data.py CONFIG, '
                'repair or restore them, then --resume')
