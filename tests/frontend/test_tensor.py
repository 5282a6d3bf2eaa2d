"""The Tensor handle: validation, queries, element access, conversions and in-place writes."""

import math
import re
import warnings

import numpy as np
import pytest
import torch
from kernel_helpers import TORCH_DTYPES

import kael
from kael.frontend.tensor import Tensor
from kael.runtime.device import CPU
from kael.runtime.dtypes import INT64_MAX, INT64_MIN
from kael.runtime.storage import Storage
from kael.runtime.tensor_impl import TensorImpl

# ---- construction ---------------------------------------------------------------------------


def _impl(nbytes, shape, strides, offset):
    return TensorImpl(Storage(nbytes), shape, strides, offset, kael.float32, CPU)


def test_construction_validates_the_impl_exactly_at_the_limit():
    t = Tensor(_impl(24, (2, 3), (3, 1), 0))
    assert t.shape == (2, 3)


def test_construction_rejects_a_layout_one_element_past_the_storage():
    with pytest.raises(kael.Error, match="needs 28 bytes but storage has 24"):
        Tensor(_impl(24, (2, 3), (3, 1), 1))


def test_construction_rejects_negative_strides():
    with pytest.raises(kael.ValueError, match="negative stride -1"):
        Tensor(_impl(24, (3,), (-1,), 2))


# ---- metadata -------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [kael.float32, kael.float64, kael.int64, kael.bool])
def test_metadata_of_contiguous_and_strided_views_matches_torch(dtype, torch_dtype):
    k, t = kael.zeros(2, 3, 4, dtype=dtype), torch.zeros(2, 3, 4, dtype=torch_dtype(dtype))
    for kv, tv in ((k, t), (k.transpose(0, 2), t.transpose(0, 2)), (k[1, :, 1:], t[1, :, 1:])):
        assert kv.shape == tuple(tv.shape)
        assert kv.size() == tuple(tv.size())
        assert kv.size(-1) == tv.size(-1)
        assert kv.strides() == tv.stride()
        assert kv.stride() == tv.stride()
        assert kv.stride(0) == tv.stride(0)
        assert kv.stride(-1) == tv.stride(-1)
        assert kv.storage_offset() == tv.storage_offset()
        assert kv.ndim == tv.ndim
        assert kv.dim() == tv.dim()
        assert kv.numel() == tv.numel()
        assert kv.nbytes == tv.nbytes
        assert kv.element_size() == tv.element_size()
        assert kv.itemsize == tv.itemsize
        assert kv.is_contiguous() == tv.is_contiguous()
        assert kv.device == kael.device("cpu")
        assert not kv.is_cuda


def test_stride_accepts_the_last_dim_and_rejects_one_past_it():
    t = kael.zeros(2, 3)
    assert t.stride(1) == 1
    assert t.stride(-2) == 3
    with pytest.raises(kael.IndexError, match=r"range of \[-2, 1\], but got 2"):
        t.stride(2)
    with pytest.raises(kael.IndexError, match=r"range of \[-2, 1\], but got -3"):
        t.size(-3)


def test_stride_of_a_0d_tensor_raises_like_torch():
    with pytest.raises(kael.IndexError, match="Dimension specified as 0 but tensor has no dim"):
        kael.scalar_tensor(1.0).stride(0)
    with pytest.raises(kael.IndexError, match="tensor has no dimensions"):
        kael.scalar_tensor(1.0).size(0)


def test_nbytes_counts_elements_not_storage():
    big = kael.zeros(1000)
    assert big[10:12].nbytes == 8


def test_is_same_compares_impls_and_shares_storage_compares_storage():
    a = kael.arange(6)
    b = a
    t = a.view(2, 3).transpose(0, 1)
    c = a.clone()
    assert a.is_same(b)
    assert not a.is_same(t)
    assert a.shares_storage(t)
    assert not a.shares_storage(c)


@pytest.mark.parametrize("shape", [(), (4,), (2, 3), (2, 3, 4)])
def test_T_reverses_all_dims(shape, arange_pair, like_torch):
    k, t = arange_pair(*shape)
    like_torch(k.T, t.permute(tuple(reversed(range(t.ndim)))))
    assert k.T.shares_storage(k)


@pytest.mark.parametrize("shape", [(2, 3), (4, 2, 3)])
def test_mT_transposes_the_last_two_dims(shape, arange_pair, like_torch):
    k, t = arange_pair(*shape)
    like_torch(k.mT, t.mT)


def test_mT_needs_at_least_two_dims():
    with pytest.raises(kael.ValueError, match="Got 1-D tensor"):
        _ = kael.zeros(3).mT


def test_mT_of_a_0d_tensor_is_the_tensor_itself_like_torch():
    # torch 2.13 deprecates mT on 0-d tensors but answers the tensor itself; 1-d is refused.
    k, t = kael.tensor(2.0), torch.tensor(2.0)
    with warnings.catch_warnings():  # torch warns once per process
        warnings.simplefilter("ignore")
        assert t.mT is t
    assert k.mT is k
    assert k.T.shape == () and k.T.item() == 2.0
    with pytest.raises(RuntimeError, match="Got 1-D tensor"):
        _ = torch.zeros(3).mT
    with pytest.raises(kael.ValueError, match=r"^tensor\.mT is only supported on matrices"):
        _ = kael.zeros(3).mT


