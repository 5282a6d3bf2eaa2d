"""F.interpolate in every mode, by size and by scale_factor, with align_corners, against
PyTorch, and its refusals."""

import time

import numpy as np
import pytest
import torch
import torch.nn.functional as TF
from parity_helpers import close_to_torch
from parity_helpers import torch_pair as both

import kael
import kael.nn.functional as KF

RNG = np.random.default_rng(47)
X2 = RNG.standard_normal((2, 3, 7, 9))
SIZES = [{"size": (5, 6)}, {"size": (14, 20)}, {"scale_factor": 1.7}, {"scale_factor": (0.5, 2.0)}]
SIZES += [{"size": (1, 1)}, {"scale_factor": 2.5, "recompute_scale_factor": True}]


def same(k, t, tol):
    close_to_torch(k, t, tol)


@pytest.mark.parametrize("dtype", [kael.float32, kael.float64], ids=str)
@pytest.mark.parametrize("kwargs", SIZES, ids=str)
@pytest.mark.parametrize(
    ("mode", "align"),
    [("nearest", None), ("nearest-exact", None), ("area", None)]
    + [(m, a) for m in ("bilinear", "bicubic") for a in (False, True)],
)
def test_interpolate_2d_matches_torch(mode, align, kwargs, dtype):
    kx, tx = both(X2, dtype)
    tol = 3e-6 if dtype is kael.float32 else 1e-12
    k = KF.interpolate(kx, mode=mode, align_corners=align, **kwargs)
    same(k, TF.interpolate(tx, mode=mode, align_corners=align, **kwargs), tol)


@pytest.mark.parametrize("mode", ["nearest", "linear", "area"])
def test_interpolate_1d_and_3d_match_torch(mode):
    kx, tx = both(X2[0])
    same(KF.interpolate(kx, size=11, mode=mode), TF.interpolate(tx, size=11, mode=mode), 3e-6)
    kx, tx = both(RNG.standard_normal((1, 2, 3, 4, 5)))
    mode3 = "trilinear" if mode == "linear" else mode
    same(
        KF.interpolate(kx, scale_factor=2, mode=mode3),
        TF.interpolate(tx, scale_factor=2, mode=mode3),
        3e-6,
    )


def test_nearest_keeps_integer_and_half_dtypes():
    kx, tx = both(np.arange(24).reshape(1, 2, 3, 4), kael.uint8)
    same(KF.interpolate(kx, scale_factor=2), TF.interpolate(tx, scale_factor=2), 0)
    kx, tx = both(X2, kael.float16)
    same(
        KF.interpolate(kx, size=(9, 4), mode="bilinear"),
        TF.interpolate(tx, size=(9, 4), mode="bilinear"),
        2e-3,
    )


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"size": 4, "scale_factor": 2.0}, "only one of size or scale_factor"),
        ({}, "either size or scale_factor should be defined"),
        ({"size": (4, 4), "mode": "cubic"}, "mode must be one of"),
        ({"size": (4, 4), "mode": "nearest", "align_corners": True}, "align_corners option"),
        ({"size": (4, 4, 4)}, "same number of spatial dimensions"),
        ({"size": (4, 4), "mode": "trilinear"}, "needs 5D input"),
        ({"size": (0, 4)}, "positive"),
        ({"scale_factor": float("nan")}, r"finite numbers, got \[nan, nan\]"),
        ({"scale_factor": (float("inf"), 1.0), "mode": "bilinear"}, r"got \[inf, 1.0\]"),
    ],
)
def test_bad_arguments_raise(kwargs, message):
    with pytest.raises(kael.ValueError, match=message):
        KF.interpolate(kael.ones(1, 1, 3, 3), **kwargs)


@pytest.mark.parametrize(
    ("size", "message"),
    [((2.0, 2), "size element 0 must be an int, got float"), (2.5, "got float"), ("4", "str")],
)
def test_a_size_that_is_not_ints_raises_a_type_error(size, message):
    with pytest.raises(kael.TypeError, match=message):
        KF.interpolate(kael.ones(1, 1, 3, 3), size=size)


