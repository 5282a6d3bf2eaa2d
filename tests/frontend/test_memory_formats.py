"""Memory formats against torch's: the strides clone, contiguous, to and the *_like factories
choose in each format, is_contiguous(memory_format=)'s truth table, and the errors."""

import copy
import itertools
import math
import pickle

import numpy as np
import pytest
import torch
from kernel_helpers import KAEL_DTYPES, TORCH_DTYPES

import kael

FORMATS = {
    kael.contiguous_format: torch.contiguous_format,
    kael.preserve_format: torch.preserve_format,
    kael.channels_last: torch.channels_last,
    kael.channels_last_3d: torch.channels_last_3d,
}
FORMAT_NAMES = ["contiguous_format", "preserve_format", "channels_last", "channels_last_3d"]

# Each layout as (shape, strides, storage offset), built in both libraries with as_strided.
LAYOUTS = {
    "contiguous": ((2, 3, 4, 5), (60, 20, 5, 1), 0),
    "channels_last": ((2, 3, 4, 5), (60, 1, 15, 3), 0),
    "transposed": ((2, 3, 5, 4), (60, 20, 1, 5), 0),
    "sliced": ((2, 3, 4, 3), (120, 40, 10, 3), 1),
    "sliced_channels_last": ((2, 3, 4, 3), (60, 1, 15, 6), 2),
    "expanded": ((2, 3, 4, 5), (0, 5, 0, 1), 0),
    "expanded_channels": ((2, 3, 4, 5), (20, 0, 5, 1), 0),
    "empty": ((2, 0, 3, 4), (12, 12, 4, 1), 0),
    "empty_channels_last": ((0, 3, 2, 2), (12, 1, 6, 3), 0),
    "size_one": ((2, 1, 3, 1), (3, 3, 1, 1), 0),
    "size_one_odd_strides": ((2, 1, 3, 1), (3, 7, 1, 5), 0),
    "n111": ((4, 1, 1, 1), (1, 1, 1, 1), 0),
    "n1h1_channels_last": ((2, 1, 3, 1), (3, 1, 1, 1), 0),
    "matrix_transposed": ((3, 4), (1, 3), 0),
    "matrix_sliced": ((3, 4), (8, 2), 1),
    "matrix_expanded": ((3, 4), (1, 0), 0),
    "vector_strided": ((5,), (2,), 1),
    "scalar": ((), (), 2),
    "cube_contiguous": ((2, 3, 2, 2, 2), (24, 8, 4, 2, 1), 0),
    "cube_channels_last": ((2, 3, 2, 2, 2), (24, 1, 12, 6, 3), 0),
    "cube_transposed": ((2, 3, 2, 2, 2), (24, 8, 1, 2, 4), 0),
    "cube_sliced": ((2, 3, 2, 2, 2), (48, 16, 8, 4, 1), 3),
}
DTYPES = [
    kael.float32,
    kael.float64,
    kael.float16,
    kael.bfloat16,
    kael.int64,
    kael.int32,
    kael.int8,
    kael.uint8,
    kael.bool,
]


def strided_pair(shape, strides, offset, dtype=kael.float32):
    """A kael and a torch tensor with the same layout over equal, distinct-ish elements."""
    extent = offset + 1 + sum((n - 1) * s for n, s in zip(shape, strides)) if all(shape) else 1
    base = (torch.arange(extent + offset) % 97 + 1).to(TORCH_DTYPES[dtype])
    k = kael.from_dlpack(base.clone()).as_strided(shape, strides, offset)
    return k, base.as_strided(shape, strides, offset)


def layout_pair(name: str, dtype=kael.float32):
    return strided_pair(*LAYOUTS[name], dtype)


def same_layout(k, t) -> None:
    """kael's new tensor against torch's: shape, strides, offset 0, dtype and values."""
    assert isinstance(k, kael.Tensor)
    assert k.shape == tuple(t.shape)
    assert k.stride() == t.stride(), (k.stride(), t.stride())
    assert k.storage_offset() == t.storage_offset() == 0
    assert k.dtype is KAEL_DTYPES[t.dtype]
    assert torch.equal(torch.from_dlpack(k), t)


def outcome(fn):
    """fn()'s result, or the exception it raised (torch's errors decide kael's)."""
    try:
        return fn()
    except RuntimeError as error:
        return error


# ---- the values and their type ------------------------------------------------------------


@pytest.mark.parametrize("name", FORMAT_NAMES)
def test_format_values_print_as_kael_names(name):
    fmt = getattr(kael, name)
    assert repr(fmt) == str(fmt) == f"kael.{name}" == repr(FORMATS[fmt]).replace("torch", "kael")
    assert isinstance(fmt, kael.memory_format)
    assert type(fmt).__name__ == type(FORMATS[fmt]).__name__ == "memory_format"


@pytest.mark.parametrize("name", FORMAT_NAMES)
def test_format_values_survive_pickle_and_copy_as_themselves(name):
    fmt = getattr(kael, name)
    assert pickle.loads(pickle.dumps(fmt)) is fmt
    assert copy.deepcopy(fmt) is fmt


def test_memory_format_type_is_public_kael_name():
    assert repr(kael.memory_format) == "<class 'kael.memory_format'>"
    for name in ["memory_format", *FORMAT_NAMES]:
        assert name in kael.__all__


# ---- is_contiguous(memory_format=) --------------------------------------------------------


def _sweep(rank: int, sizes: tuple[int, ...]):
    """Every shape of `rank` over `sizes`, each in every dim order (as torch permutes)."""
    for shape in itertools.product(sizes, repeat=rank):
        for order in itertools.permutations(range(rank)):
            made = torch.empty([shape[d] for d in order])
            yield torch.empty(400).as_strided(shape, made.permute(_inverse(order)).stride())


def _inverse(order):
    return [order.index(d) for d in range(len(order))]


@pytest.mark.parametrize("rank,sizes", [(4, (0, 1, 2, 3)), (5, (0, 1, 2)), (3, (0, 1, 2))])
def test_is_contiguous_truth_table_matches_torch_over_size_one_and_empty_dims(rank, sizes):
    empty = kael.empty(400)
    for t in _sweep(rank, sizes):
        k = empty.as_strided(tuple(t.shape), t.stride())
        for kf, tf in FORMATS.items():
            assert k.is_contiguous(memory_format=kf) == t.is_contiguous(memory_format=tf), (
                tuple(t.shape),
                t.stride(),
                kf,
            )


@pytest.mark.parametrize("name", sorted(LAYOUTS))
def test_is_contiguous_of_each_layout_matches_torch(name):
    k, t = layout_pair(name)
    for kf, tf in FORMATS.items():
        assert k.is_contiguous(kf) == t.is_contiguous(memory_format=tf)
    assert k.is_contiguous() == t.is_contiguous()


def test_is_contiguous_of_wrong_rank_is_false_not_an_error():
    k, t = layout_pair("matrix_transposed")
    assert k.contiguous().is_contiguous(kael.channels_last) is False
    assert t.contiguous().is_contiguous(memory_format=torch.channels_last) is False
    assert kael.zeros(2, 3, 4, 5).is_contiguous(memory_format=kael.channels_last_3d) is False


