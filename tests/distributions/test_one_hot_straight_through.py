"""OneHotCategoricalStraightThrough against torch.distributions: a reparameterizable
OneHotCategorical whose rsample (no autograd) is its sample (summaries, scores and sample
moments: the generic checks of test_families)."""

import numpy as np
import pytest
from distribution_helpers import pair

import kael
from kael.distributions.categorical import OneHotCategorical

PROBS = np.random.default_rng(23).uniform(0.1, 2.0, (2, 4))


def test_rsample_draws_as_sample_one_hot_vectors():
    kd, _ = pair("OneHotCategoricalStraightThrough", {"probs": PROBS}, "float32")
    kael.manual_seed(14)
    drawn = kd.rsample((5,))
    kael.manual_seed(14)
    np.testing.assert_array_equal(drawn.numpy(), kd.sample((5,)).numpy())
    assert drawn.dtype == kael.float32 and bool(kd.support.check(drawn).all())
    assert isinstance(kd, OneHotCategorical) and kd.has_rsample


def test_log_prob_refuses_a_value_that_is_not_one_hot():
    kd, _ = pair("OneHotCategoricalStraightThrough", {"probs": PROBS}, "float32")
    with pytest.raises(kael.ValueError, match=r"Expected value argument .*\(OneHot\(\)\)"):
        kd.log_prob(kael.tensor([[1.0, 1.0, 0.0, 0.0]]))
