"""Contractions as PyTorch has them: einsum (any equation: repeated indices, ellipsis,
implicit output), tensordot, kron and cdist, each reduced to views, kael's reductions and
its batched matmul kernel (a contraction is one product over permuted, reshaped
operands, never a broadcast multiply and sum). An equation's parse is kept per equation and
operand ranks; matmul's own equation (P ij, P jk -> P ik, shapes as matmul takes them) goes
to matmul directly, with the same bits; an einsum of large operands replays a plan of
kael's own per equation and layouts (PLANNED_FROM_BYTES)."""

from __future__ import annotations

import functools
import math
import string

from kael.frontend import index_ops, linalg, reductions, views
from kael.frontend.compiled import CompiledFunction
from kael.frontend.margins import distance
from kael.frontend.outputs import device_of, tensor_arg
from kael.frontend.shapes import diagonal
from kael.frontend.tensor import Tensor
from kael.runtime.device import CPU
from kael.runtime.errors import TypeError, ValueError
from kael.runtime.tracestate import state

_ELLIPSIS = [chr(0x3B1 + i) for i in range(24)]  # Greek letters: never an equation's own


# ---- einsum ----------------------------------------------------------------------------------


@functools.lru_cache(maxsize=1024)
def _parse(equation: str, ndims: tuple[int, ...]) -> tuple[tuple[str, ...], str]:
    """Each operand's index string and the output's, '...' expanded into letters of its own
    (right-aligned across operands, as broadcasting aligns them); `ndims` are the operands'
    ranks. Kept per equation and ranks: a small einsum would spend a third of its time here."""
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(ndims):
        raise ValueError(
            f"einsum(): {len(terms)} operands in the equation {equation!r} but {len(ndims)} given"
        )
    widest = 0
    expanded = []
    for term, ndim in zip(terms, ndims):
        named = term.replace("...", "")
        if any(c not in string.ascii_letters for c in named) or term.count("...") > 1:
            raise ValueError(f"einsum(): invalid subscript in {term!r} of {equation!r}")
        if "..." in term:
            extra = ndim - len(named)
            if extra < 0:
                raise ValueError(f"einsum(): {term!r} has more indices than operand dims {ndim}")
            widest = max(widest, extra)
            term = term.replace("...", "".join(_ELLIPSIS[len(_ELLIPSIS) - extra :]))
        elif len(term) != ndim:
            raise ValueError(
                f"einsum(): the subscript {term!r} has {len(term)} indices for an operand of"
                f" {ndim} dims"
            )
        expanded.append(term)
    dots = "".join(_ELLIPSIS[len(_ELLIPSIS) - widest :])
    if not arrow:
        counts = {c: lhs.count(c) for c in set(lhs) if c in string.ascii_letters}
        return tuple(expanded), dots + "".join(sorted(c for c, n in counts.items() if n == 1))
    if rhs.replace("...", "") and any(
        c not in string.ascii_letters for c in rhs.replace("...", "")
    ):
        raise ValueError(f"einsum(): invalid output subscript {rhs!r}")
    out = rhs.replace("...", dots)
    if len(set(out)) != len(out):
        raise ValueError(f"einsum(): output subscript {rhs!r} repeats an index")
    known = set("".join(expanded))
    missing = [c for c in out if c not in known]
    if missing:
        raise ValueError(f"einsum(): output index {missing[0]!r} appears in no operand")
    return tuple(expanded), out


def _unique(x: Tensor, term: str) -> tuple[Tensor, str]:
    """x with each repeated index taken along its diagonal (moved last)."""
    while len(set(term)) != len(term):
        c = next(c for c in term if term.count(c) > 1)
        first = term.index(c)
        second = term.index(c, first + 1)
        x = diagonal(x, 0, first, second)
        term = term[:first] + term[first + 1 : second] + term[second + 1 :] + c
    return x, term


def _sum_out(x: Tensor, term: str, keep: set[str]) -> tuple[Tensor, str]:
    """x summed over the indices no one needs later."""
    drop = [i for i, c in enumerate(term) if c not in keep]
    if not drop:
        return x, term
    return reductions.sum(x, tuple(drop)), "".join(c for c in term if c in keep)


def _arranged(x: Tensor, term: str, order: str, sizes: dict[str, int]) -> Tensor:
    """x permuted into `order` (every index of term), size-1 dims expanded to `sizes`;
    x itself where both are no-ops (the common case: half of a small einsum's time)."""
    if term != order:
        x = x.permute(*[term.index(c) for c in order])
    shape = tuple(sizes[c] for c in order)
    return x if x.shape == shape else x.expand(*shape)


