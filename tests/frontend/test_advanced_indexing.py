"""Integer and bool tensor indexing against PyTorch: tensor[key] copies and tensor[key] = value.

Keys are written with torch tensors and converted element by element, so each case runs
the same key through both libraries. Where kael decides differently the test says so:
an out-of-bounds message names the indexed tensor's real dimension (PyTorch always says
dimension 0).
"""

import numpy as np
import pytest
import torch
from kernel_helpers import KAEL_DTYPES, TORCH_DTYPES

import kael
from kael.frontend.inspection import record_launches

I = torch.tensor  # noqa: E741  (keys read like PyTorch code)
DTYPES = [kael.float32, kael.float64, kael.int64, kael.bool]
DTYPE_IDS = ["f32", "f64", "i64", "bool"]


def kael_key(key):
    """The key with every torch tensor replaced by an equal kael tensor."""
    if isinstance(key, tuple):
        return tuple(kael_key(k) for k in key)
    if isinstance(key, torch.Tensor):
        return kael.tensor(key.numpy())
    return key


def base(shape, dtype, layout):
    """(kael, torch) tensors of `shape` with equal values, in a contiguous, transposed,
    stepped or expanded layout."""
    n = int(np.prod(shape))
    values = torch.arange(n).remainder(7) - 3
    full = values.to(TORCH_DTYPES[dtype])
    views = {
        "contiguous": (shape, lambda x: x),
        "transposed": (shape[::-1], lambda x: x.permute(*reversed(range(x.ndim)))),
        "stepped": (shape[:-1] + (2 * shape[-1],), lambda x: x[..., ::2]),
        "expanded": ((1,) + shape[1:], lambda x: x.expand(*shape)),
    }
    made, view = views[layout]
    t = full.repeat(2)[: int(np.prod(made))].reshape(made)
    return view(kael.tensor(t.numpy())), view(t)


def check(k, t):
    assert k.shape == tuple(t.shape), (k.shape, t.shape)
    assert k.dtype is KAEL_DTYPES[t.dtype]
    np.testing.assert_array_equal(np.asarray(k.numpy()), t.numpy())


MASK = torch.tensor(
    [[True, False, True, False], [False, False, True, True], [True, True, False, False]]
)
KEYS = {
    "int tensor": I([2, 0, 2, 1]),
    "2-d int tensor": I([[0, 1], [1, 0]]),
    "negative": I([-1, -2, 0]),
    "0-d int tensor": I(1),
    "empty": I([], dtype=torch.int64),
    "list": [1, 0],
    "ndarray": np.array([1, 1]),
    "tuple in tuple": ((0, 1), slice(None)),
    "then slice": (I([1, 0]), slice(1, None)),
    "slice then": (slice(None), I([3, 0, 3])),
    "int then": (1, I([2, 0])),
    "then int": (I([0, 2]), 1),
    "both": (I([0, 1, 2]), I([3, 2, 1])),
    "broadcast pair": (I([[0], [2]]), I([1, 3])),
    "separated by None": (I([0, 1]), None, I([1, 0])),
    "None first": (None, I([0, 2])),
    "ellipsis": (Ellipsis, I([1, -1])),
    "mask": torch.tensor([True, False, True]),
    "2-d mask": MASK,
    "mask after slice": (slice(None), torch.tensor([True, False, False, True])),
    "all false mask": torch.zeros(3, dtype=torch.bool),
    "0-d true mask": torch.tensor(True),
    "0-d false mask": torch.tensor(False),
    "python true": True,
    "python false": False,
    "bool list": [True, False, True],
    "true with index": (I([0, 2]), True),
    "index, slice, stepped slice": (I([2]), slice(None, None, 2)),
}


@pytest.mark.parametrize("layout", ["contiguous", "transposed", "stepped", "expanded"])
@pytest.mark.parametrize("name", list(KEYS))
def test_getitem_with_advanced_keys_matches_torch(name, layout):
    k, t = base((3, 4), kael.float32, layout)
    result, want = k[kael_key(KEYS[name])], t[KEYS[name]]
    check(result, want)
    # A copy, except where PyTorch gives a view (a 0-d int tensor indexes as an int).
    assert result.shares_storage(k) == (want._base is not None)


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize(
    "key",
    [
        (I([1, 0]), slice(None), I([2, 2])),
        (slice(None), 0, I([1, 3])),
        (slice(None), I([[1], [0]]), slice(1, 3)),
        torch.arange(24).reshape(2, 3, 4) % 3 == 0,
        (I(1), torch.tensor([True, False, True])),
    ],
    ids=["separated", "int then index", "2-d index between slices", "3-d mask", "0-d and mask"],
)
def test_getitem_on_3d_tensors_matches_torch_for_every_dtype(dtype, key):
    k, t = base((2, 3, 4), dtype, "transposed")
    check(k[kael_key(key)], t[key])


