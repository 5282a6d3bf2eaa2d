"""torch.linalg's singular value family: svd, svdvals, pinv, matrix_rank, lstsq, and the
torch-level svd (U, S, V) and pinverse.

Every one is the SVD of codegen/cpu/svd.py (one-sided Jacobi, one matrix per work item)
on a contiguous copy of the batch: of A itself when it is wide or square, of A^T when
it is tall, so the kernel's rotations always combine contiguous rows. The kernel gives
X0 = G^T diag(S) W; which of G and W is U and which Vh follows from the transpose. One
large finite matrix is first given nearly orthogonal rows (R of its QR when rectangular,
turned by the eigenvectors of R R^T): far fewer sweeps (_preconditioned), each row with
its reference norm (its rounding over eps, _references) below which the kernel zeroes
it. The rest (tolerances, pseudo-inverses, least squares) is kael's own ops. lstsq
solves by the SVD (the minimum-norm solution, as every driver gives up to rounding) and
fills each field as PyTorch does for the driver named.
"""

from __future__ import annotations

from typing import NamedTuple

from kael.codegen.cpu import svd as kernel
from kael.frontend import elementwise as ew
from kael.frontend import factories, moments, orthogonal, spectral
from kael.frontend.elementwise import broadcast_shapes
from kael.frontend.factorizations import (
    lapack_layout,
    matrices,
    on_host,
    raise_for,
    same_dtype,
    square,
    vector_rhs,
    working_copy,
)
from kael.frontend.outputs import bool_arg, copied_out, float_arg, tensor_arg
from kael.frontend.tensor import Tensor
from kael.runtime.dtypes import float32, int64
from kael.runtime.errors import LinAlgError, ValueError
from kael.runtime.tensor_impl import shape_numel


class SVD(NamedTuple):
    U: Tensor
    S: Tensor
    Vh: Tensor


class TorchSVD(NamedTuple):
    """torch.svd's result: V, not Vh."""

    U: Tensor
    S: Tensor
    V: Tensor


class Lstsq(NamedTuple):
    solution: Tensor
    residuals: Tensor
    rank: Tensor
    singular_values: Tensor


DRIVERS = ("gels", "gelsy", "gelsd", "gelss")


def _eps(x: Tensor) -> float:
    return 2.0**-52 if x.dtype.itemsize == 8 else 2.0**-23


def _failed(code: int) -> str:
    if code == kernel.NAN:
        return (
            "The algorithm failed to converge because the input matrix contained non-finite values."
        )
    return (
        "The algorithm failed to converge because the input matrix is ill-conditioned or has "
        f"too many repeated singular values (error code: {code})."
    )


def _decompose(A: Tensor, vectors: bool, full: bool) -> SVD | Tensor:
    """A's SVD (U, S, Vh), or S alone; A a batch of float matrices. A NaN (or no
    convergence) raises LinAlgError; an infinity gives NaN, as PyTorch's LAPACK does."""
    m, n = A.shape[-2:]
    batch = tuple(A.shape[:-2])
    k = min(m, n)
    if (
        shape_numel(batch) == 1
        and k >= kernel.PARALLEL
        and (m == n or not (vectors and full))
        and bool(A.isfinite().all())
    ):
        lead = (None,) * len(batch)  # unit batch dims: the matrix's results, as views
        result = _preconditioned(A.reshape(m, n), vectors)
        return result[lead] if not vectors else SVD(*(t[lead] for t in result))
    if A.dtype is float32:  # swept in float64, rounded once (see _swept)
        result = _swept(A.double(), vectors, full, FLOAT32_ROUNDING)
        return result.float() if not vectors else SVD(*(t.float() for t in result))
    return _swept(A, vectors, full)


# float32's eps over float64's: a float32 matrix swept in float64 zeroes the rows its own
# rounding leaves, as the float32 sweeps do (references this many times its rows' norms)
FLOAT32_ROUNDING = 2.0**29


