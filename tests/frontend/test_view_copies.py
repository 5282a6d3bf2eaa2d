"""torch's *_copy functions (frontend/view_copies.py) against torch: each view made into new
contiguous tensors over every dtype and layout, their out= forms and their refusals; with
as_strided_scatter, empty_permuted and Tensor.narrow_copy."""

import warnings

import numpy as np
import pytest
import torch
from kernel_helpers import TORCH_DTYPES

import kael

RNG = np.random.default_rng(36)
DTYPES = [kael.float32, kael.float64, kael.int64, kael.bool, kael.float16]

# every layout is 3 x 4 but "empty" (0 x 4): base shape, and the view of it both sides take
LAYOUTS = {
    "contiguous": ((3, 4), lambda x: x),
    "transposed": ((4, 3), lambda x: x.t()),
    "sliced": ((5, 8), lambda x: x[1:4, ::2]),
    "expanded": ((1, 4), lambda x: x.expand(3, 4)),
    "empty": ((2, 4), lambda x: x[:0]),
}

# (name, args) valid on every 2-d layout above
CASES_2D = [
    ("alias_copy", ()),
    ("detach_copy", ()),
    ("as_strided_copy", ((2, 2), (1, 2))),
    ("as_strided_copy", ((2,), (2,), 1)),
    ("diagonal_copy", ()),
    ("diagonal_copy", (1, 1, 0)),
    ("expand_copy", ((2, -1, -1),)),
    ("narrow_copy", (1, 1, 2)),
    ("narrow_copy", (1, -1, 0)),
    ("permute_copy", ((1, 0),)),
    ("select_copy", (1, -1)),
    ("slice_copy", ()),
    ("slice_copy", (1, -3, 100, 2)),
    ("split_copy", (3, 1)),
    ("split_with_sizes_copy", ([1, 0, 3], 1)),
    ("squeeze_copy", ()),
    ("squeeze_copy", ((0, 1),)),
    ("t_copy", ()),
    ("transpose_copy", (0, -1)),
    ("unbind_copy", (1,)),
    ("unfold_copy", (1, 2, 1)),
    ("unsqueeze_copy", (-1,)),
    ("view_copy", ((-1, 2),)),
]

CASES_0D = [
    ("alias_copy", ()),
    ("detach_copy", ()),
    ("as_strided_copy", ((2,), (0,))),
    ("expand_copy", ((2, 3),)),
    ("permute_copy", ((),)),
    ("squeeze_copy", ()),
    ("t_copy", ()),
    ("unfold_copy", (0, 1, 1)),
    ("unsqueeze_copy", (0,)),
    ("view_copy", ((1, 1),)),
]

LISTS = {"split_copy", "split_with_sizes_copy", "unbind_copy"}


def _case_id(case) -> str:
    return f"{case[0]}{case[1]}"


def _pair(layout: str, dtype=kael.float32):
    """The kael tensor and the equal torch tensor in `layout`, over their own storages."""
    shape, view = LAYOUTS[layout]
    t = torch.tensor(RNG.integers(-3, 4, shape)).to(TORCH_DTYPES[dtype])
    return view(kael.from_dlpack(t.clone())), view(t)


def _scalar_pair(dtype=kael.float32):
    t = torch.tensor(RNG.integers(-3, 4, (2, 3))).to(TORCH_DTYPES[dtype])
    return kael.from_dlpack(t.clone())[1, 2], t[1, 2]


def _same_copies(like_torch, got, want, source: kael.Tensor) -> None:
    """Results like torch's (shape, dtype, strides, values), none sharing source's memory."""
    if isinstance(want, torch.Tensor):
        got, want = (got,), (want,)
    else:
        assert type(got) is tuple and len(got) == len(want)
    for k, t in zip(got, want, strict=True):
        like_torch(k, t)
        assert not k.shares_storage(source)


# ---- each view made into new contiguous tensors ------------------------------------------------


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("case", CASES_2D, ids=_case_id)
def test_copy_is_the_view_made_contiguous_over_layouts(case, layout, like_torch):
    name, args = case
    k, t = _pair(layout)
    _same_copies(like_torch, getattr(kael, name)(k, *args), getattr(torch, name)(t, *args), k)


