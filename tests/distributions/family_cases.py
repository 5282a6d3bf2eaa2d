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
NO_ENTROPY = ("entropy",)  # torch computes none
NO_MODE = ("mode",)  # torch computes none
NO_MOMENTS = ("mean", "mode", "variance", "stddev", "entropy")  # torch computes none


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


def _positive_families(rng: np.random.Generator) -> list[Case]:
    scale, shape = rng.uniform(0.5, 2, 3), rng.uniform(0.5, 3, (2, 1))
    alpha = np.array([[0.5], [1.5], [5.0]])  # Pareto's mean and variance inf below 1 and 2
    conc = np.array([0.5, 1.5, 4.0])  # InverseGamma's the same
    df1, df2 = np.array([1.5, 3.0, 7.0]), np.array([[1.5], [3.0], [9.0]])  # modes, moments nan
    return [
        Case("Weibull", {"scale": scale, "concentration": shape}, rng.uniform(0.1, 3, 3), CDF, QUANTILES, checks=VALUES_ONLY),
        Case("Weibull", {"scale": 1.5, "concentration": 2.0}, np.array([0.2, 1.0, 4.0]), checks=VALUES_ONLY),
        Case("Pareto", {"scale": scale, "alpha": alpha}, rng.uniform(2, 4, 3), CDF, QUANTILES, checks=VALUES_ONLY),
        Case("Pareto", {"scale": 1.0, "alpha": 3.0}, np.array([1.0, 2.0, 9.0]), CDF, checks=VALUES_ONLY),
        Case("HalfCauchy", {"scale": scale}, np.array([0.0, 0.5, 3.0]), CDF, UNIT_QUANTILES, checks=VALUES_ONLY),
        Case("HalfCauchy", {"scale": 1.5}, np.array([0.0, 1.0, 9.0]), CDF, checks=VALUES_ONLY),
        Case("InverseGamma", {"concentration": conc, "rate": shape}, rng.uniform(0.1, 4, 3), CDF, checks=VALUES_ONLY),
        Case("InverseGamma", {"concentration": 3.0, "rate": 2.0}, np.array([0.2, 1.0, 5.0]), checks=VALUES_ONLY),
        Case("FisherSnedecor", {"df1": df1, "df2": df2}, rng.uniform(0.1, 4, 3), skip=NO_ENTROPY, checks=VALUES_ONLY),
        Case("FisherSnedecor", {"df1": 5.0, "df2": 12.0}, np.array([0.2, 1.0, 5.0]), skip=NO_ENTROPY, checks=VALUES_ONLY),
    ]  # fmt: skip


def _unit_interval_families(rng: np.random.Generator) -> list[Case]:
    c1 = np.array([0.7, 2.0, 3.5])  # below 1: Kumaraswamy's mode is nan there
    kumaraswamy = {"concentration1": c1, "concentration0": rng.uniform(1.2, 3, (2, 1))}
    probs = np.array([0.1, 0.3, 0.7, 0.95])[:, None]  # away from ContinuousBernoulli's lims
    value = rng.uniform(0.05, 0.95, 3)
    return [
        Case("Kumaraswamy", kumaraswamy, value, CDF, QUANTILES, checks=VALUES_ONLY),
        Case("Kumaraswamy", {"concentration1": 2.0, "concentration0": 5.0}, np.array([0.1, 0.5, 0.9]), checks=VALUES_ONLY),
        Case("ContinuousBernoulli", {"probs": probs}, value, CDF, UNIT_QUANTILES, skip=NO_MODE, checks=VALUES_ONLY),
        Case("ContinuousBernoulli", {"logits": rng.normal(size=(2, 3))}, value, CDF, skip=NO_MODE, checks=VALUES_ONLY),
    ]  # fmt: skip


