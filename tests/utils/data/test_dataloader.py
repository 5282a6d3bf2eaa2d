"""DataLoader against torch's: the same batches (order, shapes, dtypes, values) for the
options programs use, in the main process and in worker processes, and torch's refusals."""

import numpy as np
import pytest
import torch
import torch.utils.data as tdata

import kael
from kael.utils.data import DataLoader, Dataset, IterableDataset, TensorDataset, get_worker_info

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
