"""The PyTorch names of the linalg extras, grids, bags, attention, CTC, fractional pooling,
recurrent layers, torch-level forms, conveniences, random fills, incomplete gammas,
histogramdd, nonzero_static and Tensor.resize_/set_/new on a cuda tensor: the result lives
on cuda:0 and equals the CPU's (bits where both run the same arithmetic, close where the
device's reductions or math functions round otherwise); a mix of devices raises naming both.
Tiny shapes: the emulated device runs the file in seconds (`pytest -m gpu`)."""

import math

import numpy as np
import pytest

import kael
import kael.nn.functional as F
from kael.runtime.errors import Error, TypeError

pytestmark = pytest.mark.gpu

DEVICE = "cuda"
FLOATS = [kael.float32, kael.float64]
BITS = 0.0  # a case's tolerance: the CPU's bits exactly
CLOSE = "close"  # a case's tolerance: TOL of its dtype
HALF = [kael.float16, kael.bfloat16]
TOL = {kael.float32: 2e-5, kael.float64: 1e-12, kael.float16: 4e-3, kael.bfloat16: 3e-2}


def _x(d, *shape, dt=kael.float32, seed: int = 0, scale: float = 1.0) -> kael.Tensor:
    """Normal values of `shape` on device d (the same values on every device)."""
    values = np.random.default_rng(seed).standard_normal(shape) * scale
    return kael.tensor(values).to(dt).to(d)


def _i(d, values, dt=kael.int64) -> kael.Tensor:
    return kael.tensor(values, dtype=dt).to(d)


def _flat(out) -> list:
    """The tensors of a result (a tensor, or tuples / named tuples / lists of them)."""
    if isinstance(out, kael.Tensor):
        return [out]
    if isinstance(out, tuple | list):
        return [t for item in out for t in _flat(item)]
    return []


def _numbers(t: kael.Tensor) -> np.ndarray:
    t = t.detach().cpu()
    return (t.float() if t.dtype.is_half else t).numpy()


def _agrees(got, want, tol: float) -> None:
    """Every tensor of `got` on cuda:0 with the dtype and shape of `want`'s, its values
    `want`'s bits (tol 0) or within tol."""
    got, want = _flat(got), _flat(want)
    assert want and len(got) == len(want)
    for g, w in zip(got, want):
        assert str(g.device) == "cuda:0", g.device
        assert g.dtype == w.dtype and g.shape == w.shape, (g.dtype, g.shape, w.dtype, w.shape)
        if tol == BITS:
            np.testing.assert_array_equal(_numbers(g), _numbers(w))
        else:
            np.testing.assert_allclose(_numbers(g), _numbers(w), rtol=tol, atol=tol)


def _on_both(case, dt, seed: int = 0):
    """(case run on cuda, case run on the CPU), the generator seeded alike before each."""
    kael.manual_seed(seed)
    got = case(DEVICE, dt)
    kael.manual_seed(seed)
    return got, case("cpu", dt)


# ---- the deterministic names: name -> (fn(device, dtype), BITS or CLOSE) ------------------------


def _spd(d, dt, n: int = 3) -> kael.Tensor:
    """A well-conditioned symmetric positive definite matrix, made on the host then moved."""
    a = _x("cpu", n, n, dt=dt)
    return (a @ a.mT + n * kael.eye(n, dtype=dt)).to(d)


def _lu(d, dt):
    return kael.lu(_spd(d, dt))


def _qr(d, dt):
    return kael.geqrf(_x(d, 4, 3, dt=dt))


_LINALG = {
    "lu": (lambda d, dt: kael.lu(_x(d, 3, 3, dt=dt).mT, get_infos=True), BITS),
    "lu_of_an_empty_batch": (lambda d, dt: kael.lu(_x(d, 0, 2, 2, dt=dt)), BITS),
    "lu_solve": (lambda d, dt: kael.lu_solve(_x(d, 3, 2, dt=dt, seed=1), *_lu(d, dt)), BITS),
    "lu_unpack": (lambda d, dt: kael.lu_unpack(*_lu(d, dt)), BITS),
    "lu_unpack_data_only": (lambda d, dt: kael.lu_unpack(*_lu(d, dt), unpack_pivots=False), BITS),
    "triangular_solve": (
        lambda d, dt: kael.triangular_solve(_x(d, 3, 2, dt=dt), _spd(d, dt), upper=False),
        BITS,
    ),
    "triangular_solve_transposed": (
        lambda d, dt: kael.triangular_solve(_x(d, 2, 3, 1, dt=dt), _spd(d, dt), transpose=True),
        BITS,
    ),
    "cholesky_inverse": (
        lambda d, dt: kael.cholesky_inverse(kael.linalg.cholesky(_spd(d, dt))),
        BITS,
    ),
    "cholesky_inverse_upper": (
        lambda d, dt: kael.cholesky_inverse(kael.linalg.cholesky(_spd(d, dt)).mT, upper=True),
        BITS,
    ),
    "geqrf": (lambda d, dt: _qr(d, dt), BITS),
    "ormqr": (lambda d, dt: kael.ormqr(*_qr(d, dt), _x(d, 4, 2, dt=dt, seed=1)), BITS),
    "ormqr_right_transposed": (
        lambda d, dt: kael.ormqr(*_qr(d, dt), _x(d, 2, 4, dt=dt, seed=1), False, True),
        BITS,
    ),
    "nuclear_norm": (lambda d, dt: kael.nuclear_norm(_x(d, 3, 4, dt=dt)), BITS),
    "nuclear_norm_dims": (lambda d, dt: kael.nuclear_norm(_x(d, 2, 3, 2, dt=dt), (0, 2)), BITS),
    "frobenius_norm": (lambda d, dt: kael.frobenius_norm(_x(d, 3, 4, dt=dt), (0, 1)), CLOSE),
    "frobenius_norm_keepdim": (
        lambda d, dt: kael.frobenius_norm(_x(d, 2, 3, dt=dt).mT, 0, keepdim=True),
        CLOSE,
    ),
    "linalg.vander": (lambda d, dt: kael.linalg.vander(_x(d, 2, 3, dt=dt)), CLOSE),
    "linalg.vander_of_ints": (lambda d, dt: kael.linalg.vander(_i(d, [2, -3, 5]), N=4), BITS),
    "linalg.vander_of_an_empty_batch": (lambda d, dt: kael.linalg.vander(_x(d, 0, 3, dt=dt)), BITS),
    "linalg.diagonal": (lambda d, dt: kael.linalg.diagonal(_x(d, 2, 3, 4, dt=dt), offset=1), BITS),
    "linalg.matmul": (lambda d, dt: kael.linalg.matmul(_x(d, 3, 4, dt=dt), _x(d, 4, dt=dt)), CLOSE),
    "linalg.tensorinv": (
        lambda d, dt: kael.linalg.tensorinv(_spd(d, dt, 4).reshape(4, 2, 2), ind=1),
        BITS,
    ),
    "linalg.tensorsolve": (
        lambda d, dt: kael.linalg.tensorsolve(_spd(d, dt, 6).reshape(2, 3, 6), _x(d, 2, 3, dt=dt)),
        BITS,
    ),
}

