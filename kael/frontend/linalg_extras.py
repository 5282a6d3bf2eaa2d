"""PyTorch's older linear-algebra names (torch.lu, lu_solve, lu_unpack, triangular_solve,
cholesky_inverse, geqrf, ormqr, nuclear_norm, frobenius_norm) and torch.linalg's remaining
ones (vander, diagonal, matmul, tensorinv, tensorsolve), on kael's dense kernels.

Each is a composition of what kael.linalg already has: the LU and triangular solves of
factorizations.py, the Householder QR of orthogonal.py (its geqr2 and blocked larfb), the
norms of matrix_norms.py, and kael's elementwise ops, reductions and matmul.
torch.matrix_rank is not here: PyTorch 2.13 raises on it (removed since 1.9). The LDL
family (linalg.ldl_factor, ldl_solve) is ldl.py's, on its own Bunch-Kaufman kernel.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import NamedTuple

from kael.frontend import elementwise as ew
from kael.frontend import (
    factories,
    factorizations,
    index_ops,
    matrix_norms,
    orthogonal,
    products,
    views,
)
from kael.frontend.factorizations import float_dtype, on_host, raise_for, square
from kael.frontend.outputs import bool_arg, device_of, int_arg, tensor_arg
from kael.frontend.tensor import Tensor
from kael.runtime.dtypes import bool_, float64, int32, int64
from kael.runtime.errors import IndexError, TypeError, ValueError
from kael.runtime.tensor_impl import shape_numel


class TriangularSolve(NamedTuple):
    solution: Tensor
    cloned_coefficient: Tensor


class Geqrf(NamedTuple):
    a: Tensor
    tau: Tensor


def _int_dims(dim, op: str) -> tuple[int, ...]:
    """An int or a tuple/list of ints as a tuple, or PyTorch's parser's TypeError."""
    if isinstance(dim, int) and not isinstance(dim, bool):
        return (dim,)
    if not isinstance(dim, tuple | list):
        raise TypeError(f"{op}(): argument 'dim' must be tuple of ints, not {type(dim).__name__}")
    return tuple(int_arg(d, op, "dim") for d in dim)


# ---- LU ---------------------------------------------------------------------------------


def lu(A, pivot: bool = True, get_infos: bool = False) -> tuple:
    """torch.lu: (LU, 1-based int32 pivots) of P A = L U, and the int32 infos when
    `get_infos`; a singular matrix is not an error (its info says where U is zero)."""
    get_infos = bool_arg(get_infos, "lu", "get_infos")
    factor, pivots, info = factorizations.lu_factor_ex(A, pivot=pivot)
    return (factor, pivots, info) if get_infos else (factor, pivots)


@on_host
def lu_solve(b, LU_data, LU_pivots) -> Tensor:
    """torch.lu_solve: X with A X = b from A's lu_factor (LU_data, LU_pivots)."""
    op = "linalg.lu_solve"
    LU = square(LU_data, op, "LU")
    pivots = tensor_arg(LU_pivots, op, "pivots")
    if pivots.dtype is not int32:
        raise TypeError(
            f"{op}: pivots should be a Tensor of scalar type torch.int32, got {pivots.dtype}"
        )
    return factorizations.lu_solve(LU, pivots, b)


@on_host
def lu_unpack(
    LU_data, LU_pivots, unpack_data: bool = True, unpack_pivots: bool = True
) -> factorizations.PLU:
    """torch.lu_unpack: (P, L, U) of lu_factor's packed LU [*, m, n] and 1-based int32
    pivots [*, min(m, n)]; P [*, m, m], L [*, m, k] unit lower, U [*, k, n], each (0,)
    empty when not asked for. Any LU dtype is taken, as PyTorch does."""
    op = "lu_unpack"
    LU = tensor_arg(LU_data, op, "LU_data")
    if LU.ndim < 2:
        raise ValueError(
            f"torch.{op}: Expected tensor with 2 or more dimensions. Got size: {list(LU.shape)} "
            "instead"
        )
    empty = factories.empty((0,), dtype=LU.dtype)
    P = empty
    if bool_arg(unpack_pivots, op, "unpack_pivots"):
        P = _unpack_pivots(LU, tensor_arg(LU_pivots, op, "LU_pivots"))
    L, U = empty, empty
    if bool_arg(unpack_data, op, "unpack_data"):
        m, n = LU.shape[-2:]
        k = min(m, n)
        L = LU[..., :, :k].tril(-1) + factories.eye(m, k, dtype=LU.dtype)
        U = LU[..., :k, :].triu()
    return factorizations.PLU(P, L, U)


