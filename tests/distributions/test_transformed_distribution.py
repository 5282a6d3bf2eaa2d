"""TransformedDistribution against torch.distributions.TransformedDistribution: shapes from
the transforms, log_prob's Jacobian terms, cdf/icdf through monotone transforms, expand,
support, samples and KL between equal transforms."""

import numpy as np
import pytest
import torch
from distribution_helpers import DTYPES, assert_matches, check_moments

import kael
import kael.distributions as D

rng = np.random.default_rng(31)
LOC, SCALE = rng.normal(size=(2, 3)), rng.uniform(0.5, 2, (2, 3))


def _build(ns, tensor, name):
    normal = ns.Normal(tensor(LOC), tensor(SCALE))
    cases = {
        "logistic": lambda: (
            ns.Uniform(tensor(np.zeros(3)), tensor(np.ones(3))),
            [ns.SigmoidTransform().inv, ns.AffineTransform(tensor(LOC[0]), tensor(SCALE[0]))],
        ),
        "decreasing": lambda: (normal, [ns.ExpTransform(), ns.AffineTransform(0.0, -2.0)]),
        "broadcast-affine": lambda: (
            ns.Normal(tensor(LOC[0]), tensor(1.5)),
            ns.AffineTransform(tensor(LOC[:, :1]), tensor(SCALE[:, :1])),
        ),
        "stick-breaking": lambda: (normal, ns.StickBreakingTransform()),
        "reshape": lambda: (normal, [ns.ReshapeTransform((2, 3), (3, 2))]),
        "event-affine": lambda: (normal, [ns.AffineTransform(1.0, tensor(SCALE[0]), event_dim=1)]),
        "empty": lambda: (normal, []),
    }
    base, transforms = cases[name]()
    return ns.TransformedDistribution(base, transforms)


NAMES = [
    "logistic", "decreasing", "broadcast-affine", "stick-breaking", "reshape", "event-affine",
    "empty",
]  # fmt: skip
MONOTONE = ["logistic", "decreasing", "broadcast-affine", "empty"]


def pair(name, dtype="float64"):
    kt, tt = DTYPES[dtype]
    return (
        _build(D, lambda v: kael.tensor(np.asarray(v), dtype=kt), name),
        _build(torch.distributions, lambda v: torch.tensor(np.asarray(v), dtype=tt), name),
    )


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", NAMES)
def test_shapes_and_log_prob_match_torch(name, dtype):
    kd, td = pair(name, dtype)
    assert (kd.batch_shape, kd.event_shape) == (tuple(td.batch_shape), tuple(td.event_shape))
    assert kd.base_dist.batch_shape == tuple(td.base_dist.batch_shape)
    assert kd.base_dist.event_shape == tuple(td.base_dist.event_shape)
    assert type(kd.base_dist).__name__ == type(td.base_dist).__name__
    torch.manual_seed(0)
    value = td.sample((4,))
    got = kd.log_prob(kael.tensor(value.numpy()))
    assert_matches(got, td.log_prob(value), dtype)
    assert repr(kd.support).replace("kael", "torch") == repr(td.support)
    assert kd.has_rsample == td.has_rsample


@pytest.mark.parametrize("name", MONOTONE)
def test_cdf_and_icdf_through_monotone_transforms_match_torch(name):
    kd, td = pair(name)
    value = td.sample((3,))
    assert_matches(kd.cdf(kael.tensor(value.numpy())), td.cdf(value), "float64")
    q = np.array([0.1, 0.5, 0.8])[:, None, None] * np.ones(tuple(td.batch_shape))
    assert_matches(kd.icdf(kael.tensor(q)), td.icdf(torch.tensor(q)), "float64")


