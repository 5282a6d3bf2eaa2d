"""kael.linalg's LDL family (frontend/ldl.py, codegen/cpu/ldl.py) against torch.linalg:
ldl_factor(_ex)'s packed LD, Bunch-Kaufman pivots and info, ldl_solve's solutions, over
dtypes, layouts, batches and empty inputs; singular inputs; PyTorch's typed errors."""

import numpy as np
import pytest
import torch
from parity_helpers import close_to_torch, matrix_pair, resized_out

import kael

RNG = np.random.default_rng(35)
FLOATS = [kael.float32, kael.float64]
TOL = {kael.float32: 2e-4, kael.float64: 1e-10}
LAYOUTS = ["contiguous", "transposed", "sliced", "expanded"]
NUMPY = {kael.float32: np.float32, kael.float64: np.float64}
NAN, INF = float("nan"), float("inf")


def _indefinite(*shape, diagonal: float = 0.05) -> np.ndarray:
    """Random symmetric matrices with a small diagonal: Bunch-Kaufman takes 2x2 blocks and
    interchanges rows on them."""
    a = RNG.standard_normal(shape)
    a = a + np.swapaxes(a, -1, -2)
    n = shape[-1]
    a[..., np.arange(n), np.arange(n)] *= diagonal
    return a


def _same_factor(got, want, tol: float) -> None:
    """LD within tol, pivots and info exactly torch's (int32)."""
    close_to_torch(got[0], want[0], tol)
    for k, t in zip(got[1:], want[1:]):
        close_to_torch(k, t, 0)


def _raises(error, words: str, fn, *args, **kwargs) -> None:
    with pytest.raises(error, match=words):
        fn(*args, **kwargs)


# ---- factor: values ----------------------------------------------------------------------------


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_ldl_factor_ex_matches_torch_over_layouts(dtype, layout):
    k, t = matrix_pair(_indefinite(2, 7, 7), dtype, layout)
    got, want = kael.linalg.ldl_factor_ex(k), torch.linalg.ldl_factor_ex(t)
    assert bool((want.pivots < 0).any()) and bool((want.pivots > 0).any())  # both block sizes
    _same_factor(got, want, TOL[dtype])
    _same_factor(kael.linalg.ldl_factor(k), torch.linalg.ldl_factor(t), TOL[dtype])


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("n", [1, 2, 3, 5, 16])
def test_ldl_factor_matches_torch_over_sizes(dtype, n):
    k, t = matrix_pair(_indefinite(n, n, diagonal=0.5), dtype)
    _same_factor(kael.linalg.ldl_factor_ex(k), torch.linalg.ldl_factor_ex(t), TOL[dtype])


def test_large_matrix_matches_torchs_blocked_sytrf():
    # n above LAPACK's panel width: torch runs dlasyf's delayed updates, kael sytf2's.
    k, t = matrix_pair(_indefinite(150, 150))
    _same_factor(kael.linalg.ldl_factor_ex(k), torch.linalg.ldl_factor_ex(t), 1e-9)


def test_zero_diagonal_takes_a_2x2_block():
    k, t = matrix_pair([[0.0, 1.0], [1.0, 0.0]])
    got = kael.linalg.ldl_factor_ex(k)
    _same_factor(got, torch.linalg.ldl_factor_ex(t), 0)
    assert got.pivots.tolist() == [-2, -2]


def test_2x2_block_with_a_row_interchange():
    a = [[0.0, 0.0, 0.5], [0.0, 0.1, 2.0], [0.5, 2.0, 0.0]]  # column 0's largest: row 2
    k, t = matrix_pair(a)
    want = torch.linalg.ldl_factor_ex(t)
    assert want.pivots.tolist() == [-3, -3, 3]
    _same_factor(kael.linalg.ldl_factor_ex(k), want, 1e-15)


def test_tiny_1x1_pivot_overflows_as_torchs_lapack():
    a = [[3e-310, 1e-310], [1e-310, 1.0]]  # below safmin: 1 / a_kk is inf
    k, t = matrix_pair(a)
    got, want = kael.linalg.ldl_factor_ex(k), torch.linalg.ldl_factor_ex(t)
    assert not bool(want.LD.isfinite().all())
    close_to_torch(got.LD, want.LD, 0, equal_nan=True)
    close_to_torch(got.pivots, want.pivots, 0)