def _unpack_pivots(LU: Tensor, pivots: Tensor) -> Tensor:
    """The permutation matrices P (LU's dtype) of the 1-based pivots [*, min(m, n)]."""
    op = "torch.lu_unpack"
    if pivots.dtype is not int32:
        raise TypeError(
            f"{op}: LU_pivots is expected to be a contiguous tensor of torch.int32 dtype, got "
            f"{pivots.dtype}"
        )
    m, n = LU.shape[-2:]
    batch = tuple(LU.shape[:-2])
    steps = (*batch, min(m, n))
    # PyTorch reads a batch of pivots smaller than LU's past its end: kael refuses it.
    if tuple(pivots.shape) != steps:
        raise ValueError(
            f"{op}: LU_pivots of shape {list(pivots.shape)} do not fit LU of shape "
            f"{list(LU.shape)}: expected {list(steps)}"
        )
    outside = factorizations.pivot_range(pivots, m)
    if outside is not None:
        raise ValueError(
            f"pivots passed to lu_unpack must be between 1 and LU.size(-2) = {m} inclusive, got"
            f" pivots from {outside[0]} to {outside[1]}. Did you properly pass the result of"
            " lu_factor?"
        )
    zero_based = (pivots - 1).to(int64).contiguous()
    return factorizations.permutation_matrices(zero_based, m, float64).to(LU.dtype)


# ---- triangular solves and Cholesky inverse ---------------------------------------------------


def triangular_solve(
    b, A, upper: bool = True, transpose: bool = False, unitriangular: bool = False
) -> TriangularSolve:
    """torch.triangular_solve: X with op(T) X = b, T A's upper (or lower) triangle, op the
    transpose when `transpose`; the broadcast copy of A comes back beside it."""
    op = "torch.triangular_solve"
    b, A = tensor_arg(b, op, "b"), tensor_arg(A, op, "A")
    device_of([b, A], op)
    for what, x in (("b", b), ("A", A)):
        if x.ndim < 2:
            raise ValueError(
                f"{op}: Expected {what} to have at least 2 dimensions, but it has {x.ndim} "
                "dimensions instead"
            )
    upper = bool_arg(upper, op, "upper")
    transpose = bool_arg(transpose, op, "transpose")
    unitriangular = bool_arg(unitriangular, op, "unitriangular")
    if b.dtype is not A.dtype:
        raise TypeError(
            f"{op}: Expected b and A to have the same dtype, but found b of type {b.dtype} and A "
            f"of type {A.dtype} instead."
        )
    square(A, op)
    n = A.shape[-1]
    if b.shape[-2] != n:
        raise ValueError(
            f"Incompatible matrix sizes for triangular_solve: each A matrix is {n} by {n} but "
            f"each b matrix is {b.shape[-2]} by {b.shape[-1]}"
        )
    batch = factorizations.broadcast_batch(A, b, op)
    coefficient = A.expand(*batch, n, n)
    # op(T) with T the upper triangle of A is the lower triangle of A^T.
    triangle = coefficient.mT if transpose else coefficient
    solution = factorizations.solve_triangular(
        triangle,
        b.expand(*batch, *b.shape[-2:]),
        upper=upper != transpose,
        unitriangular=unitriangular,
    )
    return TriangularSolve(solution, coefficient.clone())


