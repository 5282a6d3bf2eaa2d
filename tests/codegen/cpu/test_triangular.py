"""The triangular kernels (kael/codegen/cpu/triangular.py) on their own: row interchanges
from a lag on, and one system's right-hand sides solved in column blocks."""

import numpy as np
import pytest

import kael
from kael.codegen.cpu import triangular

COLUMNS = triangular.COLUMNS


def _interchanged(x: np.ndarray, piv: np.ndarray, steps, base: int) -> np.ndarray:
    """x with LAPACK's interchanges piv[k] - base <-> k for k in `steps`, in that order."""
    x = x.copy()
    for k in steps:
        p = piv[k] - base
        x[[k, p]] = x[[p, k]]
    return x


@pytest.mark.parametrize("reverse", [False, True])
def test_each_block_takes_the_interchanges_from_its_lag_on(reverse):
    """Block i applies steps [i * lag, steps): a blocked LU's column blocks, each taking
    the interchanges of the panels right of it, in one launch."""
    rng = np.random.default_rng(3)
    rows, blocks, lag, base = 12, 3, 4, 5
    piv = np.array([base + rng.integers(k, rows) for k in range(rows)])
    x = rng.standard_normal((blocks, rows, 6))
    got = kael.tensor(x.copy())
    triangular.permute(
        got._impl, kael.tensor(piv)._impl, blocks, reverse=reverse, base=base, lag=lag
    )
    for i in range(blocks):
        steps = range(i * lag, rows)
        want = _interchanged(x[i], piv, reversed(steps) if reverse else steps, base)
        np.testing.assert_array_equal(got.numpy()[i], want)


@pytest.mark.parametrize("nrhs", [COLUMNS, 2 * COLUMNS, 2 * COLUMNS + 5, 1000])
def test_one_system_in_column_blocks_gives_the_bits_of_one_item(nrhs):
    """A wide single system's columns are the work items in blocks of at least COLUMNS
    (and a launch for the columns left over); each column's arithmetic is the same as
    when the whole system is one item (here: a batch of two, an item each)."""
    rng = np.random.default_rng(nrhs)
    a = np.tril(rng.standard_normal((40, 40))) / 40 + np.eye(40)
    b = rng.standard_normal((40, nrhs))
    got = kael.tensor(b.copy())
    launches = triangular.solve_launches(kael.tensor(a)._impl, got._impl, 1, lower=True)
    width = max(COLUMNS, -(-nrhs // 8) + 7 & -8)
    split = nrhs >= 2 * COLUMNS
    assert [items for _, _, items, _ in launches][:1] == [nrhs // width if split else 1]
    assert len(launches) == 1 + (split and nrhs % width > 0)
    triangular.solve(kael.tensor(a)._impl, got._impl, 1, lower=True)
    whole = kael.tensor(np.stack([b, b]))
    triangular.solve(kael.tensor(a)._impl, whole._impl, 2, lower=True)
    np.testing.assert_array_equal(got.numpy(), whole.numpy()[0])
    np.testing.assert_allclose(got.numpy(), np.linalg.solve(a, b), rtol=1e-12, atol=1e-12)
