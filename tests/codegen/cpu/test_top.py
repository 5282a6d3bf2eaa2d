"""The heap kernel of topk (codegen/cpu/top.py), run here on the CPU: each row's first k
positions of the stable order (NaN the largest, ties in input order, -0 as +0), for every
key width and form, k from 1 to n, rows on both sides of a vector of keys, and rows in
random, ascending, descending and constant order."""

import numpy as np
import pytest
from kernel_helpers import assert_keys_at, host_keys, stable_argsort, tied_rows

import kael
from kael.codegen.cpu import handwritten, top

DTYPES = [kael.float32, kael.float64, kael.float16, kael.bfloat16, kael.int64, kael.int32,
          kael.int16, kael.int8, kael.uint8]  # fmt: skip


def _heap_order(x: kael.Tensor, k: int, descending: bool) -> np.ndarray:
    """The kernel's first k positions of x's rows; the keys it writes there checked bit for
    bit against x's at those positions."""
    rows, n = x.shape
    out, values = kael.empty(rows, k, dtype=kael.int64), kael.empty(rows, k, dtype=x.dtype)
    runner = handwritten.HostRunner()
    at = (x.data_ptr(), rows, n, descending, out.data_ptr(), k, values.data_ptr())
    top.order(runner, x.dtype, *at)
    runner.close()
    order = out.numpy()
    assert_keys_at(values, x, order)
    return order


def _check(x: kael.Tensor, k: int, descending: bool) -> None:
    want = stable_argsort(host_keys(x), descending)[:, :k]
    np.testing.assert_array_equal(_heap_order(x, k, descending), want)


@pytest.mark.parametrize("descending", [False, True], ids=["smallest", "largest"])
@pytest.mark.parametrize("k", [1, 2, 3, 8, 40, 99, 100])
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_heap_gives_the_first_k_of_the_stable_order(dtype, k, descending):
    _check(tied_rows(dtype, 6, 100, k), k, descending)


@pytest.mark.parametrize("order", ["ascending", "descending", "constant"])
@pytest.mark.parametrize("descending", [False, True], ids=["smallest", "largest"])
@pytest.mark.parametrize("dtype", [kael.float32, kael.int64, kael.int8], ids=str)
def test_heap_of_ordered_and_constant_rows_gives_the_stable_order(dtype, descending, order):
    # the tail's limit keeps keys out; ties with it must still come in input order
    for k in (1, 5, 64):
        _check(tied_rows(dtype, 3, 300, k, order), k, descending)


@pytest.mark.parametrize("n", [16, 17, 31, 32, 33, 63, 65, 79, 80, 81])
@pytest.mark.parametrize("dtype", [kael.float32, kael.float64, kael.int16, kael.uint8], ids=str)
def test_heap_rows_around_a_vector_of_keys_give_the_stable_order(dtype, n):
    # the vector scan takes (n - k) // lanes blocks after the heap's first k: the rest
    # one at a time (16 float32 lanes, 8 float64, 32 int16, 64 uint8)
    for k in (1, 15, 16, n - 1):
        _check(tied_rows(dtype, 4, n, n + k), k, True)


def test_heap_of_nan_and_infinities_orders_nan_first_largest():
    x = kael.tensor([[1.0, float("nan"), -float("inf"), float("inf"), float("nan"), -0.0, 0.0]])
    assert _heap_order(x, 7, True).tolist() == [[1, 4, 3, 0, 5, 6, 2]]
    assert _heap_order(x, 7, False).tolist() == [[2, 5, 6, 0, 3, 1, 4]]
