"""Transforms: invertible maps with computable log |det Jacobian|, as torch.distributions.transforms
has them. A Transform maps values of its `domain` to its `codomain`; `inv` is its (cached)
inverse; TransformedDistribution and the constraint registries build on them.

Deviation: where torch raises AssertionError (CatTransform's and StackTransform's argument
checks), kael raises kael.ValueError with torch's message. `with_cache` rebuilds any transform
from its constructor arguments, where torch's base raises NotImplementedError for a subclass
that defines no with_cache of its own."""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence

import kael
from kael.distributions import constraints
from kael.distributions.utils import broadcast_all, sum_rightmost
from kael.frontend.tensor import Tensor
from kael.runtime.errors import NotImplementedError, ValueError

__all__ = [
    "AbsTransform", "AffineTransform", "CatTransform", "ComposeTransform",
    "CorrCholeskyTransform", "CumulativeDistributionTransform", "ExpTransform",
    "IndependentTransform", "LowerCholeskyTransform", "PositiveDefiniteTransform",
    "PowerTransform", "ReshapeTransform", "SigmoidTransform", "SoftmaxTransform",
    "SoftplusTransform", "StackTransform", "StickBreakingTransform", "TanhTransform", "Transform",
    "identity_transform",
]  # fmt: skip

_softplus = kael.nn.functional.softplus
_pad = kael.nn.functional.pad


