"""PyTorch's older linear-algebra names and torch.linalg's remaining ones
(frontend/linalg_extras.py) against torch: values, dtype and shape over layouts, batches
and empty inputs; singular inputs (torch's infos, infinities or errors); typed errors."""

import numpy as np
import pytest
import torch
from kernel_helpers import TORCH_DTYPES
from parity_helpers import close_to_torch

import kael

RNG = np.random.default_rng(23)
FLOATS = [kael.float32, kael.float64]
TOL = {kael.float32: 2e-4, kael.float64: 1e-10}
LAYOUTS = ["contiguous", "transposed", "sliced", "expanded"]
pytestmark = pytest.mark.filterwarnings("ignore:.*deprecated:UserWarning")


def _spread(t: torch.Tensor) -> torch.Tensor:
    """t's elements at every other row and column of a zero tensor twice its size."""
    big = torch.zeros(*t.shape[:-2], 2 * t.shape[-2], 2 * t.shape[-1], dtype=t.dtype)
    big[..., ::2, ::2] = t
    return big


# layout: (the contiguous base holding the matrices, the view of it that gives them)
BASES = {
    "contiguous": lambda t: (t, lambda x: x),
    "transposed": lambda t: (t.mT.contiguous(), lambda x: x.mT),
    "sliced": lambda t: (_spread(t), lambda x: x[..., ::2, ::2]),
    "expanded": lambda t: (t[:1] if t.ndim > 2 else t[None], lambda x: x.expand(3, *x.shape[1:])),
}


def _pair(array, dtype=kael.float64, layout: str = "contiguous"):
    """A kael tensor and the equal torch tensor (a separate copy), both the same view of
    equal bases laid out as `layout` says."""
    t = torch.tensor(np.asarray(array)).to(TORCH_DTYPES[dtype])
    base, view = BASES[layout](t)
    return view(kael.from_dlpack(base.clone())), view(base)


def _well_conditioned(*shape) -> np.ndarray:
    return RNG.standard_normal(shape) + shape[-1] * np.eye(shape[-2], shape[-1])


def _triangle(*shape, upper: bool) -> np.ndarray:
    a = _well_conditioned(*shape)
    return np.triu(a) if upper else np.tril(a)


def _raises(kind, match: str, fn, *args, **kwargs) -> None:
    with pytest.raises(kind, match=match):
        fn(*args, **kwargs)


# ---- torch.lu ---------------------------------------------------------------------------------


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_lu_gives_packed_factor_and_pivots(dtype, layout):
    k, t = _pair(RNG.standard_normal((2, 4, 4)), dtype, layout)
    close_to_torch(kael.lu(k), torch.lu(t), TOL[dtype])
    close_to_torch(k.lu(get_infos=True), t.lu(get_infos=True), TOL[dtype])


@pytest.mark.parametrize("shape", [(3, 5), (5, 3), (0, 3), (2, 0, 0), (0, 2, 2)])
def test_lu_of_rectangular_and_empty_matrices(shape):
    k, t = _pair(RNG.standard_normal(shape))
    close_to_torch(kael.lu(k, get_infos=True), torch.lu(t, get_infos=True), 1e-12)


def test_lu_of_singular_matrix_is_not_an_error_and_infos_name_the_zero_pivot():
    singular = np.array([[[1.0, 2.0], [2.0, 4.0]], [[1.0, 0.0], [0.0, 1.0]]])
    k, t = _pair(singular)
    close_to_torch(kael.lu(k), torch.lu(t), 1e-12)
    got, want = kael.lu(k, get_infos=True)[2], torch.lu(t, get_infos=True)[2]
    assert got.tolist() == want.tolist() == [2, 0]


def test_lu_refuses_integer_half_vectors_and_no_pivoting():
    _raises(kael.TypeError, "floating point", kael.lu, kael.ones((2, 2), dtype=kael.int64))
    _raises(kael.TypeError, "Low precision", kael.lu, kael.ones((2, 2), dtype=kael.float16))
    _raises(kael.ValueError, "at least 2 dimensions", kael.lu, kael.ones(2))
    _raises(kael.ValueError, "without pivoting", kael.lu, kael.ones((2, 2)), pivot=False)
    _raises(kael.TypeError, "get_infos", kael.lu, kael.ones((2, 2)), get_infos=1)


