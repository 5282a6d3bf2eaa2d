"""Independent against torch.distributions."""

import numpy as np
import pytest
import torch
from distribution_helpers import DTYPES, assert_matches, lib_args

import kael
import kael.distributions as D

rng = np.random.default_rng(12)
ARGS = {"loc": rng.normal(size=(2, 3)), "scale": rng.uniform(0.5, 2, (2, 3))}


def _pair(dtype, ndims):
    k = D.Independent(D.Normal(**lib_args(kael, ARGS, dtype)), ndims)
    t = torch.distributions.Independent(
        torch.distributions.Normal(**lib_args(torch, ARGS, dtype)), ndims
    )
    return k, t


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("ndims", [0, 1, 2])
def test_shapes_scores_and_summaries_match_torch(dtype, ndims):
    kd, td = _pair(dtype, ndims)
    assert (kd.batch_shape, kd.event_shape) == (tuple(td.batch_shape), tuple(td.event_shape))
    value = rng.normal(size=(4, 2, 3))
    kt, tt = DTYPES[dtype]
    assert_matches(
        kd.log_prob(kael.tensor(value, dtype=kt)), td.log_prob(torch.tensor(value, dtype=tt)), dtype
    )
    assert_matches(kd.entropy(), td.entropy(), dtype)
    assert_matches(kd.mean, td.mean, dtype)
    assert tuple(kd.sample((5,)).shape) == tuple(td.sample((5,)).shape)
    assert repr(kd).replace("kael.", "torch.") == repr(td)


def test_expand_keeps_the_event_and_expands_the_base():
    kd, td = _pair("float32", 1)
    ke, te = kd.expand((4, 2)), td.expand((4, 2))
    assert (ke.batch_shape, ke.event_shape) == (tuple(te.batch_shape), tuple(te.event_shape))
    assert ke.base_dist.batch_shape == tuple(te.base_dist.batch_shape)


def test_too_many_reinterpreted_dims_are_refused():
    with pytest.raises(kael.ValueError, match="Expected reinterpreted_batch_ndims <= len"):
        D.Independent(D.Normal(0.0, 1.0), 1)


def test_enumeration_over_reinterpreted_dims_is_not_implemented():
    d = D.Independent(D.Bernoulli(kael.tensor([0.5, 0.5])), 1)
    assert not d.has_enumerate_support
    with pytest.raises(NotImplementedError, match="cartesian product"):
        d.enumerate_support()