@pytest.mark.parametrize("dtype", DTYPES[1:], ids=str)
@pytest.mark.parametrize("case", CASES_2D, ids=_case_id)
def test_copy_keeps_every_dtype(case, dtype, like_torch):
    name, args = case
    k, t = _pair("transposed", dtype)
    _same_copies(like_torch, getattr(kael, name)(k, *args), getattr(torch, name)(t, *args), k)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("case", CASES_0D, ids=_case_id)
def test_copy_of_a_0d_tensor(case, dtype, like_torch):
    name, args = case
    k, t = _scalar_pair(dtype)
    _same_copies(like_torch, getattr(kael, name)(k, *args), getattr(torch, name)(t, *args), k)


def test_copies_take_torch_keyword_names(like_torch):
    k, t = _pair("sliced")
    calls = [
        ("diagonal_copy", {"offset": -1, "dim1": 1, "dim2": 0}),
        ("narrow_copy", {"dim": 0, "start": 1, "length": 2}),
        ("select_copy", {"dim": 0, "index": 2}),
        ("slice_copy", {"dim": 1, "start": 1, "end": None, "step": 2}),
        ("split_with_sizes_copy", {"split_sizes": [2, 1], "dim": 0}),
        ("transpose_copy", {"dim0": 1, "dim1": 0}),
        ("unbind_copy", {"dim": 0}),
        ("unfold_copy", {"dimension": 0, "size": 2, "step": 1}),
        ("unsqueeze_copy", {"dim": 1}),
        ("permute_copy", {"dims": (1, 0)}),
        ("expand_copy", {"size": (2, 3, 4), "implicit": True}),
        ("as_strided_copy", {"size": (2,), "stride": (2,), "storage_offset": 3}),
        ("view_copy", {"size": (12,)}),
        ("view_copy", {"dtype": kael.int32}),
    ]
    for name, kwargs in calls:
        want_kwargs = {
            n: TORCH_DTYPES[v] if isinstance(v, type(kael.int32)) else v for n, v in kwargs.items()
        }
        _same_copies(
            like_torch, getattr(kael, name)(k, **kwargs), getattr(torch, name)(t, **want_kwargs), k
        )


def test_split_copy_takes_a_zero_size_only_on_an_empty_dim(like_torch):
    k, t = _pair("empty")
    _same_copies(like_torch, kael.split_copy(k, 0), torch.split_copy(t, 0), k)
    k, t = _pair("contiguous")
    with pytest.raises(kael.ValueError, match="split_size"):
        kael.split_copy(k, 0, 1)
    with pytest.raises(RuntimeError):
        torch.split_copy(t, 0, 1)


@pytest.mark.parametrize(
    ("source", "target"),
    [(kael.float32, kael.int32), (kael.float64, kael.int64), (kael.float32, kael.float16),
     (kael.float16, kael.float32), (kael.int64, kael.bool)],
    ids=str,
)  # fmt: skip
def test_view_copy_by_dtype_reads_the_bytes_as_torch(source, target, like_torch):
    shape = (3, 4)
    t = torch.tensor(RNG.integers(0, 2, shape)).to(TORCH_DTYPES[source])
    k = kael.from_dlpack(t.clone())
    want = torch.view_copy(t, TORCH_DTYPES[target])
    _same_copies(like_torch, kael.view_copy(k, target), want, k)


def test_view_copy_of_a_layout_view_cannot_take_reshapes(like_torch):
    k, t = _pair("transposed")
    _same_copies(like_torch, kael.view_copy(k, (12,)), torch.view_copy(t, (12,)), k)
    with pytest.raises(kael.Error):
        k.view(12)


def test_tensor_narrow_copy_method(like_torch):
    k, t = _pair("transposed", kael.int64)
    _same_copies(like_torch, k.narrow_copy(0, 1, 2), t.narrow_copy(0, 1, 2), k)
    _same_copies(like_torch, k.narrow_copy(-1, 0, 0), t.narrow_copy(-1, 0, 0), k)


# ---- out= -------------------------------------------------------------------------------------


