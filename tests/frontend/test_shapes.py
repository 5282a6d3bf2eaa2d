"""Shape functions (frontend/shapes.py) against PyTorch: values, dtype and shape over
contiguous, transposed, sliced, expanded, 0-d and empty inputs, which results are views,
and typed errors for bad arguments."""

import numpy as np
import pytest
import torch
from kernel_helpers import KAEL_DTYPES
from parity_helpers import LAYOUTS as PAIR_LAYOUTS
from parity_helpers import layout_pair, same

import kael

RNG = np.random.default_rng(31)
VALUES = RNG.standard_normal((4, 6)).astype(np.float32)


def _layouts():
    """(name, kael tensor, torch tensor) of one [4, 6]-ish value in several layouts."""
    k, t = kael.tensor(VALUES), torch.tensor(VALUES)
    yield "contiguous", k, t
    yield "transposed", k.transpose(0, 1), t.transpose(0, 1)
    yield "sliced", k[:, ::2], t[:, ::2]
    yield "expanded", k[:1].expand(3, 6), t[:1].expand(3, 6)
    yield "empty", k[:0], t[:0]


LAYOUTS = list(_layouts())
IDS = [name for name, _, _ in LAYOUTS]

CALLS = {
    "split_int": lambda lib, x: lib.split(x, 2, 1),
    "split_sizes": lambda lib, x: lib.split(x, [1, x.shape[1] - 1], 1),
    "chunk": lambda lib, x: lib.chunk(x, 4, 1),
    "chunk_dim0": lambda lib, x: x.chunk(3),
    "tensor_split_sections": lambda lib, x: lib.tensor_split(x, 4, 1),
    "tensor_split_indices": lambda lib, x: lib.tensor_split(x, [1, -2, 10], 1),
    "unbind": lambda lib, x: lib.unbind(x, 1),
    "repeat": lambda lib, x: x.repeat(2, 1, 3),
    "tile": lambda lib, x: lib.tile(x, (2,)),
    "repeat_interleave": lambda lib, x: lib.repeat_interleave(x, 2, 1),
    "repeat_interleave_flat": lambda lib, x: lib.repeat_interleave(x, 3),
    "movedim": lambda lib, x: lib.movedim(x.unsqueeze(0), (0, 1), (2, 0)),
    "swapaxes": lambda lib, x: lib.swapaxes(x, 0, 1),
    "t": lambda lib, x: lib.t(x),
    "diagonal": lambda lib, x: lib.diagonal(x, 1),
    "diagonal_negative": lambda lib, x: lib.diagonal(x, -1, 1, 0),
    "diag": lambda lib, x: lib.diag(x, -1),
    "diag_of_row": lambda lib, x: lib.diag(x[0] if x.shape[0] else x[:, 0], 1),
    "diag_embed": lambda lib, x: lib.diag_embed(x, 1, 0, 2),
    "broadcast_to": lambda lib, x: lib.broadcast_to(x, (2, *x.shape)),
    "atleast_3d": lambda lib, x: lib.atleast_3d(x),
    "flatten": lambda lib, x: lib.flatten(x),
    "ravel": lambda lib, x: lib.ravel(x),
    "reshape": lambda lib, x: lib.reshape(x, (-1,)),
    "permute": lambda lib, x: lib.permute(x, (1, 0)),
    "transpose": lambda lib, x: lib.transpose(x, 0, -1),
    "squeeze_unsqueeze": lambda lib, x: lib.squeeze(lib.unsqueeze(x, 1), 1),
    "narrow": lambda lib, x: lib.narrow(x, 1, 1, 2),
    "select": lambda lib, x: lib.select(x, 1, -1),
    "view_as": lambda lib, x: x.contiguous().view_as(x.reshape(-1)),
    "reshape_as": lambda lib, x: x.reshape_as(x.T),
}


@pytest.mark.parametrize("layout", LAYOUTS, ids=IDS)
@pytest.mark.parametrize("name", CALLS)
def test_shape_function_matches_torch(name, layout):
    _, k, t = layout
    try:
        expected = CALLS[name](torch, t)
    except (RuntimeError, IndexError, ValueError) as e:
        with pytest.raises((kael.Error, kael.IndexError, kael.ValueError)):
            CALLS[name](kael, k)
        assert e
        return
    same(CALLS[name](kael, k), expected)


