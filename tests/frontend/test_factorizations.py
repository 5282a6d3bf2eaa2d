"""kael.linalg's LU and Cholesky family (frontend/factorizations.py) against torch.linalg:
values, dtype and shape over layouts, batches and empty inputs; singular and
not-positive-definite inputs; PyTorch's typed errors."""

import math
import warnings

import numpy as np
import pytest
import torch
from parity_helpers import close_to_torch, matrix_pair

import kael
from kael.frontend import blocked

RNG = np.random.default_rng(14)
FLOATS = [kael.float32, kael.float64]
TOL = {kael.float32: 2e-4, kael.float64: 1e-10}
LAYOUTS = ["contiguous", "transposed", "sliced", "expanded"]


def _well_conditioned(*shape) -> np.ndarray:
    n = shape[-1]
    return RNG.standard_normal(shape) + n * np.eye(n)


def _spd(*shape) -> np.ndarray:
    a = RNG.standard_normal(shape)
    return a @ np.swapaxes(a, -1, -2) + shape[-1] * np.eye(shape[-1])


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_solve_inv_det_match_torch(dtype, layout):
    k, t = matrix_pair(_well_conditioned(2, 5, 5), dtype, layout)
    kb, tb = matrix_pair(RNG.standard_normal((5, 4)), dtype)  # one B for the batch
    tol = TOL[dtype]
    close_to_torch(kael.linalg.solve(k, kb), torch.linalg.solve(t, tb), tol)
    close_to_torch(
        kael.linalg.solve(k, kb.mT, left=False), torch.linalg.solve(t, tb.mT, left=False), tol
    )
    close_to_torch(kael.linalg.inv(k), torch.linalg.inv(t), tol)
    close_to_torch(kael.linalg.det(k), torch.linalg.det(t), tol * 100)
    close_to_torch(tuple(kael.linalg.slogdet(k)), tuple(torch.linalg.slogdet(t)), tol)
    close_to_torch(k.logdet(), t.logdet(), tol)
    close_to_torch(k.inverse(), t.inverse(), tol)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_solve_vector_and_broadcast_rules(dtype):
    k, t = matrix_pair(_well_conditioned(4, 4), dtype)
    kv, tv = matrix_pair(RNG.standard_normal(4), dtype)
    tol = TOL[dtype]
    close_to_torch(kael.linalg.solve(k, kv), torch.linalg.solve(t, tv), tol)
    # A batch of vectors: B's shape is A's without the last dim.
    kA, tA = matrix_pair(_well_conditioned(3, 4, 4), dtype)
    kV, tV = matrix_pair(RNG.standard_normal((3, 4)), dtype)
    close_to_torch(kael.linalg.solve(kA, kV), torch.linalg.solve(tA, tV), tol)
    # One A for a batch of B, and a batch of A for one B.
    kB, tB = matrix_pair(RNG.standard_normal((2, 1, 4, 2)), dtype)
    close_to_torch(kael.linalg.solve(kA, kB), torch.linalg.solve(tA, tB), tol)
    close_to_torch(kael.linalg.solve(k, kB), torch.linalg.solve(t, tB), tol)


@pytest.mark.parametrize(
    "a_shape, b_shape, words",
    [
        ((3, 3), (3,), r"XA = B \(3x3 and 3x1\)"),
        ((2, 3, 3), (2, 3), r"XA = B \(3x3 and 3x1\)"),
        ((1, 1), (1,), r"Vector broadcasting .* not supported for left=False.*A \[1, 1\], B \[1\]"),
    ],
)  # fmt: skip
def test_solve_left_false_refuses_a_vector_b_as_torch(a_shape, b_shape, words):
    """PyTorch's vector rule is for AX = B: with left=False a vector B is a column (n x 1),
    which fits only a 1 x 1 A, and torch refuses that one too."""
    n = a_shape[-1]
    A, B = np.broadcast_to(np.eye(n) * 2, a_shape), np.ones(b_shape)
    for solve in ("solve", "solve_ex"):
        with pytest.raises(RuntimeError):
            getattr(torch.linalg, solve)(torch.tensor(A), torch.tensor(B), left=False)
        with pytest.raises(kael.ValueError, match=words):
            getattr(kael.linalg, solve)(kael.tensor(A), kael.tensor(B), left=False)
    # A row B ([1, n]) is a matrix: X A = B solves as torch's.
    close_to_torch(
        kael.linalg.solve(kael.tensor(A), kael.tensor(B).unsqueeze(-2), left=False),
        torch.linalg.solve(torch.tensor(A), torch.tensor(B).unsqueeze(-2), left=False),
        1e-12,
    )


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("shape", [(5, 5), (6, 4), (4, 6), (2, 3, 3)])
def test_lu_factor_and_lu_match_torch(dtype, shape):
    k, t = matrix_pair(RNG.standard_normal(shape), dtype)
    tol = TOL[dtype]
    LU, piv, info = kael.linalg.lu_factor_ex(k)
    tLU, tpiv, tinfo = torch.linalg.lu_factor_ex(t)
    close_to_torch(LU, tLU, tol)
    close_to_torch(piv, tpiv, 0)
    close_to_torch(info, tinfo, 0)
    for got, want in zip(kael.linalg.lu(k), torch.linalg.lu(t)):
        close_to_torch(got, want, tol)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("adjoint", [False, True])