def _zero_diagonal_info(factor: Tensor) -> Tensor:
    """LAPACK trtri's info per matrix: the 1-based index of the first zero on the
    diagonal, 0 when there is none."""
    zero = factor.diagonal(dim1=-2, dim2=-1).eq(0)
    if not zero.shape[-1]:
        return factories.zeros(tuple(zero.shape[:-1]), dtype=int64)
    first = zero.to(int32).argmax(-1) + 1
    return ew.where(zero.any(-1), first, 0)


@on_host
def cholesky_inverse(L, upper: bool = False) -> Tensor:
    """torch.cholesky_inverse: A^-1 from A's Cholesky factor (A = L L^T, or U^T U when
    `upper`): X^T X with X = L^-1 (or X X^T, X = U^-1). A zero on the factor's diagonal
    raises LinAlgError naming it, as LAPACK's potri does."""
    op = "cholesky_inverse"
    L = square(L, op)
    upper = bool_arg(upper, op, "upper")
    raise_for(_zero_diagonal_info(L), op, factorizations._singular)
    n = L.shape[-1]
    eye = factories.eye(n, dtype=L.dtype, device=L.device).expand(*L.shape)
    X = factorizations.solve_triangular(L, eye, upper=upper)
    return factorizations.lapack_layout(X @ X.mT if upper else X.mT @ X)


# ---- Householder QR: geqrf and ormqr ----------------------------------------------------------


@on_host
def geqrf(A) -> Geqrf:
    """torch.geqrf: LAPACK's geqrf, R on and above the diagonal and the Householder
    vectors below it, with their scalars tau [*, min(m, n)] (LAPACK's signs)."""
    op = "torch.geqrf"
    A = tensor_arg(A, op)
    if A.ndim < 2:
        raise ValueError(f"{op}: input must have at least 2 dimensions.")
    float_dtype(A, op)
    packed, tau = orthogonal.householder_qr(factorizations.working_copy(A, padded=True))
    return Geqrf(packed, tau)


def _ormqr_checks(input: Tensor, tau: Tensor, other: Tensor, left: bool) -> None:
    """torch.ormqr's shape and dtype rules, in its order."""
    op = "torch.ormqr"
    for what, x in (("input", input), ("other", other)):
        if x.ndim < 2:
            raise ValueError(f"{op}: {what} must have at least 2 dimensions.")
    side = -2 if left else -1
    if other.shape[side] != input.shape[-2]:
        raise ValueError(
            f"{op}: other.shape[{side}] must be equal to input.shape[-2] ({other.shape[side]} "
            f"!= {input.shape[-2]})"
        )
    if tau.ndim != input.ndim - 1:
        raise ValueError(
            f"{op}: Expected tau to have one dimension less than input, but got tau.ndim equal "
            f"to {tau.ndim} and input.ndim is equal to {input.ndim}"
        )
    reflectors = min(other.shape[side], input.shape[-1])
    if tau.shape[-1] != reflectors:
        raise ValueError(
            f"{op}: tau.shape[-1] must be equal to min(other.shape[{side}], input.shape[-1]) "
            f"({tau.shape[-1]} != {reflectors})"
        )
    if other.ndim != input.ndim:
        raise ValueError(
            f"{op}: Expected other to have the same number of dimensions as input, but got "
            f"other.ndim equal to {other.ndim} and input.ndim is equal to {input.ndim}"
        )
    for what, batch in (("tau", tau.shape[:-1]), ("other", other.shape[:-2])):
        if tuple(batch) != tuple(input.shape[:-2]):
            raise ValueError(
                f"{op}: Expected batch dimensions of {what} to be equal to input.shape[:-2], "
                f"but got {list(batch)}"
            )
    for what, x in (("tau", tau), ("other", other)):
        if x.dtype is not input.dtype:
            raise TypeError(
                f"{op}: Expected input and {what} to have the same dtype, but input has dtype "
                f"{input.dtype} and {what} has dtype {x.dtype}"
            )
    float_dtype(input, op)


