"""DataLoader: batches from a dataset, as torch.utils.data.DataLoader makes them.

A map-style dataset is read through a sampler (sequential, or random with shuffle=True)
grouped by a BatchSampler; an iterable one is read in order and grouped as it comes. With
num_workers > 0, worker processes (workers.py) load the batches and the loader hands them
out in the sampler's order; with 0 the main process loads each batch when it is asked for.
"""

from __future__ import annotations

import builtins
import itertools
import multiprocessing
import os
import weakref
from collections.abc import Callable, Iterator

from kael.frontend import factories
from kael.frontend.tensor import Tensor
from kael.runtime import user_warning
from kael.runtime.dtypes import int64
from kael.runtime.errors import TypeError, ValueError
from kael.utils.data import workers
from kael.utils.data.collate import default_collate, default_convert, rebuilt
from kael.utils.data.dataset import IterableDataset
from kael.utils.data.sampler import (
    BatchSampler,
    RandomSampler,
    SequentialSampler,
    batch_count,
)
from kael.utils.data.workers import get_worker_info

__all__ = ["DataLoader", "get_worker_info"]


_START_METHODS = ("fork", "spawn", "forkserver")


def _check_options(loader: DataLoader, shuffle, sampler, batch_sampler, prefetch_factor) -> None:
    """torch's refusals of option values and combinations that contradict each other."""
    if isinstance(loader.dataset, IterableDataset):
        for name, value in (("shuffle", shuffle), ("sampler", sampler),
                            ("batch_sampler", batch_sampler)):  # fmt: skip
            if value not in (None, False):
                raise ValueError(
                    f"DataLoader with IterableDataset: expected unspecified {name} option, but"
                    f" got {name}={value}"
                )
    if sampler is not None and shuffle:
        raise ValueError("sampler option is mutually exclusive with shuffle")
    if batch_sampler is not None and (
        loader.batch_size != 1 or shuffle or sampler is not None or loader.drop_last
    ):
        raise ValueError(
            "batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, and"
            " drop_last"
        )
    if loader.batch_size is None and loader.drop_last:
        raise ValueError(
            "batch_size=None option disables auto-batching and is mutually exclusive with drop_last"
        )
    workers = loader.num_workers
    if workers < 0:
        raise ValueError(
            "num_workers option should be non-negative; use num_workers=0 to disable"
            " multiprocessing."
        )
    if loader.timeout < 0:
        raise ValueError("timeout option should be non-negative")
    if workers == 0 and prefetch_factor is not None:
        raise ValueError(
            "prefetch_factor option could only be specified in multiprocessing.let"
            " num_workers > 0 to enable multiprocessing, otherwise set prefetch_factor to None."
        )
    if prefetch_factor is not None and prefetch_factor < 0:
        raise ValueError("prefetch_factor option should be non-negative")
    if prefetch_factor == 0:  # torch asserts it at the first iter(); no task, an empty epoch
        raise ValueError("prefetch_factor must be greater than 0")
    if loader.persistent_workers and workers == 0:
        raise ValueError("persistent_workers option needs num_workers > 0")
    _check_context(loader.multiprocessing_context, workers)


def _check_context(context, workers: int) -> None:
    if context is None:
        return
    if workers == 0:
        raise ValueError(
            "multiprocessing_context can only be used with multi-process loading"
            f" (num_workers > 0), but got num_workers={workers}"
        )
    if isinstance(context, str):
        if context not in _START_METHODS:
            raise ValueError(
                "multiprocessing_context option should specify a valid start method in"
                f" {list(_START_METHODS)}, but got multiprocessing_context={context!r}"
            )
    elif not isinstance(context, multiprocessing.context.BaseContext):
        raise TypeError(
            "multiprocessing_context option should be a valid context object or a string"
            f" specifying the start method, but got multiprocessing_context={context!r}"
        )


