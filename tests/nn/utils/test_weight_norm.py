"""weight_norm and remove_weight_norm against torch's hook form: the same state keys and
shapes (weight_g, weight_v), torch's checkpoints load, and the same outputs."""

import warnings

import numpy as np
import pytest
import torch
from parity_helpers import loads_and_matches

import kael
from kael.nn.utils import remove_weight_norm, weight_norm

LAYERS = [
    (lambda L: L.nn.Conv1d(2, 3, 3), (1, 2, 8), 0),
    (lambda L: L.nn.Linear(4, 3), (2, 4), 0),
    (lambda L: L.nn.Linear(4, 3), (2, 4), 1),
    (lambda L: L.nn.Linear(4, 3), (2, 4), None),
    (lambda L: L.nn.ConvTranspose1d(3, 2, 3), (1, 3, 5), 1),
]


@pytest.mark.parametrize(("make", "shape", "dim"), LAYERS)
def test_weight_norm_matches_torch(make, shape, dim):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's hook form is deprecated for parametrizations
        theirs = torch.nn.utils.weight_norm(make(torch), dim=dim)
    ours = weight_norm(make(kael), dim=dim)
    x, want = loads_and_matches(ours, theirs, shape)
    remove_weight_norm(ours)
    assert sorted(ours.state_dict()) == ["bias", "weight"]
    np.testing.assert_allclose(ours(kael.tensor(x)).numpy(), want, rtol=1e-5, atol=1e-6)


def test_weight_norm_refuses_twice_and_remove_refuses_none():
    layer = weight_norm(kael.nn.Linear(2, 2))
    with pytest.raises(kael.ValueError, match="Cannot register two weight_norm hooks"):
        weight_norm(layer)
    with pytest.raises(kael.ValueError, match="weight_norm of 'weight' not found"):
        remove_weight_norm(kael.nn.Linear(2, 2))


def test_weight_norm_of_a_vector_keeps_one_norm_per_element_as_torch():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = torch.nn.utils.weight_norm(torch.nn.PReLU(3))
    ours = weight_norm(kael.nn.PReLU(3))
    assert ours.weight_g.shape == tuple(theirs.weight_g.shape) == (3,)
    ours.load_state_dict(theirs.state_dict())
