"""torch.NAME forms with torch's own signatures (frontend/torch_level.py) against torch: the
function forms of in-place methods, the dropouts, the norms with their statistics, the
losses with int reductions, and the layers' torch-level spellings."""

import numpy as np
import pytest
import torch
from kernel_helpers import TORCH_DTYPES
from parity_helpers import close_to_torch, same

import kael

RNG = np.random.default_rng(5)
FLOATS = [kael.float32, kael.float64]
LAYOUTS = ["contiguous", "transposed", "sliced", "empty", "0-d"]


def _laid_out(values: np.ndarray, dtype, layout: str):
    """A kael tensor and the equal torch tensor over `values` (4 x 6), laid out as named."""
    t = torch.tensor(values).to(TORCH_DTYPES[dtype])
    k = kael.from_dlpack(t.clone())
    views = {
        "contiguous": lambda x: x,
        "transposed": lambda x: x.t(),
        "sliced": lambda x: x[1:, ::2],
        "empty": lambda x: x[:0],
        "0-d": lambda x: x[1, 2],
    }
    return views[layout](k), views[layout](t)


# name -> (low, high, extra arguments); values are drawn in [low, high)
UNARY = {
    **dict.fromkeys(
        ["abs_", "ceil_", "floor_", "frac_", "neg_", "negative_", "round_", "trunc_", "fix_"],
        (-3, 3, ()),
    ),
    **dict.fromkeys(["sin_", "cos_", "tan_", "sinh_", "cosh_", "tanh_", "sinc_"], (-1, 1, ())),
    **dict.fromkeys(
        ["exp_", "exp2_", "expm1_", "erf_", "erfc_", "sigmoid_", "deg2rad_", "rad2deg_"],
        (-2, 2, ()),
    ),
    **dict.fromkeys(
        ["acos_", "arccos_", "asin_", "arcsin_", "atanh_", "arctanh_", "logit_"], (0.05, 0.95, ())
    ),
    **dict.fromkeys(["atan_", "arctan_", "asinh_", "arcsinh_", "i0_", "square_"], (-2, 2, ())),
    **dict.fromkeys(["acosh_", "arccosh_"], (1.5, 4, ())),
    **dict.fromkeys(
        ["log_", "log2_", "log10_", "log1p_", "sqrt_", "rsqrt_", "reciprocal_"], (0.5, 4, ())
    ),
    "clamp_": (-3, 3, (-1.0, 1.5)),
    "clip_": (-3, 3, (-0.5, 2.0)),
    "clamp_min_": (-3, 3, (0.5,)),
    "clamp_max_": (-3, 3, (0.5,)),
    "nan_to_num_": (-3, 3, (0.0,)),
    "zero_": (-3, 3, ()),
    "fill_": (-3, 3, (2.5,)),
}


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("name", sorted(UNARY))
def test_inplace_function_form_writes_and_returns_input(name, dtype, layout):
    low, high, args = UNARY[name]
    k, t = _laid_out(RNG.uniform(low, high, (4, 6)), dtype, layout)
    got = getattr(kael, name)(k, *args)
    want = getattr(torch, name)(t, *args)
    assert got is k
    same(k, want)


@pytest.mark.parametrize("name", ["gcd_", "lcm_"])
def test_integer_inplace_function_forms_match_torch(name):
    k, t = _laid_out(RNG.integers(-12, 13, (4, 6)), kael.int64, "transposed")
    ko, to = _laid_out(RNG.integers(1, 9, (4, 6)), kael.int64, "transposed")
    assert getattr(kael, name)(k, ko) is k
    same(k, getattr(torch, name)(t, to))


@pytest.mark.parametrize("name", ["xlogy_", "ldexp_"])
def test_binary_inplace_function_forms_match_torch(name):
    k, t = _laid_out(RNG.uniform(-2, 2, (4, 6)), kael.float64, "sliced")
    ko, to = _laid_out(RNG.integers(0, 4, (4, 6)), kael.float64, "sliced")
    assert getattr(kael, name)(k, ko) is k
    same(k, getattr(torch, name)(t, to))


