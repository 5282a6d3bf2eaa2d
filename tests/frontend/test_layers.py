"""embedding, one_hot, normalize, rms_norm, pixel_shuffle and pixel_unshuffle against
PyTorch: values, dtype and shape, and typed errors for bad inputs."""

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as TF
from kernel_helpers import TORCH_DTYPES
from parity_helpers import close_to_torch, door_and_full
from parity_helpers import torch_pair as both

import kael
import kael.nn.functional as KF

RNG = np.random.default_rng(21)


def same(k, t, tol=0.0):
    close_to_torch(k, t, tol, equal_nan=True)


@pytest.mark.parametrize("index_shape", [(), (5,), (2, 3), (0, 4)])
def test_embedding_gathers_rows_as_torch(index_shape):
    weight = RNG.standard_normal((7, 3))
    index = RNG.integers(0, 7, index_shape)
    kw, tw = both(weight, kael.float64)
    ki, ti = both(index, kael.int64)
    same(KF.embedding(ki, kw), TF.embedding(ti, tw))
    same(KF.embedding(ki, kw.T.contiguous().T, padding_idx=0), TF.embedding(ti, tw, padding_idx=0))


@pytest.mark.parametrize("dtype", [kael.float32, kael.bool, kael.uint8, kael.int8, kael.int16])
def test_embedding_takes_int64_and_int32_indices_only_as_torch(dtype):
    with pytest.raises(RuntimeError, match="Long, Int"):
        TF.embedding(torch.tensor([1, 0]).to(TORCH_DTYPES[dtype]), torch.ones(3, 2))
    with pytest.raises(kael.TypeError, match=f"int64 or int32 indices, got {dtype}"):
        KF.embedding(kael.tensor([1, 0]).to(dtype), kael.ones(3, 2))
    rows = KF.embedding(kael.tensor([1, 0], dtype=kael.int32), kael.arange(6.0).view(3, 2))
    assert rows.tolist() == [[2.0, 3.0], [0.0, 1.0]]


def test_embedding_refuses_bad_indices_and_weights():
    with pytest.raises(kael.ValueError, match="2-D"):
        KF.embedding(kael.tensor([0]), kael.ones(3))
    with pytest.raises(kael.IndexError):
        KF.embedding(kael.tensor([3]), kael.ones(3, 2))


@pytest.mark.parametrize("num_classes", [-1, 5])
def test_one_hot_matches_torch(num_classes):
    values = np.array([[0, 3], [1, 1], [2, 0]])
    k, t = both(values, kael.int64)
    same(KF.one_hot(k, num_classes), TF.one_hot(t, num_classes))


@pytest.mark.parametrize(
    ("values", "num_classes", "error", "message"),
    [
        ([0, -1], -1, kael.ValueError, "non-negative"),
        ([0, 5], 3, kael.ValueError, "smaller than num_classes"),
        ([], -1, kael.ValueError, "empty tensor"),
    ],
)
def test_one_hot_refuses_what_torch_refuses(values, num_classes, error, message):
    with pytest.raises(RuntimeError):
        TF.one_hot(torch.tensor(values, dtype=torch.int64), num_classes)
    with pytest.raises(error, match=message):
        KF.one_hot(kael.tensor(values, dtype=kael.int64), num_classes)
    with pytest.raises(kael.TypeError, match="int64"):
        KF.one_hot(kael.tensor([0, 1], dtype=kael.int32))


@pytest.mark.parametrize("p", [1, 2, 3.0, math.inf])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_normalize_matches_torch(p, dim):
    x = RNG.standard_normal((4, 6))
    x[1] = 0.0  # a zero vector: divided by eps
    k, t = both(x)
    same(KF.normalize(k, p, dim), TF.normalize(t, p, dim), 2e-6)
    same(KF.normalize(k.T, p, dim), TF.normalize(t.T, p, dim), 2e-6)