# ---- element access -------------------------------------------------------------------------


@pytest.mark.parametrize("shape", [(), (1,), (1, 1)])
def test_item_works_for_any_single_element_shape(shape):
    assert kael.full(shape, 2.5).item() == 2.5


@pytest.mark.parametrize("shape", [(0,), (2,), (2, 3)])
def test_item_of_not_exactly_one_element_raises_naming_numel(shape):
    n = math.prod(shape)
    with pytest.raises(kael.ValueError, match=f"a Tensor with {n} elements"):
        kael.zeros(shape).item()


def test_item_returns_the_python_type_of_the_dtype():
    value = kael.tensor([0.1]).item()
    assert type(value) is float and value == torch.tensor([0.1]).item()
    assert type(kael.tensor([INT64_MAX]).item()) is int
    assert kael.tensor([INT64_MAX]).item() == INT64_MAX
    assert kael.tensor(True).item() is True


def test_item_reads_through_the_offset(arange_pair):
    k, t = arange_pair(2, 3)
    assert k[1, 2].item() == t[1, 2].item()


@pytest.mark.parametrize("make", [lambda m: m.arange(6).view(2, 3).T, lambda m: m.zeros(2, 0)])
def test_tolist_matches_torch(make):
    assert make(kael).tolist() == make(torch).tolist()


def test_tolist_of_a_0d_tensor_is_a_number():
    assert kael.tensor(7).tolist() == torch.tensor(7).tolist()


def test_len_is_the_first_dim_and_0d_has_none():
    assert len(kael.zeros(4, 2)) == 4
    with pytest.raises(kael.TypeError, match="len\\(\\) of a 0-d tensor"):
        len(kael.tensor(1.0))


def test_iteration_yields_rows_as_views(arange_pair, like_torch):
    k, t = arange_pair(3, 2)
    rows = list(k)
    assert len(rows) == 3
    for kr, tr in zip(rows, t, strict=True):
        like_torch(kr, tr)
        assert kr.shares_storage(k)
    with pytest.raises(kael.TypeError, match="iteration over a 0-d tensor"):
        iter(kael.tensor(1.0))


def test_bool_float_int_need_exactly_one_element():
    assert bool(kael.tensor([2.0])) is True
    assert bool(kael.tensor(0)) is False
    assert float(kael.tensor([[3]])) == 3.0
    assert int(kael.tensor(-2.7)) == int(torch.tensor(-2.7))
    with pytest.raises(kael.ValueError, match="2 elements is ambiguous"):
        bool(kael.zeros(2))
    with pytest.raises(kael.ValueError, match="2 elements"):
        float(kael.zeros(2))


# ---- conversion -----------------------------------------------------------------------------


def test_same_dtype_to_returns_self():
    t = kael.zeros(3)
    assert t.to(kael.float32) is t
    assert t.to(dtype=kael.float32) is t
    assert t.to("cpu") is t
    assert t.to(kael.device("cpu"), kael.float32) is t
    assert t.to(kael.zeros(1)) is t
    assert t.float() is t
    assert t.cpu() is t


@pytest.mark.parametrize(
    ("src", "dst"),
    [
        (kael.float32, kael.float64),
        (kael.float64, kael.float32),
        (kael.int64, kael.float32),
        (kael.float32, kael.int64),
        (kael.int64, kael.bool),
        (kael.bool, kael.float64),
    ],
)
def test_to_converts_a_strided_tensor_like_torch(src, dst, like_torch, torch_dtype):
    values = [[-2.7, 0.0, 1.5], [3.25, -0.5, 100.0]]
    k = kael.tensor(values, dtype=src).T
    t = torch.tensor(values, dtype=torch_dtype(src)).T
    like_torch(k.to(dst), t.to(torch_dtype(dst)))  # the layout preserved, as torch's


def test_to_int64_saturates_and_maps_nan_to_zero():
    # The book's rule; PyTorch's result here is platform-dependent.
    k = kael.tensor([1e30, -1e30, math.inf, -math.inf, math.nan, -2.7, 2.7], dtype=kael.float64)
    assert k.long().tolist() == [INT64_MAX, INT64_MIN, INT64_MAX, INT64_MIN, 0, -2, 2]


def test_to_bool_maps_nonzero_and_nan_to_true():
    values = [0.0, -0.0, 2.5, math.nan, -math.inf]
    assert kael.tensor(values).bool().tolist() == torch.tensor(values).bool().tolist()


def test_conversion_methods_give_their_dtype():
    t = kael.tensor([1.5, -1.5])
    assert t.double().dtype is kael.float64
    assert t.long().dtype is kael.int64
    assert t.bool().dtype is kael.bool
    assert t.long().float().dtype is kael.float32


def test_to_rejects_an_argument_that_is_no_dtype_device_or_tensor():
    with pytest.raises(kael.TypeError, match="got int"):
        kael.zeros(1).to(3)


def test_to_an_unknown_device_raises():
    with pytest.raises(kael.ValueError, match="unknown device 'gpu'"):
        kael.zeros(1).to("gpu")


