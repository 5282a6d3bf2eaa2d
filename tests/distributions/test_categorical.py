"""Categorical, OneHotCategorical and Multinomial against torch.distributions."""

import numpy as np
import pytest
from distribution_helpers import DTYPES, assert_matches, pair

import kael

PROBS = np.random.default_rng(6).uniform(0.1, 2.0, (2, 4))


@pytest.mark.parametrize("dtype", DTYPES)
def test_multinomial_entropy_matches_torch(dtype):
    # torch sums lgamma(n + 1) of an int64 n, in float32: its float64 result is that close
    kd, td = pair("Multinomial", {"total_count": 5, "probs": PROBS}, dtype)
    assert_matches(kd.entropy(), td.entropy(), dtype, rtol=1e-6)


def test_categorical_sample_frequencies_match_probs():
    kael.manual_seed(7)
    kd, _ = pair("Categorical", {"probs": PROBS})
    draws = kd.sample((4000,)).numpy()
    want = PROBS / PROBS.sum(-1, keepdims=True)
    freq = np.stack([(draws == k).mean(0) for k in range(4)], -1)
    np.testing.assert_array_less(np.abs(freq - want), 5 * np.sqrt(want * (1 - want) / 4000))


@pytest.mark.parametrize("name", ["Categorical", "OneHotCategorical"])
@pytest.mark.parametrize("expand", [True, False])
def test_enumerate_support_matches_torch(name, expand):
    kd, td = pair(name, {"probs": PROBS})
    got, want = kd.enumerate_support(expand), td.enumerate_support(expand)
    assert tuple(got.shape) == tuple(want.shape)
    np.testing.assert_array_equal(got.numpy(), want.numpy())


@pytest.mark.parametrize(
    "args, match",
    [
        ({}, "Either `probs` or `logits` must be specified, but not both."),
        ({"probs": PROBS, "logits": PROBS}, "Either `probs` or `logits`"),
        ({"probs": np.array(0.5)}, "`probs` parameter must be at least one-dimensional."),
        ({"logits": np.array(0.5)}, "`logits` parameter must be at least one-dimensional."),
    ],
)
def test_bad_parameters_are_refused_as_torch(args, match):
    kwargs = {k: kael.tensor(v) for k, v in args.items()}
    with pytest.raises(kael.ValueError, match=match):
        kael.distributions.Categorical(**kwargs)


def test_multinomial_refuses_tensor_total_count():
    with pytest.raises(NotImplementedError, match="inhomogeneous total_count"):
        kael.distributions.Multinomial(kael.tensor([2, 3]), probs=kael.tensor([0.5, 0.5]))
