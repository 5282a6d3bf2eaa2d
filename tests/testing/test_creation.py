"""kael.testing.make_tensor against torch.testing.make_tensor: shapes, dtypes, value ranges,
layouts and the refused arguments (the values are kael's own draws, not torch's)."""

import math

import pytest
import torch

import kael
from kael.testing import make_tensor

DTYPES = ["float16", "bfloat16", "float32", "float64", "int8", "int16", "int32", "int64"]
DTYPES += ["uint8", "bool"]


def _both(*shape, dtype, **kwargs):
    got = make_tensor(*shape, dtype=getattr(kael, dtype), device="cpu", **kwargs)
    want = torch.testing.make_tensor(*shape, dtype=getattr(torch, dtype), device="cpu", **kwargs)
    return got, want


@pytest.mark.parametrize("dtype", DTYPES)
def test_default_range_shape_and_dtype(dtype):
    got, want = _both(64, 65, dtype=dtype)
    assert got.shape == tuple(want.shape) and str(got.dtype) == str(want.dtype).split(".")[1]
    lows = {"uint8": 0, "bool": 0}
    low, high = lows.get(dtype, -9), 1 if dtype == "bool" else (9 if "float" in dtype else 9)
    assert low <= got.double().min().item() and got.double().max().item() <= high
    assert got.double().min().item() < low + 1 and got.double().max().item() > high - 1


def test_shape_as_one_sequence_or_none():
    assert make_tensor((2, 3), dtype=kael.float32, device="cpu").shape == (2, 3)
    assert make_tensor(dtype=kael.float32, device="cpu").shape == ()


@pytest.mark.parametrize("shape", [(2,), (2, 3), (0,), (), (1,)])
def test_noncontiguous_strides_match_torch(shape):
    got, want = _both(*shape, dtype="float32", noncontiguous=True)
    assert got.stride() == want.stride() and got.shape == tuple(want.shape)


def test_memory_format_and_its_exclusion():
    got = make_tensor(2, 3, 4, 5, dtype=kael.float32, device="cpu",
                      memory_format=kael.channels_last)  # fmt: skip
    want = torch.testing.make_tensor(2, 3, 4, 5, dtype=torch.float32, device="cpu",
                                     memory_format=torch.channels_last)  # fmt: skip
    assert got.stride() == want.stride()
    with pytest.raises(kael.ValueError, match="mutually exclusive"):
        make_tensor(2, dtype=kael.float32, device="cpu", noncontiguous=True, memory_format=1)


@pytest.mark.parametrize("dtype", ["int64", "float32", "uint8"])
def test_exclude_zero_leaves_no_zero(dtype):
    got = make_tensor(500, dtype=getattr(kael, dtype), device="cpu", low=0, high=2,
                      exclude_zero=True)  # fmt: skip
    assert (got != 0).all().item()


def test_bounds_are_clamped_to_the_dtype():
    got, want = _both(100, dtype="int8", low=-500)
    assert got.min().item() >= -128 and want.min().item() >= -128
    got = make_tensor(10, dtype=kael.float16, device="cpu", low=-1e6, high=-6e4)
    assert math.isfinite(got.float().min().item()) and got.float().max().item() <= -6e4


def test_integer_high_is_exclusive():
    got = make_tensor(200, dtype=kael.int64, device="cpu", low=1, high=2)
    assert (got == 1).all().item()


@pytest.mark.parametrize(
    ("kwargs", "dtype"),
    [
        ({"low": 5, "high": 1}, "float32"),
        ({"low": 1, "high": 1}, "int64"),
        ({"low": math.nan}, "float32"),
        ({"low": math.inf}, "float32"),
    ],
)
def test_bad_intervals_raise_torch_message(kwargs, dtype):
    with pytest.raises(ValueError) as want:
        torch.testing.make_tensor(3, dtype=getattr(torch, dtype), device="cpu", **kwargs)
    with pytest.raises(kael.ValueError) as got:
        make_tensor(3, dtype=getattr(kael, dtype), device="cpu", **kwargs)
    assert str(got.value) == str(want.value)


def test_requires_grad_is_refused_without_autograd():
    with pytest.raises(kael.Error, match="no autograd"):
        make_tensor(2, dtype=kael.float32, device="cpu", requires_grad=True)


def test_integer_ranges_reach_the_dtypes_maximum():
    assert make_tensor(20000, dtype=kael.uint8, device="cpu", low=200, high=300).max().item() == 255
    got = make_tensor(10, dtype=kael.int8, device="cpu", low=127, high=200)
    want = torch.testing.make_tensor(10, dtype=torch.int8, device="cpu", low=127, high=200)
    assert got.tolist() == want.tolist() == [127] * 10