@pytest.mark.skipif(kael.cuda.is_available(), reason="checks the no-GPU error")
def test_cuda_without_a_gpu_raises_a_clear_error():
    with pytest.raises(kael.Error, match="CUDA is not available"):
        kael.zeros(2).cuda()
    with pytest.raises(kael.Error, match="CUDA is not available"):
        kael.zeros(0).to("cuda:0")


def test_clone_has_offset_zero_and_tight_storage(arange_pair, like_torch):
    k, t = arange_pair(10, 10)
    view = k[2:5, 1::3]
    c = view.clone()
    like_torch(c, t[2:5, 1::3].contiguous())
    assert c.storage_offset() == 0
    assert c._impl.storage.nbytes == c.numel() * c.element_size()
    assert not c.shares_storage(k)


def test_clone_of_a_contiguous_tensor_is_independent():
    a = kael.zeros(3)
    c = a.clone()
    c[0] = 7.0
    assert a.tolist() == [0.0, 0.0, 0.0]


def test_contiguous_returns_self_only_when_contiguous(arange_pair, like_torch):
    k, t = arange_pair(3, 4)
    assert k.contiguous() is k
    c = k.T.contiguous()
    like_torch(c, t.T.contiguous())
    assert not c.shares_storage(k)


def test_detach_is_a_new_tensor_over_the_same_elements(arange_pair, like_torch):
    k, t = arange_pair(3, 4)
    d = k[1:].detach()
    like_torch(d, t[1:].detach())
    assert d.shares_storage(k)
    assert not d.is_same(k[1:])


# ---- in-place writes ------------------------------------------------------------------------


def test_copy_converts_dtype_and_broadcasts_like_torch(like_torch):
    k, t = kael.zeros(2, 3), torch.zeros(2, 3)
    k.copy_(kael.tensor([1.7, -2.5, 3.0], dtype=kael.float64))
    t.copy_(torch.tensor([1.7, -2.5, 3.0], dtype=torch.float64))
    like_torch(k, t)


def test_copy_into_a_strided_destination_like_torch(arange_pair, like_torch):
    k, t = arange_pair(4, 5)
    k[:, 1::2].copy_(kael.tensor([[-1], [-2], [-3], [-4]]))
    t[:, 1::2].copy_(torch.tensor([[-1], [-2], [-3], [-4]]))
    like_torch(k, t)


def test_copy_into_an_overlapping_destination_raises():
    with pytest.raises(kael.Error, match="more than one element of the written-to tensor"):
        kael.zeros(1).expand(3).copy_(kael.ones(3))


def test_copy_into_an_expanded_size_one_dim_is_allowed():
    t = kael.zeros(1, 3).expand(1, 3)
    t.copy_(kael.ones(3))
    assert t.tolist() == [[1.0, 1.0, 1.0]]


def test_copy_from_an_overlapping_source_reads_before_writing():
    a = kael.arange(5)
    a[1:].copy_(a[:-1])
    assert a.tolist() == [0, 0, 1, 2, 3]


def test_copy_from_the_same_layout_of_the_same_storage_keeps_values():
    a = kael.arange(4)
    a.copy_(a.detach())
    assert a.tolist() == [0, 1, 2, 3]


def test_copy_of_an_unbroadcastable_shape_raises():
    with pytest.raises(kael.ValueError, match=r"expanded size of the tensor \(2\) must match"):
        kael.zeros(2, 2).copy_(kael.zeros(3))


def test_copy_needs_a_tensor():
    with pytest.raises(kael.TypeError, match="copy_ expects a Tensor, got list"):
        kael.zeros(2).copy_([1, 2])


def test_in_place_writes_bump_the_shared_storage_version():
    a = kael.zeros(4)
    view = a[1:]
    before = a._impl.storage.version
    view.copy_(kael.ones(3))
    a.fill_(2.0)
    a.zero_()
    view[0] = 5.0
    assert a._impl.storage.version == before + 4
    assert view._impl.storage.version == a._impl.storage.version


def test_version_counts_in_place_writes_shared_by_views_as_torchs():
    import torch

    for lib in (kael, torch):
        a = lib.zeros(4)
        view = a[1:]
        start = a._version
        view.add_(1)
        a.mul_(2)
        assert (a._version - start, view._version - start) == (2, 2), lib.__name__
        assert (a + 1)._version == 0  # a new tensor starts at 0


@pytest.mark.parametrize(
    ("dtype", "value"),
    [(kael.int64, 2.7), (kael.int64, -2.7), (kael.bool, 0.5), (kael.float32, 1 / 3)],
)
def test_fill_converts_the_value_like_torch(dtype, value, torch_dtype):
    k = kael.zeros(3, dtype=dtype).fill_(value)
    t = torch.zeros(3, dtype=torch_dtype(dtype)).fill_(value)
    assert k.tolist() == t.tolist()


def test_fill_of_an_expanded_tensor_is_allowed_like_torch():
    base = kael.zeros(1)
    base.expand(3).fill_(4.0)
    assert base.tolist() == [4.0]