_GRID = {
    "affine_grid": (
        lambda d, dt: F.affine_grid(_x(d, 2, 2, 3, dt=dt), (2, 1, 3, 4), align_corners=False),
        CLOSE,
    ),
    "affine_grid_3d": (
        lambda d, dt: F.affine_grid(_x(d, 1, 3, 4, dt=dt), (1, 1, 2, 1, 3), align_corners=True),
        CLOSE,
    ),
    "grid_sample_bilinear": (
        lambda d, dt: F.grid_sample(
            _x(d, 1, 2, 4, 5, dt=dt)[..., 1:], _x(d, 1, 3, 2, 2, dt=dt, seed=1), align_corners=False
        ),
        CLOSE,
    ),
    "grid_sample_nearest_border": (
        lambda d, dt: F.grid_sample(
            _x(d, 1, 2, 4, 4, dt=dt).mT,
            _x(d, 1, 3, 2, 2, dt=dt, seed=1, scale=2.0),
            mode="nearest",
            padding_mode="border",
            align_corners=True,
        ),
        BITS,
    ),
    "grid_sample_bicubic_reflection": (
        lambda d, dt: F.grid_sample(
            _x(d, 1, 1, 4, 4, dt=dt),
            _x(d, 1, 2, 3, 2, dt=dt, seed=1, scale=2.0),
            mode="bicubic",
            padding_mode="reflection",
            align_corners=False,
        ),
        CLOSE,
    ),
    "grid_sample_3d": (
        lambda d, dt: F.grid_sample(
            _x(d, 1, 1, 2, 3, 3, dt=dt), _x(d, 1, 2, 1, 2, 3, dt=dt, seed=1), align_corners=False
        ),
        CLOSE,
    ),
    "grid_sampler": (
        lambda d, dt: kael.grid_sampler(
            _x(d, 1, 1, 3, 3, dt=dt), _x(d, 1, 2, 2, 2, dt=dt), 0, 1, True
        ),
        CLOSE,
    ),
    "grid_sampler_3d": (
        lambda d, dt: kael.grid_sampler_3d(
            _x(d, 1, 1, 2, 2, 2, dt=dt), _x(d, 1, 1, 2, 2, 3, dt=dt, seed=1), 1, 2, False
        ),
        BITS,
    ),
}

_BAG_INDEX = [0, 2, 4, 1, 5, 2]


def _bag(d, dt, **kwargs):
    return F.embedding_bag(_i(d, _BAG_INDEX), _x(d, 6, 3, dt=dt), _i(d, [0, 2, 2]), **kwargs)


def _renormed(d, dt, fn):
    """fn(weight) and the weight it renormed in place."""
    weight = _x(d, 6, 3, dt=dt, scale=2.0)
    return fn(weight), weight


