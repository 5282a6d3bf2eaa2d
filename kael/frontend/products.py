"""Products beyond matmul: linalg.multi_dot (the cheapest parenthesization, as PyTorch
chooses it), linalg.matrix_power (repeated squaring; a negative power inverts first),
linalg.cross / kael.cross and linalg.vecdot, and torch's vector products inner, ger, vdot,
mv and chain_matmul, each on kael's matmul and elementwise ops."""

from __future__ import annotations

import math

from kael.frontend import elementwise as ew
from kael.frontend import factories, factorizations, index_ops, reductions, views
from kael.frontend.linalg import matmul, outer
from kael.frontend.outputs import copied_out, tensor_arg
from kael.frontend.tensor import Tensor
from kael.runtime import user_warning
from kael.runtime.dtypes import bool_, complex128, float32, float64, int64
from kael.runtime.errors import TypeError, UnsupportedDtype, ValueError


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
    return copied_out(result, out, "linalg.multi_dot")


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
        return copied_out(eye.expand(A.shape).contiguous(), out, op)
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
    return copied_out(result, out, op)


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
    if a.dtype is not b.dtype:  # torch does not promote here
        raise TypeError(f"{op}: expected input and other of one dtype, got {a.dtype} and {b.dtype}")
    da, db = views.wrap_dim(dim, a.ndim), views.wrap_dim(dim, b.ndim)
    if a.shape[da] != 3 or b.shape[db] != 3:
        raise ValueError(
            f"{op}: inputs dimension {dim} must have length 3. Got {a.shape[da]} and {b.shape[db]}"
        )
    return copied_out(_cross(a, b, da), out, op)


def cross(input, other, dim=None, *, out=None) -> Tensor:
    """torch.cross: linalg.cross along `dim`, or (deprecated default) the first dim of
    length 3 of the broadcast shape."""
    if dim is None:
        a, b = tensor_arg(input, "cross", "input"), tensor_arg(other, "cross", "other")
        shape = (a + b).shape if a.ndim == b.ndim else a.shape
        dim = next((d for d, size in enumerate(shape) if size == 3), None)
        if dim is None:
            raise ValueError(f"cross: no dimension of size 3 in input {list(a.shape)}")
        user_warning.warn_once("cross: dim=None is deprecated; pass dim explicitly")
    return linalg_cross(input, other, dim=dim, out=out)


def vecdot(x, y, *, dim: int = -1, out=None) -> Tensor:
    """The dot product of vectors along `dim`, broadcasting the other dims: sum(conj(x) * y),
    as PyTorch conjugates a complex x."""
    op = "linalg.vecdot"
    x, y = tensor_arg(x, op, "x"), tensor_arg(y, op, "y")
    if not (x.dtype.is_floating_point or x.dtype.is_complex):
        raise TypeError(
            f"{op}: Expected a floating point or complex tensor as input. Got {x.dtype}"
        )
    if x.dtype is not y.dtype:
        raise TypeError(
            f"{op}: Expected x and y to have the same dtype, but found x of type {x.dtype} "
            f"and y of type {y.dtype} instead."
        )
    return copied_out(reductions.sum(x.conj() * y, dim), out, op)


def _no_bool(op: str, *tensors: Tensor) -> None:
    """PyTorch's products have no bool kernel: kael.TypeError naming the op."""
    if any(t.dtype is bool_ for t in tensors):
        raise UnsupportedDtype(f"{op}(): not implemented for bool tensors")


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
    return copied_out(product.reshape(a.shape[:-1] + b.shape[:-1]), out, op)


def ger(input, vec2, *, out=None) -> Tensor:
    """outer under its old name (PyTorch keeps it, deprecated)."""
    return outer(input, vec2, out=out)


def vdot(input, other, *, out=None) -> Tensor:
    """The dot product of two 1-d tensors of one dtype and length, the first conjugated
    (a complex one's conjugate is a copy): a 0-d tensor."""
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
    return copied_out(matmul(a.conj(), b), out, op)


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
    return copied_out(matmul(a, v), out, op)


