"""Every place the plugin replaces or relies on private upstream behaviour.

One :class:`Override` per place, with the versions of each package it was
reviewed against. :func:`outside_reviewed_range` compares them with what is
installed; ``tests/compat/test_inventory.py`` fails on any mismatch, naming
what to re-check. ``requirements/`` pins the same ranges.

What each place uses of upstream is checked too: ``upstream_checks.CHECKS``
records, per override, the signature of every private name it calls,
overrides or reads, and the sha256 of the source of every upstream function
it re-implements, at the versions they were taken at;
``tests/compat/test_upstream_checks.py`` fails when the installed upstream
differs, naming the plugin code to re-check. Nothing upstream is imported
here or there: the names are strings, resolved by the test.

Fixes marked ``switchable`` can be turned off for one run with
``MMDET3D_PLUGIN_COMPAT_OFF=<name>[,<name>...]`` (read when the plugin is
imported), to compare with the upstream behaviour.
"""
import os
import platform
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version
from typing import Dict, FrozenSet, List, Optional

from packaging.specifiers import SpecifierSet
from packaging.version import Version

#: Environment variable naming switchable fixes to leave off.
OFF_VARIABLE = 'MMDET3D_PLUGIN_COMPAT_OFF'

#: The torch versions the suite ran on, oldest to newest: 2.1.2 (the torch
#: of OpenMMLab's own mmcv 2.1.0 wheels) and 2.13.0 (docs/install.md). A
#: torch entry below is reviewed against both ends; ``upstream_checks``
#: records the source of each copy of torch code at each end.
TORCH_RUN = '>=2.1.2,<2.14'


@dataclass(frozen=True)
class Override:
    """One replaced or relied-on piece of upstream behaviour.

    Args:
        name (str): Short identifier.
        where (str): The plugin object that does it.
        what (str): What it replaces or relies on, and why.
        upstream (str): The upstream issue, PR or private name.
        remove_when (str): When it can go.
        reviewed (dict): Package name -> PEP 440 range it was reviewed
            against (``python`` for the interpreter).
        switchable (bool): Whether ``MMDET3D_PLUGIN_COMPAT_OFF`` can turn it
            off. Defaults to False.
        at_import (bool): Whether importing the plugin applies it (the
            README lists these). Defaults to False: it takes effect where a
            config or tool uses the class named in ``where``.
    """
    name: str
    where: str
    what: str
    upstream: str
    remove_when: str
    reviewed: Dict[str, str] = field(default_factory=dict)
    switchable: bool = False
    at_import: bool = False