def test_fill_takes_a_0d_tensor_but_not_a_1d_one():
    assert kael.zeros(2).fill_(kael.tensor(3.0)).tolist() == [3.0, 3.0]
    with pytest.raises(kael.ValueError, match="0-dim value tensor, got 1 dimensions"):
        kael.zeros(2).fill_(kael.tensor([3.0]))


def test_zero_clears_every_element():
    assert kael.ones(2, 2).zero_().tolist() == [[0.0, 0.0], [0.0, 0.0]]


def test_fill_rejects_a_non_number():
    with pytest.raises(kael.TypeError, match="got str"):
        kael.zeros(2).fill_("x")


def test_numpy_values_equal_torch_after_writes(arange_pair):
    k, t = arange_pair(3, 3, dtype=kael.float64)
    k.T[0] = 9.0
    t.T[0] = 9.0
    np.testing.assert_array_equal(k.numpy(), t.numpy())


# ---- rank and stride limits ------------------------------------------------------------------

# 64 dims, 16 of them of size 2 (reversed, so no two merge into one contiguous run).
SHAPE_64 = tuple(2 if d % 4 == 0 else 1 for d in range(64))


def _pair_64d():
    n = int(np.prod(SHAPE_64))
    k, t = kael.arange(n, dtype=kael.float32).view(SHAPE_64), torch.arange(float(n)).view(SHAPE_64)
    order = tuple(reversed(range(64)))
    return k.permute(*order), t.permute(*order)


def test_64_dims_work_in_every_method(like_torch):
    k, t = _pair_64d()
    assert repr(k).startswith("tensor(" + "[" * 64) and "shape=[1, 1, 1, 2," in repr(k)
    assert k.tolist() == t.tolist()
    like_torch(k, t)
    # (kael's results are contiguous; torch's keep the permuted layout: values compared.)
    np.testing.assert_array_equal(k.clone().numpy(), t.clone().numpy())
    np.testing.assert_array_equal((k + 1).numpy(), (t + 1).numpy())
    np.testing.assert_array_equal(k.sum(dim=63).numpy(), t.sum(dim=63).numpy())
    np.testing.assert_array_equal(k[..., 1].numpy(), t[..., 1].numpy())
    np.testing.assert_array_equal(k[k > 3].numpy(), t[t > 3].numpy())
    one = kael.full((1,) * 64, 2.5)
    assert one.item() == 2.5 and one.numpy().ndim == 64
    assert kael.from_numpy(np.zeros((1,) * 64)).ndim == 64


RANK_65_PATHS = {
    "zeros": lambda x: kael.zeros((1,) * 65),
    "empty varargs": lambda x: kael.empty(*(1,) * 65),
    "full": lambda x: kael.full((1,) * 65, 1.0),
    "rand": lambda x: kael.rand((1,) * 65),
    "view": lambda x: x.view((1,) * 65),
    "reshape": lambda x: x.reshape((1,) * 65),
    "unsqueeze": lambda x: x.unsqueeze(0),
    "None index": lambda x: x[None],
    "expand": lambda x: x.expand((1,) * 65),
    "as_strided": lambda x: x.as_strided((1,) * 65, (1,) * 65),
    "unflatten": lambda x: x.unflatten(0, (1, 1)),
    "advanced index": lambda x: x[kael.zeros(1, 1, dtype=kael.int64)],
    "broadcast": lambda x: x + kael.zeros((1,) * 65),
}


@pytest.mark.parametrize("path", list(RANK_65_PATHS))
def test_65_dims_are_refused_on_every_path(path):
    x = kael.zeros((1,) * 64)
    with pytest.raises(kael.ValueError, match="^a tensor can have at most 64 dimensions, got 65$"):
        RANK_65_PATHS[path](x)


# Valid layouts with a stride beyond any byte stride NumPy can hold, on dims that never step.
NEVER_STEPPING = [
    ((2, 0), (2**61, 1)),
    ((2, 0), (INT64_MAX, 1)),
    ((0,), (INT64_MAX,)),
    ((1, 2), (2**62, 1)),
    ((1, 2), (INT64_MAX, 1)),
    ((2, 1), (1, INT64_MAX)),
]


@pytest.mark.parametrize(("size", "stride"), NEVER_STEPPING, ids=repr)
def test_huge_strides_on_dims_that_never_step_convert_and_print(size, stride):
    # PyTorch accepts these layouts; every method works on them, as on any valid tensor.
    k = kael.arange(4.0).as_strided(size, stride)
    t = torch.arange(4.0).as_strided(size, stride)
    assert k.tolist() == t.tolist()
    np.testing.assert_array_equal(k.numpy(), t.numpy())
    np.testing.assert_array_equal(np.from_dlpack(k), t.numpy())
    assert k.numpy().shape == size
    assert "shape=[" in repr(k)
    assert k.clone().tolist() == t.clone().tolist()
    assert (k + 1).tolist() == (t + 1).tolist()


def test_methods_taking_another_tensor_refuse_a_non_tensor_naming_it():
    x = kael.zeros(2)
    for name in ("is_same", "shares_storage", "expand_as"):
        with pytest.raises(
            kael.TypeError, match=rf"^{name}\(\): other must be a Tensor, got list$"
        ):
            getattr(x, name)([1, 2])


