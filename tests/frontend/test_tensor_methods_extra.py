"""Tensor's in-place view methods (squeeze_, t_, as_strided_, ...), sum_to_size, the
matrix transposes H / mH / adjoint, resize_ and PyTorch's small layout queries, against
torch: shapes, strides, offsets, shared storage, values and errors."""

import warnings

import numpy as np
import pytest
import torch
from kernel_helpers import TORCH_DTYPES
from parity_helpers import same

import kael

RNG = np.random.default_rng(17)


def _laid_out(shape, layout: str, dtype=kael.float32):
    """A kael tensor and the equal torch tensor of `shape` (random small integers), laid out
    as named: contiguous, transposed (the last two dims) or sliced (every other column)."""
    base = list(shape)
    if layout == "transposed":
        base[-2], base[-1] = base[-1], base[-2]
    elif layout == "sliced":
        base[-1] *= 2
    t = torch.tensor(RNG.integers(-4, 5, base)).to(TORCH_DTYPES[dtype])
    k = kael.from_dlpack(t.clone())
    if layout == "transposed":
        return k.transpose(-1, -2), t.transpose(-1, -2)
    if layout == "sliced":
        return k[..., ::2], t[..., ::2]
    return k, t


def _same_layout(k: kael.Tensor, t: torch.Tensor) -> None:
    """Shape, strides, offset and values as torch's."""
    assert k.stride() == t.stride() and k.storage_offset() == t.storage_offset()
    same(k, t)


# ---- in-place views ---------------------------------------------------------------------------

IN_PLACE_VIEWS = [
    ("squeeze_", ()),
    ("squeeze_", (1,)),
    ("squeeze_", ((1, 2),)),
    ("unsqueeze_", (0,)),
    ("unsqueeze_", (-1,)),
    ("transpose_", (0, 2)),
    ("swapaxes_", (-1, 0)),
    ("swapdims_", (1, 2)),
    ("as_strided_", ((2, 2), (1, 2))),
    ("as_strided_", ((3,), (2,), 1)),
]


@pytest.mark.parametrize("layout", ["contiguous", "transposed", "sliced"])
@pytest.mark.parametrize(("name", "args"), IN_PLACE_VIEWS, ids=str)
def test_in_place_view_changes_self_and_returns_it(name, args, layout):
    k, t = _laid_out((3, 1, 4), layout)
    storage = k.data_ptr() - k.storage_offset() * k.itemsize
    kept = k.clone()
    got = getattr(k, name)(*args)
    assert got is k
    assert getattr(t, name)(*args) is t
    _same_layout(k, t)
    assert k.data_ptr() - k.storage_offset() * k.itemsize == storage  # the same storage
    same(kept, torch.from_dlpack(kept))  # nothing was written


@pytest.mark.parametrize("shape", [(3, 4), (5,), ()])
def test_t_in_place_transposes_at_most_two_dims(shape):
    k, t = _laid_out(shape, "contiguous") if shape else (kael.tensor(2.0), torch.tensor(2.0))
    assert k.t_() is k
    _same_layout(k, t.t_())


def test_t_in_place_refuses_three_dims():
    k = kael.ones(2, 3, 4)
    with pytest.raises(kael.ValueError, match="<= 2 dimensions, but self is 3D"):
        k.t_()
    assert k.shape == (2, 3, 4)
    with pytest.raises(RuntimeError, match="<= 2 dimensions, but self is 3D"):
        torch.ones(2, 3, 4).t_()


@pytest.mark.parametrize(
    ("name", "args"),
    [("squeeze_", (3,)), ("unsqueeze_", (4,)), ("transpose_", (0, 3)), ("swapaxes_", (-4, 0))],
)
def test_in_place_view_refuses_a_dim_out_of_range(name, args):
    k = kael.ones(2, 1, 3)
    with pytest.raises(kael.IndexError, match="Dimension out of range"):
        getattr(k, name)(*args)
    assert k.shape == (2, 1, 3)
    with pytest.raises(IndexError, match="Dimension out of range"):
        getattr(torch.ones(2, 1, 3), name)(*args)