def test_lu_solve_matches_torch(dtype, left, adjoint):
    k, t = matrix_pair(_well_conditioned(2, 4, 4), dtype)
    kb, tb = matrix_pair(RNG.standard_normal((2, 4, 4)), dtype)
    LU, piv = kael.linalg.lu_factor(k)
    tLU, tpiv = torch.linalg.lu_factor(t)
    got = kael.linalg.lu_solve(LU, piv, kb, left=left, adjoint=adjoint)
    close_to_torch(
        got, torch.linalg.lu_solve(tLU, tpiv, tb, left=left, adjoint=adjoint), TOL[dtype]
    )


def test_lu_solve_pivots_outside_one_to_n_are_refused_before_any_read():
    k, t = matrix_pair(_well_conditioned(3, 3), kael.float64)
    kb, tb = matrix_pair(RNG.standard_normal((3, 2)), kael.float64)
    LU, _ = kael.linalg.lu_factor(k)
    tLU, _ = torch.linalg.lu_factor(t)
    edge = [1, 3, 3]  # both ends of the range are pivots
    got = kael.linalg.lu_solve(LU, kael.tensor(edge, dtype=kael.int32), kb)
    want = torch.linalg.lu_solve(tLU, torch.tensor(edge, dtype=torch.int32), tb)
    close_to_torch(got, want, 1e-12)
    for bad, words in (
        ([0, 2, 3], "greater or equal to 1 .the smallest is 0"),
        ([1, 4, 3], "= 3 .the largest is 4"),
    ):
        with pytest.raises(RuntimeError, match="Pivots given to lu_solve"):
            torch.linalg.lu_solve(tLU, torch.tensor(bad, dtype=torch.int32), tb)
        with pytest.raises(
            kael.ValueError, match=f"Pivots given to lu_solve must all be .*{words}"
        ):
            kael.linalg.lu_solve(LU, kael.tensor(bad, dtype=kael.int32), kb)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("unit", [False, True])
def test_solve_triangular_matches_torch(dtype, upper, left, unit):
    k, t = matrix_pair(_well_conditioned(2, 4, 4), dtype)  # both triangles full: only one is read
    kb, tb = matrix_pair(RNG.standard_normal((2, 4, 4)), dtype)
    got = kael.linalg.solve_triangular(k, kb, upper=upper, left=left, unitriangular=unit)
    want = torch.linalg.solve_triangular(t, tb, upper=upper, left=left, unitriangular=unit)
    close_to_torch(got, want, TOL[dtype])


@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize(
    "a_dtype, b_dtype",
    [("float64", "float32"), ("float32", "float64"), ("float32", "int64"), ("float64", "bool"), ("float32", "float16")],
)  # fmt: skip
def test_solve_triangular_converts_b_to_the_dtype_of_a_as_torch(a_dtype, b_dtype, left):
    """torch copies B into a result of A's dtype: a float64 A promotes a float32 B, a
    float32 A rounds a float64 one, and an integer or bool B is taken."""
    a = _well_conditioned(2, 3, 3)
    b = RNG.standard_normal((3, 3)) * 10 + 0.1
    kA, tA = kael.tensor(a).to(getattr(kael, a_dtype)), torch.tensor(a).to(getattr(torch, a_dtype))
    kB, tB = kael.tensor(b).to(getattr(kael, b_dtype)), torch.tensor(b).to(getattr(torch, b_dtype))
    got = kael.linalg.solve_triangular(kA, kB, upper=True, left=left)
    want = torch.linalg.solve_triangular(tA, tB, upper=True, left=left)
    close_to_torch(got, want, TOL[getattr(kael, a_dtype)])


@pytest.mark.parametrize("dtype", ["int64", "float16", "bool"])
def test_solve_triangular_refuses_an_a_torch_has_no_kernel_for(dtype):
    with pytest.raises(NotImplementedError, match="triangular_solve_cpu"):
        torch.linalg.solve_triangular(torch.eye(2).to(getattr(torch, dtype)), torch.ones(2, 1), upper=True)  # fmt: skip
    with pytest.raises(kael.TypeError, match=f"solve_triangular: .*Got {dtype}"):
        kael.linalg.solve_triangular(kael.eye(2, dtype=getattr(kael, dtype)), kael.ones(2, 1), upper=True)  # fmt: skip