@pytest.mark.parametrize(
    "a, pivots",
    [
        # |a_kk| >= alpha colmax: 1x1 on a_kk, no interchange
        ([[2.0, 1.0], [1.0, 3.0]], [1, 2]),
        # |a_kk| >= alpha colmax^2 / rowmax: a_kk kept though small against colmax
        ([[0.5, 1.0, 0.0], [1.0, 0.0, 8.0], [0.0, 8.0, 1.0]], [1, -3, -3]),
        # |a_imax,imax| >= alpha rowmax: 1x1 on the interchanged row
        ([[0.1, 1.0], [1.0, 5.0]], [2, 2]),
        # neither: a 2x2 block
        ([[0.1, 1.0], [1.0, 0.2]], [-2, -2]),
    ],
)
def test_bunch_kaufman_tests_choose_the_pivots_lapack_chooses(a, pivots):
    k, t = matrix_pair(a)
    want = torch.linalg.ldl_factor_ex(t)
    assert want.pivots.tolist() == pivots
    _same_factor(kael.linalg.ldl_factor_ex(k), want, 1e-15)


def test_alpha_threshold_both_sides():
    alpha = (1 + 17**0.5) / 8
    # colmax 1, rowmax 1: a_kk just above alpha is a 1x1 pivot, just below it a 2x2 block
    for diagonal, pivots in ((alpha * 1.0001, [1, 2]), (alpha * 0.9999, [-2, -2])):
        k, t = matrix_pair([[diagonal, 1.0], [1.0, 0.0]])
        got, want = kael.linalg.ldl_factor_ex(k), torch.linalg.ldl_factor_ex(t)
        assert want.pivots.tolist() == pivots
        _same_factor(got, want, 1e-15)


def test_only_the_lower_triangle_is_read():
    a = _indefinite(5, 5)
    garbage = a + np.triu(np.full((5, 5), 1e9), 1)
    got = kael.linalg.ldl_factor_ex(kael.tensor(garbage))
    _same_factor(got, torch.linalg.ldl_factor_ex(torch.tensor(a)), 1e-12)


def test_hermitian_is_the_same_for_real_inputs():
    k, t = matrix_pair(_indefinite(4, 4))
    got = kael.linalg.ldl_factor_ex(k, hermitian=True)
    _same_factor(got, torch.linalg.ldl_factor_ex(t, hermitian=True), 1e-12)


@pytest.mark.parametrize("shape", [(0, 0), (3, 0, 0), (0, 4, 4), (2, 0, 3, 3)])
def test_empty_matrices_and_batches_match_torch(shape):
    k, t = kael.zeros(shape, dtype=kael.float64), torch.zeros(shape, dtype=torch.float64)
    got = kael.linalg.ldl_factor_ex(k)
    _same_factor(got, torch.linalg.ldl_factor_ex(t), 0)
    LD, piv = kael.linalg.ldl_factor(k)
    tLD, tpiv = torch.linalg.ldl_factor(t)
    kb = kael.zeros((*shape[:-1], 2), dtype=kael.float64)
    tb = torch.zeros(*shape[:-1], 2, dtype=torch.float64)
    close_to_torch(kael.linalg.ldl_solve(LD, piv, kb), torch.linalg.ldl_solve(tLD, tpiv, tb), 0)
    out = tuple(_empty_like(w) for w in torch.linalg.ldl_factor_ex(t))
    _same_factor(kael.linalg.ldl_factor_ex(k, out=out), torch.linalg.ldl_factor_ex(t), 0)


def test_nan_inputs_pivot_as_torchs_lapack():
    nan = float("nan")
    for a in (
        [[nan, 1.0], [1.0, 2.0]],
        [[nan, 0.0], [0.0, 1.0]],
        [[1.0, nan], [nan, 1.0]],
        [[1.0, 2.0, 3.0], [2.0, nan, 1.0], [3.0, 1.0, 0.0]],
    ):
        k, t = matrix_pair(a)
        got, want = kael.linalg.ldl_factor_ex(k), torch.linalg.ldl_factor_ex(t)
        close_to_torch(got.LD, want.LD, 0, equal_nan=True)
        close_to_torch(got.pivots, want.pivots, 0)
        close_to_torch(got.info, want.info, 0)