@pytest.mark.parametrize(
    "dtype", [kael.float32, kael.float64, kael.float16, kael.bfloat16], ids=str
)
@pytest.mark.parametrize("shape", [(5,), (3, 5)])
def test_rms_norm_matches_torch(dtype, shape):
    x = RNG.standard_normal((2, 3, 5))
    w = RNG.standard_normal(shape)
    k, t = both(x, dtype)
    kw, tw = both(w, dtype)
    tol = {kael.float32: 2e-6, kael.float64: 1e-12}.get(dtype, 2e-2)
    same(KF.rms_norm(k, shape), TF.rms_norm(t, shape), tol)
    same(KF.rms_norm(k, shape, kw, eps=1e-3), TF.rms_norm(t, shape, tw, eps=1e-3), tol)


@pytest.mark.parametrize("dtype", [kael.float32, kael.float64], ids=str)
@pytest.mark.parametrize("cols", [1, 7, 64, 129, 1000])
def test_host_rms_norm_is_one_row_kernel_with_the_compositions_values(monkeypatch, dtype, cols):
    """A host float32/float64 rms_norm over rows runs the row kernel: float32 gives the
    composed ops' bits (its float64 sum of the rounded squares is exact); float64 sums in
    another order, within 4 ulp of them; both as torch within the suite's tolerance."""
    from kael.frontend import nn

    x = RNG.standard_normal((6, cols)) * 3
    w = RNG.standard_normal(cols)
    k, t = both(x, dtype)
    kw, tw = both(w, dtype)
    for weight, tweight in ((None, None), (kw, tw)):
        with kael.profiler.profile() as prof:
            rows = KF.rms_norm(k, (cols,), weight, 1e-5)
        assert [e.key for e in prof.events() if e.key.startswith("kael_rows_rms_norm")]
        same(rows, TF.rms_norm(t, (cols,), tweight, 1e-5), 2e-6 if dtype is kael.float32 else 1e-12)
        monkeypatch.setattr(nn, "rms_norm_rows", lambda *args: None)
        composed = KF.rms_norm(k, (cols,), weight, 1e-5)
        monkeypatch.undo()
        ulps = 0 if dtype is kael.float32 else 4
        np.testing.assert_array_max_ulp(rows.numpy(), composed.numpy(), maxulp=ulps)


def test_rms_norm_refuses_a_shape_that_is_not_trailing():
    with pytest.raises(kael.ValueError, match="does not match"):
        KF.rms_norm(kael.ones(2, 3), (2,))


@pytest.mark.parametrize("lead", [(), (2,), (2, 3)])
def test_pixel_shuffle_and_unshuffle_match_torch(lead):
    x = np.arange(int(np.prod(lead)) * 8 * 3 * 2, dtype=np.float32).reshape(*lead, 8, 3, 2)
    k, t = both(x)
    same(KF.pixel_shuffle(k, 2), TF.pixel_shuffle(t, 2))
    y = TF.pixel_shuffle(t, 2)
    same(KF.pixel_unshuffle(kael.from_dlpack(y.clone()), 2), TF.pixel_unshuffle(y, 2))


def test_pixel_shuffle_refuses_what_torch_refuses():
    with pytest.raises(kael.ValueError, match="divisible by 4"):
        KF.pixel_shuffle(kael.ones(1, 6, 2, 2), 2)
    with pytest.raises(kael.ValueError, match="at least 3 dimensions"):
        KF.pixel_shuffle(kael.ones(4, 4), 2)
    with pytest.raises(kael.ValueError, match="divisible by downscale_factor"):
        KF.pixel_unshuffle(kael.ones(1, 1, 3, 4), 2)


