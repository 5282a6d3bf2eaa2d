"""batch_norm, instance_norm, group_norm, local_response_norm, linear, bilinear and
scaled_dot_product_attention against PyTorch, with their errors."""

from fractions import Fraction

import numpy as np
import pytest
import torch
import torch.nn.functional as TF
from parity_helpers import close_to_torch
from parity_helpers import torch_pair as pair

import kael
import kael.nn.functional as KF
from kael.frontend import attention

real = attention._fused

RNG = np.random.default_rng(31)
X = RNG.standard_normal((4, 3, 5, 2))
W3, B3 = RNG.standard_normal(3), RNG.standard_normal(3)


def same(k, t, tol=2e-5):
    close_to_torch(k, t, tol)


@pytest.mark.parametrize("dtype", [kael.float32, kael.float64, kael.bfloat16], ids=str)
@pytest.mark.parametrize("affine", [False, True])
@pytest.mark.parametrize("shape", [(4, 3), (4, 3, 5), (4, 3, 5, 2)])
def test_batch_norm_training_updates_running_stats_as_torch(shape, affine, dtype):
    x = X.reshape(-1)[: int(np.prod(shape))].reshape(shape)
    kx, tx = pair(x, dtype)
    krm, trm = pair(np.zeros(3), dtype)
    krv, trv = pair(np.ones(3), dtype)
    w = [pair(W3, dtype), pair(B3, dtype)] if affine else [(None, None), (None, None)]
    k = KF.batch_norm(kx, krm, krv, w[0][0], w[1][0], True, 0.2, 1e-4)
    t = TF.batch_norm(tx, trm, trv, w[0][1], w[1][1], True, 0.2, 1e-4)
    tol = 2e-5 if dtype is not kael.bfloat16 else 3e-2
    same(k, t, tol)
    same(krm, trm, tol)
    same(krv, trv, tol)
    same(KF.batch_norm(kx, krm, krv), TF.batch_norm(tx, trm, trv), tol)  # eval


