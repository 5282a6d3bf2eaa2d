"""The rank kernel (sort, argsort and topk of rows of at most RANK_ROW keys, on every
device), run here on the CPU: each key's place is the count of keys before it in the
stable order (NaN the largest, -0 tied with +0, ties in input order both ways), for every
key width and form, rows of 1 to RANK_ROW keys."""

import numpy as np
import pytest
from kernel_helpers import assert_keys_at, host_keys, stable_argsort, tied_rows

import kael
from kael.codegen.cpu import handwritten, rank

DTYPES = [kael.float32, kael.float64, kael.float16, kael.bfloat16, kael.int64, kael.int32,
          kael.int16, kael.int8, kael.uint8, kael.bool]  # fmt: skip


def _ranked(x: kael.Tensor, descending: bool) -> np.ndarray:
    """The kernel's order of x's rows; the sorted keys it writes checked bit for bit
    against x's at that order."""
    rows, n = x.shape
    out, values = kael.empty(rows, n, dtype=kael.int64), kael.empty(rows, n, dtype=x.dtype)
    runner = handwritten.HostRunner()
    at = (x.data_ptr(), rows, n, descending, out.data_ptr(), values.data_ptr())
    rank.order(runner, x.dtype, *at)
    runner.close()
    order = out.numpy()
    assert_keys_at(values, x, order)
    return order


@pytest.mark.parametrize("descending", [False, True], ids=["ascending", "descending"])
@pytest.mark.parametrize("n", [1, 2, 3, 15, 16, 17, 33, 64, 127, rank.RANK_ROW])
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_rank_gives_the_stable_order(dtype, n, descending):
    x = tied_rows(dtype, 5, n, n)
    np.testing.assert_array_equal(_ranked(x, descending), stable_argsort(host_keys(x), descending))


def test_rank_ties_negative_zero_with_zero_and_puts_nan_last_ascending():
    x = kael.tensor([[0.0, -0.0, float("nan"), -1.0, 0.0, -float("nan")]])
    assert _ranked(x, False).tolist() == [[3, 0, 1, 4, 2, 5]]
    assert _ranked(x, True).tolist() == [[2, 5, 0, 1, 4, 3]]


def test_rows_past_the_stack_buffer_are_refused_naming_the_length():
    _ranked(kael.zeros(1, rank.RANK_ROW), False)
    with pytest.raises(kael.ValueError, match=f"row of {rank.RANK_ROW + 1} keys"):
        _ranked(kael.zeros(1, rank.RANK_ROW + 1), False)
