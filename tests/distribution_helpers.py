"""Shared checks for tests/distributions: one family built in kael and in torch from the same
NumPy parameters, and its values compared (dtype, shape and numbers)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np
import pytest
import torch

import kael
import kael.distributions

DTYPES = {"float32": (kael.float32, torch.float32), "float64": (kael.float64, torch.float64)}
TOL = {"float32": {"rtol": 1e-4, "atol": 1e-5}, "float64": {"rtol": 1e-9, "atol": 1e-10}}
PROPERTIES = ("mean", "mode", "variance", "stddev")


def lib_args(lib, args: dict, dtype: str) -> dict:
    """`args` for kael or torch: NumPy arrays become tensors of `dtype`, the rest as given."""
    kd, td = DTYPES[dtype]
    target = kd if lib is kael else td
    return {
        k: lib.tensor(v, dtype=target) if isinstance(v, np.ndarray) else v for k, v in args.items()
    }


def pair(name: str, args: dict, dtype: str = "float32", **options):
    """(kael's distribution `name`, torch's) over the same parameters."""
    kd = getattr(kael.distributions, name)(**lib_args(kael, args, dtype), **options)
    td = getattr(torch.distributions, name)(**lib_args(torch, args, dtype), **options)
    return kd, td


def assert_matches(got, want, dtype: str = "float32", **tol) -> None:
    """A kael tensor equals a torch tensor: same shape, same dtype, close values (nan and
    inf where torch has them)."""
    assert tuple(got.shape) == tuple(want.shape), (got.shape, want.shape)
    assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1], (got.dtype, want.dtype)
    options = {**TOL[dtype], **tol}
    np.testing.assert_allclose(got.numpy(), want.numpy(), equal_nan=True, **options)


def torch_refusal(build_torch) -> str:
    """torch's parameter error up to its values, as a pattern for kael's message."""
    with pytest.raises(ValueError) as error:
        build_torch()
    return re.escape(str(error.value).split(", but found")[0].replace("torch.", "kael."))


def check_negated_parameter_refused(name: str, args: dict, bad: str) -> None:
    """Family `name` with parameter `bad` negated (validate_args=True) raises kael.ValueError
    worded as torch's; with `args` as given it builds, of torch's shapes."""
    negated = {**args, bad: -args[bad]}

    def build(lib, family):
        return getattr(family, name)(**lib_args(lib, negated, "float32"), validate_args=True)

    message = torch_refusal(lambda: build(torch, torch.distributions))
    with pytest.raises(kael.ValueError, match=message):
        build(kael, kael.distributions)
    kd, td = pair(name, args, validate_args=True)
    assert (kd.batch_shape, kd.event_shape) == (tuple(td.batch_shape), tuple(td.event_shape))


def torch_value(td, what: str):
    """torch's property or method result, or NotImplementedError if it has none."""
    attr = getattr(td, what)
    return attr() if callable(attr) else attr


def check_summaries(kd, td, dtype: str, names=(*PROPERTIES, "entropy"), **tol) -> None:
    """mean, mode, variance, stddev, entropy (and shapes) as torch's."""
    assert kd.batch_shape == tuple(td.batch_shape)
    assert kd.event_shape == tuple(td.event_shape)
    assert kd.has_rsample == td.has_rsample
    assert kd.has_enumerate_support == td.has_enumerate_support
    for what in names:
        assert_matches(torch_value(kd, what), torch_value(td, what), dtype, **tol)


def check_scores(kd, td, value: np.ndarray, dtype: str, names=("log_prob",), **tol) -> None:
    """log_prob (and the other scores named) at `value` as torch's."""
    kt, tt = DTYPES[dtype]
    for what in names:
        got = getattr(kd, what)(kael.tensor(value, dtype=kt))
        want = getattr(td, what)(torch.tensor(value, dtype=tt))
        assert_matches(got, want, dtype, **tol)


def check_sample_shapes(kd, td, dtype=None) -> None:
    """Samples of several sample shapes have torch's shapes and dtypes."""
    for shape in [(), (3,), (2, 1)]:
        got, want = kd.sample(shape), td.sample(shape)
        assert tuple(got.shape) == tuple(want.shape)
        assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
        if kd.has_rsample:
            assert tuple(kd.rsample(shape).shape) == tuple(want.shape)


def check_moments(kd, td, n: int = 4000, sigmas: float = 5.0) -> None:
    """The sample mean of n draws lies within `sigmas` standard errors of torch's mean, and
    the sample variance within `sigmas` standard errors of torch's variance (estimated from
    the draws' fourth central moment)."""
    kael.manual_seed(1234)
    draws = kd.sample((n,)).double().numpy()
    mean, var = td.mean.double().numpy(), td.variance.double().numpy()
    np.testing.assert_array_less(np.abs(draws.mean(0) - mean), sigmas * np.sqrt(var / n) + 1e-12)
    centered = draws - draws.mean(0)
    m4 = (centered**4).mean(0)
    se_var = np.sqrt(np.maximum(m4 - centered.var(0) ** 2, 0) / n)
    np.testing.assert_array_less(np.abs(centered.var(0) - var), sigmas * se_var + 1e-12)


@dataclass
class Case:
    """One family's parameters (NumPy arrays or Python numbers) and points to score it at."""

    name: str
    args: dict
    value: np.ndarray | None = None
    scores: tuple = ("log_prob",)
    icdf_at: np.ndarray | None = None
    skip: tuple = ()  # summaries torch does not compute (NotImplementedError) or gets wrong
    options: dict = field(default_factory=dict)
    tol: dict = field(default_factory=dict)  # a looser float32 tolerance, where needed
    checks: tuple = ("values", "moments")  # the generic checks of test_families it takes
    label: str = ""  # its name in test ids (its number in the family when not given)


def check_family(case: Case, dtype: str) -> None:
    """Summaries, scores, icdf, expand and sample shapes of `case` against torch's."""
    kd, td = pair(case.name, case.args, dtype, **case.options)
    if any(not isinstance(v, np.ndarray) for v in case.args.values()):
        dtype = "float32"  # both hold Python-number parameters in the default dtype
    tol = case.tol if dtype == "float32" else {}
    names = [w for w in (*PROPERTIES, "entropy") if w not in case.skip]
    check_summaries(kd, td, dtype, names, **tol)
    if case.value is not None:
        check_scores(kd, td, case.value, dtype, case.scores, **tol)
    if case.icdf_at is not None:
        check_scores(kd, td, case.icdf_at, dtype, ("icdf",), **tol)
    shape = (2, *kd.batch_shape)
    expanded, texpanded = kd.expand(shape), td.expand(shape)
    check_summaries(expanded, texpanded, dtype, [w for w in names if w != "entropy"], **tol)
    if case.value is not None:
        check_scores(expanded, texpanded, expanded.sample().numpy(), dtype, **tol)
    check_sample_shapes(kd, td)


def check_case_moments(case: Case, n: int = 4000) -> None:
    """Sample moments of `case` (in float64) against torch's mean and variance."""
    kd, td = pair(case.name, case.args, "float64", **case.options)
    check_moments(kd, td, n)


__all__ = [
    "DTYPES", "PROPERTIES", "TOL", "Case", "assert_matches", "check_case_moments",
    "check_family", "check_moments", "check_negated_parameter_refused", "check_sample_shapes",
    "check_scores", "check_summaries", "lib_args", "pair", "torch_refusal", "torch_value",
]  # fmt: skip