@pytest.mark.parametrize(
    "name",
    ["split_int", "chunk", "tensor_split_indices", "unbind", "movedim", "t", "diagonal",
     "broadcast_to", "atleast_3d", "narrow", "select", "permute"],
)  # fmt: skip
def test_views_share_the_input_storage(name):
    k = kael.tensor(VALUES)
    out = CALLS[name](kael, k)
    for piece in out if isinstance(out, tuple) else (out,):
        assert piece.shares_storage(k)


@pytest.mark.parametrize(
    "name", ["t", "atleast_1d", "atleast_2d", "atleast_3d", "ravel", "flatten"]
)
def test_zero_d_inputs_match_torch(name):
    k, t = kael.tensor(2.5), torch.tensor(2.5)
    same(getattr(kael, name)(k), getattr(torch, name)(t))


@pytest.mark.parametrize(
    "name, call",
    [
        ("split", lambda lib, x: lib.split(x, 1)),
        ("chunk", lambda lib, x: lib.chunk(x, 1)),
        ("tensor_split", lambda lib, x: lib.tensor_split(x, 1)),
        ("unbind", lambda lib, x: lib.unbind(x)),
        ("unbind", lambda lib, x: lib.unbind(x, -1)),
    ],
)
def test_splitting_a_zero_d_tensor_raises_torchs_typed_error(name, call):
    with pytest.raises((RuntimeError, IndexError)) as expected:
        call(torch, torch.tensor(1.0))
    error = kael.IndexError if expected.type is IndexError else kael.ValueError
    with pytest.raises(error) as got:
        call(kael, kael.tensor(1.0))
    assert str(got.value) == str(expected.value)


@pytest.mark.parametrize("indices", [[3, 1], [5, 2, 4], [-1, 2], [6, 0, 0]], ids=str)
def test_tensor_split_at_indices_that_go_down_slices_as_torch(indices):
    k, t = kael.arange(28).reshape(4, 7), torch.arange(28).reshape(4, 7)
    same(kael.tensor_split(k, indices, 1), torch.tensor_split(t, indices, 1))
    same(kael.tensor_split(k[0], indices), torch.tensor_split(t[0], indices))


@pytest.mark.parametrize("shape", [(3,), (0,), (2, 3)])
def test_atleast_3d_places_the_new_dims_as_torch_does(shape):
    k, t = kael.zeros(shape), torch.zeros(shape)
    same(kael.atleast_3d(k), torch.atleast_3d(t))  # [n] -> [1, n, 1], [m, n] -> [m, n, 1]


def test_repeat_interleave_with_tensor_counts_matches_torch():
    k, t = kael.tensor(VALUES), torch.tensor(VALUES)
    counts = [2, 0, 1, 3]
    same(
        kael.repeat_interleave(k, kael.tensor(counts), dim=0),
        torch.repeat_interleave(t, torch.tensor(counts), dim=0),
    )
    same(kael.repeat_interleave(kael.tensor(counts)), torch.repeat_interleave(torch.tensor(counts)))
    same(k.repeat_interleave(kael.tensor(3)), t.repeat_interleave(torch.tensor(3)))


def test_repeat_interleave_takes_int32_counts_and_keeps_their_dtype_alone():
    counts = [2, 0, 1]
    k32, t32 = kael.tensor(counts, dtype=kael.int32), torch.tensor(counts, dtype=torch.int32)
    same(kael.repeat_interleave(kael.arange(3), k32), torch.repeat_interleave(torch.arange(3), t32))
    same(kael.repeat_interleave(k32), torch.repeat_interleave(t32))  # int32 positions
    one = kael.tensor([2], dtype=kael.int32)
    same(
        kael.arange(3).repeat_interleave(one), torch.arange(3).repeat_interleave(torch.tensor([2]))
    )