@pytest.mark.parametrize("size", [np.int64(5), np.int32(5), "tensor", [np.int64(5), 5]])
def test_a_size_takes_numpy_integers_and_0d_integer_tensors_as_torch(size):
    x = np.arange(16.0, dtype=np.float32).reshape(1, 1, 4, 4)
    k_size = kael.tensor(5) if isinstance(size, str) else size
    t_size = torch.tensor(5) if isinstance(size, str) else size
    same(
        KF.interpolate(kael.tensor(x), size=k_size, mode="bilinear"),
        TF.interpolate(torch.from_numpy(x), size=t_size, mode="bilinear"),
        1e-6,
    )
    assert kael.nn.Upsample(size=k_size)(kael.tensor(x)).shape == (1, 1, 5, 5)


@pytest.mark.parametrize("mode", ["bilinear", "area"])
def test_half_floats_resample_in_float32_and_round_once(mode):
    # Rounding the tap weights and each dim's result to bfloat16 moved values near zero
    # several bfloat16 steps from PyTorch's.
    kx, tx = both(X2, kael.bfloat16)
    for size in ((5, 7), (9, 4)):
        k = torch.from_dlpack(KF.interpolate(kx, size=size, mode=mode)).double()
        t = TF.interpolate(tx, size=size, mode=mode).double()
        torch.testing.assert_close(k, t, rtol=2**-7, atol=1e-5)  # a step at most