@pytest.mark.parametrize("dtype", [kael.float16, kael.bfloat16], ids=str)
def test_inplace_function_forms_of_half_types_match_torch(dtype):
    k, t = _laid_out(RNG.uniform(0.5, 4, (4, 6)), dtype, "transposed")
    kael.sqrt_(k)
    close_to_torch(k, torch.sqrt_(t), 1e-2)


def test_detach_function_form_returns_input_unchanged():
    values = RNG.uniform(-3, 3, (4, 6))
    k, t = kael.tensor(values), torch.tensor(values)
    assert kael.detach_(k) is k and k.detach_() is k
    same(k, torch.detach_(t))


def test_round_function_form_takes_decimals():
    k, t = _laid_out(RNG.uniform(-3, 3, (4, 6)), kael.float64, "contiguous")
    same(kael.round_(k, decimals=1), torch.round_(t, decimals=1))


def test_inplace_function_form_refuses_a_non_tensor():
    with pytest.raises(kael.TypeError, match="abs_.*must be Tensor, not int"):
        kael.abs_(3)


def test_inplace_function_form_refuses_what_the_method_refuses():
    with pytest.raises(kael.Error):
        kael.sqrt_(kael.arange(3))  # torch: a float result cannot go into an int tensor
    with pytest.raises(RuntimeError):
        torch.sqrt_(torch.arange(3))


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", [kael.float32, kael.int32, kael.bool], ids=str)
def test_fill_makes_a_new_filled_tensor(dtype, layout):
    k, t = _laid_out(RNG.integers(0, 3, (4, 6)), dtype, layout)
    got = kael.fill(k, 1)
    same(got, torch.fill(t, 1))
    assert not got.shares_storage(k) or k.numel() == 0
    same(kael.fill(k, kael.tensor(1)), torch.fill(t, torch.tensor(1)))


def test_fill_refuses_a_value_tensor_with_dims():
    with pytest.raises(kael.ValueError, match="0-dimension value tensor.*1 dimensions"):
        kael.fill(kael.ones(2), kael.ones(2))


def test_adjoint_swaps_the_last_two_dims():
    k, t = _laid_out(RNG.uniform(-2, 2, (4, 6)), kael.float32, "sliced")
    same(kael.adjoint(k), torch.adjoint(t))
    assert kael.adjoint(k).stride() == torch.adjoint(t).stride()


def test_strided_prints_as_torch_strided_does():
    assert repr(kael.strided) == "kael.strided" and repr(torch.strided) == "torch.strided"
    assert isinstance(kael.strided, kael.layout)


# ---- dropouts ----------------------------------------------------------------------------------

DROPOUTS = ["dropout", "alpha_dropout", "feature_dropout", "feature_alpha_dropout"]


@pytest.mark.parametrize("name", DROPOUTS)
def test_dropout_when_not_training_is_the_input(name):
    k, t = _laid_out(RNG.uniform(-2, 2, (4, 6)), kael.float32, "transposed")
    same(getattr(kael, name)(k, 0.5, False), getattr(torch, name)(t, 0.5, False))
    same(getattr(kael, name)(k, 0.0, True), getattr(torch, name)(t, 0.0, True))


@pytest.mark.parametrize("name", DROPOUTS)
def test_dropout_of_probability_one_matches_torch(name):
    k, t = _laid_out(RNG.uniform(-2, 2, (4, 6)), kael.float64, "sliced")
    same(getattr(kael, name)(k, 1.0, True), getattr(torch, name)(t, 1.0, True))