@pytest.mark.parametrize(
    "a, pivots, info",
    [
        # column 0's largest: the first NaN (row 2), taken over an earlier finite 2
        ([[1.0, 0.0, 0.0], [2.0, 1.0, 0.0], [NAN, 0.0, 1.0]], [-3, -3, 3], 3),
        # ... and nothing after a NaN (row 2) is taken, not even a larger 5 (row 3)
        ([[0.1, 0, 0, 0], [1, 1, 0, 0], [NAN, 0, 1, 0], [5, 0, 0, 1]], [3, 2, -4, -4], 0),
        # no NaN: the largest (5, row 3) is taken
        ([[0.1, 0, 0, 0], [1, 1, 0, 0], [2, 0, 1, 0], [5, 0, 0, 1]], [-4, -4, 3, 4], 0),
        # a NaN colmax is not zero: the column pivots (a 2x2 block) ...
        ([[0.0, 0.0], [NAN, 1.0]], [-2, -2], 0),
        # ... a zero one is: info names it
        ([[0.0, 0.0], [0.0, 1.0]], [1, 2], 1),
        # a NaN diagonal over a zero column is a zero column too ...
        ([[NAN, 0.0], [0.0, 1.0]], [1, 2], 1),
        # ... over a nonzero one it pivots
        ([[NAN, 1.0], [1.0, 2.0]], [2, 2], 2),
        # rowmax: a NaN below the diagonal comes back (a 2x2 block) ...
        ([[0.1, 0.0, 0.0], [1.0, 5.0, 0.0], [0.5, NAN, 1.0]], [-2, -2, 3], 3),
        # ... a finite one there: a 1x1 pivot on the interchanged row
        ([[0.1, 0.0, 0.0], [1.0, 5.0, 0.0], [0.5, 0.7, 1.0]], [2, 3, 3], 0),
        # ... a NaN left of it (colmax's own entry) is dropped for the one below
        ([[0.1, 0.0, 0.0], [NAN, 1.0, 0.0], [0.5, 0.5, 1.0]], [2, -3, -3], 0),
    ],
)
def test_nan_entries_pivot_as_torchs_mkl(a, pivots, info):
    k, t = matrix_pair(a)
    got, want = kael.linalg.ldl_factor_ex(k), torch.linalg.ldl_factor_ex(t)
    assert want.pivots.tolist() == pivots and int(want.info) == info
    close_to_torch(got.LD, want.LD, 1e-15, equal_nan=True)
    close_to_torch(got.pivots, want.pivots, 0)
    close_to_torch(got.info, want.info, 0)


@pytest.mark.parametrize(
    "a, kept",
    [
        # an infinite pivot: 1 / a_kk is 0, so syr leaves the trailing matrix as it is
        ([[INF, 0.0], [-INF, -0.6]], True),
        # a large finite one updates it
        ([[1e300, 0.0], [-1e300, -0.6]], False),
        # a zero x_j (column 2 after the interchange) skips column j: no NaN there ...
        ([[-1.0, 0.0, 0.0], [NAN, 0.0, 0.0], [0.75, 0.0, -0.3]], True),
        # ... a nonzero one takes the NaN
        ([[-1.0, 0.0, 0.0], [NAN, 0.0, 0.0], [0.75, 0.5, -0.3]], False),
    ],
)
def test_rank_one_update_skips_as_blas_syr(a, kept):
    k, t = matrix_pair(a)
    got, want = kael.linalg.ldl_factor_ex(k), torch.linalg.ldl_factor_ex(t)
    assert (float(want.LD[-1, -1]) == a[-1][-1]) is kept
    close_to_torch(got.LD, want.LD, 1e-15, equal_nan=True)
    close_to_torch(got.pivots, want.pivots, 0)
    close_to_torch(got.info, want.info, 0)


def _with_specials(rng, n: int, dtype) -> np.ndarray:
    """A random symmetric n x n matrix, about a fifth of its entries NaN, +-inf or 0."""
    a = rng.standard_normal((n, n))
    specials = rng.choice([NAN, INF, -INF, 0.0], size=(n, n))
    a = np.where(rng.random((n, n)) < 0.2, specials, a)
    return (np.tril(a) + np.tril(a, -1).T).astype(dtype)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_nan_and_inf_inputs_factor_as_torch(dtype):
    rng = np.random.default_rng(7)
    for _ in range(1000):
        a = _with_specials(rng, int(rng.integers(1, 9)), NUMPY[dtype])
        got = kael.linalg.ldl_factor_ex(kael.tensor(a))
        want = torch.linalg.ldl_factor_ex(torch.tensor(a))
        close_to_torch(got.LD, want.LD, TOL[dtype], equal_nan=True)
        close_to_torch(got.pivots, want.pivots, 0)
        close_to_torch(got.info, want.info, 0)


# ---- factor: singular D ------------------------------------------------------------------------


def test_singular_d_sets_info_to_its_first_zero_column():
    k, t = matrix_pair(np.stack([np.eye(3), np.zeros((3, 3)), np.ones((3, 3))]))
    got, want = kael.linalg.ldl_factor_ex(k), torch.linalg.ldl_factor_ex(t)
    assert want.info.tolist() == [0, 1, 2]
    _same_factor(got, want, 0)


