"""broadcast_all, probs_to_logits, logits_to_probs, clamp_probs and lazy_property against
torch.distributions.utils."""

import numpy as np
import pytest
import torch
from torch.distributions import utils as tu

import kael
from kael.distributions import utils as ku

P = np.array([[0.0, 0.2, 0.8], [0.5, 0.25, 0.25]], dtype=np.float32)


@pytest.mark.parametrize("fn", ["probs_to_logits", "logits_to_probs"])
@pytest.mark.parametrize("is_binary", [False, True])
def test_conversions_match_torch(fn, is_binary):
    got = getattr(ku, fn)(kael.tensor(P), is_binary=is_binary).numpy()
    want = getattr(tu, fn)(torch.tensor(P), is_binary=is_binary).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5)


def test_clamp_probs_matches_torch():
    np.testing.assert_array_equal(
        ku.clamp_probs(kael.tensor(P)).numpy(), tu.clamp_probs(torch.tensor(P)).numpy()
    )


def test_broadcast_all_broadcasts_and_takes_the_tensors_dtype():
    a, b = ku.broadcast_all(kael.zeros(2, 1, dtype=kael.float64), 3.0)
    assert a.shape == b.shape == (2, 1) and b.dtype == kael.float64
    (c,) = ku.broadcast_all(1.5)
    assert c.dtype == kael.get_default_dtype() and c.shape == ()
    with pytest.raises(kael.ValueError, match="Input arguments must all be instances"):
        ku.broadcast_all("x")


def test_lazy_property_computes_once():
    calls = []

    class Holder:
        @ku.lazy_property
        def value(self):
            calls.append(1)
            return 4

    h = Holder()
    assert (h.value, h.value, len(calls)) == (4, 4, 1)