def test_channel_shuffle_matches_torch():
    kx, tx = both(RNG.standard_normal((2, 6, 3, 4)))
    same(KF.channel_shuffle(kx, 3), TF.channel_shuffle(tx, 3))
    same(
        KF.native_channel_shuffle(kx.transpose(2, 3), 2),
        TF.native_channel_shuffle(tx.transpose(2, 3), 2),
    )
    with pytest.raises(kael.ValueError, match="divisible by groups"):
        KF.channel_shuffle(kx, 4)
    with pytest.raises(kael.ValueError, match="at least 3 dimensions"):
        KF.channel_shuffle(kx[0, 0], 1)


@pytest.mark.parametrize("p", [0.0, 1.0, 2.0, 3.5, math.inf])
def test_pdist_matches_torch(p):
    kx, tx = both(RNG.standard_normal((7, 5)))
    same(KF.pdist(kx, p), TF.pdist(tx, p), 2e-6)
    same(KF.pdist(kx[:1], p), TF.pdist(tx[:1], p))  # one row: no pairs
    with pytest.raises(kael.ValueError, match="2D"):
        KF.pdist(kx[0], p)
    with pytest.raises(kael.ValueError, match="non-negative"):
        KF.pdist(kx, -1.0)


def test_pdist_with_p_0_keeps_nan_as_torch():
    values = RNG.standard_normal((4, 3))
    values[0, 1], values[2, 0] = np.nan, np.inf
    kx, tx = both(values)
    same(KF.pdist(kx, 0.0), TF.pdist(tx, 0.0))


@pytest.mark.parametrize("p", [0.0, 1.0, 2.0, 3.5, math.inf])
def test_pdist_without_features_is_zero_for_every_p(p):
    kx, tx = both(np.zeros((4, 0)))
    same(KF.pdist(kx, p), TF.pdist(tx, p))


@pytest.mark.parametrize("weight", [kael.float32, None], ids=["float32", "same"])
@pytest.mark.parametrize("dtype", [kael.float16, kael.bfloat16], ids=str)
@pytest.mark.filterwarnings("ignore:Mismatch dtype between input and weight")
def test_rms_norm_of_half_input_keeps_its_dtype_and_rounds_once_whatever_the_weight(dtype, weight):
    k, t = both(RNG.standard_normal((4, 3, 50)) * 3, dtype)
    kw, tw = both(RNG.standard_normal(50) * 3, weight or dtype)
    same(KF.rms_norm(k, (50,), kw), TF.rms_norm(t, (50,), tw))


@pytest.mark.parametrize(
    ("x_dtype", "w_dtype", "b_dtype"),
    [
        (kael.float32, kael.float64, None),
        (kael.int64, kael.float32, None),
        (kael.float16, kael.float32, None),
        (kael.float32, kael.float32, kael.float64),
    ],
)
def test_linear_refuses_mixed_dtypes_as_torch(x_dtype, w_dtype, b_dtype):
    x, w = kael.ones(2, 3, dtype=x_dtype), kael.ones(4, 3, dtype=w_dtype)
    b = None if b_dtype is None else kael.ones(4, dtype=b_dtype)
    with pytest.raises(kael.TypeError, match="to have the same dtype, but got"):
        kael.nn.functional.linear(x, w, b)


def _linear_operands(case: str, dtype):
    """(x, weight, bias) of a linear call: dense, or views at offsets and strides."""
    x = kael.tensor(RNG.standard_normal((9, 4, 20)), dtype=dtype)
    w = kael.tensor(RNG.standard_normal((12, 20)), dtype=dtype)
    b = kael.tensor(RNG.standard_normal(12), dtype=dtype)
    if case == "large":  # the bias's add moves more than the pool's threshold
        x = kael.tensor(RNG.standard_normal((300, 20)), dtype=dtype)
        w = kael.tensor(RNG.standard_normal((1000, 20)), dtype=dtype)
        b = kael.tensor(RNG.standard_normal(1000), dtype=dtype)
    if case == "views":
        x = kael.tensor(RNG.standard_normal((6, 22)), dtype=dtype)[1:, 2:]  # at an offset
        w = kael.tensor(RNG.standard_normal((14, 23)), dtype=dtype)[2:, 3:]
        b = kael.tensor(RNG.standard_normal(25), dtype=dtype)[1::2]  # at an offset
    return x, w, (None if case == "no bias" else b)