_BAGS = {
    "embedding_bag_mean_with_an_empty_bag": (lambda d, dt: _bag(d, dt), CLOSE),
    "embedding_bag_max": (lambda d, dt: _bag(d, dt, mode="max"), BITS),
    "embedding_bag_weighted_sum_padding": (
        lambda d, dt: _bag(d, dt, mode="sum", per_sample_weights=_x(d, 6, dt=dt), padding_idx=2),
        CLOSE,
    ),
    "embedding_bag_2d_input_transposed_weight": (
        lambda d, dt: F.embedding_bag(_i(d, [[0, 1], [2, 0]]), _x(d, 3, 3, dt=dt).mT),
        CLOSE,
    ),
    "embedding_bag_max_norm": (
        lambda d, dt: _renormed(
            d, dt, lambda w: F.embedding_bag(_i(d, _BAG_INDEX), w, _i(d, [0, 3]), max_norm=1.0)
        ),
        CLOSE,
    ),
    "embedding_max_norm": (
        lambda d, dt: _renormed(
            d, dt, lambda w: F.embedding(_i(d, [[1, 3], [1, 0]]), w, max_norm=1.5)
        ),
        CLOSE,
    ),
    "embedding_max_norm_int32_indices": (
        lambda d, dt: _renormed(
            d, dt, lambda w: F.embedding(_i(d, [4, 4], kael.int32), w, max_norm=0.5, norm_type=1.0)
        ),
        CLOSE,
    ),
    "embedding_of_no_indices": (
        lambda d, dt: _renormed(d, dt, lambda w: F.embedding(_i(d, []), w, max_norm=1.0)),
        BITS,
    ),
    "torch.embedding": (
        lambda d, dt: kael.embedding(_x(d, 6, 3, dt=dt), _i(d, [0, 5, 2]), 2),
        BITS,
    ),
    "embedding_renorm_": (
        lambda d, dt: _renormed(
            d, dt, lambda w: kael.embedding_renorm_(w, _i(d, [1, 2]), 1.0, 2.0)
        ),
        CLOSE,
    ),
}


def _attention(d, dt, bias_kv=(None, None), zero_attn=False, dropout=0.0, **kwargs):
    """multi_head_attention_forward over [3, 2, 4] query, key and value, 2 heads."""
    q, k, v = (_x(d, 3, 2, 4, dt=dt, seed=s) for s in (0, 1, 2))
    weights = [_x(d, 12, 4, dt=dt, seed=3), _x(d, 12, dt=dt, seed=4)]
    out = [_x(d, 4, 4, dt=dt, seed=5), _x(d, 4, dt=dt, seed=6)]
    return F.multi_head_attention_forward(
        q, k, v, 4, 2, *weights, *bias_kv, zero_attn, dropout, *out, **kwargs
    )


def _ctc(d, dt, targets, input_lengths, target_lengths, **kwargs):
    log_probs = _x(d, 5, 2, 4, dt=dt).log_softmax(2)
    return F.ctc_loss(log_probs, targets, input_lengths, target_lengths, **kwargs)


_SEQUENCES = {
    "multi_head_attention_forward": (lambda d, dt: _attention(d, dt, training=False), CLOSE),
    "multi_head_attention_forward_masks_and_bias_kv": (
        lambda d, dt: _attention(
            d,
            dt,
            bias_kv=(_x(d, 1, 1, 4, dt=dt, seed=7), _x(d, 1, 1, 4, dt=dt, seed=8)),
            zero_attn=True,
            training=False,
            key_padding_mask=_i(d, [[False, True, False], [False, False, False]], kael.bool),
            attn_mask=_i(d, [[False, True, False]] * 3, kael.bool),
            average_attn_weights=False,
        ),
        CLOSE,
    ),
    "ctc_loss": (
        lambda d, dt: _ctc(d, dt, _i(d, [[1, 2], [3, 3]]), _i(d, [5, 4]), _i(d, [2, 2])),
        CLOSE,
    ),
    "ctc_loss_concatenated_targets_no_reduction": (
        lambda d, dt: _ctc(d, dt, _i(d, [1, 2, 3]), [5, 4], [2, 1], reduction="none"),
        CLOSE,
    ),
    "ctc_loss_an_empty_target_and_zero_infinity": (
        lambda d, dt: _ctc(d, dt, _i(d, [[3, 3], [1, 1]]), [2, 5], [2, 0], zero_infinity=True),
        CLOSE,
    ),
    "torch.ctc_loss": (
        lambda d, dt: kael.ctc_loss(
            _x(d, 5, 2, 4, dt=dt).log_softmax(2), _i(d, [[1, 2], [3, 1]]), [5, 3], [2, 1]
        ),
        CLOSE,
    ),
    "fractional_max_pool2d": (
        lambda d, dt: F.fractional_max_pool2d(
            _x(d, 1, 2, 5, 5, dt=dt)[..., 1:],
            2,
            output_size=(2, 3),
            return_indices=True,
            _random_samples=kael.rand(1, 2, 2, dtype=dt).to(d),
        ),
        BITS,
    ),
    "fractional_max_pool3d": (
        lambda d, dt: F.fractional_max_pool3d(
            _x(d, 2, 4, 4, 4, dt=dt),
            (2, 2, 1),
            output_ratio=0.5,
            return_indices=True,
            _random_samples=kael.rand(1, 2, 3, dtype=dt).to(d),
        ),
        BITS,
    ),
}


def _cell_weights(d, dt, gates: int, bias: bool = True, inputs: int = 3) -> list:
    """w_ih [gates * 4, inputs], w_hh [gates * 4, 4] and the two biases of a hidden size 4."""
    weights = [_x(d, 4 * gates, inputs, dt=dt, seed=2), _x(d, 4 * gates, 4, dt=dt, seed=3)]
    return weights + ([_x(d, 4 * gates, dt=dt, seed=s) for s in (4, 5)] if bias else [])


def _layer(d, dt, fn, gates: int, hx, layers: int = 1, bidirectional: bool = False, **flags):
    """One of torch's recurrent functions over a [3, 2, 3] sequence (batch 2, hidden 4)."""
    directions = 1 + bidirectional
    params = [
        w
        for layer in range(layers)
        for w in _cell_weights(d, dt, gates, inputs=3 if layer == 0 else 4 * directions)
        * directions
    ]
    batch_first = flags.get("batch_first", False)
    x = _x(d, 2, 3, 3, dt=dt) if batch_first else _x(d, 3, 2, 3, dt=dt)
    return fn(x, hx, params, True, layers, 0.0, False, bidirectional, batch_first)