# ---- clone ------------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", [None, *FORMATS], ids=lambda f: str(f))
@pytest.mark.parametrize("name", sorted(LAYOUTS))
def test_clone_lays_out_as_torch_clone(name, fmt):
    k, t = layout_pair(name)
    expected = outcome(lambda: t.clone(memory_format=FORMATS.get(fmt, torch.preserve_format)))
    if isinstance(expected, RuntimeError):
        with pytest.raises(kael.ValueError, match=f"rank {len(t.shape)}"):
            k.clone(memory_format=fmt)
        return
    got = k.clone() if fmt is None else k.clone(memory_format=fmt)
    same_layout(got, expected)
    assert not got.shares_storage(k)


@pytest.mark.parametrize("name", ["channels_last", "transposed", "sliced", "expanded", "empty"])
def test_clone_function_takes_memory_format_like_the_method(name):
    k, t = layout_pair(name)
    same_layout(kael.clone(k), torch.clone(t))
    for kf, tf in FORMATS.items():
        expected = outcome(lambda tf=tf: torch.clone(t, memory_format=tf))
        if isinstance(expected, RuntimeError):
            with pytest.raises(kael.ValueError):
                kael.clone(k, memory_format=kf)
        else:
            same_layout(kael.clone(k, memory_format=kf), expected)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("name", ["channels_last", "sliced_channels_last", "cube_transposed"])
def test_clone_keeps_values_of_every_dtype(name, dtype):
    k, t = layout_pair(name, dtype)
    same_layout(k.clone(), t.clone())
    for kf in (kael.contiguous_format, kael.channels_last):
        expected = outcome(lambda kf=kf: t.clone(memory_format=FORMATS[kf]))
        if not isinstance(expected, RuntimeError):
            same_layout(k.clone(memory_format=kf), expected)


def _dense_strides_sweep():
    """Layouts torch's preserve rule must order: permuted, sliced and expanded 4-d tensors."""
    for shape in [(2, 3, 4, 5), (3, 1, 2, 2), (1, 4, 1, 3), (2, 2, 2, 2), (3, 0, 2, 1)]:
        for order in itertools.permutations(range(4)):
            t = torch.empty([2 * shape[d] for d in order]).permute(_inverse(order))
            yield t[tuple(slice(0, n) for n in shape)]
            yield t[::2, :, ::2][: shape[0], : shape[1], : shape[2], : shape[3]]
            yield t[:1, :, :1][:, : shape[1], :, : shape[3]].expand(3, shape[1], 2, shape[3])


def test_preserve_format_orders_dims_as_torch_over_permuted_sliced_expanded_layouts():
    empty = kael.empty(10**4)
    for t in _dense_strides_sweep():
        k = empty.as_strided(tuple(t.shape), t.stride(), t.storage_offset())
        assert k.clone().stride() == t.clone().stride(), (tuple(t.shape), t.stride())
        assert kael.empty_like(k).stride() == torch.empty_like(t).stride()


# ---- contiguous --------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", list(FORMATS), ids=str)
@pytest.mark.parametrize("name", sorted(LAYOUTS))
def test_contiguous_returns_self_or_copies_as_torch(name, fmt):
    k, t = layout_pair(name)
    expected = outcome(lambda: t.contiguous(memory_format=FORMATS[fmt]))
    if isinstance(expected, RuntimeError):
        kind = kael.Error if fmt is kael.preserve_format else kael.ValueError
        with pytest.raises(kind, match=str(expected).split(" tensor")[0]):
            k.contiguous(memory_format=fmt)
        return
    got = k.contiguous(memory_format=fmt)
    assert (got is k) == (expected is t)
    if expected is not t:
        same_layout(got, expected)


def test_contiguous_defaults_to_contiguous_format():
    k, t = layout_pair("channels_last")
    same_layout(k.contiguous(), t.contiguous())
    contiguous, _ = layout_pair("contiguous")
    assert contiguous.contiguous() is contiguous


def test_contiguous_preserve_format_is_refused_only_when_a_copy_is_needed():
    k, _ = layout_pair("contiguous")
    assert k.contiguous(memory_format=kael.preserve_format) is k
    t = layout_pair("matrix_transposed")[1]
    with pytest.raises(RuntimeError, match="preserve memory format is unsupported"):
        t.contiguous(memory_format=torch.preserve_format)
    with pytest.raises(kael.Error, match="preserve memory format is unsupported"):
        layout_pair("matrix_transposed")[0].contiguous(memory_format=kael.preserve_format)


# ---- to ---------------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", [None, *FORMATS], ids=lambda f: str(f))
@pytest.mark.parametrize("name", sorted(LAYOUTS))
def test_to_memory_format_aliases_or_copies_as_torch(name, fmt):
    k, t = layout_pair(name)
    tf = FORMATS.get(fmt, torch.preserve_format)
    expected = outcome(lambda: t.to(memory_format=tf))
    if isinstance(expected, RuntimeError):
        with pytest.raises(kael.ValueError, match=f"rank {len(t.shape)}"):
            k.to(memory_format=fmt)
        return
    got = k.to(memory_format=fmt)
    assert (got is k) == (expected is t)
    if expected is not t:
        same_layout(got, expected)


@pytest.mark.parametrize("fmt", [None, kael.contiguous_format, kael.channels_last], ids=str)
@pytest.mark.parametrize("name", ["channels_last", "transposed", "sliced", "expanded", "empty"])
@pytest.mark.parametrize("dtype", [kael.float64, kael.float16, kael.bfloat16, kael.int32])
def test_to_dtype_converts_into_the_format_layout(name, fmt, dtype):
    k, t = layout_pair(name)
    expected = t.to(TORCH_DTYPES[dtype], memory_format=FORMATS.get(fmt, torch.preserve_format))
    same_layout(k.to(dtype, memory_format=fmt), expected)
    same_layout(k.to(dtype=dtype, device="cpu", memory_format=fmt), expected)


def test_to_without_memory_format_still_returns_self_when_nothing_changes():
    k, _ = layout_pair("sliced")
    assert k.to(kael.float32) is k
    assert k.to("cpu", memory_format=kael.preserve_format) is k


# ---- the *_like factories ----------------------------------------------------------------

FILLED_LIKE = {
    "zeros_like": ((), ()),
    "ones_like": ((), ()),
    "full_like": ((2.5,), (2.5,)),
}


@pytest.mark.parametrize("fmt", [None, *FORMATS], ids=lambda f: str(f))
@pytest.mark.parametrize("name", sorted(LAYOUTS))
@pytest.mark.parametrize("op", ["empty_like", *FILLED_LIKE])
def test_like_factories_lay_out_as_torch(op, name, fmt):
    k, t = layout_pair(name)
    k_args, t_args = FILLED_LIKE.get(op, ((), ()))
    tf = FORMATS.get(fmt, torch.preserve_format)
    expected = outcome(lambda: getattr(torch, op)(t, *t_args, memory_format=tf))
    if isinstance(expected, RuntimeError):
        with pytest.raises(kael.ValueError, match=f"rank {len(t.shape)}"):
            getattr(kael, op)(k, *k_args, memory_format=fmt)
        return
    got = getattr(kael, op)(k, *k_args, memory_format=fmt)
    if op == "empty_like":
        assert (got.shape, got.stride(), got.dtype) == (k.shape, expected.stride(), k.dtype)
    else:
        same_layout(got, expected)