def _matrices(x: Tensor, shape: tuple[int, int, int]) -> Tensor:
    """x as a batch of matrices of `shape` (itself when it has that shape)."""
    return x if x.shape == shape else x.reshape(shape)


def _contract(a: Tensor, ta: str, b: Tensor, tb: str, keep: set[str], sizes) -> tuple[Tensor, str]:
    """The product of two operands over their shared indices not kept, as one batched
    matmul: [batch, a-only, shared] @ [batch, shared, b-only]; with nothing to sum, as
    PyTorch, a broadcast multiply (bool too, and -0.0 kept)."""
    batch = "".join(c for c in ta if c in tb and c in keep)
    shared = "".join(c for c in ta if c in tb and c not in keep)
    left = "".join(c for c in ta if c not in tb)
    right = "".join(c for c in tb if c not in ta)
    size = lambda s: math.prod(sizes[c] for c in s)  # noqa: E731
    am = _arranged(a, ta, batch + left + shared, sizes)
    bm = _arranged(b, tb, batch + shared + right, sizes)
    am = _matrices(am, (size(batch), size(left), size(shared)))
    bm = _matrices(bm, (size(batch), size(shared), size(right)))
    product = linalg.matmul(am, bm) if shared else am * bm  # [B, L, 1] * [B, 1, R]
    term = batch + left + right
    return product.reshape(tuple(sizes[c] for c in term)), term


def _subscript(n) -> str:
    """A sublist's subscript as an equation's: 0-25 are A-Z, 26-51 a-z, Ellipsis '...'."""
    if n is Ellipsis:
        return "..."
    n = views.as_int(n, "einsum(): subscript")
    if not 0 <= n < 52:
        raise ValueError(
            f"einsum(): subscript in subscript list is not within the valid range [0, 52), got {n}"
        )
    return chr(ord("A") + n) if n < 26 else chr(ord("a") + n - 26)


def _from_sublists(args: tuple) -> tuple[str, tuple]:
    """einsum(op0, sublist0, op1, sublist1, ..., [output sublist]) as (equation, operands)."""
    operands, sublists = args[0::2], list(args[1::2])
    output = None
    if len(args) % 2:  # an odd count: the last is the output's sublist
        output, operands = args[-1], operands[:-1]

    def listed(s) -> list:
        if isinstance(s, Tensor) or hasattr(s, "__array__"):  # torch takes these too
            s = s.tolist()
        if not isinstance(s, list | tuple):
            raise TypeError(f"einsum(): expected a list of subscripts, got {type(s).__name__}")
        return list(s)

    sublists = [listed(s) for s in sublists]
    terms = ["".join(_subscript(n) for n in s) for s in sublists]
    equation = ",".join(terms)
    if output is not None:
        equation += "->" + "".join(_subscript(n) for n in listed(output))
    return equation, operands


def _sizes(xs: list[Tensor], terms: tuple[str, ...], equation: str) -> dict[str, int]:
    """Each index's size: equal wherever it appears, or 1 (broadcast) in all but one."""
    sizes: dict[str, int] = {}
    for x, term in zip(xs, terms):
        for c, n in zip(term, x.shape):
            if sizes.get(c, 1) not in (1, n) and n != 1:
                raise ValueError(
                    f"einsum(): index {c!r} has size {sizes[c]} in one operand and {n} in"
                    f" another ({equation!r})"
                )
            sizes[c] = max(sizes.get(c, 1), n) if n else 0
    return sizes


def _contracted(xs: list[Tensor], terms: tuple[str, ...], out: str, sizes) -> Tensor:
    """The einsum of xs: repeated indices taken along diagonals, lone indices summed out,
    then the operands contracted left to right, each pair as one batched matmul."""
    pairs = [_unique(x, t) for x, t in zip(xs, terms)]
    for i, (x, t) in enumerate(pairs):  # what no other operand and no output needs
        later = set(out).union(*(set(u) for j, (_, u) in enumerate(pairs) if j != i))
        pairs[i] = _sum_out(x, t, later)
    acc, term = pairs[0]
    for i in range(1, len(pairs)):
        x, t = pairs[i]
        keep = set(out).union(*(set(u) for _, u in pairs[i + 1 :]))
        acc, term = _contract(acc, term, x, t, keep, sizes)
    acc, term = _sum_out(acc, term, set(out))
    result = _arranged(acc, term, out, sizes) if term else acc
    # one operand, nothing summed: torch's result is x's permuted diagonal view itself
    views_only = len(xs) == 1 and set(terms[0]) == set(out)
    if result.ndim and not result.is_contiguous() and not views_only:
        return result.contiguous()
    return result.view(result.shape) if any(result is x for x in xs) else result  # a view


