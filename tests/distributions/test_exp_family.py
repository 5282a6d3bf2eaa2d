"""ExponentialFamily: the abstract members refuse as torch's, the generic entropy (torch's
needs autograd) refuses with the reason unless a family overrides it, and the families torch
derives from it (natural parameters, log normalizer, mean carrier measure) match torch's."""

import numpy as np
import pytest
import torch
from distribution_helpers import DTYPES, assert_matches, pair

import kael
import kael.distributions
from kael.distributions.continuous_bernoulli import ContinuousBernoulli
from kael.distributions.exp_family import ExponentialFamily
from kael.distributions.wishart import Wishart


class _Bare(ExponentialFamily):
    arg_constraints = {}


@pytest.mark.parametrize("member", ["_natural_params", "_mean_carrier_measure"])
def test_abstract_properties_are_not_implemented(member):
    with pytest.raises(kael.NotImplementedError, match=f"_Bare does not define {member}"):
        getattr(_Bare(), member)


def test_log_normalizer_is_not_implemented():
    with pytest.raises(kael.NotImplementedError, match="_Bare does not define _log_normalizer"):
        _Bare()._log_normalizer(kael.zeros(1))


def test_generic_entropy_refuses_naming_autograd():
    with pytest.raises(
        kael.NotImplementedError, match=r"_Bare\.entropy: .* by autograd, which kael"
    ):
        _Bare().entropy()


@pytest.mark.parametrize(
    "ours, theirs",
    [
        (
            ContinuousBernoulli(kael.tensor([0.2, 0.7])),
            torch.distributions.ContinuousBernoulli(torch.tensor([0.2, 0.7])),
        ),
        (
            Wishart(4.0, covariance_matrix=kael.eye(2) * 2),
            torch.distributions.Wishart(4.0, covariance_matrix=torch.eye(2) * 2),
        ),
    ],
    ids=["ContinuousBernoulli", "Wishart"],
)
def test_families_with_closed_form_entropies_override_it(ours, theirs):
    assert isinstance(ours, ExponentialFamily) and ours._mean_carrier_measure == 0
    np.testing.assert_allclose(ours.entropy().numpy(), theirs.entropy().numpy(), rtol=1e-5)


# torch's exponential families among the older ones, each over a batch of parameters
OLDER = {
    "Bernoulli": {"probs": np.array([0.0, 0.3, 1.0])},
    "Beta": {"concentration1": np.array([0.5, 2.0, 3.0]), "concentration0": np.array([1.5, 0.7, 4.0])},
    "Chi2": {"df": np.array([0.5, 3.0, 10.0])},
    "Dirichlet": {"concentration": np.array([[0.5, 2.0, 3.0], [1.0, 1.0, 4.0]])},
    "Exponential": {"rate": np.array([0.5, 1.0, 3.0])},
    "Gamma": {"concentration": np.array([0.5, 1.0, 3.0]), "rate": np.array([2.0, 0.3, 1.0])},
    "Normal": {"loc": np.array([-1.0, 0.0, 2.5]), "scale": np.array([0.5, 1.0, 3.0])},
    "Poisson": {"rate": np.array([0.0, 1.5, 7.0])},
}  # fmt: skip


@pytest.mark.parametrize("name", [*OLDER, "Laplace", "Uniform", "Cauchy"])
def test_families_are_exponential_families_exactly_where_torch_s_are(name):
    family = getattr(kael.distributions, name)
    theirs = getattr(torch.distributions, name)
    assert issubclass(family, ExponentialFamily) == issubclass(
        theirs, torch.distributions.ExponentialFamily
    )
    assert issubclass(family, ExponentialFamily) == (name in OLDER)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", OLDER)
def test_natural_params_and_log_normalizer_match_torch(name, dtype):
    kd, td = pair(name, OLDER[name], dtype)
    ours, theirs = kd._natural_params, td._natural_params
    assert len(ours) == len(theirs)
    for got, want in zip(ours, theirs, strict=True):
        assert_matches(got, want, dtype)
    assert_matches(kd._log_normalizer(*ours), td._log_normalizer(*theirs), dtype)


@pytest.mark.parametrize("name", OLDER)
def test_mean_carrier_measure_is_zero_or_refused_as_torch(name):
    kd, td = pair(name, OLDER[name])
    try:
        want = td._mean_carrier_measure
    except NotImplementedError:
        with pytest.raises(kael.NotImplementedError, match=f"{name} does not define"):
            _ = kd._mean_carrier_measure
    else:
        assert kd._mean_carrier_measure == want == 0


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", [n for n in OLDER if n != "Poisson"])
def test_older_families_keep_their_closed_form_entropy(name, dtype):
    kd, td = pair(name, OLDER[name], dtype)
    assert_matches(kd.entropy(), td.entropy(), dtype)


def test_poisson_entropy_refuses_as_torch_s_generic_one_does():
    """torch's generic entropy needs Poisson's mean carrier measure, which it lacks."""
    kd, td = pair("Poisson", OLDER["Poisson"])
    with pytest.raises(NotImplementedError):
        td.entropy()
    with pytest.raises(kael.NotImplementedError, match=r"Poisson\.entropy: .* by autograd"):
        kd.entropy()