@pytest.mark.parametrize(
    ("call", "name"),
    [
        (lambda x: x.add_(), "Tensor.add_"),
        (lambda x: x.mul_(1, 2), "Tensor.mul_"),
        (lambda x: x.__radd__(), "Tensor.__radd__"),
        (lambda x: x.tril_(0, 1), "Tensor.tril_"),
        (lambda x: kael.triu(x, 0, 1), "triu"),
        (lambda x: kael.add(x), "add"),
    ],
    ids=["missing", "extra", "reflected", "triangle in place", "triangle", "binary"],
)
def test_argument_count_errors_name_the_method(call, name):
    with pytest.raises(TypeError, match=rf"^{re.escape(name)}\(\) "):
        call(kael.zeros(2, 2))


# ---- dtype conversions and views --------------------------------------------------------------

CONVERSIONS = [
    "float",
    "double",
    "half",
    "bfloat16",
    "long",
    "int",
    "short",
    "char",
    "byte",
    "bool",
]


@pytest.mark.parametrize("method", CONVERSIONS)
def test_conversion_methods_match_torch(method):
    values = [1.5, -2.25, 0.0, 300.0, -0.75]
    k = getattr(kael.tensor(values), method)()
    t = getattr(torch.tensor(values), method)()
    assert str(t.dtype) == f"torch.{k.dtype}"
    assert k.float().tolist() == t.float().tolist()


@pytest.mark.parametrize("dtype", list(TORCH_DTYPES), ids=str)
def test_type_names_and_converts_as_torch(dtype):
    k, t = kael.zeros(2, dtype=dtype), torch.zeros(2, dtype=TORCH_DTYPES[dtype])
    assert k.type() == t.type().replace("torch.", "kael.")
    assert k.is_floating_point() == t.is_floating_point()
    assert kael.zeros(2).type(dtype).dtype is dtype
    assert kael.zeros(2).type(k.type()).dtype is dtype


def test_type_refuses_an_unknown_name():
    with pytest.raises(kael.TypeError, match="invalid type: 'kael.QuadTensor'"):
        kael.zeros(2).type("kael.QuadTensor")


@pytest.mark.parametrize(
    ("src", "dst"),
    [
        (kael.float32, kael.int32),
        (kael.float32, kael.uint8),
        (kael.float32, kael.float16),
        (kael.int16, kael.bfloat16),
        (kael.uint8, kael.int32),
        (kael.float64, kael.int16),
        (kael.int8, kael.bool),
    ],
    ids=str,
)
def test_view_dtype_reinterprets_bytes_as_torch(src, dst):
    t = torch.arange(24, dtype=TORCH_DTYPES[src]).view(2, 12)
    k = kael.from_dlpack(t.clone())
    for key in ((), (slice(None), slice(4, None))):
        kv, tv = k[key].view(dst), t[key].view(TORCH_DTYPES[dst])
        assert kv.shape == tuple(tv.shape)
        assert kv.strides() == tv.stride()
        assert kv.storage_offset() == tv.storage_offset()
        assert kv.float().tolist() == tv.float().tolist()


@pytest.mark.parametrize(
    ("make", "dtype", "message"),
    [
        (lambda L: L.zeros((), dtype=L.uint8), "int32", "dim\\(\\) cannot be 0"),
        (lambda L: L.zeros(4, 3, dtype=L.uint8).T, "int16", "stride\\(-1\\) must be 1"),
        (lambda L: L.zeros(3, dtype=L.uint8), "int16", "size\\(-1\\) must be divisible"),
        (lambda L: L.zeros(9, dtype=L.uint8)[1:5], "int32", "storage_offset"),
        (lambda L: L.zeros(3, 6, dtype=L.uint8)[:, :4], "int32", "stride\\(0\\)"),
    ],
)
def test_view_dtype_refuses_layouts_torch_refuses(make, dtype, message):
    with pytest.raises(RuntimeError):
        make(torch).view(getattr(torch, dtype))
    with pytest.raises(kael.ValueError, match=message):
        make(kael).view(getattr(kael, dtype))


# ---- queries, real-dtype complex views, type_as, fill_diagonal_ ----------------------------

QUERY_DTYPES = [
    kael.float32,
    kael.float64,
    kael.int64,
    kael.bool,
    kael.float16,
    kael.uint8,
    kael.int8,
]


def _query_pair(shape, dtype, layout="contiguous"):
    base = shape
    if layout == "transposed" and len(shape) >= 2:
        base = (*shape[:-2], shape[-1], shape[-2])
    elif layout == "sliced" and shape:
        base = (*shape[:-1], 2 * shape[-1])
    t = torch.arange(int(np.prod(base))).reshape(base)
    t = t.to(TORCH_DTYPES[dtype])
    k = kael.from_dlpack(t.clone())
    if layout == "transposed" and len(shape) >= 2:
        return k.mT, t.mT
    if layout == "sliced" and shape:
        return k[..., ::2], t[..., ::2]
    return k, t


