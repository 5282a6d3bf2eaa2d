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


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
def test_trunc_normal_in_half_types_puts_nothing_on_the_bounds(dtype):
    """The old inverse-CDF draw rounded to erfinv(-1) = -inf in half types, clamped to a."""
    values = init.trunc_normal_(kael.empty(200_000, dtype=getattr(kael, dtype)), std=0.02)
    reference = torch.nn.init.trunc_normal_(
        torch.empty(200_000, dtype=getattr(torch, dtype)), std=0.02
    )
    ours, theirs = values.float().numpy(), reference.float().numpy()
    assert values.dtype is getattr(kael, dtype)
    assert int((np.abs(ours) >= 1).sum()) == int((np.abs(theirs) >= 1).sum()) == 0
    assert np.abs(ours).max() < 0.2 and np.abs(theirs).max() < 0.2  # ~5 sigma at most
    assert ours.std() == pytest.approx(theirs.std(), rel=0.03)


@pytest.mark.parametrize(
    ("mean", "std", "a", "b"),
    [(0.0, 1.0, -2.0, 2.0), (1.0, 2.0, 0.0, 1.5), (0.0, 1.0, 0.5, 0.7), (0.0, 1.0, 2.5, 4.0)],
)  # the last two: under 30% of the mass in [a, b], torch's uniform-proposal branch
def test_trunc_normal_matches_torch_moments_in_both_branches(mean, std, a, b):
    ours = init.trunc_normal_(kael.empty(100_000), mean, std, a, b).numpy()
    theirs = torch.nn.init.trunc_normal_(torch.empty(100_000).double(), mean, std, a, b).numpy()
    assert ours.min() >= a and ours.max() <= b
    assert ours.mean() == pytest.approx(theirs.mean(), abs=0.01 * (b - a))
    assert ours.std() == pytest.approx(theirs.std(), rel=0.03)


def test_trunc_normal_warns_as_torch_when_the_mean_is_far_from_the_window():
    with pytest.warns(UserWarning, match="mean is more than 2 std from \\[a, b\\]"):
        init.trunc_normal_(kael.empty(10), mean=10.0, std=1.0, a=-2.0, b=2.0)


@pytest.mark.parametrize("fill", ["kaiming_uniform_", "kaiming_normal_"])
@pytest.mark.parametrize("shape", [(0,), (0, 3), (3, 0), (2, 0, 3)])
def test_kaiming_leaves_a_zero_element_tensor_with_torch_warning(fill, shape):
    for lib in (torch, kael):
        tensor = lib.empty(*shape)
        with pytest.warns(UserWarning, match="Initializing zero-element tensors is a no-op"):
            assert getattr(lib.nn.init, fill)(tensor) is tensor


def test_kaiming_still_needs_two_dims_for_a_tensor_with_elements():
    with pytest.raises(kael.ValueError, match="fewer than 2 dimensions"):
        init.kaiming_uniform_(kael.empty(3))


ALIASES = ["uniform", "normal", "constant", "eye", "dirac", "xavier_uniform", "xavier_normal",
           "kaiming_uniform", "kaiming_normal", "orthogonal", "sparse"]  # fmt: skip
ALIAS_ARGS = {"constant": (0.5,), "sparse": (0.5,)}


@pytest.mark.parametrize("name", ALIASES)
def test_deprecated_aliases_warn_as_torch_and_fill_in_place(name):
    shape = (4, 2, 3) if name == "dirac" else (4, 6)
    messages = []
    for lib in (torch, kael):
        tensor = lib.empty(*shape)
        with pytest.warns(FutureWarning) as caught:
            assert getattr(lib.nn.init, name)(tensor, *ALIAS_ARGS.get(name, ())) is tensor
        messages.append([str(w.message) for w in caught if w.category is FutureWarning])
    assert (
        messages[1]
        == messages[0]
        == [f"`nn.init.{name}` is now deprecated in favor of `nn.init.{name}_`."]
    )
    assert getattr(init, name).__name__ == name


@pytest.mark.parametrize("mode", ["FAN_OUT", "Fan_In"])
def test_kaiming_reads_the_mode_in_any_case_as_torch(mode):
    fan = 3 if mode.lower() == "fan_out" else 4
    values = init.kaiming_uniform_(kael.empty(3, 4), mode=mode, nonlinearity="relu").numpy()
    assert np.abs(values).max() <= math.sqrt(6.0 / fan)
    torch.nn.init.kaiming_uniform_(torch.empty(3, 4), mode=mode)  # torch accepts it too


def test_kaiming_names_the_modes_as_torch():
    with pytest.raises(ValueError) as theirs:
        torch.nn.init.kaiming_normal_(torch.empty(3, 4), mode="Fan")
    with pytest.raises(kael.ValueError) as ours:
        init.kaiming_normal_(kael.empty(3, 4), mode="Fan")
    assert str(ours.value) == str(theirs.value)
