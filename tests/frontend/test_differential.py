"""A seeded randomized differential test: random shapes (sizes 0 and 1 included), dtypes,
layouts (transposed, stepped, expanded) and dims through a sample of issue 4's ops, on
kael and on torch. Where torch answers, kael gives the same values, dtype and shape;
where torch raises, kael raises a kael.Error (or a subclass)."""

import os

import numpy as np
import pytest
import torch
from kernel_helpers import TORCH_DTYPES
from parity_helpers import same

import kael

# torch warns where kael is silent (var with too few elements, writes into expanded views).
pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

DTYPES = [kael.float32, kael.float64, kael.int64, kael.bool]
SIZES = [0, 1, 2, 3, 5]
CASES = int(os.environ.get("KAEL_DIFF_CASES", 800))
SEED = int(os.environ.get("KAEL_DIFF_SEED", 20261130))


def values(rng, shape, dtype) -> np.ndarray:
    """Small values with ties among integers: products and sums stay exact or close."""
    if dtype is kael.bool:
        return np.asarray(rng.random(shape) > 0.5)
    if dtype is kael.int64:
        return np.asarray(rng.integers(-3, 4, shape))
    arr = np.asarray(rng.standard_normal(shape).round(2))
    if arr.size and rng.random() < 0.15:  # now and then a NaN or an infinity
        arr.flat[rng.integers(arr.size)] = rng.choice([np.nan, np.inf, -np.inf])
    return arr.astype(np.float32 if dtype is kael.float32 else np.float64)


LAYOUTS = ["contiguous", "transposed", "stepped", "expanded"]


def twins(rng, shape, dtype, layout):
    """`shape` in `layout` in both libraries (contiguous when the rank is too small for
    it): transposed, stepped, or expanded (size-1 dims of the base broadcast)."""
    rank = len(shape)
    if layout == "transposed" and rank >= 2:
        base = values(rng, shape[::-1], dtype)
        return layout, [lib_from(lib, base).permute(*range(rank - 1, -1, -1)) for lib in LIBS]
    if layout == "stepped" and rank >= 1:
        base = values(rng, (*shape[:-1], 2 * shape[-1]), dtype)
        return layout, [lib_from(lib, base)[..., 1::2] for lib in LIBS]
    if layout == "expanded" and rank >= 1:
        small = tuple(1 if rng.random() < 0.5 else s for s in shape)
        base = values(rng, small, dtype)
        return layout, [lib_from(lib, base).expand(*shape) for lib in LIBS]
    base = values(rng, shape, dtype)
    return "contiguous", [lib_from(lib, base) for lib in LIBS]


LIBS = (kael, torch)


def lib_from(lib, arr: np.ndarray):
    return kael.tensor(arr.copy()) if lib is kael else torch.from_numpy(arr.copy())


def a_dim(rng, rank: int) -> int:
    """A dim, sometimes one past either end so both libraries must refuse it."""
    lo, hi = -max(rank, 1), max(rank, 1)
    if rng.random() < 0.08:
        return hi if rng.random() < 0.5 else lo - 1
    return int(rng.integers(lo, hi))


# op -> (call(L, x, rng-chosen args), args maker(rng, x) -> dict). x is the first tensor;
# ops needing more tensors build them from x's shape with the same rng.
def reduce_args(rng, shape, dtype=None):
    return {"dim": a_dim(rng, len(shape)), "keepdim": bool(rng.random() < 0.5)}


def dims_args(rng, shape, dtype=None):
    rank = len(shape)
    k = int(rng.integers(0, rank + 1)) if rank else 0
    dims = tuple(int(d) for d in rng.permutation(rank)[:k])
    return {"dim": dims if rng.random() < 0.5 else list(dims), "keepdim": bool(rng.random() < 0.5)}


def dim_only(rng, shape, dtype=None):
    return {"dim": a_dim(rng, len(shape))}


def nothing(rng, shape, dtype=None):
    return {}


def size_of(shape, dim: int) -> int:
    """The size of dim (1 for a 0-d tensor; 0 when dim is out of range)."""
    if not shape:
        return 1
    return shape[dim] if -len(shape) <= dim < len(shape) else 0


def indices(rng, count, size):
    """int64 positions in [0, size), now and then one just out of range (size or -size - 1)."""
    idx = rng.integers(0, max(size, 1), count)
    if count and rng.random() < 0.1:
        idx[rng.integers(count)] = size if rng.random() < 0.5 else -size - 1
    return np.asarray(idx, dtype=np.int64)


def index_args(rng, shape, dtype=None):
    dim = a_dim(rng, len(shape))
    return {"dim": dim, "idx": indices(rng, int(rng.integers(0, 4)), size_of(shape, dim))}