@functools.lru_cache(maxsize=1024)
def _is_matmul(terms: tuple[str, ...], out: str) -> bool:
    """Whether the equation is matmul's own, P ij, P jk -> P ik (P batch indices, all
    distinct): matmul then gives the general path's bits without its bookkeeping."""
    if len(terms) != 2 or len(terms[0]) < 2:
        return False
    a, b = terms
    batch, i, j, k = a[:-2], a[-2], a[-1], b[-1]
    return b == batch + j + k and out == batch + i + k and j not in out


def _matmul_shaped(a: Tensor, b: Tensor) -> bool:
    """Whether a @ b needs no einsum broadcasting: equal batch dims and inner sizes."""
    return a.shape[:-2] == b.shape[:-2] and a.shape[-1] == b.shape[-2]


def einsum(equation: str, *operands) -> Tensor:
    """Sums of products over the indices of `equation` (NumPy's and PyTorch's notation);
    a list of operands may be passed as one argument, and the sublist form einsum(op0,
    [0, 1], op1, [1, 2], [0, 2]) (subscripts 0-51) is taken too."""
    if isinstance(equation, Tensor):
        equation, operands = _from_sublists((equation, *operands))
    if not isinstance(equation, str):
        raise TypeError(f"einsum(): the equation must be a str, not {type(equation).__name__}")
    if len(operands) == 1 and isinstance(operands[0], list | tuple):
        operands = tuple(operands[0])
    xs = [tensor_arg(x, "einsum") for x in operands]
    if not xs:
        raise ValueError("einsum(): must provide at least one operand")
    device = device_of(xs, "einsum")
    terms, out = _parse(equation, tuple(x.ndim for x in xs))
    if _is_matmul(terms, out) and _matmul_shaped(*xs):
        return linalg.matmul(*xs)
    sizes = _sizes(xs, terms, equation)
    if _planned(xs, device):
        return _PLAN(equation, *xs)
    return _contracted(xs, terms, out, sizes)


# An eager einsum whose operands hold at least PLANNED_FROM_BYTES runs as a plan of kael's
# own (its contraction traced once per equation and layouts, then replayed): the ~40 us of
# Python around its products is then paid once ([64, 256] x [64, 256, 256] x [64, 256]
# bilinear form, 2 threads: 0.385 -> ~0.32 ms; torch 0.35). Smaller ones keep the eager
# path: a trace costs milliseconds.
PLANNED_FROM_BYTES = 8 << 20


def _planned(xs: list[Tensor], device) -> bool:
    """Whether an eager einsum of xs (on `device`) runs its plan (see PLANNED_FROM_BYTES)."""
    big = sum(x.numel() * x.dtype.itemsize for x in xs) >= PLANNED_FROM_BYTES
    return big and state.trace is None and device is CPU


def _contracted_plan(equation: str, *xs: Tensor) -> Tensor:
    """The contraction an equation names, traced: its parse and sizes follow the operands'
    shapes, which the plan's signature holds."""
    terms, out = _parse(equation, tuple(x.ndim for x in xs))
    return _contracted(list(xs), terms, out, _sizes(list(xs), terms, equation))


_PLAN = CompiledFunction(_contracted_plan, max_recompiles=None)


# ---- tensordot, kron, cdist ------------------------------------------------------------------