@pytest.mark.parametrize("name", ["dropout", "feature_dropout"])
def test_dropout_keeps_scaled_values_or_zeros(name):
    x = kael.from_dlpack(torch.rand(8, 16, 3, dtype=torch.float64) + 1)
    out = getattr(kael, name)(x, 0.25, True)
    ratio = (out / x).numpy()
    kept = ratio != 0
    np.testing.assert_allclose(ratio[kept], 1 / 0.75)
    assert 0 < kept.mean() < 1
    if name == "feature_dropout":  # whole channels are kept or dropped
        assert (kept == kept[:, :, :1]).all()


@pytest.mark.parametrize("name", DROPOUTS)
def test_dropout_underscore_form_writes_input(name):
    x = kael.ones(4, 5, 2)
    assert getattr(kael, name + "_")(x, 0.5, True) is x
    assert getattr(kael, name + "_")(x, 0.5, False) is x


@pytest.mark.parametrize("name", DROPOUTS)
def test_dropout_probability_outside_zero_one_is_refused(name):
    for p in (-0.1, 1.5):
        with pytest.raises(kael.ValueError, match=f"between 0 and 1, but got {p}"):
            getattr(kael, name)(kael.ones(3, 4), p, True)
        with pytest.raises(RuntimeError, match="between 0 and 1"):
            getattr(torch, name)(torch.ones(3, 4), p, True)


@pytest.mark.parametrize("name", ["feature_dropout", "feature_alpha_dropout"])
def test_feature_dropout_needs_two_dims(name):
    with pytest.raises(kael.ValueError, match="at least 2 dimensions"):
        getattr(kael, name)(kael.ones(3), 0.5, True)
    with pytest.raises(RuntimeError, match="at least 2 dimensions"):
        getattr(torch, name)(torch.ones(3), 0.5, True)
    same(getattr(kael, name)(kael.ones(3, 2), 0.5, False), torch.ones(3, 2))


def test_dropout_refuses_an_integer_input():
    with pytest.raises(kael.TypeError, match="floating point"):
        kael.dropout(kael.arange(4), 0.5, True)


@pytest.mark.parametrize("train", [False, True])
@pytest.mark.parametrize("p", [0.0, 1.0])
def test_native_dropout_of_fixed_outcomes_matches_torch(p, train):
    k, t = _laid_out(RNG.uniform(-2, 2, (4, 6)), kael.float32, "transposed")
    same(kael.native_dropout(k, p, train), torch.native_dropout(t, p, train))


def test_native_dropout_mask_marks_the_kept_elements():
    x = kael.from_dlpack(torch.rand(10, 10, dtype=torch.float64) + 1)
    out, mask = kael.native_dropout(x, 0.4, True)
    assert mask.dtype is kael.bool and mask.shape == x.shape
    expected = x.numpy() * mask.numpy() / 0.6
    np.testing.assert_allclose(out.numpy(), expected)
    assert 0 < mask.numpy().mean() < 1
    out, mask = kael.native_dropout(x, 0.4, None)  # no train flag: training
    np.testing.assert_allclose(out.numpy(), x.numpy() * mask.numpy() / 0.6)


def test_native_dropout_refuses_a_probability_outside_zero_one():
    with pytest.raises(kael.ValueError, match=r"p to be in \[0, 1\], but got p=-0.5"):
        kael.native_dropout(kael.ones(3), 1.5, True)
    with pytest.raises(RuntimeError, match=r"p to be in \[0, 1\], but got p=-0.5"):
        torch.native_dropout(torch.ones(3), 1.5, True)


def test_rrelu_in_eval_matches_torch():
    k, t = _laid_out(RNG.uniform(-2, 2, (4, 6)), kael.float64, "transposed")
    same(kael.rrelu(k, 0.1, 0.3), torch.rrelu(t, 0.1, 0.3))
    assert kael.rrelu_(k, 0.1, 0.3) is k
    same(k, torch.rrelu_(t, 0.1, 0.3))