def _h(d, dt, layers: int = 1, seed: int = 1) -> kael.Tensor:
    return _x(d, layers, 2, 4, dt=dt, seed=seed)


_RECURRENT = {
    "rnn_tanh_cell": (
        lambda d, dt: kael.rnn_tanh_cell(
            _x(d, 2, 3, dt=dt), _x(d, 2, 4, dt=dt), *_cell_weights(d, dt, 1)
        ),
        CLOSE,
    ),
    "rnn_relu_cell_without_bias": (
        lambda d, dt: kael.rnn_relu_cell(
            _x(d, 2, 3, dt=dt), _x(d, 2, 4, dt=dt), *_cell_weights(d, dt, 1, False)
        ),
        CLOSE,
    ),
    "lstm_cell": (
        lambda d, dt: kael.lstm_cell(
            _x(d, 2, 3, dt=dt),
            (_x(d, 2, 4, dt=dt), _x(d, 2, 4, dt=dt, seed=9)),
            *_cell_weights(d, dt, 4),
        ),
        CLOSE,
    ),
    "gru_cell": (
        lambda d, dt: kael.gru_cell(
            _x(d, 2, 3, dt=dt), _x(d, 2, 4, dt=dt), *_cell_weights(d, dt, 3)
        ),
        CLOSE,
    ),
    "rnn_tanh": (lambda d, dt: _layer(d, dt, kael.rnn_tanh, 1, _h(d, dt)), CLOSE),
    "rnn_relu_bidirectional": (
        lambda d, dt: _layer(d, dt, kael.rnn_relu, 1, _h(d, dt, 2), bidirectional=True),
        CLOSE,
    ),
    "lstm_batch_first": (
        lambda d, dt: _layer(d, dt, kael.lstm, 4, (_h(d, dt), _h(d, dt, seed=9)), batch_first=True),
        CLOSE,
    ),
    "gru_two_layers": (lambda d, dt: _layer(d, dt, kael.gru, 3, _h(d, dt, 2), layers=2), CLOSE),
}


def _in_place(name: str, *args):
    """kael.NAME_ on a transposed view of a [3, 4] tensor: the view and its base after it."""

    def case(d, dt):
        base = _x(d, 3, 4, dt=dt)
        view = base.mT
        return getattr(kael, name)(view, *[a(d, dt) if callable(a) else a for a in args]), base

    return case


def _norm_inputs(d, dt):
    return [_x(d, 2, 3, 2, dt=dt), _x(d, 3, dt=dt, seed=1), _x(d, 3, dt=dt, seed=2)]


def _running(d, dt):
    return [_x(d, 3, dt=dt, seed=3), _x(d, 3, dt=dt, seed=4).abs()]


# stride, padding, dilation, transposed, output_padding, groups
_CONV = ([1], [1], [1], False, [0], 1)
_CONV_TRANSPOSED = ([2], [0], [1], True, [1], 1)