def gather_args(rng, shape, dtype=None):
    """An index as large as the input outside dim (sometimes smaller), any length along it."""
    dim = a_dim(rng, len(shape))
    ishape = [int(rng.integers(0, s + 1)) if rng.random() < 0.3 else s for s in shape]
    if shape and -len(shape) <= dim < len(shape):
        ishape[dim] = int(rng.integers(0, 4))
    idx = indices(rng, int(np.prod(ishape)), size_of(shape, dim)).reshape(ishape)
    return {"dim": dim, "idx": idx, "src": values(rng, tuple(ishape), dtype)}


def index_add_args(rng, shape, dtype=None):
    a = index_args(rng, shape)
    sshape = list(shape)
    if shape and -len(shape) <= a["dim"] < len(shape):
        sshape[a["dim"]] = len(a["idx"])
    return {**a, "src": values(rng, tuple(sshape), dtype)}


def topk_args(rng, shape, dtype=None):
    dim = a_dim(rng, len(shape))
    k = int(rng.integers(0, size_of(shape, dim) + 2))
    return {"dim": dim, "k": k, "largest": bool(rng.random() < 0.5)}


def other_args(rng, shape, dtype=None):
    """A second operand: often shaped to multiply with x, else of a random shape."""
    if rng.random() < 0.7:
        inner = shape[-1] if shape else 1
        oshape = (*shape[:-2], inner, int(rng.choice(SIZES))) if len(shape) >= 2 else (inner,)
        if rng.random() < 0.3:
            oshape = oshape[-2:]
    else:
        oshape = tuple(int(s) for s in rng.choice(SIZES, int(rng.integers(0, 4))))
    return {"other": values(rng, oshape, dtype)}


def target_args(rng, shape, dtype=None):
    """Class indices shaped like x without its class dim, some ignored or out of range."""
    classes = shape[1] if len(shape) >= 2 else (shape[0] if shape else 0)
    tshape = (shape[0], *shape[2:]) if len(shape) >= 2 else ()
    tgt = indices(rng, int(np.prod(tshape)), classes).reshape(tshape)
    if tgt.size and rng.random() < 0.3:
        tgt.flat[0] = -100
    return {"target": tgt}


def lib(L, arr):
    return lib_from(L, arr)


