"""Constraints: what a distribution's parameters and samples must satisfy, as
torch.distributions.constraints has them. `check(value)` returns a bool tensor over the
value's batch dimensions (its rightmost `event_dim` dimensions are reduced)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import kael
from kael.frontend.tensor import Tensor
from kael.runtime.errors import ValueError

__all__ = [
    "Constraint", "MixtureSameFamilyConstraint", "boolean", "cat", "corr_cholesky", "dependent",
    "dependent_property", "greater_than", "greater_than_eq", "half_open_interval", "independent",
    "integer_interval", "interval", "is_dependent", "less_than", "lower_cholesky",
    "lower_triangular", "multinomial", "nonnegative", "nonnegative_integer", "one_hot", "positive",
    "positive_definite", "positive_integer", "positive_semidefinite", "real", "real_vector",
    "simplex", "square", "stack", "symmetric", "unit_interval",
]  # fmt: skip


class Constraint:
    """A region of valid values: `check` says, per batch element, whether a value lies in it."""

    is_discrete = False
    event_dim = 0

    def check(self, value: Tensor) -> Tensor:
        """A bool tensor: True where `value` satisfies the constraint."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return type(self).__name__[1:] + "()"


class _Dependent(Constraint):
    """A placeholder for a constraint that depends on other parameters: it cannot be checked."""

    def __init__(self, *, is_discrete=NotImplemented, event_dim=NotImplemented) -> None:
        self._is_discrete = is_discrete
        self._event_dim = event_dim

    @property
    def is_discrete(self) -> bool:
        if self._is_discrete is NotImplemented:
            raise NotImplementedError(".is_discrete cannot be determined statically")
        return self._is_discrete

    @property
    def event_dim(self) -> int:
        if self._event_dim is NotImplemented:
            raise NotImplementedError(".event_dim cannot be determined statically")
        return self._event_dim

    def __call__(self, *, is_discrete=NotImplemented, event_dim=NotImplemented) -> _Dependent:
        """A dependent constraint with these static attributes (the others kept)."""
        if is_discrete is NotImplemented:
            is_discrete = self._is_discrete
        if event_dim is NotImplemented:
            event_dim = self._event_dim
        return _Dependent(is_discrete=is_discrete, event_dim=event_dim)

    def check(self, value: Tensor) -> Tensor:
        raise ValueError("Cannot determine validity of dependent constraint")


def is_dependent(constraint: Constraint) -> bool:
    """Whether `constraint` is a dependent (uncheckable) one."""
    return isinstance(constraint, _Dependent)


class _DependentProperty(property, _Dependent):
    """A property that is a dependent constraint on the class and the real constraint on an
    instance (Uniform's support: interval(low, high))."""

    def __init__(
        self,
        fn: Callable[..., Any] | None = None,
        *,
        is_discrete: bool | None = NotImplemented,
        event_dim: int | None = NotImplemented,
    ) -> None:
        property.__init__(self, fn)
        self._is_discrete = is_discrete
        self._event_dim = event_dim

    def __call__(self, fn: Callable[..., Any]) -> _DependentProperty:
        return _DependentProperty(fn, is_discrete=self._is_discrete, event_dim=self._event_dim)


class _IndependentConstraint(Constraint):
    """`base_constraint` with its rightmost `reinterpreted_batch_ndims` batch dims made event
    dims: an element is valid when all of them are."""

    def __init__(self, base_constraint: Constraint, reinterpreted_batch_ndims: int) -> None:
        self.base_constraint = base_constraint
        self.reinterpreted_batch_ndims = reinterpreted_batch_ndims

    @property
    def is_discrete(self) -> bool:
        return self.base_constraint.is_discrete

    @property
    def event_dim(self) -> int:
        return self.base_constraint.event_dim + self.reinterpreted_batch_ndims

    def check(self, value: Tensor) -> Tensor:
        result = self.base_constraint.check(value)
        if result.dim() < self.reinterpreted_batch_ndims:
            raise ValueError(f"Expected value.dim() >= {self.event_dim} but got {value.dim()}")
        return _all_rightmost(result, self.reinterpreted_batch_ndims)

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__[1:]}({self.base_constraint!r}, {self.reinterpreted_batch_ndims})"
        )