def _swept(A: Tensor, vectors: bool, full: bool, rounding: float = 1.0) -> SVD | Tensor:
    """_decompose by the sweeps on A itself (A^T when tall). Their convergence test is
    orthogonality to eps sqrt(cols): in float32 that left U's columns, and a least-squares
    solution, several times further off than LAPACK's (50 x 50: |U^T U - I| 7.9e-6 against
    7e-7; lstsq of 500 x 8 1.7e-5 against 3.6e-6), so _decompose sweeps float32 matrices in
    float64, each row's reference norm `rounding` times its norm (a large one is
    preconditioned instead: within 2x of LAPACK as it is)."""
    tall = A.shape[-2] > A.shape[-1]
    x0 = A.mT if tall else A
    references = None if rounding == 1.0 else moments.norm(x0, 2, -1, False) * rounding
    result = _jacobi(x0, vectors, full, references)
    if not vectors:
        return result
    g, s, x = result
    left, right = (_polished(x.mT), _polished(g.mT)) if tall else (_polished(g.mT), _polished(x.mT))
    return SVD(left, s, right.mT)


def _polished(Q: Tensor) -> Tensor:
    """Q's columns made orthonormal to rounding by one Newton-Schulz step, Q (3I - Q^T Q) / 2
    (the error squares): the sweeps' rotations accumulate rounding in G, and W's rows are
    orthogonal only to the test's eps sqrt(cols) (127 x 127 float64: |U^T U - I| 148 eps ->
    5, LAPACK's 10; A's reconstruction 472 eps -> 236); two k x k products, small beside
    the sweeps."""
    k = Q.shape[-1]
    eye = factories.eye(k, dtype=Q.dtype)
    return Q @ (eye * 1.5 - (Q.mT @ Q) * 0.5)


def _preconditioned(A: Tensor, vectors: bool) -> SVD | Tensor:
    """The SVD of one large finite matrix by the sweeps on X = P^T R (_turned), where R is
    A (square), or R of A = Q R (A^T = Q R when wide): X's rows are orthogonal up to
    rounding, so the sweeps mostly confirm it (two for a well-conditioned R, against seven
    on R alone). R = P X = (P G^T) S W: U = Q P G^T, Vh = W (transposed when wide)."""
    m, n = A.shape[-2:]
    wide = m < n
    Q = None
    if m == n:
        R, rounding = A, moments.norm(A, 2, -1, False)  # A's rows are exact
    else:
        M = A.mT if wide else A
        Q, R = orthogonal.qr(M, "reduced" if vectors else "r")
        rounding = _triangular_references(M)
    P, X = _turned(R)
    result = _jacobi(X, vectors, False, _references(P, rounding))
    if not vectors:
        return result
    g, s, x = result
    left = P @ g.mT if Q is None else Q @ (P @ g.mT)
    return SVD(x.mT, s, left.mT) if wide else SVD(left, s, x)


def _turned(R: Tensor) -> tuple[Tensor, Tensor]:
    """(P, X = P^T R): P orthogonal, made of the eigenvectors of R R^T, X's rows by falling
    norm and orthogonal up to rounding. The Gram's rounding (eps times its largest entry)
    leaves the rows of squared norm below sqrt(eps) of the largest turned by an inexact
    basis: those are turned again among themselves, by their own Gram (formed to their
    own scale), until none is left. P only steers the sweeps: each Gram is formed from
    rows scaled by their largest magnitude (no overflow), and its rounding costs sweeps,
    never accuracy (a Gram eigh cannot settle leaves the rows as they are)."""
    k = R.shape[-2]
    floor = _eps(R) ** 0.5  # squared norms below sqrt(eps) of the largest: turned again
    P, X, start = None, R, 0
    while k - start >= 2:
        rows = X.narrow(-2, start, k - start)
        top = float(rows.abs().max())
        if not top:
            break
        scaled = rows / top
        try:
            w, V = spectral.eigh(scaled @ scaled.mT)
        except LinAlgError:  # a Gram too graded for eigh: the sweeps start from X as it is
            break
        w, V = w.flip(-1), V.flip(-1)  # by falling eigenvalue
        turned = V.mT @ rows
        if P is None:
            P, X = V, turned
        else:
            X.narrow(-2, start, k - start).copy_(turned)
            cols = P.narrow(-1, start, k - start)
            cols.copy_(cols @ V)
        small = int((w < float(w[0]) * floor).sum())
        start = k - small
    return (P if P is not None else factories.eye(k, dtype=R.dtype)), X


