"""The check behind each private upstream use in the inventory.

:data:`CHECKS` holds, for each :class:`~.inventory.Override` (by name), what
the tests compare with the installed packages:

* :class:`Private`: an upstream private name the plugin calls, overrides
  or reads. With a ``signature``, the callable must still have it
  (:func:`plain_signature`: parameter names, kinds and defaults). Without
  one it is an attribute that must still be there: set on the object,
  defined in the module, or assigned (``self.<name> = ...``) in the
  class or one of its upstream bases.
* :class:`Copy`: upstream code the plugin re-implements, or runs as its own:
  the sha256 of its source (:func:`source_sha256`) must be the one recorded
  for the installed version (:meth:`Copy.expected`): a copy whose upstream
  source differs between two supported versions records each
  (``other_versions``); a version between them must match one of those.

Each records the package version it was taken at (``checked``).
``tests/compat/test_upstream_checks.py`` fails on any difference, naming the
plugin code to re-check.

Nothing upstream is imported here: a target is a dotted name (the longest
importable module, then attributes), or a file of an installed package
and a name in it (``mmdet3d/.mim/tools/dataset_converters/x.py:f``, for
scripts that are not importable modules), resolved by :func:`resolve` only
when called. After re-reading upstream and updating the plugin,
``record('<target>')`` gives the signature and hash to write here.
"""
import hashlib
import importlib
import importlib.util
import inspect
import os.path as osp
import re
import sys
from dataclasses import dataclass
from typing import Any, Dict, Optional, Tuple, Union

#: The versions the signatures and hashes below were taken at.
MMENGINE = 'mmengine 0.10.7'
MMDET3D = 'mmdet3d 1.4.0'
TORCH = 'torch 2.13.0'
NUSCENES = 'nuscenes-devkit 1.2.0'
SPCONV = 'spconv 2.3.8'
NUMPY = 'numpy 1.26.4'
PYTHON = 'python 3.11.7'

#: mmdet3d's dataset converter scripts (files of the wheel, not modules).
_CONVERTERS = 'mmdet3d/.mim/tools/dataset_converters/'


@dataclass(frozen=True)
class Private:
    """A private upstream name the plugin calls, overrides or reads.

    Args:
        override (str): Name of the inventory entry.
        checked (str): ``'<distribution> <version>'`` it was checked at.
        target (str): What is used (see the module docstring).
        signature (str, optional): :func:`plain_signature` of the target
            at ``checked``. None for an attribute, which must still exist.
    """
    override: str
    checked: str
    target: str
    signature: Optional[str] = None


@dataclass(frozen=True)
class Copy:
    """Upstream code the plugin re-implements (or runs as its own).

    Args:
        override (str): Name of the inventory entry.
        checked (str): ``'<distribution> <version>'`` it was hashed at.
        target (str): The upstream function, method, class or module.
        sha256 (str): :func:`source_sha256` of the target at ``checked``.
        other_versions (tuple[tuple[str, str]]): ``(version, sha256)`` of
            the target at other reviewed versions where its source differs
            (torch 2.1.2's docstrings and signatures, say). Defaults to ().
    """
    override: str
    checked: str
    target: str
    sha256: str
    other_versions: Tuple[Tuple[str, str], ...] = ()

    def expected(self, installed: str) -> Tuple[str, ...]:
        """The hashes the source may have at version ``installed``: the
        one recorded at that version, else any recorded one (the source
        unchanged since a reviewed version)."""
        recorded = dict(self.other_versions)
        recorded[self.checked.partition(' ')[2]] = self.sha256
        local = installed.split('+')[0]  # 2.1.2+cu121 -> 2.1.2
        if local in recorded:
            return (recorded[local], )
        return tuple(dict.fromkeys(recorded.values()))


Check = Union[Private, Copy]

_LOADED_FILES: Dict[str, Any] = {}


def _load_file(path: str):
    """The module of ``<package>/<file>.py`` in an installed package."""
    if path not in _LOADED_FILES:
        package, _, rest = path.partition('/')
        spec = importlib.util.find_spec(package)
        if spec is None or not spec.submodule_search_locations:
            raise ModuleNotFoundError(f'no installed package {package!r}',
                                      name=package)
        file = osp.join(list(spec.submodule_search_locations)[0], rest)
        name = 'mmdet3d_plugin_upstream_checks.' + re.sub(
            r'\W', '_', path[:-len('.py')])
        file_spec = importlib.util.spec_from_file_location(name, file)
        if file_spec is None or not osp.isfile(file):
            raise FileNotFoundError(f'{file} is not in the installed '
                                    f'{package}')
        module = importlib.util.module_from_spec(file_spec)
        sys.modules[name] = module
        try:
            file_spec.loader.exec_module(module)
        except BaseException:
            del sys.modules[name]
            raise
        _LOADED_FILES[path] = module
    return _LOADED_FILES[path]