@pytest.mark.parametrize(
    ("make", "error", "message"),
    [
        (lambda lib: lib.repeat_interleave(lib.arange(3), lib.tensor([2.5])), NotImplementedError, "Float|float32"),
        (lambda lib: lib.repeat_interleave(lib.arange(3), lib.tensor(True)), NotImplementedError, "Bool|bool"),
        (lambda lib: lib.repeat_interleave(lib.arange(3), lib.tensor([2, 1, 1], dtype=lib.uint8)), NotImplementedError, "Byte|uint8"),
        (lambda lib: lib.repeat_interleave(lib.tensor([3.0, 1.0])), NotImplementedError, "Float|float32"),
        (lambda lib: lib.repeat_interleave(lib.tensor(3)), RuntimeError, "only accept 1D vector as repeat"),
        (lambda lib: lib.repeat_interleave(lib.arange(3), lib.tensor([[2, 1, 1]])), RuntimeError, "0-dim or 1-dim"),
    ],
)  # fmt: skip
def test_repeat_interleave_refuses_the_counts_torch_refuses(make, error, message):
    with pytest.raises(error, match=message):
        make(torch)
    with pytest.raises(error, match=message):
        make(kael)
    with pytest.raises(kael.Error):
        make(kael)


@pytest.mark.parametrize("indexing", ["ij", "xy"])
def test_meshgrid_and_broadcast_tensors_match_torch(indexing):
    a, b, c = (RNG.standard_normal(n).astype(np.float32) for n in (2, 3, 4))
    ks, ts = [kael.tensor(v) for v in (a, b, c)], [torch.tensor(v) for v in (a, b, c)]
    same(kael.meshgrid(*ks, indexing=indexing), torch.meshgrid(*ts, indexing=indexing))
    same(kael.meshgrid(ks[:2], indexing=indexing), torch.meshgrid(ts[:2], indexing=indexing))
    shapes = [kael.ones(3, 1), kael.ones(4), kael.tensor(1.0)]
    tshapes = [torch.ones(3, 1), torch.ones(4), torch.tensor(1.0)]
    same(kael.broadcast_tensors(*shapes), torch.broadcast_tensors(*tshapes))


@pytest.mark.parametrize("offset", [-2, 0, 1, 5])
@pytest.mark.parametrize("shape", [(4, 4), (3, 5), (0, 3)], ids=str)
def test_triangle_indices_match_torch(shape, offset):
    same(kael.tril_indices(*shape, offset), torch.tril_indices(*shape, offset))
    same(kael.triu_indices(*shape, offset), torch.triu_indices(*shape, offset))


def test_new_factories_take_the_tensor_dtype_and_device():
    k, t = kael.ones(2, dtype=kael.int32), torch.ones(2, dtype=torch.int32)
    same(k.new_zeros(3), t.new_zeros(3))
    same(k.new_ones((2, 2), dtype=kael.float64), t.new_ones((2, 2), dtype=torch.float64))
    same(k.new_full((2,), 7), t.new_full((2,), 7))
    same(k.new_tensor([1.5, 2.5]), t.new_tensor([1.5, 2.5]))
    assert k.new_empty(4).shape == (4,) and k.new_empty(4).dtype is kael.int32


@pytest.mark.parametrize(
    "call, error, message",
    [
        (lambda x: kael.split(x, [1, 2], 1), kael.ValueError, "sum exactly"),
        (lambda x: kael.split(x, -1), kael.ValueError, "non-negative"),
        (lambda x: kael.chunk(x, 0), kael.ValueError, "greater than 0"),
        (lambda x: kael.tensor_split(x, 0), kael.ValueError, "larger than 0"),
        (lambda x: x.repeat(2), kael.ValueError, "can not be smaller"),
        (lambda x: kael.repeat_interleave(x, -1), kael.ValueError, "negative"),
        (
            lambda x: kael.repeat_interleave(x, kael.tensor([1, 2]), dim=0),
            kael.ValueError,
            "same size",
        ),
        (lambda x: kael.movedim(x, (0, 1), 0), kael.ValueError, "same number"),
        (lambda x: kael.movedim(x, (0, 0), (0, 1)), kael.ValueError, "repeated dim"),
        (lambda x: kael.t(x.unsqueeze(0)), kael.ValueError, "<= 2 dimensions"),
        (lambda x: kael.diagonal(x, 0, 1, 1), kael.ValueError, "cannot be identical"),
        (lambda x: kael.diag(x.unsqueeze(0)), kael.ValueError, "1D or 2D"),
        (lambda x: kael.meshgrid(x), kael.ValueError, "0D or 1D"),
        (lambda x: kael.meshgrid(x[0], x[0], indexing="yx"), kael.ValueError, "indexing"),
        (lambda x: kael.tril_indices(-1, 2), kael.ValueError, "non-negative"),
        (lambda x: kael.split(x, 2, 5), kael.IndexError, "out of range"),
    ],
)
def test_bad_arguments_raise_typed_errors(call, error, message):
    with pytest.raises(error, match=message):
        call(kael.tensor(VALUES))


