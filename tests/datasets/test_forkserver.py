"""Forkserver workers start from a server with the heavy imports done.

What a forkserver worker finds imported is decided in a fresh interpreter
by definition: the fork server of the pytest process may already be
running (its preload list cannot change then), and a preload list set
there would stay in the pytest process. So each such check is a real
launch (marker ``launch``): a light fresh ``__main__`` (below) sets the
preload list, starts the server and reports what one worker found; the
plugin's setup call and the user's list share one launch. That building
the dataset sets the preload list is the dataset's code, checked in this
process with ``multiprocessing.set_forkserver_preload`` recorded.
"""
import json
import multiprocessing
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from mmengine.registry import init_default_scope

from mmdet3d.registry import DATASETS
from projects.mmdet3d_plugin.datasets.forkserver import (
    DEFAULT_PRELOAD, setup_forkserver_preload)
from tests.helpers.synthetic_infos import write_synthetic_infos

REPO = Path(__file__).resolve().parents[2]
HEAVY = ['mmdet3d.datasets', 'mmengine', 'projects.mmdet3d_plugin', 'torch']

# Runs as __main__ in a fresh interpreter. Prints the preload lists the
# plugin's calls returned and the heavy modules a forkserver worker found
# imported.
SCRIPT = textwrap.dedent("""
    import json
    import multiprocessing
    import sys

    sys.path[:0] = [{repo!r}]
    from tests.helpers.mp_probe import report_modules


    def main(how):
        preload = []
        if how == 'setup':
            # The user's list, set through the public API before the
            # server starts, then the plugin's on top of it: named
            # modules, then its defaults.
            multiprocessing.set_forkserver_preload(['__main__', 'mmengine'])
            from projects.mmdet3d_plugin.datasets import (
                setup_forkserver_preload)
            preload.append(setup_forkserver_preload(['torch', 'mmengine']))
            preload.append(setup_forkserver_preload())
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
    script.write_text(SCRIPT.format(repo=str(REPO), heavy=HEAVY))
    done = subprocess.run(
        [sys.executable, str(script), how], capture_output=True, text=True,
        timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.launch
def test_worker_imports_nothing_heavy_without_preload(tmp_path):
    # launch: a fresh interpreter's fork server, no preload list set
    assert _forkserver_run(tmp_path, 'none')['worker'] == []


@pytest.mark.slow
@pytest.mark.launch
def test_setup_preloads_heavy_imports_and_keeps_the_users_list(tmp_path):
    # launch: the fork server of a fresh interpreter imports the list
    run = _forkserver_run(tmp_path, 'setup')
    named, defaults = run['preload']
    # The user's modules first, each module once, and all of them loaded.
    assert named == ['__main__', 'mmengine', 'torch']
    assert defaults == named + [
        name for name in DEFAULT_PRELOAD if name not in named]
    assert run['worker'] == HEAVY


def test_building_the_dataset_sets_the_preload(tmp_path, monkeypatch):
    calls = []
    monkeypatch.setattr(multiprocessing, 'set_forkserver_preload',
                        calls.append)
    init_default_scope('mmdet3d')
    write_synthetic_infos(str(tmp_path / 'infos.pkl'), 2)
    prefix = dict(pts='samples/LIDAR_TOP', sweeps='sweeps/LIDAR_TOP')
    DATASETS.build(dict(type='SafeNuScenesDataset', data_root='',
                        ann_file=str(tmp_path / 'infos.pkl'),
                        data_prefix=prefix, pipeline=[]))
    [preload] = calls
    assert set(DEFAULT_PRELOAD) <= set(preload)


@pytest.mark.parametrize('bad', ['', None])
def test_preload_rejects_bad_names(bad):
    # Checked before the preload list is touched: nothing changes here.
    with pytest.raises(TypeError, match='must be module names'):
        setup_forkserver_preload(['torch', bad])
