"""multi_head_attention_forward against PyTorch: batched and unbatched inputs, every mask
form, bias_k / bias_v, add_zero_attn, separate projections (kdim and vdim), static keys
and values, need_weights both ways, dropout, and PyTorch's errors as typed kael errors."""

import math
import warnings

import numpy as np
import pytest
import torch
import torch.nn.functional as TF
from kernel_helpers import TORCH_DTYPES
from parity_helpers import close_to_torch

import kael
import kael.nn.functional as KF

RNG = np.random.default_rng(53)
L, N, E, S, H = 3, 2, 4, 5, 2
FLOATS = [kael.float32, kael.float64]


def tensor(shape, dtype=kael.float64, layout: str = "contiguous") -> torch.Tensor:
    """Random normal values of `shape`; "transposed" stores the last two dims swapped and
    "sliced" every other value of a wider last dim (both non-contiguous)."""
    if layout == "transposed" and len(shape) >= 2:
        base = RNG.standard_normal((*shape[:-2], shape[-1], shape[-2]))
        return torch.tensor(base).to(TORCH_DTYPES[dtype]).transpose(-1, -2)
    if layout == "sliced":
        base = RNG.standard_normal((*shape[:-1], 2 * shape[-1]))
        return torch.tensor(base).to(TORCH_DTYPES[dtype])[..., ::2]
    return torch.tensor(RNG.standard_normal(shape)).to(TORCH_DTYPES[dtype])


def mha_args(dtype=kael.float64, layout="contiguous", **overrides) -> dict:
    """multi_head_attention_forward's arguments for torch: query [L, N, E] and key and
    value [S, N, E], packed in-projection, out-projection."""
    args = dict(
        query=tensor((L, N, E), dtype, layout),
        key=tensor((S, N, E), dtype, layout),
        value=tensor((S, N, E), dtype, layout),
        embed_dim_to_check=E,
        num_heads=H,
        in_proj_weight=tensor((3 * E, E), dtype, layout),
        in_proj_bias=tensor((3 * E,), dtype),
        bias_k=None,
        bias_v=None,
        add_zero_attn=False,
        dropout_p=0.0,
        out_proj_weight=tensor((E, E), dtype, layout),
        out_proj_bias=tensor((E,), dtype),
    )
    args.update(overrides)
    return args


def to_kael(value):
    """A torch tensor as a kael tensor over a copy of its bytes, in its layout."""
    return kael.from_dlpack(value.clone()) if isinstance(value, torch.Tensor) else value


def kael_mha(args: dict):
    return KF.multi_head_attention_forward(**{name: to_kael(v) for name, v in args.items()})


def same_attention(args: dict) -> None:
    """kael's (output, weights) against torch's: shapes, dtypes and values."""
    got, want = kael_mha(args), TF.multi_head_attention_forward(**args)
    tol = 1e-5 if want[0].dtype is torch.float32 else 1e-11
    close_to_torch(got[0], want[0], tol, equal_nan=True)
    if want[1] is None:
        assert got[1] is None
    else:
        close_to_torch(got[1], want[1], tol, equal_nan=True)


def bool_mask(shape) -> torch.Tensor:
    """A random bool mask that leaves every row at least its first key."""
    mask = torch.tensor(RNG.random(shape) < 0.4)
    mask[..., 0] = False
    return mask


# ---- values --------------------------------------------------------------------------------


@pytest.mark.parametrize("layout", ["contiguous", "transposed", "sliced"])
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize(("need_weights", "average"), [(True, True), (True, False), (False, True)])
def test_attention_matches_torch(need_weights, average, dtype, layout):
    same_attention(mha_args(dtype, layout, need_weights=need_weights, average_attn_weights=average))


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("need_weights", [True, False])
def test_self_attention_of_one_tensor(need_weights, dtype):
    x = tensor((L, N, E), dtype)
    same_attention(mha_args(dtype, query=x, key=x, value=x, need_weights=need_weights))