def test_as_strided_in_place_refuses_a_layout_past_the_storage():
    k = kael.ones(2, 3)
    with pytest.raises(kael.Error, match="needs 40 bytes but storage has 24"):
        k.as_strided_((10,), (1,))
    assert k.shape == (2, 3) and k.stride() == (3, 1)
    with pytest.raises(RuntimeError, match="out of bounds for storage of size 24"):
        torch.ones(2, 3).as_strided_((10,), (1,))


def test_in_place_view_is_seen_by_no_other_handle():
    k = kael.ones(2, 3)
    view = k[:]
    k.t_()
    assert view.shape == (2, 3) and k.shape == (3, 2)


# ---- sum_to_size ----------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [kael.float32, kael.float64, kael.int32, kael.bool], ids=str)
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "sliced"])
@pytest.mark.parametrize("size", [(1, 4), (3, 1), (1, 1), (4,), (1,), (2, 3, 4), ()], ids=str)
def test_sum_to_size_sums_the_broadcast_dims(size, layout, dtype):
    k, t = _laid_out((2, 3, 4), layout, dtype)
    args = (size,) if len(size) != 2 else size  # a tuple or varargs
    same(k.sum_to_size(*args), t.sum_to_size(*args))


def test_sum_to_size_of_the_own_shape_is_self():
    k = kael.ones(2, 3)
    assert k.sum_to_size(2, 3) is k


def test_sum_to_size_of_an_empty_tensor():
    k, t = kael.ones(2, 0), torch.ones(2, 0)
    same(k.sum_to_size(1, 0), t.sum_to_size(1, 0))


@pytest.mark.parametrize("size", [(3, 1), (1, 2, 3), (-1, 3), (0, 3), (2, 2)], ids=str)
def test_sum_to_size_refuses_a_size_not_expandable_to_self(size):
    message = f"size {{{list(size)}}} is not expandable to size {{[2, 3]}}."
    with pytest.raises(kael.ValueError, match=message.replace("[", r"\[").replace("{", r"\{")):
        kael.ones(2, 3).sum_to_size(*size)
    with pytest.raises(RuntimeError, match="is not expandable to size"):
        torch.ones(2, 3).sum_to_size(*size)


def test_sum_to_size_needs_a_size():
    with pytest.raises(kael.TypeError, match="missing 1 required"):
        kael.ones(2).sum_to_size()
    with pytest.raises(kael.TypeError, match="must be an int, got str"):
        kael.ones(2).sum_to_size([2, "a"])


# ---- H, mH, adjoint -----------------------------------------------------------------------


@pytest.mark.parametrize("layout", ["contiguous", "transposed", "sliced"])
def test_H_transposes_a_matrix(layout):
    k, t = _laid_out((3, 4), layout)
    _same_layout(k.H, t.H)


@pytest.mark.parametrize("name", ["mH", "mT"])
@pytest.mark.parametrize("shape", [(3, 4), (2, 3, 4), (2, 0, 3)], ids=str)
def test_batched_transposes_swap_the_last_two_dims(name, shape):
    k, t = _laid_out(shape, "sliced")
    _same_layout(getattr(k, name), getattr(t, name))
    _same_layout(k.adjoint(), t.adjoint())
    _same_layout(kael.adjoint(k), torch.adjoint(t))


@pytest.mark.parametrize("name", ["H", "mH", "adjoint"])
def test_transposes_of_a_scalar_are_itself_with_a_warning(name):
    k = kael.tensor(2.5)
    with pytest.warns(UserWarning, match="deprecated on 0-D tensors"):
        got = k.adjoint() if name == "adjoint" else getattr(k, name)
    assert got is k
    with warnings.catch_warnings(record=True):
        want = (
            torch.tensor(2.5).adjoint() if name == "adjoint" else getattr(torch.tensor(2.5), name)
        )
    same(got, want)


