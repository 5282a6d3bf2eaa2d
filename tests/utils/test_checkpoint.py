"""kael.utils.checkpoint (utils/checkpoint.py): torch's forward results, its argument rules
and its warning; without autograd nothing is recomputed."""

import warnings

import numpy as np
import pytest
import torch
import torch.utils.checkpoint as torch_checkpoint

import kael
import kael.utils.checkpoint as kael_checkpoint


def _scaled(x, shift=1.0):
    return x * 2 + shift


@pytest.mark.parametrize("reentrant", [False, True])
def test_checkpoint_returns_the_functions_result_as_torch(reentrant):
    got = kael_checkpoint.checkpoint(_scaled, kael.ones(3), use_reentrant=reentrant)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch: no input requires grad
        want = torch_checkpoint.checkpoint(_scaled, torch.ones(3), use_reentrant=reentrant)
    assert got.tolist() == want.tolist()


def test_checkpoint_passes_keywords_unless_reentrant_and_warns_without_the_choice():
    fn = _scaled
    assert kael_checkpoint.checkpoint(
        fn, kael.ones(1), use_reentrant=False, shift=3.0
    ).tolist() == [5]
    with pytest.raises(kael.ValueError, match="Unexpected keyword arguments: shift"):
        kael_checkpoint.checkpoint(fn, kael.ones(1), use_reentrant=True, shift=3.0)
    with pytest.warns(UserWarning, match="use_reentrant parameter should be passed explicitly"):
        kael_checkpoint.checkpoint(fn, kael.ones(1))


def test_checkpoint_sequential_runs_a_sequential_or_a_list_in_order():
    torch.manual_seed(0)
    theirs = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU(), torch.nn.Linear(3, 2))
    ours = kael.nn.Sequential(kael.nn.Linear(4, 3), kael.nn.ReLU(), kael.nn.Linear(3, 2))
    ours.load_state_dict(
        {k: kael.tensor(v.detach().numpy()) for k, v in theirs.state_dict().items()}
    )
    x = np.random.default_rng(1).standard_normal((5, 4), dtype=np.float32)
    got = kael_checkpoint.checkpoint_sequential(ours, 2, kael.tensor(x), use_reentrant=False)
    want = torch_checkpoint.checkpoint_sequential(theirs, 2, torch.tensor(x), use_reentrant=False)
    np.testing.assert_allclose(got.numpy(), want.detach().numpy(), rtol=1e-6, atol=1e-6)
    steps = [lambda t: t + 1, lambda t: t * 2]
    assert kael_checkpoint.checkpoint_sequential(
        steps, 1, kael.ones(2), use_reentrant=False
    ).tolist() == [4, 4]


def test_checkpoint_refuses_what_torch_refuses():
    fn = _scaled
    for kwargs, message in (
        ({"use_reentrant": True, "debug": True}, "only supported when use_reentrant=False"),
        ({"use_reentrant": True, "context_fn": lambda: (None, None)}, "context_fn"),
        ({"use_reentrant": False, "determinism_check": "x"}, "should be one of"),
    ):
        with pytest.raises(ValueError, match=message):
            torch_checkpoint.checkpoint(fn, torch.ones(1), **kwargs)
        with pytest.raises(kael.ValueError, match=message):
            kael_checkpoint.checkpoint(fn, kael.ones(1), **kwargs)
    with pytest.raises(kael.ValueError, match="Unexpected keyword arguments: foo"):
        kael_checkpoint.checkpoint_sequential([fn], 1, kael.ones(1), use_reentrant=False, foo=1)
    with pytest.warns(UserWarning, match="utils.checkpoint_sequential: the use_reentrant"):
        kael_checkpoint.checkpoint_sequential([fn], 1, kael.ones(1))
