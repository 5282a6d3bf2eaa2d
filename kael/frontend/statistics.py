"""Covariance, correlation and trapezoid-rule integration, as PyTorch spells them: cov,
corrcoef, trapezoid (trapz, its old name) and cumulative_trapezoid.

Each follows PyTorch's own sequence of ops (Correlation.cpp, Integration.cpp), built from
kael's elementwise ops, sums, cumsum, mm, narrow and select, so the result dtype is the one
PyTorch's promotion gives (integer input to the default float dtype, weights' dtypes
joining in) and NaN appears where PyTorch's arithmetic makes it."""

from __future__ import annotations

from collections.abc import Callable

from kael.frontend import factories, views
from kael.frontend.linalg import mm
from kael.frontend.outputs import tensor_arg
from kael.frontend.stacking import _strict_int
from kael.frontend.tensor import Tensor
from kael.runtime import user_warning
from kael.runtime.dtypes import bool_
from kael.runtime.errors import IndexError, TypeError, ValueError

# ---- cov and corrcoef ------------------------------------------------------------------------


def _weights(w, kind: str, observations: int) -> Tensor:
    """fweights (integral) or aweights (floating), checked as PyTorch checks them: at most
    1-d, one per observation, none negative."""
    w = tensor_arg(w, "cov", kind)
    if w.ndim > 1:
        raise ValueError(
            f"cov(): expected {kind} to have one or fewer dimensions but got {kind} with "
            f"{w.ndim} dimensions"
        )
    integral = kind == "fweights"
    if w.dtype.is_floating_point == integral or w.dtype is bool_:
        want = "integral" if integral else "floating point"
        raise TypeError(
            f"cov(): expected {kind} to have {want} dtype but got {kind} with {w.dtype} dtype"
        )
    if w.numel() != observations:
        raise ValueError(
            f"cov(): expected {kind} to have the same numel as there are observations in the "
            f"input but got {w.numel()} != {observations}"
        )
    if observations:
        low = w.min().item()
        if low < 0:
            raise ValueError(f"cov(): {kind} cannot be negative, got a weight of {low}")
    return w


def cov(input, *, correction=1, fweights=None, aweights=None) -> Tensor:
    """The covariance matrix of input's rows (variables) over its columns (observations); a
    1-d input is one variable (a 0-d result). fweights (integer repeat counts) and aweights
    (float importances) weight the observations; correction is subtracted from the
    normaliser (1: Bessel's), which becomes 0 with a warning when it would be <= 0. A
    complex input's products take the conjugate of the second factor, as PyTorch's do."""
    x = tensor_arg(input, "cov")
    correction = _strict_int(correction, "cov", "correction")
    if x.ndim > 2:
        raise ValueError(
            "cov(): expected input to have two or fewer dimensions but got an input with "
            f"{x.ndim} dimensions"
        )
    if x.dtype is bool_:
        raise TypeError(f"cov(): bool dtype is not supported for input, got {x.dtype}")
    rows = x.reshape(1, -1) if x.ndim < 2 else x
    observations = rows.shape[1]
    w = None if fweights is None else _weights(fweights, "fweights", observations)
    a = None if aweights is None else _weights(aweights, "aweights", observations)
    if a is not None:
        w = a if w is None else w * a
    if w is None:
        w_sum = observations
        norm = observations - correction
        low = norm <= 0
    else:
        w_sum = w.sum()
        if w_sum.item() == 0:
            raise ValueError("cov(): weights sum to zero, can't be normalized")
        if correction != 0 and a is not None:
            norm = w_sum - correction * (w * a).sum() / w_sum
        else:
            norm = w_sum - correction
        low = bool((norm <= 0).item())
    if low:
        user_warning.warn(
            "cov(): degrees of freedom is <= 0. Correction should be strictly less than the "
            f"number of observations (correction={correction}, observations={observations}).",
            UserWarning,
        )
        norm = 0 if w is None else factories.zeros_like(norm)
    weighted = rows if w is None else rows * w
    centred = rows - (weighted.sum(1) / w_sum).unsqueeze(1)
    product = mm(centred, (centred if w is None else centred * w).t().conj())
    return (product / norm).squeeze()


def corrcoef(input) -> Tensor:
    """Pearson's correlation coefficients of input's rows (cov normalised by the standard
    deviations, clipped to [-1, 1]); a single variable gives 1 (NaN where its variance is 0,
    inf or NaN)."""
    x = tensor_arg(input, "corrcoef")
    if x.ndim > 2:
        raise ValueError(
            "corrcoef(): expected input to have two or fewer dimensions but got an input with "
            f"{x.ndim} dimensions"
        )
    c = cov(x)
    if c.ndim == 0:
        return c / c
    stddev = c.diagonal().sqrt()
    c = c / stddev.reshape(-1, 1)
    c = c / stddev.reshape(1, -1)
    return c.clamp(-1, 1)


# ---- the trapezoid rule ----------------------------------------------------------------------


