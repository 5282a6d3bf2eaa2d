"""Samplers: orders, lengths, seeding, and torch's refusals of bad arguments."""

import pytest

import kael
from kael.utils.data import (
    BatchSampler,
    RandomSampler,
    SequentialSampler,
    SubsetRandomSampler,
    WeightedRandomSampler,
)


def test_sequential_and_batch_samplers():
    s = SequentialSampler(range(7))
    assert list(s) == list(range(7)) and len(s) == 7
    assert list(BatchSampler(s, 3, False)) == [[0, 1, 2], [3, 4, 5], [6]]
    assert list(BatchSampler(s, 3, True)) == [[0, 1, 2], [3, 4, 5]]
    assert len(BatchSampler(s, 3, False)) == 3 and len(BatchSampler(s, 3, True)) == 2


def test_random_sampler_is_a_permutation_repeated_by_the_seed():
    kael.manual_seed(1)
    first = list(RandomSampler(range(20)))
    kael.manual_seed(1)
    assert list(RandomSampler(range(20))) == first and sorted(first) == list(range(20))
    more = list(RandomSampler(range(5), num_samples=12))
    assert len(more) == 12 and sorted(more[:5]) == list(range(5))
    drawn = list(RandomSampler(range(3), replacement=True, num_samples=100))
    assert len(drawn) == 100 and set(drawn) == {0, 1, 2}


def test_samplers_with_a_generator_repeat():
    orders = [
        list(SubsetRandomSampler([10, 20, 30, 40], generator=kael.Generator().manual_seed(3)))
        for _ in range(2)
    ]
    assert orders[0] == orders[1] and sorted(orders[0]) == [10, 20, 30, 40]


def test_weighted_sampler_never_draws_a_zero_weight():
    drawn = list(WeightedRandomSampler([0.0, 1.0, 3.0], 200))
    assert len(drawn) == 200 and 0 not in drawn and {1, 2} == set(drawn)
    no_repeat = list(WeightedRandomSampler([1.0, 1.0, 1.0], 3, replacement=False))
    assert sorted(no_repeat) == [0, 1, 2]


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: RandomSampler(range(3), num_samples=0), "num_samples should be a positive"),
        (lambda: RandomSampler(range(3), replacement=1), "replacement should be a boolean"),
        (lambda: BatchSampler(range(3), 0, False), "batch_size should be a positive integer"),
        (lambda: BatchSampler(range(3), 2, 1), "drop_last should be a boolean value"),
        (lambda: WeightedRandomSampler([1.0], 0), "num_samples should be a positive"),
        (lambda: WeightedRandomSampler([[1.0, 2.0]], 2), "weights should be a 1d sequence"),
    ],
)
def test_bad_sampler_arguments_are_refused_as_torch(make, message):
    with pytest.raises((kael.ValueError, kael.TypeError), match=message):
        make()


@pytest.mark.parametrize("replacement", [False, True])
def test_samples_from_an_empty_source_are_a_typed_error(replacement):
    """torch divides by the 0 length (ZeroDivisionError) or draws from an empty range."""
    with pytest.raises(kael.ValueError, match="3 samples from an empty data source"):
        list(RandomSampler([], num_samples=3, replacement=replacement))
