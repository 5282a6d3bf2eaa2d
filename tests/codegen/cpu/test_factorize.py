"""The LU kernel's sub-blocks (codegen/cpu/factorize.py): SUB columns factored together,
the columns right of them updated in one pass, against LAPACK through PyTorch."""

import numpy as np
import pytest
import torch

import kael
from kael.codegen.cpu import factorize
from kael.codegen.cpu.factorize import SUB


def _factor(a: np.ndarray):
    """(LU, 0-based pivots, info) of kael's kernel on a copy of `a` ([m, n] or [b, m, n])."""
    x = kael.tensor(a.copy())
    m, n = a.shape[-2:]
    batch = a.shape[0] if a.ndim == 3 else 1
    piv = kael.zeros(*a.shape[:-2], min(m, n), dtype=kael.int64)
    info = kael.zeros(batch, dtype=kael.int64)
    factorize.lu(x._impl, piv._impl, info._impl, batch)
    return x.numpy(), piv.numpy(), info.numpy()


def _lapack(a: np.ndarray):
    lu, piv, info = torch.linalg.lu_factor_ex(torch.from_numpy(a))
    return lu.numpy(), piv.numpy() - 1, info.numpy()


@pytest.mark.parametrize(
    "shape",
    [(SUB - 1, SUB - 1), (SUB, SUB), (SUB + 1, SUB + 1), (3 * SUB + 5, 3 * SUB + 5),
     (40, 2 * SUB + 3), (2 * SUB + 3, 40), (5, 4 * SUB), (4 * SUB, 5), (6, 33, 33)],
)  # fmt: skip
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_sub_blocks_give_lapacks_factors_and_pivots(shape, dtype):
    a = np.random.default_rng(sum(shape)).standard_normal(shape).astype(dtype)
    lu, piv, info = _factor(a)
    want_lu, want_piv, want_info = _lapack(a)
    np.testing.assert_array_equal(piv, want_piv)
    np.testing.assert_array_equal(info.reshape(want_info.shape), want_info)
    tol = 1e-4 if dtype == np.float32 else 1e-11
    np.testing.assert_allclose(lu, want_lu, rtol=tol, atol=tol)


@pytest.mark.parametrize("column", [0, SUB // 2, SUB - 1, SUB, 2 * SUB + 1])
def test_a_zero_pivot_in_a_sub_block_is_skipped_as_getf2_does(column):
    a = np.random.default_rng(column).standard_normal((3 * SUB, 3 * SUB))
    a[:, column] = 0.0  # column `column` has no pivot: info names it, the rest goes on
    lu, piv, info = _factor(a)
    want_lu, want_piv, want_info = _lapack(a)
    assert info[0] == want_info == column + 1
    np.testing.assert_array_equal(piv, want_piv)
    np.testing.assert_allclose(lu, want_lu, rtol=1e-11, atol=1e-11)
    assert np.isfinite(lu).all()


def test_an_infinite_entry_right_of_a_zero_pivot_stays_out_of_the_rows_below():
    a = np.random.default_rng(3).standard_normal((2 * SUB, 2 * SUB))
    a[:, 2] = 0.0
    a[2, SUB + 1] = np.inf  # in row 2 of U: only column 2's (skipped) multipliers meet it
    lu, _, info = _factor(a)
    assert info[0] == 3 and lu[2, SUB + 1] == np.inf
    # getf2 never multiplies a skipped column's zeros by it (0 * inf would be NaN); the
    # unblocked step order kael keeps in a panel is getf2's, LAPACK's recursive getrf is not
    assert np.isfinite(np.delete(lu, 2, axis=0)).all()


@pytest.mark.parametrize("n", [SUB - 3, 2 * SUB + 1])  # the scalar path and the vector one
@pytest.mark.parametrize("dtype, tiny", [(np.float64, 1e-310), (np.float32, 1e-40)])
def test_a_subnormal_pivot_divides_instead_of_scaling_by_an_infinite_reciprocal(n, dtype, tiny):
    # getf2 divides the column when 1 / pivot would overflow (MKL's small-matrix kernel,
    # and so torch at n = 5, scales by inf instead: its factors are inf and NaN)
    a = np.random.default_rng(n).standard_normal((n, n)).astype(dtype)
    a[:, 0] *= dtype(tiny)
    lu, piv, info = _factor(a)
    assert info[0] == 0 and np.isfinite(lu).all()
    lower, upper = np.tril(lu, -1) + np.eye(n), np.triu(lu)
    rows = np.arange(n)
    for k, p in enumerate(piv):
        rows[[k, p]] = rows[[p, k]]
    error = np.abs(lower.astype(np.float64) @ upper - a[rows]) / np.abs(a).max(axis=0)
    assert error.max() < (1e-4 if dtype == np.float32 else 1e-9)


def test_nan_spreads_as_in_lapack_and_nothing_crashes():
    a = np.random.default_rng(4).standard_normal((2 * SUB + 3, 2 * SUB + 3))
    a[5, 1] = np.nan
    lu, _, _ = _factor(a)
    assert np.isnan(lu).any() and np.isnan(lu).any() == np.isnan(_lapack(a)[0]).any()


@pytest.mark.parametrize("n", [192, 200])
def test_the_blocked_driver_with_sub_blocked_panels_matches_lapack(n):
    a = np.random.default_rng(n).standard_normal((n, n))
    lu, piv = kael.linalg.lu_factor(kael.tensor(a))
    want_lu, want_piv = torch.linalg.lu_factor(torch.from_numpy(a))
    np.testing.assert_array_equal(piv.numpy(), want_piv.numpy())
    np.testing.assert_allclose(lu.numpy(), want_lu.numpy(), rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("m, n", [(3, 3), (5, 2), (2, 5), (1, 1)])
def test_block_kernels_set_the_identity_and_copy_a_strided_block(m, n):
    """A blocked driver's identity and copy steps (factorize.block), on windows of larger
    matrices: only the block changes."""
    rng = np.random.default_rng(m * n)
    big, src = rng.standard_normal((7, 9)), rng.standard_normal((6, 8))
    dst = kael.tensor(big.copy())
    factorize.block("identity", dst[1 : 1 + m, 2 : 2 + n]._impl)
    want = big.copy()
    want[1 : 1 + m, 2 : 2 + n] = np.eye(m, n)
    np.testing.assert_array_equal(dst.numpy(), want)
    factorize.block("copy", dst[1 : 1 + m, 2 : 2 + n]._impl, kael.tensor(src)[:m, 3 : 3 + n]._impl)
    want[1 : 1 + m, 2 : 2 + n] = src[:m, 3 : 3 + n]
    np.testing.assert_array_equal(dst.numpy(), want)


@pytest.mark.parametrize(
    "op, src, message",
    [("zero", None, "unknown step 'zero'"), ("copy", None, "copy with a source"),
     ("identity", (2, 2), "identity, or copy"), ("copy", (3, 2), r"copy of \[3, 2\] into \[2, 2\]")],
)  # fmt: skip
def test_a_bad_block_step_raises_naming_it(op, src, message):
    dst = kael.zeros(2, 2, dtype=kael.float64)._impl
    source = None if src is None else kael.zeros(*src, dtype=kael.float64)._impl
    with pytest.raises(kael.Error, match=message):
        factorize.block(op, dst, source)
