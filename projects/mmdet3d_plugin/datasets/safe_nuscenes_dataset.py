"""nuScenes dataset that DataLoader workers receive under any start method."""
from mmdet3d.datasets import NuScenesDataset
from mmdet3d.registry import DATASETS

from ..compat.nuscenes_class_names import PicklableDetectionConfig
from ..pickling.state import PicklableStateMixin
from .forkserver import setup_forkserver_preload
from .heap import run_in_own_arena
from .info_checks import (check_classes, check_data_files, data_prefix_errors,
                          info_file_errors, sample_file_errors)
from .shared_infos import SharedArrays, shared_memory_supported


@DATASETS.register_module()
class SafeNuScenesDataset(PicklableStateMixin, NuScenesDataset):
    """``NuScenesDataset`` that pickles for spawn and forkserver workers.

    Takes ``NuScenesDataset``'s arguments unchanged, so switching a config
    is ``type='SafeNuScenesDataset'``. On top of the stock dataset it:

    * exposes ``eval_detection_configs``, the devkit detection config that
      0.x-style code (UniAD, BEVFormer test loops) reads from the dataset,
      with ``class_names`` a list (:class:`PicklableDetectionConfig`);
    * pickles any devkit ``DetectionConfig`` or ``dict`` view that it or a
      subclass holds, anywhere in its state (see
      :class:`PicklableStateMixin`), without modifying them;
    * raises a ``TypeError`` naming the attribute path and the fix when
      anything else in it, its pipeline included, cannot be pickled;
    * with ``serialize_data=True`` (the default), moves the serialized infos
      into shared memory the first time it is pickled, so spawn and
      forkserver workers map them instead of receiving a copy: the bytes
      pickled per worker do not grow with the number of infos (see
      :class:`SharedArrays`). Under fork nothing changes;
    * loads its infos in an arena of their own
      (:func:`.heap.run_in_own_arena`):
      the transient dicts leave no holes in the heap that forked workers
      allocate from (a forked process grew by 182 MB filling them after
      28,130 infos were loaded in the main heap; 1 MB this way);
    * adds torch, mmengine, mmdet3d and this plugin to the forkserver's
      preload list (:func:`setup_forkserver_preload`), so forkserver
      workers start without importing them again;
    * checks its inputs and names the fix (see :mod:`.validation`): a
      missing ``data_root`` or ``ann_file``, a corrupt or 0.x-format info
      file, unknown ``metainfo`` classes, and a point-cloud file missing
      when a sample is loaded (the error names the sample and the file).

    Args:
        *args: Positional arguments of ``NuScenesDataset``
            (``data_root``, ``ann_file``, ...).
        eval_version (str): Devkit detection config for
            ``eval_detection_configs``. Defaults to 'detection_cvpr_2019'.
        **kwargs: Keyword arguments of ``NuScenesDataset`` and
            ``BaseDataset`` (``pipeline``, ``lazy_init``, ``indices``,
            ``serialize_data``, ...).

    Examples:
        >>> train_dataloader = dict(
        ...     dataset=dict(
        ...         type='SafeNuScenesDataset',
        ...         data_root='data/nuscenes/',
        ...         ann_file='nuscenes_infos_train.pkl',
        ...         pipeline=train_pipeline))
    """

    def __init__(self,
                 *args,
                 eval_version: str = 'detection_cvpr_2019',
                 **kwargs) -> None:
        # Forkserver workers then start with mmdet3d already imported.
        setup_forkserver_preload()
        self.eval_version = eval_version
        self.eval_detection_configs = PicklableDetectionConfig.from_name(
            eval_version)
        metainfo = kwargs.get('metainfo')
        if metainfo is not None and 'classes' in metainfo:
            check_classes(
                type(self).__name__, metainfo['classes'],
                self.METAINFO['classes'])
        super().__init__(*args, **kwargs)
        if not hasattr(self, 'show_ins_var'):
            # mmdet3d 1.4.0's Det3DDataset sets it only when lazy_init is
            # False, so __getitem__ of a lazily built dataset raises
            # AttributeError.
            self.show_ins_var = kwargs.get('show_ins_var', False)

    def full_init(self) -> None:
        if self._fully_initialized:
            return
        run_in_own_arena(super().full_init)

    def load_data_list(self) -> list:
        name = type(self).__name__
        check_data_files(name, self.data_root, self.ann_file)
        with info_file_errors(name, self.ann_file), \
                data_prefix_errors(name, self.data_prefix):
            return super().load_data_list()

    def prepare_data(self, index: int):
        with sample_file_errors(self, index):
            return super().prepare_data(index)

    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        if (self.serialize_data and self._fully_initialized
                and 'data_bytes' in state and shared_memory_supported()):
            state['_shared_infos'] = self._share_infos()
            del state['data_bytes'], state['data_address']
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        shared = state.get('_shared_infos')
        if shared is not None and 'data_bytes' not in state:
            self.data_bytes, self.data_address = shared.arrays

    def _share_infos(self) -> SharedArrays:
        """Move ``data_bytes`` / ``data_address`` into shared memory.

        Done once; again only if they were replaced since (e.g. by
        ``get_subset_``).
        """
        shared = self.__dict__.get('_shared_infos')
        if (shared is None or not shared.owns(self.data_bytes)
                or not shared.owns(self.data_address)):
            shared = SharedArrays([self.data_bytes, self.data_address])
            self._shared_infos = shared
            self.data_bytes, self.data_address = shared.arrays
        return shared