class Transform:
    """An invertible map x -> y with log |dy/dx|; `cache_size=1` remembers the last (x, y)
    pair so that inverting a value just produced returns its input exactly."""

    bijective = False
    domain: constraints.Constraint
    codomain: constraints.Constraint

    def __init__(self, cache_size: int = 0) -> None:
        if cache_size not in (0, 1):
            raise ValueError("cache_size must be 0 or 1")
        self._cache_size = cache_size
        self._inv: Transform | None = None
        self._cached_x_y: tuple = (None, None)

    def _init_args(self) -> tuple:
        """The constructor arguments (before cache_size) that rebuild this transform."""
        return ()

    def with_cache(self, cache_size: int = 1) -> Transform:
        """This transform with a cache of `cache_size` (itself when it already has it)."""
        if self._cache_size == cache_size:
            return self
        return type(self)(*self._init_args(), cache_size=cache_size)

    @property
    def event_dim(self) -> int:
        """The number of rightmost dims one event takes (domain's and codomain's, when equal)."""
        if self.domain.event_dim == self.codomain.event_dim:
            return self.domain.event_dim
        raise ValueError("Please use either .domain.event_dim or .codomain.event_dim")

    @property
    def inv(self) -> Transform:
        """The inverse transform (created once; t.inv.inv is t)."""
        if self._inv is None:
            self._inv = _InverseTransform(self)
        return self._inv

    @property
    def sign(self) -> int | Tensor:
        """The sign of the Jacobian's determinant, for bijective univariate transforms."""
        raise NotImplementedError

    def __eq__(self, other: object) -> bool:
        return self is other

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    __hash__ = None  # as torch's: transforms compare by value, so they are not hashable

    def __call__(self, x: Tensor) -> Tensor:
        """y = t(x), returned from the cache when x is the cached input."""
        return self._through_cache(x, self._call, forward=True)

    def _inv_call(self, y: Tensor) -> Tensor:
        """x = t^-1(y), returned from the cache when y is the cached output."""
        return self._through_cache(y, self._inverse, forward=False)

    def _through_cache(self, value: Tensor, compute, forward: bool) -> Tensor:
        """compute(value), or the other side of the cached (x, y) pair when `value` is its x
        (`forward`) or its y."""
        if self._cache_size == 0:
            return compute(value)
        known, other = self._cached_x_y if forward else reversed(self._cached_x_y)
        if value is known:
            return other
        result = compute(value)
        self._cached_x_y = (value, result) if forward else (result, value)
        return result

    def _call(self, x: Tensor) -> Tensor:
        raise NotImplementedError

    def _inverse(self, y: Tensor) -> Tensor:
        raise NotImplementedError

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        """log |dy/dx| at the input x and its output y."""
        raise NotImplementedError

    def forward_shape(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        """The output shape for an input of `shape` (the same by default)."""
        return shape

    def inverse_shape(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        """The input shape for an output of `shape` (the same by default)."""
        return shape

    def __repr__(self) -> str:
        return type(self).__name__ + "()"


class _InverseTransform(Transform):
    """The inverse of a transform (reach it through `Transform.inv`)."""

    def __init__(self, transform: Transform) -> None:
        super().__init__(cache_size=transform._cache_size)
        self._inv = transform

    @constraints.dependent_property(is_discrete=False)
    def domain(self) -> constraints.Constraint:
        return self._inv.codomain

    @constraints.dependent_property(is_discrete=False)
    def codomain(self) -> constraints.Constraint:
        return self._inv.domain

    @property
    def bijective(self) -> bool:
        return self._inv.bijective

    @property
    def sign(self) -> int | Tensor:
        return self._inv.sign

    @property
    def inv(self) -> Transform:
        return self._inv

    def with_cache(self, cache_size: int = 1) -> Transform:
        return self.inv.with_cache(cache_size).inv

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _InverseTransform) and self._inv == other._inv

    def __call__(self, x: Tensor) -> Tensor:
        return self._inv._inv_call(x)

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return -self._inv.log_abs_det_jacobian(y, x)

    def forward_shape(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        return self._inv.inverse_shape(shape)

    def inverse_shape(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        return self._inv.forward_shape(shape)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._inv!r})"


def _widened(constraint: constraints.Constraint, event_dim: int) -> constraints.Constraint:
    """`constraint` with extra rightmost batch dims made event dims up to `event_dim`."""
    if event_dim > constraint.event_dim:
        return constraints.independent(constraint, event_dim - constraint.event_dim)
    return constraint


def _chain_end(parts: list[Transform], start: str, end: str) -> constraints.Constraint:
    """The `end` constraint ("domain" or "codomain") of the last of `parts`, walked from each
    part's `start` to its `end`, widened to every event dim the walk picks up."""
    if not parts:
        return constraints.real
    event_dim = getattr(parts[0], start).event_dim
    for part in parts:
        gained = getattr(part, end).event_dim - getattr(part, start).event_dim
        event_dim = max(event_dim + gained, getattr(part, end).event_dim)
    return _widened(getattr(parts[-1], end), event_dim)


class ComposeTransform(Transform):
    """The chain of `parts`, applied first to last (the parts do their own caching)."""

    def __init__(self, parts: list[Transform], cache_size: int = 0) -> None:
        if cache_size:
            parts = [part.with_cache(cache_size) for part in parts]
        super().__init__(cache_size=cache_size)
        self.parts = list(parts)

    def _init_args(self) -> tuple:
        return (self.parts,)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ComposeTransform) and self.parts == other.parts

    @constraints.dependent_property(is_discrete=False)
    def domain(self) -> constraints.Constraint:
        return _chain_end(self.parts[::-1], "codomain", "domain")

    @constraints.dependent_property(is_discrete=False)
    def codomain(self) -> constraints.Constraint:
        return _chain_end(self.parts, "domain", "codomain")

    @property
    def bijective(self) -> bool:
        return all(part.bijective for part in self.parts)

    @property
    def sign(self) -> int | Tensor:
        sign = 1
        for part in self.parts:
            sign = sign * part.sign
        return sign

    @property
    def inv(self) -> Transform:
        if self._inv is None:
            inv = ComposeTransform([part.inv for part in reversed(self.parts)])
            inv._inv = self
            self._inv = inv
        return self._inv

    def __call__(self, x: Tensor) -> Tensor:
        for part in self.parts:
            x = part(x)
        return x

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        """The parts' terms, each summed over the dims the chain's event adds to its own."""
        if not self.parts:
            return kael.zeros_like(x)
        xs = [x]
        for part in self.parts[:-1]:
            xs.append(part(xs[-1]))
        xs.append(y)
        event_dim = self.domain.event_dim
        total = 0
        for part, x_in, y_out in zip(self.parts, xs[:-1], xs[1:], strict=True):
            term = part.log_abs_det_jacobian(x_in, y_out)
            total = total + sum_rightmost(term, event_dim - part.domain.event_dim)
            event_dim += part.codomain.event_dim - part.domain.event_dim
        return total

    def forward_shape(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        for part in self.parts:
            shape = part.forward_shape(shape)
        return shape

    def inverse_shape(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        for part in reversed(self.parts):
            shape = part.inverse_shape(shape)
        return shape

    def __repr__(self) -> str:
        inner = ",\n    ".join(repr(part) for part in self.parts)
        return f"{type(self).__name__}(\n    {inner}\n)"


identity_transform = ComposeTransform([])


def _check_event_dims(value: Tensor, event_dim: int) -> None:
    if value.dim() < event_dim:
        raise ValueError("Too few dimensions on input")


class IndependentTransform(Transform):
    """`base_transform` with its `reinterpreted_batch_ndims` rightmost batch dims made event
    dims: values are unchanged, log_abs_det_jacobian sums over them."""

    def __init__(
        self, base_transform: Transform, reinterpreted_batch_ndims: int, cache_size: int = 0
    ) -> None:
        super().__init__(cache_size=cache_size)
        self.base_transform = base_transform.with_cache(cache_size)
        self.reinterpreted_batch_ndims = reinterpreted_batch_ndims

    def _init_args(self) -> tuple:
        return (self.base_transform, self.reinterpreted_batch_ndims)

    @constraints.dependent_property(is_discrete=False)
    def domain(self) -> constraints.Constraint:
        return constraints.independent(self.base_transform.domain, self.reinterpreted_batch_ndims)

    @constraints.dependent_property(is_discrete=False)
    def codomain(self) -> constraints.Constraint:
        return constraints.independent(self.base_transform.codomain, self.reinterpreted_batch_ndims)

    @property
    def bijective(self) -> bool:
        return self.base_transform.bijective

    @property
    def sign(self) -> int | Tensor:
        return self.base_transform.sign

    def _call(self, x: Tensor) -> Tensor:
        _check_event_dims(x, self.domain.event_dim)
        return self.base_transform(x)

    def _inverse(self, y: Tensor) -> Tensor:
        _check_event_dims(y, self.codomain.event_dim)
        return self.base_transform.inv(y)

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        term = self.base_transform.log_abs_det_jacobian(x, y)
        return sum_rightmost(term, self.reinterpreted_batch_ndims)

    def forward_shape(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        return self.base_transform.forward_shape(shape)

    def inverse_shape(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        return self.base_transform.inverse_shape(shape)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.base_transform!r}, {self.reinterpreted_batch_ndims})"


def _swap_event(shape: tuple[int, ...], old: kael.Size, new: kael.Size) -> kael.Size:
    """`shape` with its rightmost dims, which must be `old`, replaced by `new`."""
    if len(shape) < len(old):
        raise ValueError("Too few dimensions on input")
    cut = len(shape) - len(old)
    if tuple(shape[cut:]) != tuple(old):
        raise ValueError(f"Shape mismatch: expected {kael.Size(shape[cut:])} but got {old}")
    return kael.Size(tuple(shape[:cut]) + tuple(new))


class ReshapeTransform(Transform):
    """Reshapes the rightmost dims from `in_shape` to `out_shape` (same number of elements):
    a unit Jacobian."""

    bijective = True

    def __init__(
        self, in_shape: tuple[int, ...], out_shape: tuple[int, ...], cache_size: int = 0
    ) -> None:
        self.in_shape = kael.Size(in_shape)
        self.out_shape = kael.Size(out_shape)
        if self.in_shape.numel() != self.out_shape.numel():
            raise ValueError("in_shape, out_shape have different numbers of elements")
        super().__init__(cache_size=cache_size)

    def _init_args(self) -> tuple:
        return (self.in_shape, self.out_shape)

    @constraints.dependent_property
    def domain(self) -> constraints.Constraint:
        return constraints.independent(constraints.real, len(self.in_shape))

    @constraints.dependent_property
    def codomain(self) -> constraints.Constraint:
        return constraints.independent(constraints.real, len(self.out_shape))

    def _call(self, x: Tensor) -> Tensor:
        batch = tuple(x.shape[: x.dim() - len(self.in_shape)])
        return x.reshape(batch + tuple(self.out_shape))

    def _inverse(self, y: Tensor) -> Tensor:
        batch = tuple(y.shape[: y.dim() - len(self.out_shape)])
        return y.reshape(batch + tuple(self.in_shape))

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return x.new_zeros(tuple(x.shape[: x.dim() - len(self.in_shape)]))

    def forward_shape(self, shape: tuple[int, ...]) -> kael.Size:
        return _swap_event(shape, self.in_shape, self.out_shape)

    def inverse_shape(self, shape: tuple[int, ...]) -> kael.Size:
        return _swap_event(shape, self.out_shape, self.in_shape)


class _Stateless(Transform):
    """A transform without parameters: any two of the same class are equal."""

    def __eq__(self, other: object) -> bool:
        return isinstance(other, type(self))


class _Increasing(_Stateless):
    """An increasing elementwise bijection of the reals onto `codomain`."""

    domain = constraints.real
    bijective = True
    sign = +1


class ExpTransform(_Increasing):
    """y = exp(x)."""

    codomain = constraints.positive

    def _call(self, x: Tensor) -> Tensor:
        return x.exp()

    def _inverse(self, y: Tensor) -> Tensor:
        return y.log()

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return x


def _shape_of(value) -> tuple[int, ...]:
    return tuple(value.shape) if isinstance(value, Tensor) else ()


class PowerTransform(Transform):
    """y = x ** exponent, on positive values."""

    domain = constraints.positive
    codomain = constraints.positive
    bijective = True

    def __init__(self, exponent: Tensor | float, cache_size: int = 0) -> None:
        super().__init__(cache_size=cache_size)
        (self.exponent,) = broadcast_all(exponent)

    def _init_args(self) -> tuple:
        return (self.exponent,)

    @property
    def sign(self) -> Tensor:
        return self.exponent.sign()

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, PowerTransform):
            return False
        return bool(self.exponent.eq(other.exponent).all().item())

    def _call(self, x: Tensor) -> Tensor:
        return x.pow(self.exponent)

    def _inverse(self, y: Tensor) -> Tensor:
        return y.pow(1 / self.exponent)

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return (self.exponent * y / x).abs().log()

    def forward_shape(self, shape: tuple[int, ...]) -> kael.Size:
        return kael.broadcast_shapes(tuple(shape), _shape_of(self.exponent))

    inverse_shape = forward_shape


def _clamp_open_unit(p: Tensor) -> Tensor:
    """`p` clamped into [tiny, 1 - eps] of its dtype, so that logit(p) stays finite."""
    finfo = kael.finfo(p.dtype)
    return p.clamp(min=finfo.tiny, max=1.0 - finfo.eps)


class SigmoidTransform(_Increasing):
    """y = 1 / (1 + exp(-x)), clamped inside (0, 1); its inverse is logit(y)."""

    codomain = constraints.unit_interval

    def _call(self, x: Tensor) -> Tensor:
        return _clamp_open_unit(kael.sigmoid(x))

    def _inverse(self, y: Tensor) -> Tensor:
        y = _clamp_open_unit(y)
        return y.log() - (-y).log1p()

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return -_softplus(-x) - _softplus(x)


class SoftplusTransform(_Increasing):
    """y = log(1 + exp(x)) (linear above x = 20, as torch's softplus)."""

    codomain = constraints.positive

    def _call(self, x: Tensor) -> Tensor:
        return _softplus(x)

    def _inverse(self, y: Tensor) -> Tensor:
        return (-y).expm1().neg().log() + y

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return -_softplus(-x)


class TanhTransform(_Increasing):
    """y = tanh(x); the inverse is atanh, unclamped (use cache_size=1 near +-1)."""

    codomain = constraints.interval(-1.0, 1.0)

    def _call(self, x: Tensor) -> Tensor:
        return x.tanh()

    def _inverse(self, y: Tensor) -> Tensor:
        return kael.atanh(y)

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return 2.0 * (math.log(2.0) - x - _softplus(-2.0 * x))


class AbsTransform(_Stateless):
    """y = |x| (not bijective: the inverse returns the nonnegative root)."""

    domain = constraints.real
    codomain = constraints.positive

    def _call(self, x: Tensor) -> Tensor:
        return x.abs()

    def _inverse(self, y: Tensor) -> Tensor:
        return y


def _same_values(a, b) -> bool:
    """Two numbers or tensors (or one of each) equal everywhere."""
    if isinstance(a, numbers.Number) and isinstance(b, numbers.Number):
        return a == b
    return bool((a == b).all().item())


class AffineTransform(Transform):
    """y = loc + scale * x, over events of `event_dim` rightmost dims."""

    bijective = True

    def __init__(
        self,
        loc: Tensor | float,
        scale: Tensor | float,
        event_dim: int = 0,
        cache_size: int = 0,
    ) -> None:
        super().__init__(cache_size=cache_size)
        self.loc = loc
        self.scale = scale
        self._event_dim = event_dim

    def _init_args(self) -> tuple:
        return (self.loc, self.scale, self._event_dim)

    @property
    def event_dim(self) -> int:
        return self._event_dim

    @constraints.dependent_property(is_discrete=False)
    def domain(self) -> constraints.Constraint:
        return _widened(constraints.real, self._event_dim)

    @constraints.dependent_property(is_discrete=False)
    def codomain(self) -> constraints.Constraint:
        return _widened(constraints.real, self._event_dim)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, AffineTransform):
            return False
        return _same_values(self.loc, other.loc) and _same_values(self.scale, other.scale)

    @property
    def sign(self) -> int | Tensor:
        if isinstance(self.scale, numbers.Number):
            return (self.scale > 0) - (self.scale < 0)
        return self.scale.sign()

    def _call(self, x: Tensor) -> Tensor:
        return self.loc + self.scale * x

    def _inverse(self, y: Tensor) -> Tensor:
        return (y - self.loc) / self.scale

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        if isinstance(self.scale, numbers.Number):
            result = kael.full_like(x, math.log(abs(self.scale)))
        else:
            result = self.scale.abs().log()
        shape = tuple(x.shape)
        if self._event_dim:
            result = sum_rightmost(result, self._event_dim)
            shape = shape[: len(shape) - self._event_dim]
        return result.expand(shape)

    def forward_shape(self, shape: tuple[int, ...]) -> kael.Size:
        return kael.broadcast_shapes(tuple(shape), _shape_of(self.loc), _shape_of(self.scale))

    inverse_shape = forward_shape