@pytest.mark.parametrize("case", ["dense", "views", "no bias", "large"])
@pytest.mark.parametrize("dtype", [kael.float32, kael.float64], ids=str)
def test_linear_fast_door_replays_the_full_doors_values(case, dtype):
    """After a linear call's first run, its product and in-place bias add replay over a
    fresh buffer and each call's operands (new values, weights changed in place between
    calls): the full door's bits, and torch's values."""
    from kael.frontend import layers

    saved = dict(layers._LINEAR)
    layers._LINEAR.clear()
    try:
        KF.linear(*_linear_operands(case, dtype))
        kept = dict(layers._LINEAR)
        assert len(kept) == 1
        for _ in range(3):
            x, w, b = _linear_operands(case, dtype)
            w.mul_(-2.0)  # the door reads the weights as they are now
            got, full = door_and_full(
                layers._LINEAR, kept, lambda x=x, w=w, b=b: KF.linear(x, w, b)
            )
            assert got.shape == full.shape and got.dtype is dtype and got.is_contiguous()
            np.testing.assert_array_equal(got.numpy(), full.numpy())
            tx, tw = torch.from_dlpack(x.contiguous()), torch.from_dlpack(w.contiguous())
            tb = None if b is None else torch.from_dlpack(b.contiguous())
            same(got, TF.linear(tx, tw, tb), 1e-5 if dtype is kael.float32 else 1e-12)
    finally:
        layers._LINEAR.clear()
        layers._LINEAR.update(saved)


def test_linear_fast_door_keys_every_operands_dtype_and_layout():
    """A kept float32 call serves no call whose weight or bias differs in dtype or layout:
    those take the full door (and its error)."""
    from kael.frontend import layers

    x, w, b = kael.randn(3, 5), kael.randn(4, 5), kael.randn(4)
    KF.linear(x, w, b)
    assert layers._linear_key(x, w, b) in layers._LINEAR
    assert layers._linear_key(x, w.double(), b) not in layers._LINEAR
    assert layers._linear_key(x, w, None) != layers._linear_key(x, w, b)
    assert layers._linear_key(x, w.T.contiguous().T, b) != layers._linear_key(x, w, b)
    assert layers._linear_key(x, w[0], b) is None  # a 1-d weight: the full door
    threads = kael.get_num_threads()
    kael.set_num_threads(threads + 1)  # the product's plan splits by the thread count
    try:
        assert layers._linear_key(x, w, b) not in layers._LINEAR
        np.testing.assert_allclose(KF.linear(x, w, b).numpy(), (x @ w.T + b).numpy(), 1e-6)
    finally:
        kael.set_num_threads(threads)
    with pytest.raises(kael.TypeError, match="same dtype, but got float32 and float64"):
        KF.linear(x, w, b.double())
    assert KF.linear(kael.randn(0, 5), w, b).shape == (0, 4)  # nothing kept, nothing run


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize(
    ("rows", "p"),
    [([[300.0, 400.0]], 2), ([[1e-4, 1e-4]], 2), ([[30.0, 40.0]], 3), ([[3.0, 4.0]], -1)],
)
def test_normalize_of_half_types_takes_the_norm_in_float32_as_torch(dtype, rows, p):
    """Squared in float16, 300 and 400 overflowed (a zero result) and 1e-4 underflowed."""
    got = kael.nn.functional.normalize(kael.tensor(rows, dtype=getattr(kael, dtype)), p=p, dim=-1)
    want = torch.nn.functional.normalize(
        torch.tensor(rows, dtype=getattr(torch, dtype)), p=p, dim=-1
    )
    assert got.dtype is getattr(kael, dtype)
    assert got.float().tolist() == want.float().tolist()
