"""Forkserver workers start from a server with the heavy imports done."""
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from projects.mmdet3d_plugin.datasets.forkserver import (
    setup_forkserver_preload)

REPO = Path(__file__).resolve().parents[2]
HEAVY = ['mmdet3d.datasets', 'mmengine', 'projects.mmdet3d_plugin', 'torch']

# Runs as __main__ in a fresh interpreter: the fork server of the pytest
# process may already be running, and its preload list cannot change then;
# a preload list set here stays out of the pytest process. Prints the
# preload list the plugin set (null if it set none) and the heavy modules a
# forkserver worker found imported.
SCRIPT = textwrap.dedent("""
    import json
    import multiprocessing
    import sys

    sys.path[:0] = [{repo!r}]
    from tests.helpers.mp_probe import report_modules


    def main(how):
        preload = None
        if how == 'user_list':
            # The user's list, set through the public API before the
            # server starts, then the plugin's on top of it.
            multiprocessing.set_forkserver_preload(['__main__', 'mmengine'])
            from projects.mmdet3d_plugin.datasets import (
                setup_forkserver_preload)
            preload = setup_forkserver_preload(['torch', 'mmengine'])
        elif how == 'setup':
            from projects.mmdet3d_plugin.datasets import (
                setup_forkserver_preload)
            setup_forkserver_preload()
        elif how == 'dataset':
            from mmengine.registry import init_default_scope
            from mmdet3d.registry import DATASETS
            import projects.mmdet3d_plugin  # noqa: F401
            from tests.helpers.synthetic_infos import write_synthetic_infos
            init_default_scope('mmdet3d')
            write_synthetic_infos(sys.argv[2], 2)
            prefix = dict(pts='samples/LIDAR_TOP', sweeps='sweeps/LIDAR_TOP')
            DATASETS.build(dict(type='SafeNuScenesDataset', data_root='',
                                ann_file=sys.argv[2], data_prefix=prefix,
                                pipeline=[]))
        ctx = multiprocessing.get_context('forkserver')
        queue = ctx.SimpleQueue()
        proc = ctx.Process(target=report_modules, args=({heavy!r}, queue))
        proc.start()
        print(json.dumps(dict(preload=preload, worker=queue.get())))
        proc.join()


    if __name__ == '__main__':
        main(sys.argv[1])
""")


def _forkserver_run(tmp_path, how) -> dict:
    script = tmp_path / 'forkserver_main.py'
    script.write_text(
        SCRIPT.format(repo=str(REPO), heavy=HEAVY))
    done = subprocess.run(
        [sys.executable,
         str(script), how,
         str(tmp_path / 'infos.pkl')],
        capture_output=True,
        text=True,
        timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_worker_imports_nothing_heavy_without_preload(tmp_path):
    assert _forkserver_run(tmp_path, 'none')['worker'] == []


def test_setup_preloads_heavy_imports_into_the_server(tmp_path):
    assert _forkserver_run(tmp_path, 'setup')['worker'] == HEAVY


def test_building_the_dataset_sets_the_preload(tmp_path):
    assert _forkserver_run(tmp_path, 'dataset')['worker'] == HEAVY


def test_preload_keeps_the_users_list(tmp_path):
    run = _forkserver_run(tmp_path, 'user_list')
    # The user's modules first, each module once, and all of them loaded.
    assert run['preload'] == ['__main__', 'mmengine', 'torch']
    assert run['worker'] == ['mmengine', 'torch']


@pytest.mark.parametrize('bad', ['', None])
def test_preload_rejects_bad_names(bad):
    # Checked before the preload list is touched: nothing changes here.
    with pytest.raises(TypeError, match='must be module names'):
        setup_forkserver_preload(['torch', bad])
