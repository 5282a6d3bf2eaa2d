"""The merge sort kernel (sort and argsort of rows too long for the radix sort, on every
device), run here on the CPU: the same stable order as the
host sort, NaN last ascending and first descending, ties in input order both ways, for every
dtype and row length around the pass boundaries."""

import numpy as np
import pytest
from kernel_helpers import stable_argsort, tied_rows

import kael
from kael.codegen.cpu import handwritten
from kael.codegen.cpu import sort as merge_sort

DTYPES = [kael.float32, kael.float64, kael.int64, kael.bool]


def _kernel_order(x: kael.Tensor, descending: bool) -> np.ndarray:
    rows, n = x.shape
    buffers = [kael.empty(rows, n, dtype=kael.int64) for _ in range(2)]
    runner = handwritten.HostRunner()  # the kernels as the GPU runs them, on the CPU
    address = merge_sort.order(
        runner, x.dtype, x.data_ptr(), rows, n, descending, [b.data_ptr() for b in buffers]
    )
    runner.close()
    return next(b for b in buffers if b.data_ptr() == address).numpy()


@pytest.mark.parametrize("descending", [False, True], ids=["ascending", "descending"])
@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 8, 9, 31, 64, 100])
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_merge_sort_gives_the_host_sorts_stable_order(dtype, n, descending):
    x = tied_rows(dtype, 7, n, n)
    want = stable_argsort(x.numpy(), descending)
    np.testing.assert_array_equal(_kernel_order(x, descending), want)


def test_merge_sort_of_a_long_row_matches_numpys_stable_argsort():
    x = tied_rows(kael.float32, 1, 5000, 1)
    want = np.argsort(x.numpy(), axis=-1, kind="stable")
    np.testing.assert_array_equal(_kernel_order(x, False), want)
