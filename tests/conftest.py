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
from typing import Set

import pytest
from xdist.scheduler import LoadScopeScheduling

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


def _modules_sharing_a_fixture() -> Set[str]:
    """Test modules (as pytest names them) with a module-scoped fixture."""
    return {
        path.relative_to(TESTS.parent).as_posix()
        for path in TESTS.rglob('test_*.py')
        if "@pytest.fixture(scope='module')" in path.read_text()
    }


class SharedFixtureScheduling(LoadScopeScheduling):
    """pytest-xdist's ``--dist loadscope``, refined: the tests of a module
    that has a module-scoped fixture (one launch, one dataset) run on one
    worker, so it is built once; every other test is a unit of its own and
    goes to whichever worker is free. (``--dist loadgroup`` with
    ``xdist_group`` marks would say the same, but does not group under
    pytest 9.2 with pytest-xdist 3.8.)"""

    def __init__(self, config, log=None):
        super().__init__(config, log)
        self.shared = _modules_sharing_a_fixture()

    def _split_scope(self, nodeid: str) -> str:
        module = nodeid.split('::', 1)[0]
        return module if module in self.shared else nodeid


def pytest_xdist_make_scheduler(config, log):
    """``make test`` runs ``--dist loadscope``: use the refined one."""
    if config.getvalue('dist') == 'loadscope':
        return SharedFixtureScheduling(config, log)
    return None


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
