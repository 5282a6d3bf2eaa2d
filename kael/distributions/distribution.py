"""Distribution: the base of every kael distribution, with torch.distributions.Distribution's
surface (shapes, sampling, scoring, moments, expand, argument validation, repr).

kael has no autograd: rsample draws by the reparameterized formula (a deterministic
function of the parameters and parameter-free noise), so it equals sample; has_rsample says
what torch's does. Deviation: the base class expands generically (every tensor attribute
named in `_batched` is expanded to the new batch shape plus its own trailing dims, each
distribution named in `_nested` is expanded to it), where
torch's base raises and each family writes its own."""

from __future__ import annotations

import kael
from kael.distributions import constraints
from kael.distributions.utils import broadcast_all, lazy_property
from kael.frontend.tensor import Tensor
from kael.runtime import user_warning
from kael.runtime.errors import NotImplementedError, ValueError

__all__ = ["Distribution", "check_expandable"]


def _arg_text(value: Tensor) -> str:
    """A parameter as torch's repr shows it: its value when it has one element, else its size."""
    if value.numel() != 1:
        return repr(kael.Size(value.shape))
    return format(value) if value.dim() == 0 else str(value)


def check_expandable(shape: tuple[int, ...], target: tuple[int, ...]) -> None:
    """Raise torch's Tensor.expand ValueError where a tensor of `shape` cannot be expanded to
    `target` (a size other than 1 that differs from the target's, the rightmost reported)."""
    offset = len(target) - len(shape)
    for dim in reversed(range(max(offset, 0), len(target))):
        size, want = shape[dim - offset], target[dim]
        if size not in (1, want) and want != -1:
            raise ValueError(
                f"The expanded size of the tensor ({want}) must match the existing size ({size}) "
                f"at non-singleton dimension {dim}.  Target sizes: {list(target)}.  "
                f"Tensor sizes: {list(shape)}"
            )