@pytest.mark.parametrize("dtype", [kael.float64, kael.float16, kael.int64, kael.bool], ids=str)
def test_like_factories_with_dtype_keep_the_format_layout(dtype):
    k, t = layout_pair("channels_last")
    td = TORCH_DTYPES[dtype]
    same_layout(kael.zeros_like(k, dtype=dtype), torch.zeros_like(t, dtype=td))
    same_layout(
        kael.ones_like(k, dtype=dtype, memory_format=kael.contiguous_format),
        torch.ones_like(t, dtype=td, memory_format=torch.contiguous_format),
    )


SAMPLERS = {
    "rand_like": ((), lambda v: ((v >= 0) & (v < 1)).all()),
    "randn_like": ((), lambda v: v.isfinite().all()),
    "randint_like": ((3, 7), lambda v: ((v >= 3) & (v < 7)).all()),
}


@pytest.mark.parametrize("fmt", [None, *FORMATS], ids=lambda f: str(f))
@pytest.mark.parametrize("name", ["channels_last", "transposed", "sliced", "expanded", "empty"])
@pytest.mark.parametrize("op", sorted(SAMPLERS))
def test_random_like_factories_lay_out_as_torch(op, name, fmt):
    k, t = layout_pair(name)
    args, in_range = SAMPLERS[op]
    tf = FORMATS.get(fmt, torch.preserve_format)
    expected = outcome(lambda: getattr(torch, op)(t, *args, memory_format=tf))
    if isinstance(expected, RuntimeError):
        with pytest.raises(kael.ValueError, match=f"rank {len(t.shape)}"):
            getattr(kael, op)(k, *args, memory_format=fmt)
        return
    got = getattr(kael, op)(k, *args, memory_format=fmt)
    assert (got.shape, got.stride(), got.dtype) == (k.shape, expected.stride(), k.dtype)
    assert in_range(torch.from_dlpack(got))


@pytest.mark.parametrize("dtype", [kael.int64, kael.int16, kael.float32, kael.bool], ids=str)
def test_randint_like_converts_into_the_preserved_layout(dtype):
    k, t = layout_pair("channels_last")
    expected = torch.randint_like(t, 0, 2, dtype=TORCH_DTYPES[dtype])
    got = kael.randint_like(k, 0, 2, dtype=dtype)
    assert (got.stride(), got.dtype) == (expected.stride(), dtype)
    values = torch.from_dlpack(got).to(torch.int64)
    assert ((values >= 0) & (values < 2)).all()


# ---- bad inputs ---------------------------------------------------------------------------

BAD_FORMATS = [1, "channels_last", kael.float32, torch.channels_last]

# Each function given a memory format, called on a kael or a torch tensor (`lib`: the module).
CALLS = {
    "contiguous": lambda lib, x, f: x.contiguous(memory_format=f),
    "is_contiguous": lambda lib, x, f: x.is_contiguous(memory_format=f),
    "clone": lambda lib, x, f: x.clone(memory_format=f),
    "to": lambda lib, x, f: x.to(memory_format=f),
    "empty_like": lambda lib, x, f: lib.empty_like(x, memory_format=f),
    "zeros_like": lambda lib, x, f: lib.zeros_like(x, memory_format=f),
    "ones_like": lambda lib, x, f: lib.ones_like(x, memory_format=f),
    "full_like": lambda lib, x, f: lib.full_like(x, 1.0, memory_format=f),
    "rand_like": lambda lib, x, f: lib.rand_like(x, memory_format=f),
    "randn_like": lambda lib, x, f: lib.randn_like(x, memory_format=f),
    "randint_like": lambda lib, x, f: lib.randint_like(x, 5, memory_format=f),
}


@pytest.mark.parametrize("bad", BAD_FORMATS, ids=lambda b: type(b).__name__)
@pytest.mark.parametrize("op", sorted(CALLS))
def test_a_value_that_is_no_memory_format_is_a_type_error_naming_it(op, bad):
    with pytest.raises(kael.TypeError, match=rf"{op}\(\): argument 'memory_format' must be"):
        CALLS[op](kael, kael.zeros(2, 3, 4, 5), bad)
    with pytest.raises(TypeError, match=f"not {type(bad).__name__}"):
        CALLS[op](kael, kael.zeros(2, 3, 4, 5), bad)


def test_kael_clone_function_refuses_a_bad_format_as_the_method_does():
    with pytest.raises(kael.TypeError, match="must be kael.memory_format, not str"):
        kael.clone(kael.zeros(2), memory_format="preserve_format")


@pytest.mark.parametrize("op", ["contiguous", "is_contiguous"])
def test_none_is_refused_where_torch_has_no_optional_format(op):
    with pytest.raises(TypeError):
        CALLS[op](torch, torch.zeros(2), None)
    with pytest.raises(kael.TypeError, match="not NoneType"):
        CALLS[op](kael, kael.zeros(2), None)


@pytest.mark.parametrize("op", sorted(set(CALLS) - {"contiguous", "is_contiguous"}))
def test_none_means_preserve_format_where_torch_takes_it(op):
    k, t = layout_pair("channels_last")
    assert CALLS[op](kael, k, None).stride() == t.stride()


@pytest.mark.parametrize("op", sorted(set(CALLS) - {"is_contiguous"}))
@pytest.mark.parametrize("shape", [(), (3,), (2, 3), (2, 3, 4), (1, 2, 3, 4, 5)])
def test_channels_last_needs_rank_4_and_names_the_rank(op, shape):
    with pytest.raises(RuntimeError, match="required rank 4 tensor to use channels_last format"):
        CALLS[op](torch, torch.zeros(shape), torch.channels_last)
    with pytest.raises(kael.ValueError, match=f"required rank 4 .* got rank {len(shape)}"):
        CALLS[op](kael, kael.zeros(shape), kael.channels_last)


@pytest.mark.parametrize("op", sorted(set(CALLS) - {"is_contiguous"}))
@pytest.mark.parametrize("shape", [(2, 3, 4, 5), (1, 2, 3, 4, 5, 6)])
def test_channels_last_3d_needs_rank_5_and_names_the_rank(op, shape):
    with pytest.raises(RuntimeError, match="required rank 5 tensor to use channels_last_3d"):
        CALLS[op](torch, torch.zeros(shape), torch.channels_last_3d)
    with pytest.raises(kael.ValueError, match=f"required rank 5 .* got rank {len(shape)}"):
        CALLS[op](kael, kael.zeros(shape), kael.channels_last_3d)


