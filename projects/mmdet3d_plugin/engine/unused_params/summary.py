"""Which parameters went without a gradient, over checks and ranks."""
from typing import Dict, Iterable, List, Optional, Sequence, Set


class UnusedParamSummary:
    """Unused parameters over the checked iterations of all ranks.

    A parameter is *unused on all ranks* (dead weight) when no rank gave it
    a gradient in any checked iteration; it is *unused on some ranks* when it
    went without a gradient at least once somewhere but was used elsewhere
    (a rank- or data-dependent branch).

    Args:
        names (Sequence[str]): Names of the checked (trainable) parameters,
            as in ``named_parameters()`` of the unwrapped model.
        shapes (Sequence[tuple]): Their shapes, in the same order.
        world_size (int): Number of ranks that take part in the checks.
    """

    def __init__(self, names: Sequence[str], shapes: Sequence[tuple],
                 world_size: int) -> None:
        if len(names) != len(shapes):
            raise ValueError(
                f'UnusedParamSummary: got {len(names)} names but '
                f'{len(shapes)} shapes; pass one shape per parameter')
        self.names = list(names)
        self.shapes = [tuple(s) for s in shapes]
        self.world_size = int(world_size)
        self.iterations: List[int] = []
        self.ranks_reported: Set[int] = set()
        self._unused_ranks: Dict[int, Set[int]] = {}
        self._used: Set[int] = set()
        self.last_iteration: Optional[int] = None
        self.last_unused: Dict[int, List[int]] = {}
        self._dead: Optional[List[int]] = None

    def add_check(self, iteration: int,
                  unused_by_rank: Dict[int, Iterable[int]]) -> None:
        """Record one checked iteration.

        Args:
            iteration (int): The iteration (``runner.iter``) checked.
            unused_by_rank (dict[int, Iterable[int]]): For each rank that
                reported, the indices (into ``names``) of the parameters that
                received no gradient there.
        """
        self.iterations.append(int(iteration))
        self._dead = None
        last: Dict[int, List[int]] = {}
        everything = set(range(len(self.names)))
        for rank, indices in unused_by_rank.items():
            indices = set(indices)
            self.ranks_reported.add(int(rank))
            self._used |= everything - indices
            for i in indices:
                self._unused_ranks.setdefault(i, set()).add(int(rank))
                last.setdefault(i, []).append(int(rank))
        self.last_iteration = int(iteration)
        self.last_unused = {i: sorted(r) for i, r in sorted(last.items())}

    @property
    def complete(self) -> bool:
        """Whether every rank reported in at least one check."""
        return self.ranks_reported >= set(range(self.world_size))

    @property
    def dead(self) -> List[int]:
        """Indices of parameters no rank used in any checked iteration."""
        if self._dead is None:
            self._dead = [
                i for i in sorted(self._unused_ranks) if i not in self._used
            ] if self.complete else []
        return self._dead

    @property
    def partial(self) -> Dict[int, List[int]]:
        """Indices of the other unused parameters -> ranks they skipped."""
        dead = set(self.dead)
        return {
            i: sorted(ranks)
            for i, ranks in sorted(self._unused_ranks.items())
            if i not in dead
        }

    @property
    def unused_ranks(self) -> Dict[int, List[int]]:
        """Indices of all unused parameters -> ranks they skipped."""
        return {i: sorted(r) for i, r in sorted(self._unused_ranks.items())}

    @property
    def any_unused(self) -> bool:
        """Whether any parameter went without a gradient somewhere."""
        return bool(self._unused_ranks)

    @property
    def unused_on_all_ranks(self) -> List[str]:
        """Names of the dead-weight parameters."""
        return [self.names[i] for i in self.dead]

    @property
    def unused_on_some_ranks(self) -> Dict[str, List[int]]:
        """Name -> sorted ranks, for rank- or data-dependent parameters."""
        return {self.names[i]: r for i, r in self.partial.items()}