def resolve(target: str):
    """The installed object ``target`` names (see the module docstring).

    Raises:
        ImportError: If no module of the name can be imported.
        AttributeError: If the module lacks the rest of the name.
    """
    if '.py:' in target:
        path, _, rest = target.partition(':')
        obj = _load_file(path)
        names = rest.split('.')
    else:
        parts = target.split('.')
        for i in range(len(parts), 0, -1):
            name = '.'.join(parts[:i])
            try:
                obj = importlib.import_module(name)
            except ModuleNotFoundError as err:
                # Only a missing module of the target's own name moves on.
                if err.name is None or not (name == err.name or
                                            name.startswith(err.name + '.')):
                    raise
                continue
            names = parts[i:]
            break
        else:
            raise ModuleNotFoundError(f'no module of {target!r}',
                                      name=parts[0])
    for name in names:
        obj = getattr(obj, name)
    return obj


def plain_signature(obj) -> str:
    """``inspect.signature(obj)`` without annotations: the parameters'
    names, kinds and defaults, e.g. ``'(self, pts_filename)'``."""
    sig = inspect.signature(obj)
    return str(sig.replace(
        parameters=[p.replace(annotation=p.empty)
                    for p in sig.parameters.values()],
        return_annotation=sig.empty))


def source_sha256(obj) -> str:
    """sha256 of ``inspect.getsource(obj)`` (UTF-8)."""
    return hashlib.sha256(inspect.getsource(obj).encode()).hexdigest()


def record(target: str) -> Dict[str, str]:
    """What to record for ``target`` with the installed packages: its
    ``signature`` (where it has one) and ``sha256`` (where it has
    source)."""
    obj = resolve(target)
    found = {}
    for key, get in (('signature', plain_signature),
                     ('sha256', source_sha256)):
        try:
            found[key] = get(obj)
        except (TypeError, ValueError, OSError):
            pass
    return found


def _assigned_in(cls: type, name: str) -> bool:
    """Whether ``cls`` or an upstream base defines or assigns ``name``."""
    pattern = re.compile(r'self\.' + re.escape(name) + r'\s*(:[^=\n]*)?=[^=]')
    for base in inspect.getmro(cls):
        if base is object or base.__module__.startswith('projects.'):
            continue
        if name in vars(base):
            return True
        try:
            source = inspect.getsource(base)
        except (OSError, TypeError):
            continue
        if pattern.search(source):
            return True
    return False


def attribute_present(target: str) -> bool:
    """Whether the attribute ``target`` (``<owner>.<name>``) is upstream's:
    set on an object, defined in a module (by upstream's source, not by a
    plugin fix that assigns it), or assigned in a class."""
    owner_name, _, name = target.rpartition('.')
    owner = resolve(owner_name)
    if inspect.isclass(owner):
        return _assigned_in(owner, name)
    if inspect.ismodule(owner):
        try:
            source = inspect.getsource(owner)
        except (OSError, TypeError):
            source = None
        return hasattr(owner, name) and (
            source is None or re.search(rf'\b{re.escape(name)}\b', source)
            is not None)
    return hasattr(owner, name)


