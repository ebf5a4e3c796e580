"""A resume late in a long epoch costs what a fresh start costs: resuming
at iteration 230 of a 240-iteration epoch loads the 10 samples it trains
and no other, as a fresh 10-iteration run would (mmengine's loop replays
the epoch or loads the 230 samples it skips). The samples each run loads
are counted, in every DataLoader worker; the seconds this saves at 2,390
of 2,400 (samples take 6 ms to load) are in
``benchmarks/bench_resume.py``."""
from tests.helpers.resume_cost import checkpoint_at, cost_config, timed_train

SIZE, AT = 240, 230


def test_resume_at_230_of_240_costs_a_fresh_start(tmp_path):
    late = checkpoint_at(tmp_path, position=AT, size=SIZE)
    loads = tmp_path / 'loads.txt'
    resumed = timed_train(
        cost_config(tmp_path / 'resume.py', size=SIZE, interval=AT,
                    loads_file=loads), late, '--resume')
    assert resumed['first_iter'] == AT + 1
    assert f'data continues at epoch 1, sample {AT} of {SIZE}' in \
        resumed['log']
    loaded = loads.read_text().split()
    # Each of the last SIZE - AT samples of the epoch, once.
    assert len(loaded) == len(set(loaded)) == SIZE - AT, loaded[:20]
