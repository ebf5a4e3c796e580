"""A sample's place in the run, and the random state it is loaded with.

Every random number a sample's pipeline draws (numpy's global RNG,
``random``, torch's CPU generator) comes from a seed that is a function of
``(seed, epoch, position)``: the run's seed, the epoch, and the sample's
position in that epoch's order. It does not depend on which worker loads
the sample or on what that worker loaded before, so a resumed run loads
the samples the interrupted one would have, with any ``num_workers``, and
nothing about the workers needs saving.
"""
import random

import numpy as np
import torch


class SampleKey(int):
    """A dataset index that carries ``(seed, epoch, position)``.

    It is an ``int`` (the index the wrapped dataset is read at), so
    batch samplers and DataLoader workers pass it on unchanged; it pickles
    with its fields, so it also reaches spawn and forkserver workers.

    Args:
        index (int): Index into the dataset.
        seed (int): The run's sampler seed.
        epoch (int): Epoch of the sample.
        position (int): Position of the sample in the epoch's order (the
            same on every rank and for every world size).
    """

    def __new__(cls, index: int, seed: int, epoch: int, position: int):
        key = super().__new__(cls, index)
        key.seed = int(seed)
        key.epoch = int(epoch)
        key.position = int(position)
        return key

    def __reduce__(self):
        return (SampleKey, (int(self), self.seed, self.epoch, self.position))

    def __repr__(self) -> str:
        return (f'SampleKey(index={int(self)}, seed={self.seed}, '
                f'epoch={self.epoch}, position={self.position})')


def derived_seed(*parts: int) -> int:
    """A 63-bit seed mixed from non-negative integers (numpy's
    ``SeedSequence``: nearby inputs give unrelated seeds)."""
    words = np.random.SeedSequence([int(p) for p in parts]).generate_state(
        2, dtype=np.uint32)
    return (int(words[0]) << 31) ^ int(words[1])


def seed_all(seed: int) -> None:
    """Seed numpy's global RNG, ``random`` and torch's CPU generator."""
    np.random.seed(seed % 2**32)
    random.seed(seed)
    torch.default_generator.manual_seed(seed)


#: Tag mixed into the main process's per-iteration seeds (samples use
#: ``(seed, epoch, position)``, so the two never share a seed).
MAIN_TAG = 1 << 40


def seed_iteration(seed: int, rank: int, iteration: int) -> int:
    """Seed the main process for 0-based ``iteration`` of ``rank`` (the
    model's own draws: dropout, random sampling in heads; also the current
    CUDA device's generator) and return the seed."""
    value = derived_seed(seed % 2**63, MAIN_TAG, rank, iteration)
    seed_all(value)
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        torch.cuda.manual_seed(value)
    return value


def seed_sample(key: SampleKey) -> None:
    """Put the process's random state where sample ``key`` starts."""
    seed_all(derived_seed(key.seed % 2**63, key.epoch, key.position))