def _outs_like(results, make):
    """One out tensor per result, each `make(shape, dtype)` (a list for the list ones)."""
    if isinstance(results, torch.Tensor):
        return make(tuple(results.shape), results.dtype)
    return [make(tuple(r.shape), r.dtype) for r in results]


@pytest.mark.parametrize("case", CASES_2D, ids=_case_id)
def test_out_of_the_right_shape_is_written(case, like_torch):
    name, args = case
    k, t = _pair("sliced", kael.float64)
    want = getattr(torch, name)(t, *args)
    out = _outs_like(want, lambda s, d: kael.full(s, 7.0, dtype=kael.float64))
    got = getattr(kael, name)(k, *args, out=out)
    if name in LISTS:
        assert got is None
        _same_copies(like_torch, tuple(out), want, k)
    else:
        assert got is out
        _same_copies(like_torch, got, want, k)


def test_out_keeps_its_strides_when_its_shape_is_right(like_torch):
    k, t = _pair("contiguous")
    kout, tout = kael.zeros(3, 4).t(), torch.zeros(3, 4).t()
    got, want = kael.t_copy(k, out=kout), torch.t_copy(t, out=tout)
    assert got is kout
    like_torch(got, want)


# out= shapes each *_copy is given: name -> the shape made of the piece's own
OUT_SHAPES = {
    "empty": lambda shape: (0,),
    "full": lambda shape: (5,),
    "right": lambda shape: shape,
    "broadcastable": lambda shape: (2, *shape),
}
SINGLES = [case for case in CASES_2D if case[0] not in LISTS]
# the list ones torch resizes each out of (split_copy only copy_s into them)
RESIZED_LISTS = [("unbind_copy", (1,)), ("split_with_sizes_copy", ([1, 0, 3], 1))]


def _warned(call):
    """call()'s result and the messages of the resize warnings it gave."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = call()
    return result, [str(w.message) for w in caught if "was resized" in str(w.message)]


def _resizes_warned(outs, pieces, name: str) -> int:
    """How many warnings torch's rule gives: one per out holding elements whose shape is not
    its piece's, but none from narrow_copy."""
    if name == "narrow_copy":
        return 0
    return sum(o.numel() > 0 and o.shape != p.shape for o, p in zip(outs, pieces, strict=True))


@pytest.mark.parametrize("given", OUT_SHAPES)
@pytest.mark.parametrize("case", SINGLES, ids=_case_id)
def test_out_of_another_shape_is_resized_warning_as_torch(case, given, like_torch):
    name, args = case
    k, t = _pair("transposed")
    shape = OUT_SHAPES[given](tuple(getattr(torch, name)(t, *args).shape))
    kout, tout = kael.full(shape, 7.0), torch.full(shape, 7.0)
    warned = _resizes_warned([tout], [getattr(torch, name)(t, *args)], name)
    got, kael_warned = _warned(lambda: getattr(kael, name)(k, *args, out=kout))
    want, torch_warned = _warned(lambda: getattr(torch, name)(t, *args, out=tout))
    assert got is kout
    like_torch(got, want)
    assert len(kael_warned) == len(torch_warned) == warned


def test_narrow_copy_resizes_a_full_out_without_warning(like_torch):
    k, t = _pair("contiguous", kael.int64)
    kout, tout = kael.zeros(5, dtype=kael.int64), torch.zeros(5, dtype=torch.int64)
    got, kael_warned = _warned(lambda: kael.narrow_copy(k, 0, 1, 2, out=kout))
    want, torch_warned = _warned(lambda: torch.narrow_copy(t, 0, 1, 2, out=tout))
    like_torch(got, want)
    assert kael_warned == torch_warned == []


def test_resize_warning_names_both_shapes_at_the_callers_line():
    k = kael.zeros(3, 4)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        kael.t_copy(k, out=kael.zeros(5))
        kael.unbind_copy(k, out=[kael.zeros(5), kael.zeros(4), kael.zeros(4)])
    assert [w.filename for w in caught] == [__file__, __file__]
    assert "had shape [5], which does not match the required output shape [4, 3]" in str(
        caught[0].message
    )
    assert "had shape [5], which does not match the required output shape [4]" in str(
        caught[1].message
    )


