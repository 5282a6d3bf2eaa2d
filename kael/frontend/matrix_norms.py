"""torch.linalg's norms: vector_norm, matrix_norm, norm and cond; torch's dist, renorm and
pdist on the same vector norms.

Vector norms are kael.norm's one-kernel p-norms (frontend/moments.py, scaled where a sum
of powers overflows); the matrix norms 'fro', 1, -1, inf and -inf are two reductions of
|A|; 2, -2 and 'nuc' take the singular values (frontend/singular.py's svdvals).
"""

from __future__ import annotations

import math

from kael.frontend import elementwise as ew
from kael.frontend import factorizations, moments, reductions, views
from kael.frontend.math_functions import inplace_result
from kael.frontend.outputs import copied_out, tensor_arg
from kael.frontend.tensor import Tensor, empty_impl
from kael.runtime.dtypes import as_dtype, bfloat16, bool_, float16, float32, promote_types
from kael.runtime.errors import IndexError, TypeError, UnsupportedDtype, ValueError

MATRIX_ORDERS = ("fro", "nuc", math.inf, -math.inf, 1, -1, 2, -2)


def _magnitudes(x: Tensor, dtype, op: str) -> Tensor:
    """x as a norm reads it: in `dtype` when given (a type x widens to, complex for a complex
    x, as torch's), a complex x as its magnitudes."""
    if not (x.dtype.is_floating_point or x.dtype.is_complex):
        raise TypeError(
            f"{op}: Expected a floating point or complex tensor as input. Got {x.dtype}"
        )
    if dtype is not None:
        dtype = as_dtype(dtype)
        if not (dtype.is_floating_point or dtype.is_complex):
            raise TypeError(f"{op}: dtype should be floating point or complex, but got {dtype}")
        if dtype.is_complex != x.dtype.is_complex:
            kind = "complex" if x.dtype.is_complex else "real"
            raise TypeError(f"{op}: dtype should be {kind} for {kind} inputs, but got {dtype}")
        if promote_types(x.dtype, dtype) != dtype:
            raise TypeError(
                f"{op}: the dtype of the input ({x.dtype}) should be convertible without "
                f"narrowing to the specified dtype ({dtype})"
            )
        x = x.to(dtype)
    return x.abs() if x.dtype.is_complex else x


def vector_norm(x, ord=2, dim=None, keepdim: bool = False, *, dtype=None, out=None) -> Tensor:
    """The vector ord-norm of x over `dim` (all of x by default), as torch.linalg does:
    2, 1, 0 (count of nonzeros), inf, -inf or any other real order."""
    op = "linalg.vector_norm"
    x = tensor_arg(x, op, "x")
    x = _magnitudes(x, dtype, op)
    if isinstance(ord, bool) or not isinstance(ord, int | float):
        raise TypeError(f"{op}(): argument 'ord' must be a number, not {type(ord).__name__}")
    if isinstance(dim, list):
        dim = tuple(dim)
    _refuse_empty(x, ord, dim, op)
    return moments.norm(x, ord, dim, keepdim, out=out)


def _refuse_empty(x: Tensor, ord, dim, op: str) -> None:
    """torch's refusal of an order with no identity (inf, or below 0: a max or a min of
    powers) over an empty tensor, or over an empty dim it reduces."""
    if x.numel() or not (ord < 0 or math.isinf(ord)):
        return
    why = "because the operation does not have an identity"
    if dim is None:
        raise ValueError(f"{op} cannot compute the {ord} norm on an empty tensor {why}")
    for d in dim if isinstance(dim, tuple) else (dim,):
        if x.shape[views.wrap_dim(d, x.ndim)] == 0:
            raise ValueError(
                f"{op} cannot compute the {ord} norm on the dimension {d} because this "
                f"dimension is empty and the operation does not have an identity"
            )


def _two_dims(A: Tensor, dim, op: str) -> tuple[int, int]:
    if not (isinstance(dim, tuple | list) and len(dim) == 2):
        raise ValueError(f"{op}: dim must be a 2-tuple. Got {dim}")
    d0, d1 = (views.wrap_dim(d, A.ndim) for d in dim)
    if d0 == d1:
        raise ValueError(f"{op}: dims must be different. Got ({dim[0]}, {dim[1]})")
    return d0, d1


def _singular_values(A: Tensor, d0: int, d1: int) -> Tensor:
    from kael.frontend import singular  # its module imports this one's neighbours

    return singular.LINALG["svdvals"](A.movedim((d0, d1), (-2, -1)))


