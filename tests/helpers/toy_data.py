"""The one toy dataset of the tests: sample ``i`` is drawn from a generator
seeded with ``i``, so it is the same in every process and worker."""
import torch
from torch.utils.data import Dataset


class SeededToyDataset(Dataset):
    """Sample ``i``: a 4-vector input from ``torch.Generator`` seeded with
    ``i``, plus what :meth:`extra` adds from the same generator.

    Args:
        size (int): Number of samples.
    """

    def __init__(self, size: int) -> None:
        self.size = size

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, index: int) -> dict:
        gen = torch.Generator().manual_seed(index)
        return dict(inputs=torch.randn(4, generator=gen),
                    **self.extra(index, gen))

    def extra(self, index: int, gen: torch.Generator) -> dict:
        """The sample's other keys (none here)."""
        return {}
