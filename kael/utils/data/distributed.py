"""DistributedSampler: each of num_replicas processes reads its own share of a dataset.

kael has no process-group package (torch.distributed), so num_replicas and rank must be
given; left out they raise torch's error for a build without it. The shuffled order is a
kael.randperm under a generator seeded with seed + epoch: the same in every replica (so the
shares never overlap) and per epoch, but not torch's order for that seed."""

from __future__ import annotations

import math
from collections.abc import Iterator, Sized

from kael.frontend import random as kael_random
from kael.runtime.errors import Error, ValueError
from kael.utils.data.sampler import Sampler


class DistributedSampler(Sampler):
    """Indices rank, rank + num_replicas, ... of the (shuffled) dataset order, padded by
    repeating its start (or, with drop_last, cut) to a multiple of num_replicas."""

    def __init__(
        self, dataset: Sized, num_replicas: int | None = None, rank: int | None = None,
        shuffle: bool = True, seed: int = 0, drop_last: bool = False,
    ) -> None:  # fmt: skip
        if num_replicas is None or rank is None:
            raise Error("Requires distributed package to be available")
        if rank >= num_replicas or rank < 0:
            raise ValueError(
                f"Invalid rank {rank}, rank should be in the interval [0, {num_replicas - 1}]"
            )
        self.dataset, self.num_replicas, self.rank = dataset, num_replicas, rank
        self.epoch, self.drop_last, self.shuffle, self.seed = 0, drop_last, shuffle, seed
        n = len(dataset)
        if drop_last and n % num_replicas:
            self.num_samples = math.ceil((n - num_replicas) / num_replicas)
        else:
            self.num_samples = math.ceil(n / num_replicas)
        self.total_size = self.num_samples * num_replicas

    def __iter__(self) -> Iterator[int]:
        n = len(self.dataset)
        if self.shuffle:
            generator = kael_random.Generator().manual_seed(self.seed + self.epoch)
            indices = kael_random.randperm(n, generator=generator).tolist()
        else:
            indices = list(range(n))
        if self.drop_last:
            indices = indices[: self.total_size]
        elif indices:
            padding = self.total_size - len(indices)
            indices += (indices * math.ceil(padding / len(indices)))[:padding]
        return iter(indices[self.rank : self.total_size : self.num_replicas])

    def __len__(self) -> int:
        return self.num_samples

    def set_epoch(self, epoch: int) -> None:
        """The epoch whose order the next iteration draws (seed + epoch)."""
        self.epoch = epoch