class DataLoader:
    """Iterate a dataset in batches (see the module); torch's arguments and defaults."""

    def __init__(
        self,
        dataset,
        batch_size: int | None = 1,
        shuffle: bool | None = None,
        sampler=None,
        batch_sampler=None,
        num_workers: int = 0,
        collate_fn: Callable | None = None,
        pin_memory: bool = False,
        drop_last: bool = False,
        timeout: float = 0,
        worker_init_fn: Callable | None = None,
        multiprocessing_context=None,
        generator=None,
        *,
        prefetch_factor: int | None = None,
        persistent_workers: bool = False,
        pin_memory_device: str = "",
        in_order: bool = True,
    ) -> None:
        self.dataset, self.batch_size, self.drop_last = dataset, batch_size, drop_last
        self.num_workers, self.timeout, self.generator = num_workers, timeout, generator
        self.persistent_workers, self.pin_memory = persistent_workers, pin_memory
        self.worker_init_fn, self.multiprocessing_context = worker_init_fn, multiprocessing_context
        _check_options(self, shuffle, sampler, batch_sampler, prefetch_factor)
        self.prefetch_factor = 2 if prefetch_factor is None and num_workers else prefetch_factor
        if batch_sampler is not None:  # it decides the batches: torch clears these
            self.batch_size, self.drop_last = None, False
        iterable = isinstance(dataset, IterableDataset)
        if sampler is None and not iterable:
            sampler = RandomSampler(dataset, generator=generator) if shuffle else None
            sampler = sampler or SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None and not iterable:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)
        self.sampler, self.batch_sampler = sampler, batch_sampler
        if collate_fn is None:
            collate_fn = default_convert if self._unbatched else default_collate
        self.collate_fn = collate_fn
        self._iterator: _LoaderIter | None = None  # persistent workers' one iterator

    @property
    def _unbatched(self) -> bool:
        return self.batch_size is None and self.batch_sampler is None

    def _index_stream(self) -> Iterator:
        """What each batch is made from: index lists (batched), single indices (unbatched),
        or None per batch for an iterable dataset (the worker reads on)."""
        if self.batch_sampler is not None:
            return iter(self.batch_sampler)
        if self.sampler is not None:
            return iter(self.sampler)
        return itertools.repeat(None)  # an iterable dataset: until it runs out

    def _base_seed(self) -> int:
        """Each epoch's worker seed base, drawn from the loader's generator (or the
        default one) at every iterator, workers or not, as torch draws it: a seeded
        shuffle gives the same order with any num_workers."""
        drawn = factories.empty((), dtype=int64).random_(generator=self.generator)
        return drawn.item()

    def __iter__(self) -> _LoaderIter:
        """A pass over the loader. With persistent workers there is one iterator, started
        again by each iter() (torch's: zip(dl, dl) takes turns on one pass), and it keeps
        the workers."""
        if not (self.num_workers and self.persistent_workers):
            return _LoaderIter(self)
        if self._iterator is None:
            self._iterator = _LoaderIter(self)
        else:
            self._iterator.start(self)
        return self._iterator

    def _new_pool(self, base_seed: int) -> workers.Pool:
        return workers.Pool(self._job(), base_seed, self.multiprocessing_context,
                            self.timeout, self.prefetch_factor)  # fmt: skip

    def _job(self) -> workers.Job:
        return workers.Job(
            self.dataset, self.collate_fn, self.batch_size, self.drop_last, self._unbatched,
            self.num_workers, self.worker_init_fn,
        )  # fmt: skip

    def __len__(self) -> int:
        if isinstance(self.dataset, IterableDataset):
            n = _dataset_length(self.dataset)
            return n if self.batch_size is None else batch_count(n, self.batch_size, self.drop_last)
        return len(self.batch_sampler if self.batch_sampler is not None else self.sampler)


class _LoaderIter:
    """One pass over a DataLoader (torch's _BaseDataLoaderIter): next() gives the next
    batch, a batch that raised is that call's error and the next call goes on, len() is the
    loader's. It owns its worker pool: closed when a pass ends unless the workers persist,
    and when the iterator goes; a worker that dies or times out ends the pool. It holds the
    loader weakly (the persistent loader keeps it: no cycle to outlive its workers)."""

    def __init__(self, loader: DataLoader) -> None:
        self.pool: workers.Pool | None = None
        self.start(loader)

    def start(self, loader: DataLoader) -> None:
        """Begin a new epoch (the workers' seed drawn now, as torch draws it when it starts
        them: at each iterator, and once for persistent workers)."""
        self.loader = weakref.ref(loader)
        self.persistent = loader.persistent_workers
        self.length = _length_or_none(loader)
        if self.pool is not None and self.pool.owner != os.getpid():
            self.pool = None  # a forked child's copy of its parent's workers: start its own
        base_seed = loader._base_seed() if self.pool is None else None
        self.pinning = loader.pin_memory and _can_pin()
        items = loader._index_stream()
        if loader.num_workers == 0:
            self.batches = workers.LocalEpoch(loader._job(), items)
            return
        if self.pool is None:
            self.pool = loader._new_pool(base_seed)
        self.batches = self.pool.epoch(items)

    def __iter__(self) -> _LoaderIter:
        return self

    def __len__(self) -> int:
        if self.length is None:
            raise TypeError("this DataLoader's dataset has no len()")
        return self.length

    def __next__(self):
        try:
            batch = next(self.batches)
        except StopIteration:
            if not self.persistent:
                self.close()
            raise
        except workers.WorkerError:
            self.close()  # its workers are gone: the pass ends here, the next call stops
            self.batches = iter(())
            raise
        return _pinned(batch) if self.pinning else batch

    def close(self) -> None:
        if self.pool is not None:
            self.pool.close()
            self.pool = None

    def __del__(self) -> None:
        self.close()


def _dataset_length(dataset: IterableDataset) -> int:
    """len(dataset); kael.TypeError (a builtin TypeError too) naming the dataset's type
    where it has no __len__ (a stream)."""
    if not hasattr(type(dataset), "__len__"):
        raise TypeError(f"object of type '{type(dataset).__name__}' has no len()")
    return len(dataset)


def _length_or_none(loader: DataLoader) -> int | None:
    """len(loader), or None where its dataset has none (an iterable one without it)."""
    try:
        return len(loader)
    except builtins.TypeError:  # kael's and the one a dataset's own len() raises (a chain's)
        return None


def _can_pin() -> bool:
    """Whether pinned memory exists here; without a GPU torch warns and does not pin."""
    from kael import cuda  # kael.cuda imports the runtime only, at its first use here

    if cuda.is_available():
        return True
    user_warning.warn(
        "'pin_memory' argument is set as true but no accelerator is found, then device pinned"
        " memory won't be used.",
        UserWarning,
    )
    return False


def _pinned(batch):
    """The batch with every tensor in page-locked memory (pin_memory=True)."""
    if isinstance(batch, Tensor):
        return batch.pin_memory()
    if isinstance(batch, dict):
        return rebuilt(batch, {key: _pinned(value) for key, value in batch.items()})
    if isinstance(batch, (list, tuple)):
        return rebuilt(batch, [_pinned(b) for b in batch])
    return batch