@pytest.mark.parametrize("name", ["logistic", "stick-breaking", "decreasing"])
def test_expand_matches_torch(name):
    kd, td = pair(name)
    shape = (4, *td.batch_shape)
    ke, te = kd.expand(shape), td.expand(shape)
    assert (ke.batch_shape, ke.event_shape) == (tuple(te.batch_shape), tuple(te.event_shape))
    assert ke.base_dist.batch_shape == tuple(te.base_dist.batch_shape)
    value = te.sample()
    assert_matches(ke.log_prob(kael.tensor(value.numpy())), te.log_prob(value), "float64")
    assert tuple(ke.sample((2,)).shape) == (2, *te.batch_shape, *te.event_shape)


@pytest.mark.parametrize("name", NAMES)
def test_samples_have_torchs_shape_and_dtype_and_lie_in_the_support(name):
    kd, td = pair(name, "float32")
    kael.manual_seed(3)
    for shape in [(), (5,)]:
        draws = kd.sample(shape)
        assert tuple(draws.shape) == tuple(td.sample(shape).shape)
        assert draws.dtype == kael.float32
        assert bool(kd.support.check(draws).all())
        assert tuple(kd.rsample(shape).shape) == tuple(draws.shape)


def test_sample_moments_of_an_affine_normal_match_the_normal_it_is():
    kd, _ = pair("broadcast-affine")
    loc, scale = LOC[:, :1] + SCALE[:, :1] * LOC[0], SCALE[:, :1] * 1.5
    expected = torch.distributions.Normal(torch.tensor(loc), torch.tensor(scale))
    check_moments(kd, expected, n=100_000)


def test_has_rsample_follows_the_base():
    kd = D.TransformedDistribution(D.Poisson(kael.tensor([2.0])), D.AffineTransform(1.0, 2.0))
    assert not kd.has_rsample
    assert D.TransformedDistribution(D.Normal(0.0, 1.0), []).has_rsample


def test_value_outside_the_support_is_refused_when_validating():
    kd = D.TransformedDistribution(D.Normal(0.0, 1.0), D.ExpTransform(), validate_args=True)
    with pytest.raises(kael.ValueError, match="to be within the support"):
        kd.log_prob(kael.tensor([-1.0]))
    with pytest.raises(kael.ValueError, match="to be within the support"):
        kd.cdf(kael.tensor([-1.0]))  # checked in the base after inversion: log(-1) is nan
    assert bool((kd.log_prob(kael.tensor([1.0])) < 0).all())


@pytest.mark.parametrize(
    ("transforms", "message"),
    [
        ((D.ExpTransform(),), r"transforms must be a Transform or list, but was \(ExpTransform"),
        ([D.ExpTransform(), 2.0], "transforms must be a Transform or a list of Transforms"),
    ],
)
def test_transforms_of_the_wrong_type_are_refused(transforms, message):
    with pytest.raises(kael.ValueError, match=message):
        D.TransformedDistribution(D.Normal(0.0, 1.0), transforms)


def test_a_base_with_fewer_dims_than_the_transform_is_refused():
    with pytest.raises(kael.ValueError, match="needs to have shape with size at least 1"):
        D.TransformedDistribution(D.Normal(0.0, 1.0), D.StickBreakingTransform())
    one_dim = D.TransformedDistribution(D.Normal(kael.zeros(2), 1.0), D.StickBreakingTransform())
    assert one_dim.event_shape == (3,)


def test_kl_between_equal_transforms_is_the_bases_kl_as_torch():
    def build(ns, t, scale):
        return ns.TransformedDistribution(ns.Normal(t(LOC), t(SCALE * scale)), ns.ExpTransform())

    k = [build(D, kael.tensor, s) for s in (1.0, 2.0)]
    t = [build(torch.distributions, torch.tensor, s) for s in (1.0, 2.0)]
    assert_matches(D.kl_divergence(*k), torch.distributions.kl_divergence(*t), "float64")
    other = D.TransformedDistribution(D.Normal(kael.tensor(LOC), 1.0), D.SigmoidTransform())
    with pytest.raises(kael.NotImplementedError):
        D.kl_divergence(k[0], other)
