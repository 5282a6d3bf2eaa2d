"""Views share storage and follow PyTorch's shapes, strides, offsets and errors exactly."""

import itertools

import numpy as np
import pytest
import torch

import kael
from kael.frontend import views
from kael.frontend.views import compute_stride, wrap_dim

# Layouts that exercise computeStride: contiguous, transposed, sliced, expanded, size-1 dims.
LAYOUTS = [
    ("contiguous", lambda t: t),
    ("transposed", lambda t: t.transpose(0, 2)),
    ("permuted", lambda t: t.permute(1, 0, 2)),
    ("last dim sliced", lambda t: t[:, :, :2]),
    ("first dim sliced", lambda t: t[:1]),
    ("stepped", lambda t: t[:, ::2]),
    ("expanded", lambda t: t[:, :1].expand(2, 3, 4)),
]
TARGETS = [(24,), (4, 6), (2, 12), (6, 4), (2, 3, 4), (1, 24), (2, 1, 3, 4), (8, 3), (-1,), (12,)]


def _base():
    return kael.arange(24).view(2, 3, 4), torch.arange(24).view(2, 3, 4)


@pytest.mark.parametrize(("name", "layout"), LAYOUTS, ids=[n for n, _ in LAYOUTS])
def test_view_exists_exactly_when_torch_finds_compatible_strides(name, layout, like_torch):
    kb, tb = _base()
    k, t = layout(kb), layout(tb)
    like_torch(k, t)
    for target in TARGETS:
        try:
            expected = t.view(target)
        except RuntimeError as error:
            if "invalid for input of size" in str(error):
                with pytest.raises(kael.ValueError, match="is invalid for input of size"):
                    k.view(target)
            else:
                with pytest.raises(kael.Error, match="view size is not compatible"):
                    k.view(target)
            continue
        result = k.view(target)
        like_torch(result, expected)
        assert result.shares_storage(kb)


def test_compute_stride_matches_torch_for_empty_tensors():
    t = torch.zeros(2, 0, 3)
    for target in [(0, 3, 2), (0,), (2, 0, 3), (3, 0)]:
        assert compute_stride((2, 0, 3), t.stride(), target) == t.view(target).stride()


def test_view_on_incompatible_layout_raises():
    with pytest.raises(kael.Error, match=r"at least one dimension spans across two contiguous"):
        kael.zeros(2, 3).T.view(6)


def test_view_with_a_wrong_element_count_raises_naming_shape_and_size():
    with pytest.raises(kael.ValueError, match=r"shape '\[2, 4\]' is invalid for input of size 6"):
        kael.zeros(2, 3).view(2, 4)


def test_view_infers_one_dim_and_rejects_two():
    assert kael.zeros(2, 3).view(-1, 2).shape == torch.zeros(2, 3).view(-1, 2).shape
    with pytest.raises(kael.ValueError, match="only one dimension can be inferred"):
        kael.zeros(2, 3).view(-1, -1)
    with pytest.raises(kael.ValueError, match=r"invalid shape dimension -2"):
        kael.zeros(2, 3).view(-2, 3)


def test_view_cannot_infer_a_dim_of_an_empty_tensor():
    with pytest.raises(kael.ValueError, match="can be any value and is ambiguous"):
        kael.zeros(2, 0).view(0, -1)


def test_view_takes_a_tuple_or_varargs(like_torch):
    k, t = _base()
    like_torch(k.view((4, 6)), t.view((4, 6)))
    like_torch(k.view([4, 6]), t.view([4, 6]))


def test_view_between_0d_and_one_element(like_torch):
    k, t = kael.tensor([5]), torch.tensor([5])
    like_torch(k.view(()), t.view(()))
    like_torch(k.view(()).view(1, 1), t.view(()).view(1, 1))


def test_view_rejects_a_non_int_size():
    with pytest.raises(kael.TypeError, match="got float"):
        kael.zeros(4).view(2.0, 2)