def test_ldl_factor_raises_naming_batch_element_and_info():
    batch = kael.tensor(np.stack([np.eye(3), np.ones((3, 3))]))
    words = r"ldl_factor: \(Batch element 1\): .*D is exactly singular: D\[2,2\] is zero"
    _raises(kael.linalg.LinAlgError, words, kael.linalg.ldl_factor, batch)
    one = kael.zeros(3, 3)
    _raises(kael.linalg.LinAlgError, r"ldl_factor: The .*info = 1\)", kael.linalg.ldl_factor, one)


def test_ldl_factor_ex_raises_only_when_checking_errors():
    singular = kael.tensor(np.ones((2, 2)))
    assert kael.linalg.ldl_factor_ex(singular).info.item() == 2
    _raises(
        kael.linalg.LinAlgError,
        r"ldl_factor_ex: .*D\[2,2\] is zero",
        kael.linalg.ldl_factor_ex,
        singular,
        check_errors=True,
    )
    regular = kael.linalg.ldl_factor_ex(kael.tensor(np.eye(2)), check_errors=True)
    assert regular.info.item() == 0


# ---- solve ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_ldl_solve_matches_torch_over_layouts(dtype, layout):
    k, t = matrix_pair(_indefinite(2, 6, 6, diagonal=0.3), dtype)
    kb, tb = matrix_pair(RNG.standard_normal((2, 6, 3)), dtype, layout)
    LD, piv = kael.linalg.ldl_factor(k)
    tLD, tpiv = torch.linalg.ldl_factor(t)
    if layout == "expanded":  # kael broadcasts LD [1, 6, 6] over B's 3 (torch crashes on it)
        LD, piv = LD[:1], piv[:1]
        tLD, tpiv = tLD[:1].expand(3, 6, 6), tpiv[:1].expand(3, 6)
    got = kael.linalg.ldl_solve(LD, piv, kb)
    close_to_torch(got, torch.linalg.ldl_solve(tLD, tpiv, tb), TOL[dtype] * 10)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_ldl_solve_of_transposed_factor_and_one_column(dtype):
    k, t = matrix_pair(_indefinite(5, 5), dtype)
    LD, piv = kael.linalg.ldl_factor(k)
    tLD, tpiv = torch.linalg.ldl_factor(t)
    kLD = kael.as_strided(LD.contiguous().mT.contiguous(), (5, 5), (1, 5))  # column-major
    kb, tb = matrix_pair(RNG.standard_normal((5, 1)), dtype)
    want = torch.linalg.ldl_solve(tLD, tpiv, tb)
    close_to_torch(kael.linalg.ldl_solve(kLD, piv, kb), want, TOL[dtype] * 10)


@pytest.mark.parametrize(
    "a_batch, b_batch",
    [
        ((3,), ()),
        ((), (2,)),
        ((3,), (1,)),
        ((3,), (2, 1)),
        ((1, 3), (2, 1)),
        ((3, 1), (2,)),
        ((2, 1, 3), (4, 1)),
        ((1, 2, 1), (3, 1, 4)),
    ],
)
def test_ldl_solve_broadcasts_batches_as_torch(a_batch, b_batch):
    a = _indefinite(*a_batch, 4, 4)
    k, t = matrix_pair(a)
    kb, tb = matrix_pair(RNG.standard_normal((*b_batch, 4, 2)))
    LD, piv = kael.linalg.ldl_factor(k)
    # torch's ldl_solve crashes on some of these batches: torch.linalg.solve is the reference
    close_to_torch(kael.linalg.ldl_solve(LD, piv, kb), torch.linalg.solve(t, tb), 1e-9)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("a_batch, b_batch", [((), (3,)), ((1,), (3,)), ((2, 1), (3,))])
def test_broadcast_ld_solves_as_torch_on_its_copies(dtype, a_batch, b_batch):
    # kael reads one LD for every item it is broadcast over (batch stride 0), torch is given
    # the copies
    k, t = matrix_pair(_indefinite(*a_batch, 5, 5), dtype)
    kb, tb = matrix_pair(RNG.standard_normal((*b_batch, 5, 2)), dtype)
    LD, piv = kael.linalg.ldl_factor(k)
    tLD, tpiv = torch.linalg.ldl_factor(t)
    batch = torch.broadcast_shapes(a_batch, b_batch)
    copies = tLD.expand(*batch, 5, 5).contiguous(), tpiv.expand(*batch, 5).contiguous()
    want = torch.linalg.ldl_solve(*copies, tb.expand(*batch, 5, 2))
    close_to_torch(kael.linalg.ldl_solve(LD, piv, kb), want, TOL[dtype] * 10)


