"""NegativeBinomial against torch.distributions (samples from kael's gamma-Poisson mixture;
scores, summaries and sample moments: the generic checks of test_families)."""

import re

import numpy as np
import pytest
from distribution_helpers import pair

import kael
from kael.distributions.negative_binomial import NegativeBinomial

rng = np.random.default_rng(20)
COUNT = np.array([0.0, 1.0, 2.5, 7.0])  # total_count 0: all mass at 0
PROBS = rng.uniform(0.05, 0.9, (2, 1))
ARGS = {"total_count": COUNT, "probs": PROBS}


def test_samples_are_nonnegative_integers_in_the_params_dtype():
    kael.manual_seed(3)
    kd, _ = pair("NegativeBinomial", ARGS, "float32")
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