@pytest.mark.parametrize("case", SINGLES, ids=_case_id)
def test_out_of_another_dtype_and_shape_is_refused_after_resizing_as_torch(case, like_torch):
    name, args = case
    k, t = _pair("transposed")
    kout, tout = kael.zeros(5, dtype=kael.float64), torch.zeros(5, dtype=torch.float64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(kael.TypeError, match="dtype float32, but got float64 instead"):
            getattr(kael, name)(k, *args, out=kout)
        with pytest.raises(RuntimeError, match="dtype"):
            getattr(torch, name)(t, *args, out=tout)
    assert kout.shape == tuple(tout.shape)  # narrow_copy checks before resizing, the rest after


@pytest.mark.parametrize("dtype", [kael.float64, kael.int64, kael.bool], ids=str)
@pytest.mark.parametrize("given", OUT_SHAPES)
@pytest.mark.parametrize("case", RESIZED_LISTS, ids=_case_id)
def test_list_out_is_resized_piece_by_piece_as_torch(case, given, dtype, like_torch):
    name, args = case
    k, t = _pair("sliced", dtype)
    shapes = [OUT_SHAPES[given](tuple(p.shape)) for p in getattr(torch, name)(t, *args)]
    kout = [kael.ones(s, dtype=dtype) for s in shapes]
    tout = [torch.ones(s, dtype=TORCH_DTYPES[dtype]) for s in shapes]
    warned = _resizes_warned(tout, getattr(torch, name)(t, *args), name)
    got, kael_warned = _warned(lambda: getattr(kael, name)(k, *args, out=kout))
    want, torch_warned = _warned(lambda: getattr(torch, name)(t, *args, out=tout))
    assert got is None and want is None
    _same_copies(like_torch, tuple(kout), tuple(tout), k)
    assert len(kael_warned) == len(torch_warned) == warned


@pytest.mark.parametrize("bad_at", [0, 1, -1], ids=["first", "second", "last"])
@pytest.mark.parametrize("case", RESIZED_LISTS, ids=_case_id)
def test_list_out_of_another_dtype_is_refused_after_the_pieces_before_it(case, bad_at, like_torch):
    name, args = case
    k, t = _pair("sliced")
    dtypes = [kael.float32] * len(getattr(torch, name)(t, *args))
    dtypes[bad_at] = kael.float64
    kout = [kael.zeros(9, dtype=d) for d in dtypes]  # no piece has more: no bytes left unset
    tout = [torch.zeros(9, dtype=TORCH_DTYPES[d]) for d in dtypes]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(kael.TypeError, match="dtype float32, but got float64 instead"):
            getattr(kael, name)(k, *args, out=kout)
        with pytest.raises(RuntimeError, match="dtype float, but got double instead"):
            getattr(torch, name)(t, *args, out=tout)
    for got, want in zip(kout, tout, strict=True):
        like_torch(got, want)


# (name, args, out= as views of the input): each out one of the input's other pieces
ALIASED_OUTS = [
    ("unbind_copy", (0,), lambda x: [x[1], x[0]]),
    ("split_with_sizes_copy", ([2, 2], 1), lambda x: [x[:, 2:], x[:, :2]]),
]


@pytest.mark.parametrize("case", ALIASED_OUTS, ids=lambda c: c[0])
def test_list_out_may_alias_the_input_written_in_turn_as_torch(case, like_torch):
    name, args, outs = case
    k, t = _pair("contiguous")
    k, t = k[:2], t[:2]
    assert getattr(kael, name)(k, *args, out=outs(k)) is None
    getattr(torch, name)(t, *args, out=outs(t))
    like_torch(k, t)


# (name, args, input shape, out= made of the input): torch writes each, resizing it first
OUT_OF_THE_INPUT = [
    ("t_copy", (), (3, 3), lambda x: x),
    ("transpose_copy", (0, 1), (3, 3), lambda x: x),
    ("permute_copy", ((1, 0),), (4, 4), lambda x: x),
    ("diagonal_copy", (), (3, 3), lambda x: x[0]),
    ("expand_copy", ((3, 4),), (4,), lambda x: x),
    ("narrow_copy", (0, 1, 2), (4,), lambda x: x),
]


@pytest.mark.parametrize("case", OUT_OF_THE_INPUT, ids=lambda c: c[0])
def test_out_may_be_the_input_itself(case, like_torch):
    name, args, shape, out_of = case
    size = int(np.prod(shape))  # kael's own storage: one from DLPack cannot grow
    k, t = kael.arange(size).float().reshape(shape), torch.arange(size).float().reshape(shape)
    kout, tout = out_of(k), out_of(t)
    got, kael_warned = _warned(lambda: getattr(kael, name)(k, *args, out=kout))
    want, torch_warned = _warned(lambda: getattr(torch, name)(t, *args, out=tout))
    assert got is kout
    like_torch(got, want)
    like_torch(k, t)
    assert len(kael_warned) == len(torch_warned)


@pytest.mark.parametrize("wrong", [kael.float64, kael.int64, kael.float16], ids=str)
@pytest.mark.parametrize(
    ("name", "args"), [("permute_copy", ((1, 0),)), ("narrow_copy", (1, 0, 3))], ids=str
)
def test_out_of_another_dtype_is_refused_naming_both(name, args, wrong):
    k, t = _pair("contiguous")
    with pytest.raises(kael.TypeError, match=f"dtype float32, but got {wrong} instead"):
        getattr(kael, name)(k, *args, out=kael.empty(4, 3, dtype=wrong))
    with pytest.raises(RuntimeError, match="dtype"):
        getattr(torch, name)(t, *args, out=torch.empty(4, 3, dtype=TORCH_DTYPES[wrong]))


def test_out_that_overlaps_itself_is_refused():
    k, t = _pair("contiguous")
    with pytest.raises(kael.Error, match="more than one element"):
        kael.t_copy(k, out=kael.zeros(1).expand(4, 3))
    with pytest.raises(RuntimeError, match="more than one element"):
        torch.t_copy(t, out=torch.zeros(1).expand(4, 3))


def test_out_must_be_a_tensor_or_a_list_of_them():
    k, t = _pair("contiguous")
    with pytest.raises(kael.TypeError, match="argument 'out' must be Tensor, not list"):
        kael.t_copy(k, out=[kael.empty(0)])
    with pytest.raises(kael.TypeError, match="argument 'out' must be tuple of Tensors, not Tensor"):
        kael.unbind_copy(k, out=kael.empty(0))
    with pytest.raises(TypeError):
        torch.t_copy(t, out=[torch.empty(0)])
    with pytest.raises(TypeError):
        torch.unbind_copy(t, out=torch.empty(0))


@pytest.mark.parametrize(
    ("name", "args"),
    [("split_copy", (1,)), ("split_with_sizes_copy", ([1, 1],)), ("unbind_copy", (0,))],
    ids=str,
)
def test_list_out_holding_a_non_tensor_is_refused_before_any_write(name, args, like_torch):
    k, t = _pair("contiguous")
    kout, tout = [kael.zeros(1, 4), 3.0], [torch.zeros(1, 4), 3.0]
    with pytest.raises(kael.TypeError, match="argument 'out' must be Tensor, not float"):
        getattr(kael, name)(k[:2], *args, out=kout)
    with pytest.raises(TypeError, match="but got float"):
        getattr(torch, name)(t[:2], *args, out=tout)
    like_torch(kout[0], tout[0])


@pytest.mark.parametrize("count", [2, 4])
def test_list_out_of_another_length_is_refused_naming_both(count):
    k, t = _pair("contiguous")
    with pytest.raises(kael.ValueError, match=f"out= argument of size 3, got size {count}"):
        kael.unbind_copy(k, out=[kael.empty(4) for _ in range(count)])
    with pytest.raises(RuntimeError, match=f"size 3, got size {count}"):
        torch.unbind_copy(t, out=[torch.empty(4) for _ in range(count)])


def test_split_copy_out_converts_and_broadcasts_as_copy_does(like_torch):
    k, t = _pair("sliced")
    kout = [kael.zeros(2, 3, 2, dtype=kael.int64), kael.zeros(3, 2, dtype=kael.float64)]
    tout = [torch.zeros(2, 3, 2, dtype=torch.int64), torch.zeros(3, 2, dtype=torch.float64)]
    assert kael.split_copy(k, 2, 1, out=kout) is None
    torch.split_copy(t, 2, 1, out=tout)
    _same_copies(like_torch, tuple(kout), tuple(tout), k)


@pytest.mark.parametrize("elements", [0, 5], ids=["empty", "full"])
def test_split_copy_out_not_broadcastable_is_refused_not_resized(elements):
    k, t = _pair("sliced")
    kout = [kael.zeros(elements, 2), kael.zeros(3, 2)]
    tout = [torch.zeros(elements, 2), torch.zeros(3, 2)]
    with pytest.raises(kael.ValueError, match=f"size of the tensor \\({elements}\\) must match"):
        kael.split_copy(k, 2, 1, out=kout)
    with pytest.raises(RuntimeError, match=f"size of tensor a \\({elements}\\) must match"):
        torch.split_copy(t, 2, 1, out=tout)
    assert kout[0].shape == tuple(tout[0].shape) == (elements, 2)


# ---- refusals -----------------------------------------------------------------------------------

# (name, args, kael's error, what its message says): torch refuses each too
BAD_2D = [
    ("narrow_copy", (1, 1, 4), kael.ValueError, r"start \(1\) \+ length \(4\) exceeds dimension size \(4\)"),
    ("narrow_copy", (1, 1, -1), kael.ValueError, "length must be non-negative, got -1"),
    ("narrow_copy", (1, 5, 0), kael.IndexError, r"range of \[-4, 4\], but got 5"),
    ("narrow_copy", (2, 0, 1), kael.IndexError, r"range of \[-2, 1\], but got 2"),
    ("select_copy", (1, 4), kael.IndexError, r"index 4 out of range for tensor of size \[3, 4\]"),
    ("select_copy", (-3, 0), kael.IndexError, r"range of \[-2, 1\], but got -3"),
    ("split_copy", (-1, 1), kael.ValueError, "non-negative, but got split_size=-1"),
    ("split_copy", ([1, 2], 1), kael.TypeError, "'split_size' must be int, not list"),
    ("split_with_sizes_copy", ([1, 1], 1), kael.ValueError, r"sum exactly to 4 .* split_sizes=\[1, 1\]"),
    ("split_with_sizes_copy", ([5, -1], 1), kael.ValueError, r"non-negative entries, but got split_sizes=\[5, -1\]"),
    ("unfold_copy", (1, 5, 1), kael.ValueError, "dimension 1 is 4 but size is 5"),
    ("unfold_copy", (1, 2, 0), kael.ValueError, "step is 0 but must be > 0"),
    ("unfold_copy", (1, -1, 1), kael.ValueError, "size is -1 but must be >= 0"),
    ("as_strided_copy", ((2, 2), (1, 2), 100), kael.Error, r"shape \[2, 2\], strides \[1, 2\], offset 100"),
    ("as_strided_copy", ((2, -2), (1, 2)), kael.ValueError, r"negative dimension -2 in shape \[2, -2\]"),
    ("as_strided_copy", ((2, 2), (1, -2)), kael.ValueError, r"negative stride -2 .* \[1, -2\]"),
    ("view_copy", ((5,),), kael.ValueError, r"shape '\[5\]' is invalid for input of size 12"),
    ("view_copy", ((-1, -1),), kael.ValueError, "only one dimension can be inferred"),
    ("view_copy", ((-2, 6),), kael.ValueError, r"invalid shape dimension -2"),
    ("expand_copy", ((2, 4),), kael.ValueError, r"tensor \(2\) must match the existing size \(3\)"),
    ("expand_copy", ((4,),), kael.ValueError, r"number of sizes provided \(1\) .* dimensions in the tensor \(2\)"),
    ("expand_copy", ((2, -2, 4),), kael.ValueError, r"invalid size -2 in \[2, -2, 4\]"),
    ("permute_copy", ((0,),), kael.ValueError, r"dims \[0\] has 1 entries but the tensor has 2"),
    ("permute_copy", ((1, 1),), kael.ValueError, r"dims \[1, 1\] is not a permutation"),
    ("diagonal_copy", (0, 1, -1), kael.ValueError, "diagonal dimensions cannot be identical 1, -1"),
    ("transpose_copy", (0, 2), kael.IndexError, r"range of \[-2, 1\], but got 2"),
    ("squeeze_copy", ((0, 0),), kael.ValueError, r"dim \[0, 0\] repeats a dimension"),
    ("unsqueeze_copy", (-4,), kael.IndexError, r"range of \[-3, 2\], but got -4"),
    ("slice_copy", (1, 0, 3, 0), kael.ValueError, "slice step must be positive, got 0"),
    ("slice_copy", (1, 0, 3, -1), kael.ValueError, "slice step must be positive, got -1"),
    ("unbind_copy", (2,), kael.IndexError, r"range of \[-2, 1\], but got 2"),
    ("view_copy", (), kael.TypeError, "expected a size or a dtype"),
]  # fmt: skip

BAD_0D = [
    ("narrow_copy", (0, 0, 1), kael.ValueError, "narrow\\(\\) cannot be applied to a 0-dim tensor"),
    ("select_copy", (0, 0), kael.IndexError, "select\\(\\) cannot be applied to a 0-dim tensor"),
    ("slice_copy", (), kael.IndexError, "slice\\(\\) cannot be applied to a 0-dim tensor"),
    ("unbind_copy", (), kael.IndexError, "Dimension specified as 0 but tensor has no dimensions"),
    ("split_copy", (1,), kael.ValueError, "split expects at least a 1-dimensional tensor"),
    ("diagonal_copy", (), kael.IndexError, r"range of \[-1, 0\], but got 1"),
    ("unfold_copy", (0, 2, 1), kael.ValueError, "dimension 0 is 1 but size is 2"),
]  # fmt: skip

_ERRORS = (RuntimeError, TypeError, IndexError, ValueError)


@pytest.mark.parametrize("bad", BAD_2D, ids=lambda b: f"{b[0]}{b[1]}")
def test_bad_arguments_are_refused_naming_them(bad):
    name, args, error, message = bad
    k, t = _pair("contiguous")
    with pytest.raises(error, match=message):
        getattr(kael, name)(k, *args)
    with pytest.raises(_ERRORS):
        getattr(torch, name)(t, *args)


@pytest.mark.parametrize("bad", BAD_0D, ids=lambda b: f"{b[0]}{b[1]}")
def test_views_a_0d_tensor_lacks_are_refused(bad):
    name, args, error, message = bad
    k, t = _scalar_pair()
    with pytest.raises(error, match=message):
        getattr(kael, name)(k, *args)
    with pytest.raises(_ERRORS):
        getattr(torch, name)(t, *args)


def test_t_copy_refuses_more_than_two_dims():
    with pytest.raises(kael.ValueError, match="<= 2 dimensions, but self is 3D"):
        kael.t_copy(kael.zeros(2, 2, 2))
    with pytest.raises(RuntimeError, match="but self is 3D"):
        torch.t_copy(torch.zeros(2, 2, 2))


@pytest.mark.parametrize("name", sorted({case[0] for case in CASES_2D}))
def test_input_must_be_a_tensor(name):
    with pytest.raises(
        kael.TypeError, match=f"{name}\\(\\): argument 'input' must be Tensor, not list"
    ):
        getattr(kael, name)([1.0, 2.0])
    with pytest.raises(TypeError):
        getattr(torch, name)([1.0, 2.0])


# ---- as_strided_scatter ------------------------------------------------------------------------

SCATTERS = [
    ((2, 2), (1, 2), None),
    ((3,), (3,), 1),
    ((2, 3), (3, 1), 0),
    ((0, 2), (1, 1), None),
]


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("window", SCATTERS, ids=str)
def test_as_strided_scatter_writes_src_over_the_window(window, layout, like_torch):
    size, stride, offset = window
    k, t = _pair(layout, kael.float64)
    src = torch.tensor(RNG.integers(10, 20, size)).to(torch.float64)
    got = kael.as_strided_scatter(k, kael.from_dlpack(src.clone()), size, stride, offset)
    want = torch.as_strided_scatter(t, src, size, stride, offset)
    like_torch(got, want)
    assert not got.shares_storage(k)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_as_strided_scatter_converts_src_to_input_dtype(dtype, like_torch):
    k, t = _pair("contiguous", dtype)
    src = torch.tensor([[1.0, 0.0], [2.0, 3.0]])
    got = kael.as_strided_scatter(k, kael.from_dlpack(src.clone()), (2, 2), (4, 1), 1)
    want = torch.as_strided_scatter(t, src, (2, 2), (4, 1), 1)
    like_torch(got, want)


def test_as_strided_scatter_refuses_a_src_of_another_shape():
    k, t = _pair("contiguous")
    message = r"src size = \[3\], slice size = \[2, 2\]"
    with pytest.raises(kael.ValueError, match=message):
        kael.as_strided_scatter(k, kael.zeros(3), (2, 2), (1, 2))
    with pytest.raises(RuntimeError, match=message):
        torch.as_strided_scatter(t, torch.zeros(3), (2, 2), (1, 2))


def test_as_strided_scatter_refuses_a_window_beyond_the_storage():
    k, t = _pair("contiguous")
    with pytest.raises(kael.Error, match="offset 11"):
        kael.as_strided_scatter(k, kael.zeros(2), (2,), (1,), 11)
    with pytest.raises(RuntimeError, match="out of bounds"):
        torch.as_strided_scatter(t, torch.zeros(2), (2,), (1,), 11)


# ---- empty_permuted --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("size", "physical_layout"),
    [((2, 3, 4), (0, 2, 1)), ((2, 3, 4), (2, 1, 0)), ((2, 0, 3), (2, 1, 0)), ((), ()), ((5,), (0,)),
     ((2, 1, 3, 4), (0, 2, 3, 1))],
    ids=str,
)  # fmt: skip
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_empty_permuted_lays_dims_out_in_the_physical_order(size, physical_layout, dtype):
    got = kael.empty_permuted(size, physical_layout, dtype=dtype)
    want = torch.empty_permuted(size, physical_layout, dtype=TORCH_DTYPES[dtype])
    assert got.shape == tuple(want.shape)
    assert got.dtype is dtype
    assert got.strides() == want.stride()
    assert got.is_contiguous() == want.is_contiguous()


