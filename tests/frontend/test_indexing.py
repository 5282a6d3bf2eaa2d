"""Basic indexing gives PyTorch's views; assignment writes through them like PyTorch."""

import math

import numpy as np
import pytest
import torch
from kernel_helpers import TORCH_DTYPES

import kael

KEYS = [
    0,
    -1,
    (1, 2),
    (-2, -1, -4),
    slice(None),
    slice(1, None),
    slice(None, None, 2),
    (slice(None), slice(1, 3)),
    (slice(None), slice(None, None, 2), slice(1, None, 3)),
    (slice(5, None),),
    (slice(None), slice(-10, 10)),
    (slice(None), slice(2, 1)),
    None,
    (None, 0),
    (slice(None), None),
    (Ellipsis, None),
    (0, Ellipsis, 1),
    (Ellipsis, slice(None, None, 3)),
    (None, Ellipsis, None, 1, None),
    (),
    Ellipsis,
    (1, slice(None), None, slice(2, 4)),
]


@pytest.mark.parametrize("key", KEYS, ids=[repr(k) for k in KEYS])
def test_getitem_gives_torch_view(key, arange_pair, like_torch):
    k, t = arange_pair(2, 3, 4)
    result = k[key]
    like_torch(result, t[key])
    assert result.shares_storage(k)


@pytest.mark.parametrize("key", [(), None, Ellipsis])
def test_getitem_of_a_0d_tensor(key, like_torch):
    like_torch(kael.tensor(5)[key], torch.tensor(5)[key])


def test_getitem_of_a_view_composes_offsets(arange_pair, like_torch):
    k, t = arange_pair(4, 5)
    like_torch(k[1:, ::2][1:, 1], t[1:, ::2][1:, 1])
    like_torch(k.T[2:][:, 1:3], t.T[2:][:, 1:3])


def test_integer_index_accepts_the_ends_of_the_range_and_nothing_beyond():
    k = kael.zeros(3, 2)
    k[2]
    k[-3]
    with pytest.raises(
        kael.IndexError, match="index 3 is out of bounds for dimension 0 with size 3"
    ):
        k[3]
    with pytest.raises(
        kael.IndexError, match="index -3 is out of bounds for dimension 1 with size 2"
    ):
        k[0, -3]


@pytest.mark.parametrize("places", [[4], [0, -5], [[1], [9]]])
def test_an_out_of_bounds_index_tensor_raises_one_error_chained_to_none(places):
    """x[index] tries the rows' gather first; its refusal must not show beneath the error
    the full indexing path raises (one traceback, as PyTorch gives)."""
    x = kael.zeros(4, 3)
    bad = [v for v in np.ravel(places) if not -4 <= v < 4][0]
    with pytest.raises(kael.IndexError, match=f"index {bad} is out of bounds") as caught:
        x[kael.tensor(places)]
    assert caught.value.__context__ is None
    np.testing.assert_array_equal(x[kael.tensor([-1, 0])].numpy(), np.zeros((2, 3)))


def test_integer_index_accepts_numpy_integers(like_torch, arange_pair):
    k, t = arange_pair(3, 2)
    like_torch(k[np.int64(1)], t[1])


@pytest.mark.parametrize("step", [0, -1])
def test_slice_step_must_be_positive(step):
    with pytest.raises(kael.ValueError, match="step must be greater than zero"):
        kael.zeros(3)[::step]


def test_slice_bounds_must_be_integers():
    with pytest.raises(kael.TypeError, match="slice indices must be integers or None, got float"):
        kael.zeros(3)[0.5:]


def test_too_many_indices_raise():
    kael.zeros(2, 2)[0, 0]
    with pytest.raises(kael.IndexError, match="too many indices for tensor of dimension 2"):
        kael.zeros(2, 2)[0, 0, 0]
    with pytest.raises(kael.IndexError, match="too many indices for tensor of dimension 0"):
        kael.tensor(1.0)[0]