@pytest.mark.parametrize("seeded", [False, True])
def test_rrelu_in_training_scales_negatives_within_bounds(seeded):
    x = kael.from_dlpack(torch.linspace(-3, 3, 40, dtype=torch.float64))
    make = (lambda: kael.Generator().manual_seed(3)) if seeded else (lambda: None)
    out = kael.rrelu(x, 0.2, 0.4, True, make())
    ratio = (out / x).numpy()
    negative = x.numpy() < 0
    assert ((ratio[negative] >= 0.2) & (ratio[negative] <= 0.4)).all()
    np.testing.assert_array_equal(ratio[~negative], 1.0)
    if seeded:  # one generator state, one draw
        same(kael.rrelu(x, 0.2, 0.4, True, make()), torch.from_dlpack(out))
        y = x.clone()
        assert kael.rrelu_(y, 0.2, 0.4, True, make()) is y
        same(y, torch.from_dlpack(out))


def test_rrelu_refuses_a_lower_bound_above_the_upper():
    with pytest.raises(kael.ValueError, match="Lower bound should be less than or equal"):
        kael.rrelu(kael.ones(3), 0.5, 0.1, True)
    with pytest.raises(RuntimeError, match="Lower bound should be less than or equal"):
        torch.rrelu(torch.ones(3), 0.5, 0.1, True)


# ---- norms and their statistics --------------------------------------------------------------


def _pairs(*shapes, dtype=kael.float64):
    """kael and torch tensors over the same random values, one pair per shape."""
    out = []
    for shape in shapes:
        t = torch.tensor(RNG.standard_normal(shape)).to(TORCH_DTYPES[dtype])
        out.append((kael.from_dlpack(t.clone()), t))
    return out


@pytest.mark.parametrize("training", [True, False])
def test_batch_norm_in_torch_order_matches_torch(training):
    (kx, tx), (kw, tw), (kb, tb), (km, tm) = _pairs((4, 3, 5), (3,), (3,), (3,))
    kv, tv = km.abs() + 0.5, tm.abs() + 0.5
    got = kael.batch_norm(kx, kw, kb, km, kv, training, 0.2, 1e-3, False)
    same(got, torch.batch_norm(tx, tw, tb, tm, tv, training, 0.2, 1e-3, False))
    same((km, kv), (tm, tv))


def test_instance_norm_in_torch_order_matches_torch():
    (kx, tx), (kw, tw), (kb, tb), (km, tm) = _pairs((2, 3, 5), (3,), (3,), (3,))
    kv, tv = km.abs() + 0.5, tm.abs() + 0.5
    got = kael.instance_norm(kx, kw, kb, km, kv, True, 0.1, 1e-5, False)
    same(got, torch.instance_norm(tx, tw, tb, tm, tv, True, 0.1, 1e-5, False))
    same((km, kv), (tm, tv))


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_group_norm_in_torch_order_matches_torch(dtype):
    (kx, tx), (kw, tw), (kb, tb) = _pairs((2, 4, 3), (4,), (4,), dtype=dtype)
    same(kael.group_norm(kx, 2, kw, kb, 1e-4), torch.group_norm(tx, 2, tw, tb, 1e-4))
    same(kael.group_norm(kx.mT.mT, 4), torch.group_norm(tx, 4))


def test_group_norm_refuses_groups_that_do_not_divide_the_channels():
    with pytest.raises(kael.ValueError, match="divisible by num_groups.*num_groups=3"):
        kael.group_norm(kael.ones(2, 4, 3), 3)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_native_layer_norm_gives_mean_and_rstd(dtype):
    (kx, tx), (kw, tw), (kb, tb) = _pairs((2, 3, 4), (3, 4), (3, 4), dtype=dtype)
    got = kael.native_layer_norm(kx, (3, 4), kw, kb, 1e-5)
    same(got, torch.native_layer_norm(tx, (3, 4), tw, tb, 1e-5))
    got = kael.native_layer_norm(kx.transpose(0, 2), [2], None, None, 1e-5)
    same(got, torch.native_layer_norm(tx.transpose(0, 2), [2], None, None, 1e-5))


