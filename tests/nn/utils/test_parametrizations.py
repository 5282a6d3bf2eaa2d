"""parametrizations.orthogonal against torch's: from the same original (and trivialization
base) each map gives torch's weight, registration orthogonalizes the weight as torch does,
assigning an orthogonal matrix to the weight keeps it, the state keys match, and torch's
refusals are typed kael errors."""

import numpy as np
import pytest
import torch
from torch.nn.utils import parametrizations as torch_parametrizations

import kael
from kael.nn.utils import parametrizations

SHAPES = [(3, 3), (5, 3), (3, 5), (2, 4, 3)]  # square, tall, wide, a batch of tall
MAPS = ["matrix_exp", "cayley", "householder"]


class _Holder:
    """A module with one parameter `weight` of a given shape, built in torch or kael."""

    @staticmethod
    def make(lib, values: np.ndarray):
        module = lib.nn.Module()
        module.weight = lib.nn.Parameter(lib.tensor(values))
        return module


def _pair(shape, seed: int = 0, **options):
    """(kael module, torch module), each with an orthogonal parametrization of one weight."""
    values = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    ours = parametrizations.orthogonal(_Holder.make(kael, values), **options)
    theirs = torch_parametrizations.orthogonal(_Holder.make(torch, values), **options)
    return ours, theirs


def _weight(module) -> np.ndarray:
    weight = module.weight
    return weight.detach().numpy() if isinstance(weight, torch.Tensor) else weight.numpy()


def _assert_orthogonal(q: np.ndarray) -> None:
    """Orthonormal columns, or rows where q is wide."""
    tall = q if q.shape[-2] >= q.shape[-1] else np.swapaxes(q, -1, -2)
    gram = np.swapaxes(tall, -1, -2) @ tall
    np.testing.assert_allclose(gram, np.broadcast_to(np.eye(tall.shape[-1]), gram.shape), atol=1e-5)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("orthogonal_map", MAPS)
@pytest.mark.parametrize("use_trivialization", [True, False])
def test_orthogonal_maps_give_torchs_weight_from_the_same_original(
    shape, orthogonal_map, use_trivialization
):
    """parametrizations.orthogonal was missing. With torch's original (random, not the -I
    of right_inverse) and base, each map's weight is torch's, orthogonal."""
    ours, theirs = _pair(
        shape, orthogonal_map=orthogonal_map, use_trivialization=use_trivialization
    )
    original = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    ours.parametrizations.weight.original.copy_(kael.tensor(original))
    with torch.no_grad():
        theirs.parametrizations.weight.original.copy_(torch.tensor(original))
    if use_trivialization:
        ours.parametrizations.weight[0].base = kael.tensor(
            theirs.parametrizations.weight[0].base.numpy()
        )
    got, want = _weight(ours), _weight(theirs)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_allclose(got, want, atol=2e-5)
    if orthogonal_map != "householder":  # householder's diagonal sign step zeroes columns
        _assert_orthogonal(got)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("orthogonal_map", [None, *MAPS])
def test_orthogonal_registration_orthogonalizes_the_weight_as_torch(shape, orthogonal_map):
    """The default map is matrix_exp for a square weight, householder otherwise; a square
    weight's start is its QR's Q (signs from R), as torch's, and so is every weight's
    without the trivialization (householder), whose originals are torch's too."""
    ours, theirs = _pair(shape, orthogonal_map=orthogonal_map)
    chain = ours.parametrizations.weight
    assert chain[0].orthogonal_map == theirs.parametrizations.weight[0].orthogonal_map.name
    assert sorted(ours.state_dict()) == sorted(theirs.state_dict())
    assert type(ours).__name__ == type(theirs).__name__
    _assert_orthogonal(_weight(ours))
    if shape[-1] == shape[-2]:
        np.testing.assert_allclose(_weight(ours), _weight(theirs), atol=1e-5)
    ours, theirs = _pair(shape, orthogonal_map="householder", use_trivialization=False)
    np.testing.assert_allclose(_weight(ours), _weight(theirs), atol=1e-5)
    got = ours.parametrizations.weight.original.numpy()
    np.testing.assert_allclose(
        got, theirs.parametrizations.weight.original.detach().numpy(), atol=1e-5
    )


# the assignments torch supports: without trivialization only householder's (the others'
# refusals: test_orthogonal_refusals_are_typed)
ASSIGNABLE = [(m, True) for m in MAPS] + [("householder", False)]


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("orthogonal_map, use_trivialization", ASSIGNABLE)
def test_orthogonal_weight_keeps_an_assigned_orthogonal_matrix(
    shape, orthogonal_map, use_trivialization
):
    """module.weight = Q (right_inverse) gives back Q, where torch supports assigning."""
    ours, theirs = _pair(
        shape, orthogonal_map=orthogonal_map, use_trivialization=use_trivialization
    )
    q = _weight(_pair(shape, seed=2, orthogonal_map="householder", use_trivialization=False)[1])
    ours.weight = kael.tensor(q)
    with torch.no_grad():
        theirs.weight = torch.tensor(q)
    np.testing.assert_allclose(_weight(theirs), q, atol=1e-5)
    np.testing.assert_allclose(_weight(ours), q, atol=1e-5)


def _raises_like_torch(kael_error, torch_error, run) -> str:
    """run(torch) raises torch_error and run(kael) the typed kael_error; kael's message."""
    with pytest.raises(torch_error):
        run(torch)
    with pytest.raises(kael_error) as caught:
        run(kael)
    return str(caught.value)


def test_orthogonal_refusals_are_typed():
    """torch's refusals: a vector, an unknown map, a missing name, a complex weight with
    householder, a wrong shape assigned, an assignment without the trivialization."""
    orthogonal = {torch: torch_parametrizations.orthogonal, kael: parametrizations.orthogonal}
    vector = np.ones(3, np.float32)
    square = np.eye(3, dtype=np.float32)

    def module(lib, values):
        return _Holder.make(lib, values)

    message = _raises_like_torch(
        kael.ValueError, ValueError, lambda L: orthogonal[L](module(L, vector))
    )
    assert "1 dimensions" in message
    message = _raises_like_torch(
        kael.ValueError,
        ValueError,
        lambda L: orthogonal[L](module(L, square), orthogonal_map="qr"),
    )
    assert "Got: qr" in message
    message = _raises_like_torch(
        kael.ValueError, ValueError, lambda L: orthogonal[L](module(L, square), name="bias")
    )
    assert "'bias'" in message
    _raises_like_torch(
        kael.ValueError,
        ValueError,
        lambda L: orthogonal[L](
            module(L, square.astype(np.complex64)), orthogonal_map="householder"
        ),
    )

    def assign(lib, value, **options):
        target = orthogonal[lib](module(lib, square), **options)
        with torch.no_grad():
            target.weight = lib.tensor(value)

    message = _raises_like_torch(
        kael.ValueError, ValueError, lambda L: assign(L, np.eye(2, dtype=np.float32))
    )
    assert "[3, 3]" in message and "[2, 2]" in message
    _raises_like_torch(
        kael.NotImplementedError,
        NotImplementedError,
        lambda L: assign(L, square, orthogonal_map="cayley", use_trivialization=False),
    )
