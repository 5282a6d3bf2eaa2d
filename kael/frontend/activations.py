"""torch.nn.functional's elementwise activations, each declared once as a formula over one
element (and its scalar parameters, frontend/formula.py) that runs as one fused kernel:
eagerly, inside @kael.compile (where it fuses with the ops around it) and on cuda tensors.

Deviation: softsign of an integer input computes in the default float dtype from its
values; torch's composes integer ops first (its |x| + 1 wraps: int8 -128 gives 1.0079
there, -0.9922 here).
"""

from __future__ import annotations

import builtins
import functools
from collections.abc import Callable
from dataclasses import dataclass

from kael.frontend import fastpath, views
from kael.frontend.formula import Value, launch, maximum, minimum, stored, where
from kael.frontend.outputs import check_writable, like_result, tensor_arg
from kael.frontend.tensor import Tensor, empty_impl
from kael.frontend.tracing import op_door
from kael.runtime.dtypes import DType, bool_, float32, get_default_dtype
from kael.runtime.errors import TypeError, UnsupportedDtype, ValueError


def _mish(x: Value) -> Value:
    """x tanh(softplus(x)) = x n / (n + 2) with n = e (e + 2), e = exp(x): one exp and no
    cancellation. Past x = 20, n / (n + 2) rounds to 1 (in float64 too) and n stays finite.
    float32 is vmath's one op (a table where tables run, this formula elsewhere)."""
    if x.node.dtype is float32:
        return x.apply("mish")
    e = minimum(x, 20).apply("exp")
    n = e * (e + 2)
    return x * (n / (n + 2))


def _tanhshrink(x: Value) -> Value:
    """x - tanh(x) as one op (vmath's table, exact near 0) in float32 and float64; the half
    types round tanh first, as PyTorch's two ops do."""
    if x.node.dtype.is_half:
        return x - stored(x.apply("tanh"))
    return x.apply("tanhshrink")


# SELU's constants, as PyTorch spells them.
SELU_ALPHA = 1.6732632423543772848170429916717
SELU_SCALE = 1.0507009873554804934193349852946


@dataclass(frozen=True)
class Activation:
    """One activation: its formula of (x, *params), its parameters with their defaults,
    and what integer inputs do ("float": computed in the default float dtype, as PyTorch's
    composite ops do; "keep": in their own dtype; None: refused, as PyTorch's float
    kernels are)."""

    formula: Callable[..., Value]
    params: tuple[tuple[str, float], ...] = ()
    integers: str | None = None
    inplace: bool = True  # PyTorch's signature takes inplace=
    check: Callable[..., None] | None = None  # refuses the parameter values PyTorch refuses
    # more kernel parameters computed on the host from the user's (the formula takes them
    # after its own): celu's 1 / alpha, which PyTorch multiplies by as well
    derived: Callable[..., dict] | None = None
    # (when(*params), formula): a cheaper formula of the same parameters where `when` holds
    # (softplus at beta = 1: no multiply and divide), compiled as its own template
    special: tuple[Callable[..., bool], Callable[..., Value]] | None = None
    # the result's layout as PyTorch's kernel allocates it: "iterator" (an elementwise
    # result: outputs.new_result), "like" (empty_like: outputs.like_result) or "row_major"
    layout: str = "iterator"


def _alpha_not_zero(alpha: float) -> None:
    if alpha == 0:
        raise ValueError("ZeroDivisionError: alpha cannot be 0 for CELU")


def _ordered(min_val: float, max_val: float) -> None:
    # torch.nn.functional.hardtanh's check (its hardtanh_ binding skips it; kael's does not)
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")


def _lambd_not_negative(lambd: float) -> None:
    if lambd < 0:
        raise ValueError(f"softshrink: lambda must be in range [0, inf), but found {lambd}")


