"""torch.linalg's LU and Cholesky family: lu_factor(_ex), lu, lu_solve, solve(_ex),
solve_triangular, inv(_ex), det, slogdet, cholesky(_ex), cholesky_solve, and the checks
every linalg function shares (`square`, `matrices`, `on_host`).

Each factorization runs kael's dense kernels (codegen/cpu/factorize.py and
triangular.py) on a contiguous copy of the (broadcast) batch, one matrix per work item;
the rest (determinants from the LU's diagonal, pivot signs, the views PyTorch returns) is
kael's own ops. Inputs are float32 or float64, as PyTorch's CPU LAPACK takes them. A
cuda tensor is factored on the host: copied there and back explicitly (`on_host`).
"""

from __future__ import annotations

import functools
from typing import NamedTuple

from kael.codegen.cpu import factorize, triangular
from kael.frontend import blocked, factories, index_ops, reductions
from kael.frontend import elementwise as ew
from kael.frontend.elementwise import broadcast_shapes
from kael.frontend.outputs import bool_arg, copied_out, device_of, tensor_arg
from kael.frontend.tensor import Tensor, clone_impl
from kael.runtime.device import CPU
from kael.runtime.dtypes import int32, int64
from kael.runtime.errors import Error, LinAlgError, TypeError, ValueError
from kael.runtime.tensor_impl import contiguous_strides, shape_numel


class LUFactor(NamedTuple):
    LU: Tensor
    pivots: Tensor


class LUFactorEx(NamedTuple):
    LU: Tensor
    pivots: Tensor
    info: Tensor


class PLU(NamedTuple):
    P: Tensor
    L: Tensor
    U: Tensor


class Slogdet(NamedTuple):
    sign: Tensor
    logabsdet: Tensor


class WithInfo(NamedTuple):
    """What solve_ex returns: the result and LAPACK's info per matrix (int32)."""

    result: Tensor
    info: Tensor


class InverseWithInfo(NamedTuple):
    """inv_ex's result under torch's field names."""

    inverse: Tensor
    info: Tensor


class CholeskyWithInfo(NamedTuple):
    """cholesky_ex's result under torch's field names."""

    L: Tensor
    info: Tensor


# ---- the checks every linalg function shares --------------------------------------------------


def float_dtype(x: Tensor, op: str) -> None:
    """float32 or float64, as PyTorch's CPU linear algebra takes: a kael.TypeError else."""
    if x.dtype.is_half:
        raise TypeError(f"{op}: Low precision dtypes not supported. Got {x.dtype}")
    if not x.dtype.is_floating_point:
        raise TypeError(f"{op}: Expected a floating point tensor as input. Got {x.dtype}")


def matrices(x, op: str, what: str = "A") -> Tensor:
    """`x` as a batch of matrices (at least 2 dims) of a linalg dtype."""
    x = tensor_arg(x, op, what)
    if x.ndim < 2:
        raise ValueError(f"{op}: The input tensor {what} must have at least 2 dimensions.")
    float_dtype(x, op)
    return x


def square(x, op: str, what: str = "A") -> Tensor:
    """`x` as a batch of square matrices of a linalg dtype."""
    x = matrices(x, op, what)
    rows, cols = x.shape[-2:]
    if rows != cols:
        raise ValueError(
            f"{op}: {what} must be batches of square matrices, but they are {rows} by {cols} "
            "matrices"
        )
    return x


def same_dtype(a: Tensor, b: Tensor, op: str, names: str = "A and B") -> None:
    first, second = names.split(" and ")
    if a.dtype is not b.dtype:
        raise TypeError(
            f"{op}: Expected {names} to have the same dtype, but found {first} of type "
            f"{a.dtype} and {second} of type {b.dtype} instead"
        )