@pytest.mark.filterwarnings("ignore:`nn.functional.upsample")
def test_deprecated_upsample_spellings_match_torch():
    kx = kael.randn(2, 3, 5, 6)
    tx = torch.from_numpy(kx.numpy())
    for k, t in (
        (
            KF.upsample(kx, scale_factor=2, mode="bicubic"),
            TF.upsample(tx, scale_factor=2, mode="bicubic"),
        ),
        (KF.upsample_nearest(kx, size=(7, 9)), TF.upsample_nearest(tx, size=(7, 9))),
        (KF.upsample_bilinear(kx, scale_factor=2), TF.upsample_bilinear(tx, scale_factor=2)),
    ):
        np.testing.assert_allclose(k.numpy(), t.numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(
    ("mode", "shape", "scale_factor"),
    [
        ("nearest", (1, 2, 3), 1.3),  # 1-D and 3-D nearest take no shortcut
        ("nearest", (1, 2, 3, 4), 1.3),
        ("nearest", (1, 2, 3, 4), (2.3, 1.2)),
        ("nearest", (1, 2, 3, 3, 3), 2.3),
        ("nearest-exact", (1, 2, 3, 4), (2.3, 1.2)),
        ("linear", (1, 2, 3), 1.2),
        ("bilinear", (1, 2, 2, 4), (1.3, 2.2)),
        ("bicubic", (1, 2, 3, 4), 1.3),
        ("trilinear", (1, 2, 2, 4, 3), (2.4, 1.1, 1.2)),
    ],
    ids=str,
)
def test_scale_factor_keeping_or_doubling_a_size_takes_torchs_cpu_shortcuts(
    mode, shape, scale_factor
):
    # An unchanged dim is copied by the linear modes (its weight 0 still on the same row:
    # an infinity there gives NaN) and 2-D nearest; 2-D nearest maps a doubled dim by j >> 1.
    x = RNG.standard_normal(shape)
    x.reshape(-1)[:2] = [np.inf, np.nan]
    kx, tx = both(x)
    close_to_torch(
        KF.interpolate(kx, scale_factor=scale_factor, mode=mode),
        TF.interpolate(tx, scale_factor=scale_factor, mode=mode),
        1e-6,
        equal_nan=True,
    )


@pytest.mark.parametrize(
    "call",
    [
        lambda F, x: F.interpolate(x, scale_factor=1e10),
        lambda F, x: F.interpolate(x, size=(10**7, 10**7), mode="bilinear"),
        lambda F, x: F.interpolate(x, size=(10**7, 10**7), mode="area"),
    ],
)
def test_an_impossible_output_fails_at_once(call):
    """A scale factor meant as a size built a Python list per output row first: it hung."""
    start = time.perf_counter()
    with pytest.raises((kael.Error, kael.ValueError)):
        call(kael.nn.functional, kael.ones(1, 1, 2, 2))
    assert time.perf_counter() - start < 5


ANTIALIAS = [
    ((1, 3, 17, 23), {"size": (5, 7), "mode": "bilinear"}),
    ((1, 3, 17, 23), {"size": (5, 7), "mode": "bicubic"}),
    ((2, 3, 16, 16), {"scale_factor": 0.5, "mode": "bilinear"}),
    ((1, 1, 8, 8), {"size": (16, 12), "mode": "bilinear"}),  # upscaling: plain taps
    ((1, 1, 9, 9), {"size": (4, 4), "mode": "bicubic", "align_corners": True}),
    ((1, 1, 10, 10), {"scale_factor": 0.3, "mode": "bicubic"}),
    ((1, 3, 64, 48), {"size": (20, 20), "mode": "bilinear", "align_corners": True}),
]


@pytest.mark.parametrize(("shape", "options"), ANTIALIAS, ids=str)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_antialias_matches_torch(shape, options, dtype):
    """torchvision's Resize defaults to antialias=True: downscaling averages every input
    pixel under an output pixel (it was refused)."""
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    got = KF.interpolate(kael.tensor(x).to(getattr(kael, dtype)), antialias=True, **options)
    want = TF.interpolate(torch.tensor(x).to(getattr(torch, dtype)), antialias=True, **options)
    assert got.shape == tuple(want.shape) and str(got.dtype) == str(want.dtype)[6:]
    tol = {"float32": 1e-6, "float64": 1e-13}[dtype]
    np.testing.assert_allclose(got.double().numpy(), want.double().numpy(), rtol=tol, atol=tol)


def test_antialias_needs_bilinear_or_bicubic():
    with pytest.raises(kael.ValueError, match="Anti-alias option is restricted to bilinear"):
        KF.interpolate(kael.ones(1, 1, 4, 4), size=2, mode="nearest", antialias=True)


def test_antialias_in_bfloat16_is_the_float32_result_rounded_once():
    """torch has no bfloat16 antialias kernel; kael computes it in float32, as its others."""
    x = kael.randn(1, 2, 16, 16)
    got = KF.interpolate(x.bfloat16(), size=(5, 5), mode="bilinear", antialias=True)
    want = KF.interpolate(x.bfloat16().float(), size=(5, 5), mode="bilinear", antialias=True)
    assert got.dtype is kael.bfloat16 and kael.equal(got, want.bfloat16())


@pytest.mark.parametrize(
    ("shape", "kwargs"), [((1, 1, 1), {"scale_factor": 0.5}), ((1, 1, 3, 3), {"size": (0, 2)})]
)
def test_area_mode_resizes_to_zero_as_torch(shape, kwargs):
    """area is adaptive average pooling, which takes an output of 0; the other modes refuse."""
    want = TF.interpolate(torch.ones(shape), mode="area", **kwargs)
    got = KF.interpolate(kael.ones(shape), mode="area", **kwargs)
    assert got.shape == tuple(want.shape) and got.numel() == 0
    with pytest.raises(RuntimeError, match="greater than 0"):
        TF.interpolate(torch.ones(shape), mode="nearest", **kwargs)
    with pytest.raises(kael.ValueError, match="output sizes must be positive"):
        KF.interpolate(kael.ones(shape), mode="nearest", **kwargs)


def test_a_repeated_resize_reuses_its_tables_and_a_trace_keeps_none():
    from kael.frontend import interpolate as module

    x = np.random.default_rng(5).standard_normal((1, 2, 5, 7)).astype(np.float32)
    q = kael.tensor(x)
    want = torch.nn.functional.interpolate(torch.from_numpy(x), size=(9, 4), mode="bilinear")
    compiled = kael.compile(
        lambda q: kael.nn.functional.interpolate(q, size=(9, 4), mode="bilinear")
    )
    kept = module._tables.cache_info().currsize
    # the trace's pass makes its tables apart (a lazy tensor kept would fail the eager
    # calls below), the plan's first run makes them for good
    np.testing.assert_allclose(compiled(q).numpy(), want.numpy(), rtol=1e-6, atol=1e-6)
    for _ in range(3):  # the plan's replays and eager calls share one table per dim
        for got in (compiled(q), kael.nn.functional.interpolate(q, size=(9, 4), mode="bilinear")):
            np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6, atol=1e-6)
    info = module._tables.cache_info()
    assert info.currsize == kept + 2 and info.hits >= 10


