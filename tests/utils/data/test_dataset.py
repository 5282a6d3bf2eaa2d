"""Datasets: TensorDataset, StackDataset, ConcatDataset, ChainDataset, Subset and
random_split, with torch's indexing, lengths and refusals."""

import pytest

import kael
from kael.utils.data import Dataset, IterableDataset, Subset
from kael.utils.data import dataset as datasets

ChainDataset, ConcatDataset = datasets.ChainDataset, datasets.ConcatDataset
StackDataset, TensorDataset = datasets.StackDataset, datasets.TensorDataset
random_split = datasets.random_split


class Squares(Dataset):
    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return i * i


class Count(IterableDataset):
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        return iter(range(self.n))

    def __len__(self):
        return self.n


def test_tensor_dataset_indexes_every_tensor():
    d = TensorDataset(kael.arange(6).reshape(3, 2), kael.tensor([7, 8, 9]))
    x, y = d[1]
    assert len(d) == 3 and x.tolist() == [2, 3] and y.item() == 8
    with pytest.raises(kael.ValueError, match="Size mismatch between tensors"):
        TensorDataset(kael.ones(2), kael.ones(3))


def test_stack_dataset_tuples_and_dicts():
    assert StackDataset(Squares(3), Squares(3))[2] == (4, 4)
    assert StackDataset(a=Squares(2), b=Squares(2))[1] == {"a": 1, "b": 1}
    with pytest.raises(kael.ValueError, match="Size mismatch between datasets"):
        StackDataset(Squares(2), Squares(3))


def test_concat_dataset_indexes_across_parts_and_from_the_end():
    d = Squares(2) + Squares(3)
    assert isinstance(d, ConcatDataset) and len(d) == 5
    assert [d[i] for i in range(5)] == [0, 1, 0, 1, 4] and d[-1] == 4 and d[-5] == 0
    with pytest.raises(kael.ValueError, match="should not exceed dataset length"):
        d[-6]
    with pytest.raises(kael.IndexError):
        d[5]
    with pytest.raises(kael.ValueError, match="should not be an empty iterable"):
        ConcatDataset([])
    with pytest.raises(kael.TypeError, match="does not support IterableDataset"):
        ConcatDataset([Count(2)])


def test_chain_dataset_reads_one_after_another():
    d = Count(2) + Count(3)
    assert isinstance(d, ChainDataset) and list(d) == [0, 1, 0, 1, 2] and len(d) == 5


def test_subset_reads_its_indices():
    s = Subset(Squares(5), [4, 0, 2])
    assert len(s) == 3 and [s[i] for i in range(3)] == [16, 0, 4]
    assert s.__getitems__([0, 2]) == [16, 4]


def test_random_split_partitions_by_lengths_and_fractions():
    kael.manual_seed(0)
    parts = random_split(Squares(10), [3, 7])
    assert [len(p) for p in parts] == [3, 7]
    assert sorted(parts[0].indices + parts[1].indices) == list(range(10))
    assert [len(p) for p in random_split(Squares(11), [0.3, 0.3, 0.4])] == [4, 3, 4]
    with pytest.raises(kael.ValueError, match="Sum of input lengths does not equal"):
        random_split(Squares(5), [2, 2])
    g = kael.Generator().manual_seed(5)
    again = kael.Generator().manual_seed(5)
    first = random_split(Squares(8), [4, 4], generator=g)
    assert first[0].indices == random_split(Squares(8), [4, 4], generator=again)[0].indices


def test_chain_dataset_length_needs_iterable_parts():
    with pytest.raises(kael.TypeError, match="only supports IterableDataset"):
        len(ChainDataset([TensorDataset(kael.ones(2))]))