@pytest.mark.parametrize("affine", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
def test_batch_norm_applies_alpha_and_beta_per_channel_with_one_rounding(dtype, affine):
    """y = fma(x, alpha, beta) with alpha = (1 / sqrt(var + eps)) * weight, each step
    rounded, and beta = fma(-mean, alpha, bias) in the input's dtype: PyTorch's kernel, to
    the bit. The reference's fmas are exact in fractions (float32's then rounded through
    float64, within 2**-29 ulp)."""
    rng = np.random.default_rng(8)
    x = rng.standard_normal((4, 3, 5, 2)).astype(dtype)
    mean, var = rng.standard_normal(3).astype(dtype), (rng.random(3) + 0.1).astype(dtype)
    w, b = (rng.standard_normal(3).astype(dtype) for _ in range(2))
    alpha = dtype(1) / np.sqrt(var + dtype(1e-5))
    alpha = alpha * w if affine else alpha

    def fused(a, b, c) -> float:
        return float(Fraction(float(a)) * Fraction(float(b)) + Fraction(float(c)))

    beta = np.array([fused(-m, a, c) for m, a, c in zip(mean, alpha, b if affine else [0] * 3)])
    beta = beta.astype(dtype)
    want = np.array([fused(v, alpha[c], beta[c]) for (_, c, _, _), v in np.ndenumerate(x)])
    params = [kael.tensor(w), kael.tensor(b)] if affine else [None, None]
    got = KF.batch_norm(kael.tensor(x), kael.tensor(mean), kael.tensor(var), *params)
    assert got.dtype is getattr(kael, np.dtype(dtype).name)
    np.testing.assert_array_equal(got.numpy(), want.astype(dtype).reshape(x.shape))


def test_batch_norm_refuses_one_value_per_channel_when_training():
    with pytest.raises(kael.ValueError, match="more than 1 value per channel"):
        KF.batch_norm(kael.ones(1, 3), None, None, training=True)
    with pytest.raises(kael.ValueError, match="running_mean"):
        KF.batch_norm(kael.ones(2, 3), None, None)
    with pytest.raises(kael.ValueError, match="3 elements"):
        KF.batch_norm(kael.ones(2, 3), kael.zeros(2), kael.ones(2))


@pytest.mark.parametrize("running", [False, True])
def test_instance_norm_matches_torch(running):
    kx, tx = pair(X)
    stats = [pair(np.zeros(3)), pair(np.ones(3))] if running else [(None, None)] * 2
    kw, tw = pair(W3)
    same(
        KF.instance_norm(kx, stats[0][0], stats[1][0], weight=kw, momentum=0.3),
        TF.instance_norm(tx, stats[0][1], stats[1][1], weight=tw, momentum=0.3),
    )
    if running:
        same(stats[0][0], stats[0][1])
        same(stats[1][0], stats[1][1])


@pytest.mark.parametrize("groups", [1, 3])
def test_group_norm_matches_torch(groups):
    x = RNG.standard_normal((2, 6, 4))
    kx, tx = pair(x)
    kw, tw = pair(RNG.standard_normal(6))
    same(KF.group_norm(kx, groups, kw, kw), TF.group_norm(tx, groups, tw, tw))
    with pytest.raises(kael.ValueError, match="divisible by num_groups"):
        KF.group_norm(kx, 4)


@pytest.mark.parametrize("shape", [(0, 6, 3), (2, 6, 0)])
def test_group_norm_of_an_empty_batch_or_plane_is_empty_as_torch(shape):
    kx, tx = pair(np.zeros(shape))
    same(KF.group_norm(kx, 2), TF.group_norm(tx, 2))


@pytest.mark.parametrize("size", [1, 2, 3, 5])
def test_local_response_norm_matches_torch(size):
    kx, tx = pair(X)
    same(
        KF.local_response_norm(kx, size, 1e-2, 0.5, 2.0),
        TF.local_response_norm(tx, size, 1e-2, 0.5, 2.0),
    )


@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("shape", [(4,), (3, 4), (2, 3, 4)])
def test_linear_matches_torch(shape, bias):
    kx, tx = pair(RNG.standard_normal(shape))
    kw, tw = pair(RNG.standard_normal((5, 4)))
    kb, tb = pair(RNG.standard_normal(5)) if bias else (None, None)
    same(KF.linear(kx, kw, kb), TF.linear(tx, tw, tb))
    same(KF.linear(kx, kw.T.contiguous().T, kb), TF.linear(tx, tw, tb))


def test_bilinear_matches_torch():
    ka, ta = pair(RNG.standard_normal((2, 3, 4)))
    kb, tb = pair(RNG.standard_normal((2, 3, 6)))
    kw, tw = pair(RNG.standard_normal((5, 4, 6)))
    kc, tc = pair(RNG.standard_normal(5))
    same(KF.bilinear(ka, kb, kw, kc), TF.bilinear(ta, tb, tw, tc), 1e-4)
    with pytest.raises(kael.ValueError, match="must be"):
        KF.bilinear(ka, kb, kw[:, :3])


Q, K, V = (RNG.standard_normal(s) for s in ((2, 4, 6, 8), (2, 4, 7, 8), (2, 4, 7, 5)))
MASK = RNG.standard_normal((6, 7))


@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"is_causal": True},
        {"scale": 0.3},
        {"attn_mask": MASK},
        {"attn_mask": MASK > -1.0},
        {"attn_mask": MASK[None, None]},
    ],
    ids=["plain", "causal", "scale", "float_mask", "bool_mask", "broadcast_mask"],
)
@pytest.mark.parametrize("dtype", [kael.float32, kael.float64], ids=str)
def test_scaled_dot_product_attention_matches_torch(kwargs, dtype):
    kq, tq = pair(Q, dtype)
    kk, tk = pair(K, dtype)
    kv, tv = pair(V, dtype)
    kmask, tmask = kwargs.get("attn_mask"), kwargs.get("attn_mask")
    if kmask is not None:
        mdtype = kael.bool if kmask.dtype == bool else dtype
        kmask, tmask = pair(kmask, mdtype)
    kw = {**kwargs, "attn_mask": kmask}
    tw = {**kwargs, "attn_mask": tmask}
    same(
        KF.scaled_dot_product_attention(kq, kk, kv, **kw),
        TF.scaled_dot_product_attention(tq, tk, tv, **tw),
    )


