"""The fuzzer's vocabulary (tests/frontend/test_fuzz.py): hypothesis strategies for tensors
(dtype, shape, layout, values) and the table of kael's public ops, each one line of code
that runs unchanged with `L` bound to kael or to torch.

A tensor is a Spec: a flat base array and an as_strided view of it, so one description
builds the same bytes in the same layout in both libraries, and shrinks towards a small,
contiguous, zero-offset tensor of plain values. An op is a code template; its fields are
filled with names to run it and with literals to print a repro that runs as written.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch
from hypothesis import event
from hypothesis import strategies as st

import kael
from kael.frontend.elementwise import BINARY, UNARY
from kael.frontend.ops import INPLACE_BINARY

DTYPES = ("float32", "float64", "int64", "bool")
NUMPY = {"float32": np.float32, "float64": np.float64, "int64": np.int64, "bool": np.bool_}
I64_MIN, I64_MAX = -(2**63), 2**63 - 1

# ---- values ----------------------------------------------------------------------------------

_F32, _F64 = np.finfo(np.float32), np.finfo(np.float64)
NICE = {
    "float": [0.0, 1.0, -1.0, 0.5, -2.0, 2.5, -0.25, 3.0, 4.0, -1.5],
    "int64": [0, 1, -1, 2, -3, 3, 4, -4],
    "bool": [False, True],
}
SPECIAL = {
    "float32": [math.nan, math.inf, -math.inf, -0.0, float(_F32.max), -float(_F32.max), 1e30,
                float(_F32.tiny), float(_F32.smallest_subnormal), -1e-40, 16777217.0],
    "float64": [math.nan, math.inf, -math.inf, -0.0, float(_F64.max), -float(_F64.max), 1e300,
                float(_F64.tiny), 5e-324, -1e-310, 2.0**53 + 1],
    "int64": [I64_MIN, I64_MIN + 1, I64_MAX, 0, -1, 2**62, -(2**32), 2**53 + 1],
    "bool": [False, True],
}  # fmt: skip


def element(dtype: str, kind: str) -> st.SearchStrategy:
    """One element of `dtype`: nice (small, exactly representable), special (nice mixed with
    NaN, infinities, -0.0, extremes, subnormals) or wide (anything of that dtype)."""
    nice = st.sampled_from(NICE["float" if dtype.startswith("float") else dtype])
    if kind == "nice" or dtype == "bool":
        return nice
    if kind == "special":
        return st.one_of(nice, st.sampled_from(SPECIAL[dtype]))
    if dtype == "int64":
        return st.integers(I64_MIN, I64_MAX)
    return st.floats(width=32 if dtype == "float32" else 64)


@st.composite
def storage(draw, dtype: str, length: int) -> np.ndarray:
    """`length` elements: drawn from a small pool (ties, specials) or, for kind "normal",
    distinct-ish values from a seeded generator (sort orders, softmax rows)."""
    kind = draw(st.sampled_from(("nice", "normal", "special", "wide")))
    event(f"values: {kind}")
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    if kind == "normal":
        if dtype == "bool":
            return rng.random(length) < 0.5
        if dtype == "int64":
            return rng.integers(-20, 21, length)
        return (rng.standard_normal(length) * 3).round(2).astype(NUMPY[dtype])
    pool = draw(st.lists(element(dtype, kind), min_size=1, max_size=6))
    arr = np.array(pool, dtype=object)[rng.integers(len(pool), size=length)]
    return np.array(arr.tolist(), dtype=NUMPY[dtype]).reshape(length)


# ---- tensors ---------------------------------------------------------------------------------


def _literal(v, dtype: str = "") -> str:
    """Python source for one element: float('nan') and float('inf') spelled out, float32
    values in their shortest float32 form."""
    if isinstance(v, float) and not math.isfinite(v):
        return f"float('{v}')"
    if dtype == "float32":
        return str(np.float32(v))
    return repr(v)


@dataclass(frozen=True, eq=False)
class Spec:
    """A tensor both libraries build from the same bytes: `base` (1-d) viewed as_strided."""

    base: np.ndarray
    size: tuple[int, ...]
    stride: tuple[int, ...]
    offset: int
    dtype: str

    def make(self, L):
        """A fresh tensor of library L (its own copy of the bytes) and its base."""
        arr = self.base.copy()
        base = kael.tensor(arr) if L is kael else torch.from_numpy(arr)
        if self.is_plain():
            return base.view(self.size), base
        return base.as_strided(self.size, self.stride, self.offset), base

    def is_plain(self) -> bool:
        """Whether the view is the whole base, contiguous (printed without as_strided)."""
        return (
            self.offset == 0
            and len(self.base) == math.prod(self.size)
            and (self.stride == contiguous_strides(self.size))
        )

    def code(self) -> str:
        """Source that builds this tensor with `L`, for the repro."""
        values = "[" + ", ".join(_literal(v, self.dtype) for v in self.base.tolist()) + "]"
        made = f"L.tensor({values}, dtype=L.{self.dtype})"
        if self.is_plain():
            return made if len(self.size) == 1 else f"{made}.view({self.size})"
        return f"{made}.as_strided({self.size}, {self.stride}, {self.offset})"


def contiguous_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    """Row-major strides of `shape` (size-0 dims count as 1, as in kael and torch)."""
    strides, acc = [], 1
    for s in reversed(shape):
        strides.append(acc)
        acc *= max(s, 1)
    return tuple(reversed(strides))


SIZES = st.sampled_from((2, 1, 3, 0, 4, 5))


@st.composite
def shapes(draw, min_rank: int = 0, max_rank: int = 4) -> tuple[int, ...]:
    """Ranks 0-4, sizes 0-5 (at most 3 beyond rank 2, so a tensor stays small)."""
    rank = draw(st.integers(min_rank, max_rank))
    sizes = SIZES if rank <= 2 else st.sampled_from((2, 1, 3, 0))
    return tuple(draw(sizes) for _ in range(rank))


@st.composite
def layouts(draw, shape: tuple[int, ...]) -> tuple[tuple[int, ...], int, int]:
    """(strides, offset, storage length) of a random layout for `shape`: dims laid out in a
    random memory order (transposed, permuted), each stepped by 1-3 (slices with a step),
    some broadcast (stride 0, expanded), size-1 dims with odd strides, and an offset."""
    rank = len(shape)
    order = draw(st.permutations(range(rank)))  # order[-1] is the fastest dim
    strides = [0] * rank
    acc = 1
    for d in reversed(order):
        if shape[d] == 1:
            strides[d] = draw(st.sampled_from((acc, 0, 7, 1)))
            continue
        if shape[d] > 1 and draw(st.integers(0, 5)) == 0:
            strides[d] = 0  # broadcast
            continue
        strides[d] = acc * draw(st.sampled_from((1, 1, 2, 3)))
        acc = strides[d] * max(shape[d], 1)
    offset = draw(st.sampled_from((0, 0, 1, 3)))
    numel = math.prod(shape)
    span = sum((s - 1) * st_ for s, st_ in zip(shape, strides)) + 1 if numel else 0
    length = offset + span + draw(st.sampled_from((0, 0, 1)))
    kinds = [
        name
        for name, hit in (
            ("permuted", list(order) != sorted(order)),
            ("stepped", any(s > 1 for s in strides) and strides != list(contiguous_strides(shape))),
            ("broadcast", any(st_ == 0 and s > 1 for s, st_ in zip(shape, strides))),
            ("offset", offset > 0),
        )
        if hit
    ]
    event("layout: " + ("+".join(kinds) or "contiguous"))
    return tuple(strides), offset, length


@st.composite
def specs(draw, shape=None, dtype=None, values=None) -> Spec:
    """A Spec of `shape` and `dtype` (drawn when None) in a random layout; `values`, when
    given, maps (draw, storage length) to the elements (index tensors' in-range values)."""
    shape = draw(shapes()) if shape is None else tuple(shape)
    dtype = draw(st.sampled_from(DTYPES)) if dtype is None else dtype
    strides, offset, length = draw(layouts(shape))
    base = draw(storage(dtype, length)) if values is None else values(draw, length)
    return Spec(np.asarray(base, dtype=NUMPY[dtype]).reshape(length), shape, strides, offset, dtype)


@dataclass(frozen=True)
class Dtype:
    """A dtype argument: L.float32 in either library."""

    name: str

    def code(self) -> str:
        return f"L.{self.name}"


@dataclass(frozen=True)
class Code:
    """An argument written as code over x (x itself, x.mT: operands aliasing the tensor an
    in-place op writes), evaluated in each library."""

    text: str

    def code(self) -> str:
        return self.text


# ---- argument strategies ---------------------------------------------------------------------
# Each maker takes (draw, shape, dtype) of the chain's current tensor x and returns the op's
# arguments by field name.


def a_dim(draw, shape) -> int:
    """A dim of x (0 and -1 for a 0-d tensor), now and then one just out of range."""
    n = max(len(shape), 1)
    if draw(st.integers(0, 15)) == 0:
        return draw(st.sampled_from((n, -n - 1)))
    return draw(st.integers(-n, n - 1))


def some_dims(draw, shape):
    """None, one dim, or a tuple or list of distinct dims (sometimes empty or repeated)."""
    form = draw(st.sampled_from(("int", "tuple", "none", "list")))
    if form == "none":
        return None
    if form == "int":
        return a_dim(draw, shape)
    rank = len(shape)
    dims = list(draw(st.permutations(range(rank))))[: draw(st.integers(0, rank))]
    dims = [d - rank if draw(st.booleans()) else d for d in dims]
    if dims and draw(st.integers(0, 9)) == 0:
        dims.append(dims[0])  # a repeated dim: both must refuse
    return tuple(dims) if form == "tuple" else dims


def broadcastable(draw, shape) -> tuple[int, ...]:
    """A shape that broadcasts with `shape` (leading dims dropped or added, some dims 1),
    now and then any shape (which mostly does not)."""
    if draw(st.integers(0, 9)) == 0:
        return draw(shapes(max_rank=3))
    out = [1 if draw(st.integers(0, 2)) == 0 else s for s in shape]
    out = out[draw(st.integers(0, len(out))) :] if out and draw(st.booleans()) else out
    if draw(st.integers(0, 5)) == 0:
        out = [draw(st.sampled_from((1, 2)))] + out
    return tuple(out)


def scalar(draw, dtype: str | None = None):
    """A Python bool, int or float (small, special or extreme), of `dtype`'s kind if given."""
    kind = dtype or draw(st.sampled_from(DTYPES))
    if kind == "bool":
        return draw(st.booleans())
    if kind == "int64":
        if draw(st.integers(0, 19)) == 0:
            return draw(st.sampled_from((2**63, -(2**63) - 1)))  # beyond int64
        return draw(st.one_of(st.sampled_from(NICE["int64"]), st.sampled_from(SPECIAL["int64"])))
    values = st.one_of(st.sampled_from(NICE["float"]), st.sampled_from(SPECIAL[kind]))
    return draw(values)


def other_dtype(draw, dtype: str) -> str:
    """Mostly x's dtype, else any."""
    return dtype if draw(st.booleans()) else draw(st.sampled_from(DTYPES))


def operand(draw, shape, dtype):
    """The other operand of a binary op: a broadcastable tensor, a 0-d tensor or a scalar."""
    form = draw(st.sampled_from(("tensor", "scalar", "0-d", "same")))
    if form == "scalar":
        return scalar(draw)
    if form == "0-d":
        return draw(specs((), other_dtype(draw, dtype)))
    if form == "same":
        return draw(specs(shape, dtype))
    return draw(specs(broadcastable(draw, shape), other_dtype(draw, dtype)))


def no_args(draw, shape, dtype) -> dict:
    return {}


def with_dim(draw, shape, dtype) -> dict:
    return {"d": a_dim(draw, shape)}


def dim_keep(draw, shape, dtype) -> dict:
    return {"d": a_dim(draw, shape), "k": draw(st.booleans())}


def dims_keep(draw, shape, dtype) -> dict:
    return {"d": some_dims(draw, shape), "k": draw(st.booleans())}


def dims_keep_dtype(draw, shape, dtype) -> dict:
    return {**dims_keep(draw, shape, dtype), "dt": Dtype(draw(st.sampled_from(DTYPES)))}


def var_args(draw, shape, dtype) -> dict:
    return {**dims_keep(draw, shape, dtype), "c": draw(st.sampled_from((0, 1, 2)))}


def norm_args(draw, shape, dtype) -> dict:
    return {**dims_keep(draw, shape, dtype), "p": draw(st.sampled_from((2, 1, 3.0, math.inf)))}


def binary_args(draw, shape, dtype) -> dict:
    return {"y": operand(draw, shape, dtype)}


def tensor_other(draw, shape, dtype) -> dict:
    return {"y": draw(specs(broadcastable(draw, shape), other_dtype(draw, dtype)))}


def matmul_args(draw, shape, dtype) -> dict:
    """A right operand whose rows match x's last dim (or not, now and then), any batch."""
    k = shape[-1] if shape else draw(SIZES)
    if draw(st.integers(0, 9)) == 0:
        k = draw(SIZES)
    form = draw(st.sampled_from(("matrix", "vector", "batched", "same-batch")))
    if form == "vector":
        oshape = (k,)
    elif form == "matrix":
        oshape = (k, draw(SIZES))
    elif form == "batched":
        oshape = (draw(st.sampled_from((1, 2))), k, draw(SIZES))
    else:
        oshape = (*shape[:-2], k, draw(SIZES))
    return {"y": draw(specs(oshape, other_dtype(draw, dtype)))}


def clamp_args(draw, shape, dtype) -> dict:
    """min and max each None, a scalar or a broadcastable tensor; now and then min > max."""

    def bound():
        form = draw(st.sampled_from(("scalar", "none", "tensor")))
        if form == "none":
            return None
        if form == "scalar":
            return scalar(draw, None if draw(st.booleans()) else dtype)
        return draw(specs(broadcastable(draw, shape), other_dtype(draw, dtype)))

    return {"lo": bound(), "hi": bound()}


def mask_args(draw, shape, dtype) -> dict:
    """A bool mask broadcastable to x and a fill value (a scalar or a 0-d tensor)."""
    value = scalar(draw) if draw(st.booleans()) else draw(specs((), other_dtype(draw, dtype)))
    return {"m": draw(specs(broadcastable(draw, shape), "bool")), "v": value}


def where_args(draw, shape, dtype) -> dict:
    return {"c": draw(specs(broadcastable(draw, shape), "bool")), "y": operand(draw, shape, dtype)}


def fill_args(draw, shape, dtype) -> dict:
    return {"v": scalar(draw, None if draw(st.integers(0, 3)) == 0 else dtype)}


def copy_args(draw, shape, dtype) -> dict:
    return {"y": draw(specs(broadcastable(draw, shape), other_dtype(draw, dtype)))}


def dtype_arg(draw, shape, dtype) -> dict:
    return {"dt": Dtype(draw(st.sampled_from(DTYPES)))}


def cum_args(draw, shape, dtype) -> dict:
    dt = draw(st.sampled_from((None, *DTYPES)))
    return {"d": a_dim(draw, shape), "dt": None if dt is None else Dtype(dt)}


def diag_args(draw, shape, dtype) -> dict:
    return {"k": draw(st.integers(-4, 4))}


def flip_args(draw, shape, dtype) -> dict:
    dims = some_dims(draw, shape)
    return {"d": [] if dims is None else dims}


def roll_args(draw, shape, dtype) -> dict:
    """One shift over the flattened tensor, one per dim, or shifts for a tuple of dims."""
    form = draw(st.sampled_from(("dim", "flat", "dims")))
    shift = st.integers(-7, 7)
    if form == "flat":
        return {"s": draw(shift), "d": None}
    if form == "dim":
        return {"s": draw(shift), "d": a_dim(draw, shape)}
    dims = some_dims(draw, shape)
    dims = (a_dim(draw, shape),) if not isinstance(dims, tuple | list) else tuple(dims)
    return {"s": tuple(draw(shift) for _ in dims), "d": dims}


def sort_args(draw, shape, dtype) -> dict:
    return {"d": a_dim(draw, shape), "desc": draw(st.booleans()), "stable": draw(st.booleans())}


def topk_args(draw, shape, dtype) -> dict:
    d = a_dim(draw, shape)
    size = size_of(shape, d)
    return {"kk": draw(st.integers(0, size + 1)), "d": d, "largest": draw(st.booleans())}


def size_of(shape, dim: int) -> int:
    """The size of dim (1 for a 0-d tensor; 0 when dim is out of range)."""
    if not shape:
        return 1
    return shape[dim] if -len(shape) <= dim < len(shape) else 0


def index_values(size: int):
    """A maker of int64 storages: indices in [0, size), some -1, size or -size - 1."""

    def make(draw, length):
        pool = [i for i in range(min(size, 4))] or [0]
        bad = draw(st.integers(0, 9))
        if bad == 0:
            pool.append(draw(st.sampled_from((size, -size - 1, -1, I64_MAX))))
        elif bad == 1 and size:
            pool.append(-1)
        rng = np.random.default_rng(draw(st.integers(0, 2**16)))
        return np.asarray(pool, dtype=np.int64)[rng.integers(len(pool), size=length)]

    return make


def index_spec(draw, shape, size: int) -> Spec:
    """An int64 index tensor of `shape` for a dim of `size`, in a random layout."""
    return draw(specs(shape, "int64", values=index_values(size)))


def index_select_args(draw, shape, dtype) -> dict:
    d = a_dim(draw, shape)
    ishape = (draw(st.integers(0, 4)),) if draw(st.integers(0, 7)) else ()
    return {"d": d, "i": index_spec(draw, ishape, size_of(shape, d))}


def gather_args(draw, shape, dtype) -> dict:
    """An index as large as x outside dim (sometimes smaller or larger), any length along it,
    and a source of the index's shape (for scatter_add)."""
    d = a_dim(draw, shape)
    ishape = [draw(st.integers(0, s + (draw(st.integers(0, 9)) == 0))) for s in shape]
    if shape and -len(shape) <= d < len(shape):
        ishape[d] = draw(st.integers(0, 4))
    src_shape = tuple(ishape)
    if draw(st.integers(0, 4)) == 0:
        src_shape = tuple(s + draw(st.integers(0, 1)) for s in ishape)
    return {
        "d": d,
        "i": index_spec(draw, tuple(ishape), size_of(shape, d)),
        "src": draw(specs(src_shape, dtype if draw(st.integers(0, 7)) else None)),
    }


def index_add_args(draw, shape, dtype) -> dict:
    a = index_select_args(draw, shape, dtype)
    sshape = list(shape)
    if shape and -len(shape) <= a["d"] < len(shape):
        sshape[a["d"]] = a["i"].size[0] if a["i"].size else 1
    alpha = draw(st.sampled_from((1, 2, -1, 0.5)))
    src_dtype = dtype if draw(st.integers(0, 7)) else None
    return {**a, "src": draw(specs(tuple(sshape), src_dtype)), "a": alpha}


def join_args(draw, shape, dtype) -> dict:
    """A second tensor like x (its size along the joined dim changed now and then, its dtype
    sometimes different) and the dim."""
    d = a_dim(draw, shape)
    oshape = list(shape)
    if shape and -len(shape) <= d < len(shape) and draw(st.booleans()):
        oshape[d] = draw(SIZES)
    if draw(st.integers(0, 9)) == 0:
        oshape = list(draw(shapes()))
    return {"y": draw(specs(tuple(oshape), other_dtype(draw, dtype))), "d": d}


def reshape_args(draw, shape, dtype) -> dict:
    """A shape of the same numel (dims merged or split, one -1), now and then a wrong one."""
    n = math.prod(shape)
    if draw(st.integers(0, 9)) == 0:
        return {"s": draw(shapes(max_rank=3))}
    sizes = [s for s in shape]
    draw_merge = draw(st.integers(0, 2))
    if draw_merge == 0 and len(sizes) >= 2:
        i = draw(st.integers(0, len(sizes) - 2))
        sizes[i : i + 2] = [sizes[i] * sizes[i + 1]]
    elif draw_merge == 1:
        divisors = [k for k in range(2, 5) if n and n % k == 0]
        if divisors:
            k = draw(st.sampled_from(divisors))
            sizes = [k, n // k]
        else:
            sizes = [n]
    if sizes and draw(st.booleans()) and n:
        sizes[draw(st.integers(0, len(sizes) - 1))] = -1
    return {"s": tuple(sizes)}


def transpose_args(draw, shape, dtype) -> dict:
    return {"d": a_dim(draw, shape), "e": a_dim(draw, shape)}


def permute_args(draw, shape, dtype) -> dict:
    perm = list(draw(st.permutations(range(len(shape)))))
    if draw(st.integers(0, 9)) == 0:
        perm = perm[:-1] if perm else [0]
    return {"p": tuple(perm)}


def expand_args(draw, shape, dtype) -> dict:
    """Size-1 dims widened, -1 keeps a dim, new leading dims; now and then a bad size."""
    sizes = [draw(st.sampled_from((1, 2, 3))) if s == 1 else s for s in shape]
    sizes = [-1 if draw(st.integers(0, 3)) == 0 else s for s in sizes]
    lead = [draw(st.sampled_from((1, 2, 3))) for _ in range(draw(st.integers(0, 1)))]
    if sizes and draw(st.integers(0, 9)) == 0:
        sizes[0] = draw(SIZES)
    return {"s": tuple(lead + sizes)}


def narrow_args(draw, shape, dtype) -> dict:
    d = a_dim(draw, shape)
    size = size_of(shape, d)
    start = draw(st.integers(-size, size))
    return {"d": d, "start": start, "n": draw(st.integers(0, max(size - max(start, 0), 0) + 1))}


def select_args(draw, shape, dtype) -> dict:
    d = a_dim(draw, shape)
    size = size_of(shape, d)
    return {"d": d, "i": draw(st.integers(-size - 1, size))}


def unsqueeze_args(draw, shape, dtype) -> dict:
    n = len(shape) + 1
    return {"d": draw(st.integers(-n - 1, n))}


def flatten_args(draw, shape, dtype) -> dict:
    return {"s": a_dim(draw, shape), "e": a_dim(draw, shape)}


def unflatten_args(draw, shape, dtype) -> dict:
    d = a_dim(draw, shape)
    size = size_of(shape, d)
    options = [(size,), (1, size), (size, 1), (-1, 1)]
    options += [(k, size // k) for k in (2, 3) if size and size % k == 0]
    sizes = draw(st.sampled_from(options))
    if draw(st.integers(0, 9)) == 0:
        sizes = (size + 1,)
    return {"d": d, "s": sizes}


@st.composite
def slice_part(draw, size: int):
    """A slice with bounds past either end now and then and a positive step (sometimes a bad
    step of 0 or -1)."""
    bound = st.one_of(st.none(), st.integers(-size - 2, size + 2))
    step = draw(st.sampled_from((None, 1, 2, 3, None, 0, -1)))
    return slice(draw(bound), draw(bound), step)


def basic_key(draw, shape) -> tuple:
    """Ints, slices, None and one Ellipsis over x's dims (sometimes one index too many)."""
    key, d = [], 0
    count = draw(st.integers(0, len(shape) + 1))
    for _ in range(count):
        size = shape[d] if d < len(shape) else 0
        form = draw(st.sampled_from(("slice", "int", "none", "ellipsis")))
        if form == "none":
            key.append(None)
        elif form == "ellipsis" and Ellipsis not in key:
            key.append(Ellipsis)
            d = len(shape) - (count - len(key))
        elif form == "int":
            key.append(draw(st.integers(-size - 1, size)))
            d += 1
        else:
            key.append(draw(slice_part(size)))
            d += 1
    return tuple(key)


def basic_key_args(draw, shape, dtype) -> dict:
    return {"key": Key(basic_key(draw, shape))}


def advanced_key(draw, shape) -> tuple:
    """A key with tensor or list indices (or a bool mask, or a Python bool) among basic
    parts: adjacent or separated advanced dims, broadcast index shapes."""
    key, d = [], 0
    count = draw(st.integers(1, max(len(shape), 1)))
    for pos in range(count):
        size = shape[d] if d < len(shape) else 0
        form = draw(st.sampled_from(("tensor", "slice", "mask", "list", "int", "none", "bool")))
        if pos == count - 1 and not any(isinstance(k, Spec | list | bool) for k in key):
            form = draw(st.sampled_from(("tensor", "mask", "list")))
        if form == "tensor":
            ishape = draw(st.sampled_from(((), (1,), (2,), (3,), (2, 1), (1, 3), (0,))))
            key.append(index_spec(draw, ishape, size))
            d += 1
        elif form == "list":
            key.append([int(i) for i in index_values(size)(draw, draw(st.integers(1, 3)))])
            d += 1
        elif form == "mask":
            ndim = draw(st.integers(1, max(len(shape) - d, 1)))
            mshape = tuple(shape[d : d + ndim]) or (1,)
            if draw(st.integers(0, 9)) == 0:
                mshape = tuple(s + 1 for s in mshape)
            key.append(draw(specs(mshape, "bool")))
            d += len(mshape)
        elif form == "slice":
            key.append(draw(slice_part(size)))
            d += 1
        elif form == "int":
            key.append(draw(st.integers(-size, max(size - 1, 0))))
            d += 1
        elif form == "bool":
            key.append(draw(st.booleans()))
        else:
            key.append(None)
    return tuple(key)


def advanced_key_args(draw, shape, dtype) -> dict:
    return {"key": Key(advanced_key(draw, shape))}


def setitem_args(draw, shape, dtype) -> dict:
    """A basic or advanced key and a value: a scalar or a tensor (broadcast to the target)."""
    key = basic_key(draw, shape) if draw(st.booleans()) else advanced_key(draw, shape)
    if draw(st.booleans()):
        value = scalar(draw, None if draw(st.integers(0, 3)) == 0 else dtype)
    else:  # a shape that broadcasts to most targets, now and then any
        vshape = draw(st.sampled_from(((), (1,), tuple(shape[-1:]), None)))
        vshape = draw(shapes(max_rank=2)) if vshape is None else vshape
        value = draw(specs(vshape, other_dtype(draw, dtype)))
    return {"key": Key(key), "v": value}


def softmax_args(draw, shape, dtype) -> dict:
    dt = draw(st.sampled_from((None, None, "float32", "float64")))
    return {"d": a_dim(draw, shape), "dt": None if dt is None else Dtype(dt)}


def layer_norm_args(draw, shape, dtype) -> dict:
    """normalized_shape = x's last k dims; weight and bias of that shape or None."""
    k = draw(st.integers(1, max(len(shape), 1)))
    norm = tuple(shape[len(shape) - k :]) if shape else (1,)
    ftype = dtype if dtype.startswith("float") else "float32"

    def param():
        return draw(specs(norm, ftype)) if draw(st.booleans()) else None

    eps = draw(st.sampled_from((1e-5, 0.0, 1.0)))
    return {"ns": norm, "w": param(), "b": param(), "eps": eps}


def cross_entropy_args(draw, shape, dtype) -> dict:
    """Class targets for logits x ([C], [N, C] or [N, C, d...]), some ignored or out of range;
    a weight now and then; each reduction."""
    classes = shape[1] if len(shape) >= 2 else (shape[0] if shape else 0)
    tshape = (shape[0], *shape[2:]) if len(shape) >= 2 else ()
    target = index_spec(draw, tshape, classes)
    ftype = dtype if dtype.startswith("float") else "float32"
    weight = draw(specs((classes,), ftype, values=_positive)) if draw(st.booleans()) else None
    return {
        "t": target,
        "w": weight,
        "ii": draw(st.sampled_from((-100, 0, 1))),
        "r": draw(st.sampled_from(("mean", "sum", "none"))),
    }


def _positive(draw, length):
    """Class weights: non-negative, zeros included (a class that counts for nothing)."""
    return np.asarray([draw(st.sampled_from((1.0, 0.5, 2.0, 0.0))) for _ in range(length)])


def allclose_args(draw, shape, dtype) -> dict:
    return {**tensor_other(draw, shape, dtype), "k": draw(st.booleans())}


def inplace_binary_args(draw, shape, dtype) -> dict:
    """An operand for an in-place op: broadcastable to x (never wider), now and then x
    itself or a view of x's storage (the aliasing cases)."""
    form = draw(st.integers(0, 7))
    if form == 0:
        return {"y": Code("x")}
    if form == 1 and len(shape) >= 2:
        return {"y": Code("x.mT")}
    return binary_args(draw, shape, dtype)


class Key(tuple):
    """An indexing key, printed as subscript source: x[1:, None, ..., idx]."""

    def code(self, render) -> str:
        if not self:
            return "()"
        parts = []
        for k in self:
            if isinstance(k, slice):
                parts.append(
                    ":".join("" if v is None else str(v) for v in (k.start, k.stop))
                    + ("" if k.step is None else f":{k.step}")
                )
            elif k is Ellipsis:
                parts.append("...")
            else:
                parts.append(render(k))
        return ", ".join(parts) + ("," if len(parts) == 1 else "")


def source(value, xname: str, render: Callable[[object, str], str]) -> str:
    """Python source for an argument of the kinds both fuzzers spell alike: dtypes, code over
    x (written over `xname`), indexing keys and the items of tuples and lists (each through
    `render`, the fuzzer's own), floats (non-finite ones as float('inf')) and other
    constants."""
    if isinstance(value, Dtype):
        return value.code()
    if isinstance(value, Code):
        return value.text.replace("x", xname)
    if isinstance(value, Key):
        return value.code(lambda v: render(v, xname))
    if isinstance(value, float) and not math.isfinite(value):
        return f"float('{value}')"
    if isinstance(value, tuple | list):
        inner = ", ".join(render(v, xname) for v in value)
        if isinstance(value, list):
            return f"[{inner}]"
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    return repr(value)


# ---- the op table ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Op:
    """One public op of a family: `code` is a Python expression (or, with `stmt`, a
    statement that updates x) in L, x and the fields `args` draws; `inplace` ops write x;
    `view` ops must alias x as torch's do; `ties` names the dim argument of an op whose
    indices may legally differ on tied values (checked by gathering instead); `zero_sign`
    ops must give zeros torch's sign (IEEE fixes it for them); `rounding` ops compile to
    another schedule than eager's (the softmax family's composed ops, eagerly a row kernel),
    so compiled and eager agree within rounding, not bit for bit."""

    family: str
    code: str
    args: Callable = no_args
    inplace: bool = False
    stmt: bool = False
    view: bool = False
    ties: str | None = None
    zero_sign: bool = False
    rounding: bool = False


OPS: dict[str, Op] = {}


def _add(family: str, name: str, code: str, args: Callable = no_args, **flags) -> None:
    assert name not in OPS, name
    OPS[name] = Op(family, code, args, **flags)


def _table(family: str, rows: str) -> None:
    """Ops written one a line: name | code | argument maker (- for none) | flags, the flags
    being Op's booleans by name and ties=DIM."""
    for row in rows.strip().splitlines():
        name, code, maker, flags = (cell.strip() for cell in row.split("|"))
        options = {}
        for flag in flags.split():
            key, _, value = flag.partition("=")
            options[key] = value or True
        _add(family, name, code, no_args if maker == "-" else globals()[maker], **options)


# Elementwise: every unary and binary op of elementwise.py's tables as functions (torch
# has silu and gelu only in nn.functional), the operators, in-place forms.
_SIGNLESS = {"maximum", "minimum"}  # torch picks either zero of max(0.0, -0.0)
for _name in UNARY:
    _fn = "L" if hasattr(torch, _name) else "L.nn.functional"
    _add("unary", _name, f"{_fn}.{_name}({{x}})", zero_sign=True)
for _name in BINARY:
    _signed = _name not in _SIGNLESS
    _add("binary", _name, f"L.{_name}({{x}}, {{y}})", binary_args, zero_sign=_signed)
    _add(
        "binary", f"{_name}_reflected", f"L.{_name}({{y}}, {{x}})", tensor_other, zero_sign=_signed
    )
_OPERATORS = {"add": "+", "sub": "-", "mul": "*", "div": "/", "floordiv": "//", "mod": "%",
              "pow": "**", "and": "&", "or": "|", "xor": "^", "eq": "==", "lt": "<", "ge": ">="}  # fmt: skip
for _name, _sym in _OPERATORS.items():
    _add("binary", f"op_{_name}", f"{{x}} {_sym} {{y}}", binary_args, zero_sign=True)
    _add("binary", f"op_r{_name}", f"{{y}} {_sym} {{x}}", binary_args, zero_sign=True)
    if _sym not in ("==", "<", ">="):
        _add("inplace", f"op_i{_name}", f"{{x}} {_sym}= {{y}}", inplace_binary_args, inplace=True,
             stmt=True, zero_sign=True)  # fmt: skip
for _name in INPLACE_BINARY:
    _add("inplace", f"{_name}_", f"{{x}}.{_name}_({{y}})", inplace_binary_args, inplace=True,
         zero_sign=True)  # fmt: skip
for _name in ("float", "double", "long", "bool", "clone", "contiguous"):
    _add("convert", _name, f"{{x}}.{_name}()", zero_sign=True)

_table(
    "unary",
    """
op_neg | -{x} | - | zero_sign
op_abs | abs({x}) | - | zero_sign
op_invert | ~{x} | - |
gelu | L.nn.functional.gelu({x}) | - |
gelu_tanh | L.nn.functional.gelu({x}, approximate='tanh') | - |
""",
)
_table(
    "inplace",
    """
clamp_ | {x}.clamp_({lo}, {hi}) | clamp_args | inplace
masked_fill_ | {x}.masked_fill_({m}, {v}) | mask_args | inplace
fill_ | {x}.fill_({v}) | fill_args | inplace zero_sign
zero_ | {x}.zero_() | - | inplace zero_sign
copy_ | {x}.copy_({y}) | copy_args | inplace zero_sign
setitem | {x}[{key}] = {v} | setitem_args | inplace stmt
scatter_add_ | {x}.scatter_add_({d}, {i}, {src}) | gather_args | inplace
index_add_ | {x}.index_add_({d}, {i}, {src}, alpha={a}) | index_add_args | inplace
cumsum_ | {x}.cumsum_({d}) | with_dim | inplace
cumprod_ | {x}.cumprod_({d}) | with_dim | inplace
tril_ | {x}.tril_({k}) | diag_args | inplace
triu_ | {x}.triu_({k}) | diag_args | inplace
""",
)
_table(
    "select",
    """
clamp | L.clamp({x}, {lo}, {hi}) | clamp_args |
where | L.where({c}, {x}, {y}) | where_args | zero_sign
where_scalar | L.where({x} > 0, {y}, {x}) | binary_args | zero_sign
where_method | {x}.where({c}, {y}) | where_args | zero_sign
masked_fill | {x}.masked_fill({m}, {v}) | mask_args | zero_sign
equal | L.equal({x}, {y}) | tensor_other |
allclose | L.allclose({x}, {y}, equal_nan={k}) | allclose_args |
""",
)
_table(
    "convert",
    """
to | {x}.to({dt}) | dtype_arg | zero_sign
to_tensor | {x}.to({y}) | tensor_other | zero_sign
item | {x}.item() | - |
tolist | {x}.tolist() | - |
""",
)
_table(
    "reduce",
    """
sum_all | {x}.sum() | - |
sum | L.sum({x}, {d}, keepdim={k}) | dims_keep |
sum_dtype | {x}.sum({d}, keepdim={k}, dtype={dt}) | dims_keep_dtype |
prod | {x}.prod({d}, keepdim={k}) | dim_keep |
prod_dtype | L.prod({x}, dtype={dt}) | dtype_arg |
mean | {x}.mean({d}, keepdim={k}) | dims_keep |
mean_dtype | L.mean({x}, {d}, keepdim={k}, dtype={dt}) | dims_keep_dtype |
var | {x}.var({d}, keepdim={k}, correction={c}) | var_args |
std | L.std({x}, {d}, keepdim={k}, correction={c}) | var_args |
amax | {x}.amax({d}, keepdim={k}) | dims_keep |
amin | L.amin({x}, {d}, keepdim={k}) | dims_keep |
max_all | {x}.max() | - |
min_all | L.min({x}) | - |
max_dim | {x}.max({d}, keepdim={k}) | dim_keep | ties=d
min_dim | L.min({x}, {d}, keepdim={k}) | dim_keep | ties=d
argmax | {x}.argmax({d}, keepdim={k}) | dim_keep |
argmin_all | L.argmin({x}) | - |
all | {x}.all({d}, keepdim={k}) | dims_keep |
any | L.any({x}, {d}, keepdim={k}) | dims_keep |
count_nonzero | L.count_nonzero({x}, {d}) | dims_keep |
norm | {x}.norm({p}, {d}, keepdim={k}) | norm_args |
logsumexp | L.logsumexp({x}, {d}, keepdim={k}) | dims_keep |
""",
)
_table(
    "matmul",
    """
matmul | L.matmul({x}, {y}) | matmul_args |
op_matmul | {x} @ {y} | matmul_args |
op_rmatmul | {y} @ {x} | matmul_args |
mm | L.mm({x}, {y}) | matmul_args |
bmm | {x}.bmm({y}) | matmul_args |
dot | L.dot({x}, {y}) | matmul_args |
outer | {x}.outer({y}) | matmul_args |
matmul_self | {x} @ {x}.mT | - |
""",
)
_table(
    "view",
    """
reshape | {x}.reshape({s}) | reshape_args | zero_sign
view | {x}.view({s}) | reshape_args | view
transpose | {x}.transpose({d}, {e}) | transpose_args | view
permute | {x}.permute({p}) | permute_args | view
expand | {x}.expand({s}) | expand_args | view
expand_as | {x}.expand_as({y}) | tensor_other | view
narrow | {x}.narrow({d}, {start}, {n}) | narrow_args | view
select | {x}.select({d}, {i}) | select_args | view
unsqueeze | {x}.unsqueeze({d}) | unsqueeze_args | view
squeeze | {x}.squeeze() | - | view
squeeze_dim | {x}.squeeze({d}) | with_dim | view
flatten | {x}.flatten({s}, {e}) | flatten_args | zero_sign
unflatten | {x}.unflatten({d}, {s}) | unflatten_args | view
mT | {x}.mT | - | view
T | {x}.T | - | view
getitem | {x}[{key}] | basic_key_args | view
""",
)
_table(
    "index",
    """
getitem_advanced | {x}[{key}] | advanced_key_args | zero_sign
getitem_mask | {x}[{x} > 0] | - | zero_sign
cat | L.cat([{x}, {y}], {d}) | join_args | zero_sign
cat_three | L.cat(({x}, {y}, {x}), dim={d}) | join_args | zero_sign
stack | L.stack([{x}, {y}], {d}) | join_args | zero_sign
gather | L.gather({x}, {d}, {i}) | gather_args | zero_sign
take_along_dim | L.take_along_dim({x}, {i}, {d}) | gather_args | zero_sign
index_select | {x}.index_select({d}, {i}) | index_select_args | zero_sign
scatter_add | {x}.scatter_add({d}, {i}, {src}) | gather_args |
index_add | L.index_add({x}, {d}, {i}, {src}, alpha={a}) | index_add_args |
nonzero | L.nonzero({x}) | - |
nonzero_tuple | {x}.nonzero(as_tuple=True) | - |
""",
)
_table(
    "sequence",
    """
cumsum | {x}.cumsum({d}, dtype={dt}) | cum_args |
cumprod | L.cumprod({x}, {d}, dtype={dt}) | cum_args |
flip | {x}.flip({d}) | flip_args | zero_sign
roll | L.roll({x}, {s}, {d}) | roll_args | zero_sign
tril | {x}.tril({k}) | diag_args |
triu | L.triu({x}, {k}) | diag_args |
sort | {x}.sort(dim={d}, descending={desc}, stable={stable}) | sort_args | ties=d
argsort | L.argsort({x}, dim={d}, descending={desc}, stable=True) | sort_args |
topk | {x}.topk({kk}, {d}, {largest}) | topk_args | ties=d
""",
)
_table(
    "nn",
    """
softmax | {x}.softmax({d}, dtype={dt}) | softmax_args | rounding
log_softmax | L.log_softmax({x}, {d}, dtype={dt}) | softmax_args | rounding
layer_norm | L.nn.functional.layer_norm({x}, {ns}, {w}, {b}, {eps}) | layer_norm_args |
cross_entropy | L.nn.functional.cross_entropy({x}, {t}, {w}, ignore_index={ii}, reduction={r}) | cross_entropy_args |
""",
)


def pick(draw, options: list, label: str):
    """One of `options`, near uniformly: hypothesis draws small integers far more often than
    large ones, so sampled_from over a long list would mostly give its first entries."""
    i = draw(st.integers(0, 2**32 - 1), label=label)
    return options[(i * 2654435761 + 0x9E3779B9) % 2**32 % len(options)]


FAMILIES: dict[str, list[str]] = {}
for _name, _op in OPS.items():
    FAMILIES.setdefault(_op.family, []).append(_name)


def budget(examples: int, chosen_seed: str | None):
    """hypothesis settings for `examples` examples: derandomized (or `chosen_seed`'s, from
    KAEL_FUZZ_SEED), without a database or a deadline, so a run is reproducible and slow
    kernels compile."""
    from hypothesis import HealthCheck, seed, settings

    chosen = settings(
        max_examples=examples,
        derandomize=chosen_seed is None,
        database=None,
        deadline=None,
        print_blob=False,
        suppress_health_check=list(HealthCheck),
    )
    return lambda fn: chosen(seed(int(chosen_seed))(fn) if chosen_seed is not None else fn)