def test_a_resize_to_many_positions_keeps_no_tables():
    from kael.frontend import interpolate as module

    x = np.random.default_rng(6).standard_normal((1, 1, 7)).astype(np.float32)
    size = module.KEPT_POSITIONS + 1
    before = module._tables.cache_info().currsize
    got = kael.nn.functional.interpolate(kael.tensor(x), size=size, mode="linear")
    want = torch.nn.functional.interpolate(torch.from_numpy(x), size=size, mode="linear")
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6, atol=1e-6)
    assert module._tables.cache_info().currsize == before


RESIZE_DOOR_CALLS = [
    ((1, 3, 8, 8), {"scale_factor": 2, "mode": "bilinear"}),
    ((1, 3, 8, 8), {"size": (5, 11), "mode": "bilinear", "align_corners": True}),
    ((2, 3, 7), {"scale_factor": 1.5, "mode": "linear"}),
    ((1, 2, 4, 5, 6), {"scale_factor": 2, "mode": "trilinear"}),
    ((1, 3, 8, 8), {"scale_factor": 3, "mode": "bicubic"}),
    ((1, 3, 8, 8), {"size": (4, 4), "mode": "bilinear", "antialias": True}),
]


def _kept_key(interpolate, call):
    """Run `call` with the door emptied: the one key it kept (None if none) and the result."""
    saved = dict(interpolate._DOOR)
    interpolate._DOOR.clear()
    try:
        result = call()
        keys = list(interpolate._DOOR)
        return result, (keys[0] if keys else None), dict(interpolate._DOOR)
    finally:
        interpolate._DOOR.clear()
        interpolate._DOOR.update(saved)


@pytest.mark.parametrize("call", RESIZE_DOOR_CALLS, ids=lambda c: f"{c[0]}{c[1]}")
@pytest.mark.parametrize("dtype", [kael.float32, kael.float64], ids=str)
def test_resize_fast_door_replays_the_full_doors_bits_on_each_calls_input(call, dtype):
    """After a resize's first call, its passes replay from each call's input through fresh
    buffers: the full door's bits (an emptied door runs it again) on new values."""
    from kael.frontend import interpolate

    shape, kwargs = call
    rng = np.random.default_rng(10)
    first = kael.tensor(rng.standard_normal(shape), dtype=dtype)
    _, key, kept = _kept_key(interpolate, lambda: KF.interpolate(first, **kwargs))
    assert key is not None
    interpolate._DOOR.update(kept)
    for _ in range(3):
        x = kael.tensor(rng.standard_normal(shape), dtype=dtype)
        got = KF.interpolate(x, **kwargs)
        full, again, _ = _kept_key(interpolate, lambda x=x: KF.interpolate(x, **kwargs))
        assert again == key
        assert got.shape == full.shape and got.dtype is dtype and got.is_contiguous()
        np.testing.assert_array_equal(got.numpy(), full.numpy())
        close_to_torch(got, TF.interpolate(torch.from_dlpack(x), **kwargs), 1e-5)


@pytest.mark.parametrize(
    "make",
    [
        lambda: kael.randn(1, 3, 8, 8).transpose(-1, -2),  # not contiguous
        lambda: kael.randn(1, 3, 8, 8).half(),  # resampled in float32, then rounded
    ],
    ids=["transposed", "float16"],
)
def test_resize_fast_door_leaves_other_inputs_to_the_full_door(make):
    from kael.frontend import interpolate

    x = make()
    _, key, _ = _kept_key(interpolate, lambda: KF.interpolate(x, scale_factor=2, mode="bilinear"))
    assert key is None


def test_resize_door_keys_sizes_by_type_so_a_float_size_is_refused_after_an_int():
    x = kael.randn(1, 2, 8, 8)
    KF.interpolate(x, size=16, mode="bilinear")
    KF.interpolate(x, size=(16, 16), mode="bilinear")
    for size in (16.0, (16.0, 16.0)):
        with pytest.raises(kael.TypeError):
            KF.interpolate(x, size=size, mode="bilinear")
