"""Every family's table of Cases for tests/distributions/test_families.py: each Case builds one
distribution in kael and in torch from the same NumPy parameters (each family's from its own
seeded generator) and names where to score it and which generic checks it takes."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from distribution_helpers import Case

CDF = ("log_prob", "cdf")
QUANTILES = np.array([0.01, 0.3, 0.5, 0.9])[:, None, None]
UNIT_QUANTILES = np.array([0.0, 0.3, 0.9])[:, None, None]
VALUES_ONLY = ("values",)


def _normal(rng: np.random.Generator) -> list[Case]:
    loc, scale = rng.normal(size=3), rng.uniform(0.5, 2.0, (2, 1))
    return [
        Case("Normal", {"loc": loc, "scale": scale}, rng.normal(size=(2, 3)), CDF, QUANTILES),
        Case("Normal", {"loc": 0.5, "scale": 2.0}, np.array([-1.0, 0.0, 3.0]), CDF),
        Case("LogNormal", {"loc": loc, "scale": scale}, rng.uniform(0.1, 3, 3), CDF, QUANTILES),
        Case("HalfNormal", {"scale": scale}, rng.uniform(0, 3, 3), CDF, QUANTILES),
    ]


def _location_scale(rng: np.random.Generator) -> list[Case]:
    args = {"loc": rng.normal(size=3), "scale": rng.uniform(0.5, 2.0, (2, 1))}
    value = rng.normal(size=(2, 3))
    return [
        Case("Laplace", args, value, CDF, QUANTILES),
        Case("Laplace", {"loc": 0.0, "scale": 1.5}, value, CDF),
        Case("Cauchy", args, value, CDF, QUANTILES, checks=VALUES_ONLY),  # it has no moments
        Case("Gumbel", args, value, CDF, QUANTILES),
    ]


def _uniform(rng: np.random.Generator) -> list[Case]:
    low = rng.normal(size=3)
    high = low + rng.uniform(0.5, 2.0, (2, 3))
    return [
        Case("Uniform", {"low": low, "high": high}, low + 0.25, CDF, UNIT_QUANTILES),
        Case("Uniform", {"low": -1.0, "high": 2.0}, np.array([-1.0, 0.0, 1.5]), CDF),
    ]


def _exponential(rng: np.random.Generator) -> list[Case]:
    rate = rng.uniform(0.5, 2.0, (2, 3))
    return [
        Case("Exponential", {"rate": rate}, rng.uniform(0, 3, 3), CDF, UNIT_QUANTILES),
        Case("Exponential", {"rate": 1.5}, np.array([0.0, 1.0, 4.0]), CDF),
    ]


def _bernoulli(rng: np.random.Generator) -> list[Case]:
    probs, logits = rng.uniform(0.1, 0.9, (2, 3)), rng.normal(size=3)
    counts = {"total_count": np.array([5.0, 8.0, 9.0]), "logits": logits}
    return [
        Case("Bernoulli", {"probs": probs}, np.array([0.0, 1.0, 1.0])),
        Case("Bernoulli", {"logits": logits}, np.array([0.0, 1.0, 0.0])),
        Case("Bernoulli", {"probs": 0.3}, np.array([0.0, 1.0])),
        Case("Geometric", {"probs": probs}, np.array([0.0, 1.0, 4.0])),
        Case("Geometric", {"logits": logits}, np.array([0.0, 2.0, 7.0])),
        Case("Binomial", {"total_count": 10, "probs": probs}, np.array([0.0, 3.0, 10.0])),
        Case("Binomial", counts, np.array([0.0, 3.0, 5.0]), skip=("entropy",)),
    ]


def _poisson(rng: np.random.Generator) -> list[Case]:
    rate = rng.uniform(0.5, 8.0, (2, 3))
    return [
        Case("Poisson", {"rate": rate}, np.array([0.0, 1.0, 6.0]), skip=("entropy",)),
        Case("Poisson", {"rate": 3.0}, np.array([0.0, 2.0, 9.0]), skip=("entropy",)),
    ]


def _categorical(rng: np.random.Generator) -> list[Case]:
    probs, logits = rng.uniform(0.1, 2.0, (2, 4)), rng.normal(size=(3, 4))
    nan_moments = ("mean", "variance", "stddev")
    counts = np.array([[1.0, 2, 2, 0], [0, 0, 0, 5]])
    return [
        Case("Categorical", {"probs": probs}, np.array([0.0, 3.0]), skip=nan_moments, checks=VALUES_ONLY),
        Case("Categorical", {"logits": logits}, np.array([[1.0], [2.0]]), skip=nan_moments, checks=VALUES_ONLY),
        Case("OneHotCategorical", {"probs": probs}, np.eye(4)[[0, 3]]),
        Case("OneHotCategorical", {"logits": logits[0]}, np.eye(4)[[2, 1]]),
        Case("Multinomial", {"total_count": 5, "probs": probs}, counts, skip=("mode", "entropy")),
    ]  # fmt: skip


def _gamma(rng: np.random.Generator) -> list[Case]:
    conc, rate = rng.uniform(0.5, 4.0, (2, 3)), rng.uniform(0.5, 2.0, 3)
    return [
        Case("Gamma", {"concentration": conc, "rate": rate}, rng.uniform(0.1, 4, 3), CDF),
        Case("Gamma", {"concentration": 2.0, "rate": 0.5}, np.array([0.5, 1.0, 9.0])),
        Case("Chi2", {"df": conc * 2}, rng.uniform(0.1, 4, 3)),
    ]


def _beta(rng: np.random.Generator) -> list[Case]:
    c1, c0 = rng.uniform(0.5, 4.0, (2, 3)), rng.uniform(0.5, 4.0, 3)
    conc = np.array([[0.5, 0.7, 0.9], [1.5, 2.0, 4.0]])  # the first all below 1: a vertex mode
    return [
        Case("Beta", {"concentration1": c1, "concentration0": c0}, rng.uniform(0.05, 0.95, 3)),
        Case("Beta", {"concentration1": 2.0, "concentration0": 3.0}, np.array([0.1, 0.5, 0.9])),
        Case("Dirichlet", {"concentration": conc}, np.array([[0.2, 0.3, 0.5], [0.1, 0.1, 0.8]])),
    ]


def _student_t(rng: np.random.Generator) -> list[Case]:
    df = np.array([[0.8, 1.5, 3.0], [5.0, 9.0, 30.0]])  # mean nan, variance inf, finite
    args = {"df": df, "loc": rng.normal(size=3), "scale": rng.uniform(0.5, 2, 3)}
    moments = {"df": np.array([6.0, 12.0]), "loc": np.array([1.0, -2])}
    return [
        Case("StudentT", args, rng.normal(size=3), checks=VALUES_ONLY),
        Case("StudentT", {"df": 4.0}, np.array([-2.0, 0.0, 1.0]), checks=VALUES_ONLY),
        Case("StudentT", moments, checks=("moments",)),  # every df large enough for a variance
    ]


def _multivariate_normal(rng: np.random.Generator) -> list[Case]:
    tril = np.tril(rng.normal(size=(2, 3, 3)), -1) + np.diag([1.0, 1.5, 2.0])
    cov = tril @ tril.swapaxes(-1, -2)
    loc, value = rng.normal(size=3), rng.normal(size=(4, 2, 3))
    forms = {
        "scale_tril": tril,
        "covariance_matrix": cov,
        "precision_matrix": np.linalg.inv(cov[0]),
    }
    return [
        Case("MultivariateNormal", {"loc": loc, form: m}, value, tol={"rtol": 1e-3}, label=form)
        for form, m in forms.items()
    ]


# each family's table and the seed of its generator
FAMILIES = {
    _normal: 0, _location_scale: 1, _uniform: 2, _exponential: 3, _bernoulli: 4, _poisson: 5,
    _categorical: 6, _gamma: 8, _beta: 9, _student_t: 10, _multivariate_normal: 11,
}  # fmt: skip


def _all_cases() -> list[Case]:
    cases = [
        case for table, seed in FAMILIES.items() for case in table(np.random.default_rng(seed))
    ]
    seen: Counter[str] = Counter()
    for case in cases:
        case.label = case.label or str(seen[case.name])
        seen[case.name] += 1
    return cases


CASES = _all_cases()


def params(check: str) -> list:
    """The cases that take `check` ("values" or "moments"), as pytest params with ids such as
    Normal-0 (the family and the case's number in it)."""
    return [pytest.param(c, id=f"{c.name}-{c.label}") for c in CASES if check in c.checks]