def _triangular_references(M: Tensor) -> Tensor:
    """The reference norms of the rows of R, M = Q R by Householder: its column j is M's
    to eps |m_j|, spread over R's rows up to j, so row i's rounding is eps times
    sqrt(sum_{j >= i} |m_j|^2). A rank-deficient M leaves its last rows that small; a
    column-graded M's rows of R are as graded as their references. (M's rows graded past
    eps sqrt(n) still lose their small values, as before: the smaller of these and
    sqrt(sum_t Q_ti^2 |M_t|^2) keeps them, but svdvals would form Q for it, 9.7 -> 15.6 ms
    at 1024 x 256 float32.)"""
    norms = moments.norm(M, 2, -2, False)
    top = float(norms.max()) if norms.numel() else 0.0
    if not top:
        return norms
    return (norms / top).square().flip(-1).cumsum(-1).flip(-1).sqrt() * top


def _references(P: Tensor, rounding: Tensor) -> Tensor:
    """The reference norms of the rows of X = P^T R, those of R's rows given (`rounding`):
    sqrt(sum_k P_ki^2 rounding_k^2), scaled by the largest (no square overflows). The
    kernel (codegen/cpu/svd.py) zeroes a row that ends below eps sqrt(n) of its reference:
    the turned rows of a rank-deficient R start there (without it they took 12 sweeps
    instead of 2 at 512 x 512, rank 100), while a small row of a graded R, turned with
    little mixing, keeps its singular value."""
    top = float(rounding.max()) if rounding.numel() else 0.0
    if not top:
        return rounding
    return (P.square().mT @ (rounding / top).square()).sqrt() * top


def _jacobi(
    x0: Tensor, vectors: bool, full: bool, references: Tensor | None = None
) -> tuple[Tensor, Tensor, Tensor] | Tensor:
    """The kernel on x0 [*, k, cols] (k <= cols): (G, S, W), or S alone (see codegen/cpu/svd.py),
    W completed to cols rows when `full`; `references` [*, k], the rows' reference norms
    (_references), else their own norms."""
    k, length = x0.shape[-2:]
    batch = tuple(x0.shape[:-2])
    rows = length if (vectors and full) else k
    if rows == k:
        x = working_copy(x0)
    else:
        x = factories.empty((*batch, rows, length), dtype=x0.dtype)
        x.narrow(-2, 0, k).copy_(x0)
    s = factories.empty((*batch, k), dtype=x0.dtype)
    g = factories.empty((*batch, k, k), dtype=x0.dtype) if vectors else s
    work = factories.empty((*batch, length + 1), dtype=x0.dtype)
    if references is not None:
        work.narrow(-1, 0, k).copy_(references)
    info = factories.zeros(batch, dtype=int64)
    count = shape_numel(batch)
    if count and length and (k or rows):
        kernel.svd(x._impl, g._impl, s._impl, work._impl, info._impl, k, length, rows, count,
                   vectors, references is not None)  # fmt: skip
        raise_for(ew.where(info.eq(kernel.INFINITE), 0, info), "linalg.svd", _failed)
    return (g, s, x) if vectors else s


def _no_driver(driver, op: str) -> None:
    if driver is not None:
        raise ValueError(
            f"torch.{op}: keyword argument `driver=` is only supported on CUDA inputs with "
            f"cuSOLVER backend (got driver={driver!r})."
        )


@on_host
def svd(A, full_matrices: bool = True, *, driver=None, out=None) -> SVD:
    """A = U diag(S) Vh: S descending (A's dtype), U and Vh with orthonormal columns and
    rows, square when `full_matrices` ([m, m] and [n, n]), else [m, k] and [k, n]."""
    op = "linalg.svd"
    A = matrices(A, op)
    _no_driver(driver, op)
    U, S, Vh = _decompose(A, True, bool_arg(full_matrices, op, "full_matrices"))
    result = SVD(lapack_layout(U), S, Vh)
    if out is not None:
        return SVD(*(copied_out(r, o, op) for r, o in zip(result, out, strict=True)))
    return result


@on_host
def svdvals(A, *, driver=None, out=None) -> Tensor:
    """A's singular values, descending (no singular vectors are formed)."""
    A = matrices(A, "linalg.svdvals")
    _no_driver(driver, "linalg.svdvals")
    return copied_out(_decompose(A, False, False), out, "linalg.svdvals")