@pytest.mark.parametrize("length", [1, attention.DECODE_ROWS, attention.DECODE_ROWS + 1])
@pytest.mark.parametrize(
    "kwargs", [{}, {"is_causal": True}, {"scale": 0.3}, {"mask": "keep"}, {"mask": "add"}], ids=str
)
@pytest.mark.parametrize("dtype", [kael.float32, kael.float64], ids=str)
def test_a_decoding_step_over_long_keys_matches_torch_unfused(length, kwargs, dtype, monkeypatch):
    """A query of at most DECODE_ROWS rows over DECODE_KEY_BYTES of keys (a decoding step
    over its cache) is matmul, softmax and matmul; one more row takes the fused kernel."""
    rng = np.random.default_rng(8)
    heads, source, e = 3, -(-attention.DECODE_KEY_BYTES // (3 * 16 * dtype.itemsize)), 16
    arrays = [rng.standard_normal((1, heads, n, e)) for n in (length, source, source)]
    (kq, tq), (kk, tk), (kv, tv) = (pair(a, dtype) for a in arrays)
    kw, tw = dict(kwargs), dict(kwargs)
    mask = kw.pop("mask", None)
    tw.pop("mask", None)
    if mask is not None:
        values = rng.standard_normal((length, source))
        kw["attn_mask"], tw["attn_mask"] = (
            pair(values > -1, kael.bool) if mask == "keep" else pair(values, dtype)
        )
    fused = []
    monkeypatch.setattr(attention, "_fused", lambda *a, **k: fused.append(1) or real(*a, **k))
    got = KF.scaled_dot_product_attention(kq, kk, kv, **kw)
    assert bool(fused) == (length > attention.DECODE_ROWS)
    close_to_torch(got, TF.scaled_dot_product_attention(tq, tk, tv, **tw), 1e-5)


def test_one_query_over_keys_short_of_decode_key_bytes_takes_the_fused_kernel(monkeypatch):
    e = 16
    source = attention.DECODE_KEY_BYTES // (e * 4)  # exactly the bytes, then one key fewer
    fused = []
    monkeypatch.setattr(attention, "_fused", lambda *a, **k: fused.append(1) or real(*a, **k))
    for keys, fused_expected in ((source, False), (source - 1, True)):
        fused.clear()
        q, k = kael.ones(1, 1, 1, e), kael.ones(1, 1, keys, e)
        out = KF.scaled_dot_product_attention(q, k, k * 2)
        assert bool(fused) == fused_expected and out.tolist() == [[[[2.0] * e]]]


@pytest.mark.parametrize("mask", [MASK, MASK > -0.5], ids=["additive", "keep"])
@pytest.mark.parametrize("dtype", [kael.float32, kael.float64], ids=str)
def test_a_mask_and_is_causal_together_apply_both_as_torch(dtype, mask):
    """torch's fused CPU kernel (4-d, one head size) applies both; its composed path, which
    it takes for other shapes, refuses the pair: kael always applies both."""
    (kq, tq), (kk, tk), (kv, tv) = (pair(a, dtype) for a in (Q, K, K * 2 - 1))
    km, tm = pair(mask, kael.bool if mask.dtype == bool else dtype)
    same(
        KF.scaled_dot_product_attention(kq, kk, kv, attn_mask=km, is_causal=True),
        TF.scaled_dot_product_attention(tq, tk, tv, attn_mask=tm, is_causal=True),
    )


@pytest.mark.parametrize("kwargs", [{}, {"is_causal": True}, {"attn_mask": MASK}], ids=str)
@pytest.mark.parametrize("dtype", [kael.bfloat16, kael.float16], ids=str)
def test_half_attention_computes_in_float32_and_rounds_once(dtype, kwargs):
    """As torch's CPU kernel: the half inputs' attention in float32, rounded to the dtype
    once (torch's result within one step of the dtype; no error against float64 worse)."""
    (kq, tq), (kk, tk), (kv, tv) = (pair(a, dtype) for a in (Q, K, V))
    kw = dict(kwargs)
    tw = dict(kwargs)
    if "attn_mask" in kwargs:
        (kw["attn_mask"], tw["attn_mask"]) = pair(MASK, dtype)
    got = KF.scaled_dot_product_attention(kq, kk, kv, **kw)
    wide = {n: (m.float() if n == "attn_mask" else m) for n, m in kw.items()}
    assert got.dtype is dtype
    assert kael.equal(
        got, KF.scaled_dot_product_attention(kq.float(), kk.float(), kv.float(), **wide).to(dtype)
    )
    want = TF.scaled_dot_product_attention(tq, tk, tv, **tw)
    exact = TF.scaled_dot_product_attention(
        *(t.double() for t in (tq, tk, tv)),
        **{n: (m.double() if n == "attn_mask" else m) for n, m in tw.items()},
    )
    mine = torch.from_numpy(got.float().numpy()).double()
    step = 2.0**-7 if dtype is kael.bfloat16 else 2.0**-10
    assert (mine - want.double()).abs().max() <= 2 * step
    assert (mine - exact).abs().max() <= (want.double() - exact).abs().max() + step


def test_attention_with_grouped_heads_and_compiled():
    kq, tq = pair(Q)
    kk, tk = pair(K[:, :2])
    kv, tv = pair(V[:, :2])
    same(
        KF.scaled_dot_product_attention(kq, kk, kv, enable_gqa=True),
        TF.scaled_dot_product_attention(tq, tk, tv, enable_gqa=True),
    )
    attend = kael.compile(lambda q, k, v: KF.scaled_dot_product_attention(q, k, v, is_causal=True))
    kk, kv = pair(K)[0], pair(V)[0]
    assert kael.allclose(
        attend(kq, kk, kv), KF.scaled_dot_product_attention(kq, kk, kv, is_causal=True), atol=1e-6
    )


def test_attention_dropout_keeps_shape_and_draws_from_the_stream():
    kq, kk, kv = (pair(a)[0] for a in (Q, K, V))
    kael.manual_seed(3)
    a = KF.scaled_dot_product_attention(kq, kk, kv, dropout_p=0.5)
    kael.manual_seed(3)
    assert kael.equal(a, KF.scaled_dot_product_attention(kq, kk, kv, dropout_p=0.5))
    assert a.shape == (2, 4, 6, 5)


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (
            lambda q, k, v: KF.scaled_dot_product_attention(q, k.double(), v),
            kael.TypeError,
            "same dtype",
        ),
        (
            lambda q, k, v: KF.scaled_dot_product_attention(q, k[..., :3], v),
            kael.ValueError,
            "disagree",
        ),
        (
            lambda q, k, v: KF.scaled_dot_product_attention(q.long(), k.long(), v.long()),
            kael.TypeError,
            "floating",
        ),
        (  # PyTorch refuses an integer mask: neither kept (bool) nor added (float)
            lambda q, k, v: KF.scaled_dot_product_attention(
                q, k, v, attn_mask=kael.zeros(6, 7, dtype=kael.int64)
            ),
            kael.TypeError,
            "attn_mask dtype to be bool or float or to match query dtype, but got"
            " attn_mask.dtype: int64",
        ),
    ],
)
def test_attention_refuses_bad_inputs(call, error, message):
    with pytest.raises(error, match=message):
        call(*(pair(a)[0] for a in (Q, K, V)))