# ---- torch.lu_solve ------------------------------------------------------------------------------


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_lu_solve_solves_with_lu_factor(dtype, layout):
    tA = torch.tensor(_well_conditioned(3, 4, 4)).to(TORCH_DTYPES[dtype])
    LU, piv = torch.linalg.lu_factor(tA)
    kLU, kpiv = kael.from_dlpack(LU.clone()), kael.from_dlpack(piv.clone())
    kb, tb = _pair(RNG.standard_normal((3, 4, 2)), dtype, layout)
    close_to_torch(kael.lu_solve(kb, kLU, kpiv), torch.lu_solve(tb, LU, piv), TOL[dtype])
    close_to_torch(kb.lu_solve(kLU, kpiv), tb.lu_solve(LU, piv), TOL[dtype])


def test_lu_solve_broadcasts_one_factor_over_a_batch_of_b_and_takes_empty():
    LU, piv = torch.linalg.lu_factor(torch.tensor(_well_conditioned(3, 3)))
    kLU, kpiv = kael.from_dlpack(LU.clone()), kael.from_dlpack(piv.clone())
    kb, tb = _pair(RNG.standard_normal((5, 3, 2)))
    close_to_torch(kael.lu_solve(kb, kLU, kpiv), torch.lu_solve(tb, LU, piv), 1e-12)
    empty = torch.zeros(0, 0, dtype=torch.float64), torch.zeros(0, dtype=torch.int32)
    kempty = tuple(kael.from_dlpack(x.clone()) for x in empty)
    want = torch.lu_solve(torch.zeros(0, 2, dtype=torch.float64), *empty)
    close_to_torch(kael.lu_solve(kael.zeros((0, 2), dtype=kael.float64), *kempty), want, 0)


def test_lu_solve_pivots_must_lie_between_one_and_n():
    kLU, tLU = _pair(_well_conditioned(3, 3))
    kb, tb = _pair(RNG.standard_normal((3, 1)))
    kedge, tedge = _pair([1, 3, 3], kael.int32)  # both ends of the range are taken
    close_to_torch(kael.lu_solve(kb, kLU, kedge), torch.lu_solve(tb, tLU, tedge), 1e-12)
    for bad in ([0, 2, 3], [1, 4, 3]):
        kbad, tbad = _pair(bad, kael.int32)
        with pytest.raises(RuntimeError, match="Pivots given to lu_solve"):
            torch.lu_solve(tb, tLU, tbad)
        _raises(
            kael.ValueError,
            r"Pivots given to lu_solve must all be .*(smallest is 0|= 3 \(the largest is 4)",
            kael.lu_solve,
            kb,
            kLU,
            kbad,
        )


def test_lu_solve_refuses_bad_shapes_and_dtypes():
    LU = kael.tensor(_well_conditioned(3, 3))
    piv = kael.tensor([1, 2, 3], dtype=kael.int32)
    b = kael.ones((3, 2), dtype=kael.float64)
    _raises(kael.ValueError, "B must have at least 2 dimensions", kael.lu_solve, b[:, 0], LU, piv)
    _raises(kael.TypeError, "same dtype", kael.lu_solve, b.float(), LU, piv)
    _raises(kael.TypeError, "floating point", kael.lu_solve, b.long(), LU.long(), piv)
    _raises(kael.TypeError, "int32.*int64", kael.lu_solve, b, LU, piv.long())
    _raises(kael.ValueError, "pivots must be", kael.lu_solve, b, LU, piv[:2])
    _raises(kael.ValueError, "Incompatible", kael.lu_solve, kael.ones((4, 2)).double(), LU, piv)
    _raises(kael.ValueError, "square", kael.lu_solve, b, kael.ones((3, 4)).double(), piv)


# ---- torch.lu_unpack -----------------------------------------------------------------------------


@pytest.mark.parametrize("shape", [(4, 4), (2, 3, 5), (2, 5, 3), (0, 3), (3, 0), (0, 3, 3)])
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_lu_unpack_gives_permutation_and_triangles(shape, dtype):
    LU, piv = torch.linalg.lu_factor(
        torch.tensor(RNG.standard_normal(shape)).to(TORCH_DTYPES[dtype])
    )
    kLU, kpiv = kael.from_dlpack(LU.clone()), kael.from_dlpack(piv.clone())
    close_to_torch(tuple(kael.lu_unpack(kLU, kpiv)), tuple(torch.lu_unpack(LU, piv)), 0)


@pytest.mark.parametrize("flags", [(True, False), (False, True), (False, False)])
def test_lu_unpack_leaves_what_is_not_asked_empty(flags):
    LU, piv = torch.linalg.lu_factor(torch.tensor(RNG.standard_normal((2, 3, 3))))
    kLU, kpiv = kael.from_dlpack(LU.clone()), kael.from_dlpack(piv.clone())
    close_to_torch(
        tuple(kael.lu_unpack(kLU, kpiv, *flags)), tuple(torch.lu_unpack(LU, piv, *flags)), 0
    )


