"""max/avg pools (1d/2d/3d, indices, ceil_mode, padding, dilation, count_include_pad,
divisor_override) and the adaptive pools against PyTorch."""

import time

import numpy as np
import pytest
import torch
import torch.nn.functional as TF
from parity_helpers import close_to_torch
from parity_helpers import torch_pair as pair

import kael
import kael.nn.functional as KF
from kael.frontend import fastpath

RNG = np.random.default_rng(43)
X2 = RNG.standard_normal((2, 3, 9, 8))


def same(k, t, tol=2e-6):
    close_to_torch(k, t, tol, equal_nan=True)


MAX2D = [
    {"kernel_size": 2},
    {"kernel_size": 3, "stride": 2, "padding": 1},
    {"kernel_size": 3, "stride": 2, "ceil_mode": True},
    {"kernel_size": (3, 2), "stride": (2, 3), "padding": (1, 1), "dilation": (2, 1)},
    {"kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": True},
]


@pytest.mark.parametrize("indices", [False, True])
@pytest.mark.parametrize("kwargs", MAX2D, ids=str)
@pytest.mark.parametrize("dtype", [kael.float32, kael.float64, kael.int64, kael.float16], ids=str)
def test_max_pool2d_matches_torch(kwargs, indices, dtype):
    kx, tx = pair(X2 * 10, dtype)
    same(
        KF.max_pool2d(kx, **kwargs, return_indices=indices),
        TF.max_pool2d(tx, **kwargs, return_indices=indices),
    )
    same(KF.max_pool2d(kx[0], **kwargs), TF.max_pool2d(tx[0], **kwargs))


def test_max_pool_propagates_nan_and_picks_the_first_maximum():
    x = np.zeros((1, 1, 4, 4))
    x[0, 0, 1, 2] = np.nan
    kx, tx = pair(x)
    same(KF.max_pool2d(kx, 2, return_indices=True), TF.max_pool2d(tx, 2, return_indices=True))


AVG2D = [
    {"kernel_size": 2},
    {"kernel_size": 3, "stride": 2, "padding": 1},
    {"kernel_size": 3, "stride": 2, "padding": 1, "count_include_pad": False},
    {"kernel_size": 3, "stride": 2, "ceil_mode": True},
    {"kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": True, "count_include_pad": False},
    {"kernel_size": 2, "divisor_override": 3},
]


@pytest.mark.parametrize("kwargs", AVG2D, ids=str)
@pytest.mark.parametrize("dtype", [kael.float32, kael.float64, kael.bfloat16], ids=str)
def test_avg_pool2d_matches_torch(kwargs, dtype):
    kx, tx = pair(X2, dtype)
    tol = 2e-6 if dtype is not kael.bfloat16 else 2e-2
    same(KF.avg_pool2d(kx, **kwargs), TF.avg_pool2d(tx, **kwargs), tol)
    same(
        KF.avg_pool2d(kx.transpose(2, 3), **kwargs),
        TF.avg_pool2d(tx.transpose(2, 3), **kwargs),
        tol,
    )


def test_pools_in_1d_and_3d_match_torch():
    kx, tx = pair(X2[0])
    same(KF.max_pool1d(kx, 3, 2, return_indices=True), TF.max_pool1d(tx, 3, 2, return_indices=True))
    same(KF.avg_pool1d(kx, 3, padding=1), TF.avg_pool1d(tx, 3, padding=1))
    kx, tx = pair(RNG.standard_normal((1, 2, 5, 6, 7)))
    same(KF.max_pool3d(kx, 2, return_indices=True), TF.max_pool3d(tx, 2, return_indices=True))
    same(KF.avg_pool3d(kx, 3, 2, 1), TF.avg_pool3d(tx, 3, 2, 1))