def _tolerance_args(A: Tensor, atol, rtol, op: str) -> tuple[Tensor, Tensor]:
    """PyTorch's (atol, rtol) as tensors: atol 0 by default; rtol eps * max(m, n) by
    default, or 0 where an atol > 0 was given."""

    def as_tensor(value, what: str) -> Tensor:
        if isinstance(value, Tensor):
            return value.to(A.dtype)
        return factories.full((), float_arg(value, op, what), dtype=A.dtype)

    m, n = A.shape[-2:]
    default = factories.full((), _eps(A) * max(m, n), dtype=A.dtype)
    absolute = as_tensor(0.0 if atol is None else atol, "atol")
    if rtol is not None:
        relative = as_tensor(rtol, "rtol")
    elif atol is not None:
        relative = ew.where(absolute.gt(0), 0.0, default)
    else:
        relative = default
    return absolute, relative


def _above(S: Tensor, atol: Tensor, rtol: Tensor) -> Tensor:
    """Which singular values exceed max(atol, rtol * S_max) (each matrix its own S_max)."""
    largest = S.narrow(-1, 0, 1) if S.shape[-1] else S
    tol = ew.binary("maximum", atol.unsqueeze(-1), rtol.unsqueeze(-1) * largest)
    return S.gt(tol)


def _lower_symmetric(A: Tensor, op: str) -> Tensor:
    """The symmetric matrix of A's lower triangle (what eigh reads for hermitian=True); A must
    be square, as eigh's, unless it is empty (whose pseudo-inverse and rank need no triangle)."""
    if not A.numel():
        return A
    return square(A, op).tril() + A.tril(-1).mT


@on_host
def pinv(A, rcond=None, hermitian: bool = False, *, atol=None, rtol=None, out=None) -> Tensor:
    """The pseudo-inverse V diag(1/S) U^T, singular values at most max(atol, rtol * S_max)
    dropped (PyTorch's defaults); `hermitian` reads only the lower triangle; `rcond`: torch's
    older name for rtol (its other overload, pinv(A, rcond, hermitian))."""
    op = "linalg.pinv"
    A = matrices(A, op)
    if rcond is not None:
        if rtol is not None or atol is not None:
            raise ValueError(f"{op}: rcond is rtol's older name; give rcond or atol/rtol, not both")
        rtol = rcond
    if bool_arg(hermitian, op, "hermitian"):
        A = _lower_symmetric(A, op)
    U, S, Vh = _decompose(A, True, False)
    keep = _above(S, *_tolerance_args(A, atol, rtol, op))
    inverse = ew.where(keep, S.reciprocal(), 0.0)
    return copied_out((Vh.mT * inverse.unsqueeze(-2)) @ U.mT, out, op)


@on_host
def matrix_rank(A, *, atol=None, rtol=None, hermitian: bool = False, out=None) -> Tensor:
    """The number of singular values above max(atol, rtol * S_max), int64 per matrix."""
    op = "linalg.matrix_rank"
    A = matrices(A, op)
    if bool_arg(hermitian, op, "hermitian"):
        A = _lower_symmetric(A, op)
    S = _decompose(A, False, False)
    if not S.shape[-1]:
        return copied_out(factories.zeros(tuple(A.shape[:-2]), dtype=int64), out, op)
    rank = _above(S, *_tolerance_args(A, atol, rtol, op)).sum(-1)
    return copied_out(rank, out, op)


def _lstsq_shapes(A: Tensor, B: Tensor, op: str) -> tuple[bool, Tensor, tuple[int, ...]]:
    """PyTorch's lstsq shapes: whether B is a (batch of) vector(s) (vector_rhs: B's dims
    at most one fewer than A's), B as a batch of matrices [*, m, k], and the batch. As
    torch's, the batch broadcasts A's with B's leading A.ndim - 2 sizes too: a matrix B
    one dim short of A ([m, k] beside [1, m, n]) gives a batch of m solutions."""
    shapes = f"A {list(A.shape)} and B {list(B.shape)}"
    if B.ndim < 1:
        raise ValueError(f"torch.{op}: other must have at least 1 dimension, got {shapes}")
    if not 0 <= A.ndim - B.ndim <= 1:
        raise ValueError(
            f"torch.{op}: input.dim() must be greater or equal to other.dim() and "
            f"(input.dim() - other.dim()) <= 1, got {shapes}"
        )
    vector = vector_rhs(A, B)
    matrix = B.unsqueeze(-1) if vector else B
    if matrix.shape[-2] != A.shape[-2]:
        which = "-1" if vector else "-2"
        raise ValueError(
            f"torch.{op}: input.size(-2) should match other.size({which}), got {shapes}"
        )
    try:
        batch = broadcast_shapes(A.shape[:-2], B.shape[: A.ndim - 2], matrix.shape[:-2])
    except ValueError:
        raise ValueError(f"torch.{op}: the batch dims of {shapes} cannot be broadcast") from None
    return vector, matrix, tuple(batch)


