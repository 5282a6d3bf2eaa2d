"""kael.nn.init: each initialiser fills in place with PyTorch's distribution and bounds."""

import math

import numpy as np
import pytest
import torch

import kael
from kael.nn import init


@pytest.mark.parametrize(
    ("name", "param"),
    [("linear", None), ("conv2d", None), ("sigmoid", None), ("tanh", None), ("relu", None),
     ("leaky_relu", None), ("leaky_relu", 0.2), ("selu", None)],
)  # fmt: skip
def test_calculate_gain_matches_torch(name, param):
    assert init.calculate_gain(name, param) == pytest.approx(
        torch.nn.init.calculate_gain(name, param)
    )


def test_calculate_gain_refuses_unknown_names_and_bad_slopes():
    with pytest.raises(kael.ValueError, match="Unsupported nonlinearity softmax"):
        init.calculate_gain("softmax")
    with pytest.raises(kael.ValueError, match="negative_slope"):
        init.calculate_gain("leaky_relu", "x")


def _filled(fill, *shape, **kwargs):
    t = kael.empty(*shape)
    assert fill(t, **kwargs) is t
    return t.numpy()


@pytest.mark.parametrize("mode", ["fan_in", "fan_out"])
def test_kaiming_and_xavier_follow_their_bounds_and_deviations(mode):
    fan_in, fan_out = 64 * 9, 32 * 9
    fan = fan_in if mode == "fan_in" else fan_out
    bound = math.sqrt(3.0) * math.sqrt(2.0) / math.sqrt(fan)
    values = _filled(init.kaiming_uniform_, 32, 64, 3, 3, mode=mode, nonlinearity="relu")
    assert np.abs(values).max() <= bound and np.abs(values).max() > 0.95 * bound
    values = _filled(init.kaiming_normal_, 32, 64, 3, 3, mode=mode, nonlinearity="relu")
    assert values.std() == pytest.approx(math.sqrt(2.0 / fan), rel=0.05)
    values = _filled(init.xavier_uniform_, 32, 64, 3, 3, gain=2.0)
    bound = 2.0 * math.sqrt(6.0 / (fan_in + fan_out))
    assert np.abs(values).max() <= bound and np.abs(values).max() > 0.95 * bound
    values = _filled(init.xavier_normal_, 32, 64, 3, 3)
    assert values.std() == pytest.approx(math.sqrt(2.0 / (fan_in + fan_out)), rel=0.05)


def test_fans_need_two_dims_and_a_known_mode():
    with pytest.raises(kael.ValueError, match="fewer than 2 dimensions"):
        init.xavier_uniform_(kael.empty(5))
    with pytest.raises(kael.ValueError, match="Mode fan_avg not supported"):
        init.kaiming_uniform_(kael.empty(5, 5), mode="fan_avg")


def test_trunc_normal_stays_inside_its_bounds_with_the_truncated_moments():
    values = _filled(init.trunc_normal_, 200_000, mean=1.0, std=2.0, a=0.0, b=3.0)
    assert values.min() >= 0.0 and values.max() <= 3.0
    expected = torch.empty(200_000).double()
    torch.nn.init.trunc_normal_(expected, 1.0, 2.0, 0.0, 3.0)
    assert values.mean() == pytest.approx(expected.mean().item(), abs=0.02)
    assert values.std() == pytest.approx(expected.std().item(), abs=0.02)


@pytest.mark.parametrize("shape", [(6, 4), (4, 6), (3, 2, 2)])
def test_orthogonal_gives_orthonormal_rows_or_columns(shape):
    values = _filled(init.orthogonal_, *shape, gain=1.5).reshape(shape[0], -1)
    gram = values @ values.T if values.shape[0] <= values.shape[1] else values.T @ values
    np.testing.assert_allclose(gram, 2.25 * np.eye(gram.shape[0]), atol=1e-5)


def test_constant_fills_and_identities():
    assert (_filled(init.constant_, 2, 3, val=2.5) == 2.5).all()
    assert (_filled(init.ones_, 2, 3) == 1).all() and (_filled(init.zeros_, 2, 3) == 0).all()
    np.testing.assert_array_equal(_filled(init.eye_, 2, 3), np.eye(2, 3))
    expected = torch.empty(4, 2, 3, 3)
    torch.nn.init.dirac_(expected, groups=2)
    np.testing.assert_array_equal(_filled(init.dirac_, 4, 2, 3, 3, groups=2), expected.numpy())
    with pytest.raises(kael.ValueError, match="2 dimensions"):
        init.eye_(kael.empty(2, 2, 2))


def test_generator_makes_a_fill_repeatable():
    a = init.uniform_(kael.empty(5), -1, 1, generator=kael.Generator().manual_seed(3))
    b = init.uniform_(kael.empty(5), -1, 1, generator=kael.Generator().manual_seed(3))
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert a.numpy().min() >= -1 and a.numpy().max() < 1


@pytest.mark.parametrize("sparsity", [0.0, 0.3, 0.5, 1.0])
def test_sparse_zeroes_the_same_share_of_each_column_as_torch(sparsity):
    k = init.sparse_(kael.empty(10, 40), sparsity, std=0.5)
    t = torch.nn.init.sparse_(torch.empty(10, 40), sparsity, std=0.5)
    assert (k == 0).sum(0).tolist() == (t == 0).sum(0).tolist()
    nonzero = k.numpy()[k.numpy() != 0]
    if nonzero.size > 100:
        assert abs(nonzero.std() - 0.5) < 0.1
    with pytest.raises(kael.ValueError, match="Only tensors with 2 dimensions are supported"):
        init.sparse_(kael.empty(3), sparsity)