def working_copy(x: Tensor, batch: tuple[int, ...] | None = None, padded: bool = False) -> Tensor:
    """A new contiguous copy of x (broadcast to `batch` first): what a kernel factors.
    `padded`: one large matrix whose rows are a multiple of 1 KiB gets PAD more elements
    a row (a view of the first ones): the blocked kernels walk its columns, and rows 4 KiB
    apart would all fall in the same few cache sets (a 512 x 512 LU panel: 1.5x faster)."""
    if batch is not None and tuple(x.shape[:-2]) != batch:
        x = x.expand(*batch, *x.shape[-2:])
    if padded and x.ndim >= 2 and _pads(x.shape, x.dtype):
        return working_buffer(x.shape, x.dtype).copy_(x)
    return Tensor(clone_impl(x._impl))


def _pads(shape: tuple[int, ...], dtype) -> bool:
    """Whether working_copy(..., padded=True) pads a matrix of this shape and dtype."""
    rows, cols = shape[-2:]
    return (
        shape_numel(shape[:-2]) == 1
        and rows >= blocked.MIN_BLOCKED
        and cols * dtype.itemsize % 1024 == 0
    )


def working_buffer(shape: tuple[int, ...], dtype) -> Tensor:
    """An uninitialized working matrix of `shape` laid out as a padded working copy."""
    if _pads(shape, dtype):
        return factories.empty((*shape[:-1], shape[-1] + PAD), dtype=dtype)[..., : shape[-1]]
    return factories.empty(shape, dtype=dtype)


PAD = 8  # elements added to a padded working copy's rows


def lapack_layout(x: Tensor, rows: int | None = None) -> Tensor:
    """x's matrices column-major, the batch outermost, as LAPACK writes torch.linalg's
    results (code that checks is_contiguous() or views them sees torch's answer): a
    leading dimension of max(1, rows), rows by default x's own (lstsq's solution is the
    head of a buffer of max(m, n) rows); x itself where it is laid out so already."""
    if x.ndim < 2:
        return x
    *batch, m, n = x.shape
    lead = max(1, m if rows is None else rows)
    strides = (*(s * lead * n for s in contiguous_strides(batch)), 1, lead)
    if rows is None and tuple(x.stride()) == strides:
        return x
    buffer = factories.empty_strided((*batch, lead, n), strides, dtype=x.dtype, device=x.device)
    return buffer[..., :m, :].copy_(x)


def _to(value, device, into: dict | None = None):
    """value's tensors moved to `device` (in tuples, lists and namedtuples alike); a tensor
    whose id `into` holds is copied into that tensor instead (an out= given on the device)."""
    if isinstance(value, Tensor):
        if into is not None and id(value) in into:
            return into[id(value)].copy_(value)
        return value.to(device)
    if isinstance(value, list):
        return [_to(v, device, into) for v in value]
    if isinstance(value, tuple):
        moved = [_to(v, device, into) for v in value]
        return type(value)(*moved) if hasattr(value, "_fields") else tuple(moved)
    return value


def _flat_tensors(value) -> list[Tensor]:
    items = value if isinstance(value, (tuple, list)) else (value,)
    return [x for x in items if isinstance(x, Tensor)]


def _tensors(args: tuple, kwargs: dict) -> list[Tensor]:
    """The tensors among `args` and `kwargs` (but `out`), and in their tuples and lists."""
    values = [*args, *(v for k, v in kwargs.items() if k != "out")]
    return [x for v in values for x in _flat_tensors(v)]


