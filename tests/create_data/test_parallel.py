"""``create_data/parallel.py``: a process running other Python threads
runs the shards itself (a fork there can deadlock, CPython gh-112275).
The forked pool of a process without threads runs in the real tool's
restart in ``test_prepare.py`` (``--workers 2``)."""
import os
import threading

from projects.mmdet3d_plugin.create_data import parallel


def _shard(index: int) -> int:
    """A shard's work: which process ran it."""
    with open(os.path.join(_shard.folder, f'{index}.pid'), 'w') as f:
        f.write(str(os.getpid()))
    return 1


def test_a_process_with_another_thread_runs_the_shards_itself(
        tmp_path, capsys):
    _shard.folder = str(tmp_path)
    stop = threading.Event()
    threading.Thread(target=stop.wait, daemon=True).start()
    try:
        parallel.run_shards('test', _shard, [0, 1, 2, 3], [1, 1, 1, 1],
                            workers=2, total=4)
    finally:
        stop.set()
    pids = {int(p.read_text()) for p in tmp_path.glob('*.pid')}
    out = capsys.readouterr().out
    assert len(list(tmp_path.glob('*.pid'))) == 4
    assert pids == {os.getpid()}
    assert 'gh-112275' in out and 'the shards run in this process' in out