def test_channels_last_at_its_own_rank_is_accepted_on_both_sides_of_the_limit():
    assert kael.zeros(1, 1, 1, 1).clone(memory_format=kael.channels_last).stride() == (
        torch.zeros(1, 1, 1, 1).clone(memory_format=torch.channels_last).stride()
    )
    assert kael.zeros(1, 1, 1, 1, 1).clone(memory_format=kael.channels_last_3d).stride() == (
        torch.zeros(1, 1, 1, 1, 1).clone(memory_format=torch.channels_last_3d).stride()
    )


# ---- under @kael.compile ------------------------------------------------------------------


def test_memory_formats_work_under_compile():
    k, t = layout_pair("contiguous")
    step = kael.compile(lambda x: x.clone(memory_format=kael.channels_last))
    for _ in range(2):
        same_layout(step(k), t.clone(memory_format=torch.channels_last))
    like = kael.compile(lambda x: kael.zeros_like(x.permute(0, 2, 3, 1)))
    same_layout(like(k), torch.zeros_like(t.permute(0, 2, 3, 1)))


# ---- the conversion shortcuts: float(), ..., cpu(), cuda(), type() -----------------------

SHORTCUTS = ["float", "double", "half", "bfloat16", "int", "long", "short", "char", "byte", "bool"]
SHORTCUT_LAYOUTS = [
    "contiguous",
    "channels_last",
    "transposed",
    "sliced_channels_last",
    "expanded_channels",
    "empty_channels_last",
    "size_one_odd_strides",
    "matrix_transposed",
    "scalar",
    "cube_channels_last",
]


def _shortcut_dtype(method: str):
    """The dtype torch's shortcut converts to (kael's is checked against it, not assumed)."""
    return KAEL_DTYPES[getattr(torch.zeros(1), method)().dtype]


def _source_dtype(method: str, same: bool):
    """The shortcut's own dtype (nothing to convert) or another one."""
    own = _shortcut_dtype(method)
    if same:
        return own
    return kael.float64 if own is kael.float32 else kael.float32


def _agrees_with_torch(k, t, run) -> None:
    """run(lib, x, fmt) on both sides, for each format: torch's rank errors as typed kael
    errors, else the same layout, values and dtype, and self exactly where torch gives self."""
    for fmt in [None, *FORMATS]:
        expected = outcome(lambda fmt=fmt: run(torch, t, FORMATS.get(fmt)))
        if isinstance(expected, RuntimeError):
            with pytest.raises(kael.ValueError, match=f"rank {len(t.shape)}"):
                run(kael, k, fmt)
            continue
        got = run(kael, k, fmt)
        assert (got is k) == (expected is t), fmt
        if expected is not t:
            same_layout(got, expected)


@pytest.mark.parametrize("same", [True, False], ids=["same_dtype", "converting"])
@pytest.mark.parametrize("name", SHORTCUT_LAYOUTS)
@pytest.mark.parametrize("method", SHORTCUTS)
def test_dtype_shortcuts_alias_or_copy_into_the_format_as_torch(method, name, same):
    k, t = layout_pair(name, _source_dtype(method, same))
    _agrees_with_torch(k, t, lambda lib, x, f: getattr(x, method)(memory_format=f))


@pytest.mark.parametrize("method", SHORTCUTS)
def test_dtype_shortcuts_convert_to_torchs_dtype_in_every_format(method):
    k, t = layout_pair("channels_last", kael.float32)
    for fmt in [None, kael.preserve_format, kael.contiguous_format, kael.channels_last]:
        got = getattr(k, method)(memory_format=fmt)
        assert got.dtype is _shortcut_dtype(method)
        expected = getattr(t, method)(memory_format=FORMATS.get(fmt, torch.preserve_format))
        same_layout(got, expected)


@pytest.mark.parametrize("method", SHORTCUTS)
def test_dtype_shortcuts_without_a_format_keep_self_or_the_layout(method):
    k, t = layout_pair("sliced_channels_last", _shortcut_dtype(method))
    assert getattr(k, method)() is k and getattr(t, method)() is t
    k, t = layout_pair("sliced_channels_last", kael.float64 if method == "float" else kael.float32)
    same_layout(getattr(k, method)(), getattr(t, method)())


@pytest.mark.parametrize("name", sorted(LAYOUTS))
def test_cpu_aliases_or_copies_into_the_format_as_torch(name):
    k, t = layout_pair(name)
    _agrees_with_torch(k, t, lambda lib, x, f: x.cpu(memory_format=f))
    assert k.cpu() is k and t.cpu() is t


@pytest.mark.parametrize("name", SHORTCUT_LAYOUTS)
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "int32"])
def test_type_with_a_dtype_converts_into_the_format_as_torch(dtype, name):
    k, t = layout_pair(name)
    _agrees_with_torch(k, t, lambda lib, x, f: x.type(getattr(lib, dtype), memory_format=f))


@pytest.mark.parametrize("type_name", ["FloatTensor", "DoubleTensor", "ShortTensor"])
def test_type_with_a_type_name_converts_into_the_format_as_torch(type_name):
    k, t = layout_pair("channels_last")
    _agrees_with_torch(
        k, t, lambda lib, x, f: x.type(f"{lib.__name__}.{type_name}", memory_format=f)
    )


def test_type_without_a_dtype_names_the_type_whatever_the_format():
    k, t = layout_pair("channels_last")
    assert t.type(memory_format=torch.channels_last) == "torch.FloatTensor"
    assert k.type(memory_format=kael.channels_last) == "kael.FloatTensor"
    assert k.type(None, memory_format=kael.contiguous_format) == "kael.FloatTensor"


@pytest.mark.parametrize("python_type", [float, int, bool, complex])
def test_type_refuses_a_python_type_naming_it_as_torch(python_type):
    """x.to(float) converts, but x.type(float) is torch's ValueError: no type named so."""
    k, t = layout_pair("contiguous")
    with pytest.raises(ValueError, match=f"invalid type: '{python_type.__name__}'"):
        t.type(python_type)
    with pytest.raises(kael.ValueError, match=f"invalid type: '{python_type.__name__}'"):
        k.type(python_type)


def test_type_passes_non_blocking_positionally_or_by_name_as_torch():
    k, t = layout_pair("channels_last")
    same_layout(k.type(kael.float64, True), t.type(torch.float64, True))
    got = k.type(kael.float32, non_blocking=True, memory_format=kael.contiguous_format)
    expected = t.type(torch.float32, non_blocking=True, memory_format=torch.contiguous_format)
    same_layout(got, expected)


# Each shortcut given a memory format, called on a kael or a torch tensor (`lib`: the module).
SHORTCUT_CALLS = {
    **{m: (lambda lib, x, f, m=m: getattr(x, m)(memory_format=f)) for m in SHORTCUTS},
    "cpu": lambda lib, x, f: x.cpu(memory_format=f),
    "cuda": lambda lib, x, f: x.cuda(memory_format=f),
    "type": lambda lib, x, f: x.type(lib.float64, memory_format=f),
}