def test_fully_masked_rows_give_zeros_as_torch():
    kq, kk, kv = (pair(a)[0] for a in (Q, K, V))
    tq, tk, tv = (pair(a)[1] for a in (Q, K, V))
    mask = np.ones((6, 7), dtype=bool)
    mask[2] = False
    km, tm = pair(mask, kael.bool)
    same(
        KF.scaled_dot_product_attention(kq, kk, kv, attn_mask=km),
        TF.scaled_dot_product_attention(tq, tk, tv, attn_mask=tm),
    )


@pytest.mark.parametrize("mask_dtype", [kael.bool, None], ids=["keep", "additive"])
@pytest.mark.parametrize("mask_shape", [(6, 0), (1, 4, 6, 0)], ids=str)
@pytest.mark.parametrize("dtype", [kael.float32, kael.float16], ids=str)
def test_attention_over_no_keys_with_a_mask_gives_zeros_as_torch(dtype, mask_shape, mask_dtype):
    kq, tq = pair(Q, dtype)
    kk, tk = pair(K[:, :, :0], dtype)
    kv, tv = pair(V[:, :, :0], dtype)
    km = kael.zeros(mask_shape, dtype=mask_dtype or dtype)  # kael's strides, not dlpack's 0s
    tm = torch.from_dlpack(km)
    same(
        KF.scaled_dot_product_attention(kq, kk, kv, attn_mask=km),
        TF.scaled_dot_product_attention(tq, tk, tv, attn_mask=tm),
        0,
    )