def test_native_layer_norm_of_half_keeps_the_dtype():
    ((kx, tx),) = _pairs((3, 8), dtype=kael.float16)
    close_to_torch(
        kael.native_layer_norm(kx, (8,), None, None, 1e-5),
        torch.native_layer_norm(tx, (8,), None, None, 1e-5),
        1e-2,
    )


def test_native_layer_norm_refuses_a_mismatched_shape():
    with pytest.raises(kael.ValueError, match=r"normalized_shape=\[5\].*\[\*, 5\]"):
        kael.native_layer_norm(kael.ones(3, 4), (5,), None, None, 1e-5)


@pytest.mark.parametrize("running", [True, False])
@pytest.mark.parametrize("training", [True, False])
def test_native_batch_norm_gives_the_saved_statistics(training, running):
    if not training and not running:
        return  # eval needs running statistics (tested below)
    (kx, tx), (kw, tw), (km, tm) = _pairs((4, 3, 2, 2), (3,), (3,))
    kv, tv = km.abs() + 0.5, tm.abs() + 0.5
    stats_k = (km, kv) if running else (None, None)
    stats_t = (tm, tv) if running else (None, None)
    got = kael.native_batch_norm(kx, kw, None, *stats_k, training, 0.1, 1e-5)
    same(got, torch.native_batch_norm(tx, tw, None, *stats_t, training, 0.1, 1e-5))
    same((km, kv), (tm, tv))


def test_native_batch_norm_of_half_takes_the_running_dtype():
    ((kx, tx),) = _pairs((4, 3), dtype=kael.float16)
    for training in (True, False):
        km, kv = kael.zeros(3), kael.ones(3)
        tm, tv = torch.zeros(3), torch.ones(3)
        got = kael.native_batch_norm(kx, None, None, km, kv, training, 0.1, 1e-5)
        close_to_torch(
            got, torch.native_batch_norm(tx, None, None, tm, tv, training, 0.1, 1e-5), 1e-2
        )
    got = kael.native_batch_norm(kx, None, None, None, None, True, 0.1, 1e-5)
    close_to_torch(got, torch.native_batch_norm(tx, None, None, None, None, True, 0.1, 1e-5), 1e-2)


def test_native_batch_norm_in_eval_needs_running_statistics():
    with pytest.raises(kael.ValueError, match="running_mean and running_var"):
        kael.native_batch_norm(kael.ones(4, 3), None, None, None, None, False, 0.1, 1e-5)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_native_group_norm_gives_mean_and_rstd(dtype):
    (kx, tx), (kw, tw), (kb, tb) = _pairs((2, 6, 5), (6,), (6,), dtype=dtype)
    got = kael.native_group_norm(kx, kw, kb, 2, 6, 5, 3, 1e-5)
    same(got, torch.native_group_norm(tx, tw, tb, 2, 6, 5, 3, 1e-5))


def test_native_group_norm_refuses_sizes_that_miss_the_input():
    with pytest.raises(kael.ValueError, match=r"N \* C \* HxW, got 12 != 2 \* 4 \* 1"):
        kael.native_group_norm(kael.ones(3, 4, 1), None, None, 2, 4, 1, 2, 1e-5)
    with pytest.raises(RuntimeError, match="N \\* C \\* HxW"):
        torch.native_group_norm(torch.ones(3, 4, 1), None, None, 2, 4, 1, 2, 1e-5)


# ---- losses with reduction as torch's int ----------------------------------------------------

REDUCTIONS = [0, 1, 2, 3]  # 3: any other int reduces as none does, in torch too


