"""Loading batches: in the main process (fetch_all), or in worker processes (Pool).

Each worker gets the dataset (inherited at fork, or pickled for spawn), its own seed (the
epoch's base seed + its id, given to kael's, Python's and NumPy's generators before
worker_init_fn runs) and a queue of tasks: a task is a batch's indices (map-style), or
"the next batch" of the worker's own pass over an iterable dataset. The loader keeps
prefetch_factor tasks per worker outstanding and hands results out in task order. A
worker's exception is raised again in the main process with the worker's traceback; a
worker that dies, or a result later than `timeout`, is a kael.Error."""

from __future__ import annotations

import collections
import contextlib
import itertools
import multiprocessing
import os
import queue
import random
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from multiprocessing.reduction import ForkingPickler

import numpy as np

from kael.frontend import random as kael_random
from kael.runtime.errors import Error
from kael.utils.data.dataset import IterableDataset


@dataclass(frozen=True)
class WorkerInfo:
    """What get_worker_info() tells code running in a worker."""

    id: int
    num_workers: int
    seed: int
    dataset: object


_info: WorkerInfo | None = None


def get_worker_info() -> WorkerInfo | None:
    """This worker's WorkerInfo; None in the main process."""
    return _info


class _End:
    """An iterable dataset's pass ran out (a task's result)."""


class _Readable(str):
    """A message that is its own repr: a KeyError shows its text, not an escaped line."""

    def __repr__(self) -> str:
        return str(self)


@dataclass
class _Failure:
    """An exception raised in a worker, carried back as text: its type where that pickles
    (a class defined inside a function does not: kael.Error then, named), and the
    worker's traceback."""

    kind: type | None
    name: str
    worker: int
    text: str

    @classmethod
    def of(cls, error: BaseException, worker: int) -> _Failure:
        kind = type(error)
        try:
            ForkingPickler.dumps(kind)
        except Exception:  # noqa: BLE001  (any failure to pickle the class)
            kind = None
        return cls(kind, type(error).__name__, worker, traceback.format_exc())

    def reraise(self):
        message = f"Caught {self.name} in DataLoader worker process {self.worker}.\n"
        message = _Readable(message + f"Original {self.text}")
        try:
            error = Error(message) if self.kind is None else self.kind(message)
        except Exception:  # noqa: BLE001  (a type that cannot be rebuilt from one message)
            error = Error(message)
        raise error


@dataclass(frozen=True)
class Job:
    """What loading a batch needs of its DataLoader (a worker gets this, not the loader)."""

    dataset: object
    collate_fn: Callable
    batch_size: int | None
    drop_last: bool
    unbatched: bool
    num_workers: int
    worker_init_fn: Callable | None


def _fetch(job: Job, source, item):
    """One batch: `item` is a batch's indices, one index (unbatched), or None (the next
    batch of the iterable dataset's iterator `source`); _End when that iterator ran out."""
    dataset, collate = job.dataset, job.collate_fn
    if source is None:
        if job.unbatched:
            return collate(dataset[item])
        getitems = getattr(dataset, "__getitems__", None)
        return collate(getitems(item) if callable(getitems) else [dataset[i] for i in item])
    if job.batch_size is None:
        sample = next(source, _End)
        return sample if sample is _End else collate(sample)
    samples = list(itertools.islice(source, job.batch_size))
    if not samples or (job.drop_last and len(samples) < job.batch_size):
        return _End
    return collate(samples)


class LocalEpoch:
    """The batches of one epoch, loaded in this process as they are asked for. A batch that
    raises is that call's error, and the next call goes on with the next batch, as torch's
    loader does (a loop that skips bad samples sees every other batch)."""

    def __init__(self, job: Job, items: Iterator) -> None:
        self.job, self.items, self.ended = job, items, False
        self.source = iter(job.dataset) if isinstance(job.dataset, IterableDataset) else None

    def __iter__(self) -> LocalEpoch:
        return self

    def __next__(self):
        if self.ended:
            raise StopIteration
        batch = _fetch(self.job, self.source, next(self.items))
        if batch is _End:
            self.ended = True
            raise StopIteration
        return batch


def _seed_everything(seed: int) -> None:
    random.seed(seed)
    kael_random.manual_seed(seed)
    np.random.seed(np.random.SeedSequence(seed).generate_state(1))


def _work(job: Job, worker: int, seed: int, tasks, results) -> None:
    """A worker's loop: seed, init, then answer tasks until told to stop (None)."""
    global _info
    _info = WorkerInfo(worker, job.num_workers, seed, job.dataset)
    _seed_everything(seed)
    source = None
    try:
        if job.worker_init_fn is not None:
            job.worker_init_fn(worker)
    except Exception as e:  # noqa: BLE001  (reported to the main process)
        results.put((-1, _Failure.of(e, worker)))
        return
    iterable = isinstance(job.dataset, IterableDataset)
    results.cancel_join_thread()  # told to stop, exit at once: results no one reads are dropped
    while (task := tasks.get()) is not None:
        number, item = task
        if number == -1:  # a new epoch: a fresh pass over an iterable dataset
            source = None
            continue
        try:
            if iterable and source is None:
                source = iter(job.dataset)
            # pickled here, not in the queue's feeder thread, whose error (an unpicklable
            # sample) would be printed and the result never sent: the loader would wait on
            payload = ForkingPickler.dumps(_fetch(job, source, item))
        except Exception as e:  # noqa: BLE001  (reported to the main process)
            results.put((number, _Failure.of(e, worker)))
            continue
        results.put((number, bytes(payload)))


