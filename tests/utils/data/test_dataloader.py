"""DataLoader against torch's: the same batches (order, shapes, dtypes, values) for the
options programs use, in the main process and in worker processes, and torch's refusals."""

import threading
import time

import numpy as np
import pytest
import torch
import torch.utils.data as tdata

import kael
from kael.utils.data import (
    ChainDataset,
    DataLoader,
    Dataset,
    IterableDataset,
    TensorDataset,
    get_worker_info,
)

X = np.arange(40, dtype=np.float32).reshape(20, 2)
Y = np.arange(20)


def _pair():
    return (
        TensorDataset(kael.tensor(X), kael.tensor(Y)),
        tdata.TensorDataset(torch.tensor(X), torch.tensor(Y)),
    )


def _same_batches(got, want):
    assert len(got) == len(want)
    for g, w in zip(got, want):
        for a, b in zip(g, w):
            assert a.shape == tuple(b.shape) and str(a.dtype) == str(b.dtype)[6:]
            np.testing.assert_array_equal(a.numpy(), b.numpy())


OPTIONS = {
    "batches_of_6": {"batch_size": 6},
    "drop_last": {"batch_size": 6, "drop_last": True},
    "unbatched": {"batch_size": None},
    "two_workers": {"batch_size": 4, "num_workers": 2},
    "persistent_workers": {"batch_size": 3, "num_workers": 2, "persistent_workers": True},
}


@pytest.mark.parametrize("name", sorted(OPTIONS))
def test_batches_match_torch(name):
    kd, td = _pair()
    loader = DataLoader(kd, **OPTIONS[name])
    for _ in range(2):  # a second epoch (persistent workers serve it again)
        got = list(loader)
        _same_batches(got, list(tdata.DataLoader(td, **OPTIONS[name])))
    assert len(loader) == len(got)


def test_shuffle_covers_every_sample_and_repeats_with_the_seed():
    kd, _ = _pair()
    orders = []
    for _ in range(2):
        kael.manual_seed(0)
        orders.append([b[1].tolist() for b in DataLoader(kd, batch_size=5, shuffle=True)])
    assert orders[0] == orders[1] and sorted(sum(orders[0], [])) == list(range(20))
    assert sum(orders[0], []) != list(range(20))


class Shards(IterableDataset):
    """Each worker reads its share, as torch's documentation shows."""

    def __iter__(self):
        info = get_worker_info()
        start, step = (0, 1) if info is None else (info.id, info.num_workers)
        return iter(range(start, 10, step))

    def __len__(self):
        return 10


class TorchShards(tdata.IterableDataset):
    def __iter__(self):
        info = tdata.get_worker_info()
        start, step = (0, 1) if info is None else (info.id, info.num_workers)
        return iter(range(start, 10, step))


@pytest.mark.parametrize("workers", [0, 2])
def test_iterable_dataset_batches_match_torch(workers):
    got = [b.tolist() for b in DataLoader(Shards(), batch_size=3, num_workers=workers)]
    want = [b.tolist() for b in tdata.DataLoader(TorchShards(), batch_size=3, num_workers=workers)]
    assert got == want


class Stream(IterableDataset):
    """A stream: no __len__, as most iterable datasets are written."""

    def __iter__(self):
        return iter(range(7))


class TorchStream(tdata.IterableDataset):
    def __iter__(self):
        return iter(range(7))


@pytest.mark.parametrize("workers", [0, 2])
@pytest.mark.parametrize("batch_size", [None, 3])
def test_an_iterable_dataset_without_len_streams_as_torch(workers, batch_size):
    def batches(data, loader, chain):
        return [
            b if isinstance(b, int) else b.tolist()
            for b in loader(data, batch_size=batch_size, num_workers=workers)
        ] + [b.tolist() for b in loader(chain([data, data]), batch_size=4)]

    got = batches(Stream(), DataLoader, ChainDataset)
    want = batches(TorchStream(), tdata.DataLoader, tdata.ChainDataset)
    assert got == want


