"""Channel dropout, alpha dropout and rrelu (frontend/noise.py): eval identities and
PyTorch's values where they are deterministic; where they draw, the law of what they draw
(whole channels, the scale, SELU's moments, slopes within bounds); typed errors."""

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import kael
import kael.nn.functional as KF


@pytest.mark.parametrize(
    "dims, shape",
    [(1, (40, 30, 50)), (2, (40, 30, 5, 10)), (3, (40, 30, 2, 5, 5)), (2, (40, 30, 50))],
)
def test_channel_dropout_drops_whole_channels_and_scales_the_rest(dims, shape):
    x = kael.rand(*shape) + 1  # no zeros of its own
    y = getattr(KF, f"dropout{dims}d")(x, 0.25)
    assert y.shape == shape and y.dtype is kael.float32
    per_channel = y.numpy().reshape(40, 30, -1)
    dropped = (per_channel == 0).all(-1)
    kept = ~dropped
    assert ((per_channel == 0).any(-1) == dropped).all()  # a channel is dropped whole
    np.testing.assert_allclose(
        per_channel[kept], x.numpy().reshape(40, 30, -1)[kept] / 0.75, rtol=1e-6
    )
    assert 0.2 < dropped.mean() < 0.3


def test_channel_dropout_of_three_and_four_dim_inputs_draws_as_torch():
    """dropout2d of [N, C, L] draws per (N, C), as PyTorch's 1-d channel dropout does;
    dropout3d of [C, D, H, W] per channel."""
    y = KF.dropout2d(kael.ones(600, 4, 4), 0.5).numpy().reshape(600, 4, 4)
    assert ((y == 0).all(-1) | (y == 2).all(-1)).all()
    assert not ((y == 0).all((1, 2)) | (y == 2).all((1, 2))).all()
    z = KF.dropout3d(kael.ones(600, 2, 3, 3), 0.5).numpy().reshape(600, -1)
    assert ((z == 0).all(1) | (z == 2).all(1)).all()


@pytest.mark.parametrize(
    "name", ["dropout1d", "dropout2d", "dropout3d", "alpha_dropout", "feature_alpha_dropout"]
)
def test_no_dropout_is_the_input_itself(name):
    x = kael.randn(4, 3, 5, 5, 2) if name == "dropout3d" else kael.randn(4, 3, 5)
    fn = getattr(KF, name)
    assert fn(x, 0.3, training=False) is x
    assert fn(x, 0.0, training=True) is x
    assert not fn(x, 1.0, training=True).numpy().any()


def test_alpha_dropout_keeps_selu_moments_with_torch_affine_map():
    """Dropped values are one constant, kept ones a * x + b: PyTorch's a and b."""
    x = kael.randn(2_000_000)
    y = KF.alpha_dropout(x, 0.2, training=True).numpy()
    assert abs(y.mean()) < 5e-3 and abs(y.std() - 1) < 5e-3
    t = TF.alpha_dropout(torch.from_numpy(x.numpy()), 0.2, training=True).numpy()
    values, counts = np.unique(t, return_counts=True)
    dropped = values[counts.argmax()]  # torch's constant for dropped values
    assert np.isclose((y == dropped).mean(), 0.2, atol=3e-3)
    kept = y != dropped
    a = np.polyfit(x.numpy()[t != dropped][:1000], t[t != dropped][:1000], 1)  # torch's a, b
    np.testing.assert_allclose(y[kept], a[0] * x.numpy()[kept] + a[1], rtol=1e-5, atol=1e-5)


def test_feature_alpha_dropout_draws_per_channel():
    y = KF.feature_alpha_dropout(kael.ones(500, 4, 6), 0.5, training=True).numpy()
    assert (y == y[:, :, :1]).all()  # one draw a channel
    assert len(np.unique(y)) == 2


def test_rrelu_eval_is_torch_and_training_slopes_lie_within_bounds():
    x = kael.randn(100_000)
    tx = torch.from_numpy(x.numpy())
    np.testing.assert_allclose(KF.rrelu(x).numpy(), TF.rrelu(tx).numpy(), rtol=1e-6)
    np.testing.assert_allclose(
        KF.rrelu(x, 0.1, 0.3).numpy(), TF.rrelu(tx, 0.1, 0.3).numpy(), rtol=1e-6
    )
    y = KF.rrelu(x, 0.2, 0.4, training=True).numpy()
    negative = x.numpy() < 0
    slopes = y[negative] / x.numpy()[negative]
    assert slopes.min() >= 0.2 and slopes.max() <= 0.4 and slopes.std() > 0.05
    assert (y[~negative] == x.numpy()[~negative]).all()
    z = x.clone()
    assert KF.rrelu_(z) is z
    np.testing.assert_allclose(z.numpy(), TF.rrelu(tx).numpy(), rtol=1e-6)


@pytest.mark.parametrize(
    "call, error, message",
    [
        (lambda: KF.dropout2d(kael.randn(3, 4, 5, 6, 7)), kael.ValueError, "Expected 3D or 4D"),
        (lambda: KF.dropout1d(kael.randn(3)), kael.ValueError, "Expected 2D or 3D"),
        (lambda: KF.dropout2d(kael.randn(3, 4, 5), 1.5), kael.ValueError, "between 0 and 1"),
        (
            lambda: KF.alpha_dropout(kael.ones(3, dtype=kael.int64), 0.5, True),
            kael.TypeError,
            "floating",
        ),
        (lambda: KF.rrelu(kael.randn(3), 0.5, 0.1), kael.ValueError, "Lower bound"),
        (lambda: KF.rrelu(kael.ones(3, dtype=kael.int64)), kael.TypeError, "floating"),
    ],
)
def test_bad_inputs_raise_typed_errors(call, error, message):
    with pytest.raises(error, match=message):
        call()