def test_ldl_solve_with_2x2_blocks_solves_the_system():
    k, t = matrix_pair(_indefinite(12, 12, diagonal=0.0))
    kb, tb = matrix_pair(RNG.standard_normal((12, 4)))
    LD, piv = kael.linalg.ldl_factor(k)
    assert bool((piv < 0).any())
    close_to_torch(kael.linalg.ldl_solve(LD, piv, kb), torch.linalg.solve(t, tb), 1e-9)


def test_ldl_solve_takes_any_integer_pivots_and_hermitian():
    k, t = matrix_pair(_indefinite(4, 4))
    kb, tb = matrix_pair(RNG.standard_normal((4, 2)))
    LD, piv = kael.linalg.ldl_factor(k)
    tLD, tpiv = torch.linalg.ldl_factor(t)
    want = torch.linalg.ldl_solve(tLD, tpiv.long(), tb, hermitian=True)
    got = kael.linalg.ldl_solve(LD, piv.to(kael.int64), kb, hermitian=True)
    close_to_torch(got, want, 1e-12)


def test_pivot_magnitudes_one_and_n_are_taken():
    k, t = matrix_pair(_indefinite(4, 4, diagonal=3.0))
    kb, tb = matrix_pair(RNG.standard_normal((4, 2)))
    LD, _ = kael.linalg.ldl_factor(k)
    tLD, _ = torch.linalg.ldl_factor(t)
    edge = [4, 1, 1, 4]
    got = kael.linalg.ldl_solve(LD, kael.tensor(edge, dtype=kael.int32), kb)
    want = torch.linalg.ldl_solve(tLD, torch.tensor(edge, dtype=torch.int32), tb)
    close_to_torch(got, want, 1e-12)


def test_unpaired_negative_end_pivots_stay_inside_the_matrix():
    k, t = matrix_pair(_indefinite(4, 4, diagonal=3.0))
    kb, tb = matrix_pair(RNG.standard_normal((4, 2)))
    LD, _ = kael.linalg.ldl_factor(k)
    want = torch.linalg.solve(t, tb)
    # LAPACK's sytrs reads a row past the matrix for these (torch returns what it finds):
    # kael reads a block with no partner row as a 1x1 one, so it only gives other numbers.
    for malformed in ([1, 2, 3, -4], [-1, 2, 3, 4]):
        got = kael.linalg.ldl_solve(LD, kael.tensor(malformed, dtype=kael.int32), kb)
        assert got.shape == tuple(want.shape) and got.dtype is kael.float64


# ---- bad inputs ----------------------------------------------------------------------------------


@pytest.mark.parametrize("op", [kael.linalg.ldl_factor, kael.linalg.ldl_factor_ex])
def test_factor_bad_inputs_raise_typed_errors(op):
    _raises(kael.ValueError, "square matrices, but they are 3 by 4", op, kael.zeros(3, 4))
    _raises(kael.ValueError, "at least 2 dimensions", op, kael.zeros(3))
    _raises(kael.ValueError, "at least 2 dimensions", op, kael.tensor(1.0))
    _raises(
        kael.TypeError, "floating point tensor as input. Got int64", op, kael.zeros(2, 2).long()
    )
    for half in (kael.float16, kael.bfloat16):
        _raises(
            kael.TypeError,
            f"Low precision dtypes not supported. Got {half}",
            op,
            kael.zeros(2, 2, dtype=half),
        )
    _raises(kael.TypeError, "must be a Tensor, got list", op, [[1.0]])
    _raises(kael.TypeError, "hermitian must be a bool, got int", op, kael.eye(2), hermitian=1)


def test_check_errors_must_be_a_bool():
    _raises(
        kael.TypeError,
        "check_errors must be a bool",
        kael.linalg.ldl_factor_ex,
        kael.eye(2),
        check_errors=None,
    )


def _factored(n: int = 3):
    return kael.linalg.ldl_factor(kael.tensor(_indefinite(n, n, diagonal=3.0)))