MASKS = {
    "bool 2-D": lambda dtype: {"attn_mask": bool_mask((L, S))},
    "float 2-D": lambda dtype: {"attn_mask": tensor((L, S), dtype)},
    "bool 3-D": lambda dtype: {"attn_mask": bool_mask((N * H, L, S))},
    "float 3-D": lambda dtype: {"attn_mask": tensor((N * H, L, S), dtype)},
    "bool key padding": lambda dtype: {"key_padding_mask": bool_mask((N, S))},
    "float key padding": lambda dtype: {"key_padding_mask": tensor((N, S), dtype)},
    "both bool": lambda dtype: {
        "attn_mask": bool_mask((L, S)),
        "key_padding_mask": bool_mask((N, S)),
    },
    "both float, 3-D": lambda dtype: {
        "attn_mask": tensor((N * H, L, S), dtype),
        "key_padding_mask": tensor((N, S), dtype),
    },
}


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("need_weights", [True, False])
@pytest.mark.parametrize("masks", MASKS, ids=list(MASKS))
def test_masks_add_or_mask_out_as_torch(masks, need_weights, dtype):
    same_attention(mha_args(dtype, need_weights=need_weights, **MASKS[masks](dtype)))


@pytest.mark.parametrize("need_weights", [True, False])
@pytest.mark.parametrize("add_zero_attn", [False, True])
def test_bias_kv_and_zero_attention_add_source_positions(add_zero_attn, need_weights):
    masks = MASKS["both bool"](kael.float64)
    same_attention(
        mha_args(
            bias_k=tensor((1, 1, E)),
            bias_v=tensor((1, 1, E)),
            add_zero_attn=add_zero_attn,
            need_weights=need_weights,
            **masks,
        )
    )


@pytest.mark.parametrize("need_weights", [True, False])
def test_zero_attention_alone_adds_one_position(need_weights):
    same_attention(mha_args(add_zero_attn=True, need_weights=need_weights))


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("need_weights", [True, False])
def test_separate_projections_take_other_key_and_value_sizes(need_weights, dtype):
    kdim, vdim = 3, 6
    same_attention(
        mha_args(
            dtype,
            "transposed",
            key=tensor((S, N, kdim), dtype),
            value=tensor((S, N, vdim), dtype, "sliced"),
            in_proj_weight=None,
            use_separate_proj_weight=True,
            q_proj_weight=tensor((E, E), dtype),
            k_proj_weight=tensor((E, kdim), dtype, "transposed"),
            v_proj_weight=tensor((E, vdim), dtype),
            need_weights=need_weights,
            key_padding_mask=bool_mask((N, S)),
        )
    )