class MixtureSameFamilyConstraint(Constraint):
    """A mixture's support: a value is valid when it is valid for every component."""

    def __init__(self, base_constraint: Constraint) -> None:
        self.base_constraint = base_constraint

    @property
    def is_discrete(self) -> bool:
        return self.base_constraint.is_discrete

    @property
    def event_dim(self) -> int:
        return self.base_constraint.event_dim

    def check(self, value: Tensor) -> Tensor:
        if value.dim() < self.event_dim:
            raise ValueError(f"Expected value.dim() >= {self.event_dim} but got {value.dim()}")
        result = self.base_constraint.check(value.unsqueeze(-1 - self.event_dim))
        return _all_rightmost(result, result.dim() - (value.dim() - self.event_dim))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.base_constraint!r})"


def _all_rightmost(result: Tensor, ndims: int) -> Tensor:
    """`result` reduced by all() over its rightmost `ndims` dimensions."""
    if ndims == 0:
        return result
    return result.reshape(tuple(result.shape[: result.dim() - ndims]) + (-1,)).all(-1)


class _Bounded(Constraint):
    """A constraint set by named bounds, printed as torch prints them:
    Interval(lower_bound=0.0, upper_bound=1.0)."""

    bounds: tuple[str, ...] = ()

    def __init__(self, *values) -> None:
        for name, value in zip(self.bounds, values, strict=True):
            setattr(self, name, value)

    def __repr__(self) -> str:
        args = ", ".join(f"{name}={getattr(self, name)}" for name in self.bounds)
        return f"{type(self).__name__[1:]}({args})"


def _is_integer(value: Tensor) -> Tensor:
    return value % 1 == 0


class _Boolean(Constraint):
    is_discrete = True

    def check(self, value: Tensor) -> Tensor:
        return (value == 0) | (value == 1)


class _OneHot(Constraint):
    is_discrete = True
    event_dim = 1

    def check(self, value: Tensor) -> Tensor:
        is_boolean = (value == 0) | (value == 1)
        return is_boolean.all(-1) & (value.sum(-1) == 1)


class _IntegerInterval(_Bounded):
    is_discrete = True
    bounds = ("lower_bound", "upper_bound")

    def check(self, value: Tensor) -> Tensor:
        return _is_integer(value) & (self.lower_bound <= value) & (value <= self.upper_bound)


class _IntegerGreaterThan(_Bounded):
    is_discrete = True
    bounds = ("lower_bound",)

    def check(self, value: Tensor) -> Tensor:
        return _is_integer(value) & (value >= self.lower_bound)


class _Real(Constraint):
    def check(self, value: Tensor) -> Tensor:
        return value == value  # False only at NaN


class _GreaterThan(_Bounded):
    bounds = ("lower_bound",)

    def check(self, value: Tensor) -> Tensor:
        return self.lower_bound < value


class _GreaterThanEq(_Bounded):
    bounds = ("lower_bound",)

    def check(self, value: Tensor) -> Tensor:
        return self.lower_bound <= value


class _LessThan(_Bounded):
    bounds = ("upper_bound",)

    def check(self, value: Tensor) -> Tensor:
        return value < self.upper_bound


class _Interval(_Bounded):
    bounds = ("lower_bound", "upper_bound")

    def check(self, value: Tensor) -> Tensor:
        return (self.lower_bound <= value) & (value <= self.upper_bound)


class _HalfOpenInterval(_Bounded):
    bounds = ("lower_bound", "upper_bound")

    def check(self, value: Tensor) -> Tensor:
        return (self.lower_bound <= value) & (value < self.upper_bound)


class _Simplex(Constraint):
    event_dim = 1

    def check(self, value: Tensor) -> Tensor:
        return (value >= 0).all(-1) & ((value.sum(-1) - 1).abs() < 1e-6)


class _Multinomial(_Bounded):
    is_discrete = True
    event_dim = 1
    bounds = ("upper_bound",)

    def check(self, value: Tensor) -> Tensor:
        return (value >= 0).all(-1) & (value.sum(-1) <= self.upper_bound)

    def __repr__(self) -> str:
        return "Multinomial()"  # torch's: the bound is not printed


class _LowerTriangular(Constraint):
    event_dim = 2

    def check(self, value: Tensor) -> Tensor:
        return _all_rightmost(value.tril() == value, 2)


class _LowerCholesky(_LowerTriangular):
    def check(self, value: Tensor) -> Tensor:
        positive_diagonal = (value.diagonal(dim1=-2, dim2=-1) > 0).all(-1)
        return super().check(value) & positive_diagonal


class _Square(Constraint):
    event_dim = 2

    def check(self, value: Tensor) -> Tensor:
        square = value.shape[-2] == value.shape[-1]
        return kael.full(tuple(value.shape[:-2]), square, dtype=kael.bool, device=value.device)


