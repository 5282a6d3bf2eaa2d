"""biject_to and transform_to against torch.distributions' registries (and the constraints
they need that kael.distributions.constraints gained with them: corr_cholesky,
positive_semidefinite, cat and stack)."""

import numpy as np
import pytest
import torch
from distribution_helpers import assert_matches

import kael
import kael.distributions as D
from kael.distributions import constraints as C
from kael.distributions.constraint_registry import ConstraintRegistry

rng = np.random.default_rng(41)
TC = torch.distributions.constraints

# id: (constraint in a constraints namespace, input shape)
CONSTRAINTS = {
    "real": (lambda c: c.real, (2, 3)),
    "positive": (lambda c: c.positive, (2, 3)),
    "nonnegative": (lambda c: c.nonnegative, (3,)),
    "greater_than": (lambda c: c.greater_than(2.0), (3,)),
    "greater_than_eq": (lambda c: c.greater_than_eq(-1.0), (3,)),
    "less_than": (lambda c: c.less_than(1.5), (3,)),
    "unit_interval": (lambda c: c.unit_interval, (2, 3)),
    "interval": (lambda c: c.interval(-2.0, 3.0), (3,)),
    "half_open_interval": (lambda c: c.half_open_interval(0.0, 1.0), (3,)),
    "simplex": (lambda c: c.simplex, (2, 3)),
    "real_vector": (lambda c: c.real_vector, (2, 3)),
    "independent": (lambda c: c.independent(c.positive, 1), (2, 3)),
    "corr_cholesky": (lambda c: c.corr_cholesky, (2, 3)),
    "cat": (lambda c: c.cat([c.positive, c.real, c.unit_interval], 0, [2, 1, 1]), (4, 2)),
    "stack": (lambda c: c.stack([c.positive, c.unit_interval], -1), (3, 2)),
    "lower_cholesky": (lambda c: c.lower_cholesky, (2, 3, 3)),
    "positive_definite": (lambda c: c.positive_definite, (2, 3, 3)),
    "positive_semidefinite": (lambda c: c.positive_semidefinite, (3, 3)),
}
REGISTRIES = {
    "biject_to": (D.biject_to, torch.distributions.biject_to),
    "transform_to": (D.transform_to, torch.distributions.transform_to),
}


@pytest.mark.parametrize("registry", REGISTRIES)
@pytest.mark.parametrize("name", CONSTRAINTS)
def test_transform_onto_each_constraint_matches_torch(name, registry):
    build, shape = CONSTRAINTS[name]
    ours, theirs = REGISTRIES[registry]
    constraint = build(C)
    try:
        want = theirs(build(TC))
    except NotImplementedError:
        with pytest.raises(kael.NotImplementedError, match="Cannot transform _\\w+ constraints"):
            ours(constraint)
        return
    got = ours(constraint)
    assert repr(got) == repr(want)
    x = rng.normal(size=shape)
    y = got(kael.tensor(x))
    assert_matches(y, want(torch.tensor(x)), "float64")
    assert bool(constraint.check(y).all())
    assert_matches(got.inv(y), want.inv(torch.tensor(y.numpy())), "float64", rtol=1e-7)


def test_unregistered_constraints_raise_not_implemented_with_torchs_message():
    with pytest.raises(
        kael.NotImplementedError, match="Cannot transform _LowerCholesky constraints"
    ):
        D.biject_to(C.lower_cholesky)
    with pytest.raises(kael.NotImplementedError, match="Cannot transform _Boolean constraints"):
        D.transform_to(C.boolean)


def test_a_registry_takes_a_constraint_class_or_instance_and_refuses_anything_else():
    registry = ConstraintRegistry()

    @registry.register(C.positive)
    def _exp(constraint):
        return D.ExpTransform()

    registry.register(C.interval, lambda constraint: D.SigmoidTransform())
    assert registry(C.greater_than(3.0)) == D.ExpTransform()
    assert registry(C.unit_interval) == D.SigmoidTransform()
    with pytest.raises(kael.TypeError, match="Expected constraint to be either a Constraint"):
        registry.register(float, _exp)
    with pytest.raises(kael.NotImplementedError, match="Cannot transform _Real constraints"):
        registry(C.real)


# the constraints added with the registries, checked as torch's check them
CHECKS = {
    "corr_cholesky-valid": (lambda c: c.corr_cholesky, np.array([[1.0, 0], [0.6, 0.8]])),
    "corr_cholesky-long-row": (lambda c: c.corr_cholesky, np.array([[1.0, 0], [0.6, 0.9]])),
    "corr_cholesky-upper": (lambda c: c.corr_cholesky, np.array([[0.6, 0.8], [0.0, 1.0]])),
    "positive_semidefinite": (lambda c: c.positive_semidefinite, np.array([[[1.0, 1], [1, 1]], [[1, 2], [2, 1]]])),
    "positive_semidefinite-asym": (lambda c: c.positive_semidefinite, np.array([[1.0, 1], [0, 1]])),
    "cat": (lambda c: c.cat([c.positive, c.unit_interval], -1, [1, 2]), np.array([[1.0, 0.5, 2.0], [-1, 0, 1]])),
    "stack": (lambda c: c.stack([c.positive, c.real, c.unit_interval], 0), np.array([[1.0, -1], [3, 4], [0.5, 2]])),
    "stack-vectors": (lambda c: c.stack([c.simplex, c.real_vector], 0), np.array([[0.3, 0.7], [5.0, -1]])),
}  # fmt: skip


@pytest.mark.parametrize("name", CHECKS)
def test_new_constraints_check_as_torchs(name):
    build, value = CHECKS[name]
    ours, theirs = build(C), build(TC)
    got, want = ours.check(kael.tensor(value)), theirs.check(torch.tensor(value))
    assert tuple(got.shape) == tuple(want.shape)
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    assert (ours.event_dim, ours.is_discrete) == (theirs.event_dim, theirs.is_discrete)
    assert repr(ours) == repr(theirs)


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: C.cat([C.real], 0, [1, 2]), r"lengths \(2\) must match cseq \(1\)"),
        (lambda: C.stack([C.real, 1.0]), "All elements of cseq must be Constraint instances"),
        (lambda: C.cat([C.real], 2).check(kael.zeros(2)), "dim 2 out of range for value with 1"),
        (lambda: C.stack([C.real], -3).check(kael.zeros(2, 2)), "dim -3 out of range for value"),
    ],
)
def test_bad_cat_and_stack_constraints_are_refused(build, message):
    with pytest.raises(kael.ValueError, match=message):
        build()