_TORCH_LEVEL = {
    "abs_": (_in_place("abs_"), BITS),
    "clamp_": (_in_place("clamp_", -0.5, 0.5), BITS),
    "zero_": (_in_place("zero_"), BITS),
    "fill_": (_in_place("fill_", 2.5), BITS),
    "neg_": (_in_place("neg_"), BITS),
    "sqrt_": (_in_place("sqrt_"), BITS),
    "tanh_": (_in_place("tanh_"), CLOSE),
    "xlogy_": (_in_place("xlogy_", lambda d, dt: _x(d, 4, 3, dt=dt, seed=1).abs()), CLOSE),
    "ldexp_": (_in_place("ldexp_", lambda d, dt: _i(d, [1, -2, 3])), BITS),
    "gcd_": (
        lambda d, dt: kael.gcd_(_i(d, [[4, 6, 9], [0, 7, 12]]).mT, _i(d, [6, 4])),
        BITS,
    ),
    "nan_to_num_": (
        lambda d, dt: kael.nan_to_num_(kael.tensor([math.nan, math.inf, -1.0], dtype=dt).to(d)),
        BITS,
    ),
    "fill": (lambda d, dt: kael.fill(_x(d, 2, 3, dt=dt).mT, _x(d, dt=dt, seed=1)), BITS),
    "adjoint": (lambda d, dt: kael.adjoint(_x(d, 2, 3, dt=dt)), BITS),
    "dropout_not_training": (lambda d, dt: kael.dropout(_x(d, 3, dt=dt), 0.5, False), BITS),
    "dropout__p1": (lambda d, dt: kael.dropout_(_x(d, 2, 3, dt=dt), 1.0, True), BITS),
    "feature_dropout_p1": (lambda d, dt: kael.feature_dropout(_x(d, 2, 3, dt=dt), 1.0, True), BITS),
    "feature_alpha_dropout_p1": (
        lambda d, dt: kael.feature_alpha_dropout(_x(d, 2, 3, dt=dt), 1.0, True),
        BITS,
    ),
    "native_dropout_not_training": (
        lambda d, dt: kael.native_dropout(_x(d, 2, 3, dt=dt), 0.5, False),
        BITS,
    ),
    "native_dropout_p0": (lambda d, dt: kael.native_dropout(_x(d, 2, 3, dt=dt), 0.0, True), BITS),
    "rrelu_not_training": (lambda d, dt: kael.rrelu_(_x(d, 2, 3, dt=dt)), BITS),
    "batch_norm": (
        lambda d, dt: kael.batch_norm(
            *_norm_inputs(d, dt), *_running(d, dt), True, 0.1, 1e-5, False
        ),
        CLOSE,
    ),
    "instance_norm": (
        lambda d, dt: kael.instance_norm(*_norm_inputs(d, dt), None, None, True, 0.1, 1e-5, False),
        CLOSE,
    ),
    "group_norm": (
        lambda d, dt: kael.group_norm(_x(d, 2, 4, 3, dt=dt), 2, _x(d, 4, dt=dt), None),
        CLOSE,
    ),
    "native_layer_norm": (
        lambda d, dt: kael.native_layer_norm(
            _x(d, 2, 4, 3, dt=dt).mT, (4,), _x(d, 4, dt=dt), _x(d, 4, dt=dt, seed=2), 1e-5
        ),
        CLOSE,
    ),
    "native_batch_norm_training": (
        lambda d, dt: kael.native_batch_norm(
            *_norm_inputs(d, dt), *_running(d, dt), True, 0.1, 1e-5
        ),
        CLOSE,
    ),
    "native_batch_norm_eval": (
        lambda d, dt: kael.native_batch_norm(
            *_norm_inputs(d, dt), *_running(d, dt), False, 0.1, 1e-5
        ),
        CLOSE,
    ),
    "native_batch_norm_no_affine_no_stats": (
        lambda d, dt: kael.native_batch_norm(
            _x(d, 2, 3, dt=dt), None, None, None, None, True, 0.1, 1e-5
        ),
        CLOSE,
    ),
    "native_group_norm": (
        lambda d, dt: kael.native_group_norm(
            _x(d, 2, 4, 3, dt=dt), _x(d, 4, dt=dt), None, 2, 4, 3, 2, 1e-5
        ),
        CLOSE,
    ),
    "convolution": (
        lambda d, dt: kael.convolution(
            _x(d, 1, 2, 5, dt=dt), _x(d, 3, 2, 2, dt=dt, seed=1), _x(d, 3, dt=dt), *_CONV
        ),
        CLOSE,
    ),
    "convolution_transposed": (
        lambda d, dt: kael.convolution(
            _x(d, 1, 2, 5, dt=dt), _x(d, 2, 3, 2, dt=dt, seed=1), None, *_CONV_TRANSPOSED
        ),
        CLOSE,
    ),
    "conv_tbc": (
        lambda d, dt: kael.conv_tbc(
            _x(d, 5, 1, 2, dt=dt), _x(d, 2, 2, 3, dt=dt, seed=1), _x(d, 3, dt=dt), 1
        ),
        CLOSE,
    ),
    "max_pool1d_with_indices": (
        lambda d, dt: kael.max_pool1d_with_indices(_x(d, 1, 2, 5, dt=dt), 2),
        BITS,
    ),
    "range": (lambda d, dt: kael.range(0, 5, 1.5, dtype=dt, device=d), BITS),
    "range_of_int64": (lambda d, dt: kael.range(-2, 3, dtype=kael.int64, device=d), BITS),
    "segment_reduce_sum_with_an_empty_segment": (
        lambda d, dt: kael.segment_reduce(_x(d, 5, 2, dt=dt), "sum", lengths=_i(d, [2, 0, 3])),
        CLOSE,
    ),
    "segment_reduce_mean_offsets_initial": (
        lambda d, dt: kael.segment_reduce(
            _x(d, 5, 2, dt=dt), "mean", offsets=_i(d, [0, 2, 2, 5]), initial=0.0
        ),
        CLOSE,
    ),
    "segment_reduce_max": (
        lambda d, dt: kael.segment_reduce(_x(d, 5, 2, dt=dt), "max", lengths=_i(d, [2, 0, 3])),
        BITS,
    ),
    "segment_reduce_prod_over_dim_1_of_a_transposed_tensor": (
        lambda d, dt: kael.segment_reduce(
            _x(d, 5, 2, dt=dt).mT, "prod", lengths=_i(d, [[2, 3], [1, 4]]), axis=1
        ),
        CLOSE,
    ),
    "angle": (lambda d, dt: kael.angle(_x(d, 2, 4, dt=dt)[:, ::2]), BITS),
    "angle_of_ints": (lambda d, dt: kael.angle(_i(d, [-1, 0, 2])), BITS),
    "resize_as_": (lambda d, dt: kael.resize_as_(_x(d, 6, dt=dt), _x(d, 2, 2, dt=dt)), BITS),
    "as_strided_": (lambda d, dt: kael.as_strided_(_x(d, 6, dt=dt), (2, 2), (1, 2)), BITS),
    "addmv_": (
        lambda d, dt: kael.addmv_(_x(d, 3, dt=dt), _x(d, 3, 4, dt=dt), _x(d, 4, dt=dt, seed=1)),
        CLOSE,
    ),
    "unsafe_split_with_sizes": (
        lambda d, dt: kael.unsafe_split_with_sizes(_x(d, 6, dt=dt), [1, 5]),
        BITS,
    ),
}


def _gamma_pair(d, dt):
    return _x(d, 2, 3, dt=dt).abs() + 0.5, _x(d, 3, dt=dt, seed=1).abs()