ACTIVATIONS: dict[str, Activation] = {
    "elu": Activation(lambda x, a: where(x > 0, x, a * x.apply("expm1")), (("alpha", 1.0),)),
    "selu": Activation(lambda x: SELU_SCALE * where(x > 0, x, SELU_ALPHA * x.apply("expm1"))),
    "celu": Activation(
        lambda x, a, inverse: where(x > 0, x, a * (x * inverse).apply("expm1")),
        (("alpha", 1.0),),
        check=_alpha_not_zero,
        derived=lambda alpha: {"inverse": 1.0 / alpha},
    ),
    "leaky_relu": Activation(
        lambda x, slope: where(x > 0, x, x * slope), (("negative_slope", 0.01),)
    ),
    "hardtanh": Activation(
        lambda x, lo, hi: minimum(maximum(x, lo), hi),
        (("min_val", -1.0), ("max_val", 1.0)),
        integers="keep",
        check=_ordered,
        layout="like",
    ),
    "relu6": Activation(lambda x: minimum(maximum(x, 0), 6), integers="keep", layout="like"),
    "hardsigmoid": Activation(lambda x: minimum(maximum(x + 3, 0), 6) / 6),
    "hardswish": Activation(lambda x: x * minimum(maximum(x + 3, 0), 6) / 6),
    "mish": Activation(_mish),
    "softplus": Activation(
        lambda x, beta, threshold: where(
            x * beta > threshold, x, (x * beta).apply("softplus") / beta
        ),
        (("beta", 1.0), ("threshold", 20.0)),
        inplace=False,
        special=(
            lambda beta, threshold: beta == 1,
            lambda x, beta, threshold: where(x > threshold, x, x.apply("softplus")),
        ),
    ),
    "softsign": Activation(
        lambda x: x / stored(x.apply("abs") + 1), integers="float", inplace=False
    ),
    # 0 - softplus(-x): +0 where softplus(-x) is 0, as PyTorch gives, not -0
    "logsigmoid": Activation(
        lambda x: 0.0 - (-x).apply("softplus"), inplace=False, layout="row_major"
    ),
    "threshold": Activation(
        lambda x, threshold, value: where(x <= threshold, value, x),  # NaN passes, as in torch
        (("threshold", None), ("value", None)),  # required, as in PyTorch
        integers="keep",
    ),
    "hardshrink": Activation(
        lambda x, lambd: where(x.apply("abs") <= lambd, 0.0, x), (("lambd", 0.5),), inplace=False
    ),
    "softshrink": Activation(
        lambda x, lambd: where(x > lambd, x - lambd, where(-x > lambd, x + lambd, x * 0)),
        (("lambd", 0.5),),
        inplace=False,
        check=_lambd_not_negative,
    ),
    "tanhshrink": Activation(_tanhshrink, integers="float", inplace=False),
}


def _dtypes(name: str, act: Activation, dtype: DType) -> DType:
    """The compute (and result) dtype of `act` on `dtype`; TypeError where PyTorch has
    no kernel for it."""
    if dtype.is_floating_point:
        return dtype
    if dtype is not bool_ and act.integers == "keep":
        return dtype
    if dtype is not bool_ and act.integers == "float":
        return get_default_dtype()
    raise UnsupportedDtype(f"{name}: not implemented for {dtype} inputs (floating point only)")


def activate(
    name: str, input: Tensor, params: tuple, inplace: bool = False, defaults: bool = False
) -> Tensor:
    """Activation `name` of `input` with its parameter values, as one kernel; `defaults`:
    they are the defaults, unnamed in the call (the fast door remembers such a call)."""
    act = ACTIVATIONS[name]
    x = tensor_arg(input, name)
    compute = _dtypes(name, act, x.dtype)
    if not isinstance(inplace, builtins.bool):
        raise TypeError(f"{name}: inplace must be a bool, got {type(inplace).__name__}")
    if inplace:
        check_writable(x, name)
        if compute is not x.dtype:
            raise TypeError(f"{name}: inplace needs a {compute} input, got {x.dtype}")
    if act.check is not None:
        act.check(*params)
    given = params
    params = dict(zip((p for p, _ in act.params), params))
    if act.derived is not None:
        params |= act.derived(*given)
    key, formula = (name,), act.formula
    if act.special is not None and act.special[0](*given):
        key, formula = (name, "special"), act.special[1]
    # a floating input's call at the default parameters: the fast door remembers it (an
    # integer input's result dtype follows the default dtype, which may change)
    plain = defaults and not inplace and x.dtype.is_floating_point
    fast = fastpath.unary_key(_FAST + name, x) if plain else None
    out = x._impl if inplace else _RESULTS[act.layout](x._impl, compute)
    result = launch(key, [x], compute, formula, params, out, fast)
    if inplace:
        x._impl.storage.bump_version()
        return x
    return result


