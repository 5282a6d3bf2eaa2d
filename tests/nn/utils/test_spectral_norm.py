"""spectral_norm in its two forms against torch's: the hook form (weight_orig, weight_u,
weight_v) and parametrizations.spectral_norm ("parametrizations.weight.original", the
power iteration's _u and _v): the same state keys, torch's checkpoints load, the same
outputs and power-iteration updates in training mode, none in eval mode, and torch's
refusals."""

import numpy as np
import pytest
import torch
from parity_helpers import loads_and_matches

import kael
from kael.nn.utils import parametrizations, remove_spectral_norm, spectral_norm

LAYERS = [
    (lambda L: L.nn.Linear(4, 3), (2, 4), {}),
    (lambda L: L.nn.Linear(4, 3), (2, 4), {"dim": 1, "n_power_iterations": 3}),
    (lambda L: L.nn.Conv2d(2, 3, 3), (1, 2, 6, 6), {}),
    (lambda L: L.nn.ConvTranspose2d(3, 2, 3), (1, 3, 4, 4), {}),  # dim 1 by default
    (lambda L: L.nn.Conv1d(2, 5, 3), (1, 2, 7), {"eps": 1e-3}),
]


def _buffers(module, names):
    """The named buffers of a kael or torch module, as arrays."""
    return [dict(module.named_buffers())[n].numpy() for n in names]


@pytest.mark.parametrize(("make", "shape", "options"), LAYERS)
def test_hook_form_matches_torch_in_training_and_eval(make, shape, options):
    torch.manual_seed(0)
    theirs = torch.nn.utils.spectral_norm(make(torch), **options)
    ours = spectral_norm(make(kael), **options)
    x, _ = loads_and_matches(ours, theirs, shape)
    names = ["weight_u", "weight_v"]
    for got, want in zip(_buffers(ours, names), _buffers(theirs, names)):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    ours.eval(), theirs.eval()
    before = _buffers(ours, names)
    with torch.no_grad():
        want = theirs(torch.tensor(x)).numpy()
    np.testing.assert_allclose(ours(kael.tensor(x)).numpy(), want, rtol=1e-5, atol=1e-6)
    for got, then in zip(_buffers(ours, names), before):
        np.testing.assert_array_equal(got, then)  # eval: no power iteration


def test_hook_form_starts_from_unit_vectors_and_the_plain_weight_as_torch():
    ours = spectral_norm(kael.nn.Conv2d(2, 3, 3))
    assert ours.weight_u.shape == (3,) and ours.weight_v.shape == (18,)
    for v in (ours.weight_u, ours.weight_v):
        assert abs(float(kael.linalg.vector_norm(v)) - 1.0) < 1e-6
    # until the first forward, module.weight is the weight itself (torch's weight.data)
    np.testing.assert_array_equal(ours.weight.numpy(), ours.weight_orig.numpy())


def test_remove_spectral_norm_keeps_the_normalized_weight_as_a_parameter():
    theirs = torch.nn.utils.spectral_norm(torch.nn.Linear(4, 3))
    ours = spectral_norm(kael.nn.Linear(4, 3))
    x, _ = loads_and_matches(ours, theirs, (2, 4))
    torch.nn.utils.remove_spectral_norm(theirs)
    remove_spectral_norm(ours)
    assert sorted(ours.state_dict()) == sorted(theirs.state_dict()) == ["bias", "weight"]
    assert isinstance(ours.weight, kael.nn.Parameter)
    np.testing.assert_allclose(
        ours.weight.numpy(), theirs.weight.detach().numpy(), rtol=1e-5, atol=1e-6
    )


def test_hook_form_refusals_as_torch():
    layer = spectral_norm(kael.nn.Linear(2, 2))
    with pytest.raises(kael.Error, match="Cannot register two spectral_norm hooks on the same"):
        spectral_norm(layer)
    with pytest.raises(kael.ValueError, match="spectral_norm of 'weight' not found"):
        remove_spectral_norm(kael.nn.Linear(2, 2))
    for bad in (0, -1):
        with pytest.raises(kael.ValueError, match=f"but got n_power_iterations={bad}"):
            spectral_norm(kael.nn.Linear(2, 2), n_power_iterations=bad)


@pytest.mark.parametrize(("make", "shape", "options"), LAYERS)
def test_parametrization_matches_torch_in_training_and_eval(make, shape, options):
    torch.manual_seed(0)
    theirs = torch.nn.utils.parametrizations.spectral_norm(make(torch), **options)
    ours = parametrizations.spectral_norm(make(kael), **options)
    x, _ = loads_and_matches(ours, theirs, shape)
    names = ["parametrizations.weight.0._u", "parametrizations.weight.0._v"]
    for got, want in zip(_buffers(ours, names), _buffers(theirs, names)):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    ours.eval(), theirs.eval()
    with torch.no_grad():
        want = theirs.weight.numpy()
    np.testing.assert_allclose(ours.weight.numpy(), want, rtol=1e-5, atol=1e-6)


def test_parametrization_starts_near_the_top_singular_vectors():
    # 15 power iterations at registration, as torch: sigma of diag(5, 1, 0.5) is 5
    layer = kael.nn.Linear(3, 3, bias=False)
    layer.weight.copy_(kael.diag(kael.tensor([5.0, 1.0, 0.5])))
    parametrizations.spectral_norm(layer).eval()
    np.testing.assert_allclose(layer.weight.numpy(), np.diag([1.0, 0.2, 0.1]), atol=1e-6)


def test_parametrization_of_a_vector_normalizes_it_as_torch():
    theirs = torch.nn.utils.parametrizations.spectral_norm(torch.nn.PReLU(3))
    ours = parametrizations.spectral_norm(kael.nn.PReLU(3))
    weights = np.array([3.0, -4.0, 12.0], np.float32)
    theirs.parametrizations.weight.original.data.copy_(torch.tensor(weights))
    ours.parametrizations.weight.original.copy_(kael.tensor(weights))
    assert sorted(ours.state_dict()) == sorted(theirs.state_dict())
    with torch.no_grad():
        np.testing.assert_allclose(ours.weight.numpy(), theirs.weight.numpy(), rtol=1e-6)


def test_parametrization_refusals_as_torch():
    with pytest.raises(kael.IndexError, match=r"expected to be in range of \[-2, 1\] but got 2"):
        parametrizations.spectral_norm(kael.nn.Linear(2, 2), dim=2)
    with pytest.raises(kael.ValueError, match="but got n_power_iterations=0"):
        parametrizations.spectral_norm(kael.nn.Linear(2, 2), n_power_iterations=0)
    with pytest.raises(kael.ValueError, match="has no parameter or buffer with name 'kernel'"):
        parametrizations.spectral_norm(kael.nn.Linear(2, 2), name="kernel")
