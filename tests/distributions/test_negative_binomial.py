"""NegativeBinomial against torch.distributions (samples from kael's gamma-Poisson mixture)."""

import re

import numpy as np
import pytest
import torch
from distribution_helpers import (
    DTYPES,
    check_moments,
    check_sample_shapes,
    check_scores,
    check_summaries,
    lib_args,
)

import kael
from kael.distributions.negative_binomial import NegativeBinomial

rng = np.random.default_rng(20)
COUNT = np.array([0.0, 1.0, 2.5, 7.0])  # total_count 0: all mass at 0
PROBS = rng.uniform(0.05, 0.9, (2, 1))
VALUES = np.array([[0.0, 1.0, 4.0, 11.0], [0.0, 2.0, 0.0, 5.0]])  # at total_count 0: 0 and -inf
ARGS = {
    "probs": {"total_count": COUNT, "probs": PROBS},
    "logits": {"total_count": COUNT, "logits": rng.normal(size=(2, 1))},
    "scalars": {"total_count": 3.0, "probs": np.array([0.0, 0.2, 0.5, 0.8])},  # 0: a point mass
}


def _pair(args: dict, dtype: str):
    kd = NegativeBinomial(**lib_args(kael, args, dtype))
    return kd, torch.distributions.NegativeBinomial(**lib_args(torch, args, dtype))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("form", ARGS)
def test_log_prob_and_moments_match_torch_over_broadcast_params(form, dtype):
    kd, td = _pair(ARGS[form], dtype)
    check_summaries(kd, td, dtype, ("mean", "mode", "variance", "stddev"))
    check_scores(kd, td, VALUES, dtype)
    check_sample_shapes(kd, td)
    expanded, texpanded = kd.expand((3, *kd.batch_shape)), td.expand((3, *td.batch_shape))
    check_summaries(expanded, texpanded, dtype, ("mean", "variance"))
    check_scores(expanded, texpanded, expanded.sample().numpy(), dtype)


def test_sample_moments_match_torch():
    kd, td = _pair({"total_count": COUNT[1:], "probs": PROBS}, "float64")
    check_moments(kd, td)


def test_samples_are_nonnegative_integers_in_the_params_dtype():
    kael.manual_seed(3)
    kd, _ = _pair(ARGS["probs"], "float32")
    draws = kd.sample((200,))
    assert draws.dtype == kael.float32
    assert bool(kd.support.check(draws).all())
    assert not bool((draws[:, :, 0] != 0).any())  # total_count 0 draws only 0


@pytest.mark.parametrize(
    "args, match",
    [
        ({"total_count": 2.0}, "Either `probs` or `logits` must be specified, but not both."),
        ({"total_count": 2.0, "probs": PROBS, "logits": PROBS}, "Either `probs` or `logits`"),
        ({"total_count": -0.5, "probs": PROBS}, "Expected parameter total_count"),
        ({"total_count": 2.0, "probs": np.array([0.5, 1.0])}, "Expected parameter probs"),
        ({"total_count": 2.0, "probs": np.array([-0.1])}, "HalfOpenInterval(lower_bound=0.0"),
    ],
)
def test_bad_parameters_are_refused_as_torch(args, match):
    kwargs = {k: kael.tensor(v) if isinstance(v, np.ndarray) else v for k, v in args.items()}
    with pytest.raises(kael.ValueError, match=re.escape(match)):
        NegativeBinomial(**kwargs)


@pytest.mark.parametrize("value, ok", [(0.0, True), (3.0, True), (-1.0, False), (1.5, False)])
def test_log_prob_refuses_values_off_the_nonnegative_integers(value, ok):
    d = NegativeBinomial(2.0, probs=kael.tensor([0.3]))
    if ok:
        assert np.isfinite(d.log_prob(kael.tensor([value])).numpy()).all()
    else:
        with pytest.raises(
            kael.ValueError, match=r"Expected value argument .* \(IntegerGreaterThan"
        ):
            d.log_prob(kael.tensor([value]))