@pytest.mark.parametrize("bad", BAD_FORMATS, ids=lambda b: type(b).__name__)
@pytest.mark.parametrize("op", sorted(SHORTCUT_CALLS))
def test_a_shortcut_given_no_memory_format_is_a_type_error_naming_it(op, bad):
    if not isinstance(bad, torch.memory_format):
        with pytest.raises(TypeError, match=rf"{op}\(\): argument 'memory_format' must be"):
            SHORTCUT_CALLS[op](torch, torch.zeros(2, 3, 4, 5), bad)
    with pytest.raises(kael.TypeError, match=rf"{op}\(\): argument 'memory_format' must be"):
        SHORTCUT_CALLS[op](kael, kael.zeros(2, 3, 4, 5), bad)
    with pytest.raises(kael.TypeError, match=f"not {type(bad).__name__}"):
        SHORTCUT_CALLS[op](kael, kael.zeros(2, 3, 4, 5), bad)


@pytest.mark.parametrize("op", sorted(set(SHORTCUT_CALLS) - {"cuda"}))
def test_a_shortcut_given_none_keeps_the_layout_as_preserve_format(op):
    k, t = layout_pair("channels_last")
    got, expected = SHORTCUT_CALLS[op](kael, k, None), SHORTCUT_CALLS[op](torch, t, None)
    assert (got is k) == (expected is t)
    if expected is not t:
        same_layout(got, expected)


@pytest.mark.parametrize("op", sorted(set(SHORTCUT_CALLS) - {"cuda"}))
@pytest.mark.parametrize(
    "fmt,rank", [("channels_last", 4), ("channels_last_3d", 5)], ids=["2d", "3d"]
)
def test_a_shortcut_needs_the_formats_rank_on_both_sides_of_it(op, fmt, rank):
    for shape in [(2,) * (rank - 1), (2,) * (rank + 1)]:
        with pytest.raises(RuntimeError, match=f"required rank {rank} tensor to use {fmt}"):
            SHORTCUT_CALLS[op](torch, torch.zeros(shape), getattr(torch, fmt))
        with pytest.raises(kael.ValueError, match=f"required rank {rank} .* got rank"):
            SHORTCUT_CALLS[op](kael, kael.zeros(shape), getattr(kael, fmt))
    expected = SHORTCUT_CALLS[op](torch, torch.zeros((2,) * rank), getattr(torch, fmt))
    same_layout(SHORTCUT_CALLS[op](kael, kael.zeros((2,) * rank), getattr(kael, fmt)), expected)


@pytest.mark.parametrize("op", SHORTCUTS + ["cpu"])
def test_a_shortcut_takes_the_format_by_keyword_only_as_torch(op):
    with pytest.raises(TypeError, match="positional"):
        getattr(torch.zeros(2), op)(torch.contiguous_format)
    with pytest.raises(TypeError, match="positional"):
        getattr(kael.zeros(2), op)(kael.contiguous_format)


def test_cuda_checks_its_arguments_before_touching_a_device():
    k, t = kael.zeros(2, 3), torch.zeros(2, 3)
    with pytest.raises(RuntimeError, match="must be cuda device"):
        t.cuda("cpu")
    with pytest.raises(kael.ValueError, match="must be a cuda device, got cpu"):
        k.cuda("cpu")
    with pytest.raises(TypeError, match="argument 'non_blocking' must be bool"):
        t.cuda(non_blocking="yes")
    with pytest.raises(kael.TypeError, match="argument 'non_blocking' must be a bool, got str"):
        k.cuda(non_blocking="yes")
    with pytest.raises(kael.ValueError, match="required rank 4 .* got rank 2"):
        k.cuda(memory_format=kael.channels_last)


def test_type_refuses_a_non_bool_non_blocking_as_torch():
    with pytest.raises(TypeError, match="argument 'non_blocking' .*must be bool, not int"):
        torch.zeros(2).type(torch.float64, 1)
    with pytest.raises(kael.TypeError, match="argument 'non_blocking' must be a bool, got int"):
        kael.zeros(2).type(kael.float64, 1)


def test_shortcuts_take_a_format_under_compile():
    k, t = layout_pair("contiguous")
    step = kael.compile(lambda x: x.double(memory_format=kael.channels_last))
    for _ in range(2):
        same_layout(step(k), t.double(memory_format=torch.channels_last))


# ---- empty(memory_format=) ---------------------------------------------------------------

EMPTY_SHAPES = [
    (2, 3, 4, 5),
    (2, 0, 4, 5),
    (0, 3, 0, 5),
    (2, 3, 1, 1),
    (1, 1, 1, 1),
    (2, 3, 2, 2, 2),
    (2, 0, 2, 1, 2),
    (3, 4),
    (5,),
    (),
]


@pytest.mark.parametrize(
    "fmt", [None, kael.contiguous_format, kael.channels_last, kael.channels_last_3d], ids=str
)
@pytest.mark.parametrize("shape", EMPTY_SHAPES, ids=str)
def test_empty_lays_out_in_the_format_as_torch(shape, fmt):
    tf = FORMATS.get(fmt, torch.contiguous_format)
    expected = outcome(lambda: torch.empty(shape, memory_format=tf))
    if isinstance(expected, RuntimeError):
        with pytest.raises(kael.ValueError, match=f"required rank .* got rank {len(shape)}"):
            kael.empty(shape, memory_format=fmt)
        return
    for got in (kael.empty(shape, memory_format=fmt), kael.empty(*shape, memory_format=fmt)):
        assert (got.shape, got.stride(), got.dtype) == (
            tuple(expected.shape),
            expected.stride(),
            kael.float32,
        )
        assert got.storage_offset() == 0
        assert got.is_contiguous(memory_format=fmt or kael.contiguous_format)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_empty_in_a_format_takes_the_dtype_and_holds_writable_elements(dtype):
    got = kael.empty(2, 3, 4, 5, dtype=dtype, memory_format=kael.channels_last)
    expected = torch.empty(2, 3, 4, 5, dtype=TORCH_DTYPES[dtype], memory_format=torch.channels_last)
    assert (got.stride(), got.dtype) == (expected.stride(), dtype)
    got.copy_(kael.ones(2, 3, 4, 5, dtype=dtype))
    same_layout(got, expected.copy_(torch.ones(2, 3, 4, 5)))


def test_empty_refuses_preserve_format_which_has_no_layout_to_keep():
    with pytest.raises(RuntimeError, match="unsupported memory format Preserve"):
        torch.empty(2, 3, 4, 5, memory_format=torch.preserve_format)
    with pytest.raises(kael.ValueError, match=r"empty\(\): unsupported memory format Preserve"):
        kael.empty(2, 3, 4, 5, memory_format=kael.preserve_format)
    with pytest.raises(kael.ValueError, match="unsupported memory format Preserve"):
        kael.empty((), memory_format=kael.preserve_format)


@pytest.mark.parametrize("bad", BAD_FORMATS, ids=lambda b: type(b).__name__)
def test_empty_given_no_memory_format_is_a_type_error_naming_it(bad):
    if not isinstance(bad, torch.memory_format):
        with pytest.raises(TypeError, match=r"empty\(\): argument 'memory_format' must be"):
            torch.empty(2, 3, 4, 5, memory_format=bad)
    with pytest.raises(kael.TypeError, match=rf"empty\(\): .* not {type(bad).__name__}"):
        kael.empty(2, 3, 4, 5, memory_format=bad)