def test_len_of_a_loader_over_a_stream_is_a_typed_error():
    with pytest.raises(kael.TypeError, match="'Stream' has no len"):
        len(DataLoader(Stream(), batch_size=2))


class Failing(Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, i):
        if i == 2:
            raise KeyError("boom")
        return i


@pytest.mark.parametrize("workers", [0, 2])
def test_a_datasets_exception_reaches_the_caller(workers):
    with pytest.raises(KeyError, match="boom"):
        list(DataLoader(Failing(), batch_size=1, num_workers=workers))


class Seeds(Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, i):
        return get_worker_info().seed, kael.rand(1).item()


def test_workers_get_distinct_seeds_and_init():
    loader = DataLoader(Seeds(), batch_size=1, num_workers=2)
    seeds = {batch[0].item() for batch in loader}
    assert len(seeds) == 2


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"sampler": [0, 1], "shuffle": True}, "mutually exclusive with shuffle"),
        ({"batch_sampler": [[0]], "batch_size": 2}, "batch_sampler option is mutually"),
        ({"batch_size": None, "drop_last": True}, "disables auto-batching"),
        ({"num_workers": -1}, "num_workers option should be non-negative"),
        ({"prefetch_factor": 2}, "prefetch_factor option could only be specified"),
    ],
)
def test_contradicting_options_are_refused(options, message):
    kd, _ = _pair()
    with pytest.raises(kael.ValueError, match=message):
        DataLoader(kd, **options)


def test_iterable_dataset_refuses_shuffle():
    with pytest.raises(kael.ValueError, match="expected unspecified shuffle option"):
        DataLoader(Shards(), shuffle=True)


def test_two_live_iterators_of_one_loader_both_finish():
    """zip(dl, dl) shared one worker pool, whose second epoch dropped the first's results."""
    dl = DataLoader(list(range(6)), batch_size=2, num_workers=2)
    pairs = [(a.tolist(), b.tolist()) for a, b in zip(dl, dl)]
    assert pairs == [([0, 1], [0, 1]), ([2, 3], [2, 3]), ([4, 5], [4, 5])]
    it = iter(dl)
    next(it)
    assert [b.tolist() for b in dl] == [[0, 1], [2, 3], [4, 5]]
    assert [b.tolist() for b in it] == [[2, 3], [4, 5]]


class Large(Dataset):
    def __len__(self):
        return 64

    def __getitem__(self, i):
        return kael.ones(1 << 20)


def test_leaving_an_epoch_early_stops_the_workers_at_once():
    start = time.perf_counter()
    epoch = iter(DataLoader(Large(), batch_size=1, num_workers=2))
    next(epoch)
    started = list(epoch.pool.processes)
    del epoch  # leaving the epoch: as a `for` loop's break drops its iterator
    assert time.perf_counter() - start < 4  # it took 10 s: each worker joined for 5
    # this loader's own workers (the suite's other children may still be ending)
    assert len(started) == 2 and not any(p.is_alive() for p in started)


def test_persistent_workers_serve_the_next_epoch_after_an_early_break():
    dl = DataLoader(list(range(8)), batch_size=2, num_workers=2, persistent_workers=True)
    for _ in dl:
        break
    assert [b.tolist() for b in dl] == [[0, 1], [2, 3], [4, 5], [6, 7]]


@pytest.mark.parametrize("workers", [0, 2])
def test_a_seeded_shuffle_is_the_same_with_any_worker_count(workers):
    orders = []
    for count in (0, workers):
        g = kael.Generator().manual_seed(0)
        loader = DataLoader(list(range(6)), 2, shuffle=True, generator=g, num_workers=count)
        orders.append([b.tolist() for b in loader])
    assert orders[0] == orders[1]


