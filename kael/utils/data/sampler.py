"""Samplers: the order in which a DataLoader reads a map-style dataset's indices, and
BatchSampler, which groups them into batches. Random ones draw from a kael.Generator."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence, Sized

from kael.frontend import factories
from kael.frontend import random as kael_random
from kael.runtime.dtypes import float64, int64
from kael.runtime.errors import TypeError, ValueError


class Sampler:
    """An iterable of dataset indices (or of batches of them)."""

    def __init__(self, data_source: Sized | None = None) -> None:
        pass

    def __iter__(self) -> Iterator:
        raise NotImplementedError


class SequentialSampler(Sampler):
    """0, 1, ..., len(data_source) - 1."""

    def __init__(self, data_source: Sized) -> None:
        self.data_source = data_source

    def __iter__(self) -> Iterator[int]:
        return iter(range(len(self.data_source)))

    def __len__(self) -> int:
        return len(self.data_source)


def _positive_int(value, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ValueError(f"{what} should be a positive integer value, but got {what}={value}")
    return value


def _fresh_generator(generator):
    """The generator to draw from: the given one, else a new one seeded by a draw from the
    default generator (so kael.manual_seed makes the order repeat, as in torch)."""
    if generator is not None:
        return generator
    seed = factories.empty((), dtype=int64).random_().item()
    return kael_random.Generator().manual_seed(seed)


class RandomSampler(Sampler):
    """A random permutation of the indices (num_samples of them: whole permutations, then
    the start of one more), or num_samples uniform draws with replacement."""

    def __init__(
        self, data_source: Sized, replacement: bool = False, num_samples: int | None = None,
        generator=None,
    ) -> None:  # fmt: skip
        if not isinstance(replacement, bool):
            raise TypeError(
                f"replacement should be a boolean value, but got replacement={replacement}"
            )
        self.data_source, self.replacement = data_source, replacement
        self._num_samples, self.generator = num_samples, generator
        _positive_int(self.num_samples, "num_samples")

    @property
    def num_samples(self) -> int:
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self) -> Iterator[int]:
        n, count = len(self.data_source), self.num_samples
        if not n and count:  # (torch's divides by the 0 length)
            raise ValueError(f"RandomSampler: {count} samples from an empty data source")
        generator = _fresh_generator(self.generator)
        if self.replacement:
            for start in range(0, count, 32):
                draws = kael_random.randint(n, (min(32, count - start),), generator=generator)
                yield from draws.tolist()
            return
        for _ in range(count // n):
            yield from kael_random.randperm(n, generator=generator).tolist()
        yield from kael_random.randperm(n, generator=generator).tolist()[: count % n]

    def __len__(self) -> int:
        return self.num_samples


class SubsetRandomSampler(Sampler):
    """The given indices in a random order."""

    def __init__(self, indices: Sequence[int], generator=None) -> None:
        self.indices, self.generator = indices, generator

    def __iter__(self) -> Iterator[int]:
        order = kael_random.randperm(len(self.indices), generator=self.generator).tolist()
        for i in order:
            yield self.indices[i]

    def __len__(self) -> int:
        return len(self.indices)


class WeightedRandomSampler(Sampler):
    """num_samples indices drawn with probabilities proportional to `weights`."""

    def __init__(
        self, weights: Sequence[float], num_samples: int, replacement: bool = True,
        generator=None,
    ) -> None:  # fmt: skip
        _positive_int(num_samples, "num_samples")
        if not isinstance(replacement, bool):
            raise ValueError(
                f"replacement should be a boolean value, but got replacement={replacement}"
            )
        weights = factories.as_tensor(weights, dtype=float64)
        if weights.dim() != 1:
            raise ValueError(
                "weights should be a 1d sequence but given weights have shape"
                f" {tuple(weights.shape)}"
            )
        self.weights, self.num_samples = weights, num_samples
        self.replacement, self.generator = replacement, generator

    def __iter__(self) -> Iterator[int]:
        drawn = kael_random.multinomial(
            self.weights, self.num_samples, self.replacement, generator=self.generator
        )
        yield from drawn.tolist()

    def __len__(self) -> int:
        return self.num_samples


class BatchSampler(Sampler):
    """Lists of batch_size indices from `sampler` (the last shorter, or dropped)."""

    def __init__(self, sampler: Iterable[int], batch_size: int, drop_last: bool) -> None:
        _positive_int(batch_size, "batch_size")
        if not isinstance(drop_last, bool):
            raise ValueError(f"drop_last should be a boolean value, but got drop_last={drop_last}")
        self.sampler, self.batch_size, self.drop_last = sampler, batch_size, drop_last

    def __iter__(self) -> Iterator[list[int]]:
        batch: list[int] = []
        for index in self.sampler:
            batch.append(index)
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch

    def __len__(self) -> int:
        return batch_count(len(self.sampler), self.batch_size, self.drop_last)


def batch_count(n: int, batch_size: int, drop_last: bool) -> int:
    """How many batches n samples make: a short last one dropped or kept."""
    return n // batch_size if drop_last else -(-n // batch_size)