@pytest.mark.parametrize(
    "fmt,rank", [("channels_last", 4), ("channels_last_3d", 5)], ids=["2d", "3d"]
)
def test_empty_needs_the_formats_rank_on_both_sides_of_it(fmt, rank):
    for shape in [(2,) * (rank - 1), (2,) * (rank + 1)]:
        with pytest.raises(RuntimeError, match=f"required rank {rank} tensor to use {fmt}"):
            torch.empty(shape, memory_format=getattr(torch, fmt))
        with pytest.raises(kael.ValueError, match=f"required rank {rank} .* got rank"):
            kael.empty(shape, memory_format=getattr(kael, fmt))
    expected = torch.empty((2,) * rank, memory_format=getattr(torch, fmt)).stride()
    assert kael.empty((2,) * rank, memory_format=getattr(kael, fmt)).stride() == expected


def test_only_empty_of_the_plain_factories_takes_a_memory_format():
    for name in ["zeros", "ones"]:
        with pytest.raises(TypeError, match="memory_format"):
            getattr(torch, name)(2, 3, 4, 5, memory_format=torch.channels_last)
        with pytest.raises(TypeError, match="memory_format"):
            getattr(kael, name)(2, 3, 4, 5, memory_format=kael.channels_last)


def test_empty_takes_a_format_under_compile():
    step = kael.compile(lambda x: kael.empty(2, 3, 4, 5, memory_format=kael.channels_last))
    for _ in range(2):
        assert step(kael.zeros(1)).stride() == (60, 1, 15, 3)


# ---- the layout of an op's new result -----------------------------------------------------
# torch's TensorIterator lays an elementwise result out in its operands' memory order (their
# common layout when they share one, else dense with the dims ordered by their strides);
# the other families give what torch's kernels give.


def _elementwise(L):
    F = L.nn.functional
    return {
        "exp": L.exp,
        "neg": lambda x: -x,
        "isnan": L.isnan,
        "round_decimals": lambda x: L.round(x, decimals=1),
        "add_number": lambda x: x + 1,
        "rsub_number": lambda x: 2 - x,
        "mul_self": lambda x: x * x,
        "add_alpha": lambda x: L.add(x, x, alpha=2),
        "lt_number": lambda x: x < 3,
        "where": lambda x: L.where(x > 3, x, -x),
        "clamp": lambda x: x.clamp(2, 5),
        "clamp_tensor": lambda x: x.clamp(min=x - 1),
        "lerp": lambda x: L.lerp(x, -x, 0.25),
        "addcmul": lambda x: L.addcmul(x, x, x),
        "gelu": F.gelu,
        "silu": F.silu,
        "hardtanh": F.hardtanh,
        "softplus": F.softplus,
        "logit": lambda x: L.logit(x / 100),
        "nan_to_num": L.nan_to_num,
        "xlogy": lambda x: L.xlogy(x, x),
        "to_float64": lambda x: x.to(L.float64),
        "complex_mul": lambda x: x * 1j,
        "complex_abs": lambda x: (x * 1j).abs(),
        "signbit": L.signbit,
        "float_power": lambda x: L.float_power(x, 2),
        "ldexp": lambda x: L.ldexp(x, x),
        "fmax": lambda x: L.fmax(x, -x),
        "nextafter": lambda x: L.nextafter(x, -x),
        "frexp_mantissa": lambda x: L.frexp(x)[0],
        "frexp_exponent": lambda x: L.frexp(x)[1],
    }


RESULT_LAYOUTS = [
    "contiguous",
    "channels_last",
    "transposed",
    "sliced",
    "sliced_channels_last",
    "expanded",
    "expanded_channels",
    "size_one_odd_strides",
    "n1h1_channels_last",
    "matrix_transposed",
    "matrix_sliced",
    "cube_channels_last",
    "cube_transposed",
]


def same_result_layout(k, t) -> None:
    """kael's new result has torch's shape, strides (size-1 dims' too), dtype and values."""
    assert k.shape == tuple(t.shape)
    assert k.stride() == t.stride(), (k.stride(), t.stride())
    assert str(k.dtype).removeprefix("kael.") == str(t.dtype).removeprefix("torch.")
    if t.is_complex():
        k, t = kael.view_as_real(k), torch.view_as_real(t)
    # (values to float32 rounding: a normalization's near-zero results differ by an ulp)
    assert torch.allclose(torch.from_dlpack(k), t, rtol=1e-5, atol=1e-6, equal_nan=True)


@pytest.mark.parametrize("op", sorted(_elementwise(torch)))
@pytest.mark.parametrize("name", RESULT_LAYOUTS)
def test_elementwise_result_keeps_its_operands_memory_order_as_torch(name, op):
    k, t = layout_pair(name)
    same_result_layout(_elementwise(kael)[op](k), _elementwise(torch)[op](t))


BROADCAST_PAIRS = [
    ("channels_last", (1, 3, 1, 1)),  # a per-channel bias on an NHWC activation
    ("channels_last", (5,)),
    ("transposed", (5, 1)),
    ("matrix_transposed", (4,)),
    ("matrix_transposed", (3, 1)),
    ("cube_transposed", (3, 1, 1, 1)),
    ("size_one_odd_strides", (2, 1, 3, 4)),
]


@pytest.mark.parametrize("name,shape", BROADCAST_PAIRS)
@pytest.mark.parametrize("order", ["tensor_first", "broadcast_first"])
def test_broadcast_result_orders_dims_by_the_operands_strides_as_torch(name, shape, order):
    k, t = layout_pair(name)
    kb, tb = kael.arange(math.prod(shape)).reshape(shape), torch.arange(math.prod(shape))
    tb = tb.reshape(shape)
    if order == "broadcast_first":
        same_result_layout(kb + k, tb + t)
    else:
        same_result_layout(k + kb, t + tb)


# layouts of one shape, [2, 3, 4, 5]: (strides, offset)
SAME_SHAPE = {
    "contiguous": ((60, 20, 5, 1), 0),
    "channels_last": ((60, 1, 15, 3), 0),
    "transposed": ((60, 20, 1, 4), 0),
    "sliced": ((120, 40, 10, 1), 3),
    "expanded": ((0, 5, 0, 1), 0),
}


@pytest.mark.parametrize("a", sorted(SAME_SHAPE))
@pytest.mark.parametrize("b", sorted(SAME_SHAPE))
def test_result_of_two_layouts_follows_the_first_that_orders_the_dims_as_torch(a, b):
    (ka, ta), (kb, tb) = (strided_pair((2, 3, 4, 5), *SAME_SHAPE[n]) for n in (a, b))
    same_result_layout(ka * kb, ta * tb)
    same_result_layout(kael.where(ka > kb, ka, kb), torch.where(ta > tb, ta, tb))


