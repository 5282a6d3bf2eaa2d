"""OneHotCategoricalStraightThrough against torch.distributions: a reparameterizable
OneHotCategorical whose rsample (no autograd) is its sample."""

import numpy as np
import pytest
import torch
from distribution_helpers import (
    DTYPES,
    check_sample_shapes,
    check_scores,
    check_summaries,
    lib_args,
)

import kael
from kael.distributions.categorical import OneHotCategorical
from kael.distributions.one_hot_straight_through import OneHotCategoricalStraightThrough

PROBS = np.random.default_rng(23).uniform(0.1, 2.0, (2, 4))
VALUE = np.eye(4)[[[0], [3], [1]]]  # (3, 1, 4): over the batch of 2


def _pair(args: dict, dtype: str):
    kd = OneHotCategoricalStraightThrough(**lib_args(kael, args, dtype))
    return kd, torch.distributions.OneHotCategoricalStraightThrough(**lib_args(torch, args, dtype))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("form", ["probs", "logits"])
def test_scores_and_moments_match_torch(form, dtype):
    kd, td = _pair({form: PROBS}, dtype)
    assert isinstance(kd, OneHotCategorical) and kd.has_rsample
    check_summaries(kd, td, dtype, ("mean", "mode", "variance", "entropy"))
    check_scores(kd, td, VALUE, dtype)
    check_sample_shapes(kd, td)


def test_rsample_draws_as_sample_one_hot_vectors():
    kd, _ = _pair({"probs": PROBS}, "float32")
    kael.manual_seed(14)
    drawn = kd.rsample((5,))
    kael.manual_seed(14)
    np.testing.assert_array_equal(drawn.numpy(), kd.sample((5,)).numpy())
    assert drawn.dtype == kael.float32 and bool(kd.support.check(drawn).all())


def test_rsample_frequencies_match_probs():
    kael.manual_seed(15)
    kd, _ = _pair({"probs": PROBS}, "float64")
    freq = kd.rsample((4000,)).numpy().mean(0)
    want = PROBS / PROBS.sum(-1, keepdims=True)
    np.testing.assert_array_less(np.abs(freq - want), 5 * np.sqrt(want * (1 - want) / 4000))


def test_log_prob_refuses_a_value_that_is_not_one_hot():
    kd, _ = _pair({"probs": PROBS}, "float32")
    with pytest.raises(kael.ValueError, match=r"Expected value argument .*\(OneHot\(\)\)"):
        kd.log_prob(kael.tensor([[1.0, 1.0, 0.0, 0.0]]))