def test_reshape_copies_only_when_no_view_exists(like_torch):
    k, t = _base()
    viewed = k.reshape(6, 4)
    like_torch(viewed, t.reshape(6, 4))
    assert viewed.shares_storage(k)
    copied = k.transpose(0, 2).reshape(-1)
    like_torch(copied, t.transpose(0, 2).reshape(-1))
    assert not copied.shares_storage(k)


def test_transpose_matches_torch_for_every_pair_of_dims(like_torch):
    k, t = _base()
    for d0, d1 in itertools.product(range(-3, 3), repeat=2):
        like_torch(k.transpose(d0, d1), t.transpose(d0, d1))


def test_wrap_dim_error_message_matches_torch():
    with pytest.raises(IndexError) as expected:
        torch.zeros(2, 3).transpose(0, 2)
    with pytest.raises(kael.IndexError) as got:
        kael.zeros(2, 3).transpose(0, 2)
    assert str(got.value) == str(expected.value)


def test_wrap_dim_accepts_both_ends_of_the_range_and_nothing_beyond():
    assert wrap_dim(-2, 2) == 0
    assert wrap_dim(1, 2) == 1
    for bad in (-3, 2):
        with pytest.raises(kael.IndexError, match=rf"\[-2, 1\], but got {bad}\)"):
            wrap_dim(bad, 2)
    assert wrap_dim(-1, 0) == 0  # a 0-d tensor takes dims 0 and -1, as in PyTorch


@pytest.mark.parametrize("dims", list(itertools.permutations(range(3))) + [(-1, 0, 1)])
def test_permute_matches_torch(dims, like_torch):
    k, t = _base()
    like_torch(k.permute(*dims), t.permute(*dims))
    like_torch(k.permute(dims), t.permute(dims))


def test_permute_rejects_repeated_dims_naming_them():
    with pytest.raises(kael.ValueError, match=r"dims \[0, 0, 1\] is not a permutation"):
        kael.zeros(2, 3, 4).permute(0, 0, 1)


def test_permute_rejects_a_wrong_number_of_dims():
    with pytest.raises(kael.ValueError, match=r"dims \[1, 0\] has 2 entries but the tensor has 3"):
        kael.zeros(2, 3, 4).permute(1, 0)


@pytest.mark.parametrize(
    ("shape", "sizes"),
    [
        ((3, 1), (3, 4)),
        ((3, 1), (2, 3, 4)),
        ((3, 1), (-1, 5)),
        ((1,), (1, 1, 7)),
        ((2, 1, 3), (2, 5, 3)),
        ((), (2, 2)),
        ((3,), (1, 3)),
    ],
)
def test_expand_matches_torch(shape, sizes, like_torch, arange_pair):
    k, t = arange_pair(*shape)
    like_torch(k.expand(*sizes), t.expand(*sizes))
    like_torch(k.expand(sizes), t.expand(sizes))


def test_expand_of_a_non_singleton_dim_raises_naming_sizes():
    message = (
        r"The expanded size of the tensor \(4\) must match the existing size \(3\) at"
        r" non-singleton dimension 1.  Target sizes: \[2, 4\].  Tensor sizes: \[2, 3\]"
    )
    with pytest.raises(kael.ValueError, match=message):
        kael.zeros(2, 3).expand(2, 4)


def test_expand_needs_at_least_the_tensor_rank():
    with pytest.raises(kael.ValueError, match=r"number of sizes provided \(1\) must be greater"):
        kael.zeros(2, 3).expand(3)


def test_expand_rejects_minus_one_in_a_new_leading_dim():
    with pytest.raises(kael.ValueError, match="leading, non-existing dimension 0"):
        kael.zeros(3).expand(-1, 3)


def test_expand_as_takes_the_other_shape(like_torch):
    k, t = kael.zeros(3, 1), torch.zeros(3, 1)
    like_torch(k.expand_as(kael.zeros(2, 3, 4)), t.expand_as(torch.zeros(2, 3, 4)))


@pytest.mark.parametrize(
    ("dim", "start", "length"), [(0, 0, 1), (1, 1, 2), (-1, -3, 2), (2, 4, 0), (1, -3, 3)]
)
def test_narrow_matches_torch(dim, start, length, like_torch):
    k, t = _base()
    like_torch(k.narrow(dim, start, length), t.narrow(dim, start, length))


