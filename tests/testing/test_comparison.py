"""kael.testing.assert_close against torch.testing.assert_close: the same pairs pass, and the
same failures raise the same exception type with torch's message word for word."""

import re

import numpy as np
import pytest
import torch

import kael
from kael.testing import assert_allclose, assert_close

NAN, INF = float("nan"), float("inf")

# Each case builds both sides with L (kael or torch) and compares with `close`.
CASES = {
    "equal_floats_pass": lambda L, close: close(L.tensor([1.0, 2.0]), L.tensor([1.0, 2.0])),
    "float_tensor_not_close": lambda L, close: close(
        L.tensor([1.0, 2.0, 3.0]), L.tensor([1.0, 2.5, 3.0])
    ),
    "within_default_float32_tolerance": lambda L, close: close(
        L.tensor([1.0]), L.tensor([1.0 + 1e-6])
    ),
    "int_tensors_not_equal": lambda L, close: close(L.tensor([1, 2, 3]), L.tensor([1, 3, 3])),
    "uint8_2d_index": lambda L, close: close(
        L.tensor([[1, 2], [3, 4]], dtype=L.uint8), L.tensor([[1, 2], [3, 0]], dtype=L.uint8)
    ),
    "int8_widened_before_difference": lambda L, close: close(
        L.tensor([1, 2], dtype=L.int8), L.tensor([-128, 2], dtype=L.int8)
    ),
    "bool_tensors": lambda L, close: close(L.tensor([True]), L.tensor([False])),
    "float16_tolerance": lambda L, close: close(
        L.tensor([1.0], dtype=L.float16), L.tensor([1.01], dtype=L.float16)
    ),
    "greatest_difference_among_mismatches": lambda L, close: close(
        L.zeros(3), L.tensor([0.0, 1e-6, 1e-4])
    ),
    "index_in_two_dims": lambda L, close: close(L.zeros(2, 3), L.tensor([[0.0, 0, 0], [0, 1, 0]])),
    "nan_unequal_by_default": lambda L, close: close(L.tensor([1.0, NAN]), L.tensor([1.0, NAN])),
    "nan_equal_nan": lambda L, close: close(
        L.tensor([1.0, NAN]), L.tensor([1.0, NAN]), equal_nan=True
    ),
    "same_infinity_passes": lambda L, close: close(L.tensor([INF]), L.tensor([INF])),
    "opposite_infinities": lambda L, close: close(L.tensor([INF]), L.tensor([-INF])),
    "zero_dim_reads_as_scalar": lambda L, close: close(L.tensor(1.0), L.tensor(2.0)),
    "empty_passes": lambda L, close: close(L.empty(0), L.empty(0)),
    "shape_mismatch": lambda L, close: close(L.tensor([1.0]), L.tensor([1.0, 2.0])),
    "dtype_mismatch": lambda L, close: close(L.tensor([1.0]), L.tensor([1.0], dtype=L.float64)),
    "dtype_unchecked_uses_loosest_tolerance": lambda L, close: close(
        L.tensor([1.0, 2.0]), L.tensor([1.0, 3.0], dtype=L.float64), check_dtype=False
    ),
    "dtype_unchecked_int_and_float": lambda L, close: close(
        L.tensor([1.0, 2.0]), L.tensor([1, 3]), check_dtype=False
    ),
    "stride_checked": lambda L, close: close(L.ones(2, 2), L.ones(2, 2).t(), check_stride=True),
    "stride_unchecked": lambda L, close: close(L.ones(2, 2), L.ones(2, 2).t()),
    "explicit_tolerances": lambda L, close: close(
        L.tensor([1.0]), L.tensor([1.05]), rtol=0.1, atol=0.0
    ),
    "rtol_without_atol": lambda L, close: close(L.tensor([1.0]), L.tensor([1.0]), rtol=1e-3),
    "atol_without_rtol": lambda L, close: close(L.tensor([1.0]), L.tensor([1.0]), atol=1e-3),
    "msg_replaces": lambda L, close: close(L.ones(2), L.ones(2) + 1, msg="custom"),
    "msg_callable": lambda L, close: close(L.ones(2), L.ones(2) + 1, msg=lambda m: "X" + m[:10]),
    "python_floats": lambda L, close: close(1.0, 1.5),
    "python_ints": lambda L, close: close(1, 2),
    "python_int_and_float": lambda L, close: close(1, 1.0),
    "python_int_and_float_unchecked": lambda L, close: close(1.0, 1, check_dtype=False),
    "python_nan": lambda L, close: close(NAN, NAN),
    "python_nan_equal_nan": lambda L, close: close(NAN, NAN, equal_nan=True),
    "booleans": lambda L, close: close(True, False),
    "none_pair": lambda L, close: close(None, None),
    "sequence_item_path": lambda L, close: close(
        [L.tensor(1.0), L.tensor(2.0)], [L.tensor(1.0), L.tensor(3.0)]
    ),
    "nested_path": lambda L, close: close([[L.tensor([1.0])]], [[L.tensor([2.0])]]),
    "tuple_against_list": lambda L, close: close((1, 2.0), [1, 2.5]),
    "mapping_key_path": lambda L, close: close({"a": L.tensor(1.0)}, {"a": L.tensor(3.0)}),
    "sequence_lengths": lambda L, close: close([1, 2], [1, 2, 3]),
    "mapping_keys": lambda L, close: close({"a": 1}, {"b": 1}),
    "numpy_arrays": lambda L, close: close(np.ones(2), np.zeros(2)),
}
# The pairs no comparison takes: torch names its own classes, kael its own.
TYPE_ERRORS = {
    "number_and_tensor": lambda L, close: close(1, L.tensor(1)),
    "tensor_and_number": lambda L, close: close(L.tensor([1.0]), 1.0),
    "strings": lambda L, close: close("a", "a"),
    "array_and_tensor": lambda L, close: close(np.ones(2), L.ones(2, dtype=L.float64)),
    "subclass_refused": lambda L, close: close(
        L.nn.Parameter(L.ones(2)), L.ones(2), allow_subclasses=False
    ),
}


