"""The Distribution base: argument and sample validation worded as torch's, repr,
set_default_validate_args and sample_n."""

import re

import numpy as np
import pytest
import torch
from distribution_helpers import pair

import kael
import kael.distributions as D

BAD_PARAMS = [
    ("Normal", {"loc": 0.0, "scale": -1.0}),
    ("Exponential", {"rate": np.array([1.0, 0.0])}),
    ("Bernoulli", {"probs": np.array([0.5, 1.5])}),
    ("Gamma", {"concentration": np.array([-1.0, 1.0]), "rate": 1.0}),
    ("Poisson", {"rate": np.array([-1.0, 1.0])}),
    ("StudentT", {"df": np.array([0.0, 1.0])}),
    ("Categorical", {"probs": np.array([-0.5, 1.5])}),
]


def _message(build) -> str:
    with pytest.raises(ValueError) as info:
        build()
    return str(info.value)


def _comparable(message: str) -> str:
    """A message with tensor printouts (formatted differently by the two libraries) cut."""
    return re.sub(r"(invalid values:\n).*", r"\1", message, flags=re.S).replace("torch.", "kael.")


@pytest.mark.parametrize("name, args", BAD_PARAMS, ids=[n for n, _ in BAD_PARAMS])
def test_bad_parameters_raise_torchs_message(name, args):
    got = _message(lambda: pair(name, args))
    assert got.startswith("Expected parameter")
    want = _message(lambda: getattr(torch.distributions, name)(
        **{k: torch.tensor(v) if isinstance(v, np.ndarray) else v for k, v in args.items()}))  # fmt: skip
    assert _comparable(got) == _comparable(want)


def test_bad_parameters_raise_kael_value_error_and_pass_without_validation():
    with pytest.raises(kael.ValueError, match="to satisfy the constraint GreaterThan"):
        D.Normal(0.0, -1.0)
    assert D.Normal(0.0, -1.0, validate_args=False).scale.item() == -1.0


OUT_OF_SUPPORT = [
    ("Exponential", {"rate": 1.0}, [-1.0]),
    ("Uniform", {"low": 0.0, "high": 1.0}, [1.5]),
    ("Bernoulli", {"probs": 0.5}, [0.5]),
    ("Poisson", {"rate": 2.0}, [1.5]),
    ("Beta", {"concentration1": 2.0, "concentration0": 2.0}, [1.5]),
    ("Categorical", {"probs": np.array([0.5, 0.5])}, [2.0]),
]


@pytest.mark.parametrize("name, args, value", OUT_OF_SUPPORT, ids=[c[0] for c in OUT_OF_SUPPORT])
def test_log_prob_outside_the_support_raises_torchs_message(name, args, value):
    kd, td = pair(name, args)
    got = _message(lambda: kd.log_prob(kael.tensor(value)))
    want = _message(lambda: td.log_prob(torch.tensor(value)))
    assert got.startswith("Expected value argument")
    assert _comparable(got) == _comparable(want)


@pytest.mark.parametrize(
    "value, match",
    [
        (1.0, "The value argument to log_prob must be a Tensor"),
        (
            kael.zeros(3),
            r"Value is not broadcastable with batch_shape\+event_shape: "
            r"kael.Size\(\[3\]\) vs kael.Size\(\[2\]\).",
        ),  # fmt: skip
    ],
)
def test_malformed_values_are_refused(value, match):
    with pytest.raises(kael.ValueError, match=match):
        D.Normal(kael.zeros(2), 1.0).log_prob(value)


def test_a_value_of_the_wrong_event_shape_is_refused():
    d = D.Dirichlet(kael.ones(3))
    with pytest.raises(
        kael.ValueError, match="The right-most size of value must match event_shape"
    ):
        d.log_prob(kael.ones(2) / 2)


def test_set_default_validate_args_turns_checks_off_and_refuses_non_bools():
    try:
        D.Distribution.set_default_validate_args(False)
        assert D.Exponential(1.0).log_prob(kael.tensor([-1.0])).shape == (1,)
    finally:
        D.Distribution.set_default_validate_args(True)
    with pytest.raises(kael.ValueError, match="expects True or False"):
        D.Distribution.set_default_validate_args("yes")
    with pytest.raises(kael.ValueError):
        D.Exponential(1.0).log_prob(kael.tensor([-1.0]))


@pytest.mark.parametrize(
    "name, args",
    [
        ("Normal", {"loc": 0.0, "scale": 1.0}),
        ("Normal", {"loc": np.zeros(2), "scale": 1.0}),
        ("Categorical", {"logits": np.zeros(3)}),
        ("Chi2", {"df": 2.0}),
    ],  # fmt: skip
)
def test_repr_matches_torch(name, args):
    kd, td = pair(name, args)
    assert repr(kd) == repr(td).replace("torch.", "kael.")


def test_sample_n_warns_and_draws_n():
    with pytest.warns(FutureWarning, match="sample_n"):
        assert D.Normal(kael.zeros(2), 1.0).sample_n(4).shape == (4, 2)


def test_mode_and_base_methods_not_implemented_are_typed():
    with pytest.raises(NotImplementedError, match="does not implement mode"):
        _ = D.Independent(D.Multinomial(3, kael.ones(2, 2)), 1).mode
    with pytest.raises(kael.NotImplementedError):
        D.Poisson(1.0).cdf(kael.tensor(1.0))


def test_same_seed_gives_the_same_samples():
    d = D.Normal(kael.zeros(3), 2.0)
    kael.manual_seed(5)
    first = d.sample((4,)).numpy()
    kael.manual_seed(5)
    np.testing.assert_array_equal(d.sample((4,)).numpy(), first)


TWO = np.array([1.0, 2.0])
INCOMPATIBLE = {
    "Normal": {"loc": TWO, "scale": TWO},
    "GeneralizedPareto": {"loc": TWO, "scale": TWO, "concentration": TWO / 4},
    "VonMises": {"loc": TWO, "concentration": TWO},
    "FisherSnedecor": {"df1": TWO, "df2": TWO},
    "NegativeBinomial": {"total_count": TWO, "probs": TWO / 4},
    "Dirichlet": {"concentration": np.ones((2, 3))},
    "MultivariateNormal": {"loc": np.zeros((2, 3)), "scale_tril": np.eye(3)},
    "Weibull": {"scale": TWO, "concentration": TWO},
    "Pareto": {"scale": TWO, "alpha": TWO},
}


@pytest.mark.parametrize("shape", [(5, 7), (7,), (3, 2, 1)], ids=str)
@pytest.mark.parametrize("name", INCOMPATIBLE)
def test_expand_to_an_incompatible_batch_shape_raises_torchs_message(name, shape):
    kd, td = pair(name, INCOMPATIBLE[name])
    with pytest.raises(RuntimeError) as error:
        td.expand(shape)
    with pytest.raises(kael.ValueError, match=f"^{re.escape(str(error.value))}$"):
        kd.expand(shape)