def _tril_positions(n: int, diag: int) -> list[int]:
    """Row-major flat positions of an n x n matrix's entries on or below diagonal `diag`."""
    return [i * n + j for i in range(n) for j in range(n) if j < i + diag + 1]


def _tril_to_vec(mat: Tensor, diag: int) -> Tensor:
    """The entries of `mat` on or below diagonal `diag`, in row order (torch's
    tril_matrix_to_vec)."""
    n = mat.shape[-1]
    flat = mat.reshape(tuple(mat.shape[:-2]) + (n * n,))
    index = kael.tensor(_tril_positions(n, diag), dtype=kael.int64, device=mat.device)
    return flat.index_select(-1, index)


def _vec_to_tril(vec: Tensor, n: int, diag: int) -> Tensor:
    """The n x n matrix holding `vec` on and below diagonal `diag` in row order, zeros above
    (torch's vec_to_tril_matrix)."""
    length = vec.shape[-1]
    source = [length] * (n * n)  # position `length` of the padded vec holds a zero
    for k, position in enumerate(_tril_positions(n, diag)):
        source[position] = k
    padded = _pad(vec, [0, 1], value=0.0)
    index = kael.tensor(source, dtype=kael.int64, device=vec.device)
    return padded.index_select(-1, index).reshape(tuple(vec.shape[:-1]) + (n, n))