@pytest.mark.parametrize("dtype", [kael.int64, kael.float16, kael.bfloat16], ids=str)
def test_lu_unpack_takes_any_dtype_of_lu(dtype):
    kLU, tLU = _pair(RNG.integers(-5, 5, (2, 3, 3)), dtype)
    kpiv, tpiv = _pair([[3, 3, 3], [2, 2, 3]], kael.int32)
    close_to_torch(tuple(kael.lu_unpack(kLU, kpiv)), tuple(torch.lu_unpack(tLU, tpiv)), 0)


@pytest.mark.parametrize("layout", ["transposed", "sliced", "expanded"])
def test_lu_unpack_of_strided_lu_and_pivots(layout):
    kLU, tLU = _pair(RNG.standard_normal((2, 3, 3)), kael.float64, layout)
    kpiv, tpiv = _pair([2, 3, 3], kael.int32)
    kpiv, tpiv = kpiv.expand(kLU.shape[0], 3), tpiv.expand(tLU.shape[0], 3)  # stride-0 pivots
    close_to_torch(tuple(kael.lu_unpack(kLU, kpiv)), tuple(torch.lu_unpack(tLU, tpiv)), 0)


def test_lu_unpack_pivots_must_lie_between_one_and_m():
    kLU, tLU = _pair(RNG.standard_normal((3, 3)))
    kpiv, tpiv = _pair([1, 3, 3], kael.int32)
    close_to_torch(tuple(kael.lu_unpack(kLU, kpiv)), tuple(torch.lu_unpack(tLU, tpiv)), 0)
    for bad in ([0, 2, 3], [1, 4, 3]):
        with pytest.raises(RuntimeError, match="between 1 and LU.size"):
            torch.lu_unpack(tLU, torch.tensor(bad).int())
        _raises(
            kael.ValueError,
            "between 1 and LU.size",
            kael.lu_unpack,
            kLU,
            kael.tensor(bad, dtype=kael.int32),
        )


def test_lu_unpack_refuses_vectors_and_pivots_of_other_dtype_or_shape():
    LU = kael.ones((3, 3))
    piv = kael.tensor([1, 2, 3], dtype=kael.int32)
    _raises(
        kael.ValueError, r"2 or more dimensions. Got size: \[3\]", kael.lu_unpack, piv.float(), piv
    )
    _raises(kael.TypeError, "torch.int32 dtype, got int64", kael.lu_unpack, LU, piv.long())
    _raises(kael.ValueError, r"LU_pivots of shape \[2\]", kael.lu_unpack, LU, piv[:2])
    _raises(kael.ValueError, r"shape \[2, 3\]", kael.lu_unpack, LU, piv.expand(2, 3))
    # PyTorch reads pivots [3] for LU [2, 3, 3] wrongly (the second P is the identity).
    _raises(kael.ValueError, r"expected \[2, 3\]", kael.lu_unpack, LU.expand(2, 3, 3), piv)
    # Without unpacking the pivots, they are not read.
    P, L, U = kael.lu_unpack(LU, piv.long(), unpack_pivots=False)
    assert P.shape == (0,) and L.shape == U.shape == (3, 3)


# ---- torch.triangular_solve ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "options", [(u, tr, un) for u in (True, False) for tr in (True, False) for un in (True, False)]
)
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_triangular_solve_reads_one_triangle(dtype, options):
    upper, transpose, unit = options
    kA, tA = _pair(RNG.standard_normal((2, 4, 4)) + 4 * np.eye(4), dtype)  # both triangles set
    kb, tb = _pair(RNG.standard_normal((2, 4, 3)), dtype)
    got = kael.triangular_solve(kb, kA, upper, transpose, unit)
    close_to_torch(
        tuple(got), tuple(torch.triangular_solve(tb, tA, upper, transpose, unit)), TOL[dtype]
    )


@pytest.mark.parametrize("layout", LAYOUTS)
def test_triangular_solve_over_layouts(layout):
    kA, tA = _pair(_triangle(2, 4, 4, upper=True), kael.float64, layout)
    kb, tb = _pair(RNG.standard_normal((2, 4, 2)), kael.float64, layout)
    close_to_torch(tuple(kb.triangular_solve(kA)), tuple(tb.triangular_solve(tA)), 1e-12)


