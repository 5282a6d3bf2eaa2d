"""LogisticNormal against torch.distributions.LogisticNormal (torch gives it no moments:
samples are checked through the Normal their stick-breaking logits follow; scores and shapes:
the generic checks of test_families)."""

import numpy as np
from distribution_helpers import check_negated_parameter_refused, pair

import kael
import kael.distributions as D

rng = np.random.default_rng(57)
ARGS = {"loc": rng.normal(size=3), "scale": rng.uniform(0.5, 2, (2, 3))}
SIMPLEX = np.array([[0.1, 0.2, 0.3, 0.4], [0.25, 0.25, 0.4, 0.1]])


def test_a_scalar_base_becomes_one_logit_over_two_categories():
    kd, td = pair("LogisticNormal", {"loc": 0.5, "scale": 1.5})
    assert (kd.batch_shape, kd.event_shape) == (tuple(td.batch_shape), tuple(td.event_shape))
    assert kd.loc.shape == (1,) and kd.scale.shape == (1,)


def test_samples_lie_on_the_simplex_with_normal_logits():
    kd, _ = pair("LogisticNormal", ARGS, "float64")
    kael.manual_seed(7)
    draws = kd.sample((100_000,))
    assert tuple(draws.shape) == (100_000, 2, 4) and draws.dtype == kael.float64
    assert bool(D.constraints.simplex.check(draws).all())
    logits = D.StickBreakingTransform().inv(draws).numpy()
    error = np.abs(logits.mean(0) - ARGS["loc"])
    np.testing.assert_array_less(error, 5 * ARGS["scale"] / np.sqrt(100_000))


def test_nonpositive_scale_raises_torchs_message_from_the_base_normal():
    check_negated_parameter_refused("LogisticNormal", ARGS, "scale")