def _two_matrix_calls(lib, first, second):
    """Each solve taking two matrices, on `first` (A, LU or L) and `second` (B) of
    torch (`lib` torch) or kael."""
    lu, pivots = lib.linalg.lu_factor(lib.eye(2, dtype=lib.float64))
    return {
        "solve": lambda: lib.linalg.solve(first, second),
        "solve_ex": lambda: lib.linalg.solve_ex(first, second),
        "lstsq": lambda: lib.linalg.lstsq(first, second),
        "lu_solve": lambda: lib.linalg.lu_solve(lu.to(first.dtype), pivots, second),
        "cholesky_solve": lambda: lib.cholesky_solve(second, first),
        "triangular_solve": lambda: lib.triangular_solve(second, first),
    }


@pytest.mark.parametrize(
    "name", ["solve", "solve_ex", "lstsq", "lu_solve", "cholesky_solve", "triangular_solve"]
)
@pytest.mark.parametrize("first, second", [("float64", "float32"), ("float32", "float64")])
def test_solves_of_two_matrices_refuse_mixed_float_dtypes_as_torch(name, first, second):
    """Only solve_triangular converts B: torch's other solves require one dtype."""
    t = _two_matrix_calls(torch, torch.eye(2, dtype=getattr(torch, first)), torch.ones(2, 1, dtype=getattr(torch, second)))  # fmt: skip
    k = _two_matrix_calls(kael, kael.eye(2, dtype=getattr(kael, first)), kael.ones(2, 1, dtype=getattr(kael, second)))  # fmt: skip
    with pytest.raises(RuntimeError, match="same dtype"):
        t[name]()
    with pytest.raises(kael.TypeError, match=f"same dtype.*{first}.*{second}|same dtype.*{second}.*{first}"):  # fmt: skip
        k[name]()


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_cholesky_matches_torch(dtype, layout):
    k, t = matrix_pair(_spd(2, 6, 6), dtype, layout)
    tol = TOL[dtype]
    close_to_torch(kael.linalg.cholesky(k), torch.linalg.cholesky(t), tol)
    close_to_torch(kael.linalg.cholesky(k, upper=True), torch.linalg.cholesky(t, upper=True), tol)
    close_to_torch(k.cholesky(), torch.linalg.cholesky(t), tol)  # torch.cholesky warns
    kb, tb = matrix_pair(RNG.standard_normal((6, 2)), dtype)
    L, tL = kael.linalg.cholesky(k), torch.linalg.cholesky(t)
    close_to_torch(kael.cholesky_solve(kb, L), torch.cholesky_solve(tb, tL), tol)
    U, tU = L.mT, tL.mT
    close_to_torch(
        kael.cholesky_solve(kb, U, upper=True), torch.cholesky_solve(tb, tU, upper=True), tol
    )


def test_cholesky_reads_only_the_lower_triangle():
    a = _spd(5, 5)
    garbage = a + np.triu(np.full((5, 5), 1e9), 1)
    got = kael.linalg.cholesky(kael.tensor(garbage))
    close_to_torch(got, torch.linalg.cholesky(torch.tensor(a)), 1e-10)


@pytest.mark.parametrize("shape", [(0, 0), (3, 0, 0), (0, 4, 4)])
def test_empty_matrices_match_torch(shape):
    k, t = kael.zeros(shape, dtype=kael.float64), torch.zeros(shape, dtype=torch.float64)
    close_to_torch(kael.linalg.det(k), torch.linalg.det(t), 0)
    close_to_torch(kael.linalg.inv(k), torch.linalg.inv(t), 0)
    close_to_torch(kael.linalg.cholesky(k), torch.linalg.cholesky(t), 0)
    close_to_torch(tuple(kael.linalg.slogdet(k)), tuple(torch.linalg.slogdet(t)), 0)
    kb, tb = (
        kael.zeros((*shape[:-1], 2), dtype=kael.float64),
        torch.zeros((*shape[:-1], 2), dtype=torch.float64),
    )
    close_to_torch(kael.linalg.solve(k, kb), torch.linalg.solve(t, tb), 0)


@pytest.mark.parametrize("dtype", [kael.float32, kael.float64])
def test_slogdet_writes_its_out_pair_as_torch(dtype):
    a = np.random.default_rng(4).standard_normal((2, 4, 4))
    k, t = matrix_pair(a, dtype)
    outs = (kael.zeros(2, dtype=dtype), kael.zeros(2, dtype=dtype))
    touts = (torch.zeros(2, dtype=t.dtype), torch.zeros(2, dtype=t.dtype))
    got = kael.linalg.slogdet(k, out=outs)
    torch.linalg.slogdet(t, out=touts)
    assert got[0] is outs[0] and got[1] is outs[1]
    close_to_torch(outs, touts, 1e-5 if dtype is kael.float32 else 1e-12)
    with pytest.raises(kael.TypeError, match="out must be a tuple of 2"):
        kael.linalg.slogdet(k, out=outs[0])
    with pytest.raises(kael.TypeError, match="out has dtype int64 but the result has dtype"):
        kael.linalg.slogdet(k, out=(kael.zeros(2, dtype=kael.int64), outs[1]))