@pytest.mark.parametrize(
    "shapes",
    [
        ((5, 3, 2), (3, 3)),
        ((3, 2), (5, 3, 3)),
        ((0, 2), (0, 0)),
        ((3, 0), (3, 3)),
        ((0, 3, 2), (3, 3)),
    ],
)
def test_triangular_solve_broadcasts_batches_and_takes_empty(shapes):
    kb, tb = _pair(RNG.standard_normal(shapes[0]))
    kA, tA = _pair(_well_conditioned(*shapes[1]))
    close_to_torch(
        tuple(kael.triangular_solve(kb, kA)), tuple(torch.triangular_solve(tb, tA)), 1e-12
    )


def test_triangular_solve_of_singular_triangle_gives_torchs_infinities():
    kA, tA = _pair([[1.0, 2.0], [0.0, 0.0]])
    kb, tb = _pair(np.ones((2, 1)))
    close_to_torch(tuple(kael.triangular_solve(kb, kA)), tuple(torch.triangular_solve(tb, tA)), 0)


def test_triangular_solve_refuses_bad_shapes_and_dtypes():
    A, b = kael.eye(3, dtype=kael.float64), kael.ones((3, 2), dtype=kael.float64)
    _raises(kael.ValueError, "b to have at least 2 dimensions", kael.triangular_solve, b[:, 0], A)
    _raises(kael.ValueError, "A to have at least 2 dimensions", kael.triangular_solve, b, A[0])
    _raises(
        kael.TypeError,
        "b of type float32 and A of type float64",
        kael.triangular_solve,
        b.float(),
        A,
    )
    _raises(kael.TypeError, "floating point", kael.triangular_solve, b.long(), A.long())
    _raises(kael.TypeError, "Low precision", kael.triangular_solve, b.half(), A.half())
    _raises(kael.ValueError, "3 by 4", kael.triangular_solve, b, kael.ones((3, 4)).double())
    _raises(
        kael.ValueError,
        "each b matrix is 4 by 2",
        kael.triangular_solve,
        kael.ones((4, 2)).double(),
        A,
    )
    _raises(
        kael.ValueError,
        "broadcast",
        kael.triangular_solve,
        kael.ones((4, 3, 2)).double(),
        kael.ones((5, 3, 3)).double(),
    )


# ---- torch.cholesky_inverse ----------------------------------------------------------------------


def _cholesky_factor(*shape) -> np.ndarray:
    a = RNG.standard_normal(shape)
    return np.linalg.cholesky(a @ np.swapaxes(a, -1, -2) + shape[-1] * np.eye(shape[-1]))


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_cholesky_inverse_inverts_from_the_factor(dtype, upper, layout):
    factor = _cholesky_factor(2, 4, 4)
    kL, tL = _pair(np.swapaxes(factor, -1, -2) if upper else factor, dtype, layout)
    close_to_torch(kael.cholesky_inverse(kL, upper), torch.cholesky_inverse(tL, upper), TOL[dtype])
    close_to_torch(kL.cholesky_inverse(upper=upper), tL.cholesky_inverse(upper=upper), TOL[dtype])


def test_cholesky_inverse_of_empty_matrices():
    kL, tL = _pair(np.zeros((2, 0, 0)))
    close_to_torch(kael.cholesky_inverse(kL), torch.cholesky_inverse(tL), 0)


def test_cholesky_inverse_names_the_zero_diagonal_element_and_batch():
    singular = np.array([[[1.0, 0.0], [0.0, 1.0]], [[1.0, 0.0], [1.0, 0.0]]])
    k, t = _pair(singular)
    with pytest.raises(
        torch.linalg.LinAlgError, match=r"\(Batch element 1\): The diagonal element 2"
    ):
        torch.cholesky_inverse(t)
    _raises(
        kael.linalg.LinAlgError,
        r"\(Batch element 1\): The diagonal element 2 is zero",
        kael.cholesky_inverse,
        k,
    )
    _raises(
        kael.linalg.LinAlgError,
        r"^cholesky_inverse: The diagonal element 2",
        kael.cholesky_inverse,
        k[1],
    )
    # A tiny (not zero) diagonal is no error, as in LAPACK.
    kt, tt = _pair([[1e-150, 0.0], [1.0, 1.0]])
    close_to_torch(kael.cholesky_inverse(kt), torch.cholesky_inverse(tt), 1e-12)


def test_cholesky_inverse_refuses_non_float_non_square_and_vectors():
    _raises(kael.TypeError, "floating point", kael.cholesky_inverse, kael.eye(2, dtype=kael.int64))
    _raises(kael.TypeError, "Low precision", kael.cholesky_inverse, kael.eye(2, dtype=kael.float16))
    _raises(kael.ValueError, "at least 2 dimensions", kael.cholesky_inverse, kael.ones(3))
    _raises(kael.ValueError, "3 by 4", kael.cholesky_inverse, kael.ones((3, 4)))


