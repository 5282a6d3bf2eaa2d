"""kael.func.functional_call against torch.func.functional_call: replaced tensors for one
call, the module unchanged after, tied weights, several dicts, strict's message."""

import numpy as np
import pytest
import torch

import kael


def _pair():
    theirs = torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.BatchNorm1d(2)).eval()
    ours = kael.nn.Sequential(kael.nn.Linear(3, 2), kael.nn.BatchNorm1d(2)).eval()
    ours.load_state_dict(theirs.state_dict())
    return ours, theirs


def test_replaced_tensors_for_one_call_as_torch():
    ours, theirs = _pair()
    x = np.random.default_rng(0).standard_normal((4, 3)).astype(np.float32)
    w = np.random.default_rng(1).standard_normal((2, 3)).astype(np.float32)
    swaps = ({"0.weight": w}, {"1.running_mean": np.ones(2, np.float32)})
    got = kael.func.functional_call(
        ours, tuple({k: kael.tensor(v) for k, v in d.items()} for d in swaps), (kael.tensor(x),)
    )
    with torch.no_grad():
        want = torch.func.functional_call(
            theirs, tuple({k: torch.tensor(v) for k, v in d.items()} for d in swaps),
            (torch.tensor(x),),
        )  # fmt: skip
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-6)
    assert kael.equal(ours[0].weight, kael.tensor(theirs[0].weight.detach().numpy()))
    assert ours[1].running_mean.tolist() == [0.0, 0.0]


def test_tied_weights_follow_the_replaced_one():
    first, second = kael.nn.Linear(2, 2, bias=False), kael.nn.Linear(2, 2, bias=False)
    second.weight = first.weight  # one Parameter under two names
    model = kael.nn.Sequential(first, second)
    out = kael.func.functional_call(model, {"0.weight": kael.eye(2) * 2}, kael.ones(1, 2))
    assert out.tolist() == [[4.0, 4.0]]
    untied = kael.func.functional_call(
        model, {"0.weight": kael.eye(2) * 2}, kael.ones(1, 2), tie_weights=False
    )
    assert kael.allclose(untied, (kael.ones(1, 2) * 2) @ first.weight.t())


def _tied(nn):
    """nn.Sequential(a, b) of two bias-free 2x2 Linears sharing a's weight (torch or kael)."""
    first, second = nn.Linear(2, 2, bias=False), nn.Linear(2, 2, bias=False)
    second.weight = first.weight
    return nn.Sequential(first, second)


def test_tied_weights_given_different_tensors_are_refused_with_torchs_message():
    with pytest.raises(ValueError) as theirs:
        torch.func.functional_call(
            _tied(torch.nn), {"1.weight": torch.eye(2) * 5, "0.weight": torch.eye(2) * 3},
            torch.ones(1, 2),
        )  # fmt: skip
    given = {"1.weight": kael.eye(2) * 5, "0.weight": kael.eye(2) * 3}
    with pytest.raises(kael.ValueError) as ours:
        kael.func.functional_call(_tied(kael.nn), given, kael.ones(1, 2))
    assert str(ours.value) == str(theirs.value)
    untied = kael.func.functional_call(_tied(kael.nn), given, kael.ones(1, 2), tie_weights=False)
    assert untied.tolist() == [[15.0, 15.0]]


def test_tied_weights_given_one_tensor_under_each_name_run_as_torch():
    w = kael.eye(2) * 3
    got = kael.func.functional_call(_tied(kael.nn), {"0.weight": w, "1.weight": w}, kael.ones(1, 2))
    tw = torch.eye(2) * 3
    want = torch.func.functional_call(
        _tied(torch.nn), {"0.weight": tw, "1.weight": tw}, torch.ones(1, 2)
    )
    assert got.tolist() == want.tolist() == [[9.0, 9.0]]


def test_strict_and_repeated_keys_are_refused():
    layer = kael.nn.Linear(2, 2)
    with pytest.raises(
        kael.Error, match=r"reparametrizing for Linear:\n\tMissing key\(s\): 'bias'"
    ):
        kael.func.functional_call(layer, {"weight": kael.zeros(2, 2)}, kael.ones(1, 2), strict=True)
    with pytest.raises(kael.ValueError, match="appeared in multiple dictionaries"):
        kael.func.functional_call(
            layer, ({"bias": kael.ones(2)}, {"bias": kael.ones(2)}), kael.ones(1, 2)
        )


def test_the_older_home_is_the_same_function():
    assert kael.nn.utils.stateless.functional_call is kael.func.functional_call