def _corr_size(length: int) -> int:
    """D such that D (D - 1) / 2 == length, or ValueError."""
    d = round((0.25 + 2 * length) ** 0.5 + 0.5)
    if d * (d - 1) // 2 != length:
        raise ValueError("Input is not a flattened lower-diagonal number")
    return d


class CorrCholeskyTransform(Transform):
    """An unconstrained vector of length D (D - 1) / 2 to the Cholesky factor of a D x D
    correlation matrix: tanh of each entry, then a signed stick-breaking per row."""

    domain = constraints.real_vector
    codomain = constraints.corr_cholesky
    bijective = True

    def _call(self, x: Tensor) -> Tensor:
        eps = kael.finfo(x.dtype).eps
        x = x.tanh().clamp(min=-1 + eps, max=1 - eps)
        r = _vec_to_tril(x, _corr_size(x.shape[-1]), diag=-1)
        # y = sign(r) sqrt(z * prod(1 - z)) with z = r**2, i.e. r * sqrt(prod(1 - z))
        remaining = (1 - r.pow(2)).sqrt().cumprod(-1)
        r = r + kael.eye(r.shape[-1], dtype=r.dtype, device=r.device)
        return r * _pad(remaining[..., :-1], [1, 0], value=1.0)

    def _inverse(self, y: Tensor) -> Tensor:
        left = 1 - (y * y).cumsum(-1)
        left_shifted = _pad(left[..., :-1], [1, 0], value=1.0)
        t = _tril_to_vec(y, diag=-1) / _tril_to_vec(left_shifted, diag=-1).sqrt()
        return (t.log1p() - (-t).log1p()) / 2

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        """Of x and the flattened strictly-lower part of y (the spaces' dims differ)."""
        left = 1 - (y * y).cumsum(-1)
        stick_breaking = 0.5 * _tril_to_vec(left, diag=-2).log().sum(-1)
        tanh = -2 * (x + _softplus(-2 * x) - math.log(2.0)).sum(-1)
        return stick_breaking + tanh

    def forward_shape(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        if len(shape) < 1:
            raise ValueError("Too few dimensions on input")
        d = _corr_size(shape[-1])
        return kael.Size(tuple(shape[:-1]) + (d, d))

    def inverse_shape(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        if len(shape) < 2:
            raise ValueError("Too few dimensions on input")
        if shape[-2] != shape[-1]:
            raise ValueError("Input is not square")
        d = shape[-1]
        return kael.Size(tuple(shape[:-2]) + (d * (d - 1) // 2,))


def _vector_shape(shape: tuple[int, ...]) -> tuple[int, ...]:
    if len(shape) < 1:
        raise ValueError("Too few dimensions on input")
    return shape


class SoftmaxTransform(_Stateless):
    """Unconstrained vectors to the simplex by exp then normalizing (not bijective: the
    inverse is log)."""

    domain = constraints.real_vector
    codomain = constraints.simplex

    def _call(self, x: Tensor) -> Tensor:
        probs = (x - x.amax(-1, keepdim=True)).exp()
        return probs / probs.sum(-1, keepdim=True)

    def _inverse(self, y: Tensor) -> Tensor:
        return y.log()

    forward_shape = inverse_shape = staticmethod(_vector_shape)


def _stick_offset(like: Tensor, k: int) -> Tensor:
    """log(k), log(k - 1), ..., log(1): the shifts that center the stick-breaking logits."""
    return (k + 1 - like.new_ones(k).cumsum(-1)).log()


class StickBreakingTransform(_Stateless):
    """Unconstrained K-vectors to the (K + 1)-simplex by stick breaking: each sigmoid takes a
    fraction of what is left."""

    domain = constraints.real_vector
    codomain = constraints.simplex
    bijective = True

    def _call(self, x: Tensor) -> Tensor:
        z = _clamp_open_unit(kael.sigmoid(x - _stick_offset(x, x.shape[-1])))
        left = (1 - z).cumprod(-1)
        return _pad(z, [0, 1], value=1.0) * _pad(left, [1, 0], value=1.0)

    def _inverse(self, y: Tensor) -> Tensor:
        head = y[..., :-1]
        # clamped: the remainder can round to <= 0 when y[-1] ~ 0
        left = (1 - head.cumsum(-1)).clamp(min=kael.finfo(y.dtype).tiny)
        return head.log() - left.log() + _stick_offset(y, head.shape[-1])

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        x = x - _stick_offset(x, x.shape[-1])
        # 1 - sigmoid(x) = exp(-x) sigmoid(x)
        return (-x + kael.nn.functional.logsigmoid(x) + y[..., :-1].log()).sum(-1)

    def forward_shape(self, shape: tuple[int, ...]) -> kael.Size:
        shape = _vector_shape(shape)
        return kael.Size(tuple(shape[:-1]) + (shape[-1] + 1,))

    def inverse_shape(self, shape: tuple[int, ...]) -> kael.Size:
        shape = _vector_shape(shape)
        return kael.Size(tuple(shape[:-1]) + (shape[-1] - 1,))


def _map_diagonal(m: Tensor, fn) -> Tensor:
    """`m`'s strictly lower triangle plus fn of its diagonal (zeros above)."""
    return m.tril(-1) + fn(m.diagonal(dim1=-2, dim2=-1)).diag_embed()


class LowerCholeskyTransform(_Stateless):
    """Unconstrained square matrices to lower-triangular ones with a positive diagonal: the
    strictly lower part kept, the diagonal exponentiated."""

    domain = constraints.independent(constraints.real, 2)
    codomain = constraints.lower_cholesky

    def _call(self, x: Tensor) -> Tensor:
        return _map_diagonal(x, Tensor.exp)

    def _inverse(self, y: Tensor) -> Tensor:
        return _map_diagonal(y, Tensor.log)


class PositiveDefiniteTransform(_Stateless):
    """Unconstrained square matrices to positive-definite ones: L L^T of their
    LowerCholeskyTransform L."""

    domain = constraints.independent(constraints.real, 2)
    codomain = constraints.positive_definite

    def _call(self, x: Tensor) -> Tensor:
        lower = _map_diagonal(x, Tensor.exp)
        return lower @ lower.mT

    def _inverse(self, y: Tensor) -> Tensor:
        return _map_diagonal(kael.linalg.cholesky(y), Tensor.log)


def _check_slicing(dim: int, value: Tensor, size: int, name: str, holder: str, what: str) -> None:
    """Raise ValueError unless `dim` indexes `value` and has `size` entries (torch's checks)."""
    if not -value.dim() <= dim < value.dim():
        raise ValueError(f"dim {dim} out of range for {holder} with {value.dim()} dimensions")
    if value.shape[dim] != size:
        raise ValueError(f"{name}.size({dim}) = {value.shape[dim]} must equal {what} {size}")


def _transform_list(tseq: Sequence[Transform], cache_size: int) -> list[Transform]:
    if not all(isinstance(t, Transform) for t in tseq):
        raise ValueError("All elements of tseq must be Transform instances")
    return [t.with_cache(cache_size) for t in tseq] if cache_size else list(tseq)


class _JoinTransform(Transform):
    """Transforms applied to the slices of dim `dim` that `_slices` cuts, their results joined
    back by `_join` (kael.cat or kael.stack)."""

    transforms: list[Transform]
    dim: int

    def _joined(self, cseq: list[constraints.Constraint]) -> constraints.Constraint:
        """The constraint of the slices' constraints `cseq`, joined as the values are."""
        raise NotImplementedError

    def _slices(self, value: Tensor, name: str, holder: str = "tensor") -> list[Tensor]:
        raise NotImplementedError

    @staticmethod
    def _join(tensors: list[Tensor], dim: int) -> Tensor:
        raise NotImplementedError

    @property
    def bijective(self) -> bool:
        return all(t.bijective for t in self.transforms)

    @constraints.dependent_property
    def domain(self) -> constraints.Constraint:
        return self._joined([t.domain for t in self.transforms])

    @constraints.dependent_property
    def codomain(self) -> constraints.Constraint:
        return self._joined([t.codomain for t in self.transforms])

    def _call(self, x: Tensor) -> Tensor:
        parts = zip(self.transforms, self._slices(x, "x"), strict=True)
        return self._join([t(v) for t, v in parts], self.dim)

    def _inverse(self, y: Tensor) -> Tensor:
        parts = zip(self.transforms, self._slices(y, "y"), strict=True)
        return self._join([t.inv(v) for t, v in parts], self.dim)

    def _slice_terms(self, x: Tensor, y: Tensor) -> list[Tensor]:
        """Each transform's log_abs_det_jacobian on its slices of x and y."""
        xs, ys = self._slices(x, "x", "x"), self._slices(y, "y", "y")
        terms = zip(self.transforms, xs, ys, strict=True)
        return [t.log_abs_det_jacobian(x_part, y_part) for t, x_part, y_part in terms]


class CatTransform(_JoinTransform):
    """Applies transforms[i] to the i-th slice (of lengths[i]) of dim `dim`, as torch.cat
    would join them."""

    _join = staticmethod(kael.cat)

    def __init__(
        self,
        tseq: Sequence[Transform],
        dim: int = 0,
        lengths: Sequence[int] | None = None,
        cache_size: int = 0,
    ) -> None:
        self.transforms = _transform_list(tseq, cache_size)
        super().__init__(cache_size=cache_size)
        self.lengths = [1] * len(self.transforms) if lengths is None else list(lengths)
        if len(self.lengths) != len(self.transforms):
            raise ValueError(
                f"lengths ({len(self.lengths)}) must match transforms ({len(self.transforms)})"
            )
        self.dim = dim

    def _init_args(self) -> tuple:
        return (self.transforms, self.dim, self.lengths)

    @property
    def event_dim(self) -> int:
        return max(t.event_dim for t in self.transforms)

    @property
    def length(self) -> int:
        """The size of dim `dim` the slices cover."""
        return sum(self.lengths)

    def _joined(self, cseq: list[constraints.Constraint]) -> constraints.Constraint:
        return constraints.cat(cseq, self.dim, self.lengths)

    def _slices(self, value: Tensor, name: str, holder: str = "tensor") -> list[Tensor]:
        _check_slicing(self.dim, value, self.length, name, holder, "length")
        starts = [sum(self.lengths[:i]) for i in range(len(self.lengths))]
        return [value.narrow(self.dim, s, n) for s, n in zip(starts, self.lengths, strict=True)]

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        """Each slice's term (summed up to the widest event); concatenated along `dim` when it
        is a batch dim, summed when it lies in the event."""
        terms = [
            sum_rightmost(term, self.event_dim - t.event_dim)
            for t, term in zip(self.transforms, self._slice_terms(x, y), strict=True)
        ]
        dim = (self.dim - x.dim() if self.dim >= 0 else self.dim) + self.event_dim
        if dim < 0:
            return kael.cat(terms, dim)
        return sum(terms[1:], terms[0])


class StackTransform(_JoinTransform):
    """Applies transforms[i] to the i-th entry of dim `dim`, as torch.stack would join them."""

    _join = staticmethod(kael.stack)

    def __init__(self, tseq: Sequence[Transform], dim: int = 0, cache_size: int = 0) -> None:
        self.transforms = _transform_list(tseq, cache_size)
        super().__init__(cache_size=cache_size)
        self.dim = dim

    def _init_args(self) -> tuple:
        return (self.transforms, self.dim)

    def _joined(self, cseq: list[constraints.Constraint]) -> constraints.Constraint:
        return constraints.stack(cseq, self.dim)

    def _slices(self, value: Tensor, name: str, holder: str = "tensor") -> list[Tensor]:
        _check_slicing(self.dim, value, len(self.transforms), name, holder, "len(transforms)")
        return [value.select(self.dim, i) for i in range(value.shape[self.dim])]

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return kael.stack(self._slice_terms(x, y), self.dim)


class CumulativeDistributionTransform(Transform):
    """y = distribution.cdf(x): values of the distribution's support to [0, 1]
    (a Gaussian copula maps a MultivariateNormal through Normal(0, 1)'s cdf)."""

    bijective = True
    codomain = constraints.unit_interval
    sign = +1

    def __init__(self, distribution, cache_size: int = 0) -> None:
        super().__init__(cache_size=cache_size)
        self.distribution = distribution

    def _init_args(self) -> tuple:
        return (self.distribution,)

    @property
    def domain(self) -> constraints.Constraint:
        return self.distribution.support

    def _call(self, x: Tensor) -> Tensor:
        return self.distribution.cdf(x)

    def _inverse(self, y: Tensor) -> Tensor:
        return self.distribution.icdf(y)

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return self.distribution.log_prob(x)