@pytest.mark.parametrize("need_weights", [True, False])
def test_static_keys_and_values_replace_the_projected_ones(need_weights):
    same_attention(
        mha_args(
            static_k=tensor((N * H, S + 1, E // H)),
            static_v=tensor((N * H, S + 1, E // H)),
            key_padding_mask=bool_mask((N, S + 1)),
            need_weights=need_weights,
        )
    )


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("need_weights", [True, False])
@pytest.mark.parametrize("mask_shape", [None, (L, S), (H, L, S)])
def test_unbatched_inputs_give_unbatched_results(mask_shape, need_weights, dtype):
    mask = None if mask_shape is None else tensor(mask_shape, dtype)
    same_attention(
        mha_args(
            dtype,
            query=tensor((L, E), dtype),
            key=tensor((S, E), dtype, "sliced"),
            value=tensor((S, E), dtype),
            attn_mask=mask,
            key_padding_mask=tensor((S,), dtype),
            need_weights=need_weights,
        )
    )


@pytest.mark.parametrize("need_weights", [True, False])
@pytest.mark.parametrize("key_padding", [False, True])
def test_is_causal_uses_the_given_causal_mask(key_padding, need_weights):
    causal = torch.ones(L, L, dtype=torch.bool).triu(1)
    kpm = bool_mask((N, L)) if key_padding else None
    same_attention(
        mha_args(
            key=tensor((L, N, E)),
            value=tensor((L, N, E)),
            attn_mask=causal,
            is_causal=True,
            key_padding_mask=kpm,
            need_weights=need_weights,
        )
    )


@pytest.mark.parametrize("need_weights", [True, False])
def test_empty_batch_gives_empty_results(need_weights):
    same_attention(
        mha_args(
            query=tensor((L, 0, E)),
            key=tensor((S, 0, E)),
            value=tensor((S, 0, E)),
            need_weights=need_weights,
        )
    )


@pytest.mark.parametrize("need_weights", [True, False])
def test_dropout_is_off_when_not_training(need_weights):
    same_attention(mha_args(dropout_p=0.9, training=False, need_weights=need_weights))


def test_dropout_when_training_zeroes_weights_at_its_rate():
    args = mha_args(
        query=tensor((16, 4, E)),
        key=tensor((32, 4, E)),
        value=tensor((32, 4, E)),
        dropout_p=0.25,
        average_attn_weights=False,
    )
    out, weights = kael_mha(args)
    assert out.shape == (16, 4, E) and weights.shape == (4, H, 16, 32)
    zeros = float((weights == 0).float().mean())
    assert 0.18 < zeros < 0.32, zeros  # 4096 draws: one standard deviation is 0.007
    kept = weights.numpy()[weights.numpy() != 0]
    no_dropout = TF.multi_head_attention_forward(**{**args, "dropout_p": 0.0})[1].numpy()
    np.testing.assert_allclose(kept, no_dropout[weights.numpy() != 0] / 0.75, rtol=1e-10)


def test_dropout_when_training_without_weights_keeps_the_shape():
    out, weights = kael_mha(mha_args(dropout_p=0.5, need_weights=False))
    assert out.shape == (L, N, E) and out.dtype is kael.float64 and weights is None
    assert np.isfinite(out.numpy()).all()


def test_attention_works_under_compile():
    args = mha_args(kael.float32, attn_mask=bool_mask((L, S)))
    want = TF.multi_head_attention_forward(**args)[0] * 2
    tensors = {name: to_kael(v) for name, v in args.items()}

    @kael.compile
    def attend(query, key, value):
        rest = {n: v for n, v in tensors.items() if n not in ("query", "key", "value")}
        return KF.multi_head_attention_forward(query, key, value, **rest)[0] * 2

    for _ in range(2):
        close_to_torch(attend(tensors["query"], tensors["key"], tensors["value"]), want, 1e-5)


def test_mismatched_mask_dtypes_warn_as_torch():
    args = mha_args(attn_mask=bool_mask((L, S)), key_padding_mask=tensor((N, S)))
    with pytest.warns(UserWarning, match="mismatched key_padding_mask and attn_mask"):
        TF.multi_head_attention_forward(**args)
    with pytest.warns(UserWarning, match="mismatched key_padding_mask and attn_mask"):
        kael_mha(args)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        kael_mha(mha_args(attn_mask=tensor((L, S)), key_padding_mask=tensor((N, S))))


# ---- errors --------------------------------------------------------------------------------


ERRORS = {
    "embed_dim mismatch": (
        dict(embed_dim_to_check=6),
        kael.ValueError,
        "embedding dimension of 6, but got 4",
    ),
    "num_heads not dividing": (dict(num_heads=3), kael.ValueError, "4 not divisible by .* 3"),
    "2-D attn_mask shape": (
        dict(attn_mask=bool_mask((L, S - 1))),
        kael.ValueError,
        r"2D attn_mask is \[3, 4\], but should be \[3, 5\]",
    ),
    "3-D attn_mask shape": (
        dict(attn_mask=tensor((N, L, S))),
        kael.ValueError,
        r"3D attn_mask is \[2, 3, 5\], but should be \[4, 3, 5\]",
    ),
    "4-D attn_mask": (dict(attn_mask=tensor((1, N * H, L, S))), kael.ValueError, "found 4-D"),
    "attn_mask of ints": (
        dict(attn_mask=torch.zeros(L, S, dtype=torch.int32)),
        kael.TypeError,
        "bool and floating .* int32",
    ),
    "key_padding_mask batch": (
        dict(key_padding_mask=bool_mask((N + 1, S))),
        kael.ValueError,
        r"shape\[0\] to be 2, but got 3",
    ),
    "key_padding_mask length": (
        dict(key_padding_mask=bool_mask((N, S + 1))),
        kael.ValueError,
        r"shape\[1\] to be 5, but got 6",
    ),
    "key_padding_mask rank": (
        dict(key_padding_mask=bool_mask((S,))),
        kael.ValueError,
        "`key_padding_mask` to be `None` or 2-D but found 1-D",
    ),
    "4-D query": (dict(query=tensor((1, L, N, E))), kael.ValueError, "received 4-D query"),
    "2-D key for 3-D query": (
        dict(key=tensor((S, E))),
        kael.ValueError,
        "found 2-D and 3-D",
    ),
    "key and value shapes": (
        dict(value=tensor((S + 1, N, E))),
        kael.ValueError,
        r"key shape \[5, 2, 4\] does not match value shape \[6, 2, 4\]",
    ),
    "is_causal without a mask": (dict(is_causal=True), kael.ValueError, "Need attn_mask"),
    "bias_k without bias_v": (dict(bias_k=tensor((1, 1, E))), kael.ValueError, "bias_v is None"),
    "bias_v without bias_k": (dict(bias_v=tensor((1, 1, E))), kael.ValueError, "bias_k is None"),
    "bias with static key": (
        dict(
            bias_k=tensor((1, 1, E)),
            bias_v=tensor((1, 1, E)),
            static_k=tensor((N * H, S, E // H)),
        ),
        kael.ValueError,
        "static key",
    ),
    "static_k heads": (
        dict(static_k=tensor((N, S, E // H))),
        kael.ValueError,
        r"static_k .*\[2, 5, 2\]",
    ),
    "static_v head size": (
        dict(static_v=tensor((N * H, S, E))),
        kael.ValueError,
        r"static_v .*\[4, 5, 4\]",
    ),
    "no in_proj_weight": (dict(in_proj_weight=None), kael.ValueError, "in_proj_weight is None"),
    "no q_proj_weight": (
        dict(use_separate_proj_weight=True, in_proj_weight=None),
        kael.ValueError,
        "q_proj_weight is None",
    ),
    "k_proj_weight shape": (
        dict(
            use_separate_proj_weight=True,
            q_proj_weight=tensor((E, E)),
            k_proj_weight=tensor((E, E + 1)),
            v_proj_weight=tensor((E, E)),
        ),
        kael.ValueError,
        r"key weights shape of \[4, 4\], but got \[4, 5\]",
    ),
    "unbatched 3-D mask shape": (
        dict(
            query=tensor((L, E)),
            key=tensor((S, E)),
            value=tensor((S, E)),
            attn_mask=tensor((N * H, L, S)),
        ),
        kael.ValueError,
        r"shape to be \[2, 3, 5\] but got \[4, 3, 5\]",
    ),
}


@pytest.mark.parametrize("case", ERRORS, ids=list(ERRORS))
def test_bad_arguments_raise_typed_errors_as_torch(case):
    overrides, error, message = ERRORS[case]
    args = mha_args(**overrides)
    with pytest.raises((AssertionError, RuntimeError)):
        TF.multi_head_attention_forward(**args)
    with pytest.raises(error, match=message):
        kael_mha(args)


def test_query_key_and_value_need_one_float_dtype():
    args = mha_args(key=tensor((S, N, E), kael.float32), value=tensor((S, N, E), kael.float32))
    with pytest.raises(RuntimeError):
        TF.multi_head_attention_forward(**args)
    with pytest.raises(kael.TypeError, match="float64, float32 and float32"):
        kael_mha(args)


@pytest.mark.parametrize("embed_dim", [E - 1, E + 1])
def test_embed_dim_check_is_exact_on_both_sides(embed_dim):
    with pytest.raises(kael.ValueError, match=f"dimension of {embed_dim}"):
        kael_mha(mha_args(embed_dim_to_check=embed_dim))
    same_attention(mha_args(embed_dim_to_check=E))


def test_fully_masked_rows_follow_torch():
    """Every key masked out: torch's weights path gives NaN, its fused path zeros."""
    mask = torch.ones(L, S, dtype=torch.bool)
    for need_weights in (True, False):
        same_attention(mha_args(attn_mask=mask, need_weights=need_weights))
    assert math.isnan(float(kael_mha(mha_args(attn_mask=mask))[0].numpy()[0, 0, 0]))


@pytest.mark.parametrize("grad", [False, True], ids=["no_grad", "grad"])
@pytest.mark.parametrize("heads, training, same", [(4, False, True), (3, False, True),
                                                   (4, True, True), (4, False, False)])  # fmt: skip
def test_batch_first_self_attention_is_laid_out_as_torchs_two_paths(heads, training, same, grad):
    """torch's native fast path (batch_first self-attention in eval, an even head count, no
    gradient wanted: its parameters require one, so grad mode must be off) returns [N, L, E]
    row-major; its other path [L, N, E] transposed."""
    tm = torch.nn.MultiheadAttention(12, heads, batch_first=True)
    km = kael.nn.MultiheadAttention(12, heads, batch_first=True)
    km.load_state_dict({k: kael.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    tm.train(training)
    km.train(training)
    x = np.random.default_rng(3).standard_normal((2, 5, 12)).astype(np.float32)
    tx, kx = torch.from_numpy(x), kael.from_numpy(x)
    with torch.set_grad_enabled(grad):
        want, _ = tm(tx, tx, tx) if same else tm(tx, tx.clone(), tx.clone())
    with kael.set_grad_enabled(grad):
        got, _ = km(kx, kx, kx) if same else km(kx, kx.clone(), kx.clone())
    want = want.detach()
    assert got.stride() == want.stride()
    np.testing.assert_allclose(got.numpy(), want.numpy(), atol=1e-5)