@pytest.mark.parametrize("name", ["channels_last", "transposed", "matrix_transposed"])
def test_out_resized_takes_the_result_layout_and_a_sized_out_keeps_its_own(name):
    k, t = layout_pair(name)
    for kout, tout in (
        (kael.empty(0), torch.empty(0)),
        (kael.empty(k.shape), torch.empty(t.shape)),
    ):
        kael.exp(k, out=kout)
        torch.exp(t, out=tout)
        same_result_layout(kout, tout)
        kael.add(k, 1, out=kout)
        torch.add(t, 1, out=tout)
        same_result_layout(kout, tout)


def _own_layout(L):
    F = L.nn.functional
    return {
        "softmax": lambda x: x.softmax(1),
        "log_softmax": lambda x: x.log_softmax(-1),
        "softmin": lambda x: F.softmin(x, 0),
        "logsigmoid": F.logsigmoid,
        "index_add": lambda x: x.index_add(0, L.tensor([0]), x[:1]),
        "index_copy": lambda x: x.index_copy(0, L.tensor([0]), x[:1]),
        "scatter_add": lambda x: x.scatter_add(0, L.zeros_like(x, dtype=L.int64), x),
        "masked_fill": lambda x: x.masked_fill(x > 3, 0),
        "cumsum": lambda x: x.cumsum(1),
        "sum_keepdim": lambda x: x.sum(1, keepdim=True),
        "sort_values": lambda x: x.sort(0)[0],
        "sort_indices": lambda x: x.sort(-1)[1],
        "argsort": lambda x: x.argsort(1),
        "topk": lambda x: x.topk(1, 0)[0],
        "flip": lambda x: x.flip(0),
        "layer_norm": lambda x: F.layer_norm(x, x.shape[-1:]),
        "normalize": F.normalize,
        "rrelu_eval": F.rrelu,
        "pow_number_base": lambda x: 2.0 ** (x / 50),
        "float_power_number_base": lambda x: L.float_power(2, x / 50),
        "ldexp": lambda x: L.ldexp(x, L.ones(x.shape[-1:], dtype=L.int64)),
        "gaussian_nll": lambda x: F.gaussian_nll_loss(x, x * 2, L.ones(x.shape), reduction="none"),
        "one_hot": lambda x: F.one_hot(x.long() % 4, 4),
        "rms_norm": lambda x: F.rms_norm(x, x.shape[-1:]),
        "complex_angle": lambda x: L.angle(L.complex(x, -x)),
        "normal_sample": lambda x: L.distributions.Normal(x, 1.0).sample() * 0,
        "max_pool": lambda x: F.max_pool1d(x.flatten(0, -3), 2) if x.ndim >= 3 else x * 0,
        "max_pool_indices": lambda x: (
            F.max_pool2d(x, 2, return_indices=True)[1] if x.ndim == 4 else x.long() * 0
        ),
        "avg_pool": lambda x: F.avg_pool2d(x, 2) if x.ndim == 4 else x.sum(0, keepdim=True),
        "batch_norm": lambda x: F.batch_norm(x, L.zeros(x.shape[1]), L.ones(x.shape[1])),
        "batch_norm_train": lambda x: F.batch_norm(x, None, None, training=True),
        "group_norm": lambda x: F.group_norm(x, 1) if x.ndim > 2 else x * 0,
        "instance_norm": lambda x: F.instance_norm(x) if x.ndim > 2 else x * 0,
        "renorm": lambda x: x.renorm(2, 0, 1.0),
        "cat": lambda x: L.cat([x, x], 0),
        "cat_mixed": lambda x: L.cat([x, x.contiguous()], 1),
        "pad_constant": lambda x: F.pad(x, (1, 2), value=1.5),
        "pad_channels": lambda x: F.pad(x, (0, 0) * (x.ndim - 2) + (1, 1)),
    }


@pytest.mark.parametrize("op", sorted(_own_layout(torch)))
@pytest.mark.parametrize("name", ["contiguous", "channels_last", "transposed", "cube_transposed",
                                  "matrix_transposed", "sliced_channels_last"])  # fmt: skip
def test_other_families_lay_out_their_results_as_torch(name, op):
    k, t = layout_pair(name)
    same_result_layout(_own_layout(kael)[op](k), _own_layout(torch)[op](t))


@pytest.mark.parametrize("name", ["channels_last", "transposed", "matrix_transposed", "sliced"])
def test_compiled_results_lay_out_as_eager_ones_in_one_kernel(name):
    k, t = layout_pair(name)

    def f(x):
        return (x * 2).exp() + x.sigmoid()

    step = kael.compile(f, check=True)
    for _ in range(2):
        same_result_layout(step(k), f(t))
    assert "1 kernels" in str(step.inspect(k))


def _products(L):
    return {
        "addmm": lambda x: L.addmm(x, x, x),
        "addmm_transposed": lambda x: L.addmm(x.t(), x, x),
        "baddbmm": lambda x: L.baddbmm(x.t().expand(2, 4, 4), x.expand(2, 4, 4), x.expand(2, 4, 4)),
        "addr": lambda x: L.addr(x.t(), x[0], x[1]),
        "fmax_mixed_expanded": lambda x: L.fmax(x[:, :1].expand(4, 4), x.t().double()),
        "add_mixed_expanded": lambda x: L.add(x[:, :1].expand(4, 4), x.t().double()),
        "atan2_expanded": lambda x: L.atan2(x[:1].expand(4, 4), x.t()),
        "hypot_expanded": lambda x: L.hypot(x[:1].expand(4, 4), x.t()),
        "atan2_mixed_expanded": lambda x: L.atan2(x[:1].expand(4, 4), x.t().double()),
    }


@pytest.mark.parametrize("op", sorted(_products(torch)))
def test_products_and_mixed_dtype_results_lay_out_as_torch(op):
    k, t = strided_pair((4, 4), (1, 4), 0)  # column-major
    same_result_layout(_products(kael)[op](k), _products(torch)[op](t))


def test_a_fresh_result_after_an_out_call_keeps_its_own_layout():
    """An out= call must not teach the fast door its out's layout: a later call without
    out= gets the result torch gives (found by review: row-major after a dense out=)."""
    k, t = layout_pair("matrix_transposed")
    for _ in range(2):
        kael.exp(k, out=kael.empty(k.shape))
        kael.add(k, k, out=kael.empty(k.shape))
        same_result_layout(kael.exp(k), torch.exp(t))
        same_result_layout(kael.add(k, k), torch.add(t, t))


# ---- the spatial ops' results: channels-last where torch's kernels write it so -----------

