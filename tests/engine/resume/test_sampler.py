"""ResumableSampler: a fresh epoch is DefaultSampler's, and a resume at any
global position, on any world size, covers the rest of the epoch once."""
import pickle

import pytest
import torch
from mmengine.dataset import DefaultSampler

from projects.mmdet3d_plugin.engine.resume.sampler import ResumableSampler
from projects.mmdet3d_plugin.engine.resume.sample_key import SampleKey


def _sampler(size, rank=0, world=1, **kwargs):
    sampler = ResumableSampler(list(range(size)), seed=7, **kwargs)
    sampler.rank, sampler.world_size = rank, world
    return sampler


def _default(size, rank, world, **kwargs):
    sampler = DefaultSampler(list(range(size)), seed=7, **kwargs)
    sampler.rank, sampler.world_size = rank, world
    if sampler.round_up:
        sampler.num_samples = -(-size // world)
        sampler.total_size = sampler.num_samples * world
    else:
        sampler.num_samples = -(-(size - rank) // world)
        sampler.total_size = size
    return sampler


@pytest.mark.parametrize('world', [1, 2, 3])
@pytest.mark.parametrize('round_up', [True, False])
@pytest.mark.parametrize('epoch', [0, 3])
def test_fresh_epoch_is_default_samplers(world, round_up, epoch):
    for rank in range(world):
        ours = _sampler(23, rank, world, round_up=round_up)
        stock = _default(23, rank, world, round_up=round_up)
        ours.set_epoch(epoch)
        stock.set_epoch(epoch)
        keys = list(ours)
        assert [int(k) for k in keys] == list(stock)
        assert len(ours) == len(stock) == len(keys)
        assert {k.epoch for k in keys} == {epoch}


@pytest.mark.parametrize('before,after', [(2, 2), (2, 1), (2, 3), (1, 4)])
def test_resume_covers_the_rest_of_the_epoch_once(before, after):
    size, batch = 48, 4
    trained = 3 * batch * before  # 3 batches on each of `before` ranks
    order = _sampler(size).order(1)
    seen = []
    for rank in range(after):
        sampler = _sampler(size, rank, after)
        sampler.resume_at(epoch=1, position=trained)
        sampler.set_epoch(1)
        keys = list(sampler)
        assert sampler.remaining(trained) == len(keys)
        seen += [(k.position, int(k)) for k in keys]
    positions = sorted(p for p, _ in seen)
    assert positions == list(range(trained, size))
    assert all(order[p] == index for p, index in seen)


def test_resume_applies_to_its_epoch_only():
    sampler = _sampler(10)
    sampler.resume_at(epoch=2, position=6)
    sampler.set_epoch(1)
    assert len(list(sampler)) == 10  # another epoch: from its start
    sampler.resume_at(epoch=2, position=6)
    sampler.set_epoch(2)
    assert [k.position for k in sampler] == [6, 7, 8, 9]
    assert len(list(sampler)) == 10  # the next iteration starts at 0


def test_stream_runs_epochs_back_to_back_from_any_position():
    sampler = _sampler(5, rank=1, world=2, infinite=True)
    stream = iter(sampler)
    keys = [next(stream) for _ in range(6)]
    # Rank 1 of 2 takes stream positions 1, 3, 5, ...: epochs of 5.
    assert [(k.epoch, k.position) for k in keys] == [
        (0, 1), (0, 3), (1, 0), (1, 2), (1, 4), (2, 1)]
    assert [int(k) for k in keys[2:5]] == [sampler.order(1)[p]
                                           for p in (0, 2, 4)]
    resumed = _sampler(5, rank=0, world=1, infinite=True)
    resumed.resume_at(epoch=0, position=7)
    first = next(iter(resumed))
    assert (first.epoch, first.position) == (1, 2)


def test_order_is_torch_randperm_of_seed_plus_epoch():
    gen = torch.Generator().manual_seed(7 + 4)
    assert _sampler(9).order(4) == torch.randperm(9, generator=gen).tolist()
    assert _sampler(9, shuffle=False).order(4) == list(range(9))


def test_sample_key_is_an_int_that_pickles_with_its_fields():
    key = SampleKey(5, seed=3, epoch=2, position=11)
    back = pickle.loads(pickle.dumps(key))
    assert back == 5 and [1, 2, 3, 4, 5, 6][back] == 6
    assert (back.seed, back.epoch, back.position) == (3, 2, 11)