def test_getitem_of_a_0d_tensor_with_bool_keys():
    k, t = kael.tensor(5.0), torch.tensor(5.0)
    for key in (True, False, torch.tensor(True)):
        check(k[kael_key(key)], t[key])
    with pytest.raises(kael.IndexError, match="too many indices for tensor of dimension 0"):
        k[None, kael.tensor([0, 0])]


def test_getitem_bounds_wrap_negatives_and_raise_past_both_ends():
    k, t = base((3, 4), kael.int64, "contiguous")
    check(k[kael.tensor([2, -3])], t[I([2, -3])])
    with pytest.raises(
        kael.IndexError, match="index 3 is out of bounds for dimension 0 with size 3"
    ):
        k[kael.tensor([0, 3])]
    with pytest.raises(
        kael.IndexError, match="index -4 is out of bounds for dimension 0 with size 3"
    ):
        k[kael.tensor([-4])]
    # kael names the real dimension; PyTorch says "dimension 0" here
    with pytest.raises(
        kael.IndexError, match="index 4 is out of bounds for dimension 1 with size 4"
    ):
        k[:, kael.tensor([4])]
    with pytest.raises(
        kael.IndexError, match="index 0 is out of bounds for dimension 0 with size 0"
    ):
        kael.zeros(0)[kael.tensor([0])]


def test_getitem_of_a_large_tensor_uses_every_thread_and_matches_torch():
    gen = torch.Generator().manual_seed(1)
    t = torch.randn(2000, 600, generator=gen)
    rows = torch.randint(-2000, 2000, (3000,), generator=gen)
    k = kael.tensor(t.numpy())
    threads = kael.get_num_threads()
    try:
        kael.set_num_threads(2)
        check(k[kael.tensor(rows.numpy())], t[rows])
        check(k[k > 1.0], t[t > 1.0])
    finally:
        kael.set_num_threads(threads)


def test_int32_index_tensors_index_as_int64_ones_as_torch():
    """PyTorch takes int (int32) index tensors in [], []= and index_put_ as long ones."""
    values = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    rows, cols = np.array([1, -1, 0]), np.array([3, -4, 2])
    k, t = kael.tensor(values), torch.from_numpy(values.copy())
    ki, kj = kael.tensor(rows).int(), kael.tensor(cols).int()
    ti, tj = torch.from_numpy(rows).int(), torch.from_numpy(cols).int()
    check(k[:, ki[:2], kj[:2]], t[:, ti[:2], tj[:2]])
    k[1, ki, kj] = -1.0
    t[1, ti, tj] = -1.0
    check(k, t)
    k.index_put_((ki[:1],), kael.tensor(2.0), accumulate=True)
    t.index_put_((ti[:1],), torch.tensor(2.0), accumulate=True)
    check(k, t)


def test_getitem_rejects_bad_keys_naming_them():
    k = kael.zeros(2, 3, 4)
    with pytest.raises(kael.IndexError, match="long, int or bool tensors, got float32"):
        k[kael.tensor([0.5])]
    with pytest.raises(kael.IndexError, match="long, int or bool tensors, got float64"):
        k[[0.5]]
    with pytest.raises(
        kael.IndexError,
        match=r"mask \[3\] at index 0 does not match the shape of the indexed tensor \[2, 3, 4\] at index 0",
    ):
        k[kael.tensor([True, False, True])]
    with pytest.raises(kael.IndexError, match=r"mask \[2\] at index 0 .* at index 1"):
        k[:, kael.tensor([True, False])]
    with pytest.raises(
        kael.IndexError, match=r"could not be broadcast together with shapes \[2\], \[3\]"
    ):
        k[kael.tensor([0, 1]), kael.tensor([0, 1, 2])]
    with pytest.raises(kael.IndexError, match="too many indices for tensor of dimension 3"):
        k[kael.ones(2, 3, dtype=kael.bool), 0, 0]
    with pytest.raises(kael.IndexError, match="single ellipsis"):
        k[..., kael.tensor([0]), ...]
    with pytest.raises(kael.IndexError, match=r"valid indices \(got str\)"):
        k[kael.tensor([0]), "a"]


