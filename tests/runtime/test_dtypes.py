"""dtypes.py against PyTorch: sizes, promote_types, the scalar rule and result_type."""

import itertools
import pickle
from dataclasses import dataclass

import numpy as np
import pytest
import torch

from kael.runtime import dtypes
from kael.runtime.errors import TypeError

ALL = dtypes.ALL_DTYPES


def torch_dtype(dtype: dtypes.DType) -> torch.dtype:
    return getattr(torch, dtype.name)


def kael_dtype(dtype: torch.dtype) -> dtypes.DType:
    return dtypes.dtype_from_name(str(dtype).removeprefix("torch."))


@dataclass
class FakeTensor:
    """What result_type looks at: a dtype and a shape."""

    dtype: dtypes.DType
    shape: tuple

    def to_torch(self):
        return torch.zeros(self.shape, dtype=torch_dtype(self.dtype))


@pytest.mark.parametrize("dtype", ALL, ids=str)
def test_itemsize_and_numpy_match_torch(dtype):
    assert dtype.itemsize == torch_dtype(dtype).itemsize
    if dtype is dtypes.bfloat16:  # NumPy has none: its bytes travel as uint16
        assert dtype.numpy == np.uint16
    else:
        assert dtype.numpy == torch.zeros(1, dtype=torch_dtype(dtype)).numpy().dtype
    assert dtype.is_floating_point == torch_dtype(dtype).is_floating_point
    assert dtype.signed == torch_dtype(dtype).is_signed or dtype.is_floating_point


@pytest.mark.parametrize("dtype", [*dtypes.INTEGER_DTYPES, dtypes.bool_], ids=str)
def test_integer_limits_match_torch(dtype):
    info = torch.iinfo(torch_dtype(dtype)) if dtype is not dtypes.bool_ else None
    assert (dtype.min, dtype.max) == ((info.min, info.max) if info else (0, 1))


@pytest.mark.parametrize("dtype", dtypes.INTEGER_DTYPES, ids=str)
def test_wrap_takes_ints_modulo_the_width(dtype):
    for value in (dtype.max + 1, dtype.min - 1, 300, -300, 2**70 + 5):
        expected = torch.tensor([value % 2**64 - (2**64 if value % 2**64 >= 2**63 else 0)])
        assert dtype.wrap(value) == expected.to(torch_dtype(dtype)).item()


@pytest.mark.parametrize(
    ("alias", "dtype"),
    [("long", "int64"), ("int", "int32"), ("short", "int16"), ("float", "float32")]
    + [("double", "float64"), ("half", "float16")],
)
def test_pytorch_aliases_name_the_dtype(alias, dtype):
    import kael

    assert getattr(kael, alias) is dtypes.dtype_from_name(dtype)
    assert dtypes.as_dtype(alias) is dtypes.dtype_from_name(dtype)
    assert getattr(torch, alias) is torch_dtype(dtypes.dtype_from_name(dtype))


@pytest.mark.parametrize(("a", "b"), list(itertools.product(ALL, ALL)), ids=str)
def test_promote_types_matches_torch(a, b):
    assert dtypes.promote_types(a, b) is kael_dtype(
        torch.promote_types(torch_dtype(a), torch_dtype(b))
    )


@pytest.mark.parametrize(
    ("tensor_dtype", "scalar", "expected"),
    [
        (dtypes.float32, 2.5, dtypes.float32),
        (dtypes.float64, 2.5, dtypes.float64),
        (dtypes.int64, 2.5, dtypes.float32),
        (dtypes.bool_, 3, dtypes.int64),
        (dtypes.int64, True, dtypes.int64),
    ],
)
def test_promote_with_scalar_follows_the_chapter_table(tensor_dtype, scalar, expected):
    assert dtypes.promote_with_scalar(tensor_dtype, scalar) is expected


@pytest.mark.parametrize(("dtype", "scalar"), list(itertools.product(ALL, [True, 3, 2.5])), ids=str)
def test_promote_with_scalar_matches_torch(dtype, scalar):
    expected = torch.result_type(torch.zeros(2, dtype=torch_dtype(dtype)), scalar)
    assert dtypes.promote_with_scalar(dtype, scalar) is kael_dtype(expected)