def test_singular_det_is_zero_and_slogdet_minus_infinity():
    a = np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 0.0, 1.0]])
    k, t = kael.tensor(a), torch.tensor(a)
    close_to_torch(kael.linalg.det(k), torch.linalg.det(t), 1e-12)
    sign, logabs = kael.linalg.slogdet(k)
    assert sign.item() == 0 and logabs.item() == -np.inf


def test_det_sign_follows_the_row_interchanges():
    perm = np.eye(4)[[1, 0, 3, 2]]  # two swaps: +1
    odd = np.eye(4)[[1, 2, 0, 3]] * 2  # a 3-cycle (+1) times 2^4
    for a in (perm, odd, np.eye(4)[[3, 0, 1, 2]]):
        close_to_torch(kael.linalg.det(kael.tensor(a)), torch.linalg.det(torch.tensor(a)), 0)


def test_singular_inputs_raise_linalg_error_with_torch_messages():
    singular = kael.zeros(3, 3)
    with pytest.raises(kael.linalg.LinAlgError, match="diagonal element 1 is zero"):
        kael.linalg.inv(singular)
    with pytest.raises(
        kael.linalg.LinAlgError, match=r"\(Batch element 1\): The diagonal element 2"
    ):
        kael.linalg.inv(kael.tensor([[[1.0, 0], [0, 1]], [[1.0, 1], [1, 1]]]))
    with pytest.raises(kael.linalg.LinAlgError, match="input matrix is singular"):
        kael.linalg.solve(singular, kael.ones(3))
    with pytest.raises(kael.linalg.LinAlgError, match="U\\[1,1\\] is zero"):
        kael.linalg.lu_factor(singular)
    assert isinstance(kael.linalg.LinAlgError("x"), RuntimeError)
    x, info = kael.linalg.inv_ex(singular)
    assert info.item() == 1 and info.dtype is kael.int32
    with pytest.raises(kael.linalg.LinAlgError):
        kael.linalg.inv_ex(singular, check_errors=True)


def test_not_positive_definite_names_the_leading_minor():
    a = kael.tensor([[4.0, 2, 0], [2, 1, 0], [0, 0, 1]])  # the 2x2 minor is 0
    with pytest.raises(kael.linalg.LinAlgError, match="leading minor of order 2 is not positive"):
        kael.linalg.cholesky(a)
    L, info = kael.linalg.cholesky_ex(a)
    assert info.item() == torch.linalg.cholesky_ex(torch.tensor(a.numpy())).info.item() == 2
    nan = kael.tensor([[float("nan"), 0.0], [0.0, 1.0]])
    assert kael.linalg.cholesky_ex(nan).info.item() == 1


def test_nan_input_propagates_through_solve_and_det():
    a = _well_conditioned(3, 3)
    a[1, 1] = np.nan
    k, t = kael.tensor(a), torch.tensor(a)
    close_to_torch(kael.linalg.det(k), torch.linalg.det(t), 0, equal_nan=True)
    assert np.isnan(kael.linalg.inv(k).numpy()).any()