@pytest.mark.parametrize("layout", ["contiguous", "transposed", "sliced"])
@pytest.mark.parametrize("shape", [(2, 3), (), (0, 4), (2, 1, 3)], ids=str)
@pytest.mark.parametrize("dtype", QUERY_DTYPES, ids=str)
def test_tensor_queries_answer_as_torch(dtype, shape, layout):
    k, t = _query_pair(shape, dtype, layout)
    for name in (
        "nelement",
        "ndimension",
        "is_signed",
        "is_complex",
        "get_device",
        "is_conj",
        "is_neg",
    ):
        assert getattr(k, name)() == getattr(t, name)(), name
    assert k.is_cpu is t.is_cpu is True
    assert k.is_same_size(k.clone()) and not k.is_same_size(kael.ones(7))


@pytest.mark.parametrize("layout", ["contiguous", "transposed", "sliced"])
@pytest.mark.parametrize("dtype", QUERY_DTYPES, ids=str)
def test_real_conj_and_resolves_are_the_tensor_itself(dtype, layout):
    k, t = _query_pair((2, 3), dtype, layout)
    for name in ("conj", "resolve_conj", "resolve_neg"):
        assert getattr(k, name)() is k and getattr(t, name)() is t
    assert k.real is k and t.real is t
    np.testing.assert_array_equal(k.real.numpy(), t.real.numpy())


@pytest.mark.parametrize("dtype", QUERY_DTYPES, ids=str)
def test_imag_of_a_real_tensor_is_refused_as_torch(dtype):
    k, t = _query_pair((2,), dtype)
    with pytest.raises(RuntimeError, match="imag is not implemented"):
        _ = t.imag
    with pytest.raises(kael.TypeError, match=f"non-complex dtypes, got {dtype}"):
        _ = k.imag


@pytest.mark.parametrize("value", [[0.0], [[2]], [[[float("nan")]]], -0.0, True, 0], ids=str)
def test_is_nonzero_of_one_element_matches_torch(value):
    assert kael.tensor(value).is_nonzero() == torch.tensor(value).is_nonzero()


@pytest.mark.parametrize(
    "shape, message", [((0,), "no values"), ((2, 3), r"more than one value \(6 elements\)")]
)
def test_is_nonzero_refuses_any_other_count(shape, message):
    with pytest.raises(RuntimeError):
        torch.ones(shape).is_nonzero()
    with pytest.raises(kael.ValueError, match=message):
        kael.ones(shape).is_nonzero()


@pytest.mark.parametrize("target", QUERY_DTYPES, ids=str)
@pytest.mark.parametrize("dtype", [kael.float32, kael.int64, kael.bool, kael.float16], ids=str)
def test_type_as_converts_to_the_others_dtype(dtype, target):
    k, t = _query_pair((2, 3), dtype, "transposed")
    ko, to = _query_pair((1,), target)
    got, expected = k.type_as(ko), t.type_as(to)
    assert TORCH_DTYPES[got.dtype] == expected.dtype and got.shape == tuple(expected.shape)
    np.testing.assert_array_equal(got.numpy(), expected.numpy())
    assert (got is k) == (dtype is target)


def test_is_same_size_and_type_as_refuse_a_non_tensor():
    with pytest.raises(kael.TypeError, match="type_as\\(\\): other must be a Tensor, got int"):
        kael.ones(2).type_as(3)
    with pytest.raises(
        kael.TypeError, match="is_same_size\\(\\): other must be a Tensor, got tuple"
    ):
        kael.ones(2).is_same_size((2,))


FILL_CASES = [
    ((5, 3), False, "contiguous"),
    ((3, 5), True, "contiguous"),
    ((7, 3), True, "contiguous"),
    ((7, 3), False, "contiguous"),
    ((11, 2), True, "contiguous"),
    ((6, 3), True, "stepped"),
    ((3, 6), True, "transposed"),
    ((4, 4), True, "transposed"),
    ((3, 3, 3), False, "contiguous"),
    ((2, 2, 2, 2), True, "contiguous"),
    ((0, 3), True, "contiguous"),
    ((5, 0), True, "contiguous"),
    ((1, 1), False, "contiguous"),
]


def _fill_pair(shape, dtype, layout):
    if layout == "transposed":
        k, t = (
            kael.zeros(shape[::-1], dtype=dtype),
            torch.zeros(shape[::-1], dtype=TORCH_DTYPES[dtype]),
        )
        return k.mT, t.mT
    if layout == "stepped":
        wide = (shape[0], 2 * shape[1])
        k, t = kael.zeros(wide, dtype=dtype), torch.zeros(wide, dtype=TORCH_DTYPES[dtype])
        return k[:, ::2], t[:, ::2]
    return kael.zeros(shape, dtype=dtype), torch.zeros(shape, dtype=TORCH_DTYPES[dtype])


@pytest.mark.parametrize("value", [2, 2.7, float("nan"), True], ids=str)
@pytest.mark.parametrize(
    "dtype", [kael.float32, kael.float64, kael.int64, kael.bool, kael.float16], ids=str
)
@pytest.mark.parametrize("shape, wrap, layout", FILL_CASES, ids=str)
def test_fill_diagonal_matches_torch(shape, wrap, layout, dtype, value):
    if value != value and not dtype.is_floating_point:
        value = -3
    k, t = _fill_pair(shape, dtype, layout)
    assert k.fill_diagonal_(value, wrap=wrap) is k
    t.fill_diagonal_(value, wrap=wrap)
    assert TORCH_DTYPES[k.dtype] == t.dtype and k.shape == tuple(t.shape)
    np.testing.assert_array_equal(k.numpy(), t.numpy())