# ---- assignment -------------------------------------------------------------------------------------


def _set(target, key, value):
    target[key] = value
    return target


SET_CASES = {
    "rows from a vector": (I([0, 2]), I([1.0, 2.0, 3.0, 4.0])),
    "rows from a number": (I([1, -1]), 7.5),
    "columns": ((slice(None), I([3, 0])), I([[1.0], [2.0], [3.0]])),
    "points": ((I([0, 1, 2]), I([3, 2, 1])), I([5.0, 6.0, 7.0])),
    "mask number": (MASK, -1.0),
    "mask 0-d tensor": (MASK, I(4.0)),
    "mask values": (MASK, torch.arange(6.0)),
    "row mask": (torch.tensor([True, False, True]), I([[9.0, 8.0, 7.0, 6.0]])),
    "leading ones": (I([1]), I([[[1.0, 2.0, 3.0, 4.0]]])),
    "python bool": (True, 3.0),
    "empty": (I([], dtype=torch.int64), 1.0),
}


@pytest.mark.parametrize("layout", ["contiguous", "transposed", "stepped"])
@pytest.mark.parametrize("name", list(SET_CASES))
def test_setitem_with_advanced_keys_matches_torch(name, layout):
    key, value = SET_CASES[name]
    k, t = base((3, 4), kael.float64, layout)
    tv = value.double() if isinstance(value, torch.Tensor) else value
    kv = kael_key(tv)  # index_put takes the target's dtype only
    check(_set(k, kael_key(key), kv), _set(t, key, tv))


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_setitem_writes_every_dtype(dtype):
    k, t = base((3, 4), dtype, "contiguous")
    value = torch.tensor([1, 0, 1, 1]).to(TORCH_DTYPES[dtype])
    check(_set(k, kael.tensor([2, 0]), kael.tensor(value.numpy())), _set(t, I([2, 0]), value))
    check(_set(k, kael_key(MASK), True), _set(t, MASK, True))


# key -> whether PyTorch's setitem converts a float32 value of that many elements into an
# int64 tensor: basic keys copy (converting), advanced ones index_put (equal dtypes only),
# except one element through one bool mask with dims alone (a masked_fill).
CONVERTING_KEYS = {
    "int": (1, 1, True),
    "slice": (slice(0, 2), 2, True),
    "lone python bool": (True, 3, True),
    "0-d int tensor": (I(1), 1, True),
    "int tensor": (I([0, 2]), 2, False),
    "int tensor, one element": (I([0, 2]), 1, False),
    "int list": ([0, 2], 2, False),
    "empty int tensor": (I([], dtype=torch.int64), 1, False),
    "mask, one element": (I([True, False, True]), 1, True),
    "mask, 0-d value": (I([True, False, True]), 0, True),
    "bool list, one element": ([True, False, True], 1, True),
    "mask, two elements": (I([True, False, True]), 2, False),
    "0-d bool tensor": (I(True), 1, False),
    "python bool in a tuple": ((True,), 3, False),
    "python bool and a mask": ((True, I([True, False, True])), 1, False),
}


@pytest.mark.parametrize("name", list(CONVERTING_KEYS))
def test_setitem_through_an_advanced_key_refuses_another_dtype_like_torch(name):
    key, count, converts = CONVERTING_KEYS[name]
    value = torch.tensor(2.5) if count == 0 else torch.full((count,), 2.5)
    t, k = torch.zeros(3, dtype=torch.int64), kael.zeros(3, dtype=kael.int64)
    if converts:
        t[key] = value
        k[kael_key(key)] = kael.tensor(value.numpy())
        check(k, t)
        return
    with pytest.raises(RuntimeError, match="Index put requires the source and destination"):
        t[key] = value
    message = (
        "^index put requires the value's dtype to match the tensor's: got float32 for the"
        " value and int64 for the tensor$"
    )
    with pytest.raises(kael.TypeError, match=message):
        k[kael_key(key)] = kael.tensor(value.numpy())
    assert k.tolist() == [0, 0, 0]
    k[kael_key(key)] = kael.tensor(value.numpy()).long()  # the same dtype is put
    t[key] = value.long()
    check(k, t)


