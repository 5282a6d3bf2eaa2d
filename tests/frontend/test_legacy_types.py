"""torch's legacy constructors and types: kael.Tensor(...), kael.FloatTensor(...) and the
rest, isinstance with them, Tensor.type(kael.DoubleTensor), and torch's constants."""

import math

import numpy as np
import pytest
import torch

import kael

ARGS = [(), ([1, 2],), (2, 3), ((2, 3),), ([[1, 2]],), (np.array([1, 2]),)]


@pytest.mark.parametrize("args", ARGS, ids=str)
def test_tensor_constructor_matches_torch(args):
    got, want = kael.Tensor(*args), torch.Tensor(*args)
    assert got.shape == tuple(want.shape) and got.dtype is kael.float32
    if args and not isinstance(args[0], int):
        np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_tensor_of_a_tensor_shares_its_data_and_size_objects_are_sizes():
    x = kael.tensor([1, 2])
    alias = kael.Tensor(x)
    alias.add_(1)
    assert alias.dtype is kael.int64 and x.tolist() == [2, 3]
    assert kael.Tensor(kael.Size([2, 3])).shape == (2, 3)


@pytest.mark.parametrize("arg", [1.5, "x"])
def test_tensor_constructor_refuses_what_is_no_size_or_data(arg):
    with pytest.raises(kael.TypeError, match="Tensor\\(\\): "):
        kael.Tensor(arg)


@pytest.mark.parametrize(
    "name",
    ["FloatTensor", "DoubleTensor", "HalfTensor", "BFloat16Tensor", "ByteTensor", "CharTensor",
     "ShortTensor", "IntTensor", "LongTensor", "BoolTensor"],
)  # fmt: skip
def test_legacy_types_make_and_recognise_their_dtype(name):
    ours, theirs = getattr(kael, name), getattr(torch, name)
    got, want = ours([1, 0]), theirs([1, 0])
    assert str(got.dtype) == str(want.dtype).removeprefix("torch.")
    assert got.tolist() == want.tolist() and ours(3).shape == (3,)
    assert isinstance(got, ours) and isinstance(got, kael.Tensor)
    other = kael.ones(1, dtype=kael.float64 if name != "DoubleTensor" else kael.float32)
    assert not isinstance(other, ours)
    assert kael.ones(2).type(ours).dtype is got.dtype
    with pytest.raises(kael.TypeError, match=f"{name}\\(\\): expected a"):
        ours(other)


def test_constants():
    assert kael.inf == math.inf and math.isnan(kael.nan) and kael.pi == math.pi
    assert kael.e == math.e and kael.newaxis is None
    assert kael.ones(2)[kael.newaxis].shape == (1, 2)