_FAST = "F."  # the fast door's keys of activations: apart from the unary ops' names
_RESULTS = {
    "iterator": lambda impl, dtype: None,  # launch lays it out
    "like": like_result,
    "row_major": lambda impl, dtype: empty_impl(impl.shape, dtype, impl.device),
}


def _public(name: str) -> Callable:
    """The torch.nn.functional signature of activation `name`: input, its parameters (with
    PyTorch's defaults) and inplace where PyTorch takes it, by position or keyword."""
    act = ACTIVATIONS[name]
    order = [p for p, _ in act.params] + (["inplace"] if act.inplace else [])

    def fn(input: Tensor, *args, **kwargs) -> Tensor:
        if len(args) > len(order):
            raise TypeError(
                f"{name}() takes at most {len(order) + 1} arguments, got {len(args) + 1}"
            )
        given = dict(zip(order, args))
        for key, value in kwargs.items():
            if key not in order:
                raise TypeError(f"{name}() got an unexpected keyword argument {key!r}")
            if key in given:
                raise TypeError(f"{name}() got multiple values for argument {key!r}")
            given[key] = value
        values = tuple(given.get(p, default) for p, default in act.params)
        missing = [p for (p, _), v in zip(act.params, values) if v is None]
        if missing:
            raise TypeError(f"{name}() missing required argument {missing[0]!r}")
        defaults = not (args or kwargs)
        return activate(name, input, values, given.get("inplace", False), defaults)

    fn.__name__ = fn.__qualname__ = name
    params = "".join(f", {p}={v}" for p, v in act.params)
    fn.__doc__ = f"torch.nn.functional.{name}(input{params}) as one kernel."
    return fn


# A call with the tensor alone asks the fast door first (activate remembers it there).
FUNCTIONS = {
    name: fastpath.unary_first(_FAST + name, op_door(name, _public(name))) for name in ACTIVATIONS
}
# torch.nn.functional's in-place spellings: F.elu_(x) is F.elu(x, inplace=True).
INPLACE_SPELLINGS = ("elu", "celu", "selu", "leaky_relu", "hardtanh", "threshold")
FUNCTIONS.update(
    {
        f"{name}_": op_door(f"{name}_", functools.partial(_public(name), inplace=True))
        for name in INPLACE_SPELLINGS
    }
)


# ---- relu and silu: kael's own unary ops, with torch.nn.functional's inplace= --------------


def _unary_with_inplace(name: str):
    def fn(input: Tensor, inplace: bool = False) -> Tensor:
        from kael.frontend import elementwise as ew

        x = tensor_arg(input, name)
        if not isinstance(inplace, builtins.bool):
            raise TypeError(f"{name}: inplace must be a bool, got {type(inplace).__name__}")
        if not inplace:
            return ew.unary(name, x)
        check_writable(x, name)
        ew.unary(name, x, x)
        x._impl.storage.bump_version()  # an in-place write, as activate's and torch's count it
        return x

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"torch.nn.functional.{name}(input, inplace=False)."
    return fn


UNARY_WITH_INPLACE = {name: _unary_with_inplace(name) for name in ("relu", "silu")}


# ---- activations over two operands or a dim --------------------------------------------------