def test_pin_memory_without_a_gpu_warns_and_loads(recwarn):
    if kael.cuda.is_available():
        return  # pinning works there: nothing to warn of
    assert [b.tolist() for b in DataLoader(list(range(4)), batch_size=2, pin_memory=True)] == [
        [0, 1], [2, 3]
    ]  # fmt: skip
    assert any("no accelerator is found" in str(w.message) for w in recwarn)


@pytest.mark.parametrize(
    ("options", "error", "message"),
    [
        ({"timeout": -1}, kael.ValueError, "timeout option should be non-negative"),
        ({"num_workers": 2, "prefetch_factor": -1}, kael.ValueError, "prefetch_factor option should be non-negative"),
        ({"multiprocessing_context": "fork"}, kael.ValueError, "can only be used with multi-process"),
        ({"num_workers": 2, "multiprocessing_context": "bogus"}, kael.ValueError, "valid start method"),
        ({"num_workers": 2, "multiprocessing_context": 3}, kael.TypeError, "valid context object"),
    ],
)  # fmt: skip
def test_bad_option_values_are_refused_as_torch(options, error, message):
    with pytest.raises(ValueError if error is kael.ValueError else TypeError, match=message):
        tdata.DataLoader(list(range(4)), **options)
    with pytest.raises(error, match=message):
        DataLoader(list(range(4)), **options)


def test_a_batch_sampler_clears_batch_size_as_torch():
    loader = DataLoader(list(range(4)), batch_sampler=[[0, 1], [2, 3]])
    assert loader.batch_size is None and loader.drop_last is False
    assert [b.tolist() for b in loader] == [[0, 1], [2, 3]]


def test_persistent_workers_give_one_iterator_that_each_iter_starts_again_as_torch():
    """zip(dl, dl) takes turns on one pass (it hung: two epochs on one pool each dropped
    the other's results)."""
    got = []
    for lib in (kael.utils.data, torch.utils.data):
        dl = lib.DataLoader(list(range(6)), batch_size=2, num_workers=2, persistent_workers=True)
        got.append([(a.tolist(), b.tolist()) for a, b in zip(dl, dl)])
        assert iter(dl) is iter(dl)
    assert got[0] == got[1] == [([0, 1], [2, 3])]


class _BadSample(Dataset):
    def __len__(self):
        return 6

    def __getitem__(self, i):
        if i == 3:
            raise KeyError("bad sample")
        return i


@pytest.mark.parametrize("workers", [0, 2])
def test_a_batch_that_raises_is_that_calls_error_and_the_pass_goes_on_as_torch(workers):
    seen = []
    for lib, dataset in ((kael.utils.data, _BadSample()), (torch.utils.data, _BadSample())):
        it, out = iter(lib.DataLoader(dataset, batch_size=1, num_workers=workers)), []
        while True:
            try:
                out.append(next(it).tolist())
            except KeyError:
                out.append("KeyError")
            except StopIteration:
                break
        seen.append(out)
    assert seen[0] == seen[1] == [[0], [1], [2], "KeyError", [4], [5]]


@pytest.mark.parametrize("workers", [0, 2])
def test_an_iterator_has_the_loaders_length_as_torch(workers):
    loader = DataLoader(list(range(5)), batch_size=2, num_workers=workers)
    assert len(iter(loader)) == len(loader) == 3


# torch's iterator, refused half-built, raises in its __del__: its warning is not ours
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_a_prefetch_factor_of_0_is_refused_not_an_empty_epoch():
    with pytest.raises(AssertionError, match="prefetch_factor must be greater than 0"):
        iter(tdata.DataLoader(list(range(4)), num_workers=2, prefetch_factor=0))
    with pytest.raises(kael.ValueError, match="prefetch_factor must be greater than 0"):
        DataLoader(list(range(4)), num_workers=2, prefetch_factor=0)


class _Unpicklable(Dataset):
    def __len__(self):
        return 2

    def __getitem__(self, i):
        return threading.Lock()


