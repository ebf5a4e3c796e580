"""A resume late in a long epoch costs what a fresh start costs: resuming
at iteration 2,390 of a 2,400-iteration epoch (samples take 6 ms to load)
takes at most 1.2x the wall time of a fresh 10-iteration run of the same
config (mmengine's loop replays the epoch or loads the 2,390 batches it
skips: ``benchmarks/bench_resume.py`` has both side by side)."""
from tests.helpers.resume_cost import (AT, SIZE, checkpoint_at, cost_config,
                                       timed_runs)


def test_resume_at_2390_of_2400_costs_a_fresh_start(tmp_path):
    late = checkpoint_at(tmp_path)
    # Side by side, so that both see the same load on the machine.
    fresh, resumed = timed_runs(
        (cost_config(tmp_path / 'fresh.py', stop_after=10),
         tmp_path / 'fresh', ()),
        (cost_config(tmp_path / 'timed.py'), late, ('--resume', )))
    assert resumed['first_iter'] == AT + 1
    assert f'data continues at epoch 1, sample {AT} of {SIZE}' in \
        resumed['log']
    times = {k: (fresh[k], resumed[k]) for k in ('first_iter_s', 'wall_s')}
    assert resumed['wall_s'] <= 1.2 * fresh['wall_s'], times