@pytest.mark.parametrize("params", [kael.float32, None], ids=["float32", "same"])
@pytest.mark.parametrize("dtype", [kael.float16, kael.bfloat16], ids=str)
def test_half_input_keeps_its_dtype_and_rounds_once_whatever_the_parameters(dtype, params):
    # The usual mixed precision: float16/bfloat16 activations, float32 parameters and
    # running statistics; PyTorch computes the affine in float32 too and rounds once.
    x = RNG.standard_normal((4, 6, 5)) * 3
    kx, tx = pair(x, dtype)
    kw, tw = pair(RNG.standard_normal(6) * 3, params or dtype)
    kb, tb = pair(RNG.standard_normal(6), params or dtype)
    km, tm = pair(RNG.standard_normal(6), params or dtype)
    kv, tv = pair(RNG.random(6) + 0.5, params or dtype)
    tol = 1e-3 if dtype is kael.float16 else 8e-3  # a float32 sum's last bit may tip one ulp
    for training in (False, True):
        same(
            KF.batch_norm(kx, km, kv, kw, kb, training),
            TF.batch_norm(tx, tm, tv, tw, tb, training),
            tol,
        )
    same(KF.group_norm(kx, 3, kw, kb), TF.group_norm(tx, 3, tw, tb), tol)
    same(KF.instance_norm(kx, km, kv, kw, kb), TF.instance_norm(tx, tm, tv, tw, tb), tol)


def test_repeated_attention_calls_read_each_calls_keys():
    rng = np.random.default_rng(21)
    for _ in range(3):  # the keys' transposing copy is remembered after the first call
        q, k, v = (rng.standard_normal((2, 3, 5, 8)).astype(np.float32) for _ in range(3))
        got = kael.nn.functional.scaled_dot_product_attention(*map(kael.tensor, (q, k, v)))
        want = torch.nn.functional.scaled_dot_product_attention(*map(torch.from_numpy, (q, k, v)))
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-6)


def _attention_operands(rng, dtype, layout):
    """(query, key, value) as kael tensors of one [2, 3, 6, 8] layout family: dense, the
    key a transposed view, or every operand a strided slice of a bigger buffer."""
    if layout == "dense":
        return [kael.tensor(rng.standard_normal((2, 3, 6, 8)), dtype=dtype) for _ in range(3)]
    if layout == "transposed_key":
        q, v = (kael.tensor(rng.standard_normal((2, 3, 6, 8)), dtype=dtype) for _ in range(2))
        return [q, kael.tensor(rng.standard_normal((2, 3, 8, 6)), dtype=dtype).transpose(-2, -1), v]
    big = [kael.tensor(rng.standard_normal((2, 3, 9, 12)), dtype=dtype) for _ in range(3)]
    return [t[:, :, 2:8, 3:11] for t in big]  # an offset, row strides of 12


@pytest.mark.parametrize("layout", ["dense", "transposed_key", "sliced"])
@pytest.mark.parametrize("dtype", [kael.float32, kael.float64], ids=str)
@pytest.mark.parametrize("kwargs", [{}, {"is_causal": True}, {"scale": 0.3}], ids=str)
def test_attention_fast_door_replays_the_full_doors_bits_with_each_calls_operands(
    layout, dtype, kwargs
):
    """The first call of a layout runs the full door and keeps its launches; later calls
    replay them with their own addresses: the same bits on new data as the full door
    (run again by taking the key out of the memo for one call)."""
    from kael.frontend import attention

    rng = np.random.default_rng(5)
    sdpa = KF.scaled_dot_product_attention
    for _ in range(3):
        q, k, v = _attention_operands(rng, dtype, layout)
        got = sdpa(q, k, v, **kwargs)
        door = attention._door_key(q, k, v, None, 0.0, kwargs.get("is_causal", False),
                                   kwargs.get("scale"), False)  # fmt: skip
        assert door in attention._DOOR
        kept = attention._DOOR.pop(door)
        full = sdpa(q, k, v, **kwargs)  # the full door again (it keeps the key anew)
        attention._DOOR[door] = kept
        assert got.shape == full.shape == (2, 3, 6, 8) and got.dtype is dtype
        assert got.is_contiguous()
        np.testing.assert_array_equal(got.numpy(), full.numpy())
        want = TF.scaled_dot_product_attention(*(torch.from_dlpack(t) for t in (q, k, v)), **kwargs)
        close_to_torch(got, want, 2e-5 if dtype is kael.float32 else 1e-12)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"attn_mask": kael.ones(6, 6, dtype=kael.bool)},
        {"dropout_p": 0.5},
        {"enable_gqa": True},
        {"is_causal": 1},
    ],
    ids=["mask", "dropout", "gqa", "causal_int"],
)
def test_attention_fast_door_leaves_other_calls_to_the_full_door(kwargs):
    from kael.frontend import attention

    q, k, v = (kael.randn(2, 3, 6, 8) for _ in range(3))
    assert attention._door_key(q, k, v, kwargs.get("attn_mask"), kwargs.get("dropout_p", 0.0),
                               kwargs.get("is_causal", False), None,
                               kwargs.get("enable_gqa", False)) is None  # fmt: skip
    halves = [t.half() for t in (q, k, v)]
    assert attention._door_key(*halves, None, 0.0, False, None, False) is None
    mixed = (q, k.double(), v)
    assert attention._door_key(*mixed, None, 0.0, False, None, False) is None