def test_setitem_with_repeated_indices_writes_the_last_value():
    k = kael.zeros(3)
    k[kael.tensor([1, 1, 1])] = kael.tensor([1.0, 2.0, 3.0])
    assert k.tolist() == [0.0, 3.0, 0.0]


def test_setitem_reads_a_value_that_aliases_the_target_first():
    k, t = kael.arange(5.0), torch.arange(5.0)
    idx = [4, 3, 2, 1, 0]
    k[kael.tensor(idx)] = k[1:].clone()[kael.tensor([0, 0, 1, 2, 3])]
    t[I(idx)] = t[1:].clone()[I([0, 0, 1, 2, 3])]
    check(k, t)
    a = kael.arange(4.0)
    a[kael.tensor([3, 2, 1, 0])] = a
    assert a.tolist() == [3.0, 2.0, 1.0, 0.0]


def test_setitem_through_a_view_writes_the_base_and_bumps_the_version():
    k, t = base((3, 4), kael.float32, "contiguous")
    before = k._impl.storage.version
    k.T[kael.tensor([1])] = 0.5
    t.T[I([1])] = 0.5
    check(k, t)
    k[k > 0] = 0.0
    assert k._impl.storage.version == before + 2


def test_setitem_checks_bounds_before_writing():
    k = kael.zeros(2, 3)
    with pytest.raises(
        kael.IndexError, match="index 5 is out of bounds for dimension 0 with size 2"
    ):
        k[kael.tensor([0, 5])] = 1.0
    with pytest.raises(
        kael.IndexError, match="index -3 is out of bounds for dimension 0 with size 2"
    ):
        k[kael.tensor([-3])] = 1.0
    assert k.tolist() == [[0.0] * 3] * 2


def test_setitem_rejects_bad_values_and_targets():
    k = kael.zeros(2, 3)
    with pytest.raises(
        kael.ValueError,
        match=r"value tensor of shape \[2\] cannot be broadcast to indexing result of shape \[2, 3\]",
    ):
        k[kael.tensor([0, 1])] = kael.tensor([1.0, 2.0])
    with pytest.raises(kael.TypeError, match="got str"):
        k[kael.tensor([0])] = "a"
    with pytest.raises(kael.Error, match="more than one element of the written-to tensor"):
        kael.zeros(3).expand(2, 3)[kael.tensor([0])] = 1.0


# ---- 0-d tensor keys -------------------------------------------------------------------------

ZERO_DIM_INT_KEYS = {
    "alone": I(1),
    "negative": I(-2),
    "then slice then index": (I(0), slice(None), I([0, 1])),
    "between": (slice(None), I(2), I([0, 3])),
    "two": (I(1), I(2)),
    "with ellipsis": (I(0), Ellipsis, I([[0, 1]])),
    "with None": (None, I(1), slice(1, None)),
    "0-d array": (np.array(1), slice(None), [0, 1]),
}


@pytest.mark.parametrize("name", list(ZERO_DIM_INT_KEYS))
def test_zero_dim_int_tensor_index_acts_as_int(name):
    # PyTorch reads a 0-d integer index as the int it holds (NumPy would broadcast it with
    # the other advanced indices): the dim goes, and with no other advanced index it is a view.
    k, t = base((2, 3, 4), kael.float32, "transposed")
    key = ZERO_DIM_INT_KEYS[name]
    result, want = k[kael_key(key)], t[key]
    check(result, want)
    assert result.shares_storage(k) == (want._base is not None)
    assert kael.zeros(2, 3, 4)[kael.tensor(0), :, kael.tensor([0, 1])].shape == (3, 2)


@pytest.mark.parametrize("name", list(ZERO_DIM_INT_KEYS))
def test_zero_dim_int_tensor_assignment_acts_as_int(name):
    # Distinct values in the shape of PyTorch's result, so each lands where PyTorch puts it.
    k, t = base((2, 3, 4), kael.float32, "contiguous")
    key = ZERO_DIM_INT_KEYS[name]
    value = torch.arange(float(t[key].numel())).reshape(t[key].shape) + 10
    k[kael_key(key)] = kael.tensor(value.numpy())
    t[key] = value
    check(k, t)
    k[kael_key(key)] = 9.0
    t[key] = 9.0
    check(k, t)


