"""Constraints' checks and reprs against torch.distributions.constraints."""

import numpy as np
import pytest
import torch

import kael
from kael.distributions import constraints as C

VALUES = np.array([[-1.0, 0.0, 0.5, 1.0, 2.0], [0.2, 0.3, 0.5, 0.0, 0.0]])
CONSTRAINTS = [
    "real", "positive", "nonnegative", "unit_interval", "boolean", "nonnegative_integer",
    "positive_integer", "simplex", "real_vector", "one_hot",
]  # fmt: skip
FACTORIES = [
    ("interval", (0.0, 1.0)), ("half_open_interval", (0.0, 1.0)), ("greater_than", (0.5,)),
    ("greater_than_eq", (0.5,)), ("less_than", (0.5,)), ("integer_interval", (0, 1)),
]  # fmt: skip


def _same(kc, tc):
    got = kc.check(kael.tensor(VALUES)).numpy()
    np.testing.assert_array_equal(got, tc.check(torch.tensor(VALUES)).numpy())
    assert repr(kc) == repr(tc)
    assert (kc.is_discrete, kc.event_dim) == (tc.is_discrete, tc.event_dim)


@pytest.mark.parametrize("name", CONSTRAINTS)
def test_constraints_check_and_print_as_torch(name):
    _same(getattr(C, name), getattr(torch.distributions.constraints, name))


@pytest.mark.parametrize("name, bounds", FACTORIES, ids=[f[0] for f in FACTORIES])
def test_bounded_constraints_check_and_print_as_torch(name, bounds):
    _same(getattr(C, name)(*bounds), getattr(torch.distributions.constraints, name)(*bounds))


@pytest.mark.parametrize(
    "matrix", [np.eye(2), np.array([[2.0, 0.0], [1.0, 1.0]]), np.array([[1.0, 2.0], [2.0, 1.0]])]
)
@pytest.mark.parametrize("name", ["lower_cholesky", "lower_triangular", "positive_definite"])
def test_matrix_constraints_check_as_torch(name, matrix):
    got = getattr(C, name).check(kael.tensor(matrix)).item()
    assert got == getattr(torch.distributions.constraints, name).check(torch.tensor(matrix)).item()


def test_dependent_constraints_cannot_be_checked():
    assert C.is_dependent(C.dependent) and not C.is_dependent(C.real)
    with pytest.raises(kael.ValueError, match="Cannot determine validity of dependent"):
        C.dependent.check(kael.zeros(1))
    with pytest.raises(NotImplementedError, match="cannot be determined statically"):
        _ = C.dependent.event_dim