def test_two_ellipses_raise():
    with pytest.raises(kael.IndexError, match="single ellipsis"):
        kael.zeros(2, 2)[..., ...]


@pytest.mark.parametrize(
    ("key", "torch_key"),
    [
        (kael.tensor([0]), torch.tensor([0])),
        (np.array([0]), np.array([0])),
        ([0, 1], [0, 1]),
        (True, True),
        ((0, kael.tensor([1])), (0, torch.tensor([1]))),
    ],
    ids=["tensor", "ndarray", "list", "bool", "tensor in tuple"],
)
def test_tensor_like_keys_gather_a_copy(key, torch_key, arange_pair):
    # Advanced indexing has its own tests (tests/frontend/test_advanced_indexing.py).
    k, t = arange_pair(3, 3)
    result = k[key]
    np.testing.assert_array_equal(result.numpy(), t[torch_key].numpy())
    assert not result.shares_storage(k)


def test_keys_of_other_types_raise_index_error():
    with pytest.raises(kael.IndexError, match=r"valid indices \(got float\)"):
        kael.zeros(3)[1.0]


@pytest.mark.parametrize(
    ("key", "value"),
    [
        (0, 7),
        ((slice(None), 1), -1.5),
        ((Ellipsis, slice(None, None, 2)), True),
        ((1, slice(1, None)), 2**40),
        ((slice(None), None, 0), 3.0),
    ],
)
def test_setitem_with_a_number_fills_the_view_like_torch(key, value, like_torch):
    k, t = kael.zeros(3, 4, dtype=kael.float64), torch.zeros(3, 4, dtype=torch.float64)
    k[key] = value
    t[key] = value
    like_torch(k, t)


def test_setitem_with_a_tensor_broadcasts_and_converts_like_torch(arange_pair, like_torch):
    k, t = arange_pair(3, 4)
    k[:, 1:3] = kael.tensor([[1.9], [-2.9], [3.5]])
    t[:, 1:3] = torch.tensor([[1.9], [-2.9], [3.5]])
    like_torch(k, t)
    k[0] = kael.tensor([[9, 8, 7, 6]])  # extra leading size-1 dims are dropped, as in PyTorch
    t[0] = torch.tensor([[9, 8, 7, 6]])
    like_torch(k, t)


def test_setitem_from_an_overlapping_view_of_itself_reads_first():
    a = kael.arange(6)
    a[1:] = a[:-1]
    assert a.tolist() == [0, 0, 1, 2, 3, 4]


def test_setitem_on_a_transposed_view_writes_the_base(arange_pair, like_torch):
    k, t = arange_pair(2, 3)
    k.T[1:] = 0
    t.T[1:] = 0
    like_torch(k, t)


def test_setitem_bumps_the_version():
    a = kael.zeros(3)
    before = a._impl.storage.version
    a[0] = 1.0
    a[1:] = kael.ones(2)
    assert a._impl.storage.version == before + 2


def test_setitem_with_an_unbroadcastable_tensor_raises():
    with pytest.raises(kael.ValueError, match="must match the existing size"):
        kael.zeros(3, 4)[0] = kael.zeros(3)


def test_setitem_with_a_non_number_raises_type_error():
    with pytest.raises(kael.TypeError, match="got str"):
        kael.zeros(3)[0] = "x"


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "bool"])
def test_setitem_refuses_an_int_beyond_int64_for_every_dtype_like_torch(dtype):
    # torch's setitem unpacks a number as an int64 (no uint64 Scalar there, unlike fill_):
    # one past either end is refused for every dtype and key; the ends themselves are stored.
    keys = [(0, 0), (slice(None), slice(None)), ((Ellipsis, None), (Ellipsis, None))]
    keys += [(kael.tensor([0, 2]), torch.tensor([0, 2]))]
    keys += [(kael.tensor([True, False, True]), torch.tensor([True, False, True]))]
    for kkey, tkey in keys:
        k, t = (
            kael.zeros(3, dtype=getattr(kael, dtype)),
            torch.zeros(3, dtype=getattr(torch, dtype)),
        )
        for value in (2**63, -(2**63) - 1):
            with pytest.raises(ValueError, match="Overflow when unpacking long long"):
                t[tkey] = value
            with pytest.raises(kael.ValueError, match=f"^value {value} is out of range for int64$"):
                k[kkey] = value
            assert k.tolist() == t.tolist()
        for value in (2**63 - 1, -(2**63)):
            t[tkey] = value
            k[kkey] = value
            assert k.tolist() == t.tolist()