def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim: bool = False, *, dtype=None, out=None):
    """The matrix ord-norm over the two dims `dim`: 'fro', 'nuc', inf, -inf, 1, -1, 2, -2."""
    op = "linalg.matrix_norm"
    A = tensor_arg(A, op)
    if A.ndim < 2:
        raise ValueError(f"{op}: The input tensor A must have at least 2 dimensions.")
    if ord not in MATRIX_ORDERS or isinstance(ord, bool):
        raise ValueError(f"{op}: Order {ord} not supported.")
    if A.dtype.is_complex and ord in ("nuc", 2, -2):  # kael's SVD is real
        raise UnsupportedDtype(f'"{op}" with ord={ord!r} not implemented for {A.dtype}')
    A = _magnitudes(A, dtype, op)
    d0, d1 = _two_dims(A, dim, op)
    if ord == "fro":
        result = moments.norm(A, 2, (d0, d1), keepdim)
    elif ord in ("nuc", 2, -2):
        s = _singular_values(A, d0, d1)
        if ord == "nuc" or (ord == 2 and s.shape[-1] == 0):  # an empty matrix's 2-norm: 0
            result = s.sum(-1)
        elif s.shape[-1] == 0:
            raise ValueError(f"{op}: Expected a non-empty matrix for the {ord}-norm")
        else:
            result = s.amax(-1) if ord == 2 else s.amin(-1)
        if keepdim:
            for d in sorted((d0, d1)):
                result = result.unsqueeze(d)
    else:
        # 1 / -1: the largest / smallest column sum of |A|; inf / -inf: row sums.
        summed, kept = (d0, d1) if abs(ord) == 1 else (d1, d0)
        sums = reductions.sum(A.abs(), summed, keepdim=True)
        reduce = reductions.amax if ord > 0 else reductions.amin
        if not sums.shape[kept] and ord < 0:  # no columns (rows) to take the least of
            raise IndexError(
                f"{op}: the {ord}-norm of a matrix with no {'columns' if ord == -1 else 'rows'}"
                f" (shape {list(A.shape)}) has no least sum, as torch's amin()"
            )
        if not sums.shape[kept]:  # no columns (rows) to choose from: 0, as torch's
            reduce = reductions.sum
        result = reduce(sums, kept, keepdim=True)
        if not keepdim:
            result = result.squeeze((d0, d1))
    return copied_out(result, out, op)


def norm(A, ord=None, dim=None, keepdim: bool = False, *, dtype=None, out=None) -> Tensor:
    """torch.linalg.norm: a vector norm over one dim (or all of a flattened A when ord and
    dim are None), a matrix norm over two."""
    op = "linalg.norm"
    A = tensor_arg(A, op)
    if isinstance(dim, int):
        dim = (dim,)
    if dim is None and ord is not None:
        if A.ndim not in (1, 2):
            raise ValueError(
                f"{op}: If dim is not specified but ord is, the input must be 1D or 2D. Got "
                f"{A.ndim}D."
            )
        dim = tuple(range(A.ndim))
    if dim is not None and len(dim) == 2:
        return matrix_norm(A, "fro" if ord is None else ord, dim, keepdim, dtype=dtype, out=out)
    if isinstance(ord, str):
        raise ValueError(f"{op}: Order {ord} not supported for a vector norm.")
    return vector_norm(A, 2 if ord is None else ord, dim, keepdim, dtype=dtype, out=out)


def cond(A, p=None, *, out=None) -> Tensor:
    """The condition number of each matrix in the p-norm: sigma_max / sigma_min for
    p = None, 2 (and the inverse for -2), else norm(A) * norm(inv(A)); inf where singular."""
    op = "linalg.cond"
    A = factorizations.matrices(A, op)
    if p is None or p in (2, -2):
        s = _singular_values(A, A.ndim - 2, A.ndim - 1)
        if not s.shape[-1]:  # 0 x 0 matrices: 0, as torch's
            result = s.sum(-1)
        else:
            ratio = s.amax(-1) / s.amin(-1)
            result = ratio.reciprocal() if p == -2 else ratio
    else:
        factorizations.square(A, op)
        inverse, info = factorizations.inv_ex(A)
        # A singular matrix's condition number is infinite (torch's 'nuc': norm(A) * inf,
        # NaN for a zero matrix), not an error: its inverse stays out of the norm
        singular = info.ne(0)
        inverse = ew.where(singular.unsqueeze(-1).unsqueeze(-1), 0.0, inverse)
        norm = matrix_norm(A, p)
        infinite = norm * math.inf if p == "nuc" else math.inf
        result = ew.where(singular, infinite, norm * matrix_norm(inverse, p))
    return copied_out(result, out, op)