OPS = {
    "sum": (lambda L, x, a: x.sum(a["dim"], keepdim=a["keepdim"]), reduce_args),
    "sum_dims": (lambda L, x, a: L.sum(x, a["dim"], a["keepdim"]), dims_args),
    "prod": (lambda L, x, a: x.prod(a["dim"], keepdim=a["keepdim"]), reduce_args),
    "mean": (lambda L, x, a: x.mean(a["dim"], keepdim=a["keepdim"]), dims_args),
    "var": (lambda L, x, a: x.var(a["dim"], keepdim=a["keepdim"]), dims_args),
    "std": (lambda L, x, a: L.std(x, a["dim"], correction=0), dim_only),
    "amax": (lambda L, x, a: x.amax(a["dim"], a["keepdim"]), dims_args),
    "amin": (lambda L, x, a: L.amin(x, a["dim"], a["keepdim"]), reduce_args),
    "max_all": (lambda L, x, a: x.max(), nothing),
    "max_dim": (lambda L, x, a: tuple(x.max(a["dim"], a["keepdim"])), reduce_args),
    "min_dim": (lambda L, x, a: tuple(L.min(x, dim=a["dim"])), dim_only),
    "argmax": (lambda L, x, a: x.argmax(a["dim"], a["keepdim"]), reduce_args),
    "argmax_all": (lambda L, x, a: x.argmax(), nothing),
    "argmin": (lambda L, x, a: L.argmin(x, dim=a["dim"]), dim_only),
    "all": (lambda L, x, a: x.all(a["dim"], a["keepdim"]), reduce_args),
    "any": (lambda L, x, a: L.any(x, a["dim"]), dim_only),
    "count_nonzero": (lambda L, x, a: L.count_nonzero(x, a["dim"]), dims_args),
    "norm": (lambda L, x, a: x.norm(2, dim=a["dim"], keepdim=a["keepdim"]), dims_args),
    "norm1": (lambda L, x, a: L.norm(x, 1, a["dim"]), dim_only),
    "logsumexp": (lambda L, x, a: L.logsumexp(x, a["dim"], a["keepdim"]), reduce_args),
    "cumsum": (lambda L, x, a: x.cumsum(a["dim"]), dim_only),
    "cumprod": (lambda L, x, a: L.cumprod(x, dim=a["dim"]), dim_only),
    "softmax": (lambda L, x, a: x.softmax(a["dim"]), dim_only),
    "log_softmax": (lambda L, x, a: L.log_softmax(x, a["dim"]), dim_only),
    "sort_values": (lambda L, x, a: x.sort(a["dim"], descending=a["keepdim"]).values, reduce_args),
    "argsort_stable": (
        lambda L, x, a: L.argsort(x, dim=a["dim"], descending=a["keepdim"], stable=True),
        reduce_args,
    ),
    "flip": (lambda L, x, a: x.flip(a["dim"]), dims_args),
    "roll": (lambda L, x, a: x.roll(2, a["dim"]), dim_only),
    "tril": (lambda L, x, a: x.tril(a["dim"]), dim_only),
    "triu": (lambda L, x, a: L.triu(x, diagonal=a["dim"]), dim_only),
    "nonzero": (lambda L, x, a: x.nonzero(), nothing),
    "cat_self": (lambda L, x, a: L.cat([x, x], a["dim"]), dim_only),
    "stack_self": (lambda L, x, a: L.stack((x, x), dim=a["dim"]), dim_only),
    "masked_fill": (lambda L, x, a: x.masked_fill(x > 0, 7), nothing),
    "where": (lambda L, x, a: L.where(x > 0, x, 1), nothing),
    "matmul_self_t": (lambda L, x, a: x @ x.mT if x.ndim >= 2 else x @ x, nothing),
    "matmul": (lambda L, x, a: x @ lib(L, a["other"]), other_args),
    "mm": (lambda L, x, a: L.mm(x, lib(L, a["other"])), other_args),
    "bmm": (lambda L, x, a: x.bmm(lib(L, a["other"])), other_args),
    "dot": (lambda L, x, a: L.dot(x, lib(L, a["other"])), other_args),
    "outer": (lambda L, x, a: x.outer(lib(L, a["other"])), other_args),
    "topk_values": (
        lambda L, x, a: x.topk(a["k"], a["dim"], largest=a["largest"]).values,
        topk_args,
    ),
    "index_select": (lambda L, x, a: x.index_select(a["dim"], lib(L, a["idx"])), index_args),
    "index_tensor": (lambda L, x, a: x[lib(L, a["idx"])], index_args),
    "gather": (lambda L, x, a: L.gather(x, a["dim"], lib(L, a["idx"])), gather_args),
    "take_along_dim": (
        lambda L, x, a: L.take_along_dim(x, lib(L, a["idx"]), a["dim"]),
        gather_args,
    ),
    "scatter_add": (
        lambda L, x, a: x.scatter_add(a["dim"], lib(L, a["idx"]), lib(L, a["src"])),
        gather_args,
    ),
    "index_add": (
        lambda L, x, a: L.index_add(x, a["dim"], lib(L, a["idx"]), lib(L, a["src"])),
        index_add_args,
    ),
    "cross_entropy": (
        lambda L, x, a: L.nn.functional.cross_entropy(x, lib(L, a["target"])),
        target_args,
    ),
    "cross_entropy_none": (
        lambda L, x, a: L.nn.functional.cross_entropy(x, lib(L, a["target"]), reduction="none"),
        target_args,
    ),
    "layer_norm": (lambda L, x, a: L.nn.functional.layer_norm(x, x.shape[-1:]), nothing),
    # dtype= arguments
    "sum_dtype": (lambda L, x, a: x.sum(a["dim"], dtype=L.float64), dim_only),
    "mean_dtype": (lambda L, x, a: x.mean(a["dim"], dtype=L.float64), dims_args),
    "cumsum_dtype": (lambda L, x, a: x.cumsum(a["dim"], dtype=L.float32), dim_only),
    "softmax_dtype": (lambda L, x, a: L.softmax(x, a["dim"], dtype=L.float64), dim_only),
    # more selection and joining forms
    "topk_gathered": (
        lambda L, x, a: x.gather(a["dim"], x.topk(a["k"], a["dim"], a["largest"]).indices),
        topk_args,
    ),
    "index_two_tensors": (lambda L, x, a: x[lib(L, a["idx"]), lib(L, a["idx"])], index_args),
    "index_mask": (lambda L, x, a: x[x > 0], nothing),
    "nonzero_tuple": (lambda L, x, a: L.nonzero(x, as_tuple=True), nothing),
    "cat_promoted": (lambda L, x, a: L.cat([x, x.double()], a["dim"]), dim_only),
    "stack_mismatch": (lambda L, x, a: L.stack([x, x[..., :1]], a["dim"]), dim_only),
    "where_broadcast": (lambda L, x, a: L.where(x[..., :1] > 0, x, x.sum()), nothing),
    "roll_two_dims": (lambda L, x, a: x.roll((1, -2), (0, a["dim"])), dim_only),
    # in place: the result and the tensor written, whatever its layout
    "scatter_add_": (
        lambda L, x, a: x.scatter_add_(a["dim"], lib(L, a["idx"]), lib(L, a["src"])),
        gather_args,
    ),
    "index_add_": (
        lambda L, x, a: x.index_add_(a["dim"], lib(L, a["idx"]), lib(L, a["src"]), alpha=2),
        index_add_args,
    ),
    "cumsum_": (lambda L, x, a: x.cumsum_(a["dim"]), dim_only),
    "tril_": (lambda L, x, a: x.tril_(a["dim"]), dim_only),
    "masked_fill_": (lambda L, x, a: x.masked_fill_(x > 0, 3), nothing),
    "setitem_mask": (lambda L, x, a: x.__setitem__(x > 0, 1) or x, nothing),
    "setitem_index": (lambda L, x, a: x.__setitem__(lib(L, a["idx"]), 0) or x, index_args),
}


