"""kael.func.stack_module_state against torch.func's: an ensemble of one class stacked
into batched parameters and buffers runs under vmap and functional_call as torch's does;
mixed models refused with torch's messages."""

import numpy as np
import pytest
import torch

import kael
from kael import nn


def _ensemble(lib):
    """Three small MLPs of one class with known weights, in lib (kael or torch)."""
    models = []
    for i in range(3):
        m = lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.BatchNorm1d(4), lib.nn.Linear(4, 2))
        state = {k: lib.tensor(v) for k, v in _weights(i).items()}
        m.load_state_dict(state)
        models.append(m.eval())
    return models


def _weights(i):
    rng = np.random.default_rng(i)
    shapes = {"0.weight": (4, 3), "0.bias": (4,), "1.weight": (4,), "1.bias": (4,),
              "1.running_mean": (4,), "1.running_var": (4,), "2.weight": (2, 4), "2.bias": (2,)}  # fmt: skip
    state = {k: rng.standard_normal(s).astype(np.float32) for k, s in shapes.items()}
    state["1.running_var"] = np.abs(state["1.running_var"]) + 0.5
    state["1.num_batches_tracked"] = np.array(0)
    return state


def test_stack_module_state_runs_an_ensemble_under_vmap_as_torch():
    outs = []
    x = np.random.default_rng(9).standard_normal((5, 3)).astype(np.float32)
    for lib, func in ((kael, kael.func), (torch, torch.func)):
        models = _ensemble(lib)
        params, buffers = func.stack_module_state(models)
        assert list(params) == ["0.weight", "0.bias", "1.weight", "1.bias", "2.weight", "2.bias"]
        assert list(buffers) == ["1.running_mean", "1.running_var", "1.num_batches_tracked"]
        assert tuple(params["0.weight"].shape) == (3, 4, 3)

        def run(p, b, data, model=models[0], func=func):
            return func.functional_call(model, (p, b), (data,))

        outs.append(
            func.vmap(run, in_dims=(0, 0, None))(params, buffers, lib.tensor(x)).detach().numpy()
        )
    np.testing.assert_allclose(outs[0], outs[1], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(
    "models, message",
    [
        ([], "Expected at least one model, got 0"),
        ([nn.Linear(2, 2), nn.Linear(2, 2).eval()], "same training/eval mode"),
        ([nn.Linear(2, 2), nn.Identity()], "same class"),
    ],
)
def test_stack_module_state_refuses_mixed_models_as_torch(models, message):
    with pytest.raises(kael.Error, match=message):
        kael.func.stack_module_state(models)


def test_stack_module_state_refuses_models_missing_a_name_naming_it():
    with pytest.raises(KeyError, match="bias"):  # torch's KeyError: 'bias'
        torch.func.stack_module_state([torch.nn.Linear(2, 2), torch.nn.Linear(2, 2, bias=False)])
    with pytest.raises(kael.KeyError, match=r"model 1 has no parameters \['bias'\]"):
        kael.func.stack_module_state([nn.Linear(2, 2), nn.Linear(2, 2, bias=False)])