# ---- torch.geqrf and torch.ormqr ---------------------------------------------------------------


@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (4, 4), (2, 6, 4), (0, 3), (3, 0), (2, 0, 3)])
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_geqrf_gives_lapacks_reflectors_and_tau(shape, dtype):
    k, t = _pair(RNG.standard_normal(shape), dtype)
    close_to_torch(tuple(kael.geqrf(k)), tuple(torch.geqrf(t)), TOL[dtype])


@pytest.mark.parametrize("layout", LAYOUTS)
def test_geqrf_over_layouts_and_as_a_method(layout):
    k, t = _pair(RNG.standard_normal((2, 5, 4)), kael.float64, layout)
    close_to_torch(tuple(k.geqrf()), tuple(t.geqrf()), 1e-12)


def test_geqrf_of_a_large_matrix_takes_blocked_panels():
    k, t = _pair(RNG.standard_normal((140, 130)))
    close_to_torch(tuple(kael.geqrf(k)), tuple(torch.geqrf(t)), 1e-9)


def test_geqrf_refuses_vectors_integers_and_half():
    _raises(kael.ValueError, "at least 2 dimensions", kael.geqrf, kael.ones(3))
    _raises(kael.TypeError, "floating point", kael.geqrf, kael.ones((3, 3), dtype=kael.int64))
    _raises(kael.TypeError, "Low precision", kael.geqrf, kael.ones((3, 3), dtype=kael.float16))


@pytest.mark.parametrize("sides", [(lf, tr) for lf in (True, False) for tr in (False, True)])
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_ormqr_multiplies_by_q(dtype, sides):
    left, transpose = sides
    a, tau = torch.geqrf(torch.tensor(RNG.standard_normal((2, 5, 3))).to(TORCH_DTYPES[dtype]))
    ka, ktau = kael.from_dlpack(a.clone()), kael.from_dlpack(tau.clone())
    kc, tc = _pair(RNG.standard_normal((2, 5, 4) if left else (2, 4, 5)), dtype)
    want = torch.ormqr(a, tau, tc, left, transpose)
    close_to_torch(kael.ormqr(ka, ktau, kc, left, transpose), want, TOL[dtype])
    close_to_torch(ka.ormqr(ktau, kc, left=left, transpose=transpose), want, TOL[dtype])
    close_to_torch(kc, tc, 0)  # other is read, not overwritten


@pytest.mark.parametrize("layout", LAYOUTS)
def test_ormqr_of_wide_reflectors_over_layouts(layout):
    ka, ta = _pair(RNG.standard_normal((2, 3, 6)), kael.float64, layout)
    ktau, ttau = _pair(RNG.uniform(1, 2, (ka.shape[0], 3)))
    kc, tc = _pair(RNG.standard_normal((ka.shape[0], 3, 2)), kael.float64, layout)
    close_to_torch(kael.ormqr(ka, ktau, kc), torch.ormqr(ta, ttau, tc), 1e-12)


@pytest.mark.parametrize(
    "shapes",
    [
        ((4, 0), (0,), (4, 2)),
        ((0, 0), (0,), (0, 2)),
        ((4, 3), (3,), (4, 0)),
        ((0, 4, 3), (0, 3), (0, 4, 2)),
    ],
)
def test_ormqr_of_empty_operands(shapes):
    pairs = [_pair(RNG.standard_normal(s)) for s in shapes]
    close_to_torch(kael.ormqr(*(k for k, _ in pairs)), torch.ormqr(*(t for _, t in pairs)), 1e-12)


