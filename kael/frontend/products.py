"""Products beyond matmul: linalg.multi_dot (the cheapest parenthesization, as PyTorch
chooses it), linalg.matrix_power (repeated squaring; a negative power inverts first),
linalg.cross / kael.cross and linalg.vecdot, and torch's vector products inner, ger, vdot,
mv and chain_matmul, each on kael's matmul and elementwise ops."""

from __future__ import annotations

import math
import warnings

from kael.frontend import elementwise as ew
from kael.frontend import factories, factorizations, reductions, views
from kael.frontend.linalg import matmul, outer
from kael.frontend.outputs import tensor_arg
from kael.frontend.tensor import Tensor
from kael.runtime.dtypes import bool_
from kael.runtime.errors import TypeError, ValueError


def _chain_order(dims: list[int]) -> list[list[int]]:
    """split[i][j]: where the cheapest product of matrices i..j splits (dims[i] x dims[i+1]
    is matrix i), by the classic O(n^3) dynamic program."""
    n = len(dims) - 1
    cost = [[0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            cost[i][j] = -1
            for k in range(i, j):
                c = cost[i][k] + cost[k + 1][j] + dims[i] * dims[k + 1] * dims[j + 1]
                if cost[i][j] < 0 or c < cost[i][j]:
                    cost[i][j], split[i][j] = c, k
    return split


def multi_dot(tensors, *, out=None) -> Tensor:
    """The product of a chain of matrices in its cheapest order; the first may be a row
    vector and the last a column vector (1-d), as torch.linalg.multi_dot."""
    op = "multi_dot()"
    tensors = [tensor_arg(t, "multi_dot", f"tensors[{i}]") for i, t in enumerate(tensors)]
    if len(tensors) < 2:
        raise ValueError(f"{op}: expected at least 2 tensors but got {len(tensors)}")
    for i, t in enumerate(tensors):
        allowed = (1, 2) if i in (0, len(tensors) - 1) else (2,)
        if t.ndim not in allowed:
            where = "first" if i == 0 else "last" if i == len(tensors) - 1 else f"{i}th"
            want = "1D or 2D" if len(allowed) == 2 else "2D"
            raise ValueError(f"{op}: the {where} tensor must be {want} but got {t.ndim}D")
        if t.dtype is not tensors[0].dtype:
            raise TypeError(
                f"{op}: all tensors must have the same dtype but tensor 0 is "
                f"{tensors[0].dtype} and tensor {i} is {t.dtype}"
            )
    first, last = tensors[0].ndim == 1, tensors[-1].ndim == 1
    mats = list(tensors)
    if first:
        mats[0] = mats[0].unsqueeze(0)
    if last:
        mats[-1] = mats[-1].unsqueeze(-1)
    for i in range(len(mats) - 1):
        if mats[i].shape[1] != mats[i + 1].shape[0]:
            raise ValueError(
                f"{op}: tensors {i} and {i + 1} with shapes {list(mats[i].shape)} and "
                f"{list(mats[i + 1].shape)} cannot be multiplied"
            )
    split = _chain_order([m.shape[0] for m in mats] + [mats[-1].shape[1]])

    def product(i: int, j: int) -> Tensor:
        if i == j:
            return mats[i]
        k = split[i][j]
        return matmul(product(i, k), product(k + 1, j))

    result = product(0, len(mats) - 1)
    if first:
        result = result.squeeze(0)
    if last:
        result = result.squeeze(-1)
    return factorizations._out(result, out, "linalg.multi_dot")


def matrix_power(A, n: int, *, out=None) -> Tensor:
    """A^n for each square matrix by repeated squaring: n = 0 gives the identity, a
    negative n the inverse's power (float dtypes only, as PyTorch)."""
    op = "linalg.matrix_power"
    A = tensor_arg(A, op)
    if isinstance(n, bool) or not isinstance(n, int):
        raise TypeError(f"{op}(): argument 'n' must be an int, not {type(n).__name__}")
    if A.ndim < 2:
        raise ValueError(f"{op}: The input tensor A must have at least 2 dimensions.")
    if A.shape[-1] != A.shape[-2]:
        raise ValueError(
            f"{op}: A must be batches of square matrices, but they are {A.shape[-2]} by "
            f"{A.shape[-1]} matrices"
        )
    if A.dtype is bool_:
        raise TypeError(f"{op}: bool matrices are not supported")
    if n == 0:
        eye = factories.eye(A.shape[-1], dtype=A.dtype, device=A.device)
        return factorizations._out(eye.expand(A.shape).contiguous(), out, op)
    base = factorizations.inv(A) if n < 0 else A
    n = abs(n)
    result = None
    while n:
        if n & 1:
            result = base if result is None else matmul(result, base)
        n >>= 1
        if n:
            base = matmul(base, base)
    if result is A:
        result = A.clone()
    return factorizations._out(result, out, op)


def _cross(a: Tensor, b: Tensor, d: int) -> Tensor:
    """c_i = a_(i+1) b_(i+2) - a_(i+2) b_(i+1) along dim d (indices mod 3)."""
    return a.roll(-1, d) * b.roll(-2, d) - a.roll(-2, d) * b.roll(-1, d)


def linalg_cross(input, other, *, dim: int = -1, out=None) -> Tensor:
    """The cross product of 3-vectors along `dim`, broadcasting the other dims."""
    op = "linalg.cross"
    a, b = tensor_arg(input, op, "input"), tensor_arg(other, op, "other")
    if a.ndim != b.ndim:
        raise ValueError(
            f"{op}: inputs must have the same number of dimensions. Got {a.ndim} and {b.ndim}"
        )
    da, db = views.wrap_dim(dim, a.ndim), views.wrap_dim(dim, b.ndim)
    if a.shape[da] != 3 or b.shape[db] != 3:
        raise ValueError(
            f"{op}: inputs dimension {dim} must have length 3. Got {a.shape[da]} and {b.shape[db]}"
        )
    return factorizations._out(_cross(a, b, da), out, op)


def cross(input, other, dim=None, *, out=None) -> Tensor:
    """torch.cross: linalg.cross along `dim`, or (deprecated default) the first dim of
    length 3 of the broadcast shape."""
    if dim is None:
        a, b = tensor_arg(input, "cross", "input"), tensor_arg(other, "cross", "other")
        shape = (a + b).shape if a.ndim == b.ndim else a.shape
        dim = next((d for d, size in enumerate(shape) if size == 3), None)
        if dim is None:
            raise ValueError(f"cross: no dimension of size 3 in input {list(a.shape)}")
        warnings.warn("cross: dim=None is deprecated; pass dim explicitly", stacklevel=2)
    return linalg_cross(input, other, dim=dim, out=out)


def vecdot(x, y, *, dim: int = -1, out=None) -> Tensor:
    """The dot product of vectors along `dim`, broadcasting the other dims."""
    op = "linalg.vecdot"
    x, y = tensor_arg(x, op, "x"), tensor_arg(y, op, "y")
    if x.dtype is not y.dtype:
        raise TypeError(
            f"{op}: Expected x and y to have the same dtype, but found x of type {x.dtype} "
            f"and y of type {y.dtype} instead."
        )
    return factorizations._out(reductions.sum(x * y, dim), out, op)


def _no_bool(op: str, *tensors: Tensor) -> None:
    """PyTorch's products have no bool kernel: kael.TypeError naming the op."""
    if any(t.dtype is bool_ for t in tensors):
        raise TypeError(f"{op}(): not implemented for bool tensors")


def inner(input, other, *, out=None) -> Tensor:
    """The products summed over the last dims of both (shape input[:-1] + other[:-1]); a
    0-d operand multiplies the other (kael.mul's dtype rules)."""
    op = "inner"
    a, b = tensor_arg(input, op, "input"), tensor_arg(other, op, "other")
    if a.ndim == 0 or b.ndim == 0:
        return ew.binary("mul", a, b, out)
    if a.shape[-1] != b.shape[-1]:
        raise ValueError(
            f"{op}() the last dimension must match on both input tensors but got shapes "
            f"{list(a.shape)} and {list(b.shape)}"
        )
    if a.dtype is not b.dtype:
        raise TypeError(f"{op}(): both inputs should have same dtype, got {a.dtype} and {b.dtype}")
    _no_bool(op, a)
    k = a.shape[-1]
    rows, cols = math.prod(a.shape[:-1]), math.prod(b.shape[:-1])
    product = matmul(a.reshape(rows, k), b.reshape(cols, k).mT)
    return factorizations._out(product.reshape(a.shape[:-1] + b.shape[:-1]), out, op)


def ger(input, vec2, *, out=None) -> Tensor:
    """outer under its old name (PyTorch keeps it, deprecated)."""
    return outer(input, vec2, out=out)


def vdot(input, other, *, out=None) -> Tensor:
    """The dot product of two 1-d tensors of one dtype and length (no conjugate to take in
    kael's real dtypes): a 0-d tensor."""
    op = "vdot"
    a, b = tensor_arg(input, op, "input"), tensor_arg(other, op, "other")
    if a.ndim != 1 or b.ndim != 1:
        raise ValueError(f"{op}: 1D tensors expected, but got {a.ndim}D and {b.ndim}D tensors")
    if a.dtype is not b.dtype:
        raise TypeError(
            f"{op}: expected both vectors to have same dtype, but found {a.dtype} and {b.dtype}"
        )
    if a.shape != b.shape:
        raise ValueError(
            f"{op}: inconsistent tensor size, expected tensor [{a.shape[0]}] and src "
            f"[{b.shape[0]}] to have the same number of elements, but got {a.shape[0]} and "
            f"{b.shape[0]} elements respectively"
        )
    _no_bool(op, a)
    return factorizations._out(matmul(a, b), out, op)


def mv(input, vec, *, out=None) -> Tensor:
    """A matrix [n, m] times a vector [m]: the vector [n]."""
    op = "mv"
    a, v = tensor_arg(input, op, "input"), tensor_arg(vec, op, "vec")
    if a.ndim != 2 or v.ndim != 1:
        raise ValueError(f"{op}: vector + matrix @ vector expected, got 1, {a.ndim}, {v.ndim}")
    if a.shape[1] != v.shape[0]:
        raise ValueError(
            f"{op}: size mismatch, got input ({a.shape[0]}), mat ({a.shape[0]}x{a.shape[1]}), "
            f"vec ({v.shape[0]})"
        )
    if a.dtype is not v.dtype:
        raise TypeError(
            f"{op}: input tensors must have the same dtype, but got {a.dtype} and {v.dtype}"
        )
    _no_bool(op, a)
    return factorizations._out(matmul(a, v), out, op)


def chain_matmul(*matrices, out=None) -> Tensor:
    """The product of the 2-d matrices given (deprecated: linalg.multi_dot takes a list);
    one matrix gives a copy of it."""
    op = "chain_matmul"
    warnings.warn(
        "torch.chain_matmul is deprecated; use linalg.multi_dot, which takes a list of two or"
        " more tensors",
        UserWarning,
        stacklevel=2,
    )
    mats = [tensor_arg(m, op, f"matrices[{i}]") for i, m in enumerate(matrices)]
    for i, m in enumerate(mats):
        if m.ndim != 2:
            raise ValueError(
                f"{op}(): matrices[{i}] has dimension {m.ndim}, expected 2 instead"
                f" (shape {list(m.shape)})"
            )
    if not mats:
        raise ValueError(f"{op}(): Expected one or more matrices")
    if len(mats) == 1:
        return factorizations._out(mats[0].clone(), out, op)
    return multi_dot(mats, out=out)


LINALG = {
    "multi_dot": multi_dot,
    "matrix_power": matrix_power,
    "cross": linalg_cross,
    "vecdot": vecdot,
}
FUNCTIONS = {
    "matrix_power": matrix_power,
    "cross": cross,
    "inner": inner,
    "ger": ger,
    "vdot": vdot,
    "mv": mv,
    "chain_matmul": chain_matmul,
}
NOT_METHODS: frozenset[str] = frozenset({"chain_matmul"})
METHODS: dict = {}