_BYTES = bytearray(np.arange(4.0).tobytes())

_OTHERS = {
    "asarray_of_a_list": (lambda d, dt: kael.asarray([1.5, -2.0], dtype=dt, device=d), BITS),
    "asarray_of_a_host_tensor": (lambda d, dt: kael.asarray(_x("cpu", 3, dt=dt), device=d), BITS),
    "asarray_of_an_array": (lambda d, dt: kael.asarray(np.arange(3.0), dtype=dt, device=d), BITS),
    "asarray_keeps_the_device": (lambda d, dt: kael.asarray(_x(d, 3, dt=dt)), BITS),
    "frombuffer_moved": (lambda d, dt: kael.frombuffer(_BYTES, dtype=dt).to(d), BITS),
    "igamma": (lambda d, dt: kael.igamma(*_gamma_pair(d, dt)), CLOSE),
    "igammac": (lambda d, dt: kael.igammac(*_gamma_pair(d, dt)), CLOSE),
    "special.gammainc": (lambda d, dt: kael.special.gammainc(*_gamma_pair(d, dt)), CLOSE),
    "special.gammaincc": (lambda d, dt: kael.special.gammaincc(*_gamma_pair(d, dt)), CLOSE),
    "Tensor.igamma_": (lambda d, dt: (lambda a, x: a.igamma_(x))(*_gamma_pair(d, dt)), CLOSE),
    "histogramdd": (lambda d, dt: kael.histogramdd(_x(d, 6, 2, dt=dt), bins=[2, 3]), BITS),
    "histogramdd_weighted_density_in_a_range": (
        lambda d, dt: kael.histogramdd(
            _x(d, 2, 6, dt=dt).mT,
            bins=3,
            range=[-1.0, 1.0, -1.0, 1.0],
            weight=_x(d, 6, dt=dt, seed=1).abs(),
            density=True,
        ),
        CLOSE,
    ),
    "histogramdd_of_edges": (
        lambda d, dt: kael.histogramdd(
            _x(d, 6, 2, dt=dt),
            bins=[
                kael.tensor([-1.0, 0.0, 1.0], dtype=dt).to(d),
                kael.tensor([-2.0, 2.0], dtype=dt).to(d),
            ],
        ),
        BITS,
    ),
    "histogramdd_of_no_points": (lambda d, dt: kael.histogramdd(_x(d, 0, 2, dt=dt), bins=2), BITS),
    "nonzero_static_padded": (
        lambda d, dt: kael.nonzero_static(_x(d, 3, 2, dt=dt).mT.relu(), size=6),
        BITS,
    ),
    "nonzero_static_truncated": (
        lambda d, dt: kael.nonzero_static(_i(d, [1, 1, 0, 1]), size=2, fill_value=7),
        BITS,
    ),
    "nonzero_static_of_an_empty_tensor": (
        lambda d, dt: kael.nonzero_static(_x(d, 0, 3, dt=dt), size=2),
        BITS,
    ),
    "Tensor.resize_shrinks": (lambda d, dt: _x(d, 6, dt=dt).resize_(2, 2), BITS),
    "Tensor.resize_as_": (lambda d, dt: _x(d, 2, 3, dt=dt).mT.resize_as_(_x(d, 3, dt=dt)), BITS),
    "Tensor.set_": (lambda d, dt: _x(d, 2, dt=dt).set_(_x(d, 4, dt=dt, seed=1)), BITS),
    "Tensor.set_a_strided_view": (
        lambda d, dt: kael.empty(0, dtype=dt, device=d).set_(_x(d, 6, dt=dt), 1, (2,), (2,)),
        BITS,
    ),
    "Tensor.set_to_nothing": (lambda d, dt: _x(d, 2, dt=dt).set_(), BITS),
    "Tensor.new_of_data": (lambda d, dt: _x(d, 2, dt=dt).new([1.0, 2.5]), BITS),
    "Tensor.new_of_nothing": (lambda d, dt: _x(d, 2, dt=dt).new(), BITS),
}

CASES = {**_LINALG, **_GRID, **_BAGS, **_SEQUENCES, **_RECURRENT, **_TORCH_LEVEL, **_OTHERS}


def _agrees_on_both(name: str, dtype) -> None:
    case, tol = CASES[name]
    got, want = _on_both(case, dtype)
    _agrees(got, want, TOL[dtype] if tol is CLOSE else tol)


@pytest.mark.parametrize("name", list(CASES))
def test_each_name_on_the_device_gives_the_cpus_result(name):
    _agrees_on_both(name, kael.float32)


# float64 for the host-run linalg and one or two names of each other family (the emulator is
# slow to build each dtype's kernels)
DOUBLE_CASES = [
    *_LINALG, "affine_grid_3d", "grid_sample_bicubic_reflection", "embedding_bag_max",
    "embedding_bag_max_norm", "multi_head_attention_forward_masks_and_bias_kv",
    "ctc_loss_an_empty_target_and_zero_infinity", "fractional_max_pool3d", "gru_two_layers",
    "lstm_batch_first", "xlogy_", "native_batch_norm_training", "native_group_norm",
    "convolution_transposed", "segment_reduce_mean_offsets_initial", "range", "special.gammaincc",
    "histogramdd_weighted_density_in_a_range", "nonzero_static_padded", "Tensor.set_",
]  # fmt: skip