@pytest.mark.parametrize(
    "call, error, message",
    [
        (lambda: kael.linalg.inv(kael.zeros(3)), kael.ValueError, "at least 2 dimensions"),
        (lambda: kael.linalg.inv(kael.zeros(3, 4)), kael.ValueError, "3 by 4 matrices"),
        (lambda: kael.linalg.det(kael.zeros(2, 3)), kael.ValueError, "2 by 3 matrices"),
        (lambda: kael.linalg.inv(kael.zeros(3, 3, dtype=kael.int64)), kael.TypeError, "int64"),
        (lambda: kael.linalg.inv(kael.zeros(3, 3, dtype=kael.float16)), kael.TypeError, "Low precision"),
        (lambda: kael.linalg.cholesky(kael.zeros(2, 2, dtype=kael.bool)), kael.TypeError, "bool"),
        (lambda: kael.linalg.solve(kael.eye(3), kael.ones(3, dtype=kael.float64)), kael.TypeError, "float32 and B of type"),
        (lambda: kael.linalg.solve(kael.eye(3), kael.ones(4)), kael.ValueError, r"3x3 and 4x1"),
        (lambda: kael.linalg.solve(kael.eye(3).expand(2, 3, 3), kael.ones(3, 3, 2)), kael.ValueError, "cannot be broadcast"),
        (lambda: kael.linalg.solve_triangular(kael.eye(3), kael.ones(3), upper=True), kael.ValueError, "B must have at least 2"),
        (lambda: kael.linalg.inv([[1.0]]), kael.TypeError, "must be a Tensor, got list"),
        (lambda: kael.linalg.lu_solve(kael.eye(2), kael.ones(2), kael.ones(2, 1)), kael.ValueError, "int32"),
        (lambda: kael.linalg.cholesky(kael.eye(2), upper=1), kael.TypeError, "upper must be a bool"),
    ],
)  # fmt: skip
def test_bad_inputs_raise_typed_errors(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_out_argument_is_filled_and_checked():
    a = kael.tensor(_well_conditioned(3, 3))
    out = kael.empty(3, 3, dtype=kael.float64)
    assert kael.linalg.inv(a, out=out) is out
    close_to_torch(out, torch.linalg.inv(torch.tensor(a.numpy())), 1e-12)
    empty = kael.empty(0, dtype=kael.float64)  # resized as torch's resize_output: silently
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert kael.linalg.inv(a, out=empty) is empty and empty.shape == (3, 3)
    small = kael.empty(2, 2, dtype=kael.float64)  # with elements: torch's warning
    with pytest.warns(UserWarning, match=r"resized since it had shape \[2, 2\]"):
        kael.linalg.inv(a, out=small)
    close_to_torch(small, torch.linalg.inv(torch.tensor(a.numpy())), 1e-12)
    with pytest.raises(kael.TypeError, match="out has dtype float32 but the result has dtype"):
        kael.linalg.inv(a, out=kael.empty(3, 3))


_OUT_FORMS = {
    "inv": lambda L, a, b: (L.linalg.inv, (a,)),
    "solve": lambda L, a, b: (L.linalg.solve, (a, b)),
    "cholesky": lambda L, a, b: (L.linalg.cholesky, (a @ a.mT,)),
    "solve_triangular": lambda L, a, b: (
        lambda *args, out: L.linalg.solve_triangular(*args, upper=True, out=out),
        (a.triu(), b),
    ),
    "pinv": lambda L, a, b: (L.linalg.pinv, (a,)),
}


@pytest.mark.parametrize("name", list(_OUT_FORMS))
def test_a_resized_out_takes_the_results_layout_and_a_sized_one_keeps_its_own(name):
    """torch lays out a resized out as a new result (LAPACK's column-major factors)."""
    a, b = _well_conditioned(4, 4), np.arange(8.0).reshape(4, 2)
    for shape in ((0,), None):
        strides = []
        for L in (kael, torch):
            fn, args = _OUT_FORMS[name](L, L.tensor(a), L.tensor(b))
            out = L.empty(shape or tuple(fn(*args, out=None).shape), dtype=L.float64)
            fn(*args, out=out)
            strides.append(out.stride())
        assert strides[0] == strides[1], (name, shape)


def test_batched_factorizations_run_over_threads_like_one_by_one():
    a = _well_conditioned(64, 16, 16)
    whole = kael.linalg.inv(kael.tensor(a)).numpy()
    one = np.stack([kael.linalg.inv(kael.tensor(m)).numpy() for m in a[:4]])
    np.testing.assert_array_equal(whole[:4], one)


def test_linalg_runs_inside_compile():
    @kael.compile
    def f(a, b):
        return kael.linalg.solve(a * 2, b) + kael.linalg.det(a).sum()

    a, b = _well_conditioned(4, 4), RNG.standard_normal((4, 2))
    want = torch.linalg.solve(torch.tensor(a) * 2, torch.tensor(b)) + torch.linalg.det(
        torch.tensor(a)
    )
    for _ in range(2):
        close_to_torch(f(kael.tensor(a), kael.tensor(b)), want, 1e-10)


@pytest.mark.gpu
def test_linalg_on_cuda_copies_through_the_host():
    a = _well_conditioned(4, 4)
    k = kael.tensor(a).cuda()
    got = kael.linalg.inv(k)
    assert str(got.device) == "cuda:0"
    close_to_torch(got.cpu(), torch.linalg.inv(torch.tensor(a)), 1e-10)
    sign, logabs = kael.linalg.slogdet(k)
    assert str(sign.device) == "cuda:0" and str(logabs.device) == "cuda:0"


@pytest.mark.gpu
def test_out_on_cuda_is_the_tensor_filled():
    a = _well_conditioned(4, 4)
    out = kael.empty(4, 4, dtype=kael.float64).cuda()
    assert kael.linalg.inv(kael.tensor(a).cuda(), out=out) is out
    close_to_torch(out.cpu(), torch.linalg.inv(torch.tensor(a)), 1e-10)
    values, vectors = kael.empty(4, dtype=kael.float64).cuda(), out
    spd = kael.tensor(_spd(4, 4)).cuda()
    got = kael.linalg.eigh(spd, out=(values, vectors))
    assert got.eigenvalues is values and got.eigenvectors is vectors


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_one_large_matrix_takes_the_blocked_path_and_matches_torch(dtype):
    n = blocked.MIN_BLOCKED + blocked.BLOCK + 7  # panels, and a ragged last one
    k, t = matrix_pair(RNG.standard_normal((n, n)), dtype)  # an unsymmetric, pivoting matrix
    kb, tb = matrix_pair(RNG.standard_normal((n, 3)), dtype)
    tol = 50 * TOL[dtype]
    LU, piv = kael.linalg.lu_factor(k)
    tLU, tpiv = torch.linalg.lu_factor(t)
    close_to_torch(piv, tpiv, 0)
    close_to_torch(LU, tLU, tol)
    close_to_torch(kael.linalg.solve(k, kb), torch.linalg.solve(t, tb), tol)
    close_to_torch(
        kael.linalg.lu_solve(LU, piv, kb, adjoint=True),
        torch.linalg.lu_solve(tLU, tpiv, tb, adjoint=True),
        tol,
    )
    close_to_torch(kael.linalg.inv(k), torch.linalg.inv(t), tol)
    close_to_torch(tuple(kael.linalg.slogdet(k)), tuple(torch.linalg.slogdet(t)), tol)
    kt, tt = matrix_pair(_well_conditioned(n, n), dtype)  # a random triangle overflows
    for upper in (False, True):
        got = kael.linalg.solve_triangular(kt, kb, upper=upper)
        close_to_torch(got, torch.linalg.solve_triangular(tt, tb, upper=upper), tol)
    ks, ts = matrix_pair(_spd(n, n), dtype)
    close_to_torch(kael.linalg.cholesky(ks), torch.linalg.cholesky(ts), tol)
    # a batch of one, and rows of 1 KiB multiples (the padded working copy)
    close_to_torch(kael.linalg.inv(k[None]), torch.linalg.inv(t[None]), tol)
    kp, tp = matrix_pair(_well_conditioned(256, 256), dtype)
    close_to_torch(
        kael.linalg.solve(kp[None], kp[:, :5]), torch.linalg.solve(tp[None], tp[:, :5]), tol
    )
    close_to_torch(kael.linalg.inv(kp), torch.linalg.inv(tp), tol)
    close_to_torch(kael.linalg.det(kp), torch.linalg.det(tp), tol)


def test_blocked_paths_report_late_failures_as_lapack_does():
    n = blocked.MIN_BLOCKED + 2 * blocked.BLOCK
    a = _well_conditioned(n, n)
    a[:, 150] = 0  # singular: a zero pivot in the third panel
    k, t = kael.tensor(a), torch.tensor(a)
    assert kael.linalg.lu_factor_ex(k).info.item() == torch.linalg.lu_factor_ex(t).info.item() > 0
    spd = _spd(n, n)
    spd[200, 200] = -1e6  # the leading minor of order 201 is the first indefinite one
    with pytest.raises(kael.linalg.LinAlgError, match="order 201 is not positive"):
        kael.linalg.cholesky(kael.tensor(spd))
    assert torch.linalg.cholesky_ex(torch.tensor(spd)).info.item() == 201


@pytest.mark.parametrize("op", ["lu_solve", "lu_unpack"])
def test_pivots_changed_after_the_check_swap_no_row_outside_the_matrix(monkeypatch, op):
    # the pivots are range-checked, then copied (a second read) for the permute kernel:
    # another thread may change them between, and a row past the block must be left alone
    from kael.frontend import factorizations

    a = kael.tensor([[1.0, 2, 0], [3, 1, 1], [0, 1, 2]], dtype=kael.float64)
    lu, pivots = kael.linalg.lu_factor(a)
    shared = pivots.numpy()
    check = factorizations.pivot_range

    def meddling(*args):
        checked = check(*args)
        shared[:] = 1 << 30
        return checked

    monkeypatch.setattr(factorizations, "pivot_range", meddling)  # linalg_extras's too
    if op == "lu_solve":
        out = kael.linalg.lu_solve(lu, pivots, kael.ones(3, 1, dtype=kael.float64))
        assert out.shape == (3, 1)
    else:
        p, low, up = kael.lu_unpack(lu, pivots)
        assert p.shape == low.shape == up.shape == (3, 3)


@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("n", [2, 3, 200])  # 200: the blocked path
def test_a_failed_cholesky_factor_has_its_other_triangle_zero_as_torchs(n, upper):
    a = -np.eye(n) + 0.1
    a[0, 0] = 4.0 if n > 2 else -4.0  # fails at the first minor (n = 2) or a later one
    k = kael.linalg.cholesky_ex(kael.tensor(a), upper=upper)
    t = torch.linalg.cholesky_ex(torch.tensor(a), upper=upper)
    assert k.info.item() == t.info.item() > 0
    other = (lambda m: m.tril(-1)) if upper else (lambda m: m.triu(1))
    assert other(k.L).abs().max().item() == 0 == other(t.L).abs().max().item()
    first = t.info.item() - 1  # the leading block before the failing minor agrees
    np.testing.assert_allclose(k.L.numpy()[:first, :first], t.L.numpy()[:first, :first])


SINGULAR = {  # matrices LAPACK's unblocked LU meets an exactly zero pivot in
    "1..9 float32": ([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]], "float32"),
    "equal columns float64": ([[0.1, 0.1], [0.3, 0.3]], "float64"),
    "rank 1 float64": ((np.outer([1.0, 2.0, 3.0, 4.0], [3.0, 1.0, 2.0, 5.0])).tolist(), "float64"),
}