class WorkerError(Error):
    """The workers cannot go on: one died, or a result came later than the timeout."""


def _unpickled(result):
    """A worker's result as this process rebuilds it; a batch that fails to rebuild here is
    that task's failure (its error raised by the call that asked for it)."""
    if type(result) is not bytes:
        return result
    try:
        return ForkingPickler.loads(result)
    except Exception as e:  # noqa: BLE001  (any error of the batch's own unpickling)
        return _Failure.of(e, -1)


class Pool:
    """A loader's worker processes (kept across epochs with persistent_workers)."""

    def __init__(self, job: Job, base_seed: int, context, timeout: float, prefetch: int) -> None:
        if context is None or isinstance(context, str):
            context = multiprocessing.get_context(context)
        self.timeout, self.prefetch, self.owner = timeout, prefetch, os.getpid()
        self.numbers = itertools.count()
        self.results = context.Queue()
        self.tasks = [context.Queue() for _ in range(job.num_workers)]
        self.processes = [
            context.Process(
                target=_work, args=(job, w, base_seed + w, self.tasks[w], self.results),
                daemon=True,
            )
            for w in range(job.num_workers)
        ]  # fmt: skip
        for p in self.processes:
            p.start()

    def _result(self):
        """The next (task number, result), checking every few seconds that the workers live."""
        waited = 0.0
        while True:
            step = 5.0 if self.timeout <= 0 else min(5.0, self.timeout - waited)
            try:
                number, result = self.results.get(timeout=step)
            except queue.Empty:
                waited += step
            else:
                return number, _unpickled(result)
            dead = [p.pid for p in self.processes if not p.is_alive()]
            if dead:
                self.close()
                raise WorkerError(f"DataLoader worker (pid(s) {dead}) exited unexpectedly")
            if 0 < self.timeout <= waited:
                raise WorkerError(f"DataLoader timed out after {self.timeout} seconds")

    def epoch(self, items: Iterator) -> _Epoch:
        """One epoch's batches in task order (see _Epoch)."""
        return _Epoch(self, items)

    def close(self) -> None:
        """Stop the workers (in the process that started them: a forked worker holding
        this pool's copy leaves them alone): asked to stop, then ended if they linger."""
        if os.getpid() != self.owner or not self.processes:
            return
        for tasks in self.tasks:
            with contextlib.suppress(OSError, ValueError):  # a queue already closed
                tasks.put(None)
            tasks.cancel_join_thread()
        for p in self.processes:
            p.join(timeout=1)
        for p in self.processes:
            if p.is_alive():
                p.terminate()
                p.join(timeout=5)
        self.results.cancel_join_thread()
        self.processes = []


class _Epoch:
    """One epoch of a Pool: tasks go to workers round-robin, skipping workers whose iterable
    pass has ended, prefetch of them per worker outstanding; batches come back in task
    order. A batch whose worker raised is that call's error and the next call goes on, as
    torch's loader does. Task numbers run on across epochs, so the results of an epoch left
    early are told from this one's and dropped."""

    def __init__(self, pool: Pool, items: Iterator) -> None:
        self.pool, self.items = pool, items
        for tasks in pool.tasks:
            tasks.put((-1, None))
        self.live = list(range(len(pool.tasks)))
        self.pending: collections.deque[tuple[int, int]] = collections.deque()  # (number, worker)
        self.done: dict[int, object] = {}
        self.turn = itertools.cycle(range(len(pool.tasks)))
        for _ in range(pool.prefetch * len(pool.tasks)):
            self._send()

    def _send(self) -> None:
        item = next(self.items, _End) if self.live else _End
        if item is not _End:
            worker = next(w for w in self.turn if w in self.live)
            number = next(self.pool.numbers)
            self.pending.append((number, worker))
            self.pool.tasks[worker].put((number, item))

    def __iter__(self) -> _Epoch:
        return self

    def __next__(self):
        while self.pending:
            number, worker = self.pending[0]
            while number not in self.done:
                got, result = self.pool._result()
                if got == -1:  # a worker_init_fn failed: that worker is gone
                    result.reraise()
                if got >= number:  # (a smaller number is an abandoned epoch's)
                    self.done[got] = result
            self.pending.popleft()
            result = self.done.pop(number)
            self._send()
            if result is _End:
                if worker in self.live:
                    self.live.remove(worker)
                continue
            if isinstance(result, _Failure):
                result.reraise()
            return result
        raise StopIteration