OVERRIDES = (
    Override(
        name='checkpoint_safe_globals',
        where='compat/checkpoints.py: allow_mmengine_checkpoints',
        what="adds mmengine's HistoryBuffer, numpy arrays and a restricted "
        "getattr to torch.load's weights-only allow list; reads "
        "HistoryBuffer._statistics_methods and names numpy's private "
        'multiarray._reconstruct',
        upstream='mmengine #1655 (fixed on main, unreleased)',
        remove_when='mmengine > 0.10.7 is required',
        reviewed={'torch': TORCH_RUN, 'mmengine': '>=0.10.0,<=0.10.7',
                  'numpy': '>=1.24,<2'},
        at_import=True),
    Override(
        name='config_text_once',
        where='compat/config_text.py: format_config_text_once',
        what="replaces the yapf FormatCode that mmengine's config module "
        'calls in Config.pretty_text by one that remembers its results: '
        'the Runner, RuntimeInfoHook, the visualizer and every checkpoint '
        'read pretty_text, each formatting the whole config again',
        upstream='mmengine.config.config.FormatCode (module global)',
        remove_when='mmengine caches Config.pretty_text',
        reviewed={'mmengine': '>=0.10.0,<=0.10.7', 'yapf': '>=0.40.2,<0.44'},
        at_import=True),
    Override(
        name='cpu_dist',
        where='compat/cpu_dist.py: init_cpu_dist, CPUDistributedDataParallel',
        what='starts gloo before the Runner (init_dist calls '
        'torch.cuda.set_device) and drops device_ids for CPU modules',
        upstream='mmengine #1460',
        remove_when='mmengine handles CPU DDP itself',
        reviewed={'mmengine': '>=0.10.0,<=0.10.7'},
        at_import=True),
    Override(
        name='restart_store',
        where='compat/restart_store.py: restart_safe_store, '
        'init_restart_safe_dist',
        what='prefixes the process group store with the torchrun attempt, '
        'so a restarted rank does not read the side groups of the attempt '
        'before (stale peer addresses: connectFullMesh refused, or a hang); '
        "init_restart_safe_dist does what mmengine's private "
        '_init_dist_pytorch does, on that store',
        upstream='torch.distributed.rendezvous._create_c10d_store '
        '(no per-attempt prefix); pytorch #135712',
        remove_when='torchrun gives each attempt a store namespace of its own',
        reviewed={'torch': TORCH_RUN, 'mmengine': '>=0.10.0,<=0.10.7'}),
    Override(
        name='spconv_cpu_backward',
        where='compat/spconv_cpu.py: let_spconv_train_on_cpu',
        what="replaces spconv.pytorch.ops.get_current_stream by one that "
        'returns 0 when CUDA is absent',
        upstream='traveller59/spconv#366 (forward only)',
        remove_when="spconv's backward checks the device itself",
        reviewed={'spconv': '==2.3.8'},
        at_import=True),
    Override(
        name='dbsampler_np_long',
        where='compat/dbsampler.py: DataBaseSampler',
        what="registers DataBaseSampler over mmdet3d's with force=True; its "
        "sample_all is mmdet3d's own, run with a numpy that has long=int64",
        upstream='mmdet3d #2821, PR #2872 (merged after 1.4.0)',
        remove_when='an mmdet3d release containing PR #2872 is required',
        reviewed={'mmdet3d': '==1.4.0', 'numpy': '>=1.24,<2'},
        switchable=True,
        at_import=True),
    Override(
        name='centerhead_init',
        where='compat/centerhead_init.py: CenterHead',
        what="registers CenterHead over mmdet3d's with force=True; its "
        "init_weights also sets each task head's heatmap bias to "
        'init_bias, which mmengine never reaches inside the plain '
        'nn.ModuleList',
        upstream='mmdet3d #1554',
        remove_when='mmdet3d initialises the task heads of CenterHead',
        reviewed={'mmdet3d': '==1.4.0', 'mmengine': '>=0.10.0,<=0.10.7'},
        switchable=True,
        at_import=True),
    Override(
        name='atomic_checkpoint_backend',
        where='fileio/atomic.py: AtomicLocalBackend',
        what="registers a file backend with mmengine's register_backend("
        'force=True) so checkpoints are written to a temporary file and '
        'renamed',
        upstream='mmengine.fileio.register_backend',
        remove_when='mmengine writes checkpoints atomically',
        reviewed={'mmengine': '>=0.10.0,<=0.10.7'},
        at_import=True),
    Override(
        name='checkpoint_hook_save_step',
        where='engine/atomic_checkpoint/atomic_checkpoint_hook.py: '
        'AtomicCheckpointHook',
        what='overrides the private CheckpointHook._save_checkpoint_with_step',
        upstream='mmengine.hooks.CheckpointHook (private method)',
        remove_when='mmengine writes checkpoints atomically',
        reviewed={'mmengine': '>=0.10.0,<=0.10.7'}),
    Override(
        name='metric_evaluate_single',
        where='evaluation/metrics/safe_nuscenes_metric.py: '
        'SafeNuScenesMetric',
        what='overrides the private NuScenesMetric._evaluate_single to score '
        'a result without any box',
        upstream='mmdet3d.evaluation.NuScenesMetric (private method)',
        remove_when='mmdet3d scores empty results itself',
        reviewed={'mmdet3d': '==1.4.0'}),
    Override(
        name='dataset_dict_keys',
        where='compat/nuscenes_class_names.py: PicklableDetectionConfig, '
        'reduce_detection_config',
        what="replaces the devkit's dict_keys class_names so the dataset "
        'and the metric pickle under spawn / forkserver (and the metric '
        'under copy.deepcopy)',
        upstream='nuscenes-devkit DetectionConfig.class_names (dict_keys)',
        remove_when='nuscenes-devkit stores class_names as a list',
        reviewed={'nuscenes-devkit': '==1.2.0', 'mmdet3d': '==1.4.0'}),
    Override(
        name='optim_wrapper_accumulative_counts',
        where='engine/runner.py: _accumulative_counts',
        what='reads the private OptimWrapper._accumulative_counts (no '
        'public accessor)',
        upstream='mmengine.optim.OptimWrapper (private attribute)',
        remove_when='mmengine exposes the count',
        reviewed={'mmengine': '>=0.10.0,<=0.10.7'}),
    Override(
        name='forkserver_preload',
        where='datasets/forkserver.py: setup_forkserver_preload',
        what="reads multiprocessing.forkserver's private preload list to "
        'extend it',
        upstream='multiprocessing.forkserver._forkserver._preload_modules',
        remove_when='the standard library exposes the preload list',
        reviewed={'python': '>=3.8,<3.14'}),
    Override(
        name='converter_by_path',
        where='create_data/converter.py: run_mmdet3d_converter',
        what="imports mmdet3d's converter scripts from the wheel by path "
        '(sys.modules) and runs them with a temporary working directory, '
        "since update_infos_to_v2 opens './data/nuscenes' whatever the root",
        upstream="mmdet3d update_infos_to_v2.py (dataroot='./data/nuscenes')",
        remove_when='mmdet3d passes the data root through',
        reviewed={'mmdet3d': '==1.4.0'}),
    Override(
        name='registry_locations',
        where='lazy_registration.py: add_plugin_locations',
        what="appends the plugin's registration module to the private "
        "Registry._locations of mmdet3d's registries and reads the private "
        'Registry._imported, so Registry.import_from_location registers the '
        'plugin at the first lookup',
        upstream='mmengine.registry.Registry (private attributes)',
        remove_when='a mmengine registry takes another location publicly',
        reviewed={'mmengine': '>=0.10.0,<=0.10.7'}),
    Override(
        name='fast_points_like',
        where='datasets/transforms/points_io.py: points_like',
        what='builds the points object BasePoints.__init__ builds (type, '
        'dimensions, attributes) around an array, without its clone; every '
        'Fast* transform below returns its points through it',
        upstream='mmdet3d.structures.points.BasePoints.__init__',
        remove_when="mmdet3d's points hold an array without copying it",
        reviewed={'mmdet3d': '==1.4.0'}),
    Override(
        name='fast_load_points_from_file',
        where='datasets/transforms/load_points_from_file.py: '
        'FastLoadPointsFromFile, _load_points',
        what='overrides the private LoadPointsFromFile._load_points (its '
        'fallback calls super()._load_points; _points.read_float32 reads as '
        'it reads) and re-implements transform, bit for bit',
        upstream='mmdet3d.datasets.transforms.LoadPointsFromFile (private '
        'method)',
        remove_when="mmdet3d's loader reads once, without extra copies",
        reviewed={'mmdet3d': '==1.4.0'}),
    Override(
        name='fast_load_points_from_multi_sweeps',
        where='datasets/transforms/load_points_from_multi_sweeps.py: '
        'FastLoadPointsFromMultiSweeps, _load_points, _not_close',
        what='overrides the private LoadPointsFromMultiSweeps._load_points '
        '(its fallback calls super()._load_points), re-implements the '
        'private _remove_close (_not_close, point_kernels.count_not_close, '
        'move_sweep) and transform, bit for bit and with the same draws',
        upstream='mmdet3d.datasets.transforms.LoadPointsFromMultiSweeps '
        '(private methods)',
        remove_when="mmdet3d's loader writes each sweep once",
        reviewed={'mmdet3d': '==1.4.0'}),
    Override(
        name='fast_global_rot_scale_trans',
        where='datasets/transforms/global_rot_scale_trans.py: '
        'FastGlobalRotScaleTrans, _random_scale, _stock_steps',
        what='calls the private GlobalRotScaleTrans._random_scale and '
        're-implements transform, its private _rot_bbox_points, '
        '_scale_bbox_points and _trans_bbox_points, and the points\' rotate, '
        'scale and translate (the boxes\' rotate giving the matrix) in one '
        'pass, bit for bit and with the same draws',
        upstream='mmdet3d.datasets.transforms.GlobalRotScaleTrans (private '
        'methods)',
        remove_when="mmdet3d's transform moves the points in one pass",
        reviewed={'mmdet3d': '==1.4.0'}),
    Override(
        name='fast_object_sample',
        where='datasets/transforms/object_sample.py: FastObjectSample, '
        'remove_points_in_boxes',
        what="re-implements ObjectSample (__init__'s default sampler, "
        'transform, remove_points_in_boxes, the points\' cat) and, in '
        'box_geometry.py / point_kernels.py, box_np_ops.points_in_rbbox with '
        'its numba kernels (the private _points_in_convex_polygon_3d_jit), '
        'bit for bit',
        upstream='mmdet3d.datasets.transforms.ObjectSample, '
        'mmdet3d.structures.ops.box_np_ops (private kernel)',
        remove_when="mmdet3d's ObjectSample writes the points once",
        reviewed={'mmdet3d': '==1.4.0'}),
    Override(
        name='fast_db_sampler',
        where='datasets/transforms/db_sampler.py: FastDataBaseSampler, '
        'sample_all, sample_class_v2',
        what='re-implements DataBaseSampler.sample_all and sample_class_v2 '
        'with the same draws and, in box_geometry.py (box_collision_rows), '
        'data_augment_utils.box_collision_test, exactly',
        upstream='mmdet3d.datasets.transforms.DataBaseSampler',
        remove_when="mmdet3d's sampler runs without numba and copies",
        reviewed={'mmdet3d': '==1.4.0'}),
    Override(
        name='fast_point_shuffle',
        where='datasets/transforms/point_shuffle.py: FastPointShuffle',
        what='re-implements PointShuffle.transform and BasePoints.shuffle '
        '(the same torch.randperm draw, the rows gathered by index_select)',
        upstream='mmdet3d.datasets.transforms.PointShuffle',
        remove_when="mmdet3d's shuffle gathers the rows in one pass",
        reviewed={'mmdet3d': '==1.4.0'}),
    Override(
        name='fast_points_range_filter',
        where='datasets/transforms/points_range_filter.py: '
        'FastPointsRangeFilter',
        what='re-implements PointsRangeFilter.transform and '
        'BasePoints.in_range_3d (point_kernels.range_keep_mask), exactly',
        upstream='mmdet3d.datasets.transforms.PointsRangeFilter',
        remove_when="mmdet3d's filter copies the kept rows once",
        reviewed={'mmdet3d': '==1.4.0'}),
    Override(
        name='seeded_class_sampler',
        where='engine/resume/gt_database.py: SeededClassSampler, '
        '_sample, _example_num',
        what="overrides the GT-database BatchSampler's private _sample and "
        'reads its private _example_num; like() copies the __dict__ that '
        'BatchSampler.__init__ fills, and BatchSampler.sample must draw '
        'through _sample',
        upstream='mmdet3d.datasets.transforms.dbsampler.BatchSampler '
        '(private method and attribute)',
        remove_when="mmdet3d's GT-database sampling draws from each "
        "sample's random state",
        reviewed={'mmdet3d': '==1.4.0'}),
    Override(
        name='packed_gt_database',
        where='datasets/transforms/db_sampler.py: FastDataBaseSampler, '
        'share_infos, RecipeClassSampler',
        what="replaces each GT-database BatchSampler's private "
        '_sampled_list with packed infos (packed_infos.py) and pickles '
        'its private _indices as the random state '
        'DataBaseSampler.__init__ shuffled it from (its samplers built '
        'in order, nothing else drawn; _reset reshuffles in place, after '
        'which _indices pickles by value)',
        upstream='mmdet3d.datasets.transforms.dbsampler.BatchSampler, '
        'DataBaseSampler.__init__ (private attributes)',
        remove_when="mmdet3d's GT database is held in arrays that "
        'workers share',
        reviewed={'mmdet3d': '==1.4.0'}),
    Override(
        name='dataset_fully_initialized',
        where='datasets/safe_nuscenes_dataset.py: SafeNuScenesDataset, '
        '_fully_initialized',
        what="reads BaseDataset's private _fully_initialized so that "
        '__getstate__ pickles the serialized infos only once built',
        upstream='mmengine.dataset.BaseDataset (private attribute)',
        remove_when='mmengine exposes whether a dataset is initialized',
        reviewed={'mmengine': '>=0.10.0,<=0.10.7'}),
    Override(
        name='fetcher_getitems',
        where='engine/resume/seeded_items.py: seed_samples, __getitems__',
        what="sets __getitems__ on the train dataset instance: torch's "
        '_MapDatasetFetcher.fetch reads the attribute from the instance '
        '(hasattr / self.dataset.__getitems__), so each sample is seeded '
        'without a wrapper around the dataset',
        upstream='torch.utils.data._utils.fetch._MapDatasetFetcher.fetch '
        '(private module)',
        remove_when='DataLoader takes a per-sample hook (or mmengine seeds '
        'each sample from its place in the run)',
        reviewed={'torch': TORCH_RUN}),
    Override(
        name='resumable_sampler',
        where='engine/resume/sampler.py: ResumableSampler',
        what="re-implements DefaultSampler's order (torch.randperm seeded "
        'with seed + epoch, rank r of W taking r, r + W, ..., round_up '
        "padding), so a fresh epoch yields DefaultSampler's indices",
        upstream='mmengine.dataset.DefaultSampler',
        remove_when="mmengine's samplers start anywhere in an epoch",
        reviewed={'mmengine': '>=0.10.0,<=0.10.7'}),
    Override(
        name='resumable_loops',
        where='engine/resume/loops.py: ResumableEpochBasedTrainLoop, '
        'ResumableIterBasedTrainLoop, _InfiniteDataloaderIterator, '
        '_randomness_cfg',
        what='re-implements EpochBasedTrainLoop.run_epoch and '
        'IterBasedTrainLoop.run (starting at the resumed batch), with the '
        "loops' private _epoch, _iter, _max_iters and "
        "_decide_current_val_interval and mmengine's private "
        '_InfiniteDataloaderIterator; builds the train DataLoader as '
        "BaseLoop does, from the Runner's private _randomness_cfg",
        upstream='mmengine.runner.loops (private attributes and class)',
        remove_when="mmengine's loops resume inside an epoch without "
        'loading the batches they skip',
        reviewed={'mmengine': '>=0.10.0,<=0.10.7'}),
    Override(
        name='runner_load_from',
        where='engine/resume/data_position_hook.py: DataPositionHook, '
        '_load_from',
        what="reads the Runner's private _load_from (the resumed "
        'checkpoint, kept nowhere else) for the restart line of the log',
        upstream='mmengine.runner.Runner (private attribute)',
        remove_when='mmengine exposes the checkpoint it resumed from',
        reviewed={'mmengine': '>=0.10.0,<=0.10.7'}),
    Override(
        name='runner_scale_lr',
        where='engine/runner.py: PluginRunner, scale_lr, _ParamScheduler',
        what='re-implements Runner.scale_lr (counting gradient '
        "accumulation) and tells built schedulers by mmengine's private "
        '_ParamScheduler base class',
        upstream='mmengine.runner.Runner.scale_lr, mmengine.optim.'
        '_ParamScheduler',
        remove_when="mmengine's scale_lr counts gradient accumulation",
        reviewed={'mmengine': '>=0.10.0,<=0.10.7'}),
    Override(
        name='batchnorm_base_class',
        where='engine/amp.py: _BatchNorm',
        what="tells BatchNorm layers by torch's private _BatchNorm base "
        'class (doctor/checks/model.py and doctor/checks/optim.py too)',
        upstream='torch.nn.modules.batchnorm._BatchNorm',
        remove_when='torch has a public BatchNorm base class',
        reviewed={'torch': TORCH_RUN}),
    Override(
        name='preemption_default_store',
        where='engine/preemption/preemption_hook.py: PreemptionHook, '
        '_get_default_store',
        what="puts the ranks' stop agreement on the default group's store, "
        "from torch's private distributed_c10d._get_default_store()",
        upstream='torch.distributed.distributed_c10d._get_default_store',
        remove_when="torch exposes the default group's store",
        reviewed={'torch': TORCH_RUN}),
    Override(
        name='cpu_bf16_onednn_check',
        where='engine/cpu_bf16.py: cpu_bf16_native, '
        '_is_mkldnn_bf16_supported',
        what="asks oneDNN through torch's private "
        'torch.ops.mkldnn._is_mkldnn_bf16_supported() whether bfloat16 runs '
        'natively (absent: taken as emulated)',
        upstream='torch.ops.mkldnn._is_mkldnn_bf16_supported',
        remove_when='torch tells whether the CPU runs bfloat16 natively',
        reviewed={'torch': TORCH_RUN}),
    Override(
        name='bf16_optim_wrapper',
        where='engine/optimizers/bf16_optim_wrapper.py: BF16AmpOptimWrapper',
        what='skips AmpOptimWrapper.__init__ (its GPU assert) and sets the '
        'attributes it sets (cast_dtype, loss_scaler, device_type); '
        're-implements optim_context with bfloat16 autocast on the '
        "model's device",
        upstream='mmengine.optim.AmpOptimWrapper',
        remove_when="mmengine's AmpOptimWrapper runs bfloat16 on CPU",
        reviewed={'mmengine': '>=0.10.0,<=0.10.7'}),
    Override(
        name='rank0_evaluate',
        where='evaluation/metrics/rank0_evaluate.py: Rank0EvaluateMixin, '
        '_to_cpu',
        what='re-implements BaseMetric.evaluate (collect, compute on rank 0, '
        "share), waiting on a gloo group, and mmengine's private "
        'metric._to_cpu',
        upstream='mmengine.evaluator.BaseMetric.evaluate, '
        'mmengine.evaluator.metric._to_cpu',
        remove_when="mmengine's metrics wait for rank 0 with a timeout of "
        'their own',
        reviewed={'mmengine': '>=0.10.0,<=0.10.7'}),
    Override(
        name='nuscenes_metric_arrays',
        where='evaluation/functional/nusc_format.py: lidar_to_global, '
        'attribute_table',
        what="re-implements NuScenesMetric's formatting on arrays "
        '(output_to_nusc_box, lidar_nusc_box_to_global, the attribute rules '
        'of the private _format_lidar_bbox); SafeNuScenesMetric.process and '
        'compute_metrics (metrics/safe_nuscenes_metric.py) and '
        "write_results_json (functional/results_json.py) follow the stock "
        "metric's process, compute_metrics and result file",
        upstream='mmdet3d.evaluation.NuScenesMetric (private method)',
        remove_when="mmdet3d's metric formats the boxes of a sample at once",
        reviewed={'mmdet3d': '==1.4.0'}),
    Override(
        name='devkit_detection_eval',
        where='evaluation/functional/detection_eval.py: evaluate, '
        'Predictions',
        what="re-implements nuscenes-devkit's DetectionEval on arrays (the "
        'checks of __init__ and load_prediction, filter_eval_boxes with '
        'add_center_dist, accumulate); gt_cache.py feeds it, and '
        'SafeNuScenesMetric._no_predictions_summary runs '
        'DetectionEval.evaluate on a stand-in for the evaluator',
        upstream='nuscenes.eval.detection.evaluate.DetectionEval, '
        'nuscenes.eval.detection.algo.accumulate',
        remove_when='the devkit evaluates arrays in seconds',
        reviewed={'nuscenes-devkit': '==1.2.0'}),
    Override(
        name='torch_total_norm',
        where='compat/torch_api.py: total_norm, _total_norm_before_2_6',
        what="computes torch 2.6's get_total_norm on an older torch with "
        "torch's private _foreach_utils (_group_tensors_by_device_and_dtype, "
        '_has_foreach_support) and torch._foreach_norm, as torch 2.1\'s '
        'clip_grad_norm_ does: the same value, bit for bit',
        upstream='torch.nn.utils.get_total_norm (torch >= 2.6)',
        remove_when='torch >= 2.6 is the oldest supported torch',
        reviewed={'torch': TORCH_RUN}),
    Override(
        name='torch_error_file',
        where='failures/error_files.py: RankErrorHandler, '
        'error_file_data',
        what="writes (and read_error_file reads) torch elastic's error-file "
        'layout as ErrorHandler.record_exception writes it, with fields of '
        'its own under extraInfo',
        upstream='torch.distributed.elastic.multiprocessing.errors.'
        'ErrorHandler.record_exception',
        remove_when="torch elastic's handler takes extra fields",
        reviewed={'torch': TORCH_RUN}),
    Override(
        name='dataloader_queue_feeders',
        where='compat/dataloader_feeders.py: '
        'join_queue_feeders_at_shutdown',
        what="wraps torch's _MultiProcessingDataLoaderIter._shutdown_workers "
        'so that it joins the feeder thread of each queue it closed (reads '
        'the iterator\'s _index_queues and _worker_result_queue, and each '
        "multiprocessing.Queue's _thread and _closed): nothing of an "
        'iterator is left running when its shutdown returns',
        upstream='torch.utils.data.dataloader._MultiProcessingDataLoaderIter'
        '._shutdown_workers (private; it cancels the feeders\' join)',
        remove_when='torch joins the queue feeders at shutdown',
        reviewed={'torch': TORCH_RUN, 'python': '>=3.8,<3.14'},
        at_import=True),
    Override(
        name='runner_loops_built',
        where='cli/run.py: end_data_loading',
        what="reads Runner._train_loop / _val_loop / _test_loop to tell a "
        'built loop from a config dict (the public properties build it), '
        "and drops a built loop's dataloader_iterator at the run's end, so "
        "its DataLoader workers end through the iterator's own shutdown "
        'before the Runner is freed',
        upstream='mmengine.runner.Runner._train_loop (private)',
        remove_when='mmengine ends the loaders of a run at its end',
        reviewed={'mmengine': '==0.10.7'}),
    Override(
        name='torchrun_stopped_ranks',
        where='failures/exit_status.py: StoppedRanks',
        what="reads the pid of each rank torchrun stops after another "
        "failed from its warning 'Sending process %s closing signal %s' "
        '(its arguments, not its text): torch 2.1 keeps no exit status of '
        'those ranks, so the failure report would not name them as victims',
        upstream='torch.distributed.elastic.multiprocessing.api.'
        'SubprocessContext._close',
        remove_when="the oldest supported torch's SubprocessContext._poll "
        'records the ranks it stopped in ChildFailedError.failures (2.13 '
        'does, 2.1.2 does not)',
        reviewed={'torch': TORCH_RUN}),
    Override(
        name='mmengine_activation_checkpointing',
        where='engine/runner.py: _checkpoint_activations',
        what="takes the config's activation_checkpointing key out of the "
        "Runner's cfg before mmengine's train() reads it (there it wraps "
        "each module's forward in reentrant torch.utils.checkpoint with "
        'positional arguments only: a list input loses its graph, weights '
        'whose inputs need no grad get none) and checkpoints the modules '
        "with engine/activation_checkpointing (use_reentrant=False, "
        'context_fn: torch >= 2.1)',
        upstream='mmengine #1425; mmengine.runner.activation_checkpointing',
        remove_when='mmengine checkpoints without reentrant autograd, with '
        'keyword arguments and BatchNorm statistics moved once',
        reviewed={'mmengine': '==0.10.7', 'torch': TORCH_RUN}),
    Override(
        name='step_memory_profiler',
        where='doctor/step_memory.py: measure_step',
        what="reads the CPU allocator's '[memory]' events of the profiler's "
        'kineto results (profile.profiler.kineto_results.events(): name, '
        'device_type, nbytes, start time) for the live tensor peak of a '
        'step on the CPU, where torch keeps no max_memory_allocated',
        upstream='torch.autograd.profiler.profile.kineto_results (private)',
        remove_when='torch offers peak memory statistics for the CPU',
        reviewed={'torch': TORCH_RUN}),
    Override(
        name='box_convention_layouts',
        where='box_convention/anchor3d.py: channel_order, direction_swap, '
        'convert_anchor_head',
        what="converts 0.x weights (there, and in centerpoint.py and detr.py "
        "beside it) by how mmdet3d's heads lay out and decode their "
        "outputs: CenterHead's dim / rot branches "
        '(SeparateHead.__init__, CenterHead.predict_by_feat, '
        'CenterPointBBoxCoder.decode), Anchor3DHead\'s channels a * C + k '
        "(its private _init_layers) over Anchor3DRangeGenerator's anchor "
        'order, DeltaXYZWLHRBBoxCoder.decode, the direction decoding of the '
        'private Base3DDenseHead._predict_by_feat_single and its targets '
        '(get_direction_target), DETR3D\'s reg_branches code (projects/, '
        "not installed); boxes.py re-implements the box map of mmdet3d's "
        'tools/update_data_coords.py (update_nuscenes_or_lyft_infos, a '
        'script that parses sys.argv on import: tests/box_convention/'
        'test_boxes.py runs it)',
        upstream='mmdet3d PR #677 (v1.0.0rc0: the box convention); '
        'projects/DETR3D/old_detr3d_converter.py',
        remove_when='never for 0.x checkpoints: re-check the conversion '
        "(tests/box_convention) when a head's layout or decoding changes",
        reviewed={'mmdet3d': '==1.4.0'}),
)