def test_solve_shape_errors_name_the_shapes():
    LD, piv = _factored()
    B = kael.zeros(3, 2, dtype=kael.float64)
    solve = kael.linalg.ldl_solve
    _raises(kael.ValueError, "square matrices, but they are 3 by 2", solve, LD[:, :2], piv, B)
    _raises(
        kael.ValueError, "B to have at least 2 dimensions, but it has 1", solve, LD, piv, B[:, 0]
    )
    _raises(kael.ValueError, r"pivots with shape \[2\] instead", solve, LD, piv[:2], B)
    _raises(kael.ValueError, r"pivots with shape \[2, 3\]", solve, LD, piv.expand(2, 3), B)
    _raises(
        kael.ValueError,
        "each A matrix is 3 by 3 but each b matrix is 2 by 2",
        solve,
        LD,
        piv,
        B[:2],
    )
    A3 = LD.expand(3, 3, 3)
    _raises(
        kael.ValueError,
        r"batch dims of A \[3, 3, 3\] and B \[2, 3, 2\] cannot be broadcast",
        solve,
        A3,
        piv.expand(3, 3),
        kael.zeros(2, 3, 2, dtype=kael.float64),
    )


def test_solve_dtype_errors_name_the_dtypes():
    LD, piv = _factored()
    B = kael.zeros(3, 2, dtype=kael.float64)
    solve = kael.linalg.ldl_solve
    _raises(
        kael.TypeError,
        "same dtype, but found LD of type float64 and B of type float32",
        solve,
        LD,
        piv,
        B.float(),
    )
    _raises(
        kael.TypeError, "Expected pivots to be integers. Got float32", solve, LD, piv.float(), B
    )
    _raises(kael.TypeError, "Expected pivots to be integers. Got bool", solve, LD, piv > 0, B)
    _raises(
        kael.TypeError, "floating point tensor as input. Got int64", solve, LD.long(), piv, B.long()
    )
    _raises(
        kael.TypeError,
        "Low precision dtypes not supported. Got float16",
        solve,
        LD.half(),
        piv,
        B.half(),
    )
    _raises(kael.TypeError, "pivots must be a Tensor, got list", solve, LD, [1, 2, 3], B)


@pytest.mark.parametrize(
    "bad, words",
    [
        ([0, 2, 3], r"\|pivot\| >= 1 \(got 0"),
        ([1, 4, 3], r"<= LD.size\(-2\) \(got 4"),
        ([1, -4, -4], r"<= LD.size\(-2\) \(got 4"),
        ([0, 4, 3], r">= 1 \(got 0"),
    ],
)
def test_solve_pivots_outside_one_to_n_are_refused(bad, words):
    LD, _ = _factored()
    tLD, _ = torch.linalg.ldl_factor(torch.tensor(_indefinite(3, 3, diagonal=3.0)))
    with pytest.raises(RuntimeError, match="Pivots given to ldl_solve must all satisfy"):
        torch.linalg.ldl_solve(
            tLD, torch.tensor(bad, dtype=torch.int32), torch.zeros(3, 2).double()
        )
    B = kael.zeros(3, 2, dtype=kael.float64)
    _raises(
        kael.ValueError, words, kael.linalg.ldl_solve, LD, kael.tensor(bad, dtype=kael.int32), B
    )


# ---- out= ----------------------------------------------------------------------------------------


def _empty_like(t: torch.Tensor, transposed: bool = False):
    """An uninitialized kael tensor of t's shape and dtype, column-major when `transposed`."""
    dtype = {torch.float32: kael.float32, torch.float64: kael.float64, torch.int32: kael.int32}
    if transposed and t.ndim >= 2:
        return kael.empty(*t.shape[:-2], t.shape[-1], t.shape[-2], dtype=dtype[t.dtype]).mT
    return kael.empty(*t.shape, dtype=dtype[t.dtype])


@pytest.mark.parametrize("transposed", [False, True])
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_factor_out_receives_torchs_results(dtype, transposed):
    k, t = matrix_pair(_indefinite(2, 5, 5), dtype)
    want = torch.linalg.ldl_factor_ex(t)
    out = tuple(_empty_like(w, transposed) for w in want)
    got = kael.linalg.ldl_factor_ex(k, out=out)
    assert got.LD is out[0] and got.pivots is out[1] and got.info is out[2]
    _same_factor(got, want, TOL[dtype])
    pair = [_empty_like(w, transposed) for w in want[:2]]  # a list, as torch takes
    got = kael.linalg.ldl_factor(k, out=pair)
    assert got.LD is pair[0] and got.pivots is pair[1]
    _same_factor(got, torch.linalg.ldl_factor(t), TOL[dtype])


@pytest.mark.parametrize("transposed", [False, True])
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_solve_out_receives_torchs_solution(dtype, transposed):
    k, t = matrix_pair(_indefinite(2, 5, 5), dtype)
    kb, tb = matrix_pair(RNG.standard_normal((2, 5, 3)), dtype)
    tLD, tpiv = torch.linalg.ldl_factor(t)
    want = torch.linalg.ldl_solve(tLD, tpiv, tb)
    LD, piv = kael.linalg.ldl_factor(k)
    out = _empty_like(want, transposed)
    assert kael.linalg.ldl_solve(LD, piv, kb, out=out) is out
    close_to_torch(out, want, TOL[dtype] * 10)