def _loss_args(name: str):
    """(kael args, torch args) for one call of the loss."""
    (ka, ta), (kb, tb), (kc, tc) = _pairs((3, 4), (3, 4), (3, 4))
    sign_k, sign_t = kb.sign(), tb.sign()
    sign_k[sign_k == 0], sign_t[sign_t == 0] = 1.0, 1.0
    targets = {
        "kl_div": ((ka, kb), (ta, tb)),
        "binary_cross_entropy_with_logits": ((ka, kb.sigmoid()), (ta, tb.sigmoid())),
        "hinge_embedding_loss": ((ka, sign_k), (ta, sign_t)),
        "cosine_embedding_loss": ((ka, kb, sign_k[:, 0]), (ta, tb, sign_t[:, 0])),
        "margin_ranking_loss": ((ka, kb, sign_k), (ta, tb, sign_t)),
        "triplet_margin_loss": ((ka, kb, kc), (ta, tb, tc)),
        "poisson_nll_loss": ((ka, kb.abs(), True, True, 1e-8), (ta, tb.abs(), True, True, 1e-8)),
    }
    return targets[name]


LOSSES = [
    "kl_div",
    "binary_cross_entropy_with_logits",
    "hinge_embedding_loss",
    "cosine_embedding_loss",
    "margin_ranking_loss",
    "triplet_margin_loss",
    "poisson_nll_loss",
]


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("name", LOSSES)
def test_loss_with_int_reduction_matches_torch(name, reduction):
    k_args, t_args = _loss_args(name)
    got = getattr(kael, name)(*k_args, reduction=reduction)
    same(got, getattr(torch, name)(*t_args, reduction=reduction))


@pytest.mark.parametrize("name", [n for n in LOSSES if n != "poisson_nll_loss"])
def test_loss_without_a_reduction_gives_each_elements_loss_as_torch(name):
    k_args, t_args = _loss_args(name)
    got = getattr(kael, name)(*k_args)
    same(got, getattr(torch, name)(*t_args))
    assert got.ndim > 0


@pytest.mark.parametrize("name", LOSSES)
def test_loss_refuses_a_string_reduction(name):
    k_args, _ = _loss_args(name)
    with pytest.raises(kael.TypeError, match=f"{name}.*'reduction' must be int, not str"):
        getattr(kael, name)(*k_args, reduction="mean")


def test_torch_level_losses_take_torch_positional_order():
    (ka, ta), (kb, tb), (kw, tw) = _pairs((3, 4), (3, 4), (4,))
    got = kael.binary_cross_entropy_with_logits(ka, kb.sigmoid(), None, kw.abs(), 2)
    same(got, torch.binary_cross_entropy_with_logits(ta, tb.sigmoid(), None, tw.abs(), 2))
    same(kael.kl_div(ka, kb, 0, log_target=True), torch.kl_div(ta, tb, 0, log_target=True))
    got = kael.triplet_margin_loss(ka, kb, kb * 2, 0.5, 1.0, 1e-6, True, 0)
    same(got, torch.triplet_margin_loss(ta, tb, tb * 2, 0.5, 1.0, 1e-6, True, 0))


# ---- layers ------------------------------------------------------------------------------------


@pytest.mark.parametrize("padding_idx", [-1, 2])
def test_embedding_takes_weight_first(padding_idx):
    ((kw, tw),) = _pairs((5, 3))
    ti = torch.tensor([[1, 4], [2, 2]])
    ki = kael.from_dlpack(ti.clone())
    same(kael.embedding(kw, ki, padding_idx), torch.embedding(tw, ti, padding_idx))
    same(kael.embedding(kw.mT.mT, ki[:0]), torch.embedding(tw, ti[:0]))


def test_embedding_refuses_an_index_out_of_range():
    with pytest.raises(kael.IndexError, match="index 7 is out of bounds"):
        kael.embedding(kael.ones(5, 3), kael.tensor([1, 7]))
    with pytest.raises(IndexError):
        torch.embedding(torch.ones(5, 3), torch.tensor([1, 7]))