@on_host
def lstsq(A, B, rcond=None, *, driver=None) -> Lstsq:
    """The minimum-norm X minimizing |A X - B| (by the SVD), with PyTorch's fields for the
    driver (default 'gelsy'): rank (not for 'gels') and singular values ('gelsd', 'gelss')
    of A's own batch, residuals when m > n and (for 'gelsd', 'gelss') every matrix has
    full rank; shapes by _lstsq_shapes."""
    op = "linalg.lstsq"
    A = matrices(A, op)
    B = tensor_arg(B, op, "B")
    same_dtype(A, B, op)
    driver = "gelsy" if driver is None else driver
    if driver not in DRIVERS:
        raise ValueError(
            f"torch.{op}: parameter `driver` should be one of (gels, gelsy, gelsd, gelss), "
            f"got {driver!r}"
        )
    vector, B, batch = _lstsq_shapes(A, B, op)
    m, n = A.shape[-2:]
    B = B.expand(*batch, m, B.shape[-1])
    U, S, Vh = _decompose(A, True, False)  # matmul broadcasts A's batch to B's
    cutoff = _eps(A) * max(m, n) if rcond is None or float_arg(rcond, op, "rcond") < 0 else rcond
    zero = factories.zeros((), dtype=A.dtype)
    keep = _above(S, zero, factories.full((), float(cutoff), dtype=A.dtype))
    rank = keep.sum(-1)
    inverse = ew.where(keep, S.reciprocal(), 0.0)
    X = Vh.mT @ (inverse.unsqueeze(-1) * (U.mT @ B))
    empty = factories.empty((0,), dtype=A.dtype)
    residuals = empty
    residual = m > n and driver != "gelsy"  # and full rank, asked (a host sync) only then
    if residual and (driver == "gels" or not rank.numel() or bool(rank.eq(n).all())):
        residuals = (A @ X - B).square().sum(-2)
    if not B.shape[-1]:  # PyTorch returns early: rank 0, no singular values
        rank, S = factories.zeros(tuple(A.shape[:-2]), dtype=int64), empty
    return Lstsq(
        X.squeeze(-1) if vector else lapack_layout(X, max(m, n)),  # torch's buffer of B's rows
        residuals,
        factories.empty((0,), dtype=int64) if driver == "gels" else rank,
        S if driver in ("gelsd", "gelss") else empty,
    )


@on_host
def torch_svd(input, some: bool = True, compute_uv: bool = True, *, out=None) -> TorchSVD:
    """torch.svd: (U, S, V) with A = U diag(S) V^T, reduced when `some`; without
    `compute_uv`, U [m, m] and V [n, n] are zeros."""
    op = "svd"
    A = matrices(input, op)
    if bool_arg(compute_uv, op, "compute_uv"):
        U, S, Vh = _decompose(A, True, not bool_arg(some, op, "some"))
        result = TorchSVD(lapack_layout(U), S, Vh.mT)
    else:
        m, n, batch = *A.shape[-2:], tuple(A.shape[:-2])
        S = _decompose(A, False, False)
        zeros = lambda size: factories.zeros((*batch, size, size), dtype=A.dtype)  # noqa: E731
        result = TorchSVD(zeros(m), S, zeros(n))
    if out is not None:
        return TorchSVD(*(copied_out(r, o, op) for r, o in zip(result, out, strict=True)))
    return result


def pinverse(input, rcond: float = 1e-15) -> Tensor:
    """torch.pinverse: pinv with rtol = rcond and no absolute tolerance."""
    return pinv(input, atol=0.0, rtol=float_arg(rcond, "pinverse", "rcond"))


LINALG = {
    "svd": svd,
    "svdvals": svdvals,
    "pinv": pinv,
    "matrix_rank": matrix_rank,
    "lstsq": lstsq,
}
# torch.* and Tensor methods of the same family.
FUNCTIONS = {"svd": torch_svd, "pinverse": pinverse}
NOT_METHODS: frozenset[str] = frozenset()
METHODS: dict = {}