def test_empty_permuted_takes_the_default_dtype():
    got = kael.empty_permuted([2, 3], [1, 0])
    assert (
        got.dtype is kael.float32 and got.strides() == torch.empty_permuted([2, 3], [1, 0]).stride()
    )


@pytest.mark.parametrize(
    ("size", "physical_layout", "error", "message"),
    [
        ((2, 3, 4), (0, 2), kael.ValueError, r"len\(size\) = 3 is not equal to len\(physical_layout\) = 2"),
        ((2, 3, 4), (0, 2, 2), kael.ValueError, r"Duplicate dim not allowed: physical_layout \[0, 2, 2\]"),
        ((2, 3, 4), (0, 2, 3), kael.IndexError, "between 0 and 2, but got 3 at index 2"),
        ((2, 3, 4), (0, 2, -1), kael.IndexError, "between 0 and 2, but got -1 at index 2"),
        ((2, -3, 4), (0, 2, 1), kael.ValueError, "negative dimension -3"),
    ],
)  # fmt: skip
def test_empty_permuted_refuses_a_bad_layout_naming_it(size, physical_layout, error, message):
    with pytest.raises(error, match=message):
        kael.empty_permuted(size, physical_layout)
    with pytest.raises(RuntimeError):
        torch.empty_permuted(size, physical_layout)


def test_empty_permuted_refuses_requires_grad():
    with pytest.raises(kael.Error, match="requires_grad=True"):
        kael.empty_permuted((2,), (0,), requires_grad=True)


def test_copies_run_under_compile(like_torch):
    k, t = _pair("transposed")

    def both(lib, x):
        return lib.t_copy(x) * 2 + lib.narrow_copy(x.t(), 1, 1, 2).sum()

    compiled = kael.compile(lambda x: both(kael, x))
    like_torch(compiled(k), both(torch, t))
    like_torch(compiled(k), both(torch, t))