def test_shape_functions_inside_compile_match_eager():
    def f(a):
        top, bottom = a.chunk(2, 0)
        return kael.movedim(kael.cat([bottom, top], 1).repeat(1, 2), 0, 1) + kael.diagonal(a).sum()

    compiled = kael.compile(f)
    x = kael.tensor(VALUES)
    for _ in range(2):  # the trace, then a replay
        assert kael.equal(compiled(x), f(x))


# ---- hsplit, vsplit, dsplit, split_with_sizes ------------------------------------------------

SPLIT_DTYPES = [kael.float32, kael.float64, kael.int64, kael.bool]
SPLIT_CASES = [
    ("hsplit", (6,), 3),
    ("hsplit", (6,), [1, 4]),
    ("hsplit", (3, 4), 2),
    ("hsplit", (3, 4), [1, 3]),
    ("hsplit", (3, 4), (5, 2)),
    ("hsplit", (3, 0), 2),
    ("hsplit", (2, 4, 2), [-1]),
    ("vsplit", (4, 3), 2),
    ("vsplit", (4, 3), [2, -1]),
    ("vsplit", (0, 3), 4),
    ("dsplit", (2, 3, 6), 3),
    ("dsplit", (2, 3, 6), [2, -1, 9]),
    ("dsplit", (2, 3, 4, 5), 2),
]


@pytest.mark.parametrize("layout", PAIR_LAYOUTS)
@pytest.mark.parametrize("dtype", SPLIT_DTYPES, ids=str)
@pytest.mark.parametrize("name, shape, spec", SPLIT_CASES, ids=str)
def test_directional_splits_match_torch(name, shape, spec, dtype, layout):
    k, t = layout_pair(shape, dtype, layout)
    same(getattr(kael, name)(k, spec), getattr(torch, name)(t, spec))
    same(getattr(k, name)(spec), getattr(t, name)(spec))


@pytest.mark.parametrize("name, shape, spec", SPLIT_CASES[:4], ids=str)
def test_directional_splits_are_views_of_the_input(name, shape, spec):
    k = kael.zeros(shape)
    pieces = getattr(kael, name)(k, spec)
    for i, piece in enumerate(pieces):
        if piece.numel():
            piece.fill_(i + 1)
    expected = torch.cat(
        [torch.full(tuple(p.shape), float(i + 1)) for i, p in enumerate(pieces)],
        1 if name == "hsplit" and len(shape) > 1 else 0,
    )
    same(k, expected)


@pytest.mark.parametrize("layout", PAIR_LAYOUTS)
@pytest.mark.parametrize("dtype", SPLIT_DTYPES, ids=str)
@pytest.mark.parametrize(
    "shape, sizes, dim",
    [
        ((5, 2), [2, 3], 0),
        ((5, 2), (1, 1), 1),
        ((5, 2), [0, 5, 0], 0),
        ((0, 2), [0], 0),
        ((5, 2), [2], -1),
    ],
    ids=str,
)
def test_split_with_sizes_matches_torch(shape, sizes, dim, dtype, layout):
    k, t = layout_pair(shape, dtype, layout)
    same(kael.split_with_sizes(k, sizes, dim), torch.split_with_sizes(t, sizes, dim))
    same(k.split_with_sizes(sizes, dim=dim), t.split_with_sizes(sizes, dim=dim))
    for piece in k.split_with_sizes(sizes, dim):
        assert piece.numel() == 0 or piece.shares_storage(k)