@pytest.mark.parametrize("pad", [(1, 2), (1, -1, 2, 0), (-1, -1), (0, 0)])
def test_constant_pad_nd_pads_and_crops(pad):
    k, t = _laid_out(RNG.uniform(-2, 2, (4, 6)), kael.float32, "transposed")
    same(kael.constant_pad_nd(k, pad, 1.5), torch.constant_pad_nd(t, pad, 1.5))
    same(kael.constant_pad_nd(k, pad), torch.constant_pad_nd(t, pad))


def test_constant_pad_nd_refuses_an_odd_pad():
    with pytest.raises(kael.ValueError, match="divisible by 2, got 3"):
        kael.constant_pad_nd(kael.ones(2, 3), (1, -1, 2))
    with pytest.raises(RuntimeError, match="must be even"):
        torch.constant_pad_nd(torch.ones(2, 3), (1, -1, 2))


def test_constant_pad_nd_refuses_more_pads_than_dims():
    with pytest.raises(kael.ValueError, match="Padding length 6 is too large for a 2-D input"):
        kael.constant_pad_nd(kael.ones(2, 3), (0, 0, 0, 0, 1, 1))
    with pytest.raises(RuntimeError, match="no more than twice the number of dimensions"):
        torch.constant_pad_nd(torch.ones(2, 3), (0, 0, 0, 0, 1, 1))


@pytest.mark.parametrize("name", ["channel_shuffle", "native_channel_shuffle"])
def test_channel_shuffle_matches_torch(name):
    ((k, t),) = _pairs((2, 6, 3))
    same(getattr(kael, name)(k, 3), getattr(torch, name)(t, 3))
    with pytest.raises(kael.Error):
        getattr(kael, name)(k, 4)


@pytest.mark.parametrize("output_size", [1, 2, 3, 5])
def test_adaptive_max_pool1d_gives_values_and_indices(output_size):
    ((k, t),) = _pairs((2, 3, 5))
    same(kael.adaptive_max_pool1d(k, output_size), torch.adaptive_max_pool1d(t, output_size))


@pytest.mark.parametrize(
    "args", [(2,), (2, ()), (3, 1, 1), (2, 2, 0, 2), (3, 2, 1, 1, True)], ids=str
)
def test_max_pool1d_with_indices_gives_values_and_indices(args):
    ((k, t),) = _pairs((2, 3, 7))
    same(kael.max_pool1d_with_indices(k, *args), torch.max_pool1d_with_indices(t, *args))


def test_max_pool1d_with_indices_refuses_a_kernel_too_large_for_padding():
    with pytest.raises(kael.Error):
        kael.max_pool1d_with_indices(kael.ones(1, 2, 5), 2, 1, 2)
    with pytest.raises(RuntimeError):
        torch.max_pool1d_with_indices(torch.ones(1, 2, 5), 2, 1, 2)


@pytest.mark.parametrize("reduction", [None, 0, 1, 2])
def test_torch_level_ctc_loss_takes_the_reduction_as_an_int(reduction):
    values = RNG.standard_normal((6, 2, 5))
    k, t = kael.tensor(values).log_softmax(2), torch.tensor(values).log_softmax(2)
    targets = [[1, 2, 2], [3, 1, 4]]
    args = ([6, 5], [3, 2]) if reduction is None else ([6, 5], [3, 2], 0, reduction)
    got = kael.ctc_loss(k, kael.tensor(targets), *args)
    close_to_torch(got, torch.ctc_loss(t, torch.tensor(targets), *args), 1e-12)


@pytest.mark.parametrize("norm_type", [1.0, 2.0])
def test_embedding_renorm_scales_the_named_rows_in_place(norm_type):
    values = RNG.standard_normal((5, 3)) * 2
    k, t = kael.tensor(values), torch.tensor(values)
    rows = [0, 3, 3]
    assert kael.embedding_renorm_(k, kael.tensor(rows), 1.0, norm_type) is k
    torch.embedding_renorm_(t, torch.tensor(rows), 1.0, norm_type)
    close_to_torch(k, t, 1e-12)