def _count_families(rng: np.random.Generator) -> list[Case]:
    count = np.array([0.0, 1.0, 2.5, 7.0])  # total_count 0: all mass at 0
    values = np.array([[0.0, 1.0, 4.0, 11.0], [0.0, 2.0, 0.0, 5.0]])
    probs = rng.uniform(0.1, 2.0, (2, 4))
    return [
        Case("NegativeBinomial", {"total_count": count, "probs": rng.uniform(0.05, 0.9, (2, 1))}, values, skip=NO_ENTROPY),
        Case("NegativeBinomial", {"total_count": count, "logits": rng.normal(size=(2, 1))}, values, skip=NO_ENTROPY),
        Case("NegativeBinomial", {"total_count": 3.0, "probs": np.array([0.0, 0.2, 0.5, 0.8])}, values, skip=NO_ENTROPY),
        Case("OneHotCategoricalStraightThrough", {"probs": probs}, np.eye(4)[[[0], [3], [1]]]),
        Case("OneHotCategoricalStraightThrough", {"logits": probs}, np.eye(4)[[[2], [1]]]),
    ]  # fmt: skip


def _simplex_families(rng: np.random.Generator) -> list[Case]:
    temperature = np.array(0.7)
    simplex = np.array([[0.1, 0.2, 0.3, 0.4], [0.25, 0.25, 0.4, 0.1]])
    return [
        Case("LogisticNormal", {"loc": rng.normal(size=3), "scale": rng.uniform(0.5, 2, (2, 3))}, simplex, skip=NO_MOMENTS, checks=VALUES_ONLY),
        Case("LogisticNormal", {"loc": 0.5, "scale": 1.5}, np.array([[0.3, 0.7], [0.9, 0.1]]), skip=NO_MOMENTS, checks=VALUES_ONLY),
        Case("RelaxedBernoulli", {"temperature": temperature, "probs": rng.uniform(0.1, 0.9, (2, 3))}, rng.uniform(0.05, 0.95, 3), skip=NO_MOMENTS, checks=VALUES_ONLY),
        Case("RelaxedOneHotCategorical", {"temperature": temperature, "logits": rng.normal(size=(2, 4))}, simplex, skip=NO_MOMENTS, checks=VALUES_ONLY),
    ]  # fmt: skip


def _low_rank_normal(rng: np.random.Generator) -> list[Case]:
    args = {
        "loc": rng.normal(size=3),
        "cov_factor": rng.normal(size=(2, 1, 3, 2)),
        "cov_diag": rng.uniform(0.5, 2.0, (4, 3)),
    }
    return [Case("LowRankMultivariateNormal", args, rng.normal(size=(5, 1, 1, 3)))]


def _generalized_pareto(rng: np.random.Generator) -> list[Case]:
    """Only the device check: torch's log_prob raises on float64 parameters, so its values are
    checked in float32 and its moments in test_generalized_pareto."""
    args = {
        "loc": rng.normal(size=3),
        "scale": rng.uniform(0.5, 2, 3),
        "concentration": np.array([[-0.3], [0.0], [0.3]]),
    }
    value = args["loc"] + rng.uniform(0.1, 1.0, 3)
    return [Case("GeneralizedPareto", args, value, CDF, QUANTILES, checks=())]


def _von_mises(rng: np.random.Generator) -> list[Case]:
    """Only the device check: torch's log I0 / I1 are polynomial fits about 1e-7 off, beyond
    the float64 tolerance; test_von_mises compares with a tolerance for them."""
    args = {"loc": rng.normal(size=3), "concentration": rng.uniform(0.5, 5, (2, 1))}
    return [Case("VonMises", args, rng.normal(size=3), skip=NO_ENTROPY, checks=())]


# each family's table and the seed of its generator
FAMILIES = {
    _normal: 0, _location_scale: 1, _uniform: 2, _exponential: 3, _bernoulli: 4, _poisson: 5,
    _categorical: 6, _gamma: 8, _beta: 9, _student_t: 10, _multivariate_normal: 11,
    _positive_families: 12, _unit_interval_families: 13, _count_families: 14,
    _simplex_families: 15, _low_rank_normal: 16, _generalized_pareto: 17, _von_mises: 18,
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