@pytest.mark.parametrize("size", [(3, 4), (4, 5), 1, (9, 8), (None, 3), (7, 7)], ids=str)
def test_adaptive_pools_match_torch(size):
    kx, tx = pair(X2)
    same(KF.adaptive_avg_pool2d(kx, size), TF.adaptive_avg_pool2d(tx, size), 3e-6)
    same(
        KF.adaptive_max_pool2d(kx, size, return_indices=True),
        TF.adaptive_max_pool2d(tx, size, return_indices=True),
    )
    same(KF.adaptive_avg_pool1d(kx[0], 5), TF.adaptive_avg_pool1d(tx[0], 5), 3e-6)
    same(KF.adaptive_max_pool1d(kx[0], 3), TF.adaptive_max_pool1d(tx[0], 3))


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: KF.max_pool2d(kael.ones(1, 1, 4, 4), 2, padding=2), "at most half"),
        (lambda: KF.max_pool2d(kael.ones(1, 1, 2, 2), 3), "too small"),
        (lambda: KF.max_pool2d(kael.ones(4), 2), "Expected"),
        (lambda: KF.avg_pool2d(kael.ones(1, 1, 4, 4), 2, divisor_override=0), "not zero"),
        (lambda: KF.adaptive_avg_pool2d(kael.ones(1, 1, 4, 4), (-1, 2)), "greater than or equal"),
    ],
)
def test_bad_pools_raise(call, message):
    with pytest.raises(kael.ValueError, match=message):
        call()
    with pytest.raises(kael.TypeError, match="floating point or int64"):
        KF.avg_pool2d(kael.ones(1, 1, 4, 4, dtype=kael.int32), 2)


@pytest.mark.parametrize("size", [0, (0, 2), (3, 0)], ids=str)
def test_adaptive_pools_to_an_output_size_of_zero_are_empty_as_torch(size):
    kx, tx = pair(X2)
    same(KF.adaptive_avg_pool2d(kx, size), TF.adaptive_avg_pool2d(tx, size))
    same(
        KF.adaptive_max_pool2d(kx, size, return_indices=True),
        TF.adaptive_max_pool2d(tx, size, return_indices=True),
    )


@pytest.mark.parametrize("size", [(3, 4), (5, 2)], ids=str)
def test_adaptive_avg_pool_of_bfloat16_averages_in_float32_and_rounds_once(size):
    # A bfloat16 averaging matrix (1/3 rounded) or a bfloat16 result between the two dims
    # each moved some averages a step or more from PyTorch's.
    kx, tx = pair(X2, kael.bfloat16)
    got = torch.from_dlpack(KF.adaptive_avg_pool2d(kx, size)).double()
    torch.testing.assert_close(
        got, TF.adaptive_avg_pool2d(tx, size).double(), rtol=2**-7, atol=1e-5
    )


def test_avg_pool1d_has_torch_signature_without_divisor_override():
    kx, tx = pair(X2[0])
    with pytest.raises(TypeError):
        TF.avg_pool1d(tx, 2, divisor_override=3)
    with pytest.raises(kael.TypeError, match="divisor_override"):
        KF.avg_pool1d(kx, 2, divisor_override=3)
    same(KF.avg_pool1d(kx, 3, 2, 1, True, False), TF.avg_pool1d(tx, 3, 2, 1, True, False))


REGIONS = [
    ((2, 3, 13, 12), {"kernel_size": 3, "stride": 2, "padding": 1}),
    ((1, 4, 10, 12), {"kernel_size": (3, 2), "stride": (2, 3), "padding": 1, "ceil_mode": True}),
    ((1, 4, 10, 12), {"kernel_size": 3, "stride": 1, "padding": 1}),
    ((1, 1, 3, 3), {"kernel_size": 3, "stride": 1, "padding": 1}),  # no interior
    ((1, 2, 7, 8, 9), {"kernel_size": 3, "stride": 2, "padding": 1}),
    ((2, 4, 50), {"kernel_size": 4, "stride": 3, "padding": 2, "ceil_mode": True}),
    ((1, 2, 9, 9), {"kernel_size": 2, "stride": 2}),  # no padding: the interior alone
    ((1, 3, 40), {"kernel_size": 9, "stride": 1, "padding": 4}),  # edge bands padded whole
    ((1, 2, 12, 11), {"kernel_size": (7, 2), "padding": (3, 1), "stride": 1}),
]


@pytest.mark.parametrize("shape, kwargs", REGIONS, ids=str)
def test_pools_region_by_region_match_torch(monkeypatch, shape, kwargs):
    """Large inputs pool region by region in place, the taps in the padding left out."""
    from kael.frontend import pooling

    monkeypatch.setattr(pooling, "REGION_ELEMENTS", 0)
    dims = len(shape) - 2
    kx, tx = pair(RNG.standard_normal(shape))
    for name in ("max", "avg"):
        k = getattr(KF, f"{name}_pool{dims}d")(kx, **kwargs)
        same(k, getattr(TF, f"{name}_pool{dims}d")(tx, **kwargs), 0)
    same(
        getattr(KF, f"avg_pool{dims}d")(kx, **kwargs, count_include_pad=False),
        getattr(TF, f"avg_pool{dims}d")(tx, **kwargs, count_include_pad=False),
        0,
    )
    if dims > 1:  # integer padding is the dtype's minimum (torch has no uint8 max_pool1d)
        ki, ti = pair(RNG.integers(0, 255, shape), kael.uint8)
        pool, reference = getattr(KF, f"max_pool{dims}d"), getattr(TF, f"max_pool{dims}d")
        same(pool(ki, **kwargs), reference(ti, **kwargs), 0)