@on_host
def ormqr(input, tau, other, left: bool = True, transpose: bool = False) -> Tensor:
    """torch.ormqr: op(Q) C (or C op(Q) unless `left`), Q = H_0 ... H_{k-1} the
    reflectors of geqrf's (input, tau) and op the transpose when `transpose`: LAPACK's
    larfb, one block of all k reflectors applied by matrix products."""
    op = "torch.ormqr"
    input, tau = tensor_arg(input, op), tensor_arg(tau, op, "tau")
    other = tensor_arg(other, op, "other")
    left, transpose = bool_arg(left, op, "left"), bool_arg(transpose, op, "transpose")
    _ormqr_checks(input, tau, other, left)
    # C Q = (Q^T C^T)^T: the right side is the left one on C^T with the transpose flipped.
    c = factorizations.working_copy(other if left else other.mT)
    m, k, columns = c.shape[-2], tau.shape[-1], c.shape[-1]
    count = shape_numel(tuple(input.shape[:-2]))
    if count and m and k and columns:
        panel = input[..., :k].contiguous().reshape(count, m, k)
        orthogonal.apply_reflectors(
            panel,
            tau.contiguous().reshape(count, k),
            c.reshape(count, m, columns),
            transpose=transpose == left,
        )
    return c if left else c.mT


# ---- norms under their old names ---------------------------------------------------------------


def nuclear_norm(input, dim=None, keepdim: bool = False) -> Tensor:
    """torch.nuclear_norm: the sum of singular values over the two dims `dim` (the last
    two by default); an int dim d is PyTorch's (d, d), which it refuses."""
    op = "linalg.matrix_norm"
    x = tensor_arg(input, op)
    if x.ndim < 2:
        raise ValueError(f"{op}: The input tensor A must have at least 2 dimensions.")
    float_dtype(x, op)
    if dim is None:
        dim = (-2, -1)
    elif isinstance(dim, int) and not isinstance(dim, bool):
        dim = (dim, dim)
    return matrix_norms.matrix_norm(x, "nuc", dim, bool_arg(keepdim, op, "keepdim"))


def frobenius_norm(input, dim, keepdim: bool = False) -> Tensor:
    """torch.frobenius_norm: the 2-norm over at most two distinct dims (none: all of them)."""
    op = "frobenius_norm"
    x = tensor_arg(input, op)
    dims = _int_dims(dim, op)
    if len(dims) > 2:
        raise ValueError(f"Expected at most 2 dimensions, but got {len(dims)} dimensions instead.")
    wrapped = [views.wrap_dim(d, x.ndim) for d in dims]
    if len(set(wrapped)) != len(wrapped):
        raise ValueError(f"dim {wrapped[0]} appears multiple times in the list of dims")
    if x.dtype is bool_ or not x.dtype.is_floating_point:
        raise TypeError(
            f"norm(): input dtype should be either floating point or complex. Got {x.dtype} "
            "instead."
        )
    return matrix_norms.vector_norm(x, 2, dims, bool_arg(keepdim, op, "keepdim"))


# ---- torch.linalg's remaining names ------------------------------------------------------------


def vander(x, N=None) -> Tensor:
    """linalg.vander: [..., N] powers x^0, x^1, ..., x^(N-1) of the last dim's elements
    (N defaults to its size, and must exceed 1); integer inputs give int64, as the
    cumulative product PyTorch takes promotes them."""
    op = "linalg.vander"
    x = tensor_arg(x, op, "x")
    if x.dtype is bool_ or x.dtype.is_half:
        raise TypeError(
            f"{op} supports floating point, complex, and integer tensors, but got {x.dtype}"
        )
    x = x.unsqueeze(-1) if x.ndim == 0 else x
    n = x.shape[-1] if N is None else int_arg(N, op, "N")
    if n <= 1:
        raise ValueError(f"{op}: N must be greater than 1, got {n}.")
    powers = x.unsqueeze(-1).expand(*x.shape, n - 1).cumprod(-1)
    ones = factories.ones((*x.shape, 1), dtype=powers.dtype, device=x.device)
    return index_ops.cat([ones, powers], -1)


