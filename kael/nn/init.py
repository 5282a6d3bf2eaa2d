"""kael.nn.init: PyTorch's in-place initialisers, drawing from kael's Philox stream.

Each fills its tensor in place and returns it; the bounds and standard deviations are
PyTorch's (fan-in and fan-out from dims 1 and 0 times the receptive field), so a layer
initialised here has PyTorch's distribution, though not its values (the generators differ).
The names without the trailing underscore (uniform, normal, ...) are torch's deprecated
aliases: each warns (FutureWarning) and calls the in-place initialiser.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable

from kael.frontend.factories import empty_like
from kael.frontend.factories import eye as _eye
from kael.frontend.tensor import Tensor
from kael.runtime import user_warning
from kael.runtime.errors import ValueError

_LINEAR = frozenset(
    {"linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
     "conv_transpose3d", "sigmoid", "identity"}
)  # fmt: skip


def calculate_gain(nonlinearity: str, param=None) -> float:
    """The recommended scale of the weights feeding `nonlinearity` (PyTorch's table)."""
    if nonlinearity in _LINEAR:
        return 1.0
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            slope = 0.01
        elif isinstance(param, (int, float)) and not isinstance(param, bool):
            slope = param
        else:
            raise ValueError(f"negative_slope {param} not a valid number")
        return math.sqrt(2.0 / (1 + slope**2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"Unsupported nonlinearity {nonlinearity}")


def _calculate_fan_in_and_fan_out(tensor: Tensor) -> tuple[int, int]:
    if tensor.dim() < 2:
        raise ValueError(
            "Fan in and fan out can not be computed for tensor with fewer than 2 dimensions"
        )
    receptive = math.prod(tensor.shape[2:])
    return tensor.shape[1] * receptive, tensor.shape[0] * receptive


def _no_elements(tensor: Tensor) -> bool:
    """Whether the tensor has a zero-size dim: kaiming's initialisers then warn and leave
    it, as torch's do."""
    if 0 in tensor.shape:
        user_warning.warn("Initializing zero-element tensors is a no-op")
        return True
    return False


def _fan(tensor: Tensor, mode: str) -> int:
    """The fan `mode` names, in any case ("fan_in" or "fan_out"), as torch reads it."""
    mode = mode.lower()
    modes = ["fan_in", "fan_out"]
    if mode not in modes:
        raise ValueError(f"Mode {mode} not supported, please use one of {modes}")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


def uniform_(tensor: Tensor, a: float = 0.0, b: float = 1.0, generator=None) -> Tensor:
    return tensor.uniform_(a, b, generator=generator)


def normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0, generator=None) -> Tensor:
    return tensor.normal_(mean, std, generator=generator)


def constant_(tensor: Tensor, val: float) -> Tensor:
    return tensor.fill_(val)


def ones_(tensor: Tensor) -> Tensor:
    return tensor.fill_(1.0)


def zeros_(tensor: Tensor) -> Tensor:
    return tensor.zero_()


def eye_(tensor: Tensor) -> Tensor:
    """The identity in a 2-d tensor (ones on the diagonal of the leading square)."""
    if tensor.dim() != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    return tensor.copy_(_eye(*tensor.shape, dtype=tensor.dtype))


def dirac_(tensor: Tensor, groups: int = 1) -> Tensor:
    """A convolution weight (3-5 dims) that passes each of the first channels through."""
    if tensor.dim() not in (3, 4, 5):
        raise ValueError("Only tensors with 3, 4, or 5 dimensions are supported")
    out_per_group = tensor.shape[0] // groups
    if tensor.shape[0] % groups:
        raise ValueError("dim 0 must be divisible by groups")
    tensor.zero_()
    centre = tuple(k // 2 for k in tensor.shape[2:])
    for g in range(groups):
        for d in range(min(out_per_group, tensor.shape[1])):
            tensor[(g * out_per_group + d, d, *centre)] = 1
    return tensor


def xavier_uniform_(tensor: Tensor, gain: float = 1.0, generator=None) -> Tensor:
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    bound = gain * math.sqrt(6.0 / float(fan_in + fan_out))
    return tensor.uniform_(-bound, bound, generator=generator)


def xavier_normal_(tensor: Tensor, gain: float = 1.0, generator=None) -> Tensor:
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return tensor.normal_(0.0, gain * math.sqrt(2.0 / float(fan_in + fan_out)), generator=generator)


def kaiming_uniform_(
    tensor: Tensor, a: float = 0, mode: str = "fan_in", nonlinearity: str = "leaky_relu",
    generator=None,
) -> Tensor:  # fmt: skip
    if _no_elements(tensor):
        return tensor
    fan = _fan(tensor, mode)
    bound = math.sqrt(3.0) * calculate_gain(nonlinearity, a) / math.sqrt(fan)
    return tensor.uniform_(-bound, bound, generator=generator)


def kaiming_normal_(
    tensor: Tensor, a: float = 0, mode: str = "fan_in", nonlinearity: str = "leaky_relu",
    generator=None,
) -> Tensor:  # fmt: skip
    if _no_elements(tensor):
        return tensor
    fan = _fan(tensor, mode)
    return tensor.normal_(
        0.0, calculate_gain(nonlinearity, a) / math.sqrt(fan), generator=generator
    )


def trunc_normal_(
    tensor: Tensor, mean: float = 0.0, std: float = 1.0, a: float = -2.0, b: float = 2.0,
    generator=None,
) -> Tensor:  # fmt: skip
    """Normal(mean, std) values kept inside [a, b] by rejection, as torch 2.13 draws them:
    normal draws redrawn where outside (when [a, b] holds over 30% of the mass), else
    uniform draws on [a, b] kept with probability pdf(x) / max pdf. Every value is a
    draw in the tensor's own dtype, so none lands on a bound by rounding."""

    def cdf(x: float) -> float:
        return (1.0 + math.erf(x / math.sqrt(2.0))) / 2.0

    if mean < a - 2 * std or mean > b + 2 * std:
        user_warning.warn(
            "mean is more than 2 std from [a, b] in nn.init.trunc_normal_. "
            "The distribution of values may be incorrect."
        )
    if cdf((b - mean) / std) - cdf((a - mean) / std) > 0.3:
        return _redraw_outside(tensor, mean, std, a, b, generator)
    return _accept_by_density(tensor, mean, std, a, b, generator)


def _redraw_outside(tensor: Tensor, mean: float, std: float, a: float, b: float, generator):
    """Normal draws, each one outside [a, b] (the bounds rounded to the tensor's dtype)
    drawn again until none is."""
    low, high = tensor.new_tensor(a).item(), tensor.new_tensor(b).item()
    result = tensor.normal_(mean, std, generator=generator)
    while True:
        outside = (result < low) | (result > high)
        if not outside.any():
            break
        fresh = empty_like(result).normal_(mean, std, generator=generator)
        result = fresh.where(outside, result)
    if result is not tensor:
        tensor.copy_(result)
    return tensor


def _accept_by_density(tensor: Tensor, mean: float, std: float, a: float, b: float, generator):
    """Uniform draws on [a, b], each kept where log(u) <= log pdf(x) - log pdf(mode) for a
    uniform u, the rejected ones drawn again until all are kept (a narrow window)."""
    mode = max(a, min(mean, b))
    log_peak = -0.5 * ((mode - mean) / std) ** 2

    def rejected(candidates: Tensor) -> Tensor:
        log_ratio = candidates.sub(mean).div_(std).pow_(2).mul_(-0.5).sub_(log_peak)
        return empty_like(candidates).uniform_(generator=generator).log_().gt(log_ratio)

    tensor.uniform_(a, b, generator=generator)
    pending = rejected(tensor)
    result = tensor
    while pending.any():
        candidates = empty_like(tensor).uniform_(a, b, generator=generator)
        result = candidates.where(pending, result)
        pending = rejected(candidates) & pending
    if result is not tensor:
        tensor.copy_(result)
    return tensor


def sparse_(tensor: Tensor, sparsity: float, std: float = 0.01, generator=None) -> Tensor:
    """A 2-D tensor drawn from normal(0, std) with ceil(sparsity * rows) elements of each
    column zero, at rows chosen at random (each column's own), as PyTorch's sparse_."""
    if tensor.dim() != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    rows = tensor.shape[0]
    zeros = math.ceil(sparsity * rows)
    tensor.normal_(0.0, std, generator=generator)
    scores = tensor.new_empty(tensor.shape).uniform_(generator=generator)
    return tensor.scatter_(0, scores.argsort(0)[:zeros], 0.0)


def orthogonal_(tensor: Tensor, gain: float = 1.0, generator=None) -> Tensor:
    """A (semi-)orthogonal matrix (rows or columns orthonormal) from the QR factorization of
    a Gaussian draw, its signs fixed by R's diagonal; dims past the first are flattened."""
    from kael import linalg  # linalg imports the frontend's factorizations, loaded late

    if tensor.dim() < 2:
        raise ValueError("Only tensors with 2 or more dimensions are supported")
    if tensor.numel() == 0:
        return tensor
    rows, cols = tensor.shape[0], tensor.numel() // tensor.shape[0]
    flat = tensor.new_empty((rows, cols)).normal_(0.0, 1.0, generator=generator)
    if rows < cols:
        flat = flat.t()
    q, r = linalg.qr(flat)
    q = q * r.diagonal().sign()
    if rows < cols:
        q = q.t()
    return tensor.copy_(q.reshape(tensor.shape) * gain)


def _deprecated(method: Callable) -> Callable:
    """torch's alias without the trailing underscore: warns, then calls `method`."""
    old, new = method.__name__[:-1], method.__name__

    @functools.wraps(method)
    def alias(*args, **kwargs):
        user_warning.warn(
            f"`nn.init.{old}` is now deprecated in favor of `nn.init.{new}`.", FutureWarning
        )
        return method(*args, **kwargs)

    alias.__name__ = alias.__qualname__ = old
    alias.__doc__ = f"{old}(...): deprecated, as in torch; use kael.nn.init.{new}."
    return alias


uniform = _deprecated(uniform_)
normal = _deprecated(normal_)
constant = _deprecated(constant_)
eye = _deprecated(eye_)
dirac = _deprecated(dirac_)
xavier_uniform = _deprecated(xavier_uniform_)
xavier_normal = _deprecated(xavier_normal_)
kaiming_uniform = _deprecated(kaiming_uniform_)
kaiming_normal = _deprecated(kaiming_normal_)
orthogonal = _deprecated(orthogonal_)
sparse = _deprecated(sparse_)