@pytest.mark.parametrize("large", [False, True], ids=["one_launch", "by_regions"])
@pytest.mark.parametrize("dtype", [kael.float32, kael.int32], ids=str)
def test_dilated_max_pool_window_wholly_in_the_padding_gives_the_lowest_value(
    monkeypatch, large, dtype
):
    """torch lets a dilated window hold only padding: its max is -inf (an integer dtype's
    minimum), where no tap of it lies inside the input."""
    from kael.frontend import pooling

    if large:
        monkeypatch.setattr(pooling, "REGION_ELEMENTS", 0)
    kx, tx = pair(RNG.integers(-9, 9, (1, 3, 6, 3)), dtype)
    kwargs = {"kernel_size": (1, 2), "padding": (0, 1), "dilation": (1, 4)}
    identical(KF.max_pool2d(kx, **kwargs), TF.max_pool2d(tx, **kwargs))


@pytest.mark.parametrize("large", [False, True], ids=["one_launch", "by_regions"])
def test_average_of_negative_zeros_sums_from_positive_zero_as_torch(monkeypatch, large):
    """PyTorch's window sum starts at +0: a window of -0s (padded or not) averages to +0."""
    from kael.frontend import pooling

    if large:
        monkeypatch.setattr(pooling, "REGION_ELEMENTS", 0)
    kx, tx = pair(np.full((1, 2, 6, 7), -0.0))
    for kwargs in (
        {"kernel_size": 3, "stride": 2, "padding": 1},
        {"kernel_size": 3, "padding": 1, "count_include_pad": False},
        {"kernel_size": 2},
    ):
        identical(KF.avg_pool2d(kx, **kwargs), TF.avg_pool2d(tx, **kwargs))
    identical(KF.avg_pool1d(kx[0], 3, 2, 1), TF.avg_pool1d(tx[0], 3, 2, 1))


@pytest.mark.parametrize("large", [False, True], ids=["one_launch", "by_regions"])
def test_int64_average_truncates_toward_zero_as_torch(monkeypatch, large):
    from kael.frontend import pooling

    if large:
        monkeypatch.setattr(pooling, "REGION_ELEMENTS", 0)
    kx, tx = pair(RNG.integers(-50, 50, (2, 3, 7, 8)), kael.int64)
    for kwargs in (
        {"kernel_size": 3, "stride": 2, "padding": 1},
        {"kernel_size": 3, "padding": 1, "count_include_pad": False},
        {"kernel_size": 2, "divisor_override": 3},
        {"kernel_size": (7, 6)},  # 42 taps: the reduction's path
    ):
        same(KF.avg_pool2d(kx, **kwargs), TF.avg_pool2d(tx, **kwargs), 0)


@pytest.mark.parametrize("p", [1.0, 2.0, 3.0])
def test_lp_pools_match_torch(p):
    for dims, shape, kwargs in (
        (1, (2, 3, 20), {"kernel_size": 3}),
        (2, (2, 3, 9, 8), {"kernel_size": 3, "stride": 2}),
        (2, (2, 3, 9, 8), {"kernel_size": (2, 3), "ceil_mode": True}),
        (3, (1, 2, 6, 6, 6), {"kernel_size": 2}),
    ):
        kx, tx = pair(RNG.standard_normal(shape))
        k = getattr(KF, f"lp_pool{dims}d")(kx, p, **kwargs)
        close_to_torch(k, getattr(TF, f"lp_pool{dims}d")(tx, p, **kwargs), 5e-6, equal_nan=True)


@pytest.mark.parametrize("dims, shape", [(1, (2, 3, 10)), (2, (2, 3, 8, 10)), (3, (1, 2, 4, 6, 6))])
def test_max_pool_with_indices_and_max_unpool_match_torch(dims, shape):
    kx, tx = pair(RNG.standard_normal(shape))
    kv, ki = getattr(KF, f"max_pool{dims}d_with_indices")(kx, 2, 2)
    tv, ti = getattr(TF, f"max_pool{dims}d")(tx, 2, 2, return_indices=True)
    same((kv, ki), (tv, ti), 0)
    unpool, reference = getattr(KF, f"max_unpool{dims}d"), getattr(TF, f"max_unpool{dims}d")
    same(unpool(kv, ki, 2), reference(tv, ti, 2), 0)
    bigger = tuple(s + 1 for s in shape)
    same(unpool(kv, ki, 2, output_size=bigger), reference(tv, ti, 2, output_size=bigger), 0)
    same(unpool(kv[0], ki[0], 2, 2), reference(tv[0], ti[0], 2, 2), 0)  # unbatched