class Distribution:
    """Abstract base of probability distributions: a batch of independent distributions of
    shape `batch_shape`, each over events of shape `event_shape`."""

    has_rsample = False
    has_enumerate_support = False
    _validate_args = __debug__
    _batched: tuple[str, ...] = ()  # tensor attributes that carry the batch dims (for expand)
    _nested: tuple[str, ...] = ()  # distributions of this one's batch shape (for expand)

    @staticmethod
    def set_default_validate_args(value: bool) -> None:
        """Turn argument validation on or off for distributions built without validate_args."""
        if value not in (True, False):
            raise ValueError(f"set_default_validate_args expects True or False, got {value!r}")
        Distribution._validate_args = value

    def __init__(
        self,
        batch_shape: tuple[int, ...] = (),
        event_shape: tuple[int, ...] = (),
        validate_args: bool | None = None,
    ) -> None:
        self._batch_shape = kael.Size(batch_shape)
        self._event_shape = kael.Size(event_shape)
        if validate_args is not None:
            self._validate_args = validate_args
        if self._validate_args:
            self._check_parameters()

    def _init_parameters(self, *values, validate_args: bool | None) -> None:
        """The constructor of a family of elementwise parameters: `values` broadcast together
        into the attributes `_batched` names (in order), the batch shape theirs."""
        params = broadcast_all(*values)
        for name, value in zip(self._batched, params, strict=True):
            setattr(self, name, value)
        Distribution.__init__(self, tuple(params[0].shape), validate_args=validate_args)

    def _check_parameters(self) -> None:
        try:
            arg_constraints = self.arg_constraints
        except NotImplementedError:
            arg_constraints = {}
            user_warning.warn(
                f"{type(self)} does not define `arg_constraints`. Please set "
                "`arg_constraints = {}` or initialize the distribution with "
                "`validate_args=False` to turn off validation."
            )
        for param, constraint in arg_constraints.items():
            if constraints.is_dependent(constraint):
                continue
            if param not in self.__dict__ and isinstance(getattr(type(self), param), lazy_property):
                continue  # derived lazily from another parameter, which is checked
            value = getattr(self, param)
            if not bool(constraint.check(value).all()):
                raise ValueError(
                    f"Expected parameter {param} ({type(value).__name__} of shape "
                    f"{tuple(value.shape)}) of distribution {self!r} to satisfy the constraint "
                    f"{constraint!r}, but found invalid values:\n{format(value)}"
                )

    def expand(self, batch_shape: tuple[int, ...], _instance=None) -> Distribution:
        """This distribution with its batch dims expanded to `batch_shape` (parameters are
        expanded views; no checks are repeated)."""
        batch_shape = kael.Size(batch_shape)
        new = type(self).__new__(type(self)) if _instance is None else _instance
        new.__dict__.update(self.__dict__)
        keep = len(self._batch_shape)
        for name in self._batched:
            if name in self.__dict__:
                value = self.__dict__[name]
                target = batch_shape + tuple(value.shape[keep:])
                check_expandable(tuple(value.shape), target)
                new.__dict__[name] = value.expand(target)
        for name in self._nested:
            new.__dict__[name] = self.__dict__[name].expand(batch_shape)
        Distribution.__init__(new, batch_shape, self._event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def batch_shape(self) -> kael.Size:
        """The shape over which parameters are batched."""
        return self._batch_shape

    @property
    def event_shape(self) -> kael.Size:
        """The shape of a single sample (without batching)."""
        return self._event_shape

    @property
    def arg_constraints(self) -> dict[str, constraints.Constraint]:
        """Each parameter's name and the constraint it must satisfy."""
        raise NotImplementedError

    @property
    def support(self) -> constraints.Constraint:
        """The constraint every sample satisfies."""
        raise NotImplementedError

    @property
    def mean(self) -> Tensor:
        """The mean, of shape batch_shape + event_shape."""
        raise NotImplementedError

    @property
    def mode(self) -> Tensor:
        """The mode, of shape batch_shape + event_shape."""
        raise NotImplementedError(f"{type(self)} does not implement mode")

    @property
    def variance(self) -> Tensor:
        """The variance, of shape batch_shape + event_shape."""
        raise NotImplementedError

    @property
    def stddev(self) -> Tensor:
        """The standard deviation: the square root of the variance."""
        return self.variance.sqrt()

    def sample(self, sample_shape: tuple[int, ...] = ()) -> Tensor:
        """Samples of shape sample_shape + batch_shape + event_shape."""
        return self.rsample(sample_shape)

    def rsample(self, sample_shape: tuple[int, ...] = ()) -> Tensor:
        """Samples drawn by the reparameterized formula (equal to sample: kael has no autograd)."""
        raise NotImplementedError

    def sample_n(self, n: int) -> Tensor:
        """Deprecated as in torch: sample((n,))."""
        user_warning.warn(
            "`sample_n(n)` will be deprecated. Use `sample((n,))` instead.", FutureWarning
        )
        return self.sample((n,))

    def log_prob(self, value: Tensor) -> Tensor:
        """The log of the density (or mass) at `value`."""
        raise NotImplementedError

    def cdf(self, value: Tensor) -> Tensor:
        """The cumulative distribution function at `value`."""
        raise NotImplementedError

    def icdf(self, value: Tensor) -> Tensor:
        """The inverse cumulative distribution function at `value`."""
        raise NotImplementedError

    def enumerate_support(self, expand: bool = True) -> Tensor:
        """Every value of a discrete support along dim 0, then batch_shape (or 1s)."""
        raise NotImplementedError

    def entropy(self) -> Tensor:
        """The entropy, of shape batch_shape."""
        raise NotImplementedError

    def perplexity(self) -> Tensor:
        """exp(entropy)."""
        return self.entropy().exp()

    def _extended_shape(self, sample_shape: tuple[int, ...] = ()) -> kael.Size:
        """sample_shape + batch_shape + event_shape."""
        return kael.Size(tuple(sample_shape) + self._batch_shape + self._event_shape)

    def _validate_sample(self, value: Tensor) -> None:
        """Raise ValueError unless `value` is a tensor whose rightmost dims match the event
        shape, broadcasts with batch_shape + event_shape and lies in the support."""
        if not isinstance(value, Tensor):
            raise ValueError("The value argument to log_prob must be a Tensor")
        actual = kael.Size(value.shape)
        start = len(actual) - len(self._event_shape)
        if actual[start:] != self._event_shape:
            raise ValueError(
                "The right-most size of value must match event_shape: "
                f"{actual} vs {self._event_shape}."
            )
        expected = kael.Size(self._batch_shape + self._event_shape)
        for i, j in zip(reversed(actual), reversed(expected)):
            if i != 1 and j != 1 and i != j:
                raise ValueError(
                    "Value is not broadcastable with batch_shape+event_shape: "
                    f"{actual} vs {expected}."
                )
        support = self.support
        if not bool(support.check(value).all()):
            raise ValueError(
                f"Expected value argument ({type(value).__name__} of shape {tuple(value.shape)}) "
                f"to be within the support ({support!r}) of the distribution {self!r}, "
                f"but found invalid values:\n{format(value)}"
            )

    def _checked(self, value: Tensor) -> Tensor:
        """`value`, validated first when this distribution validates its arguments."""
        if self._validate_args:
            self._validate_sample(value)
        return value

    def __repr__(self) -> str:
        names = [k for k in self.arg_constraints if k in self.__dict__]
        args = ", ".join(f"{k}: {_arg_text(self.__dict__[k])}" for k in names)
        return f"{type(self).__name__}({args})"
