"""torch's out= keyword for the public functions whose kael form computes a new result
(and the size= keyword of the `*size` creation functions):
the result is written into `out` as ATen's out= forms write (outputs.written_out: out
resized to the result's shape, warning when it held elements; its dtype must be the
result's, kael casts nothing). A creation function given out= and no dtype= or device=
creates in out's dtype and on its device, as torch.zeros(3, out=t) does."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable

from kael.frontend.outputs import pair_out, tensor_arg, written_out
from kael.runtime.errors import TypeError

# kael's functions that torch also takes out= for, beside those that take it themselves
OUT_FORMS = (
    "cat", "concat", "concatenate", "stack", "index_select", "gather", "take",
    "take_along_dim", "masked_select", "atan2", "hypot", "xlogy", "logaddexp", "ldexp",
    "heaviside", "gcd", "nextafter", "fmax", "fmin", "diff", "kron", "tensordot", "diag",
    "histc", "logit", "polygamma", "mvlgamma", "aminmax", "renorm", "conj_physical", "lerp",
    "index_add", "index_copy", "scatter", "scatter_add", "signbit", "float_power",
    "bernoulli", "multinomial", "poisson",
)  # fmt: skip
# creation functions of `*size`, which torch also takes as size=
SIZED = ("zeros", "ones", "empty", "rand", "randn")
CREATION_OUT_FORMS = (
    "zeros", "ones", "full", "empty", "arange", "linspace", "logspace", "rand", "randn",
    "randint", "randperm",
)  # fmt: skip


def with_out(fn: Callable, name: str, creation: bool = False) -> Callable:
    """fn taking torch's keyword-only out= (a tensor, or a pair for a pair of results)."""

    sized = name in SIZED

    @functools.wraps(fn)
    def call(*args, out=None, **kwargs):
        if sized:
            args = _size_argument(name, args, kwargs)
        if out is None:
            return fn(*args, **kwargs)
        if isinstance(out, tuple | list):
            return pair_out(out, fn(*args, **kwargs), name)
        out = tensor_arg(out, name, "out")
        if creation:  # out's dtype and device where the call names none
            for keyword, value in (("dtype", out.dtype), ("device", out.device)):
                if kwargs.get(keyword) is None:
                    kwargs[keyword] = value
        return written_out(out, fn(*args, **kwargs), name)

    try:
        signature = inspect.signature(fn)
        out_parameter = inspect.Parameter("out", inspect.Parameter.KEYWORD_ONLY, default=None)
        parameters = list(signature.parameters.values())
        at = next((i for i, p in enumerate(parameters) if p.kind is p.VAR_KEYWORD), None)
        parameters.insert(len(parameters) if at is None else at, out_parameter)
        call.__signature__ = signature.replace(parameters=parameters)
    except (TypeError, ValueError):  # a builtin without a signature: wraps' is kept
        pass
    return call


def _size_argument(name: str, args: tuple, kwargs: dict) -> tuple:
    """The sizes of a `*size` creation call: its positional ones or its size= keyword, not
    both (no size at all is a 0-d tensor, where torch's parser refuses)."""
    if "size" in kwargs:
        if args:
            raise TypeError(f"{name}() got the size both as arguments and as size=")
        return (kwargs.pop("size"),)
    return args


def install(namespace: dict) -> None:
    """Give the functions of `namespace` (kael's) named above their out= keyword."""
    for name in OUT_FORMS:
        namespace[name] = with_out(namespace[name], name)
    for name in CREATION_OUT_FORMS:
        namespace[name] = with_out(namespace[name], name, creation=True)
