"""parametrize and parametrizations.weight_norm against torch's: the class, state keys and
shapes (a newer checkpoint's parametrizations.weight.original0/1 load), outputs, a custom
parametrization, removal and caching."""

import copy

import numpy as np
import pytest
import torch
from parity_helpers import loads_and_matches
from torch.nn.utils import parametrizations as torch_parametrizations
from torch.nn.utils import parametrize as torch_parametrize

import kael
from kael.nn.utils import parametrizations, parametrize

LAYERS = [
    (lambda L: L.nn.Linear(4, 3), (2, 4), 0),
    (lambda L: L.nn.Conv1d(2, 3, 3), (1, 2, 8), 0),
    (lambda L: L.nn.Linear(4, 3), (2, 4), None),
]


@pytest.mark.parametrize(("make", "shape", "dim"), LAYERS)
def test_weight_norm_parametrization_matches_torch(make, shape, dim):
    theirs = torch_parametrizations.weight_norm(make(torch), dim=dim)
    ours = parametrizations.weight_norm(make(kael), dim=dim)
    assert type(ours).__name__ == type(theirs).__name__ and repr(ours) == repr(theirs)
    x, want = loads_and_matches(ours, theirs, shape)
    np.testing.assert_allclose(
        kael.compile(ours)(kael.tensor(x)).numpy(), want, rtol=1e-5, atol=1e-6
    )
    parametrize.remove_parametrizations(ours, "weight")
    torch_parametrize.remove_parametrizations(theirs, "weight")
    assert type(ours).__name__ == type(theirs).__name__ and list(ours.state_dict()) == list(
        theirs.state_dict()
    )
    np.testing.assert_allclose(ours(kael.tensor(x)).numpy(), want, rtol=1e-5, atol=1e-6)


class Symmetric(kael.nn.Module):
    def forward(self, x):
        return x.triu() + x.triu(1).mT


def test_a_custom_parametrization_and_its_queries():
    layer = kael.nn.Linear(3, 3)
    parametrize.register_parametrization(layer, "weight", Symmetric())
    assert list(layer.state_dict()) == ["bias", "parametrizations.weight.original"]
    assert kael.equal(layer.weight, layer.weight.mT)
    assert parametrize.is_parametrized(layer) and not parametrize.is_parametrized(layer, "bias")
    assert parametrize.type_before_parametrizations(layer) is kael.nn.Linear
    with parametrize.cached():
        assert layer.weight is layer.weight
    assert layer.weight is not layer.weight
    twin = copy.deepcopy(layer)
    assert kael.equal(twin.weight, layer.weight)
    with pytest.raises(kael.ValueError, match="does not have a parameter, a buffer"):
        parametrize.register_parametrization(layer, "nothing", Symmetric())
    with pytest.raises(kael.ValueError, match="does not have a parametrization on bias"):
        parametrize.remove_parametrizations(layer, "bias")