# ---- torch.dist, torch.renorm, torch.pdist -----------------------------------------------------


def _order(p, op: str, what: str = "p") -> float:
    """A norm order as torch's parser takes it: any real number (a bool counts as one)."""
    if isinstance(p, Tensor) and p.ndim == 0:
        p = p.item()
    if not isinstance(p, int | float):
        raise TypeError(f"{op}(): argument '{what}' must be Number, not {type(p).__name__}")
    return float(p)


def dist(input, other, p=2) -> Tensor:
    """torch.dist: the p-norm of input - other (broadcast), a 0-d tensor of the promoted
    float dtype; p = 0 counts the differing elements, inf / -inf take the largest /
    smallest difference, any other real p is sum(|d|^p)^(1/p)."""
    op = "dist"
    x = tensor_arg(input, op)
    if not isinstance(other, Tensor):
        raise TypeError(
            f"{op}(): argument 'other' (position 2) must be Tensor, not {type(other).__name__}"
        )
    p = _order(p, op)
    dtype = promote_types(x.dtype, other.dtype)
    if dtype is bool_:
        raise TypeError(
            "Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` "
            "or `logical_xor()` operator instead."
        )
    if not (dtype.is_floating_point or dtype.is_complex):
        raise TypeError(
            f"{op}: norm(): input dtype should be either floating point or complex. Got {dtype} "
            "instead."
        )
    difference = ew.binary("sub", x, other)
    return vector_norm(difference, p)


def renorm(input, p, dim, maxnorm) -> Tensor:
    """torch.renorm: each sub-tensor input.select(dim, i) whose p-norm exceeds maxnorm
    scaled by maxnorm / (norm + 1e-7), as PyTorch scales; the others unchanged."""
    op = "renorm"
    x = tensor_arg(input, op)
    p = _order(p, op)
    maxnorm = _order(maxnorm, op, "maxnorm")
    if isinstance(dim, bool) or not isinstance(dim, int):
        raise TypeError(
            f"{op}(): argument 'dim' (position 3) must be int, not {type(dim).__name__}"
        )
    if not x.dtype.is_floating_point:
        raise TypeError(f"{op}: Expected a floating point tensor as input. Got {x.dtype}")
    if p <= 0:
        raise ValueError(f"{op}: non-positive-norm not supported (p = {p})")
    if maxnorm < 0:
        raise ValueError(f"{op}: expected maxnorm to be >= 0 but got {maxnorm:g}")
    if x.ndim <= 1:
        raise ValueError(f"{op}: input needs at least 2 dimensions, got {x.ndim} dimensions")
    d = views.wrap_dim(dim, x.ndim)
    others = tuple(i for i in range(x.ndim) if i != d)
    # Half-precision inputs take their norms in float32 (PyTorch's accumulate type).
    wide = x.to(float32) if x.dtype in (float16, bfloat16) else x
    if x.numel() == 0:
        return x.clone()
    norms = moments.norm(wide, p, others, True)
    factor = ew.where(norms.gt(maxnorm), maxnorm / (norms + 1e-7), 1.0).to(x.dtype)
    out = Tensor(empty_impl(x.shape, x.dtype, x.device))  # row-major, as torch's renorm's
    return ew.binary("mul", x, factor, out)


def pdist(input, p=2) -> Tensor:
    """torch.pdist: the p-norm distance between each pair of rows i < j of an N x M input,
    [N (N - 1) / 2] in the upper triangle's row-major order (kael.nn.functional.pdist's
    kernels, after torch.pdist's own checks)."""
    from kael.frontend import layers  # nn's module: imported late, as kael.nn is

    op = "pdist"
    x = tensor_arg(input, op)
    p = _order(p, op)
    if not x.dtype.is_floating_point:
        raise TypeError(f"{op} only supports floating-point dtypes, got {x.dtype}")
    if x.ndim == 2 and p >= 0 and x.dtype in (float16, bfloat16):
        raise UnsupportedDtype(f'"{op}" not implemented for {x.dtype}')
    return layers.pdist(x, p)


LINALG = {"vector_norm": vector_norm, "matrix_norm": matrix_norm, "norm": norm, "cond": cond}
# ops.py's FAMILIES does not list this module: products.py merges these three tables into its own.
FUNCTIONS: dict = {"dist": dist, "renorm": renorm, "pdist": pdist}
NOT_METHODS: frozenset[str] = frozenset({"pdist"})  # torch has no Tensor.pdist
METHODS: dict = {"renorm_": inplace_result("renorm_", renorm)}