def test_solve_out_may_be_b_itself():
    k, t = matrix_pair(_indefinite(4, 4))
    kb, tb = matrix_pair(RNG.standard_normal((4, 2)))
    want = torch.linalg.ldl_solve(*torch.linalg.ldl_factor(t), tb)
    LD, piv = kael.linalg.ldl_factor(k)
    assert kael.linalg.ldl_solve(LD, piv, kb, out=kb) is kb
    close_to_torch(kb, want, 1e-12)


def _out_errors(make, args, kael_fn, torch_fn, error, words: str) -> None:
    """torch refuses the out `make(torch)` (RuntimeError or TypeError); kael the kael one,
    with `error` matching `words`."""
    with pytest.raises((RuntimeError, TypeError)):
        torch_fn(*args[1], out=make(torch))
    _raises(error, words, kael_fn, *args[0], out=make(kael))


def _factor_args():
    k, t = matrix_pair(_indefinite(3, 3))
    return (k,), (t,)


@pytest.mark.parametrize(
    "make, error, words",
    [
        (lambda m: m.empty(3, 3, dtype=m.float64), kael.TypeError, "must be tuple of Tensors, not"),
        (lambda m: (m.empty(3, 3, dtype=m.float64),), kael.TypeError, "tuple of 2 elements but"),
        (
            lambda m: (m.empty(3, 3), m.empty(3, dtype=m.int32)),
            kael.TypeError,
            "out has dtype float32 but the result has dtype float64",
        ),
        (
            lambda m: (m.empty(3, 3, dtype=m.float64), m.empty(3, dtype=m.int64)),
            kael.TypeError,
            "out has dtype int64 but the result has dtype int32",
        ),
        (
            lambda m: (m.empty(1, 3, dtype=m.float64).expand(3, 3), m.empty(3, dtype=m.int32)),
            kael.Error,
            "more than one element of the written-to tensor refers to a single memory",
        ),
    ],
)
def test_factor_out_errors_match_torchs(make, error, words):
    _out_errors(make, _factor_args(), kael.linalg.ldl_factor, torch.linalg.ldl_factor, error, words)


def test_factor_ex_out_needs_three_tensors_of_torchs_dtypes():
    args = _factor_args()
    op, top = kael.linalg.ldl_factor_ex, torch.linalg.ldl_factor_ex

    def two(m):
        return m.empty(3, 3, dtype=m.float64), m.empty(3, dtype=m.int32)

    _out_errors(two, args, op, top, kael.TypeError, "expected tuple of 3 elements but got 2")
    wrong_info = lambda m: (*two(m), m.empty((), dtype=m.int64))  # noqa: E731
    words = "out has dtype int64 but the result has dtype int32"
    _out_errors(wrong_info, args, op, top, kael.TypeError, words)
    got = op(args[0][0], out=(*two(kael), kael.empty((), dtype=kael.int32)))
    _same_factor(got, top(args[1][0]), 1e-12)


@pytest.mark.parametrize("shape", [(2, 2), (0,), (3, 3, 3)])
def test_out_of_another_shape_is_resized_as_torch_does(shape):
    # torch resizes such an out, with a deprecation warning for a nonempty one
    k, _ = matrix_pair(_indefinite(3, 3))
    pivots = kael.empty(3, dtype=kael.int32)
    want = kael.linalg.ldl_factor(k)
    got = resized_out(lambda o: kael.linalg.ldl_factor(k, out=(o, pivots)),
                      kael.empty(*shape, dtype=kael.float64), (3, 3))  # fmt: skip
    np.testing.assert_array_equal(got[0].numpy(), want[0].numpy())
    B = kael.zeros(3, 3, dtype=kael.float64)
    resized_out(lambda o: kael.linalg.ldl_solve(want[0], want[1], B, out=o),
                kael.empty(*shape, dtype=kael.float64), (3, 3))  # fmt: skip
    right = kael.empty(3, 3, dtype=kael.float64)
    got = resized_out(lambda o: kael.linalg.ldl_factor(k, out=(right, o)),
                      kael.empty(2, dtype=kael.int32), (3,))  # fmt: skip
    np.testing.assert_array_equal(got[1].numpy(), want[1].numpy())


