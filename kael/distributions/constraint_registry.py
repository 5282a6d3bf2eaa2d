"""biject_to and transform_to, as torch.distributions.constraint_registry has them: each maps a
constraint to a Transform from unconstrained reals onto it. biject_to's transforms are
bijective (for samplers such as HMC); transform_to's need not be (for optimizers).
Both are keyed by the constraint's class: positive and greater_than(0) share one."""

from __future__ import annotations

import functools
import numbers
from collections.abc import Callable

from kael.distributions import constraints, transforms
from kael.runtime.errors import NotImplementedError, TypeError

__all__ = ["ConstraintRegistry", "biject_to", "transform_to"]

Factory = Callable[[constraints.Constraint], transforms.Transform]


class ConstraintRegistry:
    """A table from Constraint classes to factories building a Transform for an instance."""

    def __init__(self) -> None:
        self._registry: dict[type, Factory] = {}

    def register(self, constraint, factory: Factory | None = None):
        """Register `factory` for a Constraint subclass (or a singleton's class); used as a
        decorator when `factory` is omitted."""
        if factory is None:
            return lambda fn: self.register(constraint, fn)
        if isinstance(constraint, constraints.Constraint):
            constraint = type(constraint)
        if not (isinstance(constraint, type) and issubclass(constraint, constraints.Constraint)):
            raise TypeError(
                "Expected constraint to be either a Constraint subclass or instance, "
                f"but got {constraint}"
            )
        self._registry[constraint] = factory
        return factory

    def __call__(self, constraint: constraints.Constraint) -> transforms.Transform:
        """The transform onto `constraint`; NotImplementedError for an unregistered class."""
        factory = self._registry.get(type(constraint))
        if factory is None:
            raise NotImplementedError(f"Cannot transform {type(constraint).__name__} constraints")
        return factory(constraint)


biject_to = ConstraintRegistry()
transform_to = ConstraintRegistry()


def _register_both(*keys) -> Callable[[Factory], Factory]:
    """Register one factory for `keys` in both registries."""

    def decorator(factory: Factory) -> Factory:
        for key in keys:
            biject_to.register(key, factory)
            transform_to.register(key, factory)
        return factory

    return decorator


@_register_both(constraints.real)
def _to_real(constraint) -> transforms.Transform:
    return transforms.identity_transform


@_register_both(constraints.greater_than, constraints.greater_than_eq)
def _to_greater_than(constraint) -> transforms.Transform:
    shift = transforms.AffineTransform(constraint.lower_bound, 1)
    return transforms.ComposeTransform([transforms.ExpTransform(), shift])


@_register_both(constraints.less_than)
def _to_less_than(constraint) -> transforms.Transform:
    flip = transforms.AffineTransform(constraint.upper_bound, -1)
    return transforms.ComposeTransform([transforms.ExpTransform(), flip])


def _is(bound, number: float) -> bool:
    return isinstance(bound, numbers.Number) and bound == number


@_register_both(constraints.interval, constraints.half_open_interval)
def _to_interval(constraint) -> transforms.Transform:
    low, high = constraint.lower_bound, constraint.upper_bound
    if _is(low, 0) and _is(high, 1):
        return transforms.SigmoidTransform()
    affine = transforms.AffineTransform(low, high - low)
    return transforms.ComposeTransform([transforms.SigmoidTransform(), affine])


@biject_to.register(constraints.simplex)
def _biject_to_simplex(constraint) -> transforms.Transform:
    return transforms.StickBreakingTransform()


@transform_to.register(constraints.simplex)
def _transform_to_simplex(constraint) -> transforms.Transform:
    return transforms.SoftmaxTransform()


@transform_to.register(constraints.lower_cholesky)
def _transform_to_lower_cholesky(constraint) -> transforms.Transform:
    return transforms.LowerCholeskyTransform()


@transform_to.register(constraints.positive_definite)
@transform_to.register(constraints.positive_semidefinite)
def _transform_to_positive_definite(constraint) -> transforms.Transform:
    return transforms.PositiveDefiniteTransform()


@_register_both(constraints.corr_cholesky)
def _to_corr_cholesky(constraint) -> transforms.Transform:
    return transforms.CorrCholeskyTransform()


def _independent(registry: ConstraintRegistry, constraint) -> transforms.Transform:
    base = registry(constraint.base_constraint)
    return transforms.IndependentTransform(base, constraint.reinterpreted_batch_ndims)


def _cat(registry: ConstraintRegistry, constraint) -> transforms.Transform:
    parts = [registry(c) for c in constraint.cseq]
    return transforms.CatTransform(parts, constraint.dim, constraint.lengths)


def _stack(registry: ConstraintRegistry, constraint) -> transforms.Transform:
    return transforms.StackTransform([registry(c) for c in constraint.cseq], constraint.dim)


# constraints built of others: each registry builds the parts with its own transforms
for _registry in (biject_to, transform_to):
    _registry.register(constraints.independent, functools.partial(_independent, _registry))
    _registry.register(constraints.cat, functools.partial(_cat, _registry))
    _registry.register(constraints.stack, functools.partial(_stack, _registry))