def test_fill_diagonal_writes_through_a_view_into_its_base():
    base = kael.zeros(4, 8)
    base[:, 2:6].fill_diagonal_(1.0)
    expected = torch.zeros(4, 8)
    expected[:, 2:6].fill_diagonal_(1.0)
    np.testing.assert_array_equal(base.numpy(), expected.numpy())


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda x: x.reshape(-1).fill_diagonal_(1), "dimensions must larger than 1, got 1"),
        (lambda x: kael.tensor(0.0).fill_diagonal_(1), "dimensions must larger than 1, got 0"),
        (
            lambda x: x.reshape(2, 3, 2).fill_diagonal_(1),
            r"all dimensions of input must be of equal length, got shape \[2, 3, 2\]",
        ),
    ],
)
def test_fill_diagonal_refuses_what_torch_refuses(call, message):
    with pytest.raises(RuntimeError):
        call(torch.zeros(12))
    with pytest.raises(kael.ValueError, match=message):
        call(kael.zeros(12))


def test_fill_diagonal_takes_a_number_or_a_0d_tensor_only():
    expected = torch.zeros(3, 3).fill_diagonal_(torch.tensor(2.5))
    np.testing.assert_array_equal(
        kael.zeros(3, 3).fill_diagonal_(kael.tensor(2.5)).numpy(), expected.numpy()
    )
    with pytest.raises(TypeError):
        torch.zeros(3, 3).fill_diagonal_(torch.tensor([1.0]))
    with pytest.raises(kael.TypeError, match="fill_value' must be a number, not Tensor"):
        kael.zeros(3, 3).fill_diagonal_(kael.tensor([1.0]))
    with pytest.raises(kael.TypeError, match="fill_value' must be a number, not str"):
        kael.zeros(3, 3).fill_diagonal_("1")
    with pytest.raises(kael.TypeError, match="'wrap' must be bool, not int"):
        kael.zeros(3, 3).fill_diagonal_(1, wrap=1)


def test_deepcopy_copies_storage_once_so_views_stay_views():
    import copy

    base = kael.arange(6.0).reshape(2, 3)
    row = base[1]
    base_copy, row_copy = copy.deepcopy([base, row])
    base_copy[1, 0] = 100.0
    assert row_copy[0].item() == 100.0 and base[1, 0].item() == 3.0
    assert row_copy.storage_offset() == 3 and row_copy.data_ptr() != row.data_ptr()


@pytest.mark.parametrize("dtype", [kael.float32, kael.bfloat16, kael.int8, kael.bool])
def test_pickle_round_trips_values_dtype_and_shape(dtype):
    import pickle

    t = kael.arange(6).reshape(2, 3).t().to(dtype)
    back = pickle.loads(pickle.dumps(t))
    assert back.dtype is dtype and back.shape == (3, 2)
    np.testing.assert_array_equal(back.to(kael.float32).numpy(), t.to(kael.float32).numpy())
    assert pickle.loads(pickle.dumps(kael.empty(0, 4))).shape == (0, 4)


@pytest.mark.parametrize(
    ("dtype", "value"),
    [(kael.int16, 70000), (kael.int8, 1e30), (kael.float16, 1e30), (kael.uint8, -3)],
)
def test_fill_with_a_0d_tensor_converts_as_a_copy_does_as_torch(dtype, value):
    expected = torch.zeros(2, dtype=TORCH_DTYPES[dtype]).fill_(torch.tensor(value))
    got = kael.zeros(2, dtype=dtype).fill_(kael.tensor(value))
    assert got.tolist() == expected.tolist()


def test_to_reads_torchs_positional_copy_flag():
    x = kael.ones(2)
    assert x.to(kael.float32) is x
    assert x.to(kael.float32, False, True) is not x
    assert x.to("cpu", kael.float32, False, True) is not x and x.to(copy=True) is not x
    with pytest.raises(kael.TypeError, match="at most two bools"):
        x.to(kael.float32, False, True, True)


@pytest.mark.parametrize("data", [b"\x41" * (1 << 20), b"", b"\x00" * 7])
def test_unpickling_refuses_bytes_that_do_not_fill_the_shape(data):
    from kael.frontend.tensor import _unpickle

    with pytest.raises(kael.ValueError, match=f"needs 8 bytes, got {len(data)}"):
        _unpickle(kael.Tensor, data, "float32", (2,), "cpu")
    with pytest.raises(kael.TypeError, match="no Tensor class"):
        _unpickle(dict, b"\x00" * 8, "float32", (2,), "cpu")


def test_an_empty_tensor_with_huge_dims_prints_without_numpy():
    assert repr(kael.empty(2**61, 0)).startswith("tensor([], shape=[2305843009213693952, 0]")


# ---- Python's number protocols: __index__ and __format__ ---------------------------------------


@pytest.mark.parametrize("make", [lambda L: L.tensor(3), lambda L: L.tensor([3]),
                                  lambda L: L.tensor([[3]], dtype=L.uint8), lambda L: L.tensor(True)])  # fmt: skip