def on_host(fn):
    """Run `fn` on host copies of its cuda tensor arguments and move its results back to
    their device: the dense kernels are host code (an explicit copy). The tensors must share
    one device, as PyTorch requires (a host kernel given cuda memory would crash): kael.Error
    naming two; 0-d host tensors go with any. An `out` must be on their device too: on
    cuda, fn writes host copies of it (its checks apply) and they are copied back into it."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        op = fn.__name__.lstrip("_")  # a helper's name is its op's
        # a 0-d host tensor is a number beside cuda tensors, as PyTorch lets it be (atol=)
        tensors = [t for t in _tensors(args, kwargs) if t.ndim or t.device is not CPU]
        device = device_of(tensors, op) if tensors else CPU
        outs = _flat_tensors(kwargs.get("out"))
        for o in outs:
            if o.device is not device:
                raise Error(f"{op}: out is on {o.device} but the operands are on {device}")
        if device is CPU:
            return fn(*args, **kwargs)
        args = [_to(a, CPU) for a in args]
        kwargs = {k: _to(v, CPU) for k, v in kwargs.items()}
        into = dict(zip(map(id, _flat_tensors(kwargs.get("out"))), outs))
        return _to(fn(*args, **kwargs), device, into)

    return wrapper


def raise_for(info: Tensor, op: str, message) -> None:
    """A LinAlgError for the first matrix whose info is not 0; `message(code)` words it,
    prefixed by the batch element when there is a batch (as PyTorch does)."""
    codes = info.reshape(-1).tolist()
    for index, code in enumerate(codes):
        if code:
            where = f"(Batch element {index}): " if info.ndim else ""
            raise LinAlgError(f"{op}: {where}{message(code)}")


# ---- LU -----------------------------------------------------------------------------------


def _lu(a: Tensor, lower: bool = True) -> tuple[Tensor, Tensor, Tensor]:
    """(LU, 0-based int64 pivots, int64 info) of the contiguous copy `a`, factored in place;
    without `lower`, L of one large matrix may miss later rows' interchanges (the
    determinants read only U and the pivots)."""
    m, n = a.shape[-2:]
    batch = a.shape[:-2]
    piv = factories.empty((*batch, min(m, n)), dtype=int64)
    info = factories.zeros(batch, dtype=int64)
    count = shape_numel(batch)
    if count == 1 and m == n >= blocked.MIN_BLOCKED:
        blocked.lu(a.reshape(n, n), piv.reshape(n), info.reshape(1), lower=lower)
    elif count and m and n:
        factorize.lu(_stacked(a), piv._impl, info._impl, count)
    return a, piv, info


def _stacked(t: Tensor):
    """The impl a kernel takes: [r, c] (one matrix for every item) or [count, r, c]."""
    return t._impl if t.ndim == 2 else t.reshape(-1, *t.shape[-2:])._impl


def _triangular(a: Tensor, x: Tensor, *, lower: bool, unit: bool = False, trans: bool = False):
    """op(T) X = B in place in the contiguous `x` [*, n, k]: T the lower or upper triangle
    of `a` ([n, n], or x's batch of them); blocked for one large system."""
    n, k = x.shape[-2:]
    count = shape_numel(x.shape[:-2])
    if not (count and n and k):
        return
    if count == 1 and n >= blocked.MIN_BLOCKED:
        blocked.solve(a.reshape(n, n), x.reshape(n, k), lower=lower, unit=unit, trans=trans)
    else:
        triangular.solve(_stacked(a), _stacked(x), count, lower=lower, unit=unit, trans=trans)


@on_host
def lu_factor_ex(A, *, pivot: bool = True, check_errors: bool = False) -> LUFactorEx:
    """P A = L U with partial pivoting: the packed LU, 1-based int32 pivots and info (the
    first zero pivot's 1-based column, 0 when none), as torch.linalg.lu_factor_ex."""
    A = matrices(A, "linalg.lu_factor_ex")
    if not bool_arg(pivot, "linalg.lu_factor_ex", "pivot"):
        raise ValueError("linalg.lu_factor_ex: LU without pivoting is not implemented on the CPU")
    lu, piv, info = _lu(working_copy(A, padded=True))
    info = info.to(int32)
    if check_errors:
        raise_for(info, "linalg.lu_factor_ex", lambda c: f"U[{c},{c}] is zero.")
    return LUFactorEx(lapack_layout(lu), (piv + 1).to(int32), info)


@on_host
def lu_factor(A, *, pivot: bool = True) -> LUFactor:
    """The packed LU and 1-based int32 pivots; a singular matrix raises LinAlgError."""
    lu, piv, info = lu_factor_ex(A, pivot=pivot)
    raise_for(
        info,
        "torch.linalg.lu_factor",
        lambda c: (
            f"U[{c},{c}] is zero and using it on lu_solve would result in a division "
            "by zero. If you still want to perform the factorization, consider calling "
            "linalg.lu(A, pivot) or linalg.lu_factor_ex(A, pivot)"
        ),
    )
    return LUFactor(lu, piv)


def permutation_matrices(piv: Tensor, m: int, dtype) -> Tensor:
    """The m x m permutation matrices P with A = P L U, of 0-based LAPACK pivots [..., k]:
    the interchanges applied to the identity's rows give P^T."""
    batch = tuple(piv.shape[:-1])
    rows = working_copy(factories.eye(m, dtype=dtype), batch)
    if shape_numel(batch) and m:
        triangular.permute(_stacked(rows), piv._impl, shape_numel(batch))
    return rows.mT


@on_host
def lu(A, *, pivot: bool = True) -> PLU:
    """A = P L U: the permutation, the unit lower L [m, k] and the upper U [k, n]."""
    A = matrices(A, "linalg.lu")
    if not bool_arg(pivot, "linalg.lu", "pivot"):
        raise ValueError("linalg.lu: LU without pivoting is not implemented on the CPU")
    packed, piv, _ = _lu(working_copy(A))
    m, n = A.shape[-2:]
    k = min(m, n)
    lower = packed[..., :, :k].tril(-1) + factories.eye(m, k, dtype=A.dtype)
    upper = packed[..., :k, :].triu()
    return PLU(permutation_matrices(piv, m, A.dtype).contiguous(), lower, upper)


# ---- solves -------------------------------------------------------------------------------


def vector_rhs(A: Tensor, B: Tensor) -> bool:
    """PyTorch's rule: B is a (batch of) vector(s) when 1-d, or A's shape less its last dim."""
    return B.ndim == 1 or (B.ndim == A.ndim - 1 and tuple(B.shape) == tuple(A.shape[:-1]))


def _rhs(A: Tensor, B: Tensor, op: str, left: bool) -> tuple[Tensor, bool]:
    """B as a batch of matrices and whether it was a (batch of) vector(s) (vector_rhs).
    As PyTorch's, a vector is a column on either side: with left=False it fits only a
    1 x 1 A, and is refused there too."""
    vector = vector_rhs(A, B)
    if vector:
        B = B.unsqueeze(-1)
    n = A.shape[-1]
    if B.shape[-2 if left else -1] != n:
        rows, cols = B.shape[-2:]
        side = "AX = B" if left else "XA = B"
        raise ValueError(
            f"{op}: Incompatible shapes of A and B for the equation {side} ({n}x{n} and "
            f"{rows}x{cols})"
        )
    if vector and not left:
        raise ValueError(
            f"{op}: Vector broadcasting of the left hand side is not supported for left=False. "
            f"In this case linalg.solve is equivalent to B / A.squeeze(-1) (A {list(A.shape)}, "
            f"B {list(B.shape[:-1])})"
        )
    return B, vector


def broadcast_batch(a: Tensor, b: Tensor, op: str) -> tuple[int, ...]:
    try:
        return tuple(broadcast_shapes(tuple(a.shape[:-2]), tuple(b.shape[:-2])))
    except ValueError:
        raise ValueError(
            f"{op}: the batch dims of A {list(a.shape)} and B {list(b.shape)} cannot be "
            "broadcast together"
        ) from None


def _lu_solve_into(lu: Tensor, piv: Tensor, x: Tensor, trans: bool = False) -> Tensor:
    """Solve (L U) X = P B, or its transpose, in place in the contiguous `x` [*, n, k];
    lu [*, n, n] and 0-based piv [*, n] have x's batch (or none: stride 0)."""
    n, k = x.shape[-2:]
    count = shape_numel(x.shape[:-2])
    if not (count and n and k):
        return x
    if not trans:
        triangular.permute(_stacked(x), piv._impl, count)
        _triangular(lu, x, lower=True, unit=True)
        _triangular(lu, x, lower=False)
    else:  # (P L U)^T X = B: U^T Y = B, L^T Z = Y, X = P Z
        _triangular(lu, x, lower=False, trans=True)
        _triangular(lu, x, lower=True, unit=True, trans=True)
        triangular.permute(_stacked(x), piv._impl, count, reverse=True)
    return x


def _solve(A: Tensor, B: Tensor, op: str, left: bool) -> tuple[Tensor, Tensor, bool]:
    """(X, info, whether B was a vector) of A X = B (left) or X A = B."""
    A = square(A, op)
    B = tensor_arg(B, op, "B")
    same_dtype(A, B, op)
    B, vector = _rhs(A, B, op, left)
    if not left:  # X A = B is A^T X^T = B^T
        A, B = A.mT, B.mT
    batch = broadcast_batch(A, B, op)
    n, k = B.shape[-2:]
    if shape_numel(batch) == 1 and n >= blocked.MIN_BLOCKED and k:
        x, info = _solve_one(A, B, batch)
    else:
        lu, piv, info = _lu(working_copy(A, batch, padded=True))
        x = _lu_solve_into(lu, piv, working_copy(B, batch, padded=True))
    x = lapack_layout(x)  # X^T's, for X A = B: row-major, as torch's
    if not left:
        x = x.mT
    return (x.squeeze(-1) if vector else x), _own_batch(info, A), vector


def _solve_one(A: Tensor, B: Tensor, batch: tuple[int, ...]) -> tuple[Tensor, Tensor]:
    """(X, info) of one large system A X = B (batch dims all 1): [A | B] factored as one
    matrix (blocked.lu), so B's columns come out as L^-1 P B, and one backward solve."""
    n, k = B.shape[-2:]
    both = working_buffer((*batch, n, n + k), A.dtype)
    both[..., :n].copy_(A.expand(*batch, n, n))
    both[..., n:].copy_(B.expand(*batch, n, k))
    square = both[(0,) * len(batch)]
    info = factories.zeros(batch, dtype=int64)
    blocked.lu(square, factories.empty(n, dtype=int64), info.reshape(1), lower=False)
    blocked.solve(square[:, :n], square[:, n:], lower=False)
    return both[..., n:], info


def _own_batch(info: Tensor, A: Tensor) -> Tensor:
    """info of the broadcast batch cut to A's own (torch's solve_ex names A's matrices):
    the copies of one matrix along broadcast dims share their info."""
    own = tuple(A.shape[:-2])
    for _ in range(info.ndim - len(own)):  # dims A lacks
        info = info[0]
    for d, n in enumerate(own):  # dims A has once
        if n == 1 and info.shape[d] != 1:
            info = info.narrow(d, 0, 1)
    return info.to(int32)


@on_host
def solve_ex(A, B, *, left: bool = True, check_errors: bool = False) -> WithInfo:
    """X with A X = B (or X A = B), and info: 0, or the first zero pivot's column."""
    x, info, _ = _solve(A, B, "linalg.solve_ex", bool_arg(left, "linalg.solve_ex", "left"))
    if check_errors:
        raise_for(info, "linalg.solve_ex", lambda c: "The solver failed because the input "
                  "matrix is singular.")  # fmt: skip
    return WithInfo(x, info)


@on_host
def solve(A, B, *, left: bool = True, out=None) -> Tensor:
    """X with A X = B (left) or X A = B, batched and broadcast; B may be a vector. A
    singular A raises LinAlgError (PyTorch's message)."""
    x, info, _ = _solve(A, B, "linalg.solve", bool_arg(left, "linalg.solve", "left"))
    if info.numel() and bool(info.ne(0).any()):
        raise LinAlgError(
            "torch.linalg.solve: The solver failed because the input matrix is singular."
        )
    return copied_out(x, out, "linalg.solve")


def pivot_range(pivots: Tensor, rows: int) -> tuple[int, int] | None:
    """The (smallest, largest) of 1-based LU pivots when any lies outside [1, rows] (it would
    index outside the matrix), else None."""
    if not pivots.numel():
        return None
    low, high = int(pivots.min()), int(pivots.max())
    return (low, high) if low < 1 or high > rows else None


@on_host
def lu_solve(LU, pivots, B, *, left: bool = True, adjoint: bool = False, out=None) -> Tensor:
    """X with A X = B (or X A = B; A^T for `adjoint`) from lu_factor's LU and pivots."""
    op = "linalg.lu_solve"
    LU = square(LU, op, "LU")
    pivots, B = tensor_arg(pivots, op, "pivots"), matrices(B, op, "B")
    same_dtype(LU, B, op, "LU and B")
    if pivots.dtype is not int32 or tuple(pivots.shape) != tuple(LU.shape[:-1]):
        raise ValueError(
            f"{op}: pivots must be an int32 tensor of shape {list(LU.shape[:-1])}, got "
            f"{pivots.dtype} {list(pivots.shape)}"
        )
    n = LU.shape[-1]
    if B.shape[-2 if left else -1] != n:
        raise ValueError(f"{op}: Incompatible shapes of LU {list(LU.shape)} and B {list(B.shape)}")
    outside = pivot_range(pivots, n)
    if outside is not None:
        low, high = outside
        bound = (
            f"greater or equal to 1 (the smallest is {low})"
            if low < 1
            else (f"smaller or equal to LU.size(-2) = {n} (the largest is {high})")
        )
        raise ValueError(
            f"Pivots given to lu_solve must all be {bound}. Did you properly pass the result of"
            " lu_factor?"
        )
    if not left:  # X A = B: A^T X^T = B^T
        B = B.mT
    trans = bool(adjoint) != (not left)
    batch = broadcast_batch(LU, B, op)
    lu = working_copy(LU, batch, padded=True)
    piv = (pivots.expand(*batch, n) - 1).to(int64).contiguous()
    x = lapack_layout(_lu_solve_into(lu, piv, working_copy(B, batch, padded=True), trans=trans))
    return copied_out(x if left else x.mT, out, op)


@on_host
def solve_triangular(
    A, B, *, upper: bool, left: bool = True, unitriangular: bool = False, out=None
) -> Tensor:
    """X with T X = B (or X T = B), T A's upper or lower triangle (the other is not read).
    X has A's dtype: B of any dtype is converted to it, as torch's copy of B into its
    result is (a float64 A promotes a float32 B; a float32 A rounds a float64 B)."""
    op = "linalg.solve_triangular"
    A = square(A, op)
    B = matrices(tensor_arg(B, op, "B").to(A.dtype), op, "B")
    upper = bool_arg(upper, op, "upper")
    if not left:  # X T = B: T^T X^T = B^T
        A, B = A, B.mT
    n = A.shape[-1]
    if B.shape[-2] != n:
        raise ValueError(f"{op}: Incompatible shapes of A {list(A.shape)} and B {list(B.shape)}")
    batch = broadcast_batch(A, B, op)
    a, x = working_copy(A, batch, padded=True), working_copy(B, batch, padded=True)
    _triangular(a, x, lower=not upper, unit=bool(unitriangular), trans=not left)
    return copied_out(lapack_layout(x if left else x.mT), out, op)


# ---- inverse and determinants -------------------------------------------------------------


def _inverse(A: Tensor, op: str) -> tuple[Tensor, Tensor]:
    A = square(A, op)
    n = A.shape[-1]
    lu, piv, info = _lu(working_copy(A, padded=True))
    x = identity(tuple(A.shape[:-2]), n, A.dtype)
    if shape_numel(A.shape[:-2]) != 1 or n < blocked.MIN_BLOCKED:
        return lapack_layout(_lu_solve_into(lu, piv, x)), info.to(int32)
    # One large matrix, in getri's order: X = U^-1 L^-1 (L^-1 is lower triangular, and
    # the forward solve skips its zeros), then A^-1 = X P: the columns in the order
    # P^T (0, 1, ..., n-1), the pivots' interchanges last to first. Gathered as rows of
    # X^T, they are A^-1 laid out column-major already: one pass over X, not a gather and
    # then the layout's copy.
    square_lu, square_x = lu.reshape(n, n), x.reshape(n, n)
    blocked.solve(square_lu, square_x, lower=True, unit=True, lower_rhs=True)
    blocked.solve(square_lu, square_x, lower=False)
    order = factories.arange(n, dtype=A.dtype).reshape(n, 1)
    triangular.permute(order._impl, piv.reshape(n)._impl, 1, reverse=True)
    rows = index_ops.index_select(square_x.mT, 0, order.reshape(n).to(int64))
    batch = (n * n,) * (A.ndim - 2)
    return rows.as_strided(tuple(A.shape), (*batch, 1, n)), info.to(int32)


def identity(batch: tuple[int, ...], n: int, dtype) -> Tensor:
    """The n x n identity for each of `batch`, laid out as a padded working copy (zeros and
    a diagonal of ones: no eye to copy), for blocked kernels to turn into a product."""
    x = working_buffer((*batch, n, n), dtype).zero_()
    x.diagonal(dim1=-2, dim2=-1).fill_(1)
    return x


@on_host
def inv_ex(A, *, check_errors: bool = False) -> InverseWithInfo:
    """A's inverse and info (0, or the first zero pivot's column), batched."""
    x, info = _inverse(A, "linalg.inv_ex")
    if check_errors:
        raise_for(info, "linalg.inv_ex", _singular)
    return InverseWithInfo(x, info)


def _singular(code: int) -> str:
    return (
        f"The diagonal element {code} is zero, the inversion could not be completed because "
        "the input matrix is singular."
    )


@on_host
def inv(A, *, out=None) -> Tensor:
    """A's inverse, batched; a singular matrix raises LinAlgError naming its zero pivot."""
    x, info = _inverse(A, "linalg.inv")
    raise_for(info, "linalg.inv", _singular)
    return copied_out(x, out, "linalg.inv")


def _pivot_sign(piv: Tensor, dtype) -> Tensor:
    """(-1)^(number of row interchanges) of 0-based pivots [..., k], as `dtype`."""
    steps = factories.arange(piv.shape[-1], dtype=int64)
    swaps = reductions.sum(ew.binary("ne", piv, steps), -1)
    return (1 - 2 * (swaps % 2)).to(dtype)


@on_host
def det(A, *, out=None) -> Tensor:
    """The determinant of each matrix: the LU's diagonal product, signed by the pivots."""
    A = square(A, "linalg.det")
    lu, piv, _ = _lu(working_copy(A, padded=True), lower=False)
    value = lu.diagonal(dim1=-2, dim2=-1).prod(-1) * _pivot_sign(piv, A.dtype)
    return copied_out(value, out, "linalg.det")


@on_host
def slogdet(A, *, out=None) -> Slogdet:
    """(sign, log |det|) of each matrix, without the determinant's overflow: sign 0 and
    logabsdet -inf for a singular one."""
    A = square(A, "linalg.slogdet")
    lu, piv, _ = _lu(working_copy(A, padded=True), lower=False)
    diagonal = lu.diagonal(dim1=-2, dim2=-1)
    sign = diagonal.sgn().prod(-1) * _pivot_sign(piv, A.dtype)
    return outs_into(Slogdet(sign, diagonal.abs().log().sum(-1)), out, "linalg.slogdet")


@on_host
def logdet(A) -> Tensor:
    """log det A: NaN for a negative determinant, -inf for a singular matrix."""
    sign, logabs = slogdet(A)
    return ew.where(sign.lt(0), float("nan"), logabs)


# ---- Cholesky -----------------------------------------------------------------------------


def _not_definite(code: int) -> str:
    return (
        "The factorization could not be completed because the input is not positive-definite "
        f"(the leading minor of order {code} is not positive-definite)."
    )


def _cholesky(A, op: str, upper: bool) -> tuple[Tensor, Tensor]:
    A = square(A, op)
    upper = bool_arg(upper, op, "upper")
    a = working_copy(A.mT if upper else A, padded=True)  # U reads A's upper triangle
    n, batch = A.shape[-1], A.shape[:-2]
    info = factories.zeros(batch, dtype=int64)
    count = shape_numel(batch)
    if count == 1 and n >= blocked.MIN_BLOCKED:
        info.fill_(blocked.cholesky(a.reshape(n, n)))
    elif count and n:
        factorize.cholesky(_stacked(a), info._impl, count)
    if count and n and info.ne(0).any().item():  # a failed factor: its other triangle too
        a = a.tril()  # is zero, as torch's
    return lapack_layout(a.mT if upper else a), info.to(int32)


@on_host
def cholesky_ex(A, *, upper: bool = False, check_errors: bool = False) -> CholeskyWithInfo:
    """The Cholesky factor (L, or U = L^T) and info: 0, or the order of the first leading
    minor that is not positive-definite. A failed factor's other triangle is zero, as
    torch's; past its leading block before the failing minor it is not LAPACK's partial
    state (kael factors row by row and stops at the failing row; one large matrix's later
    panels factor what the failed one left, NaN among it)."""
    factor, info = _cholesky(A, "linalg.cholesky_ex", upper)
    if check_errors:
        raise_for(info, "linalg.cholesky_ex", _not_definite)
    return CholeskyWithInfo(factor, info)


@on_host
def cholesky(A, *, upper: bool = False, out=None) -> Tensor:
    """A = L L^T (or U^T U) for symmetric positive-definite A, which only its lower (for U:
    upper) triangle gives, as LAPACK's; LinAlgError naming the first leading minor that is
    not positive-definite."""
    factor, info = _cholesky(A, "linalg.cholesky", upper)
    raise_for(info, "linalg.cholesky", _not_definite)
    return copied_out(factor, out, "linalg.cholesky")


@on_host
def cholesky_solve(B, L, upper: bool = False, *, out=None) -> Tensor:
    """X with A X = B from A's Cholesky factor L (or U when `upper`), as torch.cholesky_solve."""
    op = "cholesky_solve"
    B, L = matrices(B, op, "B"), square(L, op, "L")
    same_dtype(L, B, op, "L and B")
    n = L.shape[-1]
    if B.shape[-2] != n:
        raise ValueError(f"{op}: Incompatible shapes of L {list(L.shape)} and B {list(B.shape)}")
    batch = broadcast_batch(L, B, op)
    a, x = working_copy(L, batch, padded=True), working_copy(B, batch, padded=True)
    lower = not bool_arg(upper, op, "upper")
    # L L^T X = B: L Y = B, then L^T X = Y (or U^T Y = B, U X = Y).
    _triangular(a, x, lower=lower, trans=not lower)
    _triangular(a, x, lower=lower, trans=lower)
    return copied_out(lapack_layout(x), out, op)


def outs_into(result: tuple, out, op: str) -> tuple:
    """The namedtuple `result`, or each part copied into its tensor of `out` (a tuple or
    list of as many, each of the part's shape and dtype)."""
    if out is None:
        return result
    if not isinstance(out, (tuple, list)) or len(out) != len(result):
        raise TypeError(f"{op}(): out must be a tuple of {len(result)} Tensors")
    return type(result)(*(copied_out(r, o, op) for r, o in zip(result, out, strict=True)))


LINALG = {
    "lu_factor": lu_factor,
    "lu_factor_ex": lu_factor_ex,
    "lu": lu,
    "lu_solve": lu_solve,
    "solve": solve,
    "solve_ex": solve_ex,
    "solve_triangular": solve_triangular,
    "inv": inv,
    "inv_ex": inv_ex,
    "det": det,
    "slogdet": slogdet,
    "cholesky": cholesky,
    "cholesky_ex": cholesky_ex,
}
# torch.* and Tensor methods of the same family.
FUNCTIONS = {
    "det": det,
    "logdet": logdet,
    "slogdet": slogdet,
    "inverse": inv,
    "cholesky_solve": cholesky_solve,
    "cholesky": lambda input, upper=False, *, out=None: cholesky(input, upper=upper, out=out),
}
NOT_METHODS: frozenset[str] = frozenset()
METHODS: dict = {}