def test_zero_dim_int_tensor_index_is_checked_like_an_int():
    # Both sides of the range; the broadcast of the other indices may be empty (False
    # adds an empty dim) and the int is still checked, as PyTorch checks it.
    k = kael.zeros(3)
    assert k[kael.tensor(2)].shape == () and k[kael.tensor(-3)].shape == ()
    assert k[False, kael.tensor(2)].shape == tuple(torch.zeros(3)[False, I(2)].shape) == (0,)
    for bad in (3, -4, 7):
        for key in ((kael.tensor(bad),), (False, kael.tensor(bad))):
            message = f"index {bad} is out of bounds for dimension 0 with size 3"
            with pytest.raises(kael.IndexError, match=message):
                k[key]
            with pytest.raises(kael.IndexError, match=message):
                k[key] = 1.0
            with pytest.raises(IndexError):
                torch.zeros(3)[tuple(I(b) if isinstance(b, kael.Tensor) else b for b in key)]
    assert k.tolist() == [0.0, 0.0, 0.0]


def test_empty_broadcast_of_1d_indices_checks_nothing_like_torch():
    # A 1-d index broadcast against an empty one selects nothing; PyTorch reads no index
    # value then, out of range or not, for [] and []= alike.
    k, t = kael.zeros(3), torch.zeros(3)
    check(k[False, kael.tensor([7])], t[False, I([7])])
    k[False, kael.tensor([7])] = 1.0
    t[False, I([7])] = 1.0
    check(k, t)


def test_zero_dim_bool_tensor_key_copies_like_torch():
    k, t = base((2, 3), kael.float32, "contiguous")
    for value in (True, False):
        result, want = k[kael.tensor(value)], t[torch.tensor(value)]
        check(result, want)
        assert want._base is None and not result.shares_storage(k)
        check(k[kael.tensor(1), kael.tensor(value)], t[I(1), torch.tensor(value)])
    k[kael.tensor(False)] = 5.0
    assert not (k == 5.0).any().item()
    k[kael.tensor(True)] = 5.0
    assert (k == 5.0).all().item()


@pytest.mark.parametrize("dtype", ["int64", "int32"])
def test_an_index_tensor_picks_rows_as_torch_wraps_and_refuses_them(dtype):
    x, xt = kael.arange(24.0).reshape(4, 6), torch.arange(24.0).reshape(4, 6)
    for index in ([0, 2, 1], [-1, 0], [[1, 2], [3, 0]], [], [3], [-4, 1, 3]):
        for _ in range(3):  # after a negative index the layout pair takes the full path
            got = x[kael.tensor(index, dtype=getattr(kael, dtype))]
            want = xt[torch.tensor(index, dtype=getattr(torch, dtype))]
            assert got.shape == tuple(want.shape)
            np.testing.assert_array_equal(got.numpy(), want.numpy())
    for bad in (4, -5):
        with pytest.raises(kael.IndexError, match=f"index {bad} is out of bounds for dimension 0"):
            x[kael.tensor([0, bad])]
    assert x.T[kael.tensor([5, 0])].tolist() == xt.T[torch.tensor([5, 0])].tolist()


@pytest.mark.parametrize("dtype", ["float32", "int64", "bool", "float16", "complex64"])
def test_a_mask_of_the_tensors_shape_picks_as_torch(dtype):
    rng = np.random.default_rng(4)
    for shape in [(4, 16), (7,), (3, 0), (2, 3, 5)]:
        values = rng.standard_normal(shape) * 3
        x, xt = (
            kael.tensor(values).to(getattr(kael, dtype)),
            torch.tensor(values).to(getattr(torch, dtype)),
        )
        m = kael.tensor(values > 0)
        mt = torch.from_numpy(values > 0)
        cases = [(x, m, xt, mt)] + ([(x.T, m.T, xt.T, mt.T)] if len(shape) == 2 else [])
        for k, km, t, tm in cases:
            for _ in range(2):
                got, want = k[km], t[tm]
                assert got.shape == tuple(want.shape) and str(got.dtype) == str(want.dtype)[6:]
                np.testing.assert_array_equal(got.numpy(), want.numpy())
    with pytest.raises(kael.IndexError, match="shape of the mask"):
        kael.ones(2, 3)[kael.ones(3, 2, dtype=kael.bool)]


