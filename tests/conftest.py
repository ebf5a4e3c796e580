"""Shared fixtures.

``nus_synthetic`` is the generated nuScenes-format dataset with mmdet3d's
info files, cached across pytest sessions in ``data/.cache/`` under a key
that changes with the generator's and converter's sources, the seed and the
mmdet3d / nuscenes-devkit versions. ``slurm`` is a Slurm of the tests' own
(``tests/helpers/slurm_cluster.py``), started once per session (per
pytest-xdist worker) by the tests that use it.

Every process of the suite computes on one thread (``OMP_NUM_THREADS`` and
``MKL_NUM_THREADS`` are 1 unless set): the pytest-xdist workers and the
processes they start already keep the cores busy side by side, and
torch's default of one thread per core then oversubscribes them, its
OpenMP threads spinning while they wait (the full-size config tests took
2.2x the wall time and 2.4x the CPU time so).
"""
import os
import shutil
from pathlib import Path

import pytest

from tests.helpers.synthetic_data import synthetic_cache_dir

TESTS = Path(__file__).resolve().parent

# Before any test imports torch (nothing above does).
for _name in ('OMP_NUM_THREADS', 'MKL_NUM_THREADS'):
    os.environ.setdefault(_name, '1')


@pytest.fixture(scope='session')
def nus_synthetic() -> Path:
    """Root of the generated dataset (seed 0): ``v1.0-mini`` tables,
    ``samples/``, ``sweeps/``, ``maps/``, ``nuscenes_infos_{train,val}.pkl``
    and the ground-truth database, made by mmdet3d's converter."""
    from projects.mmdet3d_plugin.synthetic.writer import (
        prepare_synthetic_nuscenes)
    return prepare_synthetic_nuscenes(synthetic_cache_dir(seed=0), seed=0)


@pytest.fixture(scope='session')
def slurm(tmp_path_factory):
    """A Slurm of the tests' own (``tests/helpers/slurm_cluster.py``):
    slurmctld and two slurmd, nodes ``node1`` and ``node2`` in partition
    ``debug``, each with this machine's CPUs and memory; stopped, and its
    folder removed, after the session."""
    from tests.helpers.slurm_cluster import SlurmCluster
    try:
        cluster = SlurmCluster(tmp_path_factory.mktemp('slurm'), nodes=2)
    except RuntimeError as exc:  # not installed: the command that installs
        pytest.fail(str(exc), pytrace=False)
    cluster.start()
    print(f'slurm: daemons up in {cluster.start_seconds:.1f} s')
    yield cluster
    cluster.stop()
    shutil.rmtree(cluster.root, ignore_errors=True)


def pytest_collection_modifyitems(config, items):
    """The long modules first: those that mostly wait (``waits``), then
    those with a ``slow`` test, then those with a real launch or a
    full-size config, then the rest, each group in collection order.
    ``make test`` hands whole modules to pytest-xdist's workers in this
    order (``--dist loadfile --no-loadscope-reorder``), so the waiting ones
    run beside CPU-bound ones and no long module starts last and ends the
    run alone."""
    def weight(item):
        for rank, names in enumerate((('waits', ), ('slow', ),
                                      ('launch', 'full_size'))):
            if any(item.get_closest_marker(name) for name in names):
                return rank
        return 3

    module_weight = {}
    for item in items:
        module = item.nodeid.split('::')[0]
        module_weight[module] = min(module_weight.get(module, 3),
                                    weight(item))
    items.sort(key=lambda item: module_weight[item.nodeid.split('::')[0]])
