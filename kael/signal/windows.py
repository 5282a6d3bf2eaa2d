"""torch.signal.windows: window functions of M points, computed as PyTorch computes them.

Each is a linspace of M points through kael's kernels and one elementwise formula over it
(exp, sin, i0 or a sum of cosines), in the requested float32 or float64, so the values are
PyTorch's to its own rounding. sym=True gives the symmetric window (filter design); False
the periodic one (spectral analysis: the symmetric window of M + 1 points without its last).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable

from kael.frontend import factories, views
from kael.frontend.tensor import Tensor, strided
from kael.runtime import dtypes
from kael.runtime.dtypes import DType
from kael.runtime.errors import TypeError, ValueError

__all__ = [
    "bartlett", "blackman", "cosine", "exponential", "gaussian", "general_cosine",
    "general_hamming", "hamming", "hann", "kaiser", "nuttall",
]  # fmt: skip

# general_cosine's coefficients of the named windows (hann and hamming are general_hamming's)
_BLACKMAN = (0.42, 0.5, 0.08)
_NUTTALL = (0.3635819, 0.4891775, 0.1365995, 0.0106411)


def _frame(name: str, M, sym: bool, dtype, layout, device, requires_grad, body) -> Tensor:
    """PyTorch's checks and edge cases around `body(M, sym, dtype, device)`: M a
    non-negative int, float32 or float64 only, strided; an empty window for M = 0, once
    the body has checked its parameters on one point."""
    M = views.as_int(M, "M")
    dtype = factories.dtype_or(dtype, dtypes.get_default_dtype())
    factories.refuse_grad(requires_grad, name)
    if M < 0:
        raise ValueError(f"{name} requires non-negative window length, got M={M}")
    if layout is not None and layout is not strided:
        raise ValueError(f"{name} is implemented for strided tensors only, got: {layout}")
    if dtype not in (dtypes.float32, dtypes.float64):
        raise ValueError(f"{name} expects float32 or float64 dtypes, got: {dtype}")
    if M == 0:
        body(1, bool(sym), dtype, device)
        return factories.empty(0, dtype=dtype, device=device)
    return body(M, bool(sym), dtype, device)


def _window(name: str, body: Callable, doc: str) -> Callable:
    """The public window `name` over `body(M, sym, dtype, device, **params)`."""

    def window(
        M: int, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False, **params
    ) -> Tensor:
        def run(M, sym, dtype, device):
            return body(name, M, sym, dtype, device, **params)

        return _frame(name, M, sym, dtype, layout, device, requires_grad, run)

    window.__name__ = window.__qualname__ = name
    window.__doc__ = doc
    return window


def _line(start: float, step: float, M: int, dtype: DType, device) -> Tensor:
    return factories.linspace(start, start + (M - 1) * step, M, dtype=dtype, device=device)


def _exponential(name, M, sym, dtype, device, center=None, tau=1.0) -> Tensor:
    if tau <= 0:
        raise ValueError(f"Tau must be positive, got: {tau} instead.")
    if sym and center is not None:
        raise ValueError("Center must be None for symmetric windows")
    if center is None:
        center = (M if not sym and M > 1 else M - 1) / 2.0
    constant = 1 / tau
    return (-_line(-center * constant, constant, M, dtype, device).abs()).exp()


def _cosine(name, M, sym, dtype, device) -> Tensor:
    constant = math.pi / (M + 1 if not sym and M > 1 else M)
    return _line(0.5 * constant, constant, M, dtype, device).sin()


def _gaussian(name, M, sym, dtype, device, std=1.0) -> Tensor:
    if std <= 0:
        raise ValueError(f"Standard deviation must be positive, got: {std} instead.")
    start = -(M if not sym and M > 1 else M - 1) / 2.0
    constant = 1 / (std * math.sqrt(2))
    return (-(_line(start * constant, constant, M, dtype, device) ** 2)).exp()


def _kaiser(name, M, sym, dtype, device, beta=12.0) -> Tensor:
    if beta < 0:
        raise ValueError(f"beta must be non-negative, got: {beta} instead.")
    if M == 1:
        return factories.ones(1, dtype=dtype, device=device)
    b = factories.scalar_tensor(beta, dtype=dtype, device=device)
    constant = 2.0 * b / (M if not sym else M - 1)  # in the dtype, as PyTorch's tensors
    end = b.minimum(-b + (M - 1) * constant)
    k = factories.linspace(-b.item(), end.item(), M, dtype=dtype, device=device)
    return (b * b - k**2).sqrt().i0() / b.i0()


def _bartlett(name, M, sym, dtype, device) -> Tensor:
    if M == 1:
        return factories.ones(1, dtype=dtype, device=device)
    return 1 - _line(-1, 2 / (M if not sym else M - 1), M, dtype, device).abs()


def _general_cosine(name, M, sym, dtype, device, a=None) -> Tensor:
    if a is None:  # a required keyword of torch's signature
        raise TypeError(f"{name}() missing 1 required keyword-only argument: 'a'")
    if M == 1:  # before the coefficients' checks, as torch's
        return factories.ones(1, dtype=dtype, device=device)
    if not isinstance(a, Iterable):
        raise TypeError("Coefficients must be a list/tuple")
    a = list(a)
    if not a:
        raise ValueError("Coefficients cannot be empty")
    k = _line(0, 2 * math.pi / (M if not sym else M - 1), M, dtype, device)
    signed = factories.tensor([(-1) ** i * w for i, w in enumerate(a)], dtype=dtype, device=device)
    i = factories.arange(len(a), dtype=dtype, device=device)
    return (signed.unsqueeze(-1) * (i.unsqueeze(-1) * k).cos()).sum(0)


def _hamming_family(alpha: float | None = None) -> Callable:
    """general_hamming's body, or one with a fixed alpha (hann 0.5, hamming 0.54)."""

    def body(name, M, sym, dtype, device, **params):
        a = params.pop("alpha", 0.54) if alpha is None else alpha
        if params:
            raise TypeError(f"{name}() got an unexpected keyword argument {next(iter(params))!r}")
        return _general_cosine(name, M, sym, dtype, device, a=(a, 1.0 - a))

    return body