def _getf2_zero_pivot(rows, scalar) -> int:
    """LAPACK's unblocked LU (getf2: partial pivoting, the column scaled by the pivot's
    reciprocal, each product rounded in `scalar`'s type, never fused): the 1-based column of
    its first exactly zero pivot, or 0. torch's MKL answer depends on the CPU it dispatches
    for (on a Zen 4 its fused update leaves a pivot of a rounding's size)."""
    a = [[scalar(v) for v in row] for row in rows]
    n = len(a)
    for j in range(n):
        p = max(range(j, n), key=lambda i: abs(a[i][j]))  # the first largest, as idamax
        if a[p][j] == 0:
            return j + 1
        a[j], a[p] = a[p], a[j]
        reciprocal = scalar(1) / a[j][j]
        for i in range(j + 1, n):
            a[i][j] = a[i][j] * reciprocal
            for c in range(j + 1, n):
                a[i][c] = a[i][c] - a[i][j] * a[j][c]
    return 0


@pytest.mark.parametrize("name", sorted(SINGULAR))
def test_an_exactly_singular_matrix_meets_a_zero_pivot_as_lapacks_lu(name):
    """The LU rounds each product as LAPACK's getf2 does (no fused multiply-add): det is 0,
    info names the zero pivot and inv refuses, where a fused update left a pivot of a
    rounding's size (det 1e-16, an inverse of 1e17)."""
    rows, dtype = SINGULAR[name]
    k = kael.tensor(rows, dtype=getattr(kael, dtype))
    zero_pivot = _getf2_zero_pivot(rows, getattr(np, dtype))
    assert zero_pivot > 0
    assert kael.linalg.det(k).item() == 0.0
    assert kael.linalg.inv_ex(k).info.item() == zero_pivot
    assert kael.linalg.lu_factor_ex(k).info.item() == zero_pivot
    assert kael.linalg.slogdet(k).logabsdet.item() == -math.inf
    with pytest.raises(kael.linalg.LinAlgError):
        kael.linalg.inv(k)