@pytest.mark.parametrize(
    ("name", "shape", "message"),
    [
        ("H", (3,), r"tensor.H is only supported on matrices \(2-D tensors\). Got 1-D tensor."),
        ("H", (2, 3, 4), "Got 3-D tensor. For batches of matrices, consider using tensor.mH"),
        ("mH", (3,), "tensor.mH is only supported on matrices or batches of matrices. Got 1-D"),
        ("adjoint", (3,), r"tensor.adjoint\(\) is only supported on matrices or batches"),
    ],
)
def test_transposes_refuse_a_wrong_rank(name, shape, message):
    def get(x):
        return x.adjoint() if name == "adjoint" else getattr(x, name)

    with pytest.raises(kael.ValueError, match=message):
        get(kael.ones(*shape))
    with pytest.raises(RuntimeError, match=message):
        get(torch.ones(*shape))


# ---- new_empty_strided, layout queries, data -------------------------------------------------


@pytest.mark.parametrize("dtype", [kael.float16, kael.int64, None], ids=str)
@pytest.mark.parametrize(("size", "stride"), [((2, 3), (1, 2)), ((2, 3), (3, 1)), ((0, 4), (4, 1))])
def test_new_empty_strided_has_the_layout_asked_for(size, stride, dtype):
    k, t = kael.ones(2, dtype=kael.float64), torch.ones(2, dtype=torch.float64)
    got = k.new_empty_strided(size, stride, dtype=dtype)
    want = t.new_empty_strided(size, stride, dtype=None if dtype is None else TORCH_DTYPES[dtype])
    assert got.shape == tuple(want.shape) and got.stride() == want.stride()
    assert TORCH_DTYPES[got.dtype] == want.dtype


@pytest.mark.parametrize(
    ("stride", "message"),
    [((1, -2), "overflowed|negative"), ((1,), "dimensionality of sizes")],
    ids=str,
)
def test_new_empty_strided_refuses_bad_strides(stride, message):
    with pytest.raises(kael.ValueError, match=message):
        kael.ones(2).new_empty_strided((2, 3), stride)
    with pytest.raises(RuntimeError):
        torch.ones(2).new_empty_strided((2, 3), stride)


@pytest.mark.parametrize(
    "name", ["is_sparse", "is_sparse_csr", "is_quantized", "is_meta", "is_nested", "is_mkldnn"]
)
def test_layout_queries_are_false_as_for_a_dense_tensor(name):
    assert getattr(kael.ones(2), name) is False
    assert getattr(torch.ones(2), name) is False


def test_layout_is_strided_and_no_tensor_is_an_inference_one():
    assert kael.ones(2).layout is kael.strided
    assert repr(kael.ones(2).layout) == "kael.strided"
    assert torch.ones(2).layout is torch.strided
    assert kael.ones(2).is_inference() is False and torch.ones(2).is_inference() is False


def test_data_is_a_new_handle_over_the_same_storage():
    k, t = _laid_out((3, 4), "transposed")
    d = k.data
    assert d is not k and d.shares_storage(k)
    _same_layout(d, t.data)
    d[0, 0] = 9.0
    t.data[0, 0] = 9.0
    same(k, t)


# ---- resize_ ----------------------------------------------------------------------------------


@pytest.mark.parametrize("size", [(2, 3), (6,), (2, 2), (0,), (3, 0, 2), (1, 1, 1, 1)], ids=str)
def test_resize_within_the_storage_keeps_the_elements(size):
    k, t = kael.arange(6.0).reshape(2, 3), torch.arange(6.0).reshape(2, 3)
    assert k.resize_(*size) is k
    t.resize_(*size)
    _same_layout(k, t)


def test_resize_to_the_same_shape_keeps_the_strides():
    k, t = _laid_out((3, 4), "transposed")
    k.resize_(3, 4)
    _same_layout(k, t.resize_(3, 4))


def test_resize_of_a_view_starts_at_its_offset():
    k, t = kael.arange(12.0), torch.arange(12.0)
    kv, tv = k[3:7], t[3:7]
    kv.resize_(2, 3)
    _same_layout(kv, tv.resize_(2, 3))