#: Every check, grouped by the inventory entry it belongs to.
CHECKS: Tuple[Check, ...] = (
    # checkpoint_safe_globals
    Private('checkpoint_safe_globals', MMENGINE,
            'mmengine.logging.HistoryBuffer._statistics_methods'),
    Private('checkpoint_safe_globals', NUMPY,
            'numpy.core.multiarray._reconstruct'),
    # config_text_once
    Private('config_text_once', MMENGINE,
            'mmengine.config.config.FormatCode',
            "(unformatted_source, filename='<unknown>', style_config=None, "
            'lines=None, print_diff=False)'),
    # cpu_dist
    Copy('cpu_dist', MMENGINE,
         'mmengine.runner.Runner.wrap_model',
         '1b219f958f8a829f98505239279fcb4bed87f02ccdfbda6415fdaa85c4622eb4'),
    Copy('cpu_dist', MMENGINE,
         'mmengine.dist.utils._init_dist_pytorch',
         '8a14beff62037f6b5e3e4abd4563f6d4a08f658a04ed5b04a0d47185caa8b614'),
    # restart_store
    Copy('restart_store', TORCH,
         'torch.distributed.rendezvous._create_c10d_store',
         '5e4ae7b3a73720833b69a0c76e59d3634b82f2ddf27fce16c355a4aeb12c52f3',
         # 2.1.2 prefixes the agent's store with the attempt itself; the
         # plugin's prefix goes on top, the same keys on both.
         other_versions=(('2.1.2', 'bc8f42437ae374335a2ed5f1c90803bb7616f9e'
                          'dec1c8d70923d58f7f2b05ed0'), )),
    Copy('restart_store', MMENGINE,
         'mmengine.dist.utils._init_dist_pytorch',
         '8a14beff62037f6b5e3e4abd4563f6d4a08f658a04ed5b04a0d47185caa8b614'),
    # spconv_cpu_backward
    Private('spconv_cpu_backward', SPCONV,
            'spconv.pytorch.ops.get_current_stream'),
    Private('spconv_cpu_backward', SPCONV,
            'spconv.pytorch.cppcore.get_current_stream',
            '()'),
    # dbsampler_np_long
    Copy('dbsampler_np_long', MMDET3D,
         'mmdet3d.datasets.transforms.DataBaseSampler.sample_all',
         '9ecee8f3abc7944424838288739602ec59228eb877bf904e7b3b22b5c98ed13f'),
    # centerhead_init
    Copy('centerhead_init', MMDET3D,
         'mmdet3d.models.dense_heads.centerpoint_head.SeparateHead'
         '.init_weights',
         '1ee18eeb8c6d4e99c328fe4959fd1f33a554485c5a99d894f8d7dded36f32591'),
    Copy('centerhead_init', MMDET3D,
         'mmdet3d.models.dense_heads.centerpoint_head.DCNSeparateHead'
         '.init_weights',
         '3adc4f67d7dd2db4bd6a2d7887863196ef2923f641cf1dcfe5a72454e0deff9e'),
    # atomic_checkpoint_backend
    Copy('atomic_checkpoint_backend', MMENGINE,
         'mmengine.fileio.LocalBackend.put',
         '4106dd5908d615588164603f718bfbf06624b2535d625c7234c5b037fabc53fa'),
    Copy('atomic_checkpoint_backend', MMENGINE,
         'mmengine.fileio.LocalBackend.put_text',
         '0cd7d1beb389b002c726129b6b3fdca5d262d8f5cb882e661869173187a36ef5'),
    # checkpoint_hook_save_step
    Private('checkpoint_hook_save_step', MMENGINE,
            'mmengine.hooks.CheckpointHook._save_checkpoint_with_step',
            '(self, runner, step, meta)'),
    Copy('checkpoint_hook_save_step', MMENGINE,
         'mmengine.hooks.CheckpointHook._save_checkpoint_with_step',
         'cdbc1b54c7c88d9525ab025a9d51a3d3be6e6e36396c0f1151ecf51281fd3482'),
    # metric_evaluate_single
    Private('metric_evaluate_single', MMDET3D,
            'mmdet3d.evaluation.NuScenesMetric._evaluate_single',
            '(self, result_path, classes=None, '
            "result_name='pred_instances_3d')"),
    Copy('metric_evaluate_single', MMDET3D,
         'mmdet3d.evaluation.NuScenesMetric._evaluate_single',
         '6af4dc1285983df43796ac90a88156cb92bfdada0b4c2aa100151079c6956878'),
    # dataset_dict_keys
    Copy('dataset_dict_keys', NUSCENES,
         'nuscenes.eval.detection.data_classes.DetectionConfig.__init__',
         '7f9a7b1c9b75847bf7bc057a03672044b932567c1a09e59a129171a61be2791c'),
    # optim_wrapper_accumulative_counts
    Private('optim_wrapper_accumulative_counts', MMENGINE,
            'mmengine.optim.OptimWrapper._accumulative_counts'),
    # forkserver_preload
    Private('forkserver_preload', PYTHON,
            'multiprocessing.forkserver._forkserver._preload_modules'),
    # converter_by_path
    Private('converter_by_path', MMDET3D,
            _CONVERTERS + 'nuscenes_converter.py:create_nuscenes_infos',
            "(root_path, info_prefix, version='v1.0-trainval', "
            'max_sweeps=10)'),
    Private('converter_by_path', MMDET3D,
            _CONVERTERS + 'update_infos_to_v2.py:update_pkl_infos',
            '(dataset, out_dir, pkl_path)'),
    Private('converter_by_path', MMDET3D,
            _CONVERTERS + 'create_gt_database.py:create_groundtruth_database',
            '(dataset_class_name, data_path, info_prefix, info_path=None, '
            'mask_anno_path=None, used_classes=None, '
            'database_save_path=None, db_info_save_path=None, '
            'relative_path=True, add_rgb=False, lidar_only=False, '
            'bev_only=False, coors_range=None, with_mask=False)'),
    Copy('converter_by_path', MMDET3D,
         _CONVERTERS + 'update_infos_to_v2.py:update_nuscenes_infos',
         'afe4453c0b33c912a47877a832d84e61621083ab657ab55bfa5fccac1c061ff7'),
    # registry_locations
    Private('registry_locations', MMENGINE,
            'mmengine.registry.Registry._locations'),
    Private('registry_locations', MMENGINE,
            'mmengine.registry.Registry._imported'),
    Copy('registry_locations', MMENGINE,
         'mmengine.registry.Registry.import_from_location',
         '007eff414a748cea520a1b54d51b4130b9c60812ca4dae9fd0be12cdedbd5abb'),
    # fast_points_like
    Copy('fast_points_like', MMDET3D,
         'mmdet3d.structures.points.BasePoints.__init__',
         'cf931a1122f327f1fd6dafb90437a1b008d6b8472ff3c7b42deed32ae7b50a6e'),
    # fast_load_points_from_file
    Private('fast_load_points_from_file', MMDET3D,
            'mmdet3d.datasets.transforms.LoadPointsFromFile._load_points',
            '(self, pts_filename)'),
    Copy('fast_load_points_from_file', MMDET3D,
         'mmdet3d.datasets.transforms.LoadPointsFromFile._load_points',
         '6d8ae77ff238af504499e69e6907ac12c0ec99685bfacba0d768940616c19015'),
    Copy('fast_load_points_from_file', MMDET3D,
         'mmdet3d.datasets.transforms.LoadPointsFromFile.transform',
         'a7d812aceefb28a7242b387b08378e215018201a55f3a3fae209f13f1d64eb27'),
    # fast_load_points_from_multi_sweeps
    Private('fast_load_points_from_multi_sweeps', MMDET3D,
            'mmdet3d.datasets.transforms.LoadPointsFromMultiSweeps'
            '._load_points',
            '(self, pts_filename)'),
    Copy('fast_load_points_from_multi_sweeps', MMDET3D,
         'mmdet3d.datasets.transforms.LoadPointsFromMultiSweeps._load_points',
         'fcce944976a59be548c77949c5acad8ebe221cff9449a99e4787f7d7dd8a33c3'),
    Copy('fast_load_points_from_multi_sweeps', MMDET3D,
         'mmdet3d.datasets.transforms.LoadPointsFromMultiSweeps._remove_close',
         'f623dc97d6a6e3b85d7af39fc5612e5a9ba90f89ceeefe4b20d00b7dc0c635ac'),
    Copy('fast_load_points_from_multi_sweeps', MMDET3D,
         'mmdet3d.datasets.transforms.LoadPointsFromMultiSweeps.transform',
         '53dd9bfd1113cc7ec6cd7f49c7f7e349b228256f49b1282e6849e09c2593520c'),
    # fast_global_rot_scale_trans
    Private('fast_global_rot_scale_trans', MMDET3D,
            'mmdet3d.datasets.transforms.GlobalRotScaleTrans._random_scale',
            '(self, input_dict)'),
    Copy('fast_global_rot_scale_trans', MMDET3D,
         'mmdet3d.datasets.transforms.GlobalRotScaleTrans.transform',
         'bb4c21e6ce9018010b1ceb93b5c318b860ddd48a11bf3832b19cb9b7049cff67'),
    Copy('fast_global_rot_scale_trans', MMDET3D,
         'mmdet3d.datasets.transforms.GlobalRotScaleTrans._rot_bbox_points',
         '268a98f0708e675c45b5c049fea645272b32d7c0999f169146953f7f37535b01'),
    Copy('fast_global_rot_scale_trans', MMDET3D,
         'mmdet3d.datasets.transforms.GlobalRotScaleTrans._scale_bbox_points',
         '98d72149b42183ffb4c342074aa2c4bdd0d5001483c2f3dcbfa4268fa66d57ee'),
    Copy('fast_global_rot_scale_trans', MMDET3D,
         'mmdet3d.datasets.transforms.GlobalRotScaleTrans._trans_bbox_points',
         '93ef08562c341006534feeac8cb7276ba54cd33e2e693dfe73995bc3fbe022e4'),
    Copy('fast_global_rot_scale_trans', MMDET3D,
         'mmdet3d.structures.LiDARInstance3DBoxes.rotate',
         'bc97b56cc831ef078a08d77d8ae847bc624e3f8f450d9be3141019e22708668d'),
    Copy('fast_global_rot_scale_trans', MMDET3D,
         'mmdet3d.structures.points.BasePoints.rotate',
         '51b7618ea9a485f90e53886934f342616302dac8545261ddd4ef6428239d2751'),
    Copy('fast_global_rot_scale_trans', MMDET3D,
         'mmdet3d.structures.points.BasePoints.scale',
         'a9700d086bd0511c33ad4f05869323d2fdc736cc0c3cc23fba643d4f3a7e880e'),
    Copy('fast_global_rot_scale_trans', MMDET3D,
         'mmdet3d.structures.points.BasePoints.translate',
         '89ae141a34d1655eaef513b57b29f483eb686de0d80cc4f14c82d5bd3bbd7cf2'),
    # fast_object_sample
    Copy('fast_object_sample', MMDET3D,
         'mmdet3d.datasets.transforms.ObjectSample.__init__',
         '67367236b14114ab17d1120940c3bd8aca4b376055b21b6d0449ce656afa58df'),
    Copy('fast_object_sample', MMDET3D,
         'mmdet3d.datasets.transforms.ObjectSample.transform',
         '847daf6090f9914c4c8e5d920050f472f57bee3858788d23f07303c580d6e67b'),
    Copy('fast_object_sample', MMDET3D,
         'mmdet3d.datasets.transforms.ObjectSample.remove_points_in_boxes',
         '36959de7f1abf51ef28c48dcb731815ab4bd3da061004f9fbbaecd227c332d70'),
    Copy('fast_object_sample', MMDET3D,
         'mmdet3d.structures.points.BasePoints.cat',
         'ebb28891ab236816193254edc368808708728022a1d33ee7046d19aa4bab6b34'),
    Copy('fast_object_sample', MMDET3D,
         'mmdet3d.structures.ops.box_np_ops.points_in_rbbox',
         'abc84c54c6cff80d5b82cbbced869888234ac4731f94439f80030a1b7ba154b6'),
    Copy('fast_object_sample', MMDET3D,
         'mmdet3d.structures.ops.box_np_ops.corner_to_surfaces_3d',
         '55b0c6af438a1fff9506a6a4192b4e87b7f9a1e072023db5a31d592e15c11f53'),
    Copy('fast_object_sample', MMDET3D,
         'mmdet3d.structures.ops.box_np_ops.points_in_convex_polygon_3d_jit',
         '43edc1a60e37da5a873138368588e410902ada364c3e366243fb6459ed9433a8'),
    Copy('fast_object_sample', MMDET3D,
         'mmdet3d.structures.ops.box_np_ops._points_in_convex_polygon_3d_jit',
         '1d96243eabcc4d173dafc56199cd33065d311bd572fd8740b516dc9823c3215d'),
    # fast_db_sampler
    Copy('fast_db_sampler', MMDET3D,
         'mmdet3d.datasets.transforms.DataBaseSampler.sample_all',
         '9ecee8f3abc7944424838288739602ec59228eb877bf904e7b3b22b5c98ed13f'),
    Copy('fast_db_sampler', MMDET3D,
         'mmdet3d.datasets.transforms.DataBaseSampler.sample_class_v2',
         '2ab8b62f80200d44587b378139048df36facf166846cf48112d454877217cd2f'),
    Copy('fast_db_sampler', MMDET3D,
         'mmdet3d.datasets.transforms.data_augment_utils.box_collision_test',
         '4eaca795949fcca7649e4885a3afed537b95cede60f4bed31709b3879b89647d'),
    # fast_point_shuffle
    Copy('fast_point_shuffle', MMDET3D,
         'mmdet3d.datasets.transforms.PointShuffle.transform',
         '393affb3a5bb4cecc3d0c17dbdfd73463dca472ef83fd4cd14faa51efedf2b54'),
    Copy('fast_point_shuffle', MMDET3D,
         'mmdet3d.structures.points.BasePoints.shuffle',
         'fd1e90d728bb0fa8a17648b83ddcd350f661b13033c2ad42e7ae2fd846ebd403'),
    # fast_points_range_filter
    Copy('fast_points_range_filter', MMDET3D,
         'mmdet3d.datasets.transforms.PointsRangeFilter.transform',
         'c942f48cf2660018faa12f1873484c93ff5cfcdda4868a0a7c33d835be17b6be'),
    Copy('fast_points_range_filter', MMDET3D,
         'mmdet3d.structures.points.BasePoints.in_range_3d',
         '63e7918c854324d901436dc0857c4861d0749a3fe0cb1691c2d81b530c6a13e2'),
    # seeded_class_sampler
    Private('seeded_class_sampler', MMDET3D,
            'mmdet3d.datasets.transforms.dbsampler.BatchSampler._sample',
            '(self, num)'),
    Private('seeded_class_sampler', MMDET3D,
            'mmdet3d.datasets.transforms.dbsampler.BatchSampler._example_num'),
    Copy('seeded_class_sampler', MMDET3D,
         'mmdet3d.datasets.transforms.dbsampler.BatchSampler.sample',
         'ba86a434e6dad68d0d5e3c66fdb6abf4954da4b8d16eea2c9bafed33f978fbdc'),
    Copy('seeded_class_sampler', MMDET3D,
         'mmdet3d.datasets.transforms.dbsampler.BatchSampler.__init__',
         'bcd716e38408ccaf33cdf302c8626ee27de6ae0d90ea0f4dbb809aed9ec5c389'),
    # packed_gt_database
    Private(
        'packed_gt_database', MMDET3D,
        'mmdet3d.datasets.transforms.dbsampler.BatchSampler._sampled_list'),
    Private('packed_gt_database', MMDET3D,
            'mmdet3d.datasets.transforms.dbsampler.BatchSampler._indices'),
    Private('packed_gt_database', MMDET3D,
            'mmdet3d.datasets.transforms.dbsampler.BatchSampler._shuffle'),
    Copy('packed_gt_database', MMDET3D,
         'mmdet3d.datasets.transforms.dbsampler.DataBaseSampler.__init__',
         '5305fe6afdc25e8d2b212edd8dfd126777947be020c8db15ab898dec0cb2efa0'),
    Copy('packed_gt_database', MMDET3D,
         'mmdet3d.datasets.transforms.dbsampler.BatchSampler._reset',
         '7f6179a6111b6c885f38a872b8cefad8ee0cf0bbbcb4dddeb787465ba0fa816e'),
    # dataset_fully_initialized
    Private('dataset_fully_initialized', MMENGINE,
            'mmengine.dataset.BaseDataset._fully_initialized'),
    # fetcher_getitems
    Copy('fetcher_getitems', TORCH,
         'torch.utils.data._utils.fetch._MapDatasetFetcher.fetch',
         '52b420f1023d7e83112c6e754f2ed2f4a42dd6b31292394addd3d86993c87bab'),
    # resumable_sampler
    Copy('resumable_sampler', MMENGINE,
         'mmengine.dataset.DefaultSampler.__init__',
         '4938c7b3d4197967ea5cd7dbf2e1a56634c60499bf8278e8557024306c3b4491'),
    Copy('resumable_sampler', MMENGINE,
         'mmengine.dataset.DefaultSampler.__iter__',
         '87bdf38e03808c3556a92bb96d12fced916d378b29e0c3d5ea41974750cfab1a'),
    # resumable_loops
    Copy('resumable_loops', MMENGINE,
         'mmengine.runner.EpochBasedTrainLoop.run_epoch',
         '5a9b993c3e9727d48a734e1a627a30a0fa00151cf12626e58f9da757f354b3d9'),
    Copy('resumable_loops', MMENGINE,
         'mmengine.runner.IterBasedTrainLoop.run',
         'f5de0b5cf6e25e3b58a9dc5ce8cba8a633536dd15f52f1b446c52b438776413b'),
    Private('resumable_loops', MMENGINE,
            'mmengine.runner.EpochBasedTrainLoop._epoch'),
    Private('resumable_loops', MMENGINE,
            'mmengine.runner.IterBasedTrainLoop._iter'),
    Private('resumable_loops', MMENGINE,
            'mmengine.runner.IterBasedTrainLoop._max_iters'),
    Private('resumable_loops', MMENGINE,
            'mmengine.runner.IterBasedTrainLoop._decide_current_val_interval',
            '(self)'),
    Private('resumable_loops', MMENGINE,
            'mmengine.runner.loops._InfiniteDataloaderIterator',
            '(dataloader)'),
    Private('resumable_loops', MMENGINE,
            'mmengine.runner.Runner._randomness_cfg'),
    # runner_load_from
    Private('runner_load_from', MMENGINE,
            'mmengine.runner.Runner._load_from'),
    # runner_scale_lr
    Copy('runner_scale_lr', MMENGINE,
         'mmengine.runner.Runner.scale_lr',
         '41f0c56c34cd3055b4d5be1bcae621c14da149903955ef3ae0d680e3016cdd32'),
    Private('runner_scale_lr', MMENGINE,
            'mmengine.optim._ParamScheduler'),
    # batchnorm_base_class
    Private('batchnorm_base_class', TORCH,
            'torch.nn.modules.batchnorm._BatchNorm'),
    # preemption_default_store
    Private('preemption_default_store', TORCH,
            'torch.distributed.distributed_c10d._get_default_store',
            '()'),
    # cpu_bf16_onednn_check
    Private('cpu_bf16_onednn_check', TORCH,
            'torch.ops.mkldnn._is_mkldnn_bf16_supported'),
    # bf16_optim_wrapper
    Copy('bf16_optim_wrapper', MMENGINE,
         'mmengine.optim.AmpOptimWrapper.__init__',
         '36ef25493b8370c3d1d706561d0a7835af1758846c9e9cadd57f195d5afce8a5'),
    Copy('bf16_optim_wrapper', MMENGINE,
         'mmengine.optim.AmpOptimWrapper.optim_context',
         '3a1064c2e89d859a754d309c91c720c8d23a89f02ec3a71cddadf2258f9f5355'),
    # rank0_evaluate
    Copy('rank0_evaluate', MMENGINE,
         'mmengine.evaluator.BaseMetric.evaluate',
         '64bd1354e988f865a9eef45aad5c000e04544986245b726fb8bae387cf718fa7'),
    Copy('rank0_evaluate', MMENGINE,
         'mmengine.evaluator.metric._to_cpu',
         'ee49481120fd61d505dc098b04a5ed278c842aad38b12ee5495d7958516f7173'),
    # nuscenes_metric_arrays
    Copy('nuscenes_metric_arrays', MMDET3D,
         'mmdet3d.evaluation.NuScenesMetric.process',
         'd384f95058d71dcefcf14ccc31f71dc01f74f03666568cf41cd039f923afa6de'),
    Copy('nuscenes_metric_arrays', MMDET3D,
         'mmdet3d.evaluation.NuScenesMetric.compute_metrics',
         'ff90514c51068ec83815e5b144e0953cdc45f9e6e3eb086e5eab831a4f632551'),
    Copy('nuscenes_metric_arrays', MMDET3D,
         'mmdet3d.evaluation.NuScenesMetric._format_lidar_bbox',
         'f45fd46ff3b2918885cc7a34ba569f5390631966c376b89327c7b8f37258390c'),
    Copy('nuscenes_metric_arrays', MMDET3D,
         'mmdet3d.evaluation.metrics.nuscenes_metric.output_to_nusc_box',
         '09449001ce10377b901f1a417e6f689deec6b77f472421f90e380d8269e84ea9'),
    Copy('nuscenes_metric_arrays', MMDET3D,
         'mmdet3d.evaluation.metrics.nuscenes_metric.lidar_nusc_box_to_global',
         'a193ee73f9ff113d5f62960d9018d70d43017524bfea74b1617a1824615dc148'),
    # devkit_detection_eval
    Copy('devkit_detection_eval', NUSCENES,
         'nuscenes.eval.detection.evaluate.DetectionEval.__init__',
         '5e7f82fb80d27002c05fac5db98eb658b46be99b10b4e28eb98d158399384033'),
    Copy('devkit_detection_eval', NUSCENES,
         'nuscenes.eval.detection.evaluate.DetectionEval.evaluate',
         '46bc8b9369ff7a1d8fc41d75cbb5d36503e3ee605d0ec99c24f090f6000f7aaa'),
    Copy('devkit_detection_eval', NUSCENES,
         'nuscenes.eval.detection.algo.accumulate',
         'dfd0a7c4b9c883fe416b05565b00977755de9b923484b2c044ac6851593a2f0a'),
    Copy('devkit_detection_eval', NUSCENES,
         'nuscenes.eval.common.loaders.load_prediction',
         'e6acd97c9b2665b969b6619699ddc5cda44ddf7b3f8d756b1a78ce6f21e8404f'),
    Copy('devkit_detection_eval', NUSCENES,
         'nuscenes.eval.common.loaders.add_center_dist',
         '37537b31869932b21b4a3944c55e0ec4b9330c06427fbfca1f52ba3b22a5ce45'),
    Copy('devkit_detection_eval', NUSCENES,
         'nuscenes.eval.common.loaders.filter_eval_boxes',
         '569a946c4c2ce384e4879fd79088351fe5bc09c55f3095cde5e8a762c99c47de'),
    # torch_total_norm
    Private('torch_total_norm', TORCH,
            'torch.utils._foreach_utils._group_tensors_by_device_and_dtype',
            '(tensorlistlist, with_indices=False)'),
    Private('torch_total_norm', TORCH,
            'torch.utils._foreach_utils._has_foreach_support',
            '(tensors, device)'),
    # torch_error_file
    Copy('torch_error_file', TORCH,
         'torch.distributed.elastic.multiprocessing.errors.ErrorHandler'
         '.record_exception',
         'f27d2dbc07d4d34fed5d71126dd477f13a9437b8de27b6a04d3319ba144a2ac1',
         # 2.1.2: the same file layout, another docstring.
         other_versions=(('2.1.2', '280b352124b387d4369546536d17c642a863230'
                          'eef2c76a39042ff2a10928764'), )),
    # runner_loops_built
    Private('runner_loops_built', MMENGINE,
            'mmengine.runner.Runner._train_loop'),
    Private('runner_loops_built', MMENGINE,
            'mmengine.runner.Runner._val_loop'),
    Private('runner_loops_built', MMENGINE,
            'mmengine.runner.Runner._test_loop'),
    Private('runner_loops_built', MMENGINE,
            'mmengine.runner.IterBasedTrainLoop.dataloader_iterator'),
    # torchrun_stopped_ranks
    Copy('torchrun_stopped_ranks', TORCH,
         'torch.distributed.elastic.multiprocessing.api.SubprocessContext'
         '._close',
         'b83d75758ef4b3ad2110aadf684abc0d73e78c63c5b432540f8c7a027e3ebe9d',
         # 2.1.2: the same warning and arguments; its final wait has no
         # timeout.
         other_versions=(('2.1.2', '556a61bce45420d6d199539ee001a90917e1db0'
                          '377e2ade845c39cbfb0e73ebc'), )),
    # dataloader_queue_feeders
    Private('dataloader_queue_feeders', TORCH,
            'torch.utils.data.dataloader._MultiProcessingDataLoaderIter'
            '._shutdown_workers', '(self)'),
    Private('dataloader_queue_feeders', TORCH,
            'torch.utils.data.dataloader._MultiProcessingDataLoaderIter'
            '._index_queues'),
    Private('dataloader_queue_feeders', TORCH,
            'torch.utils.data.dataloader._MultiProcessingDataLoaderIter'
            '._worker_result_queue'),
    Private('dataloader_queue_feeders', TORCH,
            'torch.utils.data._utils.MP_STATUS_CHECK_INTERVAL'),
    Private('dataloader_queue_feeders', PYTHON,
            'multiprocessing.queues.Queue._thread'),
    Private('dataloader_queue_feeders', PYTHON,
            'multiprocessing.queues.Queue._closed'),
    # mmengine_activation_checkpointing: what the plugin's runner keeps
    # from running (reentrant, positional arguments only).
    Copy('mmengine_activation_checkpointing', MMENGINE,
         'mmengine.runner.activation_checkpointing'
         '.turn_on_activation_checkpointing',
         '471f5e962269441604dc8807e3e3682f2c1a9901e5b03dc22fe79a21f8c8c985'),
    Copy('mmengine_activation_checkpointing', MMENGINE,
         'mmengine.runner.activation_checkpointing.wrap_forward',
         '62d2174022d272f55c806573bf28947da46d5747b5eb149ab0222ce6a741db15'),
    # step_memory_profiler
    Private('step_memory_profiler', TORCH,
            'torch.autograd.profiler.profile.kineto_results'),
    Private('step_memory_profiler', TORCH,
            'torch._C._autograd._KinetoEvent.name'),
    Private('step_memory_profiler', TORCH,
            'torch._C._autograd._KinetoEvent.device_type'),
    Private('step_memory_profiler', TORCH,
            'torch._C._autograd._KinetoEvent.nbytes'),
    # box_convention_layouts: the layouts and decoders the conversions of
    # 0.x weights rely on.
    Copy('box_convention_layouts', MMDET3D,
         'mmdet3d.models.dense_heads.centerpoint_head.SeparateHead.__init__',
         '8e5848ee293c0d923a16cd4dbf7b8868d294bcc74c875418f7ee6dbbeb4b484a'),
    Copy('box_convention_layouts', MMDET3D,
         'mmdet3d.models.dense_heads.centerpoint_head.CenterHead'
         '.predict_by_feat',
         '8e89b9a7c7dd106a0c6d72ef1b331561a6be195b92dc5dc4e133ae9be6d6b952'),
    Copy('box_convention_layouts', MMDET3D,
         'mmdet3d.models.task_modules.coders.centerpoint_bbox_coders'
         '.CenterPointBBoxCoder.decode',
         'ebfd65f558561316016f899f3a6f79769dd2416fa04e8c83bec829848beed5b4'),
    Copy('box_convention_layouts', MMDET3D,
         'mmdet3d.models.dense_heads.anchor3d_head.Anchor3DHead._init_layers',
         'f3ae767ef22803a28b76cf47dc6db24871a4c9f96251e02e455dc53f298e5424'),
    Copy('box_convention_layouts', MMDET3D,
         'mmdet3d.models.task_modules.anchor.anchor_3d_generator'
         '.Anchor3DRangeGenerator.anchors_single_range',
         '7f3708ee430d52e63dbf1fa70c4604843e09e63d2b6cc2134cf97f6bab46f9e5'),
    Copy('box_convention_layouts', MMDET3D,
         'mmdet3d.models.task_modules.anchor.anchor_3d_generator'
         '.AlignedAnchor3DRangeGenerator.anchors_single_range',
         'a235b95ac423519faec1f9135d08e02a883871f5ce93b33a5e8734d487ecdab9'),
    Copy('box_convention_layouts', MMDET3D,
         'mmdet3d.models.task_modules.coders.delta_xyzwhlr_bbox_coder'
         '.DeltaXYZWLHRBBoxCoder.decode',
         'fa600c484655c3a774d6a323552ecc464ffaa47635e7e2f6b3397ee6d786de72'),
    Copy('box_convention_layouts', MMDET3D,
         'mmdet3d.models.dense_heads.base_3d_dense_head.Base3DDenseHead'
         '._predict_by_feat_single',
         'e6b4c43a7a1770c6818bb0c3cc57490f23bdce1419da5b8b7b14009639d35521'),
    Copy('box_convention_layouts', MMDET3D,
         'mmdet3d.models.dense_heads.train_mixins.get_direction_target',
         'f9d6e09a44236cd3d900aa5552d0a86557fa1d088670c6d488e0f5026031b764'),
)