def test_ormqr_refuses_mismatched_shapes_and_dtypes():
    a, tau, c = kael.ones((4, 3)).double(), kael.ones(3).double(), kael.ones((4, 2)).double()
    _raises(kael.ValueError, "input must have at least 2", kael.ormqr, tau, tau, c)
    _raises(kael.ValueError, "other must have at least 2", kael.ormqr, a, tau, tau)
    _raises(
        kael.ValueError,
        r"other.shape\[-2\] must be equal to input.shape\[-2\] \(3 != 4\)",
        kael.ormqr,
        a,
        tau,
        c[:3],
    )
    _raises(kael.ValueError, r"other.shape\[-1\] must be equal", kael.ormqr, a, tau, c, left=False)
    _raises(
        kael.ValueError,
        r"min\(other.shape\[-2\], input.shape\[-1\]\) \(2 != 3\)",
        kael.ormqr,
        a,
        tau[:2],
        c,
    )
    _raises(kael.ValueError, "tau.ndim equal to 2", kael.ormqr, a, tau[None], c)
    _raises(kael.ValueError, "other.ndim equal to 3", kael.ormqr, a, tau, c.expand(2, 4, 2))
    batch_a = a.expand(2, 4, 3)
    _raises(
        kael.ValueError,
        r"of tau .* but got \[3\]",
        kael.ormqr,
        batch_a,
        tau.expand(3, 3),
        c.expand(2, 4, 2),
    )
    _raises(
        kael.ValueError,
        r"of other .* but got \[1\]",
        kael.ormqr,
        batch_a,
        tau.expand(2, 3),
        c.expand(1, 4, 2),
    )
    _raises(kael.TypeError, "tau has dtype float32", kael.ormqr, a, tau.float(), c)
    _raises(kael.TypeError, "other has dtype float32", kael.ormqr, a, tau, c.float())
    _raises(kael.TypeError, "floating point", kael.ormqr, a.long(), tau.long(), c.long())


# ---- torch.nuclear_norm and torch.frobenius_norm ---------------------------------------------


@pytest.mark.parametrize(
    "args", [{}, {"keepdim": True}, {"dim": (0, 2)}, {"dim": [2, 0], "keepdim": True}]
)
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_nuclear_norm_sums_singular_values(dtype, layout, args):
    k, t = _pair(RNG.standard_normal((2, 3, 4)), dtype, layout)
    close_to_torch(kael.nuclear_norm(k, **args), torch.nuclear_norm(t, **args), TOL[dtype])


def test_nuclear_norm_of_empty_matrix_is_zero():
    k, t = _pair(np.zeros((0, 3)))
    close_to_torch(kael.nuclear_norm(k), torch.nuclear_norm(t), 0)


def test_nuclear_norm_refusals():
    x = kael.ones((2, 3, 4))
    _raises(kael.ValueError, "at least 2 dimensions", kael.nuclear_norm, x[0, 0])
    _raises(kael.TypeError, "floating point", kael.nuclear_norm, x.long())
    _raises(kael.TypeError, "Low precision", kael.nuclear_norm, x.half())
    _raises(kael.TypeError, "Low precision", kael.nuclear_norm, x.to(kael.bfloat16))
    _raises(kael.ValueError, "dims must be different", kael.nuclear_norm, x, 0)
    _raises(kael.ValueError, "2-tuple", kael.nuclear_norm, x, (0, 1, 2))
    _raises(kael.IndexError, "out of range", kael.nuclear_norm, x, (0, 5))
    assert not hasattr(kael.Tensor, "nuclear_norm") and not hasattr(torch.Tensor, "nuclear_norm")


@pytest.mark.parametrize("args", [((0, 2),), ((1,),), (1,), ((),), ((-1, 0), True), ((2,), True)])
@pytest.mark.parametrize("dtype", [*FLOATS, kael.float16, kael.bfloat16], ids=str)
def test_frobenius_norm_over_at_most_two_dims(dtype, args):
    k, t = _pair(RNG.standard_normal((2, 3, 4)), dtype, "transposed")
    tol = 1e-2 if dtype.is_half else TOL[dtype]
    close_to_torch(kael.frobenius_norm(k, *args), torch.frobenius_norm(t, *args), tol)


@pytest.mark.parametrize("shape_dim", [((), (0,)), ((), ()), ((0, 3), (0, 1)), ((0, 3), (0,))])
def test_frobenius_norm_of_scalars_and_empty_tensors(shape_dim):
    shape, dim = shape_dim
    k, t = _pair(RNG.standard_normal(shape) - 2)
    close_to_torch(kael.frobenius_norm(k, dim), torch.frobenius_norm(t, dim), 1e-12)


def test_frobenius_norm_refusals():
    x = kael.ones((2, 3, 4))
    _raises(kael.ValueError, "at most 2 dimensions, but got 3", kael.frobenius_norm, x, (0, 1, 2))
    _raises(kael.ValueError, "dim 1 appears multiple times", kael.frobenius_norm, x, (1, -2))
    _raises(kael.IndexError, "out of range", kael.frobenius_norm, x, (1, 3))
    _raises(kael.TypeError, "Got int64", kael.frobenius_norm, x.long(), (0, 1))
    _raises(kael.TypeError, "Got bool", kael.frobenius_norm, x.bool(), (0, 1))
    assert not hasattr(kael.Tensor, "frobenius_norm")