class _Symmetric(_Square):
    def check(self, value: Tensor) -> Tensor:
        square = super().check(value)
        if not bool(square.all()):
            return square
        return _all_rightmost(kael.isclose(value, value.mT, atol=1e-6), 2)


class _PositiveDefinite(_Symmetric):
    def check(self, value: Tensor) -> Tensor:
        symmetric = super().check(value)
        if not bool(symmetric.all()):
            return symmetric
        return kael.linalg.cholesky_ex(value).info == 0


class _CorrCholesky(_LowerCholesky):
    """Lower Cholesky factors whose rows have unit Euclidean norm (of correlation matrices)."""

    def check(self, value: Tensor) -> Tensor:
        tol = kael.finfo(value.dtype).eps * value.shape[-1] * 10  # torch's fudge factor
        unit_rows = ((value.pow(2).sum(-1).sqrt() - 1.0).abs() <= tol).all(-1)
        return super().check(value) & unit_rows


class _PositiveSemidefinite(_Symmetric):
    def check(self, value: Tensor) -> Tensor:
        symmetric = super().check(value)
        if not bool(symmetric.all()):
            return symmetric
        return (kael.linalg.eigvalsh(value) >= 0).all(-1)


def _constraint_list(cseq) -> list[Constraint]:
    if not all(isinstance(c, Constraint) for c in cseq):
        raise ValueError("All elements of cseq must be Constraint instances")
    return list(cseq)


def _check_dim(dim: int, value: Tensor) -> None:
    if not -value.dim() <= dim < value.dim():
        raise ValueError(f"dim {dim} out of range for value with {value.dim()} dimensions")


class _Joined(Constraint):
    """Constraints `cseq` applied to slices of dim `dim` of a value, their checks joined back."""

    def __init__(self, cseq, dim: int = 0) -> None:
        self.cseq = _constraint_list(cseq)
        self.dim = dim

    @property
    def is_discrete(self) -> bool:
        return any(c.is_discrete for c in self.cseq)

    @property
    def event_dim(self) -> int:
        return max(c.event_dim for c in self.cseq)


class _Cat(_Joined):
    """cseq[i] applied to the i-th slice (of lengths[i]) of dim `dim`, as torch.cat joins them."""

    def __init__(self, cseq, dim: int = 0, lengths=None) -> None:
        super().__init__(cseq, dim)
        self.lengths = [1] * len(self.cseq) if lengths is None else list(lengths)
        if len(self.lengths) != len(self.cseq):
            raise ValueError(f"lengths ({len(self.lengths)}) must match cseq ({len(self.cseq)})")

    def check(self, value: Tensor) -> Tensor:
        _check_dim(self.dim, value)
        starts = [sum(self.lengths[:i]) for i in range(len(self.lengths))]
        checks = [
            c.check(value.narrow(self.dim, start, n))
            for c, start, n in zip(self.cseq, starts, self.lengths, strict=True)
        ]
        return kael.cat(checks, self.dim)


class _Stack(_Joined):
    """cseq[i] applied to the i-th entry of dim `dim`, as torch.stack joins them."""

    @property
    def event_dim(self) -> int:
        dim = super().event_dim
        return dim + 1 if self.dim + dim < 0 else dim

    def check(self, value: Tensor) -> Tensor:
        _check_dim(self.dim, value)
        parts = [value.select(self.dim, i) for i in range(value.shape[self.dim])]
        return kael.stack([c.check(v) for v, c in zip(parts, self.cseq, strict=False)], self.dim)


dependent = _Dependent()
dependent_property = _DependentProperty
independent = _IndependentConstraint
boolean = _Boolean()
one_hot = _OneHot()
nonnegative_integer = _IntegerGreaterThan(0)
positive_integer = _IntegerGreaterThan(1)
integer_interval = _IntegerInterval
real = _Real()
real_vector = independent(real, 1)
positive = _GreaterThan(0.0)
nonnegative = _GreaterThanEq(0.0)
greater_than = _GreaterThan
greater_than_eq = _GreaterThanEq
less_than = _LessThan
multinomial = _Multinomial
unit_interval = _Interval(0.0, 1.0)
interval = _Interval
half_open_interval = _HalfOpenInterval
simplex = _Simplex()
lower_triangular = _LowerTriangular()
lower_cholesky = _LowerCholesky()
square = _Square()
symmetric = _Symmetric()
positive_definite = _PositiveDefinite()
positive_semidefinite = _PositiveSemidefinite()
corr_cholesky = _CorrCholesky()
cat = _Cat
stack = _Stack