SPATIAL_INPUTS = {  # (shape, format of the input, format of the weight)
    "rows": ((2, 6, 7, 9), None, None),
    "channels_last": ((2, 6, 7, 9), "cl", None),
    "weight_channels_last": ((2, 6, 7, 9), None, "cl"),
    "one_channel": ((2, 1, 7, 9), "cl", None),
    "batch_one": ((1, 6, 7, 9), "cl", None),
    "cube_channels_last": ((2, 6, 5, 7, 9), "cl", None),
}
SPATIAL_OPS = {  # (names of the inputs it takes, the call: F, x, w)
    "conv": (4, 5, lambda F, x, w: F.conv2d(x, w, padding=1) if x.ndim == 4 else F.conv3d(x, w)),
    "conv_bias_relu": (4, 4, lambda F, x, w: F.relu(F.conv2d(x, w, w[0, 0, 0, :1].expand(w.shape[0]), stride=2))),
    "conv_depthwise": (4, None, lambda F, x, w: F.conv2d(x, x[:1, :, :3, :3].transpose(0, 1), groups=x.shape[1])),
    "conv_transpose": (4, 5, lambda F, x, w: F.conv_transpose2d(x, w.transpose(0, 1)) if x.ndim == 4 else F.conv_transpose3d(x, w.transpose(0, 1))),
    "nearest": (4, 5, lambda F, x, w: F.interpolate(x, scale_factor=2)),
    "nearest_exact": (4, None, lambda F, x, w: F.interpolate(x, size=(3, 13), mode="nearest-exact")),
    "bilinear": (4, None, lambda F, x, w: F.interpolate(x, scale_factor=2, mode="bilinear")),
    "bilinear_antialias": (4, None, lambda F, x, w: F.interpolate(x, size=(3, 4), mode="bilinear", antialias=True)),
    "bicubic": (4, None, lambda F, x, w: F.interpolate(x, scale_factor=1.5, mode="bicubic", align_corners=True)),
    "trilinear": (5, None, lambda F, x, w: F.interpolate(x, scale_factor=2, mode="trilinear")),
    "area": (4, 5, lambda F, x, w: F.interpolate(x, size=x.shape[2:-1] + (4,), mode="area")),
    "reflect": (4, 5, lambda F, x, w: F.pad(x, (1, 2, 2, 1, 1, 1)[: 2 * (x.ndim - 2)], mode="reflect")),
    "replicate": (4, 5, lambda F, x, w: F.pad(x, (1, 2, 2, 1, 1, 1)[: 2 * (x.ndim - 2)], mode="replicate")),
    "circular": (4, 5, lambda F, x, w: F.pad(x, (1, 2, 2, 1, 1, 1)[: 2 * (x.ndim - 2)], mode="circular")),
    "avg_pool": (4, 5, lambda F, x, w: F.avg_pool2d(x, 2) if x.ndim == 4 else F.avg_pool3d(x, 2)),
    "max_pool": (4, 5, lambda F, x, w: F.max_pool2d(x, 2) if x.ndim == 4 else F.max_pool3d(x, 2)),
    "adaptive_avg_pool": (4, 5, lambda F, x, w: F.adaptive_avg_pool2d(x, 3) if x.ndim == 4 else F.adaptive_avg_pool3d(x, 2)),
    "adaptive_avg_pool_to_one": (4, 5, lambda F, x, w: F.adaptive_avg_pool2d(x, 1) if x.ndim == 4 else F.adaptive_avg_pool3d(x, 1)),
    "roll": (4, 5, lambda F, x, w: x.roll((1, 2), (0, 2))),
    "pixel_shuffle": (4, None, lambda F, x, w: F.pixel_shuffle(x[:, :4].expand(-1, 4, -1, -1) if x.shape[1] == 1 else x[:, :4], 2)),
    "pixel_unshuffle": (4, None, lambda F, x, w: F.pixel_unshuffle(x[:, :, :6, :8], 2)),
}  # fmt: skip


def _spatial_pair(shape, fmt, dtype=np.float32):
    """A random tensor of `shape` in both libraries, channels-last where fmt says so."""
    a = np.random.default_rng(sum(shape)).standard_normal(shape).astype(dtype)
    k, t = kael.tensor(a), torch.from_numpy(a)
    if fmt:
        k = k.contiguous(memory_format=kael.channels_last if a.ndim == 4 else kael.channels_last_3d)
        t = t.contiguous(
            memory_format=torch.channels_last if a.ndim == 4 else torch.channels_last_3d
        )
    return k, t


def _spatial_cases():
    for op, (two_d, three_d, _) in SPATIAL_OPS.items():
        for name, (shape, _, _) in SPATIAL_INPUTS.items():
            if len(shape) in (two_d, three_d):
                yield op, name


@pytest.mark.parametrize(("op", "inputs"), list(_spatial_cases()))
def test_spatial_results_are_laid_out_as_torch_lays_them(op, inputs):
    shape, x_fmt, w_fmt = SPATIAL_INPUTS[inputs]
    kx, tx = _spatial_pair(shape, x_fmt)
    kw, tw = _spatial_pair((4, shape[1], *(3,) * (len(shape) - 2)), w_fmt)
    call = SPATIAL_OPS[op][2]
    k, t = call(kael.nn.functional, kx, kw), call(torch.nn.functional, tx, tw)
    assert k.shape == tuple(t.shape) and k.dtype is kael.float32
    assert k.stride() == t.stride(), (k.stride(), t.stride())
    np.testing.assert_allclose(k.numpy(), t.numpy(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("mode", ["nearest", "bilinear", "bicubic"])
def test_uint8_resize_keeps_a_channels_last_image_channels_last(mode):
    a = np.random.default_rng(5).integers(0, 256, (2, 3, 7, 9), dtype=np.uint8)
    k = kael.tensor(a).contiguous(memory_format=kael.channels_last)
    t = torch.from_numpy(a).contiguous(memory_format=torch.channels_last)
    got = kael.nn.functional.interpolate(k, size=(5, 13), mode=mode)
    want = torch.nn.functional.interpolate(t, size=(5, 13), mode=mode)
    assert got.stride() == want.stride() and got.dtype is kael.uint8
    assert np.array_equal(got.numpy(), want.numpy())


def test_half_convolution_with_bias_writes_channels_last_once_rounded():
    kx, tx = _spatial_pair((2, 4, 6, 6), "cl", np.float16)
    kw, tw = _spatial_pair((3, 4, 3, 3), None, np.float16)
    kb, tb = _spatial_pair((3,), None, np.float16)
    got = kael.nn.functional.conv2d(kx, kw, kb)
    want = torch.nn.functional.conv2d(tx, tw, tb)
    assert got.stride() == want.stride() and got.dtype is kael.float16
    np.testing.assert_allclose(got.float().numpy(), want.float().numpy(), rtol=2e-3, atol=2e-3)


def test_unbatched_convolution_by_a_channels_last_weight_strides_as_torch():
    kx, tx = _spatial_pair((6, 7, 9), None)
    kw, tw = _spatial_pair((4, 6, 3, 3), "cl")
    got = kael.nn.functional.conv2d(kx, kw)
    want = torch.nn.functional.conv2d(tx, tw)
    assert got.stride() == want.stride()
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-5)


def test_channels_last_convolution_under_compile_keeps_its_layout():
    kx, tx = _spatial_pair((2, 4, 9, 9), "cl")
    kw, tw = _spatial_pair((5, 4, 3, 3), None)
    kb, tb = _spatial_pair((5,), None)
    F = kael.nn.functional
    step = kael.compile(lambda x, w, b: F.relu(F.conv2d(x, w, b, padding=1)))
    want = torch.relu(torch.nn.functional.conv2d(tx, tw, tb, padding=1))
    for _ in range(2):
        got = step(kx, kw, kb)
        assert got.stride() == want.stride()
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-5)
