"""Every place the plugin replaces or relies on private upstream behaviour.

One :class:`Override` per place, with the versions of each package it was
reviewed against. :func:`outside_reviewed_range` compares them with what is
installed; ``tests/compat/test_inventory.py`` fails on any mismatch, naming
what to re-check. ``requirements/`` pins the same ranges.

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
        'HistoryBuffer._statistics_methods',
        upstream='mmengine #1655 (fixed on main, unreleased)',
        remove_when='mmengine > 0.10.7 is required',
        reviewed={'torch': '>=2.4,<2.14', 'mmengine': '>=0.10.0,<=0.10.7'},
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
        'before (stale peer addresses: connectFullMesh refused, or a hang)',
        upstream='torch.distributed.rendezvous._create_c10d_store '
        '(no per-attempt prefix); pytorch #135712',
        remove_when='torchrun gives each attempt a store namespace of its own',
        reviewed={'torch': '>=2.4,<2.14'}),
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
        where='engine/hooks/atomic_checkpoint_hook.py: AtomicCheckpointHook',
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
        where='synthetic/converter.py: create_nuscenes_infos',
        what="imports mmdet3d's converter scripts from the wheel by path "
        '(sys.modules) and runs them with a temporary working directory, '
        "since update_infos_to_v2 opens './data/nuscenes' whatever the root",
        upstream="mmdet3d update_infos_to_v2.py (dataroot='./data/nuscenes')",
        remove_when='mmdet3d passes the data root through',
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
