"""DistributedSampler against torch's: the shares of an unshuffled dataset index for
index, shuffled shares that partition the dataset and repeat per seed and epoch, and
torch's refusals."""

import pytest
import torch

import kael
from kael.utils.data import DataLoader, DistributedSampler, TensorDataset

SIZES = [0, 1, 7, 10, 12]


@pytest.mark.parametrize("drop_last", [False, True])
@pytest.mark.parametrize("replicas", [1, 3, 4])
@pytest.mark.parametrize("n", SIZES)
def test_unshuffled_shares_are_torchs(n, replicas, drop_last):
    for rank in range(replicas):
        got = DistributedSampler(range(n), replicas, rank, shuffle=False, drop_last=drop_last)
        want = torch.utils.data.DistributedSampler(
            range(n), replicas, rank, shuffle=False, drop_last=drop_last
        )
        assert list(got) == list(want) and len(got) == len(want)
        assert (got.num_samples, got.total_size) == (want.num_samples, want.total_size)


@pytest.mark.parametrize("drop_last", [False, True])
def test_shuffled_shares_partition_the_dataset_and_repeat_per_epoch(drop_last):
    n, replicas = 22, 4
    samplers = [DistributedSampler(range(n), replicas, r, drop_last=drop_last) for r in range(4)]
    first = [list(s) for s in samplers]
    every = [i for share in first for i in share]
    if drop_last:  # 20 distinct indices, 2 left out
        assert len(every) == len(set(every)) == 20
    else:  # all 22, and the first two again as padding
        assert sorted(set(every)) == list(range(n)) and len(every) == 24
    assert [list(s) for s in samplers] == first  # the same epoch: the same order
    for s in samplers:
        s.set_epoch(1)
    assert [list(s) for s in samplers] != first
    again = DistributedSampler(range(n), replicas, 0, drop_last=drop_last, seed=0)
    again.set_epoch(1)
    assert list(again) == list(samplers[0])


def test_feeds_a_dataloader():
    data = TensorDataset(kael.arange(10))
    loader = DataLoader(data, batch_size=2, sampler=DistributedSampler(data, 2, 1, shuffle=False))
    assert [b[0].tolist() for b in loader] == [[1, 3], [5, 7], [9]]


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({}, kael.Error, "Requires distributed package to be available"),
        ({"num_replicas": 2}, kael.Error, "Requires distributed package"),
        ({"num_replicas": 2, "rank": 2}, kael.ValueError, r"Invalid rank 2, .*\[0, 1\]"),
        ({"num_replicas": 2, "rank": -1}, kael.ValueError, "Invalid rank -1"),
    ],
)
def test_bad_replicas_and_ranks_raise_as_torch(kwargs, error, match):
    with pytest.raises(error, match=match):
        DistributedSampler(range(4), **kwargs)