def _dx(dx, op: str) -> float:
    """dx as a real number: a Python or 0-d tensor real; bool and complex are refused."""
    if dx is None:
        return 1.0
    if isinstance(dx, Tensor):
        if dx.ndim != 0:
            raise TypeError(f"{op}(): argument 'dx' must be a number, got a {dx.ndim}-d tensor")
        dx = dx.item()
    if isinstance(dx, (bool, complex)):
        raise ValueError(f"{op}: Currently, we only support dx as a real number, got {dx!r}")
    if not isinstance(dx, (int, float)) and not hasattr(dx, "__float__"):
        raise TypeError(f"{op}(): argument 'dx' must be a number, not {type(dx).__name__}")
    return float(dx)


def _lengthwise(t: Tensor, d: int) -> tuple[Tensor, Tensor]:
    """t[..., :-1, ...] and t[..., 1:, ...] along dim d (each empty for a length under 2)."""
    n = t.shape[d]
    return t.narrow(d, 0, max(n - 1, 0)), t.narrow(d, min(n, 1), max(n - 1, 0))


def _spacing(y: Tensor, x, d: int, op: str) -> Tensor:
    """x's differences along d, x laid out as PyTorch lays it against y: a 1-d x (one value
    per sample) along d, a lower-rank x padded with leading 1s, else x as it is."""
    x = tensor_arg(x, op, "x")
    if x.dtype is bool_:
        raise TypeError(
            f"{op}: received a bool input for `x` or `y`, but bool is not supported "
            f"(x: {x.dtype}, y: {y.dtype})"
        )
    if x.ndim == 1:
        if x.shape[0] != y.shape[d]:
            raise ValueError(
                f"{op}: There must be one `x` value for each sample point, got "
                f"{x.shape[0]} x values for {y.shape[d]} samples along dim {d}"
            )
        shape = [1] * y.ndim
        shape[d] = x.shape[0]
        x = x.reshape(*shape)
    elif x.ndim < y.ndim:
        x = x.reshape(*((1,) * (y.ndim - x.ndim) + x.shape))
    left, right = _lengthwise(x, d)
    return right - left


def _checked(y, x, dx, dim, op: str) -> tuple[Tensor, int]:
    """y and dim checked as PyTorch's parser checks them (x and dx are exclusive)."""
    y = tensor_arg(y, op, "y")
    if x is not None and dx is not None:
        raise TypeError(f"{op}(): takes x or dx, not both (got x: {type(x).__name__}, dx: {dx!r})")
    if x is not None and not isinstance(x, Tensor):
        raise TypeError(f"{op}(): argument 'x' must be Tensor, not {type(x).__name__}")
    dim = _strict_int(dim, op, "dim")
    return y, dim


def _integrate(y, x, dx, dim, op: str) -> Tensor:
    y, dim = _checked(y, x, dx, dim, op)
    d = views.wrap_dim(dim, y.ndim)
    if y.ndim == 0:
        raise IndexError(f"{op}(): Dimension specified as {dim} but tensor has no dimensions")
    if y.shape[d] == 0:  # no samples: 0, as NumPy gives
        shape = y.shape[:d] + y.shape[d + 1 :]
        return factories.zeros(shape, dtype=y.dtype, device=y.device)
    if y.dtype is bool_:
        raise TypeError(f"{op}: received a bool input for `y`, but bool is not supported")
    if x is None:
        step = _dx(dx, op)
        ends = y.select(d, 0) + y.select(d, -1)
        return (y.sum(d) - ends * 0.5) * step
    left, right = _lengthwise(y, d)
    return ((left + right) * _spacing(y, x, d, op)).sum(d) / 2.0


def trapezoid(y, x=None, *, dx=None, dim=-1) -> Tensor:
    """The trapezoid rule's integral of y along dim: sample points x (a tensor), or a
    constant spacing dx (1 by default). No samples integrate to 0 in y's dtype."""
    return _integrate(y, x, dx, dim, "trapezoid")


def trapz(y, x=None, *, dx=None, dim=-1) -> Tensor:
    """trapezoid under PyTorch's older name: trapz(y, x, *, dim) or trapz(y, *, dx, dim)."""
    return _integrate(y, x, dx, dim, "trapz")


def cumulative_trapezoid(y, x=None, *, dx=None, dim=-1) -> Tensor:
    """The trapezoid rule's running integral of y along dim (one element shorter there):
    sample points x (a tensor) or a constant spacing dx (1 by default)."""
    op = "cumulative_trapezoid"
    y, dim = _checked(y, x, dx, dim, op)
    if y.ndim == 0:
        raise IndexError(f"{op}(): slice() cannot be applied to a 0-dim tensor (dim={dim})")
    d = views.wrap_dim(dim, y.ndim)
    if y.dtype is bool_:
        raise TypeError(f"{op}: received a bool input for `y`, but bool is not supported")
    left, right = _lengthwise(y, d)
    if x is None:
        return ((_dx(dx, op) / 2.0) * (left + right)).cumsum(d)
    return ((left + right) * _spacing(y, x, d, op)).cumsum(d) / 2.0


FUNCTIONS: dict[str, Callable] = {
    "cov": cov,
    "corrcoef": corrcoef,
    "trapezoid": trapezoid,
    "trapz": trapz,
    "cumulative_trapezoid": cumulative_trapezoid,
}
NOT_METHODS: frozenset[str] = frozenset({"trapezoid", "trapz", "cumulative_trapezoid"})
METHODS: dict[str, Callable] = {}