def test_narrow_start_out_of_range_raises_index_error():
    k = kael.zeros(2, 3)
    assert k.narrow(1, 3, 0).shape == (2, 0)
    assert k.narrow(1, -3, 1).shape == (2, 1)
    with pytest.raises(kael.IndexError, match=r"\[-3, 3\], but got 4"):
        k.narrow(1, 4, 0)
    with pytest.raises(kael.IndexError, match=r"\[-3, 3\], but got -4"):
        k.narrow(1, -4, 0)


def test_narrow_past_the_end_raises_naming_values():
    kael.zeros(2, 3).narrow(1, 1, 2)
    with pytest.raises(kael.ValueError, match=r"start \(2\) \+ length \(2\) exceeds dimension"):
        kael.zeros(2, 3).narrow(1, 2, 2)


def test_narrow_rejects_negative_length_and_0d():
    with pytest.raises(kael.ValueError, match="length must be non-negative, got -1"):
        kael.zeros(3).narrow(0, 0, -1)
    with pytest.raises(kael.ValueError, match="0-dim"):
        kael.tensor(1.0).narrow(0, 0, 1)


@pytest.mark.parametrize(("dim", "index"), [(0, 1), (1, -1), (-1, 3), (2, -4), (1, 0)])
def test_select_matches_torch(dim, index, like_torch):
    k, t = _base()
    like_torch(k.select(dim, index), t.select(dim, index))


def test_select_accepts_indices_within_the_size_and_rejects_beyond():
    k = kael.zeros(2, 3)
    k.select(0, 1)
    k.select(0, -2)
    for bad in (2, -3):
        with pytest.raises(kael.IndexError, match=rf"index {bad} out of range .* size \[2, 3\]"):
            k.select(0, bad)


def test_select_of_a_0d_tensor_raises():
    with pytest.raises(kael.IndexError, match="0-dim"):
        kael.tensor(1.0).select(0, 0)


def test_unsqueeze_matches_torch_at_every_position(like_torch):
    k, t = _base()
    for dim in range(-4, 4):
        like_torch(k.unsqueeze(dim), t.unsqueeze(dim))
        like_torch(k.transpose(0, 1).unsqueeze(dim), t.transpose(0, 1).unsqueeze(dim))
    for bad in (-5, 4):
        with pytest.raises(kael.IndexError, match=rf"\[-4, 3\], but got {bad}"):
            k.unsqueeze(bad)


@pytest.mark.parametrize("dim", [None, 0, 2, -1, (0, 2), (1,), (0, 1, 2)])
def test_squeeze_matches_torch(dim, like_torch):
    k = kael.arange(6).view(1, 6, 1)
    t = torch.arange(6).view(1, 6, 1)
    like_torch(k.squeeze(dim), t.squeeze() if dim is None else t.squeeze(dim))


def test_squeeze_rejects_a_repeated_dim():
    with pytest.raises(kael.ValueError, match=r"repeats a dimension"):
        kael.zeros(1, 2).squeeze((0, 0))


def test_squeeze_of_a_0d_tensor_keeps_it(like_torch):
    like_torch(kael.tensor(2).squeeze(0), torch.tensor(2).squeeze(0))


@pytest.mark.parametrize(("start", "end"), [(0, -1), (1, 2), (0, 1), (-2, -1), (1, 1)])
def test_flatten_matches_torch_and_is_a_view_when_possible(start, end, like_torch):
    k, t = _base()
    result = k.flatten(start, end)
    like_torch(result, t.flatten(start, end))
    assert result.shares_storage(k)
    copied = k.transpose(0, 2).flatten(start, end)
    like_torch(copied, t.transpose(0, 2).flatten(start, end))


def test_flatten_with_equal_dims_returns_self_like_torch():
    k, t = kael.zeros(2, 3), torch.zeros(2, 3)
    assert (k.flatten(1, 1) is k) == (t.flatten(1, 1) is t)


