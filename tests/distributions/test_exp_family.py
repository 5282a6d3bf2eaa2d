"""ExponentialFamily: the abstract members refuse as torch's, and the generic entropy (torch's
needs autograd) refuses with the reason unless a family overrides it."""

import numpy as np
import pytest
import torch

import kael
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