def test_a_repeated_lone_slice_or_int_is_served_by_the_view_memo_with_pytorchs_layout():
    from kael.frontend import indexing, views

    x = kael.tensor(np.arange(60.0).reshape(6, 10))
    t = torch.from_numpy(np.arange(60.0).reshape(6, 10))
    for key in (slice(1, None), slice(None, 5, 2), 3, -1, slice(-2, None, None)):
        x[key]  # the first call validates and remembers the layout
        hit = indexing.remembered_view(x, key)
        assert hit is not None, key
        assert (hit.shape, hit.stride()) == (tuple(t[key].shape), t[key].stride()), key
        np.testing.assert_array_equal(hit.numpy(), t[key].numpy())
        # one key format for both doors: exact_key's entry is the lone key's
        impl = x._impl
        assert views.remembered(("index", impl.shape, impl.strides, views.exact_key((key,))), impl)


def test_keys_that_only_look_like_ints_never_hit_the_view_memo():
    x = kael.tensor(np.arange(12.0).reshape(3, 4))
    x[1]
    assert x[True].shape == (1, 3, 4)  # a bool is not the int 1
    assert x[np.int64(1)].shape == (4,)
    with pytest.raises(kael.TypeError, match="slice indices must be integers or None, got float"):
        x[1.0:]


@pytest.mark.parametrize(
    "key",
    [[[0, 1], [1, 2]], [0, [1, 2]], [slice(None), 0], [None, 0], [Ellipsis, 1]],
    ids=str,
)
def test_a_list_holding_sequences_or_slices_indexes_as_a_tuple_as_torch(key):
    t = torch.arange(12.0).reshape(3, 4)
    k = kael.arange(12.0).reshape(3, 4)
    with pytest.warns(UserWarning, match="non-tuple sequence"):
        expected = t[key]
    with pytest.warns(UserWarning, match="non-tuple sequence"):
        got = k[key]
    assert got.shape == tuple(expected.shape)
    np.testing.assert_array_equal(got.numpy(), expected.numpy())
    with pytest.warns(UserWarning):
        k[key] = -1.0
    with pytest.warns(UserWarning):
        t[key] = -1.0
    np.testing.assert_array_equal(k.numpy(), t.numpy())


def test_a_list_of_ints_stays_one_advanced_index():
    k = kael.arange(12.0).reshape(3, 4)
    assert k[[0, 1]].shape == (2, 4) and k[list(range(3))].shape == (3, 4)


@pytest.mark.parametrize("dtype", [kael.float16, kael.bfloat16])
def test_setitem_through_a_full_mask_stores_a_half_overflow_as_inf_as_torch(dtype):
    t = torch.zeros(3, dtype=TORCH_DTYPES[dtype])
    t[t == 0] = 1e39
    k = kael.zeros(3, dtype=dtype)
    k[k == 0] = 1e39
    assert k.to(kael.float32).tolist() == t.float().tolist() == [math.inf] * 3


def test_a_uint8_index_is_torchs_deprecated_mask_with_its_warning():
    values = [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
    for key in ([1, 0], [[1, 0, 2], [0, 0, 1]]):
        with pytest.warns(UserWarning, match="indexing with dtype uint8 is now deprecated"):
            got = kael.tensor(values)[kael.tensor(key, dtype=kael.uint8)]
        with pytest.warns(UserWarning, match="indexing with dtype torch.uint8 is now deprecated"):
            want = torch.tensor(values)[torch.tensor(key, dtype=torch.uint8)]
        assert got.tolist() == want.tolist()