# ---- linalg.vander --------------------------------------------------------------------------


@pytest.mark.parametrize("N", [None, 2, 5])
@pytest.mark.parametrize("dtype", [*FLOATS, kael.int64, kael.int32, kael.uint8, kael.int8], ids=str)
def test_vander_gives_powers_and_promotes_integers_to_int64(dtype, N):
    k, t = _pair(RNG.integers(0, 4, (2, 3)), dtype)
    close_to_torch(kael.linalg.vander(k, N=N), torch.linalg.vander(t, N=N), 1e-6)


@pytest.mark.parametrize("case", [((), 3), ((0,), 3), ((2, 0), 2), ((4,), None)])
def test_vander_of_scalars_empty_and_strided_inputs(case):
    shape, N = case
    k, t = _pair(RNG.standard_normal(shape))
    close_to_torch(kael.linalg.vander(k, N=N), torch.linalg.vander(t, N=N), 1e-12)
    k, t = _pair(RNG.standard_normal((3, 4)), kael.float64, "transposed")
    close_to_torch(kael.linalg.vander(k), torch.linalg.vander(t), 1e-12)


def test_vander_n_must_exceed_one():
    x = kael.ones(3)
    for N in (1, 0, -1):
        _raises(kael.ValueError, f"N must be greater than 1, got {N}", kael.linalg.vander, x, N=N)
    _raises(kael.ValueError, "got 1", kael.linalg.vander, kael.tensor(2.0))
    _raises(kael.ValueError, "got 0", kael.linalg.vander, kael.ones(0))
    _raises(kael.TypeError, "must be int, not float", kael.linalg.vander, x, N=2.0)
    for dtype in (kael.bool, kael.float16, kael.bfloat16):
        _raises(kael.TypeError, f"but got {dtype}", kael.linalg.vander, x.to(dtype))


# ---- linalg.diagonal and linalg.matmul ---------------------------------------------------------


@pytest.mark.parametrize(
    "args", [{}, {"offset": 1}, {"offset": -2}, {"offset": 9}, {"dim1": 0, "dim2": 2}]
)
@pytest.mark.parametrize("dtype", [kael.float32, kael.int64, kael.bool], ids=str)
def test_linalg_diagonal_is_a_view_of_the_diagonal(dtype, args):
    k, t = _pair(RNG.integers(0, 3, (2, 3, 4)), dtype, "transposed")
    got = kael.linalg.diagonal(k, **args)
    close_to_torch(got, torch.linalg.diagonal(t, **args), 0)
    assert got._impl.storage is k._impl.storage


def test_linalg_diagonal_refusals():
    x = kael.ones((2, 3, 4))
    _raises(kael.IndexError, "out of range", kael.linalg.diagonal, kael.ones(3))
    _raises(kael.ValueError, "cannot be identical", kael.linalg.diagonal, x, dim1=1, dim2=-2)
    _raises(kael.IndexError, "out of range", kael.linalg.diagonal, x, dim1=3)
    with pytest.raises(TypeError):
        kael.linalg.diagonal(x, 1)  # keyword-only, as torch.linalg.diagonal


@pytest.mark.parametrize("dtype", [*FLOATS, kael.int64, kael.float16], ids=str)
def test_linalg_matmul_multiplies_with_broadcast(dtype):
    ka, ta = _pair(RNG.integers(-3, 4, (2, 3, 4)), dtype, "transposed")
    kb, tb = _pair(RNG.integers(-3, 4, (4, 2)), dtype)
    close_to_torch(kael.linalg.matmul(ka, kb), torch.linalg.matmul(ta, tb), 1e-3)
    close_to_torch(kael.linalg.matmul(ka, kb[:, 0]), torch.linalg.matmul(ta, tb[:, 0]), 1e-3)


def test_linalg_matmul_is_kaels_matmul_promoting_as_the_book():
    a = kael.ones((2, 3))
    assert kael.linalg.matmul(a, a.mT.double()).dtype is kael.float64  # the book's promotion


def test_linalg_matmul_refuses_bool_and_scalars():
    a = kael.ones((2, 3))
    _raises(kael.TypeError, "bool", kael.linalg.matmul, a.bool(), a.mT.bool())
    _raises(kael.ValueError, "at least 1D", kael.linalg.matmul, kael.tensor(1.0), a)
    _raises(kael.ValueError, "cannot be multiplied", kael.linalg.matmul, a, a)


# ---- linalg.tensorinv and linalg.tensorsolve ----------------------------------------------------