@pytest.mark.parametrize(
    "call, error, message",
    [
        (lambda: kael.hsplit(kael.tensor(1.0), 1), kael.ValueError, "hsplit requires a tensor with at least 1 dimension, but got a tensor with 0 dimensions"),
        (lambda: kael.vsplit(kael.ones(4), 2), kael.ValueError, "vsplit requires a tensor with at least 2 dimension, but got a tensor with 1 dimensions"),
        (lambda: kael.ones(4, 3).dsplit(3), kael.ValueError, "dsplit requires a tensor with at least 3 dimension, but got a tensor with 2"),
        (lambda: kael.hsplit(kael.ones(4), 3), kael.ValueError, "along dimension 0, but the size of the dimension 4 is not divisible by the split_size 3"),
        (lambda: kael.hsplit(kael.ones(3, 4), 3), kael.ValueError, "along dimension 1, but the size of the dimension 4 is not divisible by the split_size 3"),
        (lambda: kael.vsplit(kael.ones(4, 3), 0), kael.ValueError, "size of the dimension 4 is not divisible by the split_size 0"),
        (lambda: kael.dsplit(kael.ones(2, 2, 6), 4), kael.ValueError, "along dimension 2, but the size of the dimension 6 is not divisible by the split_size 4"),
        (lambda: kael.hsplit(kael.ones(3, 4), -2), kael.ValueError, "number of sections must be larger than 0, got -2"),
        (lambda: kael.hsplit(kael.ones(3, 4), 2.0), kael.TypeError, "indices_or_sections.*not float"),
        (lambda: kael.split_with_sizes(kael.ones(5, 2), [1, 3]), kael.ValueError, r"sum exactly to 5 .* at dimension 0\), but got split_sizes=\[1, 3\]"),
        (lambda: kael.ones(5, 2).split_with_sizes([6, -1]), kael.ValueError, r"only non-negative entries, but got split_sizes=\[6, -1\]"),
        (lambda: kael.ones(5, 2).split_with_sizes(3), kael.TypeError, "split_sizes' must be tuple of ints, not int"),
        (lambda: kael.tensor(1.0).split_with_sizes([1]), kael.ValueError, "split expects at least a 1-dimensional tensor"),
        (lambda: kael.ones(5, 2).split_with_sizes([5], dim=2), kael.IndexError, r"range of \[-2, 1\], but got 2"),
    ],
)  # fmt: skip
def test_directional_and_sized_splits_refuse_what_torch_refuses(call, error, message):
    with pytest.raises(error, match=message):
        call()


# ---- kael.real, conj, is_nonzero, ...: Tensor's queries as torch's functions ---------------

QUERY_DTYPES = [kael.float32, kael.float64, kael.int64, kael.bool, kael.float16, kael.uint8]


@pytest.mark.parametrize("dtype", QUERY_DTYPES, ids=str)
@pytest.mark.parametrize(
    "name", ["is_conj", "is_neg", "is_signed", "is_complex", "get_device", "is_floating_point"]
)
def test_query_functions_answer_as_torch(name, dtype):
    k, t = layout_pair((2, 3), dtype)
    assert getattr(kael, name)(k) == getattr(torch, name)(t)
    assert getattr(k, name)() == getattr(t, name)()


@pytest.mark.parametrize("dtype", QUERY_DTYPES, ids=str)
@pytest.mark.parametrize("name", ["real", "conj", "resolve_conj", "resolve_neg"])
def test_real_dtype_no_ops_return_the_input_itself(name, dtype):
    k, t = layout_pair((2, 3), dtype, "transposed")
    assert getattr(kael, name)(k) is k and getattr(torch, name)(t) is t
    same(getattr(kael, name)(k), getattr(torch, name)(t))


@pytest.mark.parametrize(
    "a, b", [((2, 3), (2, 3)), ((2, 3), (3, 2)), ((), ()), ((0,), (0, 1)), ((1,), ())]
)
def test_is_same_size_compares_shapes_as_torch(a, b):
    assert kael.is_same_size(kael.ones(a), kael.zeros(b, dtype=kael.int64)) == torch.is_same_size(
        torch.ones(a), torch.zeros(b, dtype=torch.int64)
    )


@pytest.mark.parametrize(
    "value", [[0.0], [[1]], 3.0, float("nan"), -0.0, True, False, [[[2]]]], ids=str
)
def test_is_nonzero_of_one_element_matches_torch(value):
    assert kael.is_nonzero(kael.tensor(value)) == torch.is_nonzero(torch.tensor(value))