def diagonal(A, *, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
    """linalg.diagonal: the (offset) diagonal of A over dim1 and dim2, a view (keyword
    arguments only, as torch.linalg.diagonal)."""
    op = "linalg.diagonal"
    A = tensor_arg(A, op, "A")
    offset = int_arg(offset, op, "offset")
    return A.diagonal(offset=offset, dim1=int_arg(dim1, op, "dim1"), dim2=int_arg(dim2, op, "dim2"))


def tensorinv(A, ind: int = 2) -> Tensor:
    """linalg.tensorinv: the inverse of A seen as a prod(shape[:ind]) square matrix,
    shaped shape[ind:] + shape[:ind]; a singular one raises LinAlgError (inv's message)."""
    op = "linalg.tensorinv"
    A = tensor_arg(A, op, "A")
    ind = int_arg(ind, op, "ind")
    if ind <= 0:
        raise ValueError(f"Expected a strictly positive integer for 'ind', but got {ind}")
    if ind > A.ndim:
        raise IndexError(f"{op}: ind {ind} is more than A's {A.ndim} dimensions")
    head, tail = tuple(A.shape[:ind]), tuple(A.shape[ind:])
    rows, cols = math.prod(head), math.prod(tail)
    if rows != cols:
        raise ValueError(
            "Expected self to satisfy the requirement prod(self.shape[ind:]) == "
            f"prod(self.shape[:ind]), but got {cols} != {rows}"
        )
    inverse, info = factorizations.inv_ex(A.reshape(rows, rows))
    raise_for(info, "inv", factorizations._singular)
    return inverse.reshape(*tail, *head)


def tensorsolve(A, B, dims=None) -> Tensor:
    """linalg.tensorsolve: X with tensordot(A, X, X.ndim) = B, shaped A.shape[B.ndim:]
    (after `dims` of A are moved to its end): one square solve of A's matrix form."""
    op = "linalg.tensorsolve"
    A, B = tensor_arg(A, op, "A"), tensor_arg(B, op, "B")
    device_of([A, B], op)
    if dims is not None:
        dims = _int_dims(dims, op)
        A = A.movedim(dims, tuple(range(A.ndim - len(dims), A.ndim)))
    if B.ndim > A.ndim:
        raise ValueError(f"{op}: B has {B.ndim} dimensions, more than A's {A.ndim}")
    result_shape = tuple(A.shape[B.ndim :])
    size, wanted = math.prod(result_shape), B.numel()
    if size != wanted:
        raise ValueError(
            "Expected self to satisfy the requirement prod(self.shape[other.ndim:]) == "
            f"prod(self.shape[:other.ndim]), but got {size} != {wanted}"
        )
    if A.numel() != size * size:
        raise ValueError(f"{op}: A of shape {list(A.shape)} is not a {size} x {size} system")
    X = factorizations.solve(A.reshape(size, size), B.reshape(-1))
    return X.reshape(result_shape)


FUNCTIONS: dict[str, Callable] = {
    "lu": lu,
    "lu_solve": lu_solve,
    "lu_unpack": lu_unpack,
    "triangular_solve": triangular_solve,
    "cholesky_inverse": cholesky_inverse,
    "geqrf": geqrf,
    "ormqr": ormqr,
    "nuclear_norm": nuclear_norm,
    "frobenius_norm": frobenius_norm,
}
NOT_METHODS: frozenset[str] = frozenset({"lu_unpack", "nuclear_norm", "frobenius_norm"})
METHODS: dict[str, Callable] = {}
LINALG: dict[str, Callable] = {
    "vander": vander,
    "diagonal": diagonal,
    "matmul": products.matmul,  # torch.linalg.matmul is torch.matmul; kael.matmul likewise
    "tensorinv": tensorinv,
    "tensorsolve": tensorsolve,
}