@pytest.mark.parametrize("case", [((4, 6, 8, 3), 2), ((6, 4, 24), 2), ((6, 2, 3), 1), ((0, 0), 1)])
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_tensorinv_inverts_the_matrix_form(dtype, case):
    shape, ind = case
    rows = int(np.prod(shape[:ind]))
    k, t = _pair(_well_conditioned(rows, rows).reshape(shape), dtype)
    close_to_torch(
        kael.linalg.tensorinv(k, ind=ind), torch.linalg.tensorinv(t, ind=ind), TOL[dtype]
    )


def test_tensorinv_refusals():
    A = kael.ones((4, 6, 8, 3), dtype=kael.float64)
    for ind in (0, -1):
        _raises(
            kael.ValueError,
            f"strictly positive integer for 'ind', but got {ind}",
            kael.linalg.tensorinv,
            A,
            ind=ind,
        )
    _raises(kael.ValueError, "but got 1 != 576", kael.linalg.tensorinv, A, ind=4)
    _raises(kael.IndexError, "ind 5", kael.linalg.tensorinv, A, ind=5)
    _raises(kael.ValueError, "16 != 24", kael.linalg.tensorinv, kael.ones((4, 6, 8, 2)))
    _raises(kael.TypeError, "must be int, not float", kael.linalg.tensorinv, A, ind=1.0)
    _raises(
        kael.TypeError,
        "floating point",
        kael.linalg.tensorinv,
        kael.eye(2, dtype=kael.int64),
        ind=1,
    )
    _raises(
        kael.TypeError,
        "Low precision",
        kael.linalg.tensorinv,
        kael.eye(2, dtype=kael.float16),
        ind=1,
    )
    _raises(
        kael.linalg.LinAlgError,
        "^inv: The diagonal element 1 is zero",
        kael.linalg.tensorinv,
        kael.zeros((2, 2)),
        ind=1,
    )


@pytest.mark.parametrize(
    "case",
    [
        ((2, 3, 6), (2, 3), None),
        ((6, 4, 2, 3), (6, 2), (1,)),
        ((2, 3, 3, 2), (3, 2), (0, 1)),
        ((0, 0), (0,), None),
    ],
)
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_tensorsolve_solves_the_matrix_form(dtype, case):
    a_shape, b_shape, dims = case
    size = int(np.prod(b_shape))
    kA, tA = _pair(_well_conditioned(size, size).reshape(a_shape), dtype)
    kB, tB = _pair(RNG.standard_normal(b_shape), dtype)
    want = torch.linalg.tensorsolve(tA, tB, dims=dims)
    close_to_torch(kael.linalg.tensorsolve(kA, kB, dims=dims), want, TOL[dtype])


def test_tensorsolve_refusals():
    A = kael.ones((2, 3, 6), dtype=kael.float64)
    B = kael.ones((2, 3), dtype=kael.float64)
    _raises(kael.ValueError, "but got 6 != 4", kael.linalg.tensorsolve, A, B[:, :2])
    _raises(
        kael.ValueError,
        "but got 18 != 8",
        kael.linalg.tensorsolve,
        kael.ones((6, 4, 2, 3)).double(),
        kael.ones((4, 2)).double(),
        dims=(0,),
    )
    _raises(
        kael.ValueError,
        "not a 6 x 6 system",
        kael.linalg.tensorsolve,
        kael.ones((5, 6)).double(),
        kael.ones(6).double(),
    )
    _raises(kael.ValueError, "more than A's", kael.linalg.tensorsolve, B, A)
    _raises(kael.IndexError, "out of range", kael.linalg.tensorsolve, A, B, dims=(5,))
    _raises(kael.TypeError, "floating point", kael.linalg.tensorsolve, A.long(), B.long())
    _raises(kael.TypeError, "same dtype", kael.linalg.tensorsolve, A, B.float())
    _raises(kael.linalg.LinAlgError, "singular", kael.linalg.tensorsolve, A * 0, B)


# ---- under kael.compile -----------------------------------------------------------------------


def test_old_names_run_inside_compile():
    kA, tA = _pair(_triangle(3, 3, upper=True))
    kb, tb = _pair(RNG.standard_normal((3, 2)))

    @kael.compile
    def f(b, A):
        x, _ = kael.triangular_solve(b * 2.0, A)
        return kael.linalg.matmul(kael.cholesky_inverse(A.mT), x)

    want = torch.cholesky_inverse(tA.mT) @ torch.triangular_solve(tb * 2.0, tA).solution
    close_to_torch(f(kb, kA), want, 1e-10)