# Chapter 05: softmax and log_softmax turn integer and bool inputs into float32 (torch
# refuses them), so their torch reference takes the float32 copy.
AS_FLOAT32 = {"softmax", "log_softmax", "cross_entropy", "cross_entropy_none", "layer_norm"}
MATMULS = {"matmul", "matmul_self_t", "mm", "bmm", "dot", "outer"}


INPLACE = {
    "scatter_add_", "index_add_", "cumsum_", "tril_", "masked_fill_", "setitem_mask",
    "setitem_index",
}  # fmt: skip


def kael_is_stricter(op: str, dtype, layout: str, args: dict, want) -> bool:
    """Where chapter 05 has kael refuse what torch answers: bool matrix products (torch
    only answers when the result is empty); any write into a tensor with internal overlap
    (an expanded one: torch only warns for masked_fill_, index_put_ and tril_); and a bad
    index, dim or dtype that torch lets through when there is nothing to read or write."""
    if op in MATMULS and dtype is kael.bool:
        return True
    if op in INPLACE and layout == "expanded":
        return True
    empty = isinstance(want, torch.Tensor) and want.numel() == 0
    return empty and ("idx" in args or op.startswith("roll") or op in INPLACE)


def torch_refusal_is_a_quirk(op: str, shape: tuple) -> bool:
    """Zero classes with extra dims: torch's reshape fails ("size mismatch"); kael treats it
    as the [N, C] case (an out-of-range target, or NaN when every target is ignored)."""
    return op.startswith("cross_entropy") and len(shape) >= 3 and shape[1] == 0


def cases():
    """(op, dtype, shape, layout, seed): ops in turn; per op the dtypes and layouts cycle,
    its first case is 0-d and its second has a size-0 dim; the rest are random shapes."""
    rng = np.random.default_rng(SEED)
    names = sorted(OPS)
    for i in range(CASES):
        turn = i // len(names)
        layout = LAYOUTS[(turn + turn // 4) % 4]
        rank = int(rng.integers(2 if layout == "transposed" else 1, 4)) if turn else 0
        shape = [int(s) for s in rng.choice(SIZES, rank)]
        if turn == 1:
            shape[int(rng.integers(rank))] = 0
        yield (
            names[i % len(names)],
            DTYPES[turn % 4],
            tuple(shape),
            layout,
            int(rng.integers(1 << 30)),
        )


def run_case(op: str, dtype, shape: tuple, layout: str, seed: int) -> str:
    """Run one case on both libraries; returns a description for the failure message."""
    rng = np.random.default_rng(seed)
    call, make_args = OPS[op]
    layout, (kx, tx) = twins(rng, shape, dtype, layout)
    args = make_args(rng, shape, dtype)
    about = f"{op} {TORCH_DTYPES[dtype]} {shape} {layout} {args}"
    if op in AS_FLOAT32 and not tx.dtype.is_floating_point:
        tx = tx.float()
    try:
        want = call(torch, tx, args)
    except Exception as e:  # torch refuses: kael must refuse with its own error type
        if torch_refusal_is_a_quirk(op, shape):
            return f"{about}: torch refuses ({type(e).__name__}), kael need not"
        with pytest.raises(kael.Error):
            call(kael, kx, args)
        return f"{about}: both refuse ({type(e).__name__})"
    try:
        got = call(kael, kx, args)
    except kael.Error:
        if kael_is_stricter(op, dtype, layout, args, want):
            return f"{about}: kael refuses (chapter 05)"
        raise
    same(got, want)
    if op in INPLACE:  # in-place ops return the tensor they wrote
        assert got is kx, about
    return about


@pytest.mark.parametrize("op, dtype, shape, layout, seed", list(cases()))
def test_random_case_matches_torch(op, dtype, shape, layout, seed):
    run_case(op, dtype, shape, layout, seed)


def test_the_sample_gives_every_op_each_dtype_layout_a_0d_and_an_empty_input():
    seen = {op: set() for op in OPS}
    for op, dtype, shape, layout, _ in cases():
        seen[op] |= {dtype, layout, "0-d" if not shape else None, "empty" if 0 in shape else None}
    for op, kinds in seen.items():
        assert set(DTYPES) | set(LAYOUTS) | {"0-d", "empty"} <= kinds, op