def chain_matmul(*matrices, out=None) -> Tensor:
    """The product of the 2-d matrices given (deprecated: linalg.multi_dot takes a list);
    one matrix gives a copy of it."""
    op = "chain_matmul"
    user_warning.warn_once(
        "torch.chain_matmul is deprecated; use linalg.multi_dot, which takes a list of two or"
        " more tensors",
        UserWarning,
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
        return copied_out(mats[0].clone(), out, op)
    return multi_dot(mats, out=out)


# ---- matrix_exp ---------------------------------------------------------------------------------
# PyTorch's CPU algorithm (aten LinearAlgebra.cpp, after Bader, Blanes and Casas, "Computing the
# Matrix Exponential with an Optimized Taylor Polynomial Approximation", 2019): each matrix's
# 1-norm picks the lowest Taylor degree (1, 2, 4, 8, 12, 18) accurate to the dtype's epsilon; a
# norm above the degree-12 bound scales A by 2^-s, takes degree 18 and squares s times.

_THETAS = {
    "float32": (
        1.192092800768788e-07,
        5.978858893805233e-04,
        5.116619363445086e-02,
        5.800524627688768e-01,
        1.461661507209034e00,
        3.010066362817634e00,
    ),
    "float64": (
        2.220446049250313e-16,
        2.580956802971767e-08,
        3.397168839976962e-04,
        4.991228871115323e-02,
        2.996158913811580e-01,
        1.090863719290036e00,
    ),
}
_SQRT_177 = 0.1330413469565007072504e2
_T8_X3 = 2.0 / 3.0
_T8 = {
    "x1": _T8_X3 * ((1.0 + _SQRT_177) / 88.0),
    "x2": _T8_X3 * ((1.0 + _SQRT_177) / 352.0),
    "x4": (-271.0 + 29.0 * _SQRT_177) / (315.0 * _T8_X3),
    "x5": (-11.0 + 11.0 * _SQRT_177) / (1260.0 * _T8_X3),
    "x6": (-99.0 + 11.0 * _SQRT_177) / (5040.0 * _T8_X3),
    # x3 squared, as the paper has it (and PyTorch since fixing its degree-8 constant)
    "x7": (89.0 - _SQRT_177) / (5040.0 * _T8_X3 * _T8_X3),
    "y2": (857.0 - 58.0 * _SQRT_177) / 630.0,
}
_T12 = (
    (9.0198e-16, 0.46932117595418237389, -0.20099424927047284052, -0.04623946134063071740),
    (5.31597895759871264183, 1.19926790417132231573, 0.01179296240992997031, 0.01108844528519167989),
    (0.18188869982170434744, 0.05502798439925399070, 0.09351590770535414968, 0.00610700528898058230),
    (-2.0861320e-13, -0.13181061013830184015, -0.02027855540589259079, -0.00675951846863086359),
)  # fmt: skip
_T18 = (
    (0.0, -1.00365581030144618291e-01, -8.02924648241156932449e-03, -8.92138498045729985177e-04, 0.0),
    (0.0, 3.97849749499645077844e-01, 1.36783778460411720168e00, 4.98289622525382669416e-01, -6.37898194594723280150e-04),
    (-1.09676396052962061844e01, 1.68015813878906206114e00, 5.71779846478865511061e-02, -6.98210122488052056106e-03, 3.34975017086070470649e-05),
    (-9.04316832390810593223e-02, -6.76404519071381882256e-02, 6.75961301770459654925e-02, 2.95552570429315521194e-02, -1.39180257516060693404e-05),
    (0.0, 0.0, -9.23364619367118555360e-02, -1.69364939002081722752e-02, -1.40086798182036094347e-05),
)  # fmt: skip


def _combine(coefs, mats: list[Tensor]) -> Tensor:
    """sum_j coefs[j] * mats[j] (zero coefficients skipped)."""
    result = None
    for c, m in zip(coefs, mats):
        if c == 0:
            continue
        term = ew.binary("mul", m, c) if c != 1 else m
        result = term if result is None else ew.binary("add", result, term)
    return result


def _powers(A: Tensor, count: int) -> list[Tensor]:
    """[I, A, A^2, ..., A^(count - 1)], I expanded to A's batch."""
    eye = factories.eye(A.shape[-1], dtype=A.dtype, device=A.device).expand(A.shape)
    mats = [eye, A]
    while len(mats) < count:
        mats.append(matmul(mats[-1], A))
    return mats[:count]


def _taylor(A: Tensor, degree: int) -> Tensor:
    """PyTorch's compute_T<degree>: the Taylor polynomial of exp(A) of that degree, in
    Bader-Blanes-Casas's few-product forms."""
    if degree == 1:
        eye, a = _powers(A, 2)
        return ew.binary("add", eye, a)
    if degree == 2:
        eye, a, a2 = _powers(A, 3)
        return ew.binary("add", ew.binary("add", eye, a), ew.binary("div", a2, 2.0))
    if degree == 4:
        eye, a, a2 = _powers(A, 3)
        tail = matmul(a2, _combine((1 / 2.0, 1 / 6.0, 1 / 24.0), [eye, a, a2]))
        return _combine((1.0, 1.0, 1.0), [eye, a, tail])
    if degree == 8:
        x = _T8
        eye, a, a2 = _powers(A, 3)
        a4 = matmul(a2, _combine((x["x1"], x["x2"]), [a, a2]))
        a8 = matmul(
            _combine((_T8_X3, 1.0), [a2, a4]),
            _combine((x["x4"], x["x5"], x["x6"], x["x7"]), [eye, a, a2, a4]),
        )
        return _combine((1.0, 1.0, x["y2"], 1.0), [eye, a, a2, a8])
    if degree == 12:
        mats = _powers(A, 4)
        b = [_combine(row, mats) for row in _T12]
        b[2] = ew.binary("add", b[2], matmul(b[3], b[3]))  # A^6
        return ew.binary("add", b[0], matmul(ew.binary("add", b[1], b[2]), b[2]))
    mats = _powers(A, 4)
    mats.append(matmul(mats[3], mats[3]))  # A^6
    b = [_combine(row, mats) for row in _T18]
    b[3] = ew.binary("add", b[3], matmul(b[0], b[4]))  # A^9
    return ew.binary("add", b[1], matmul(ew.binary("add", b[2], b[3]), b[3]))


# The largest norm matrix_exp scales and squares (2**s stays a float64, s <= 1023).
_BIG = 2.0**1000


def matrix_exp(A) -> Tensor:
    """exp(A) of each square matrix (linalg.matrix_exp, torch.matrix_exp, Tensor.matrix_exp):
    PyTorch's optimized Taylor polynomials of degree chosen by each matrix's 1-norm, with
    scaling and squaring above the degree-18 bound; float and complex dtypes, as PyTorch."""
    op = "linalg.matrix_exp"
    A = tensor_arg(A, op, "A")
    if A.ndim < 2:
        raise ValueError(f"{op}: The input tensor A must have at least 2 dimensions.")
    rows, cols = A.shape[-2:]
    if rows != cols:
        raise ValueError(
            f"{op}: A must be batches of square matrices, but they are {rows} by {cols} matrices"
        )
    if not (A.dtype.is_floating_point or A.dtype.is_complex):
        raise TypeError(
            f"{op}: Expected a floating point or complex tensor as input. Got {A.dtype}"
        )
    if rows == 0 or A.numel() == 0:
        return A.clone()
    if rows == 1:
        return A.exp()
    dtype = A.dtype
    # float16 and bfloat16 take float32's polynomial (PyTorch's CPU kernels accumulate so).
    work = A.to(float32) if dtype.is_half else A
    thetas = _THETAS["float64" if work.dtype in (float64, complex128) else "float32"]
    batch = work.reshape(-1, rows, cols)
    norms = reductions.amax(reductions.sum(batch.abs(), -2), -1).tolist()
    groups: dict[tuple[int, int], list[int]] = {}
    for i, norm in enumerate(norms):
        degree = next((d for d, t in zip((1, 2, 4, 8, 12), thetas) if norm <= t), 18)
        s = max(0, math.ceil(math.log2(norm / thetas[-1]))) if degree == 18 and norm <= _BIG else 0
        if not math.isfinite(norm) or norm > _BIG:
            # a NaN or an infinity, or a norm whose scaling 2**s is past float64 (its
            # squarings overflow anyway): all NaN, as PyTorch's
            groups.setdefault((0, 0), []).append(i)
            continue
        groups.setdefault((degree, s), []).append(i)
    pieces, order = [], []
    for (degree, s), members in groups.items():
        index = factories.tensor(members, dtype=int64, device=A.device)
        sub = batch.index_select(0, index)
        if s:
            sub = ew.binary("div", sub, float(2**s))
        result = _taylor(sub, degree) if degree else factories.full_like(sub, math.nan)
        for _ in range(s):
            result = matmul(result, result)
        pieces.append(result)
        order.extend(members)
    result = pieces[0] if len(pieces) == 1 else index_ops.cat(pieces, 0)
    if order != sorted(order):
        inverse = [0] * len(order)
        for position, i in enumerate(order):
            inverse[i] = position
        result = result.index_select(0, factories.tensor(inverse, dtype=int64, device=A.device))
    return result.reshape(A.shape).to(dtype)


LINALG = {
    "multi_dot": multi_dot,
    "matrix_power": matrix_power,
    "cross": linalg_cross,
    "vecdot": vecdot,
    "matrix_exp": matrix_exp,
}
FUNCTIONS = {
    "matrix_power": matrix_power,
    "cross": cross,
    "inner": inner,
    "ger": ger,
    "vdot": vdot,
    "mv": mv,
    "chain_matmul": chain_matmul,
    "matrix_exp": matrix_exp,
}
NOT_METHODS: frozenset[str] = frozenset({"chain_matmul"})
METHODS: dict = {}