N = len(ALL)
OPERANDS = [FakeTensor(d, (2,)) for d in ALL] + [FakeTensor(d, ()) for d in ALL] + [True, 3, 2.5]


def as_torch(op):
    return op.to_torch() if isinstance(op, FakeTensor) else op


@pytest.mark.parametrize(("x", "y"), list(itertools.product(OPERANDS, OPERANDS)), ids=str)
def test_result_type_of_pairs_matches_torch(x, y):
    expected = torch.result_type(as_torch(x), as_torch(y))
    assert dtypes.result_type(x, y) is kael_dtype(expected)


@pytest.mark.parametrize(
    "ops", list(itertools.product(OPERANDS[:N], OPERANDS[N : 2 * N], OPERANDS[2 * N :])), ids=str
)
def test_result_type_of_tensor_zero_dim_and_scalar_matches_torch(ops):
    # torch.result_type takes two operands; torch.add of all three applies the same tiers.
    x, y, s = ops
    if x.dtype is dtypes.bool_ and y.dtype is dtypes.bool_ and s is True:
        expected = torch.logical_or(
            torch.logical_or(x.to_torch(), y.to_torch()), torch.tensor(s)
        ).dtype
    else:
        expected = torch.add(torch.add(x.to_torch(), y.to_torch()), s).dtype
    assert dtypes.result_type(x, y, s) is kael_dtype(expected)


def test_numpy_scalars_count_as_scalars_in_result_type():
    t = FakeTensor(dtypes.int64, (2,))
    expected = torch.result_type(t.to_torch(), np.float64(2.5))
    assert dtypes.result_type(t, np.float64(2.5)) is kael_dtype(expected)


def test_result_type_needs_an_operand():
    with pytest.raises(TypeError, match="at least one operand"):
        dtypes.result_type()


@pytest.mark.parametrize("value", [True, 3, 2.5, np.int64(3), np.float32(1.5)], ids=repr)
def test_scalar_dtype_is_the_category_default(value):
    expected = kael_dtype(torch.result_type(torch.zeros(2, dtype=torch.bool), value))
    assert dtypes.scalar_dtype(value) is expected


def test_numpy_bool_scalar_is_a_bool():
    # torch 2.13 treats np.bool_ as a float scalar; kael keeps its category.
    assert dtypes.scalar_dtype(np.bool_(True)) is dtypes.bool_


def test_scalar_dtype_rejects_non_numbers():
    with pytest.raises(TypeError, match="got str"):
        dtypes.scalar_dtype("3")


@pytest.mark.parametrize("dtype", ALL, ids=str)
def test_numpy_round_trip_and_pickle(dtype):
    if dtype is not dtypes.bfloat16:  # uint16 bytes are not a kael dtype of their own
        assert dtypes.from_numpy_dtype(dtype.numpy) is dtype
    assert pickle.loads(pickle.dumps(dtype)) is dtype
    assert dtypes.as_dtype(dtype.name) is dtype
    assert str(dtype) == str(torch_dtype(dtype)).removeprefix("torch.")


@pytest.mark.parametrize("bad", [np.uint16, np.uint32, np.uint64, np.clongdouble, np.longdouble])
def test_unsupported_numpy_dtypes_raise(bad):
    with pytest.raises(TypeError, match="unsupported numpy dtype"):
        dtypes.from_numpy_dtype(bad)


@pytest.mark.parametrize("bad", ["float8", "uint16", 3, None])
def test_as_dtype_rejects_other_values(bad):
    with pytest.raises(TypeError):
        dtypes.as_dtype(bad)


def test_int64_limits():
    assert torch.iinfo(torch.int64).min == dtypes.INT64_MIN
    assert torch.iinfo(torch.int64).max == dtypes.INT64_MAX


def test_largest_finite_value_of_each_float_dtype_is_torch_finfo_max():
    import torch

    from kael.runtime import dtypes

    for dtype, torch_dtype in (
        (dtypes.float16, torch.float16),
        (dtypes.bfloat16, torch.bfloat16),
        (dtypes.float32, torch.float32),
        (dtypes.float64, torch.float64),
    ):
        assert dtype.largest == torch.finfo(torch_dtype).max