def test_attention_fast_door_is_closed_under_compile():
    q, k, v = (kael.randn(1, 2, 4, 8) for _ in range(3))
    eager = KF.scaled_dot_product_attention(q, k, v, is_causal=True)
    compiled = kael.compile(
        lambda a, b, c: KF.scaled_dot_product_attention(a, b, c, is_causal=True)
    )
    for _ in range(2):
        np.testing.assert_array_equal(compiled(q, k, v).numpy(), eager.numpy())


def _stats_and_params(dtype):
    return [kael.tensor(RNG.standard_normal(3)).to(dtype) for _ in range(2)] + [
        kael.tensor(RNG.random(3) + 0.5).to(dtype)
    ]


@pytest.mark.parametrize("layout", ["dense", "transposed"])
@pytest.mark.parametrize("dtype", [kael.float32, kael.float64], ids=str)
@pytest.mark.parametrize("op", ["batch_norm", "group_norm"])
def test_norm_fast_doors_replay_the_full_doors_bits(op, dtype, layout, monkeypatch):
    """batch_norm (eval) and group_norm behind the keyed door: each new call's values are
    the full door's, bit for bit (the door emptied for it), kept or not."""
    from kael.frontend import fastpath

    def call(x, w, b, mean, var):
        if op == "batch_norm":
            return KF.batch_norm(x, mean, var, w, b, False, 0.1, 1e-3)
        return KF.group_norm(x, 3, w, b, eps=1e-3)

    def fresh(seed):
        x = kael.tensor(np.random.default_rng(seed).standard_normal((4, 3, 5, 2))).to(dtype)
        return x.permute(0, 1, 3, 2).contiguous().permute(0, 1, 3, 2) if layout != "dense" else x

    w, b, mean = _stats_and_params(dtype)
    var = w.abs() + 0.5
    monkeypatch.setattr(fastpath, "_keyed", {})
    call(fresh(0), w, b, mean, var)
    # group_norm keeps a float32 dense call (a float64 var carries its overflow flag, and a
    # strided input its reshape's copy: the full door's)
    kept = [v for k, v in fastpath._keyed.items() if k[0] == op]
    expected = op == "batch_norm" or (dtype is kael.float32 and layout == "dense")
    assert kept and all((type(v) is fastpath._Steps) == expected for v in kept)
    for seed in range(1, 4):
        x = fresh(seed)
        served = call(x, w, b, mean, var)
        saved = dict(fastpath._keyed)
        fastpath._keyed.clear()
        try:
            full = call(x, w, b, mean, var)
        finally:
            fastpath._keyed.update(saved)
        assert served.dtype is dtype and served.shape == x.shape
        np.testing.assert_array_equal(served.numpy(), full.numpy())


def test_batch_norm_training_moves_running_stats_on_every_call_as_torch():
    """Its running statistics are written in place: the keyed door never keeps such a
    call, so the third call moves them as torch's third does."""
    x = RNG.standard_normal((4, 3, 5))
    kx, tx = pair(x, kael.float32)
    stats = [pair(np.zeros(3), kael.float32), pair(np.ones(3), kael.float32)]
    for _ in range(3):
        KF.batch_norm(kx, stats[0][0], stats[1][0], training=True)
        TF.batch_norm(tx, stats[0][1], stats[1][1], training=True)
    for k, t in stats:
        same(k, t)


