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


@dataclass
class _Failure:
    """An exception raised in a worker, carried back as text."""

    kind: type
    worker: int
    text: str

    def reraise(self):
        message = f"Caught {self.kind.__name__} in DataLoader worker process {self.worker}.\n"
        message += f"Original {self.text}"
        try:
            error = self.kind(message)
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


def fetch_all(job: Job, items: Iterator) -> Iterator:
    """The batches of one epoch, loaded in this process as they are asked for."""
    source = iter(job.dataset) if isinstance(job.dataset, IterableDataset) else None
    for item in items:
        batch = _fetch(job, source, item)
        if batch is _End:
            return
        yield batch


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
        results.put((-1, _Failure(type(e), worker, traceback.format_exc())))
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
            results.put((number, _fetch(job, source, item)))
        except Exception as e:  # noqa: BLE001  (reported to the main process)
            results.put((number, _Failure(type(e), worker, traceback.format_exc())))


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
                return self.results.get(timeout=step)
            except queue.Empty:
                waited += step
            dead = [p.pid for p in self.processes if not p.is_alive()]
            if dead:
                self.close()
                raise Error(f"DataLoader worker (pid(s) {dead}) exited unexpectedly")
            if 0 < self.timeout <= waited:
                raise Error(f"DataLoader timed out after {self.timeout} seconds")

    def epoch(self, items: Iterator) -> Iterator:
        """One epoch's batches in task order; tasks go to workers round-robin, skipping
        workers whose iterable pass has ended. Task numbers run on across epochs, so the
        results of an epoch left early are told from this one's and dropped."""
        for tasks in self.tasks:
            tasks.put((-1, None))
        live = list(range(len(self.tasks)))
        pending: collections.deque[tuple[int, int]] = collections.deque()  # (number, worker)
        done: dict[int, object] = {}
        turn = itertools.cycle(range(len(self.tasks)))

        def send() -> None:
            item = next(items, _End) if live else _End
            if item is not _End:
                worker = next(w for w in turn if w in live)
                number = next(self.numbers)
                pending.append((number, worker))
                self.tasks[worker].put((number, item))

        for _ in range(self.prefetch * len(self.tasks)):
            send()
        while pending:
            number, worker = pending.popleft()
            while number not in done:
                got, result = self._result()
                if got < number and got != -1:  # an abandoned epoch's result
                    continue
                if isinstance(result, _Failure):
                    result.reraise()
                done[got] = result
            result = done.pop(number)
            if result is _End:
                if worker in live:
                    live.remove(worker)
            else:
                yield result
            send()

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