def glu(input: Tensor, dim: int = -1) -> Tensor:
    """a * sigmoid(b), a and b the two halves of input along `dim`, in one kernel."""
    x = tensor_arg(input, "glu")
    if not x.dtype.is_floating_point:
        raise UnsupportedDtype(f"glu: not implemented for {x.dtype} inputs (floating point only)")
    if x.ndim == 0:
        raise ValueError("glu does not support scalars because halving size must be even")
    d = views.wrap_dim(dim, x.ndim)
    size = x.shape[d]
    if size % 2:
        raise ValueError(f"Halving dimension must be even, but dimension {d} is size {size}")
    a, b = x.narrow(d, 0, size // 2), x.narrow(d, size // 2, size // 2)
    return launch(("glu",), [a, b], x.dtype, lambda left, right: left * right.apply("sigmoid"))


def prelu(input: Tensor, weight: Tensor) -> Tensor:
    """x where x > 0, else weight * x; weight has one value or one per channel (dim 1)."""
    x, w = tensor_arg(input, "prelu"), tensor_arg(weight, "prelu", "weight")
    if not x.dtype.is_floating_point:
        raise UnsupportedDtype(f"prelu: not implemented for {x.dtype} inputs (floating point only)")
    if w.dtype is not x.dtype:
        raise TypeError(f"prelu: weight has dtype {w.dtype} but input has dtype {x.dtype}")
    channels = x.shape[1] if x.ndim >= 2 else 1
    if w.numel() not in (1, channels):
        raise ValueError(
            "Mismatch of parameter numbers and input channel size. Found parameter numbers ="
            f" {w.numel()} and channel size = {channels}."
        )
    if w.numel() == 1:
        shaped = w.reshape(()).expand(x.shape)
    else:
        shaped = w.reshape((channels,) + (1,) * (x.ndim - 2)).expand(x.shape)
    formula = lambda v, slope: where(v > 0, v, slope * v)  # noqa: E731
    return launch(("prelu",), [x, shaped], x.dtype, formula, out=like_result(x._impl))


def softmin(input: Tensor, dim: int | None = None, dtype=None) -> Tensor:
    """softmax of -input along `dim` (none: torch's implicit choice, warned)."""
    from kael.frontend import nn

    x = tensor_arg(input, "softmin")
    d = nn.implicit_dim("softmin", x.ndim) if dim is None else dim
    return nn.softmax(-x if dtype is None else -(x.to(dtype)), d)


def gumbel_softmax(
    logits: Tensor, tau: float = 1.0, hard: bool = False, eps: float = 1e-10, dim: int = -1
) -> Tensor:
    """softmax((logits + g) / tau) along `dim`, g Gumbel noise (-log of exponential
    samples); `hard`: the one-hot of its argmax, in the value y_hard - y_soft + y_soft as
    PyTorch computes it."""
    from kael.frontend import nn, reductions

    x = tensor_arg(logits, "gumbel_softmax")
    if not x.dtype.is_floating_point:
        raise TypeError(f"gumbel_softmax: expected floating point logits, got {x.dtype}")
    noise = -Tensor(empty_impl(x.shape, x.dtype, x.device)).exponential_().log()
    soft = nn.softmax((x + noise) / tau, dim)
    if not hard:
        return soft
    d = views.wrap_dim(dim, x.ndim) if x.ndim else 0
    index = reductions.argmax(soft, d, keepdim=True)
    shape = [1] * x.ndim
    if x.ndim:
        shape[d] = x.shape[d]
    from kael.frontend import factories

    positions = factories.arange(x.shape[d] if x.ndim else 1, device=x.device).reshape(shape)
    one_hot = (positions == index).to(x.dtype)
    return one_hot - soft + soft


FUNCTIONS.update(
    {name: fastpath.unary_first(name, op_door(name, fn)) for name, fn in UNARY_WITH_INPLACE.items()}
)
FUNCTIONS["relu_"] = op_door("relu_", functools.partial(UNARY_WITH_INPLACE["relu"], inplace=True))
FUNCTIONS.update(
    {
        name: op_door(name, fn)
        for name, fn in (
            ("glu", glu),
            ("prelu", prelu),
            ("softmin", softmin),
            ("gumbel_softmax", gumbel_softmax),
        )
    }
)