def test_a_sample_that_cannot_be_pickled_is_a_workers_error_not_a_hang():
    """torch hangs here: the queue's feeder thread prints the error and sends nothing."""
    with pytest.raises(TypeError, match="Caught TypeError in DataLoader worker process"):
        list(DataLoader(_Unpicklable(), batch_size=None, num_workers=2, timeout=30))


def _local_error_dataset():
    class LocalError(Exception):  # defined in a function: its class does not pickle
        pass

    class Raises(Dataset):
        def __len__(self):
            return 4

        def __getitem__(self, i):
            if i == 1:
                raise LocalError("bad sample")
            return i

    return Raises()


def test_an_error_whose_class_cannot_be_pickled_arrives_named_not_a_hang():
    """The failure carried the class itself, which the results queue's feeder thread could
    not pickle: it printed the error, sent nothing, and the loader waited for good."""
    it = iter(DataLoader(_local_error_dataset(), num_workers=1, timeout=30))
    assert next(it).tolist() == [0]
    with pytest.raises(kael.Error, match="Caught LocalError in DataLoader worker process 0"):
        next(it)
    assert [b.tolist() for b in it] == [[2], [3]]


class _DiesAt3(Dataset):
    def __len__(self):
        return 6

    def __getitem__(self, i):
        if i == 3:
            import os

            os._exit(3)
        return i


def test_after_a_worker_dies_the_pass_ends_instead_of_waiting():
    it = iter(DataLoader(_DiesAt3(), num_workers=2, timeout=30))
    with pytest.raises(kael.Error, match="exited unexpectedly"):
        for _ in range(6):
            next(it)
    with pytest.raises(StopIteration):
        next(it)


def _rebuilt(value):
    if get_worker_info() is None and value == 1:
        raise ValueError("cannot rebuild 1 here")
    return value


class _RebuildsBadly:
    def __init__(self, value):
        self.value = value

    def __reduce__(self):
        return (_rebuilt, (self.value,))


class _BadlyRebuilt(Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, i):
        return _RebuildsBadly(i)


def test_a_batch_that_fails_to_unpickle_here_is_its_calls_error_and_the_pass_goes_on():
    it = iter(DataLoader(_BadlyRebuilt(), num_workers=1, batch_size=None, timeout=30))
    assert next(it) == 0
    with pytest.raises(ValueError, match="cannot rebuild 1 here"):
        next(it)
    assert list(it) == [2, 3]


def test_len_of_an_iterator_whose_loader_is_gone_as_torch():
    assert len(iter(DataLoader(TensorDataset(kael.arange(10)), batch_size=3))) == 4
    assert len(iter(tdata.DataLoader(tdata.TensorDataset(torch.arange(10)), batch_size=3))) == 4


def test_persistent_workers_draw_their_seed_once_as_torch():
    """torch draws a worker seed when it starts workers: each epoch without persistent
    workers, once with them; from the second epoch on, a shuffle seeded alike differs."""
    orders = {}
    for persist in (False, True):
        g = kael.Generator().manual_seed(5)
        loader = DataLoader(TensorDataset(kael.arange(6)), batch_size=6, shuffle=True,
                            generator=g, num_workers=1, persistent_workers=persist)  # fmt: skip
        orders[persist] = [next(iter(loader))[0].tolist() for _ in range(3)]
    assert orders[False][0] == orders[True][0]
    assert orders[False][1:] != orders[True][1:]


def test_a_worker_keyerror_reads_as_its_message():
    class Missing(Dataset):
        def __len__(self):
            return 2

        def __getitem__(self, i):
            raise KeyError("label")

    with pytest.raises(KeyError) as caught:
        next(iter(DataLoader(Missing(), num_workers=1, timeout=30)))
    assert str(caught.value).startswith("Caught KeyError in DataLoader worker process 0.\n")