def test_adaptive_max_pool_with_indices_matches_torch():
    kx, tx = pair(RNG.standard_normal((2, 3, 9, 8)))
    same(
        KF.adaptive_max_pool2d_with_indices(kx, (3, 2)),
        TF.adaptive_max_pool2d(tx, (3, 2), return_indices=True),
        0,
    )


def test_max_unpool_refuses_bad_indices():
    values, indices = KF.max_pool2d_with_indices(kael.randn(1, 1, 4, 4), 2)
    with pytest.raises(kael.Error, match="invalid max index"):
        KF.max_unpool2d(values, indices + 100, 2)
    with pytest.raises(kael.ValueError, match="same as that of the input"):
        KF.max_unpool2d(values, indices[..., :1], 2)
    with pytest.raises(kael.TypeError, match="int64"):
        KF.max_unpool2d(values, indices.int(), 2)


@pytest.mark.parametrize("dims", [1, 2, 3])
def test_max_unpool_writes_repeated_indices_of_overlapping_windows_once(dims):
    kx, tx = pair(RNG.standard_normal((2, 3) + (5,) * dims))
    kv, ki = getattr(KF, f"max_pool{dims}d")(kx, 3, 1, return_indices=True)
    tv, ti = getattr(TF, f"max_pool{dims}d")(tx, 3, 1, return_indices=True)
    unpool, reference = getattr(KF, f"max_unpool{dims}d"), getattr(TF, f"max_unpool{dims}d")
    same(unpool(kv, ki, 3, 1), reference(tv, ti, 3, 1), 0)


@pytest.mark.parametrize("output_size", [(3, 3), (1, 1, 10, 8), (7,), (1, 7, 8)], ids=str)
def test_max_unpool_output_size_must_be_within_a_stride_of_the_default(output_size):
    kv, ki = KF.max_pool2d(kael.randn(1, 1, 8, 8), 2, return_indices=True)
    tv, ti = TF.max_pool2d(torch.randn(1, 1, 8, 8), 2, return_indices=True)
    with pytest.raises(ValueError) as expected:
        TF.max_unpool2d(tv, ti, 2, output_size=output_size)
    with pytest.raises(kael.ValueError) as got:
        KF.max_unpool2d(kv, ki, 2, output_size=output_size)
    assert str(expected.value) in str(got.value)


@pytest.mark.parametrize("dims", [1, 2, 3])
@pytest.mark.parametrize(
    "pool, kwargs",
    [
        ("max", {"kernel_size": 2, "padding": -1}),
        ("max", {"kernel_size": 2, "padding": -1, "return_indices": True}),
        ("avg", {"kernel_size": 2, "padding": -1}),
        ("max", {"kernel_size": 3, "padding": 2, "dilation": 2}),  # 2 <= 5 // 2, but > 3 // 2
        ("max", {"kernel_size": 3, "padding": 2, "dilation": 2, "return_indices": True}),
    ],
    ids=str,
)
def test_pools_refuse_negative_padding_and_padding_past_half_the_kernel(dims, pool, kwargs):
    kx, tx = pair(np.ones((1, 1) + (9,) * dims))
    with pytest.raises(RuntimeError):
        getattr(TF, f"{pool}_pool{dims}d")(tx, **kwargs)
    with pytest.raises(kael.ValueError, match="pad"):
        getattr(KF, f"{pool}_pool{dims}d")(kx, **kwargs)


@pytest.mark.parametrize("dims", [1, 2, 3])
def test_max_pools_with_indices_of_an_empty_batch_are_empty_as_torch(dims):
    kx, tx = pair(np.zeros((0, 2) + (4,) * dims))
    for name, args in ((f"max_pool{dims}d", (2,)), (f"adaptive_max_pool{dims}d", (3,))):
        same(getattr(KF, name)(kx, *args), getattr(TF, name)(tx, *args))
        same(
            getattr(KF, name)(kx, *args, return_indices=True),
            getattr(TF, name)(tx, *args, return_indices=True),
        )
    kv, ki = KF.max_pool1d(kx.flatten(2), 2, return_indices=True)
    tv, ti = TF.max_pool1d(tx.flatten(2), 2, return_indices=True)
    same(KF.max_unpool1d(kv, ki, 2), TF.max_unpool1d(tv, ti, 2))