@pytest.mark.parametrize("shape", [(2, 4, 3, 3), (2, 4, 8, 8), (4, 6)])
def test_group_norm_of_a_constant_group_is_zero_without_affine_as_torch(shape):
    """Without weight and bias torch normalizes as (x - mean) * rstd: exactly 0 where a
    group is constant (the fma form leaves x * rstd's rounding error)."""
    groups = 2 if len(shape) > 2 else 6
    got = KF.group_norm(kael.full(shape, 12345.678), groups)
    want = TF.group_norm(torch.full(shape, 12345.678), groups)
    assert not got.numpy().any() and not want.numpy().any()


def test_batch_norm_of_float64_input_with_float32_statistics_computes_in_float64():
    """kael admits statistics of another float dtype (torch refuses): the wider of the two
    is the compute dtype, so a float64 input is not rounded to float32 first."""
    x = RNG.standard_normal((4, 3, 5)) * 1e3 + 1 / 3
    mean, var = np.zeros(3, np.float32), np.ones(3, np.float32)
    got = KF.batch_norm(kael.tensor(x), kael.tensor(mean), kael.tensor(var), eps=0.0)
    assert got.dtype is kael.float64
    np.testing.assert_allclose(got.numpy(), x, rtol=1e-15)


def _heads(shape, perm, dtype):
    values = RNG.standard_normal(shape).astype(np.float32)
    t = torch.from_numpy(values).permute(*perm).to(getattr(torch, dtype))
    return kael.from_numpy(values).permute(*perm).to(getattr(kael, dtype)), t


BSHD, BHSD, HBSD, BHDS = (0, 2, 1, 3), (0, 1, 2, 3), (1, 0, 2, 3), (0, 1, 3, 2)


@pytest.mark.parametrize(
    "q_order, kv_order, kwargs",
    [(BSHD, BSHD, {}), (BSHD, BHSD, {"is_causal": True}), (HBSD, BSHD, {"scale": 0.3}),
     (BSHD, BSHD, {"attn_mask": torch.zeros(5, 7)}), (BHSD, BSHD, {}), (BHDS, BHSD, {}),
     (BSHD, BSHD, {"dropout_p": 0.5}), (BSHD, BSHD, {"enable_gqa": True})],
)  # fmt: skip
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_attention_result_is_laid_out_as_torchs(q_order, kv_order, kwargs, dtype):
    """torch's CPU flash kernel lays its result out in the query's dim order (HF's
    q.view(B, L, H, E).transpose(1, 2) gives a [B, L, H, E] result, which its
    .transpose(1, 2).view(B, L, H * E) needs); its math path (dropout, non-unit rows) and a
    row-major query give row-major results."""
    q_shape = [(2, 4, 5, 8)[i] for i in np.argsort(q_order)]
    heads = 2 if kwargs.get("enable_gqa") else 4
    kv_shape = [(2, heads, 7, 8)[i] for i in np.argsort(kv_order)]
    (kq, tq), (kk, tk), (kv, tv) = (
        _heads(s, o, dtype)
        for s, o in ((q_shape, q_order), (kv_shape, kv_order), (kv_shape, kv_order))
    )
    k_kwargs = {
        n: kael.from_numpy(v.numpy()) if isinstance(v, torch.Tensor) else v
        for n, v in kwargs.items()
    }
    got = KF.scaled_dot_product_attention(kq, kk, kv, **k_kwargs)
    want = TF.scaled_dot_product_attention(tq, tk, tv, **kwargs)
    assert got.stride() == want.stride() and got.dtype is kq.dtype
    if "dropout_p" not in kwargs:
        np.testing.assert_allclose(
            got.float().numpy(), want.float().numpy(), atol=2e-2 if dtype == "bfloat16" else 1e-5
        )