@pytest.mark.parametrize(
    "call, error, message",
    [
        (lambda: kael.is_nonzero(kael.ones(0)), kael.ValueError, "Boolean value of Tensor with no values is ambiguous"),
        (lambda: kael.is_nonzero(kael.ones(2, 1)), kael.ValueError, r"more than one value \(2 elements\) is ambiguous"),
        (lambda: kael.imag(kael.ones(2)), kael.TypeError, "imag is not implemented for tensors with non-complex dtypes, got float32"),
        (lambda: kael.real(3.0), kael.TypeError, "real\\(\\): input must be a Tensor, got float"),
        (lambda: kael.is_same_size(kael.ones(2), 3), kael.TypeError, "other must be a Tensor, got int"),
        (lambda: kael.conj([1.0]), kael.TypeError, "conj\\(\\): input must be a Tensor, got list"),
    ],
)  # fmt: skip
def test_query_functions_refuse_what_torch_refuses(call, error, message):
    with pytest.raises(error, match=message):
        call()


# ---- repeat's one copy and split's unchecked views ---------------------------------------------

REPEAT_DTYPES = [kael.float32, kael.float16, kael.bfloat16, kael.bool, kael.int8]


def _fresh_like_torch(k, t: torch.Tensor, x) -> None:
    """k equals t bit for bit in shape, dtype and strides, a new tensor apart from x."""
    assert k.shape == tuple(t.shape) and k.dtype is KAEL_DTYPES[t.dtype]
    assert k.stride() == t.stride() and k.storage_offset() == 0
    assert torch.equal(torch.from_dlpack(k), t)
    assert not k.shares_storage(x)


@pytest.mark.parametrize("layout", [*PAIR_LAYOUTS, "zero_d", "empty"])
@pytest.mark.parametrize("dtype", REPEAT_DTYPES, ids=str)
def test_repeat_and_tile_are_new_row_major_tensors_on_every_call(dtype, layout):
    for seed in range(3):  # the first call copies through the full door, later ones replay it
        if layout == "zero_d":
            k, t = layout_pair((), dtype)
        else:
            shape = (3, 0) if layout == "empty" else (3, 4)
            k, t = layout_pair(shape, dtype, "contiguous" if layout == "empty" else layout, -seed)
        for reps in ((2,) * k.ndim, (1,) * k.ndim, (2, 1, 3)[3 - k.ndim :], (3, 1, 2, 1)):
            if reps:
                _fresh_like_torch(k.repeat(*reps), t.repeat(*reps), k)
            _fresh_like_torch(kael.tile(k, reps), torch.tile(t, reps), k)


def test_repeat_by_ones_copies_as_torch_and_never_views_the_input():
    k = kael.arange(6).view(2, 3)
    for x in (k, k.T, k[:, 1:], k[0, 0]):
        for reps in ((1,) * x.ndim, (1,) * (x.ndim + 1)):
            if reps:
                r = x.repeat(*reps)
                assert not r.shares_storage(x) and r.is_contiguous()
                r.fill_(-1)
        assert not kael.tile(x, (1,)).shares_storage(x)
    assert k.tolist() == [[0, 1, 2], [3, 4, 5]]


def test_repeat_without_sizes_is_torchs_type_error():
    with pytest.raises(TypeError, match='missing 1 required positional arguments: "repeats"'):
        torch.ones(2).repeat()
    for x in (kael.ones(2), kael.tensor(1.0)):
        with pytest.raises(kael.TypeError, match='missing 1 required positional arguments: "re'):
            x.repeat()


SPLITS = {
    "split": lambda lib, x, d: lib.split(x, 2, d),
    "split_sizes": lambda lib, x, d: lib.split(x, [1, 0, x.shape[d] - 1], d),
    "chunk": lambda lib, x, d: lib.chunk(x, 3, d),
    "tensor_split_sections": lambda lib, x, d: lib.tensor_split(x, 3, d),
    "tensor_split_indices": lambda lib, x, d: lib.tensor_split(x, [1, -1, 0, 9], d),
}