def identical(k, t):
    """kael's result is torch's exactly: dtype, shape, values, NaNs and zeros' signs."""
    if isinstance(t, tuple):
        for a, b in zip(k, t):
            identical(a, b)
        return
    same(k, t, 0)
    got = torch.from_dlpack(k.contiguous())
    if t.dtype.is_floating_point:
        assert torch.equal(torch.signbit(got), torch.signbit(t))


INF = float("inf")
TIES = [  # padding ties the maximum, or no tap is a real element
    pytest.param(np.zeros((1, 1, 3, 3), np.uint8), 2, (3, 1, 1), id="uint8 zeros"),
    pytest.param(np.full((1, 1, 4), -INF), 1, (3, 1, 1), id="-inf"),
    pytest.param(np.full((1, 1, 4), -(2**63)), 1, (3, 1, 1), id="int64 min"),
    pytest.param(np.full((1, 2, 3, 4, 3), -INF), 3, (3, 2, 1), id="-inf 3d"),
    pytest.param(np.full((1, 1, 5, 4), -INF), 2, (2, 2, 1, 1, True), id="ceil_mode"),
    pytest.param(np.ones((1, 1, 1)), 1, (2, 1, 1, 2), id="padding only"),
    pytest.param(np.full((1, 1, 40), -INF), 1, (35, 3, 17), id="runs of taps"),
    pytest.param(np.zeros((1, 1, 9, 9), np.uint8), 2, (7, 2, 3), id="uint8 runs of taps"),
    pytest.param(np.full((1, 1, 1040), -INF), 1, (1030, 500, 515), id="reduction"),
]


@pytest.mark.parametrize("array, dims, args", TIES)
def test_max_pool_indices_when_padding_ties_the_maximum_are_torch_scans(array, dims, args):
    """PyTorch's scan starts from -inf (the dtype's minimum) at the window's first real
    position and moves only on a greater value: padding never wins a tie."""
    dtype = {np.uint8: kael.uint8, np.int64: kael.int64}.get(array.dtype.type, kael.float32)
    kx, tx = pair(array, dtype)
    name = f"max_pool{dims}d"
    got = getattr(KF, name)(kx, *args, return_indices=True)
    identical(got, getattr(TF, name)(tx, *args, return_indices=True))


NAN = float("nan")
NAN_WINDOWS = [  # (values, kernel, stride, padding)
    pytest.param([NAN, 1.0, NAN, 2.0], 4, 4, 0, id="one window"),
    pytest.param([NAN, 1.0, NAN, 2.0, -NAN, 0.0], 3, 1, 1, id="padded"),
    pytest.param([NAN, 5.0, NAN] + [1.0] * 37, 40, 40, 0, id="runs of taps"),
    pytest.param([NAN, 5.0, NAN] + [1.0] * 1100, 1103, 1103, 0, id="reduction"),
]


@pytest.mark.parametrize("values, kernel, stride, padding", NAN_WINDOWS)
def test_max_pool_of_nan_windows_gives_the_last_nan_as_torch(values, kernel, stride, padding):
    """PyTorch's scan moves on every NaN: the index (and value) is the window's last NaN."""
    kx, tx = pair(np.array(values).reshape(1, 1, -1))
    identical(
        KF.max_pool1d(kx, kernel, stride, padding, return_indices=True),
        TF.max_pool1d(tx, kernel, stride, padding, return_indices=True),
    )
    kx2, tx2 = kx.unsqueeze(2), tx.unsqueeze(2)
    identical(
        KF.max_pool2d(kx2, (1, kernel), (1, stride), (0, padding), return_indices=True),
        TF.max_pool2d(tx2, (1, kernel), (1, stride), (0, padding), return_indices=True),
    )
    for size in (1, 2):
        identical(
            KF.adaptive_max_pool1d(kx, size, return_indices=True),
            TF.adaptive_max_pool1d(tx, size, return_indices=True),
        )