def test_solve_out_errors_match_torchs():
    k, t = matrix_pair(_indefinite(3, 3))
    kb, tb = matrix_pair(RNG.standard_normal((3, 2)))
    args = (*kael.linalg.ldl_factor(k), kb), (*torch.linalg.ldl_factor(t), tb)
    op, top = kael.linalg.ldl_solve, torch.linalg.ldl_solve
    words = "out has dtype float32 but the result has dtype float64"
    _out_errors(lambda m: m.empty(3, 2), args, op, top, kael.TypeError, words)
    _out_errors(lambda m: (m.empty(3, 2),), args, op, top, kael.TypeError, "must be a Tensor")
    expanded = lambda m: m.empty(1, 2, dtype=m.float64).expand(3, 2)  # noqa: E731
    _out_errors(expanded, args, op, top, kael.Error, "more than one element of the written-to")


# ---- under kael.compile and on cuda --------------------------------------------------------------


def test_ldl_runs_inside_compile():
    k, t = matrix_pair(_indefinite(4, 4))
    kb, tb = matrix_pair(RNG.standard_normal((4, 2)))

    @kael.compile
    def f(a, b):
        LD, piv = kael.linalg.ldl_factor(a * 2.0)
        return kael.linalg.ldl_solve(LD, piv, b)

    close_to_torch(f(k, kb), torch.linalg.solve(t * 2.0, tb), 1e-10)


def test_out_works_inside_compile():
    # (as for every kael op, a call that needs values cannot follow an out= write in one
    # compiled function: each out= call here is the last)
    k, t = matrix_pair(_indefinite(4, 4))
    kb, tb = matrix_pair(RNG.standard_normal((4, 2)))
    out = (kael.empty(4, 4, dtype=kael.float64), kael.empty(4, dtype=kael.int32))
    x = kael.empty(4, 2, dtype=kael.float64)

    @kael.compile
    def factor(a):
        return kael.linalg.ldl_factor(a * 2.0, out=out)

    @kael.compile
    def solve(a, b):
        LD, piv = kael.linalg.ldl_factor(a)
        return kael.linalg.ldl_solve(LD, piv, b, out=x)

    factor(k)
    close_to_torch(out, torch.linalg.ldl_factor(t * 2.0), 1e-12)
    solve(k, kb)
    close_to_torch(x, torch.linalg.solve(t, tb), 1e-10)


@pytest.mark.gpu
def test_ldl_on_cuda_copies_through_the_host():
    a = _indefinite(4, 4)
    k = kael.tensor(a).cuda()
    got = kael.linalg.ldl_factor_ex(k)
    assert all(str(x.device) == "cuda:0" for x in got)
    _same_factor([x.cpu() for x in got], torch.linalg.ldl_factor_ex(torch.tensor(a)), 1e-12)
    x = kael.linalg.ldl_solve(got.LD, got.pivots, kael.tensor(np.eye(4)).cuda())
    close_to_torch(x.cpu(), torch.linalg.inv(torch.tensor(a)), 1e-10)


@pytest.mark.gpu
def test_out_on_another_device_is_refused():
    a = kael.tensor(_indefinite(3, 3))
    LD, piv = kael.linalg.ldl_factor(a)
    cuda_out = (kael.empty(3, 3, dtype=kael.float64).cuda(), kael.empty(3, dtype=kael.int32))
    words = "out is on cuda:0 but the operands are on cpu"
    _raises(kael.Error, words, kael.linalg.ldl_factor, a, out=cuda_out)
    on_cuda = (LD.cuda(), piv.cuda(), kael.zeros(3, 2, dtype=kael.float64).cuda())
    on_host = kael.empty(3, 2, dtype=kael.float64)
    words = "out is on cpu but the operands are on cuda:0"
    _raises(kael.Error, words, kael.linalg.ldl_solve, *on_cuda, out=on_host)
    x = on_host.cuda()
    assert kael.linalg.ldl_solve(*on_cuda, out=x) is x


def test_pivots_changed_after_the_check_swap_no_row_outside_the_matrix(monkeypatch):
    # ldl_solve checks the pivots, then its kernel reads them again: another thread may
    # change them between, and a row past the matrix must be left alone
    from kael.codegen.cpu import ldl as ldl_kernels

    a = kael.tensor([[4.0, 1, 0], [1, 3, 1], [0, 1, 2]], dtype=kael.float64)
    ld, pivots = kael.linalg.ldl_factor(a)
    shared = pivots.numpy()  # the tensor's own memory
    solve = ldl_kernels.solve

    def meddling(*args):
        shared[:] = 1 << 30
        return solve(*args)

    monkeypatch.setattr(ldl_kernels, "solve", meddling)
    x = kael.linalg.ldl_solve(ld, pivots, kael.ones(3, 1, dtype=kael.float64))
    assert x.shape == (3, 1)
