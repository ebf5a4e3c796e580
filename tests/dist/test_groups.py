"""dist.groups: ``side_group`` builds a gloo group of all ranks whose
collectives time out after its own timeout, not the default group's.

A real 2-rank gloo group on a local TCP rendezvous: rank 0 is this
process, rank 1 a bare Python process that joins the default group, makes
the same ``side_group`` call and then stays away from the collective, so
that rank 0's all-reduce on the side group can only end by its timeout.
"""
import datetime
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import torch.distributed as torch_dist

from projects.mmdet3d_plugin.dist.groups import side_group
from projects.mmdet3d_plugin.dist.ports import free_port

REPO = Path(__file__).resolve().parents[2]
#: The default group's timeout: far beyond the side group's.
DEFAULT_TIMEOUT = 120

#: Rank 1 stays away from rank 0's collective until rank 0 closes its
#: stdin, or for ``STAY_AWAY`` seconds: then it leaves, and a collective
#: still waiting on rank 0 fails with the peer gone, not with a timeout.
STAY_AWAY = 30

RANK1 = """
import datetime, select, sys
import torch.distributed as torch_dist
from projects.mmdet3d_plugin.dist.groups import side_group
torch_dist.init_process_group(
    'gloo', init_method=sys.argv[1], rank=1, world_size=2,
    timeout=datetime.timedelta(seconds=int(sys.argv[2])))
side_group(int(sys.argv[2]))
select.select([sys.stdin], [], [], int(sys.argv[3]))
torch_dist.destroy_process_group()
"""


@pytest.fixture
def two_ranks():
    """The default group of this process (rank 0) and rank 1."""
    init_method = f'tcp://127.0.0.1:{free_port()}'
    rank1 = subprocess.Popen(
        [sys.executable, '-c', RANK1, init_method, str(DEFAULT_TIMEOUT),
         str(STAY_AWAY)],
        cwd=REPO, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True)
    try:
        torch_dist.init_process_group(
            'gloo', init_method=init_method, rank=0, world_size=2,
            timeout=datetime.timedelta(seconds=DEFAULT_TIMEOUT))
        yield rank1
    finally:
        if torch_dist.is_initialized():
            torch_dist.destroy_process_group()
        out, _ = rank1.communicate(timeout=60)
    assert rank1.returncode == 0, out


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