@pytest.mark.parametrize("name", DOUBLE_CASES)
def test_float64_on_the_device_gives_the_cpus_result(name):
    _agrees_on_both(name, kael.float64)


# the names above that take the half types, one or two of each family
HALF_CASES = [
    "affine_grid", "grid_sample_bilinear", "embedding_bag_weighted_sum_padding",
    "embedding_max_norm", "torch.embedding", "multi_head_attention_forward",
    "fractional_max_pool2d", "lstm_cell", "abs_", "clamp_", "native_layer_norm", "convolution",
    "range", "segment_reduce_max", "angle", "asarray_of_a_list", "igamma",
    "nonzero_static_padded", "Tensor.set_a_strided_view",
]  # fmt: skip


@pytest.mark.parametrize("dtype", HALF, ids=str)
@pytest.mark.parametrize("name", HALF_CASES)
def test_the_half_types_on_the_device_give_the_cpus_result(name, dtype):
    _agrees_on_both(name, dtype)


# ---- the random names: Philox makes the device's draws the CPU's for one seed ----------------


def _gru_dropout(d, dt):
    params = [w for inputs in (3, 4) for w in _cell_weights(d, dt, 3, inputs=inputs)]
    return kael.gru(_x(d, 3, 2, 3, dt=dt), _h(d, dt, 2), params, True, 2, 0.5, True, False, False)


RANDOM = {
    "bernoulli_": lambda d, dt: kael.empty(40, dtype=dt, device=d).bernoulli_(0.3),
    "bernoulli__of_a_tensor_p": lambda d, dt: kael.empty(2, 5, dtype=dt, device=d).mT.bernoulli_(
        kael.rand(5, 2, dtype=dt).to(d)
    ),
    "cauchy_": lambda d, dt: kael.empty(40, dtype=dt, device=d).cauchy_(1.0, 2.0),
    "geometric_": lambda d, dt: kael.empty(40, dtype=dt, device=d).geometric_(0.3),
    "log_normal_": lambda d, dt: kael.empty(40, dtype=dt, device=d).log_normal_(0.5, 0.5),
    "binomial": lambda d, dt: kael.binomial(
        kael.full((40,), 10.0, dtype=dt, device=d), kael.full((40,), 0.3, dtype=dt, device=d)
    ),
    "bernoulli": lambda d, dt: kael.bernoulli(kael.rand(6, dtype=dt).to(d)),
    "dropout": lambda d, dt: kael.dropout(_x(d, 20, dt=dt), 0.5, True),
    "alpha_dropout_": lambda d, dt: kael.alpha_dropout_(_x(d, 20, dt=dt), 0.5, True),
    "feature_dropout": lambda d, dt: kael.feature_dropout(_x(d, 4, 5, dt=dt), 0.5, True),
    "feature_alpha_dropout_": lambda d, dt: kael.feature_alpha_dropout_(
        _x(d, 4, 5, dt=dt), 0.5, True
    ),
    "native_dropout": lambda d, dt: kael.native_dropout(_x(d, 20, dt=dt), 0.5, True),
    "rrelu_training": lambda d, dt: kael.rrelu(_x(d, 20, dt=dt), training=True),
    "fractional_max_pool2d_drawing_its_samples": lambda d, dt: F.fractional_max_pool2d(
        _x(d, 2, 5, 5, dt=dt), 2, output_ratio=0.5, return_indices=True
    ),
    "gru_dropout_between_layers": _gru_dropout,
    "multi_head_attention_forward_dropout": lambda d, dt: _attention(
        d, dt, dropout=0.5, training=True
    ),
}

# these compose the draws with matmuls and math functions, which the device rounds its own way
_ROUNDED_DRAWS = {"gru_dropout_between_layers", "multi_head_attention_forward_dropout"}


# torch's binomial takes no half type
_DRAWS = [(name, dt) for dt in (*FLOATS, kael.float16) for name in RANDOM]
_DRAWS.remove(("binomial", kael.float16))


@pytest.mark.parametrize(("name", "dtype"), _DRAWS, ids=str)
def test_each_random_name_on_the_device_draws_the_cpus_values_from_one_seed(name, dtype):
    got, want = _on_both(RANDOM[name], dtype, seed=7)
    _agrees(got, want, TOL[dtype] if name in _ROUNDED_DRAWS else BITS)


# ---- what the device refuses -----------------------------------------------------------------


def _c(*shape, seed: int = 0) -> kael.Tensor:
    return _x(DEVICE, *shape, seed=seed)


def _host(*shape, seed: int = 0) -> kael.Tensor:
    return _x("cpu", *shape, seed=seed)


def _host_lu():
    return kael.lu(_spd("cpu", kael.float32))


def _host_qr():
    return kael.geqrf(_host(3, 3))


# has_biases, num_layers, dropout, train, bidirectional, batch_first
_ONE_PLAIN_LAYER = (False, 1, 0.0, False, False, False)

