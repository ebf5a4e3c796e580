"""A resume late in a long epoch costs what a fresh start costs: resuming
at iteration 230 of a 240-iteration epoch loads the 10 samples it trains
and no other, as a fresh 10-iteration run would (mmengine's loop replays
the epoch or loads the 230 samples it skips). The samples each run loads
are counted, in every DataLoader worker. Both runs (the checkpoint at 230,
made without load time, and the resume) are ``tools/train.py`` in a
process forked from the test process (``fork_train``); the seconds this
saves at 2,390 of 2,400 (samples take 6 ms to load, fresh interpreters)
are in ``benchmarks/bench_resume.py``."""
import json
from pathlib import Path

from tests.helpers.resume_cost import cost_config
from tests.helpers.train_tool import fork_train

SIZE, AT = 240, 230


def _train(config: Path, work: Path, *flags) -> str:
    """``tools/train.py`` in a forked process; its output."""
    # loop: the subject is the resumed loop's data, not the process.
    proc = fork_train(config, work, *flags)
    out = proc.communicate(timeout=900)[0]
    assert proc.returncode == 0, out[-5000:]
    return out


def test_resume_at_230_of_240_costs_a_fresh_start(tmp_path):
    late = tmp_path / 'late'
    _train(cost_config(tmp_path / 'make.py', load_ms=0, stop_after=AT,
                       size=SIZE, interval=AT), late)
    loads = tmp_path / 'loads.txt'
    log = _train(cost_config(tmp_path / 'resume.py', size=SIZE, interval=AT,
                             loads_file=loads), late, '--resume')
    first = json.loads((late / 'first_iter.json').read_text())
    assert first['iter'] == AT + 1
    assert f'data continues at epoch 1, sample {AT} of {SIZE}' in log
    loaded = loads.read_text().split()
    # Each of the last SIZE - AT samples of the epoch, once.
    assert len(loaded) == len(set(loaded)) == SIZE - AT, loaded[:20]