@pytest.mark.parametrize("layout", [*PAIR_LAYOUTS, "empty"])
@pytest.mark.parametrize("name", SPLITS)
def test_split_pieces_view_the_input_at_torchs_offsets_and_strides(name, layout):
    shape = (4, 0, 5) if layout == "empty" else (4, 3, 5)
    k, t = layout_pair(shape, kael.float32, "contiguous" if layout == "empty" else layout)
    for d in (0, 1, -1):
        if layout == "empty" and d == 1:
            continue  # torch's split_with_sizes of a 0-size dim: its own sizes rule
        pieces, want = SPLITS[name](kael, k, d), SPLITS[name](torch, t, d)
        assert len(pieces) == len(want)
        for p, w in zip(pieces, want):
            assert p.shape == tuple(w.shape) and p.stride() == w.stride()
            assert p.storage_offset() == w.storage_offset() and p.shares_storage(k)
            assert torch.equal(torch.from_dlpack(p), w)


def test_repeat_interleave_refuses_counts_whose_total_cannot_exist_at_once():
    """The total is checked before anything is built (it built a Python list of every
    output position: counts of 2**62 ran until memory ran out)."""
    with pytest.raises(kael.ValueError, match="element count overflows int64"):
        kael.arange(3.0).repeat_interleave(kael.tensor([2**62, 2**62, 2**62]))
    with pytest.raises(kael.Error):  # more memory than there is: the allocator's typed error
        kael.arange(2.0).repeat_interleave(kael.tensor([2**45, 1]))
    got = kael.arange(3.0).repeat_interleave(kael.tensor([0, 2, 1]))
    assert got.tolist() == [1.0, 1.0, 2.0]


def test_tensor_split_refuses_more_sections_than_views_can_be_made():
    from kael.frontend.shapes import MAX_PIECES

    with pytest.raises(kael.ValueError, match="sections would be more than"):
        kael.tensor_split(kael.ones(3, 4), 2**62)
    with pytest.raises(kael.ValueError, match="sections would be more than"):
        kael.ones(3).tensor_split(MAX_PIECES + 1)
    assert len(kael.tensor_split(kael.ones(3, 4), 5)) == 5  # more sections than rows: empty ones


# ---- torch's spellings and edge cases (a port's first calls) ---------------------------------


@pytest.mark.parametrize(
    "shape, repeats, dim",
    [((1, 4), 3, 0), ((3, 4), 1, 0), ((), 2, None), ((3, 1), 2, 1), ((2, 3), 2, -1)],
    ids=str,
)
@pytest.mark.parametrize("as_tensor", [False, True], ids=["int", "one-element tensor"])
def test_repeat_interleave_is_a_new_tensor_never_a_view(shape, repeats, dim, as_tensor):
    """Writing into the result leaves the input alone, as torch's, for counts that a reshape
    of an expanded view could have served (one repeat, a size-1 dim, a 0-d input)."""
    k, t = kael.zeros(shape), torch.zeros(shape)
    r = (lambda lib: lib.tensor([repeats])) if as_tensor and shape else (lambda lib: repeats)
    got, want = kael.repeat_interleave(k, r(kael), dim), torch.repeat_interleave(t, r(torch), dim)
    same(got, want)
    assert got.stride() == want.stride()
    got.view(-1)[0] = 7.0
    assert k.abs().sum().item() == 0.0
    got.add_(1)  # every element its own memory


def test_repeat_interleave_of_a_0d_tensor_along_a_dim_is_refused_as_torch():
    with pytest.raises(IndexError):
        torch.repeat_interleave(torch.tensor(1.0), 2, dim=0)
    with pytest.raises(kael.IndexError, match="dim 0 given for a 0-d tensor"):
        kael.repeat_interleave(kael.tensor(1.0), 2, dim=0)


@pytest.mark.parametrize("source, destination", [(0, -1), (-1, 0), ([0], [0])], ids=str)
def test_movedim_of_a_0d_tensor_is_the_tensor_as_torch(source, destination):
    same(
        kael.movedim(kael.tensor(2.0), source, destination),
        torch.movedim(torch.tensor(2.0), source, destination),
    )


def test_broadcast_tensors_of_nothing_is_empty_and_meshgrid_of_nothing_refused_as_torch():
    assert kael.broadcast_tensors() == () == torch.broadcast_tensors()
    with pytest.raises(RuntimeError, match="non-empty"):
        torch.meshgrid(indexing="ij")
    with pytest.raises(kael.ValueError, match="non-empty"):
        kael.meshgrid(indexing="ij")