def _fixed_cosine(coefficients: tuple[float, ...]) -> Callable:
    def body(name, M, sym, dtype, device):
        return _general_cosine(name, M, sym, dtype, device, a=coefficients)

    return body


exponential = _window(
    "exponential", _exponential, "exp(-|n - center| / tau); center defaults to the middle."
)
cosine = _window("cosine", _cosine, "sin(pi (n + 1/2) / M): the sine window.")
gaussian = _window("gaussian", _gaussian, "exp(-(n - (M - 1)/2)^2 / (2 std^2)).")
kaiser = _window("kaiser", _kaiser, "i0(beta sqrt(1 - (2n / (M - 1) - 1)^2)) / i0(beta).")
bartlett = _window("bartlett", _bartlett, "The triangle 1 - |2n / (M - 1) - 1|.")
general_cosine = _window(
    "general_cosine", _general_cosine, "sum_i (-1)^i a_i cos(2 pi i n / (M - 1)) over a."
)
general_hamming = _window(
    "general_hamming", _hamming_family(), "alpha - (1 - alpha) cos(2 pi n / (M - 1))."
)
hamming = _window("hamming", _hamming_family(0.54), "general_hamming with alpha = 0.54.")
hann = _window("hann", _hamming_family(0.5), "general_hamming with alpha = 0.5.")
blackman = _window("blackman", _fixed_cosine(_BLACKMAN), "general_cosine of (0.42, 0.5, 0.08).")
nuttall = _window("nuttall", _fixed_cosine(_NUTTALL), "general_cosine of Nuttall's 4 terms.")