def tensordot(a: Tensor, b: Tensor, dims=2) -> Tensor:
    """The sum over a's `dims` last (or listed) dims of a times b's first (or listed) ones."""
    x, y = tensor_arg(a, "tensordot"), tensor_arg(b, "tensordot", "b")
    if isinstance(dims, Tensor):  # a count (0-d) or the two dim lists (2-d), as torch takes
        dims = dims.item() if dims.ndim == 0 else dims.tolist()
    if isinstance(dims, int):
        if dims < 0 or dims > min(x.ndim, y.ndim):
            raise ValueError(
                f"tensordot expects dims between 0 and {min(x.ndim, y.ndim)}, got {dims}"
            )
        da, db = list(range(x.ndim - dims, x.ndim)), list(range(dims))
    else:
        da, db = ([d] if isinstance(d, int) else list(d) for d in dims)
        if len(da) != len(db):
            raise ValueError(f"tensordot: both dim lists must have one length, got {da} and {db}")
        da = [views.wrap_dim(d, x.ndim) for d in da]
        db = [views.wrap_dim(d, y.ndim) for d in db]
    for k, (i, j) in enumerate(zip(da, db)):
        if x.shape[i] != y.shape[j]:
            raise ValueError(
                f"contracted dimensions need to match, but first has size {x.shape[i]} in dim"
                f" {i} and second has size {y.shape[j]} in dim {j}"
            )
        for d, ds in ((i, da), (j, db)):
            if d in ds[:k]:
                raise ValueError(f"dim {d} appears multiple times in the list of dims")
    letters = iter(string.ascii_letters)
    ta = [next(letters) for _ in range(x.ndim)]
    tb = [next(letters) for _ in range(y.ndim)]
    for i, j in zip(da, db):
        tb[j] = ta[i]
    out = [c for i, c in enumerate(ta) if i not in da] + [
        c for j, c in enumerate(tb) if j not in db
    ]
    return einsum(f"{''.join(ta)},{''.join(tb)}->{''.join(out)}", x, y)


def kron(input: Tensor, other: Tensor) -> Tensor:
    """The Kronecker product: block (i, j, ...) is input[i, j, ...] * other."""
    a, b = tensor_arg(input, "kron"), tensor_arg(other, "kron", "other")
    rank = max(a.ndim, b.ndim)
    sa = (1,) * (rank - a.ndim) + a.shape
    sb = (1,) * (rank - b.ndim) + b.shape
    left = a.reshape(tuple(n for s in sa for n in (s, 1)))
    right = b.reshape(tuple(n for s in sb for n in (1, s)))
    return (left * right).reshape(tuple(x * y for x, y in zip(sa, sb)))


def cdist(x1: Tensor, x2: Tensor, p: float = 2.0, compute_mode=None) -> Tensor:
    """The p-norm distance of every row of x1 [.., P, M] to every row of x2 [.., R, M]:
    [.., P, R]. For p = 2 with more than 25 rows (PyTorch's default choice) through one
    matmul, |x|^2 + |y|^2 - 2 x.y clamped at 0, exactly as PyTorch arranges it."""
    a, b = tensor_arg(x1, "cdist"), tensor_arg(x2, "cdist", "x2")
    if a.ndim < 2 or b.ndim < 2:
        raise ValueError(f"cdist only supports at least 2D tensors, X1 got: {a.ndim}D")
    if a.shape[-1] != b.shape[-1]:
        raise ValueError(
            f"X1 and X2 must have the same number of columns. X1: {a.shape[-1]} X2: {b.shape[-1]}"
        )
    if not a.dtype.is_floating_point or a.dtype is not b.dtype:
        raise ValueError(
            f"cdist only supports floating-point dtypes of one kind, got {a.dtype} and {b.dtype}"
        )
    if not p >= 0:  # NaN too
        raise ValueError(f"cdist only supports non-negative p values, got {p}")
    modes = (
        None,
        "use_mm_for_euclid_dist_if_necessary",
        "use_mm_for_euclid_dist",
        "donot_use_mm_for_euclid_dist",
    )
    if compute_mode not in modes:
        raise ValueError(f"{compute_mode} is not a valid value for compute_mode")
    rows = max(a.shape[-2], b.shape[-2])
    use_mm = p == 2 and (
        compute_mode == "use_mm_for_euclid_dist"
        or (compute_mode in (None, "use_mm_for_euclid_dist_if_necessary") and rows > 25)
    )
    if use_mm:
        na = reductions.sum(a * a, -1, keepdim=True)
        nb = reductions.sum(b * b, -1, keepdim=True)
        ones_a, ones_b = na * 0 + 1, nb * 0 + 1
        left = index_ops.cat([a * -2, na, ones_a], -1)
        right = index_ops.cat([b, ones_b, nb], -1)
        return linalg.matmul(left, right.transpose(-2, -1)).clamp(min=0).sqrt()
    return distance(a.unsqueeze(-2) - b.unsqueeze(-3), p)


FUNCTIONS = {"einsum": einsum, "tensordot": tensordot, "kron": kron, "cdist": cdist}
NOT_METHODS: frozenset[str] = frozenset({"einsum", "tensordot", "cdist"})
METHODS: dict = {}
