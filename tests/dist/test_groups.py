"""dist.groups: ``side_group`` builds a gloo group of all ranks whose
collectives time out after its own timeout, not the default group's.

A real 2-rank gloo group on a local TCP rendezvous: rank 0 is this
process, rank 1 a process forked from it (before rank 0 joins) that joins
the default group, makes the same ``side_group`` call and then stays away
from the collective, so that rank 0's all-reduce on the side group can
only end by its timeout.
"""
import datetime
import multiprocessing

import pytest
import torch
import torch.distributed as torch_dist

from projects.mmdet3d_plugin.dist.groups import destroy_group, side_group
from projects.mmdet3d_plugin.dist.ports import free_port

#: The default group's timeout: far beyond the side group's.
DEFAULT_TIMEOUT = 120

#: Rank 1 stays away from rank 0's collective until rank 0 is done, or for
#: ``STAY_AWAY`` seconds: then it leaves, and a collective still waiting on
#: rank 0 fails with the peer gone, not with a timeout.
STAY_AWAY = 30


def _rank1(init_method: str, done) -> None:
    """Rank 1: joins, makes the side group, then stays away."""
    torch_dist.init_process_group(
        'gloo', init_method=init_method, rank=1, world_size=2,
        timeout=datetime.timedelta(seconds=DEFAULT_TIMEOUT))
    side_group(DEFAULT_TIMEOUT)
    done.wait(STAY_AWAY)
    destroy_group()


@pytest.fixture
def two_ranks():
    """The default group of this process (rank 0) and rank 1."""
    init_method = f'tcp://127.0.0.1:{free_port()}'
    ctx = multiprocessing.get_context('fork')
    done = ctx.Event()
    rank1 = ctx.Process(target=_rank1, args=(init_method, done))
    rank1.start()
    try:
        torch_dist.init_process_group(
            'gloo', init_method=init_method, rank=0, world_size=2,
            timeout=datetime.timedelta(seconds=DEFAULT_TIMEOUT))
        yield rank1
    finally:
        if torch_dist.is_initialized():
            destroy_group()
        done.set()
        rank1.join(timeout=60)
    assert rank1.exitcode == 0


def test_side_group_times_out_on_its_own_timeout(two_ranks):
    group = side_group(0.5)
    assert group is not torch_dist.group.WORLD
    assert torch_dist.get_backend(group) == 'gloo'
    assert torch_dist.get_world_size(group) == 2
    assert torch_dist.get_rank(group) == 0
    # Rank 1 never joins: gloo gives up after the side group's 500 ms,
    # not the default group's 120 s.
    with pytest.raises(RuntimeError, match=r'Timed out waiting 500ms'):
        torch_dist.all_reduce(torch.ones(1), group=group)