@pytest.mark.parametrize("large", [False, True], ids=["one_launch", "by_regions"])
@pytest.mark.parametrize("kernel", [2, 3, 41, 1030], ids=str)
def test_max_pool_of_tied_signed_zeros_keeps_the_first_as_torch(monkeypatch, large, kernel):
    from kael.frontend import pooling

    if large:
        monkeypatch.setattr(pooling, "REGION_ELEMENTS", 0)
    zeros = np.where(RNG.random((2, 3, 2100)) < 0.5, -0.0, 0.0)
    kx, tx = pair(zeros)
    identical(KF.max_pool1d(kx, kernel), TF.max_pool1d(tx, kernel))
    identical(KF.max_pool2d(kx, (1, kernel)), TF.max_pool2d(tx, (1, kernel)))
    identical(KF.adaptive_max_pool1d(kx, 3), TF.adaptive_max_pool1d(tx, 3))


@pytest.mark.parametrize("dims", [1, 2, 3])
@pytest.mark.parametrize("special", [INF, -INF, NAN], ids=str)
def test_adaptive_avg_pool_keeps_inf_and_nan_in_their_own_windows(dims, special):
    """Each window is summed from its own values: no zero weight meets an inf (0 * inf
    is NaN) in the windows that leave it out."""
    array = RNG.standard_normal((2, 3) + (7, 5, 4)[:dims])
    array[(0, 1) + (2, 1, 3)[:dims]] = special
    kx, tx = pair(array)
    for size in (3, 4, 9):
        name = f"adaptive_avg_pool{dims}d"
        same(getattr(KF, name)(kx, size), getattr(TF, name)(tx, size), 3e-6)
        area = {"size": (size,) * dims, "mode": "area"}
        same(KF.interpolate(kx, **area), TF.interpolate(tx, **area), 3e-6)


@pytest.mark.parametrize("dtype", [kael.int64, kael.uint8], ids=str)
def test_adaptive_pools_refuse_non_floating_input_as_torch(dtype):
    kx, tx = pair(np.ones((1, 2, 4, 4)), dtype)
    for name, kwargs in (
        ("adaptive_avg_pool2d", {"output_size": 2}),
        ("adaptive_max_pool2d", {"output_size": 2}),
        ("interpolate", {"size": 2, "mode": "area"}),
    ):
        with pytest.raises(NotImplementedError):
            getattr(TF, name)(tx, **kwargs)
        with pytest.raises(kael.TypeError, match=str(dtype)):
            getattr(KF, name)(kx, **kwargs)


@pytest.mark.parametrize("shape", [(1, 2, 0, 4), (2, 4, 0)], ids=str)
@pytest.mark.parametrize("pool", ["avg", "max"])
def test_adaptive_pools_refuse_an_empty_spatial_dim_as_torch(pool, shape):
    kx, tx = pair(np.ones(shape))
    name = f"adaptive_{pool}_pool2d"
    with pytest.raises(RuntimeError) as expected:
        getattr(TF, name)(tx, 2)
    with pytest.raises(kael.ValueError) as got:
        getattr(KF, name)(kx, 2)
    assert str(expected.value) in str(got.value)


@pytest.mark.parametrize("norm_type", [INF, -INF], ids=str)
def test_lp_pool_of_an_infinite_norm_is_the_max_or_min_magnitude_as_torch(norm_type):
    for dims, shape, kwargs in (
        (1, (2, 3, 20), {"kernel_size": 3}),
        (2, (2, 3, 9, 8), {"kernel_size": 3, "stride": 2, "ceil_mode": True}),
        (3, (1, 2, 6, 6, 6), {"kernel_size": 2}),
    ):
        kx, tx = pair(RNG.standard_normal(shape))
        name = f"lp_pool{dims}d"
        same(getattr(KF, name)(kx, norm_type, **kwargs), getattr(TF, name)(tx, norm_type, **kwargs))


@pytest.mark.parametrize("kernel", [5, 7], ids=str)  # 25 taps: one kernel; 49: a reduction
def test_half_avg_pool_sums_in_float32_and_rounds_once(kernel):
    """A float16 sum of 49 values of 60000 overflows; a bfloat16 sum rounded to bfloat16
    before the division is a step off PyTorch's float32 sum's average."""
    kx, tx = pair(np.full((1, 2, 7, 7), 60000.0), kael.float16)
    same(KF.avg_pool2d(kx, kernel), TF.avg_pool2d(tx, kernel), 0)
    kx, tx = pair(RNG.uniform(1, 2, (2, 8, 14, 14)), kael.bfloat16)
    for divisor in (None, 2049):  # no float16 or bfloat16 divisor either
        expected = TF.avg_pool2d(tx, kernel, divisor_override=divisor)
        same(KF.avg_pool2d(kx, kernel, divisor_override=divisor), expected, 0)