@pytest.mark.parametrize("mask_shape", [(3, 5, 5), (5, 5), (1, 1, 5, 5), (2, 1, 1, 5), (5, 1)])
def test_attention_layout_follows_torchs_mask_rule(mask_shape):
    """torch's flash kernel takes a 2-d or 4-d mask only (a 3-d one: its math path, a
    row-major result)."""
    x = RNG.standard_normal((2, 5, 3, 8)).astype(np.float32)
    m = RNG.standard_normal(mask_shape).astype(np.float32)
    kq, tq = kael.from_numpy(x).transpose(1, 2), torch.from_numpy(x).transpose(1, 2)
    got = KF.scaled_dot_product_attention(kq, kq, kq, attn_mask=kael.from_numpy(m))
    want = TF.scaled_dot_product_attention(tq, tq, tq, attn_mask=torch.from_numpy(m))
    assert got.stride() == want.stride()
    np.testing.assert_allclose(got.numpy(), want.numpy(), atol=1e-5)


def test_attention_with_a_strided_size_one_embedding_is_row_major_as_torchs():
    x = RNG.standard_normal((1, 3, 2, 1)).astype(np.float32)
    y = RNG.standard_normal((1, 2, 1, 3)).astype(np.float32)
    kq, kk = kael.from_numpy(x).transpose(1, 2), kael.from_numpy(y).transpose(2, 3)
    tq, tk = torch.from_numpy(x).transpose(1, 2), torch.from_numpy(y).transpose(2, 3)
    got = KF.scaled_dot_product_attention(kq, kk, kk)
    assert got.stride() == TF.scaled_dot_product_attention(tq, tk, tk).stride()


def test_hf_attention_output_views_back_to_its_hidden_size():
    q = kael.ones(2, 5, 4, 8).transpose(1, 2)  # x.view(B, L, H, E).transpose(1, 2)

    def merged(q):
        out = KF.scaled_dot_product_attention(q, q, q, is_causal=True)
        return out.transpose(1, 2).view(2, 5, 32)

    assert merged(q).shape == (2, 5, 32)
    assert kael.compile(merged)(q).shape == (2, 5, 32)


def test_grouped_heads_repeat_key_and_value_each_by_its_own_factor():
    (kq, tq), (kk, tk), (kv, tv) = (
        _heads(s, BHSD, "float32") for s in ((1, 6, 4, 8), (1, 2, 5, 8), (1, 3, 5, 8))
    )
    got = KF.scaled_dot_product_attention(kq, kk, kv, enable_gqa=True)
    want = TF.scaled_dot_product_attention(tq, tk, tv, enable_gqa=True)
    np.testing.assert_allclose(got.numpy(), want.numpy(), atol=1e-5)
    with pytest.raises(kael.ValueError, match="6 query heads are not a multiple of 4 value"):
        KF.scaled_dot_product_attention(kq, kk, kael.ones(1, 4, 5, 8), enable_gqa=True)


def test_attention_mask_rules_of_torchs_two_paths():
    """A mask needs the query's and key's dims; with is_causal, only torch's fused kernel
    takes one (a 3-d mask, dropout or a 3-d query: torch's math path refuses the pair)."""
    q = kael.ones(1, 2, 4, 8)
    with pytest.raises(kael.IndexError, match="1-d mask"):  # the fused kernel's case
        KF.scaled_dot_product_attention(q, q, q, attn_mask=kael.zeros(4))
    q3, mask = RNG.standard_normal((2, 4, 8)).astype(np.float32), np.zeros(4, np.float32)
    got = KF.scaled_dot_product_attention(*[kael.from_numpy(q3)] * 3, kael.from_numpy(mask))
    want = TF.scaled_dot_product_attention(*[torch.from_numpy(q3)] * 3, torch.from_numpy(mask))
    np.testing.assert_allclose(got.numpy(), want.numpy(), atol=1e-6)  # its math path's case
    with pytest.raises(kael.ValueError, match=r"does not broadcast to the scores' shape"):
        KF.scaled_dot_product_attention(*[kael.from_numpy(q3)] * 3, kael.zeros(3, 2, 4, 4))
    for mask, kwargs, query in (
        (kael.zeros(1, 4, 4), {}, q),
        (kael.zeros(4, 4), {"dropout_p": 0.5}, q),
        (kael.zeros(4, 4), {}, kael.ones(2, 4, 8)),
    ):
        with pytest.raises(kael.ValueError, match="Explicit attn_mask should not be set"):
            KF.scaled_dot_product_attention(query, query, query, mask, is_causal=True, **kwargs)
    both = KF.scaled_dot_product_attention(q, q, q, attn_mask=kael.zeros(4, 4), is_causal=True)
    assert both.shape == (1, 2, 4, 8)  # the fused kernel's case: both masks apply