def _outcome(case, lib, close):
    try:
        case(lib, close)
    except Exception as e:  # noqa: BLE001  (the exception is the result compared)
        return type(e).__name__, str(e).replace("torch.", "kael.")
    return "passed", ""


@pytest.mark.parametrize("name", sorted(CASES))
def test_assert_close_matches_torch(name):
    want = _outcome(CASES[name], torch, torch.testing.assert_close)
    got = _outcome(CASES[name], kael, assert_close)
    assert got == want


@pytest.mark.parametrize("name", sorted(TYPE_ERRORS))
def test_unpaired_types_are_a_type_error(name):
    want = _outcome(TYPE_ERRORS[name], torch, torch.testing.assert_close)
    got = _outcome(TYPE_ERRORS[name], kael, assert_close)
    assert want[0] == got[0] == "TypeError"
    unqualified = [re.sub(r"<class '(?:[\w.]+\.)?(\w+)'>", r"\1", o[1]) for o in (got, want)]
    assert unqualified[0] == unqualified[1]


def test_failures_raise_assertion_error_for_pytest():
    with pytest.raises(AssertionError, match="Tensor-likes are not close!"):
        assert_close(kael.tensor([1.0, 2.0]), kael.tensor([1.0, 2.1]))


def test_tolerances_pass_at_the_limit_and_fail_past_it():
    assert_close(kael.tensor([1.0]), kael.tensor([1.5]), rtol=0.0, atol=0.5)
    with pytest.raises(AssertionError):
        assert_close(kael.tensor([1.0]), kael.tensor([1.5]), rtol=0.0, atol=0.49)


def test_assert_allclose_promotes_and_treats_nan_as_equal():
    assert_allclose(kael.tensor([1.0, NAN]), [1.0, NAN])
    with pytest.raises(AssertionError, match="not close"):
        assert_allclose(kael.tensor([1.0, 2.0]), [1.0, 3.0])


@pytest.mark.parametrize(
    ("actual", "expected"),
    [(1 + 2j, 1 + 2j + 1e-9j), (np.float64(1.0), 1.0), (np.float32(1), np.float64(1))],
)
def test_complex_and_numpy_numbers_compare_as_torch(actual, expected):
    torch.testing.assert_close(actual, expected)
    assert_close(actual, expected)


def test_none_against_a_value_is_a_mismatch():
    want = _outcome(lambda L, close: close(None, 1), torch, torch.testing.assert_close)
    assert _outcome(lambda L, close: close(None, 1), kael, assert_close) == want


def test_assert_allclose_has_its_own_default_tolerances():
    torch.testing.assert_allclose(torch.tensor([1.0]), torch.tensor([1.00005]))
    assert_allclose(kael.tensor([1.0]), kael.tensor([1.00005]))
    assert_allclose(np.array([1.0]), np.array([1.000005]))
    with pytest.raises(AssertionError):
        assert_allclose(kael.tensor([1.0]), kael.tensor([1.001]))
