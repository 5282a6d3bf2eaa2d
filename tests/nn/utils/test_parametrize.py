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


LIBS = pytest.mark.parametrize("lib", [torch, kael], ids=["torch", "kael"])
VALUE = {torch: ValueError, kael: kael.ValueError}


def _doubling(lib):
    class Double(lib.nn.Module):
        def forward(self, x):
            return x * 2

    return Double()


def _counts(module):
    return [n for n, _ in module.named_parameters()], [n for n, _ in module.named_buffers()]


@LIBS
def test_a_parametrized_buffer_stays_a_buffer_and_comes_back_as_one(lib):
    norm = lib.nn.BatchNorm1d(3)
    running_mean = norm.running_mean
    norm.running_mean.fill_(1.5)
    lib.nn.utils.parametrize.register_parametrization(norm, "running_mean", _doubling(lib))
    assert _counts(norm) == (
        ["weight", "bias"],
        ["running_var", "num_batches_tracked", "parametrizations.running_mean.original"],
    )
    assert norm.parametrizations.running_mean.original is running_mean
    assert norm.running_mean.tolist() == [3.0] * 3
    lib.nn.utils.parametrize.remove_parametrizations(norm, "running_mean")
    assert _counts(norm) == (
        ["weight", "bias"],
        ["running_var", "num_batches_tracked", "running_mean"],
    )
    assert norm.running_mean is running_mean and running_mean.tolist() == [3.0] * 3
    assert type(norm).__name__ == "BatchNorm1d"


@LIBS
@pytest.mark.parametrize("leave_parametrized", [True, False])
def test_removal_keeps_the_original_parameter_object(lib, leave_parametrized):
    layer = lib.nn.Linear(2, 2)
    weight = layer.weight
    before = weight.detach().clone()
    parametrize_ = lib.nn.utils.parametrize
    parametrize_.register_parametrization(layer, "weight", _doubling(lib))
    parametrize_.remove_parametrizations(layer, "weight", leave_parametrized=leave_parametrized)
    assert layer.weight is weight and isinstance(layer.weight, lib.nn.Parameter)
    factor = 2.0 if leave_parametrized else 1.0
    assert (layer.weight.detach() == before * factor).all()


def _splitting(lib):
    class Split(lib.nn.Module):
        def forward(self, a, b):
            return a + b

        def right_inverse(self, x):
            return x / 2, x / 2

    return Split()


@LIBS
def test_a_split_buffer_keeps_its_parts_as_buffers(lib):
    norm = lib.nn.BatchNorm1d(2)
    lib.nn.utils.parametrize.register_parametrization(norm, "running_var", _splitting(lib))
    names = _counts(norm)[1]
    assert names[-2:] == [
        "parametrizations.running_var.original0",
        "parametrizations.running_var.original1",
    ]
    lib.nn.utils.parametrize.remove_parametrizations(norm, "running_var")
    assert _counts(norm)[1][-1] == "running_var" and norm.running_var.tolist() == [1.0, 1.0]


@LIBS
def test_a_split_parameter_keeps_its_parts_as_parameters(lib):
    layer = lib.nn.Linear(2, 2)
    layer.weight.requires_grad_(False)
    lib.nn.utils.parametrize.register_parametrization(layer, "weight", _splitting(lib))
    chain = layer.parametrizations.weight
    assert isinstance(chain.original0, lib.nn.Parameter) and not chain.original0.requires_grad
    lib.nn.utils.parametrize.remove_parametrizations(layer, "weight")
    assert "weight" in layer._buffers  # torch: a value that needs no grad comes back a buffer


def _changing(lib, what):
    class Change(lib.nn.Module):
        def forward(self, x):
            return x[0] if what == "shape" else x.double()

    return Change()


@LIBS
@pytest.mark.parametrize("what", ["shape", "dtype"])
def test_a_parametrization_may_not_change_shape_or_dtype_unless_unsafe(lib, what):
    wanted = {
        "shape": r"unparametrized shape: {L}\.Size\(\[2, 2\]\)\nparametrized shape: "
        r"{L}\.Size\(\[2\]\)",
        "dtype": r"unparametrized dtype: {L}\.float32\nparametrized dtype: {L}\.float64",
    }[what].format(L=lib.__name__)
    layer = lib.nn.Linear(2, 2)
    weight = layer.weight
    with pytest.raises(VALUE[lib], match=f"may not change the {what} of the tensor, unless "):
        lib.nn.utils.parametrize.register_parametrization(layer, "weight", _changing(lib, what))
    with pytest.raises(VALUE[lib], match=wanted):
        lib.nn.utils.parametrize.register_parametrization(layer, "weight", _changing(lib, what))
    assert layer.weight is weight and type(layer).__name__ == "Linear"  # left as it was
    lib.nn.utils.parametrize.register_parametrization(
        layer, "weight", _changing(lib, what), unsafe=True
    )
    assert layer.parametrizations.weight.unsafe


@LIBS
@pytest.mark.parametrize("what", ["shape", "dtype"])
def test_a_second_parametrization_is_checked_against_the_current_value(lib, what):
    layer = lib.nn.Linear(2, 2)
    lib.nn.utils.parametrize.register_parametrization(layer, "weight", _doubling(lib))
    with pytest.raises(
        VALUE[lib], match=rf"unless the `unsafe` flag is enabled.\nmodule.weight.{what}: "
    ):
        lib.nn.utils.parametrize.register_parametrization(layer, "weight", _changing(lib, what))
    assert len(layer.parametrizations.weight) == 1
    lib.nn.utils.parametrize.register_parametrization(
        layer, "weight", _changing(lib, what), unsafe=True
    )
    assert len(layer.parametrizations.weight) == 2 and layer.parametrizations.weight.unsafe


@LIBS
def test_a_second_parametrizations_right_inverse_is_checked(lib):
    class BadInverse(lib.nn.Module):
        def forward(self, x):
            return x

        def right_inverse(self, x):
            return x[0]

    layer = lib.nn.Linear(2, 2)
    lib.nn.utils.parametrize.register_parametrization(layer, "weight", _doubling(lib))
    message = "right_inverse must have the same shape as module.weight, unless the `unsafe`"
    with pytest.raises(VALUE[lib], match=message):
        lib.nn.utils.parametrize.register_parametrization(layer, "weight", BadInverse())


@LIBS
def test_a_right_inverse_that_is_not_implemented_counts_as_the_identity(lib):
    class NoInverse(lib.nn.Module):
        def forward(self, x):
            return x * 3

        def right_inverse(self, x):
            raise NotImplementedError

    layer = lib.nn.Linear(2, 2)
    before = layer.weight.detach().clone()
    lib.nn.utils.parametrize.register_parametrization(layer, "weight", NoInverse())
    assert (layer.parametrizations.weight.original.detach() == before).all()


@LIBS
def test_registration_puts_the_parametrization_in_the_module_mode(lib):
    layer = lib.nn.Linear(2, 2).eval()
    parametrization = _doubling(lib)
    lib.nn.utils.parametrize.register_parametrization(layer, "weight", parametrization)
    assert parametrization.training is False


def test_a_parametrization_list_needs_a_module():
    with pytest.raises(kael.ValueError, match="ParametrizationList requires one or more modules"):
        parametrize.ParametrizationList([], kael.ones(2))