def test_split_takes_a_0d_tensor_size_and_refuses_0_for_a_nonempty_dim_as_torch():
    same(kael.split(kael.arange(5), kael.tensor(2)), torch.split(torch.arange(5), torch.tensor(2)))
    with pytest.raises(RuntimeError, match="split_size can only be 0 if dimension size is 0"):
        torch.split(torch.ones(3), 0)
    with pytest.raises(
        kael.ValueError,
        match="split_size can only be 0 if dimension size is 0, but got dimension size of 3",
    ):
        kael.split(kael.ones(3), 0)
    same(kael.split(kael.zeros(0, 4), 0), torch.split(torch.zeros(0, 4), 0))


# Each call as torch documents it, keywords included: the same results.
SPELLINGS = {
    "tensor_split(sections=)": lambda L, x: L.tensor_split(x, sections=2, dim=1),
    "tensor_split(indices=)": lambda L, x: L.tensor_split(x, indices=[1, 3], dim=1),
    "tensor_split(tensor_indices_or_sections=)": lambda L, x: L.tensor_split(x, tensor_indices_or_sections=L.tensor([1]), dim=0),
    "Tensor.tensor_split(sections=)": lambda L, x: x.tensor_split(sections=3),
    "hsplit(indices=)": lambda L, x: L.hsplit(x, indices=[1]),
    "vsplit(sections=)": lambda L, x: L.vsplit(x[:2], sections=2),
    "split(split_size_or_sections=)": lambda L, x: L.split(x, split_size_or_sections=2),
    "Tensor.split(split_size=)": lambda L, x: x.split(split_size=2, dim=1),
    "swapdims(dim0=, dim1=)": lambda L, x: L.swapdims(x, dim0=0, dim1=1),
    "Tensor.swapdims(dim0=, dim1=)": lambda L, x: x.swapdims(dim0=1, dim1=0),
    "Tensor.repeat(repeats=)": lambda L, x: x.repeat(repeats=(2, 1)),
    "Tensor.tile(2, 2)": lambda L, x: x.tile(2, 2),
    "Tensor.tile((2,))": lambda L, x: x.tile((2,)),
    "tile(dims=)": lambda L, x: L.tile(x, dims=(2, 1, 1)),
    "Tensor.reshape(shape=)": lambda L, x: x.reshape(shape=(6, 4)),
    "Tensor.view(size=)": lambda L, x: x.view(size=(2, 12)),
    "Tensor.view(dtype=)": lambda L, x: x.view(dtype=L.int32),
    "Tensor.permute(dims=)": lambda L, x: x.permute(dims=(1, 0)),
    "Tensor.expand(size=)": lambda L, x: x[:1].expand(size=(3, 6)),
    "Tensor.new_zeros(size=)": lambda L, x: x.new_zeros(size=(2, 3)),
    "Tensor.new_ones(size=)": lambda L, x: x.new_ones(size=[2]),
    "Tensor.as_strided_scatter": lambda L, x: x.as_strided_scatter(x[:2, :2], (2, 2), (1, 2)),
}  # fmt: skip


@pytest.mark.parametrize("name", list(SPELLINGS))
def test_torchs_spellings_of_shape_calls_give_torchs_results(name):
    k, t = kael.tensor(VALUES), torch.tensor(VALUES)
    same(SPELLINGS[name](kael, k), SPELLINGS[name](torch, t))


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda x: kael.tensor_split(x, 2, sections=2), "exactly one of indices_or_sections, sections"),
        (lambda x: kael.tensor_split(x), "exactly one of .* got 0"),
        (lambda x: kael.split(x, 2, split_size=2), "exactly one of split_size_or_sections, split_size"),
        (lambda x: x.reshape(shape=(6, 4), size=2), "unexpected keyword argument 'size'"),
        (lambda x: x.permute(dims=(1, 0), order=1), "unexpected keyword argument 'order'"),
    ],
)  # fmt: skip
def test_a_call_naming_an_argument_twice_or_a_stranger_raises_a_type_error(call, message):
    with pytest.raises((kael.TypeError, TypeError), match=message):
        call(kael.tensor(VALUES))


def test_view_refuses_a_size_and_a_dtype_together():
    with pytest.raises(kael.TypeError, match="a size or a dtype, not both"):
        kael.zeros(2, 3).view(size=(6,), dtype=kael.int32)