def test_flatten_of_a_0d_tensor_has_one_element(like_torch):
    like_torch(kael.tensor(3).flatten(), torch.tensor(3).flatten())


@pytest.mark.parametrize(("start", "end"), [(0, 0), (-1, 0), (0, -1), (-1, -1)])
def test_flatten_of_a_0d_tensor_accepts_dims_0_and_minus_1(start, end, like_torch):
    like_torch(kael.tensor(2.5).flatten(start, end), torch.tensor(2.5).flatten(start, end))


@pytest.mark.parametrize(("start", "end", "bad"), [(5, 0, 5), (0, 5, 5), (1, 0, 1), (-2, 0, -2)])
def test_flatten_of_a_0d_tensor_checks_its_dims(start, end, bad):
    # A 0-d tensor has dims 0 and -1 only, as every other dim argument sees it.
    with pytest.raises(IndexError):
        torch.tensor(2.5).flatten(start, end)
    with pytest.raises(kael.IndexError, match=rf"range of \[-1, 0\], but got {bad}\)"):
        kael.tensor(2.5).flatten(start, end)


@pytest.mark.parametrize("shape", [(), (2, 3)])
def test_flatten_names_a_dim_that_is_not_an_int(shape):
    with pytest.raises(TypeError):
        torch.zeros(shape).flatten(5, "a")
    with pytest.raises(kael.TypeError, match="end_dim must be an int, got str"):
        kael.zeros(shape).flatten(5, "a")
    with pytest.raises(kael.TypeError, match="start_dim must be an int, got float"):
        kael.zeros(shape).flatten(0.5)


def test_flatten_rejects_start_after_end():
    with pytest.raises(kael.ValueError, match="start_dim .* cannot come after end_dim"):
        kael.zeros(2, 3).flatten(1, 0)


@pytest.mark.parametrize(("dim", "sizes"), [(1, (3, 1)), (0, (1, 2)), (-1, (2, -1)), (2, (4,))])
def test_unflatten_matches_torch(dim, sizes, like_torch):
    k, t = _base()
    like_torch(k.unflatten(dim, sizes), t.unflatten(dim, sizes))


@pytest.mark.parametrize("sizes", [(3, 1), (1, -1, 1)])
def test_unflatten_of_a_transposed_tensor_matches_torch(sizes, like_torch):
    k, t = _base()
    like_torch(k.transpose(0, 2).unflatten(1, sizes), t.transpose(0, 2).unflatten(1, sizes))


def test_unflatten_rejects_sizes_that_do_not_multiply_up():
    with pytest.raises(kael.ValueError, match=r"sizes \[2, 2\] don't multiply up to .* \(3\)"):
        kael.zeros(2, 3).unflatten(1, (2, 2))
    with pytest.raises(kael.ValueError, match="sizes must be non-empty"):
        kael.zeros(2, 3).unflatten(1, ())


def test_as_strided_matches_torch_and_keeps_the_offset_by_default(like_torch):
    k, t = kael.arange(10), torch.arange(10)
    like_torch(k.as_strided((2, 3), (3, 1)), t.as_strided((2, 3), (3, 1)))
    like_torch(k.as_strided((3,), (0,), 4), t.as_strided((3,), (0,), 4))
    like_torch(k[2:].as_strided((2,), (2,)), t[2:].as_strided((2,), (2,)))


def test_as_strided_accepts_the_last_element_and_rejects_one_more():
    k = kael.zeros(10)
    assert k.as_strided((3,), (3,), 3).storage_offset() == 3  # reads element 9 of 10
    with pytest.raises(kael.Error, match="needs 44 bytes but storage has 40"):
        k.as_strided((3,), (3,), 4)


def test_as_strided_rejects_negative_strides():
    with pytest.raises(kael.ValueError, match="negative stride -1"):
        kael.zeros(3).as_strided((2,), (-1,), 2)