@pytest.mark.parametrize("name", ["avg_pool3d", "lp_pool3d"])
def test_avg_pool3d_refuses_an_input_smaller_than_its_kernel_as_torch(name):
    kx, tx = pair(np.ones((1, 1, 1, 4, 4)))
    args = (2.0, 2) if name == "lp_pool3d" else (2, 2, 1)
    with pytest.raises(RuntimeError, match="smaller than kernel size"):
        getattr(TF, name)(tx, *args)
    with pytest.raises(kael.ValueError, match=r"input image \(T: 1 H: 4 W: 4\) smaller than"):
        getattr(KF, name)(kx, *args)


def test_max_unpool_refuses_a_negative_output_size_as_torch():
    """(1 - 1) * 2 + 2 - 2 * 3 rows: refused before the indices are checked against it."""
    kx, tx = pair(np.ones((1, 1, 1, 3)))
    ki, ti = pair(np.zeros((1, 1, 1, 3)), kael.int64)
    with pytest.raises(ValueError, match="non-negative"):
        TF.max_unpool2d(tx, ti, 2, padding=(3, 0))
    with pytest.raises(kael.ValueError, match=r"non-negative .* output_size\[0\]=-4"):
        KF.max_unpool2d(kx, ki, 2, padding=(3, 0))


@pytest.mark.parametrize("dims", [1, 2, 3])
def test_max_unpool_names_the_invalid_index_as_torch(dims):
    shape = (1, 1) + (1, 1, 2)[-dims:]
    kx, tx = pair(np.ones(shape))
    ki, ti = pair(np.array([1, 40]).reshape(shape), kael.int64)  # planes of 4, 8 and 16
    with pytest.raises(RuntimeError) as expected:
        getattr(TF, f"max_unpool{dims}d")(tx, ti, 2)
    with pytest.raises(kael.Error) as got:
        getattr(KF, f"max_unpool{dims}d")(kx, ki, 2)
    assert "Found an invalid max index: 40 " in str(expected.value)
    assert str(expected.value) in str(got.value)


@pytest.mark.parametrize("divisor", [2.5, 2.0, True], ids=str)
def test_avg_pool_divisor_override_must_be_an_int_as_torch(divisor):
    kx, tx = pair(np.ones((1, 1, 4, 4)))
    with pytest.raises(TypeError, match="divisor_override"):
        TF.avg_pool2d(tx, 2, divisor_override=divisor)
    with pytest.raises(kael.TypeError, match="divisor_override"):
        KF.avg_pool2d(kx, 2, divisor_override=divisor)
    same(
        KF.avg_pool2d(kx, 2, divisor_override=np.int64(3)), TF.avg_pool2d(tx, 2, divisor_override=3)
    )


@pytest.mark.parametrize("op", ["adaptive_avg_pool2d", "adaptive_max_pool2d"])
def test_an_impossible_adaptive_output_fails_at_once(op):
    start = time.perf_counter()
    with pytest.raises(kael.Error, match="out of memory"):
        getattr(kael.nn.functional, op)(kael.ones(1, 1, 2, 2), (10**7, 10**7))
    assert time.perf_counter() - start < 5


POOL_DOOR_CALLS = [
    (KF.max_pool2d, (1, 3, 8, 8), {"kernel_size": 2}),
    (KF.max_pool2d, (3, 9, 9), {"kernel_size": 3, "stride": 2}),  # unbatched
    (KF.max_pool2d, (2, 2, 9, 7), {"kernel_size": (2, 3), "stride": (1, 2), "dilation": (2, 1)}),
    (KF.max_pool1d, (2, 4, 16), {"kernel_size": 3}),
    (KF.max_pool3d, (1, 2, 5, 5, 5), {"kernel_size": 2}),
    (KF.avg_pool2d, (1, 3, 8, 8), {"kernel_size": 2}),
    (KF.avg_pool2d, (3, 9, 9), {"kernel_size": 3, "stride": 2}),
    (KF.avg_pool2d, (2, 2, 9, 7), {"kernel_size": (2, 3), "divisor_override": 5}),
    (KF.avg_pool1d, (2, 4, 16), {"kernel_size": 3}),
    (KF.avg_pool3d, (1, 2, 5, 5, 5), {"kernel_size": 2}),
]


def _the_new_key(pooling, call):
    """Run `call` with the door emptied: the one key it kept."""
    saved = dict(pooling._DOOR)
    pooling._DOOR.clear()
    try:
        result = call()
        (key,) = pooling._DOOR
        return result, key, pooling._DOOR[key]
    finally:
        pooling._DOOR.clear()
        pooling._DOOR.update(saved)