def installed_version(package: str) -> Optional[str]:
    """Installed version of ``package`` (``python``: the interpreter)."""
    if package == 'python':
        return platform.python_version()
    try:
        return version(package)
    except PackageNotFoundError:
        return None


def outside_reviewed_range(overrides=OVERRIDES) -> List[str]:
    """One message per override whose packages are outside its range.

    Returns:
        list[str]: Empty when every installed version was reviewed.
    """
    messages = []
    for override in overrides:
        for package, spec in override.reviewed.items():
            found = installed_version(package)
            if found is None:
                continue
            local = Version(found).public  # 2.13.0+cpu -> 2.13.0
            if SpecifierSet(spec).contains(local, prereleases=True):
                continue
            messages.append(
                f'{package} {found} is outside the range {spec!r} that '
                f'compat override {override.name!r} was reviewed against: '
                f're-check {override.where} ({override.upstream}; '
                f'{override.what}), then widen its range in '
                'projects/mmdet3d_plugin/compat/inventory.py and '
                'requirements/.')
    return messages


def switched_off() -> FrozenSet[str]:
    """Switchable fixes named in ``MMDET3D_PLUGIN_COMPAT_OFF``.

    Raises:
        ValueError: For a name that is not a switchable override.
    """
    names = {n.strip() for n in os.environ.get(OFF_VARIABLE, '').split(',')
             if n.strip()}
    switchable = {o.name for o in OVERRIDES if o.switchable}
    unknown = sorted(names - switchable)
    if unknown:
        raise ValueError(
            f'{OFF_VARIABLE}: unknown fix(es) {unknown}; the fixes that can '
            f'be turned off are {sorted(switchable)}.')
    return frozenset(names)