def test_every_view_shares_storage_and_is_a_new_tensor():
    k = kael.zeros(2, 3, 4)
    results = [
        k.view(-1),
        k.transpose(0, 1),
        k.permute(2, 0, 1),
        k[:, :1].expand(2, 5, 4),
        k.narrow(1, 1, 1),
        k.select(0, 1),
        k.unsqueeze(0),
        k.unsqueeze(0).squeeze(),
        k.flatten(),
        k.unflatten(2, (2, 2)),
        k.as_strided((2,), (1,)),
        k.T,
        k.mT,
    ]
    for r in results:
        assert r.shares_storage(k)
        assert not r.is_same(k)


# ---- remembered layouts (views._layouts) --------------------------------------------------


def _layout(t: kael.Tensor) -> tuple:
    return t.shape, t.stride(), t._impl.offset, t._impl.storage


def test_a_remembered_view_is_the_view_the_full_path_gives():
    base = kael.arange(60.0)
    for _ in range(2):  # the second of each is served from the memo
        for t in (base, base[5:35], base.view(6, 10).T):
            fresh = views.view(t._impl, (-1,)) if t.is_contiguous() else None
            got = t.reshape(-1)
            if fresh is not None:
                assert _layout(t.view(-1)) == (
                    fresh.shape,
                    fresh.strides,
                    fresh.offset,
                    t._impl.storage,
                )
            np.testing.assert_array_equal(got.numpy(), t.numpy().reshape(-1))


def test_remembered_views_keep_their_refusals():
    t = kael.arange(12.0).view(3, 4).T
    for _ in range(2):
        with pytest.raises(kael.Error, match="view size is not compatible"):
            t.view(-1)
    x = kael.arange(4.0)
    assert x.view(4, 1).shape == (4, 1)
    with pytest.raises(kael.TypeError):
        x.view(4, True)  # a bool is not the size 1 a remembered key holds


def test_remembered_index_views_follow_the_base_offset():
    base = kael.arange(100.0).view(10, 10)
    for _ in range(2):
        for t in (base, base[2:], base[:, 3:]):
            np.testing.assert_array_equal(t[1:3, ::2].numpy(), t.numpy()[1:3, ::2])
            np.testing.assert_array_equal(t[-1].numpy(), t.numpy()[-1])
        with pytest.raises(kael.IndexError):
            base[10]
        assert base[np.int64(2)].tolist() == base[2].tolist()  # judged by the full path


# ---- Tensor.unfold: the sliding-window view -------------------------------------------------

UNFOLD_DTYPES = [kael.int64, kael.float32, kael.float64, kael.bool, kael.float16]
UNFOLD_ARGS = [(0, 1, 1), (1, 2, 1), (2, 2, 2), (-1, 3, 1), (2, 4, 3), (1, 0, 1), (-3, 2, 5)]


def _typed_base(dtype):
    k, t = _base()
    return k.to(dtype), t.to(TORCH_OF[dtype])


TORCH_OF = {
    kael.int64: torch.int64,
    kael.float32: torch.float32,
    kael.float64: torch.float64,
    kael.bool: torch.bool,
    kael.float16: torch.float16,
}


@pytest.mark.parametrize("args", UNFOLD_ARGS, ids=str)
@pytest.mark.parametrize("dtype", UNFOLD_DTYPES, ids=str)
@pytest.mark.parametrize(("name", "layout"), LAYOUTS, ids=[n for n, _ in LAYOUTS])
def test_unfold_windows_have_torchs_shape_strides_and_values(name, layout, dtype, args, like_torch):
    k, t = _typed_base(dtype)
    k, t = layout(k), layout(t)
    dim, size, step = args
    if size > t.shape[dim]:
        size = t.shape[dim]
    like_torch(k.unfold(dim, size, step), t.unfold(dim, size, step))


@pytest.mark.parametrize("size", [0, 1])
@pytest.mark.parametrize("dim", [0, -1])
def test_unfold_of_a_0d_tensor_is_one_window(dim, size, like_torch):
    like_torch(kael.tensor(7).unfold(dim, size, 3), torch.tensor(7).unfold(dim, size, 3))


