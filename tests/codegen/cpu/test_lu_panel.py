"""The column-major panel LU (codegen/cpu/lu_panel.py): the row kernel's bits (factors,
pivots, info) for every panel shape and value the blocked LU meets, whole rows
interchanged, and LAPACK's pivots through PyTorch."""

import numpy as np
import pytest
import torch

import kael
from kael.codegen.cpu import factorize, lu_panel
from kael.codegen.cpu.factorize import SUB
from kael.frontend import factories


def _both(matrix: np.ndarray, j: int, w: int, info_before: int = 7):
    """(matrix, pivots, info) after the row kernel and after the panel kernel factor the
    panel of `matrix` at row and column j, w columns wide (whole rows interchanged), info
    holding `info_before` (a panel from row 0 sets it first)."""
    out = []
    m, width = matrix.shape[0] - j, matrix.shape[1]
    for panel_kernel in (False, True):
        x = kael.tensor(matrix.copy())
        piv = kael.zeros(min(m, w), dtype=kael.int64)
        info = kael.full((1,), info_before, dtype=kael.int64)
        panel = x[j:, j : j + w]._impl
        if panel_kernel:
            scratch = factories.empty(w * (m + lu_panel.PAD), dtype=x.dtype)
            lu_panel.lu(panel, scratch._impl, piv._impl, info._impl, (j, width))
        else:
            factorize.lu(panel, piv._impl, info._impl, 1, (j, width))
        out.append((x.numpy(), piv.numpy(), info.item()))
    return out


def _assert_same(got, want):
    np.testing.assert_array_equal(got[1], want[1])
    assert got[2] == want[2]
    # the same bits, NaN's sign aside (the two kernels' NaN operands meet in another order)
    nan = np.isnan(want[0])
    np.testing.assert_array_equal(np.isnan(got[0]), nan)
    np.testing.assert_array_equal(got[0][~nan].view(np.uint8), want[0][~nan].view(np.uint8))


SHAPES = [(1, 1), (SUB - 1, SUB - 1), (SUB, SUB), (SUB + 1, SUB), (64, 64), (300, 64),
          (200, 2 * SUB + 3), (5, 4 * SUB), (3, 17), (2 * SUB - 1, 33), (2 * SUB + 1, 9),
          (3 * SUB + 7, 64), (4 * SUB, 63), (513, 64)]  # fmt: skip


@pytest.mark.parametrize("m, w", SHAPES)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_panel_gives_the_row_kernels_bits(m, w, dtype):
    rng = np.random.default_rng(m * w)
    j, right = 3, 5  # columns left and right of the panel take its interchanges too
    matrix = rng.standard_normal((j + m, j + w + right)).astype(dtype)
    want, got = _both(matrix, j, w)
    _assert_same(got, want)


CASES = ["zero_column", "zero_panel", "nan_below", "nan_on_diagonal", "infinities",
         "integer_ties", "tiny_pivots"]  # fmt: skip


@pytest.mark.parametrize("case", CASES)
def test_panel_keeps_getf2s_rules(case):
    """Zero pivots (info, skipped updates), NaN never a pivot unless on the diagonal,
    infinities, the first row of largest magnitude among ties, and division under
    safmin."""
    rng = np.random.default_rng(11)
    m, w = 90, 3 * SUB
    a = rng.standard_normal((m, w))
    if case == "zero_column":
        a[:, SUB + 2] = 0
    elif case == "zero_panel":
        a[:] = 0
    elif case == "infinities":
        a[[3, 50], [0, SUB + 1]] = [np.inf, -np.inf]
    elif case == "nan_below":
        a[40, 0] = np.nan
    elif case == "nan_on_diagonal":
        a[0, 0] = np.nan
    elif case == "integer_ties":
        a = rng.integers(-2, 3, (m, w)).astype(np.float64)
    else:
        a *= 1e-310
    want, got = _both(a, 0, w)
    _assert_same(got, want)
    if case == "zero_column":
        assert got[2] == SUB + 3  # the first zero pivot's 1-based column
    if case == "zero_panel":
        assert got[2] == 1


def test_panel_pivots_are_lapacks():
    a = np.random.default_rng(2).standard_normal((300, 64))
    _, (_, piv, info) = _both(a, 0, 64)
    _, want_piv, want_info = torch.linalg.lu_factor_ex(torch.from_numpy(a))
    np.testing.assert_array_equal(piv, want_piv.numpy() - 1)
    assert info == want_info.item() == 0


def test_later_panel_keeps_an_earlier_zero_pivot():
    """info counts from row j and keeps an earlier panel's first zero pivot."""
    a = np.random.default_rng(4).standard_normal((80, 80))
    a[:, 70] = 0
    (_, _, row_info), (_, _, panel_info) = _both(a, 64, 16, info_before=0)
    assert panel_info == row_info == 71
    # an info already set (7, from an earlier panel) stays
    assert _both(a, 64, 16, info_before=7)[1][2] == 7
