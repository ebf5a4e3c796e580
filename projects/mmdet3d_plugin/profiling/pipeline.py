"""The profiler of ``tools/profile_pipeline.py`` (its command line:
:mod:`.tool`): where a config's train samples spend their time, and how
many workers feed a GPU.

Builds the config's train dataset as tools/train.py does (real mmdet3d
transforms, ``--data-root`` and ``--cfg-options`` applied), then measures,
as one DataLoader worker on one core:

- each transform's milliseconds per sample in steady state, warm-up
  samples excluded (:mod:`.steady`);
- a fresh worker's start-up to its first sample, in a new process, numba
  compilation of ``ObjectSample``'s collision kernels included
  (:mod:`.worker_start`);
- samples per second per worker, and the ``num_workers`` per GPU that
  feed a step of ``--step-time`` seconds (:mod:`.feed`).

The doctor's ``data.throughput`` check runs the same measurement, shorter.
"""
from typing import Dict, Optional

from ..datasets.wrappers import dataset_name
from .dataset import build_train_dataset
from .feed import estimate_feed
from .pipeline_profile import PipelineProfile
from .steady import measure_steady_state
from .worker_start import measure_fresh_worker


def loader_settings(cfg) -> tuple:
    """``(batch_size, num_workers)`` of ``train_dataloader``."""
    loader = cfg.get('train_dataloader') or {}
    return int(loader.get('batch_size', 1) or 1), int(
        loader.get('num_workers', 0) or 0)


def profile_pipeline(config: str,
                     data_root: Optional[str] = None,
                     cfg_options: Optional[Dict] = None,
                     samples: int = 20,
                     warmup: int = 2,
                     workers: Optional[int] = None,
                     step_time: Optional[float] = None,
                     fresh_worker: bool = True) -> PipelineProfile:
    """Profile the train pipeline of ``config``.

    Args:
        config (str): Config file.
        data_root (str, optional): ``--data-root``. Defaults to None.
        cfg_options (dict, optional): ``--cfg-options``. Defaults to None.
        samples (int): Samples measured in steady state. Defaults to 20.
        warmup (int): Samples loaded first, not measured. Defaults to 2.
        workers (int, optional): Workers per GPU to judge. Defaults to
            None: the config's ``train_dataloader.num_workers``.
        step_time (float, optional): Seconds of one training step.
            Defaults to None (see :func:`.feed.estimate_feed`).
        fresh_worker (bool): Also time a fresh worker's start-up in a new
            process. Defaults to True.

    Returns:
        PipelineProfile: The measurements.

    Examples:
        >>> profile = profile_pipeline(
        ...     'configs/centerpoint/centerpoint_pillar02_second_secfpn_'
        ...     '8xb4-cyclic-20e_nus-3d.py', data_root='data/nus_dense',
        ...     samples=20, step_time=0.25)
        >>> print(profile.format())
    """
    cfg, dataset = build_train_dataset(config, data_root, cfg_options)
    steady = measure_steady_state(dataset, samples=samples, warmup=warmup)
    batch_size, configured = loader_settings(cfg)
    feed = estimate_feed(steady.ms_per_sample, batch_size,
                         configured if workers is None else workers,
                         step_time)
    worker = measure_fresh_worker(config, data_root, cfg_options) \
        if fresh_worker else None
    return PipelineProfile(config, data_root, dataset_name(dataset), steady,
                           feed, worker)