def test_resize_to_more_elements_grows_the_shared_storage():
    k, t = kael.arange(6.0), torch.arange(6.0)
    kv, tv = k[2:], t[2:]
    kv.resize_(3, 3)
    tv.resize_(3, 3)
    np.testing.assert_array_equal(kv.numpy().reshape(-1)[:4], tv.numpy().reshape(-1)[:4])
    assert kv.shape == (3, 3) and kv.stride() == (3, 1) and kv.storage_offset() == 2
    kv.fill_(7.0)
    tv.fill_(7.0)
    same(k, t)  # the first view sees the grown storage's writes
    k.resize_(11)
    t.resize_(11)
    same(k, t)


@pytest.mark.parametrize("dtype", [kael.float64, kael.int16, kael.bool], ids=str)
def test_resize_as_takes_the_template_shape(dtype):
    k = kael.ones(4, dtype=dtype)
    t = torch.ones(4, dtype=TORCH_DTYPES[dtype])
    assert k.resize_as_(kael.ones(2, 2)) is k
    _same_layout(k, t.resize_as_(torch.ones(2, 2)))


def test_resize_refuses_a_negative_size():
    k = kael.ones(2, 3)
    with pytest.raises(kael.ValueError, match=r"negative dimension -1: \[-1, 2\]"):
        k.resize_(-1, 2)
    assert k.shape == (2, 3)
    with pytest.raises(RuntimeError):
        torch.ones(2, 3).resize_(-1, 2)


def test_resize_refuses_to_grow_memory_it_does_not_own():
    array = np.ones(3, dtype=np.float32)
    with pytest.raises(kael.Error, match="storage that is not resizable"):
        kael.from_numpy(array).resize_(5)
    with pytest.raises(RuntimeError, match="storage that is not resizable"):
        torch.from_numpy(array).resize_(5)
    same(kael.from_numpy(array).resize_(2), torch.from_numpy(array).resize_(2))


def test_resize_as_refuses_a_non_tensor():
    with pytest.raises(kael.TypeError, match="'the_template'.*must be Tensor, not int"):
        kael.ones(2).resize_as_(3)
    with pytest.raises(TypeError, match="'the_template'.*must be Tensor, not int"):
        torch.ones(2).resize_as_(3)


def test_resize_growth_keeps_exported_views_on_their_own_memory():
    k = kael.arange(1000.0)
    array, shared = k.numpy(), torch.from_dlpack(k)
    k.resize_(100_000)  # a new block; the exported ones keep the old
    others = [kael.full((1000,), 7.0) for _ in range(4)]  # would reuse a freed block
    np.testing.assert_array_equal(array[:3], [0.0, 1.0, 2.0])
    assert shared[:3].tolist() == [0.0, 1.0, 2.0]
    array[:2] = -1.0
    assert all(o[:2].tolist() == [7.0, 7.0] for o in others)
    assert k[:3].tolist() == [0.0, 1.0, 2.0]  # the grown tensor kept the old values


def test_data_setter_makes_self_a_handle_to_the_values_elements():
    k, t = kael.zeros(3), torch.zeros(3)
    kv, tv = kael.arange(6.0).reshape(2, 3), torch.arange(6.0).reshape(2, 3)
    k.data, t.data = kv, tv
    kv[0, 0], tv[0, 0] = 9.0, 9.0  # the same elements, as torch's
    same(k, t)
    with pytest.raises(kael.TypeError, match="not int"):
        k.data = 3


def test_resize_growth_frees_the_old_block_when_nothing_holds_it():
    from kael.runtime.allocator import allocator_for

    k = kael.zeros(100_000)
    old, capacity = k._impl.storage.ptr, k._impl.storage.capacity
    k.resize_(1_000_000)  # never exported: the old block goes back to the allocator's cache
    assert old in allocator_for(k.device)._free[capacity]


def test_zero_dim_tensors_read_as_a_scalar_or_an_int_argument_as_torch():
    def run(lib):
        x = lib.arange(6.0).reshape(2, 3) / 7
        return x.var(dim=1, correction=lib.tensor(0)), x.round(decimals=lib.tensor(2))

    for ours, theirs in zip(run(kael), run(torch)):
        assert ours.tolist() == theirs.tolist()
    with pytest.raises(kael.TypeError, match="'decimals' must be int, not float"):
        kael.ones(2).round(decimals=1.5)