@pytest.mark.parametrize("rows", [[[4.0, 100.0], [1.0, 5.0]], [[4.0, 1.0], [100.0, 5.0]]])
def test_cholesky_upper_reads_the_upper_triangle_as_torch(rows):
    """LAPACK's potrf with uplo 'U' reads A's upper triangle: a matrix whose triangles
    differ gives U from the upper one (and the failing minor's info from it)."""
    got = kael.linalg.cholesky_ex(kael.tensor(rows), upper=True)
    want = torch.linalg.cholesky_ex(torch.tensor(rows), upper=True)
    assert got.info.item() == want.info.item()
    if not want.info.item():
        np.testing.assert_allclose(got.L.numpy(), want.L.numpy(), rtol=1e-6)


def test_solve_ex_info_has_the_batch_of_a_as_torch():
    """B broadcasts A's batch; info names A's own matrices."""
    singular = [[[1.0, 0.0], [0.0, 1.0]], [[0.0, 0.0], [0.0, 0.0]]]
    for a_batch, b_shape in (((), (4, 3, 2)), ((2, 1), (2, 3, 2, 1))):
        A = np.eye(3) * 2 if not a_batch else np.array(singular)[:, None]
        B = np.ones(b_shape if not a_batch else b_shape)
        got = kael.linalg.solve_ex(kael.tensor(A), kael.tensor(B)).info
        want = torch.linalg.solve_ex(torch.tensor(A), torch.tensor(B)).info
        assert got.shape == tuple(want.shape) and got.tolist() == want.tolist()