@pytest.mark.parametrize(
    "shape, args", [((0, 3), (0, 0, 1)), ((3, 0), (0, 2, 1)), ((3, 0), (1, 0, 2))]
)
def test_unfold_of_empty_tensors_matches_torch(shape, args, like_torch):
    like_torch(kael.zeros(shape).unfold(*args), torch.zeros(shape).unfold(*args))


def test_unfold_shares_storage_both_ways():
    base = kael.zeros(4, 6)
    windows = base.unfold(1, 3, 2)
    assert windows.shares_storage(base) and windows.data_ptr() == base.data_ptr()
    assert windows.shape == (4, 2, 3)  # windows at columns 0 and 2
    windows[1, 1, 2] = 5.0  # row 1, window 1 ends at column 4
    assert base[1, 4].item() == 5.0
    base[3, 2] = 9.0  # column 2 ends window 0 and starts window 1
    assert windows[3, 0, 2].item() == 9.0 and windows[3, 1, 0].item() == 9.0
    nested = windows.unfold(1, 2, 1)  # a view of a view
    nested[0, 0, 0, 0] = -1.0
    assert base[0, 0].item() == -1.0


@pytest.mark.parametrize(
    "call, error, message",
    [
        (lambda: kael.ones(4, 6).unfold(1, 7, 1), kael.ValueError, "maximum size for tensor at dimension 1 is 6 but size is 7"),
        (lambda: kael.tensor(3.0).unfold(0, 2, 1), kael.ValueError, "maximum size for tensor at dimension 0 is 1 but size is 2"),
        (lambda: kael.ones(0, 3).unfold(0, 1, 1), kael.ValueError, "dimension 0 is 0 but size is 1"),
        (lambda: kael.ones(4, 6).unfold(1, 2, 0), kael.ValueError, "step is 0 but must be > 0"),
        (lambda: kael.ones(4, 6).unfold(1, 2, -1), kael.ValueError, "step is -1 but must be > 0"),
        (lambda: kael.tensor(3.0).unfold(0, 1, 0), kael.ValueError, "step is 0 but must be > 0"),
        (lambda: kael.ones(4, 6).unfold(1, -1, 1), kael.ValueError, "size is -1 but must be >= 0"),
        (lambda: kael.ones(4, 6).unfold(2, 2, 1), kael.IndexError, r"range of \[-2, 1\], but got 2"),
        (lambda: kael.tensor(3.0).unfold(1, 1, 1), kael.IndexError, r"range of \[-1, 0\], but got 1"),
        (lambda: kael.ones(4, 6).unfold(1, 2.0, 1), kael.TypeError, "size must be an int, got float"),
        (lambda: kael.ones(4, 6).unfold(1, 2, True), kael.TypeError, "step must be an int, got bool"),
    ],
)  # fmt: skip
def test_unfold_refuses_what_torch_refuses(call, error, message):
    with pytest.raises(error, match=message):
        call()


@pytest.mark.parametrize(
    "make",
    [
        lambda v: v.permute(*reversed(range(v.ndim))),
        lambda v: v.unsqueeze(1),
        lambda v: v.unsqueeze(-1).expand(*v.shape, 5),
        lambda v: v.unsqueeze(0).squeeze(0),
        lambda v: v.squeeze(),
    ],
)
def test_remembered_permute_expand_unsqueeze_and_squeeze_keep_torchs_layout(make):
    x, t = kael.arange(24.0).reshape(2, 3, 4), torch.arange(24.0).reshape(2, 3, 4)
    for _ in range(3):  # the first call remembers the layout, the next ones replay it
        for k, w in ((x[1:], t[1:]), (x[:, 1], t[:, 1]), (x.transpose(0, 2), t.transpose(0, 2))):
            got, want = make(k), make(w)
            assert (got.shape, got.stride()) == (tuple(want.shape), want.stride())
            assert got.storage_offset() == want.storage_offset()
            np.testing.assert_array_equal(got.numpy(), want.numpy())
    with pytest.raises(kael.Error):
        x.permute(0, 0, 1)
    with pytest.raises(kael.Error):
        x.expand(3, 3, 4)