@pytest.mark.parametrize("call", POOL_DOOR_CALLS, ids=lambda c: f"{c[0].__name__}{c[1]}{c[2]}")
@pytest.mark.parametrize("dtype", [kael.float32, kael.float64, kael.int64], ids=str)
@pytest.mark.parametrize("transposed", [False, True], ids=["dense", "transposed"])
def test_pool_fast_door_replays_the_full_doors_values_on_each_calls_input(call, dtype, transposed):
    """After a layout's first call, the one launch that made its result replays over each
    call's input at the taps' distances: the full door's values (an emptied door runs it
    again), on new values each time, NaN included."""
    from kael.frontend import pooling

    fn, shape, kwargs = call
    rng = np.random.default_rng(9)
    values = rng.standard_normal(shape) * 10
    first = kael.tensor(values, dtype=dtype)
    first = first.transpose(-1, -2).contiguous().transpose(-1, -2) if transposed else first
    if dtype is kael.int64 and fn.__name__.startswith("avg"):
        saved = dict(pooling._DOOR)
        pooling._DOOR.clear()
        fn(first, **kwargs)  # an integer division checks for faults: the door leaves it
        marks = list(pooling._DOOR.values())
        pooling._DOOR.clear()
        pooling._DOOR.update(saved)
        assert marks == [pooling._UNSERVED]
        return
    _, key, kept = _the_new_key(pooling, lambda: fn(first, **kwargs))
    pooling._DOOR[key] = kept
    for _ in range(3):
        values = rng.standard_normal(shape) * 10
        if dtype.is_floating_point:
            values.flat[::7] = np.nan
        x = kael.tensor(values, dtype=dtype)
        x = x.transpose(-1, -2).contiguous().transpose(-1, -2) if transposed else x
        got = fn(x, **kwargs)
        full, again, _ = _the_new_key(pooling, lambda x=x: fn(x, **kwargs))
        assert again == key
        assert got.shape == full.shape and got.dtype is dtype and got.is_contiguous()
        np.testing.assert_array_equal(got.numpy(), full.numpy())
        want = getattr(TF, fn.__name__)(torch.from_dlpack(x).double(), **kwargs)
        tol = 1e-5 if dtype is kael.float32 else 1e-12  # float32 averages cancel
        np.testing.assert_allclose(got.numpy().astype(np.float64), want.numpy(), tol, tol)


def test_pool_fast_door_leaves_padded_and_indexed_calls_to_the_full_door():
    from kael.frontend import pooling

    x = kael.randn(1, 3, 8, 8)
    before = dict(pooling._DOOR)
    for kwargs in ({"padding": 1}, {"return_indices": True}, {"ceil_mode": True}):
        KF.max_pool2d(x, 3, **kwargs)
    KF.avg_pool2d(x, 3, padding=1)
    KF.avg_pool2d(x, 7)  # 49 taps: a reduction first, then the division
    assert before == pooling._DOOR
    assert fastpath.tensor_key(x, ([2, 2], None, 0, 1, False, False), "max_pool2d") is None


def test_pool_door_keys_arguments_by_type_so_a_bool_is_refused_after_an_int():
    """True == 1 to a dict, not to the full door: the key holds each argument's type."""
    x = kael.randn(1, 2, 6, 6)
    KF.max_pool2d(x, 2, 1)
    with pytest.raises(kael.TypeError):
        KF.max_pool2d(x, 2, True)
    KF.avg_pool2d(x, 2, divisor_override=1)
    with pytest.raises(kael.TypeError):
        KF.avg_pool2d(x, 2, divisor_override=True)


def test_a_pool_too_big_to_keep_is_marked_and_takes_the_layouts_door():
    from kael.frontend import pooling

    x = kael.randn(4, 64, 56, 56)  # its launch moves far more than an inline one
    KF.max_pool2d(x, 3, 2)
    key = fastpath.tensor_key(x, (3, 2, 0, 1, False, False), "max_pool2d")
    assert pooling._DOOR.get(key) is pooling._UNSERVED
    door, served = pooling._served("max_pool2d", x, (3, 2, 0, 1, False, False))
    assert door is None and served is None  # no `seen`: the formula's layouts door serves it
    want = TF.max_pool2d(torch.from_dlpack(x), 3, 2)
    np.testing.assert_array_equal(KF.max_pool2d(x, 3, 2).numpy(), want.numpy())