def test_vecdot_refuses_integer_vectors_as_torch():
    with pytest.raises(RuntimeError, match="floating point or complex"):
        torch.linalg.vecdot(torch.tensor([1, 2, 3]), torch.tensor([1, 2, 3]))
    with pytest.raises(
        kael.TypeError, match="floating point or complex tensor as input. Got int64"
    ):
        kael.linalg.vecdot(kael.tensor([1, 2, 3]), kael.tensor([1, 2, 3]))


# ---- result layouts: column-major, as LAPACK writes torch's ---------------------------------

_RNG = np.random.default_rng(21)
_SQUARE = _RNG.standard_normal((4, 4))
_SPD = _SQUARE @ _SQUARE.T + 4 * np.eye(4)
_TALL, _WIDE, _RHS = (_RNG.standard_normal(s) for s in ((6, 3), (3, 6), (4, 3)))
_BATCH = _RNG.standard_normal((2, 4, 4))
LAYOUT_CASES = {
    "inv": lambda L, t: L.linalg.inv(t(_SQUARE)),
    "inv batched": lambda L, t: L.linalg.inv(t(_BATCH)),
    "inv_ex 1x1 batch": lambda L, t: L.linalg.inv_ex(t(_BATCH[:, :1, :1]))[0],
    "solve": lambda L, t: L.linalg.solve(t(_SQUARE), t(_RHS)),
    "solve right": lambda L, t: L.linalg.solve(t(_SQUARE), t(_RHS.T), left=False),
    "solve broadcast": lambda L, t: L.linalg.solve(t(_SQUARE), t(_BATCH[..., :1])),
    "solve_ex": lambda L, t: L.linalg.solve_ex(t(_SQUARE), t(_RHS))[0],
    "cholesky": lambda L, t: L.linalg.cholesky(t(_SPD)),
    "cholesky upper": lambda L, t: L.linalg.cholesky(t(_SPD), upper=True),
    "cholesky empty batch": lambda L, t: L.linalg.cholesky(t(np.zeros((0, 3, 3)) + np.eye(3))),
    "cholesky_solve": lambda L, t: L.cholesky_solve(t(_RHS), t(np.linalg.cholesky(_SPD))),
    "cholesky_inverse": lambda L, t: L.cholesky_inverse(t(np.linalg.cholesky(_SPD))),
    "qr": lambda L, t: L.linalg.qr(t(_TALL)),
    "qr complete": lambda L, t: L.linalg.qr(t(_TALL), mode="complete"),
    "qr wide": lambda L, t: L.linalg.qr(t(_WIDE)),
    "householder_product": lambda L, t: L.linalg.householder_product(t(_TALL), t(_TALL[0])),
    "svd": lambda L, t: L.linalg.svd(t(_TALL), full_matrices=False),
    "svd full": lambda L, t: L.linalg.svd(t(_WIDE)),
    "torch.svd": lambda L, t: L.svd(t(_TALL)),
    "lstsq tall": lambda L, t: (L.linalg.lstsq(t(_TALL), t(_TALL[:, :2])).solution,),
    "lstsq wide": lambda L, t: (L.linalg.lstsq(t(_WIDE), t(_WIDE[:, :2])).solution,),
    "lu_factor": lambda L, t: L.linalg.lu_factor(t(_WIDE)),
    "lu": lambda L, t: L.linalg.lu(t(_BATCH)),
    "lu_solve": lambda L, t: L.linalg.lu_solve(*L.linalg.lu_factor(t(_SQUARE)), t(_RHS)),
    "lu_solve right": lambda L, t: L.linalg.lu_solve(
        *L.linalg.lu_factor(t(_SQUARE)), t(_RHS.T), left=False
    ),
    "solve_triangular right": lambda L, t: L.linalg.solve_triangular(
        t(np.triu(_SQUARE) + 4 * np.eye(4)), t(_RHS.T), upper=True, left=False
    ),
    "tensorinv": lambda L, t: L.linalg.tensorinv(t(_SQUARE.reshape(4, 2, 2)), ind=1),
}


@pytest.mark.parametrize("case", list(LAYOUT_CASES))
def test_results_are_laid_out_column_major_as_lapack_writes_torchs(case):
    def results(lib, make):
        out = LAYOUT_CASES[case](lib, make)
        return out if isinstance(out, tuple) else (out,)

    want = results(torch, lambda a: torch.from_numpy(np.ascontiguousarray(a)))
    got = results(kael, lambda a: kael.tensor(np.ascontiguousarray(a)))
    for k, t in zip(got, want, strict=True):
        assert k.shape == tuple(t.shape) and k.stride() == t.stride(), (k.stride(), t.stride())
        if case not in ("svd", "svd full", "torch.svd", "qr", "qr complete", "qr wide"):
            np.testing.assert_allclose(k.numpy(), t.numpy(), rtol=1e-9, atol=1e-9)