def test_one_integer_element_is_an_index(make):
    assert list(range(make(kael))) == list(range(make(torch)))
    assert [10, 20, 30, 40][make(kael)] == [10, 20, 30, 40][make(torch)]


@pytest.mark.parametrize("make", [lambda L: L.tensor(3.0), lambda L: L.tensor([1, 2])])
def test_floats_and_many_elements_are_no_index(make):
    with pytest.raises(TypeError, match="only integer tensors of a single element"):
        range(make(torch))
    with pytest.raises(kael.TypeError, match="only integer tensors of a single element"):
        range(make(kael))


def test_a_0d_tensor_formats_as_its_number():
    for spec in (".4f", "", "e", ">10.2f"):
        assert format(kael.tensor(0.12345), spec) == format(torch.tensor(0.12345), spec)
    assert f"{kael.tensor(7)}" == "7" and f"{kael.tensor(7):03d}" == "007"
    assert f"{kael.tensor([1.0, 2.0])}" == str(kael.tensor([1.0, 2.0]))
    with pytest.raises(kael.TypeError, match="unsupported format string '.3f'"):
        f"{kael.tensor([1.0, 2.0]):.3f}"


def test_in_asks_whether_any_element_equals_as_torch():
    """`5.0 in t` iterated over rows and asked bool() of a row: an error."""
    t, r = kael.arange(12.0).view(3, 4), torch.arange(12.0).view(3, 4)
    for element in (5.0, 13, True):
        assert (element in t) == (element in r)
    assert kael.tensor(5.0) in t and kael.tensor([[0.0], [99.0], [99.0]]) in t
    with pytest.raises(kael.TypeError, match="only supports Tensor or scalar"):
        "a" in t  # noqa: B015  (the `in` is the test)


@pytest.mark.parametrize("shape", [(), (0,), (2, 3), (4, 1, 5)])
def test_shape_and_size_are_a_size_as_torchs(shape):
    k, t = kael.zeros(shape), torch.zeros(shape)
    for got, want in ((k.shape, t.shape), (k.size(), t.size())):
        assert isinstance(got, kael.Size) and isinstance(got, tuple)
        assert got == tuple(want) and got.numel() == want.numel()
        assert repr(got) == repr(want).replace("torch", "kael")
    assert k.shape is kael.zeros(shape).shape  # one Size a shape, not one a read
    if shape:
        assert k.size(-1) == t.size(-1) and type(k.size(0)) is int


def test_size_takes_integers_as_torch_size_and_repeats_as_a_size():
    k, t = (
        kael.Size([np.int64(3), kael.tensor(2), True]),
        torch.Size([np.int64(3), torch.tensor(2), True]),
    )
    assert k == tuple(t) and type(k[0]) is int
    assert isinstance(kael.ones(2, 3).shape * 2, kael.Size) and 2 * kael.Size([1]) == (1, 1)
    for bad in ([2.5], ["a"]):
        with pytest.raises(TypeError):
            torch.Size(bad)
        with pytest.raises(kael.TypeError, match=r"iterable of 'int' \(item 0 is"):
            kael.Size(bad)


def test_a_size_joined_with_a_tuple_is_a_size_as_torchs():
    for lib in (torch, kael):
        shape = lib.ones(2, 3).shape
        for joined in (shape + (1,), (1,) + shape, shape + shape):
            assert type(joined) is lib.Size
        assert shape + (4,) == (2, 3, 4) and (4,) + shape == (4, 2, 3)
    with pytest.raises(TypeError):
        kael.ones(2).shape + [1]


def test_dtypes_answer_torchs_dtype_questions():
    for name in ("int8", "uint8", "bool", "float32", "complex64", "int64"):
        k, t = getattr(kael, name), getattr(torch, name)
        assert k.is_signed == t.is_signed, name
    for name, real in (("float32", "complex64"), ("float64", "complex128")):
        assert getattr(kael, name).to_complex() is getattr(kael, real)
        assert getattr(kael, real).to_real() is getattr(kael, name)


def test_numpy_force_and_torch_type_names_as_a_port_passes_them():
    x = kael.ones(2)
    assert x.numpy(force=True).tolist() == [1.0, 1.0]
    assert x.type("torch.LongTensor").dtype is kael.int64
    assert x.type("kael.DoubleTensor").dtype is kael.float64
    with pytest.raises(kael.TypeError, match="invalid type: 'torch.NoTensor'"):
        x.type("torch.NoTensor")


def test_the_strided_layout_pickles_as_itself():
    import copy
    import pickle

    assert pickle.loads(pickle.dumps(kael.strided)) is kael.strided
    assert copy.deepcopy(kael.strided) is kael.strided


@pytest.mark.parametrize(
    "key", [slice(1, None), slice(None, -1), slice(None, None, -1), slice(5, 9)]
)
def test_a_slice_of_a_size_is_a_size_as_torchs(key):
    k, t = kael.ones(2, 3, 4).shape[key], torch.ones(2, 3, 4).shape[key]
    assert isinstance(k, kael.Size) and k == tuple(t) and k.numel() == t.numel()
    assert type(kael.ones(2, 3).shape[1]) is int  # an item stays an int