# name -> a call with one operand on the host and the others on the device
MIXED = {
    "lu_solve_b_on_the_host": lambda: kael.lu_solve(_host(3, 2), *(t.cuda() for t in _host_lu())),
    "lu_solve_LU_on_the_host": lambda: kael.lu_solve(_c(3, 2), _host_lu()[0], _host_lu()[1].cuda()),
    "lu_unpack": lambda: kael.lu_unpack(_host_lu()[0].cuda(), _host_lu()[1]),
    "ormqr": lambda: kael.ormqr(_host_qr()[0].cuda(), _host_qr()[1], _c(3, 2)),
    "triangular_solve": lambda: kael.triangular_solve(_host(3, 2), _c(3, 3)),
    "linalg.tensorsolve": lambda: kael.linalg.tensorsolve(_c(3, 3), _host(3)),
    "linalg.matmul": lambda: kael.linalg.matmul(_host(3, 3), _c(3, 3)),
    "grid_sample": lambda: F.grid_sample(_c(1, 1, 3, 3), _host(1, 2, 2, 2), align_corners=False),
    "embedding_bag_offsets": lambda: F.embedding_bag(_i(DEVICE, [0, 1]), _c(3, 2), _i("cpu", [0])),
    "embedding_max_norm": lambda: F.embedding(_i("cpu", [0, 1]), _c(3, 2), max_norm=1.0),
    "ctc_loss_targets": lambda: F.ctc_loss(
        _c(5, 2, 4).log_softmax(2), _i("cpu", [[1, 2], [3, 3]]), [5, 4], [2, 2]
    ),
    "fractional_max_pool2d_samples": lambda: F.fractional_max_pool2d(
        _c(1, 2, 4, 4), 2, output_size=2, _random_samples=kael.rand(1, 2, 2)
    ),
    "rnn_tanh_cell_hx": lambda: kael.rnn_tanh_cell(_c(2, 3), _host(2, 4), _c(4, 3), _c(4, 4)),
    "lstm_params": lambda: kael.lstm(
        _c(3, 2, 3), (_c(1, 2, 4), _c(1, 2, 4)), [_c(16, 3), _host(16, 4)], *_ONE_PLAIN_LAYER
    ),
    "native_batch_norm_weight": lambda: kael.native_batch_norm(
        _c(2, 3, 2), _host(3), None, None, None, True, 0.1, 1e-5
    ),
    "convolution_weight": lambda: kael.convolution(
        _c(1, 2, 5), _host(3, 2, 2), None, [1], [0], [1], False, [0], 1
    ),
    "segment_reduce_lengths": lambda: kael.segment_reduce(
        _c(5, 2), "sum", lengths=_i("cpu", [2, 3])
    ),
    "igamma": lambda: kael.igamma(_c(3).abs(), _host(3).abs()),
    "histogramdd_weight": lambda: kael.histogramdd(_c(6, 2), bins=2, weight=_host(6).abs()),
    "binomial": lambda: kael.binomial(_c(3).abs(), _host(3).sigmoid()),
}


@pytest.mark.parametrize("name", list(MIXED))
def test_operands_on_two_devices_raise_naming_both(name):
    with pytest.raises(Error, match=r"(cuda:0 and cpu|cpu and cuda:0)"):
        MIXED[name]()


@pytest.mark.parametrize("method", ["apply_", "map_", "map2_"])
def test_python_callables_over_device_elements_are_refused_as_torch(method):
    x = _c(3)
    others = {"apply_": (), "map_": (x,), "map2_": (x, x)}[method]
    with pytest.raises(TypeError, match=f"{method} is only implemented on CPU tensors"):
        getattr(x, method)(*others, lambda *values: values[0])


@pytest.mark.parametrize("dtype", [kael.float32, kael.float16, kael.int64], ids=str)
def test_resize_grows_a_device_tensor_keeping_its_elements_and_its_device(dtype):
    x = _c(2, 3).mul(10).to(dtype)
    want = x.cpu().reshape(-1)
    grown = x.resize_(3, 4)
    assert grown is x and str(x.device) == "cuda:0" and x.shape == (3, 4) and x.dtype == dtype
    np.testing.assert_array_equal(_numbers(x.reshape(-1)[:6]), _numbers(want))


def test_new_of_a_host_tensor_on_a_device_tensor_is_refused_as_torch():
    with pytest.raises(
        TypeError, match=r"expected a float32 tensor on cuda:0 \(got a float32 tensor on cpu\)"
    ):
        _c(2).new(_host(3))


def test_new_of_a_device_tensor_on_a_host_tensor_is_refused_as_torch():
    with pytest.raises(
        TypeError, match=r"expected a float32 tensor on cpu \(got a float32 tensor on cuda:0\)"
    ):
        _host(2).new(_c(3))


def test_new_of_a_device_tensor_on_a_device_tensor_is_that_tensor():
    x = _c(3)
    got = _c(2).new(x)
    assert str(got.device) == "cuda:0" and got.data_ptr() == x.data_ptr()


def _several_names(A, weight, index, offsets, x, image):
    LU, pivots = kael.lu(A)
    grid = image[..., :2].permute(0, 2, 3, 1)[:, :2, :2]
    return (
        kael.lu_solve(A[:, :1], LU, pivots),
        F.embedding_bag(index, weight, offsets),
        kael.linalg.vander(x),
        F.grid_sample(image, grid, align_corners=False),
        kael.nonzero_static(x > 0, size=4),
    )


def test_the_names_inside_a_compiled_function_on_the_device_give_the_cpus_results():
    args = [_spd("cpu", kael.float32), _host(5, 2), _i("cpu", [0, 1, 4]), _i("cpu", [0, 1])]
    args += [_host(4, seed=1), _host(1, 2, 3, 3, seed=2)]
    got = kael.compile(_several_names)(*(a.to(DEVICE) for a in args))
    _agrees(got, _several_names(*args), TOL[kael.float32])