@pytest.mark.parametrize(
    "shapes",
    [
        ((5, 3), (5,)),
        ((4, 3, 2), (4, 3)),
        ((4, 3, 2), (4,)),
        ((0, 3), (0,)),
        ((3, 0), (3,)),
        ((3, 4, 0), (3, 4)),
    ],
)
def test_a_mask_of_the_leading_dims_picks_rows_as_torch(shapes):
    rng = np.random.default_rng(9)
    values, mask = rng.standard_normal(shapes[0]), rng.standard_normal(shapes[1]) > 0
    for _ in range(2):
        got = kael.tensor(values)[kael.tensor(mask)]
        want = torch.tensor(values)[torch.from_numpy(mask)]
        assert got.shape == tuple(want.shape)
        np.testing.assert_array_equal(got.numpy(), want.numpy())
    with pytest.raises(kael.IndexError, match="shape of the mask"):
        kael.ones(4, 3)[kael.ones(3, dtype=kael.bool)]


def _layouts(values: np.ndarray):
    """(kael, torch) pairs of one array in several layouts: contiguous, its last dims
    transposed, sliced with a step, and broadcast along its first dim."""
    k, t = kael.tensor(values), torch.from_numpy(values.copy())
    yield k, t
    yield k.transpose(-1, -2), t.transpose(-1, -2)
    yield k[:, ::2], t[:, ::2]
    yield k[:1].expand(*k.shape), t[:1].expand(*t.shape)


@pytest.mark.parametrize("key", [(), (slice(None),), (Ellipsis,), (Ellipsis, slice(None))])
@pytest.mark.parametrize("dtype", ["float32", "int8", "int16", "float64", "bool"])
def test_a_mask_then_whole_slices_is_one_compaction_and_picks_as_torch(key, dtype):
    """x[mask, :, ...] over every layout of x and of the mask (dims after the mask's that do
    not fold into one run take the general plan): torch's values, dtype and shape."""
    rng = np.random.default_rng(21)
    values = (rng.standard_normal((6, 4, 3)) * 40).astype(np.float64)
    mask = rng.standard_normal((6, 4)) > 0
    for x, xt in _layouts(values):
        x, xt = x.to(getattr(kael, dtype)), xt.to(getattr(torch, dtype))
        for m, mt in _layouts(mask):
            if m.shape != x.shape[:2]:
                continue
            got, want = x[(m, *key)], xt[(mt, *key)]
            assert got.shape == tuple(want.shape) and str(got.dtype) == str(want.dtype)[6:]
            np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_a_mask_then_a_slice_with_tensor_bounds_picks_as_torch():
    x, xt = kael.arange(12.0).reshape(3, 4), torch.arange(12.0).reshape(3, 4)
    m, mt = kael.tensor([True, False, True]), torch.tensor([True, False, True])
    for bounds in ((None, 2), (1, None), (None, None, 2)):
        key = slice(*(None if v is None else kael.tensor(v) for v in bounds))
        want = xt[mt, slice(*(None if v is None else torch.tensor(v) for v in bounds))]
        got = x[m, key]
        assert got.shape == tuple(want.shape)
        np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_a_mask_index_launches_the_compaction_alone():
    x = kael.arange(24.0).reshape(6, 4)
    for mask, key in ((x > 5, ()), (x[:, 0] > 5, (slice(None),))):
        x[(mask, *key)]  # kept
        got, launched = record_launches(lambda: x[(mask, *key)])  # noqa: B023
        assert got.tolist() == x.numpy()[mask.numpy()].tolist()
        assert [r.symbol.split("_")[1] for r in launched] == ["compact"] * 3


def test_a_mask_then_too_many_slices_is_refused_as_torch():
    message = "too many indices for tensor of dimension 2"
    with pytest.raises(IndexError, match=message):
        torch.ones(2, 3)[torch.ones(2, dtype=torch.bool), :, :]
    with pytest.raises(kael.IndexError, match=message):
        kael.ones(2, 3)[kael.ones(2, dtype=kael.bool), :, :]
