"""torch's out= keyword for the public functions whose kael form computes a new result
(and the size= keyword of the `*size` creation functions):
the result is written into `out` as ATen's out= forms write (outputs.written_out: out
resized to the result's shape, warning when it held elements; its dtype must be the
result's, or, for the CASTING_OUT_FORMS, one the result casts to, as torch's). A creation
function given out= and no dtype= or device= creates in out's dtype and on its device, as
torch.zeros(3, out=t) does, and writes as ATen's factory out= forms write (created_out):
out resized silently, or, for arange,
linspace and logspace, kept in its shape when it holds as many elements. An out whose
elements share memory (an expanded tensor) is filled by zeros, ones and full, as torch's;
the others refuse it (torch's randperm writes into it, the last value winning)."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable

from kael.frontend.outputs import check_out_dtype, device_of, pair_out, tensor_arg, written_out
from kael.frontend.tensor import Tensor
from kael.runtime import user_warning
from kael.runtime.errors import TypeError

# kael's functions that torch also takes out= for, beside those that take it themselves
OUT_FORMS = (
    "cat", "concat", "concatenate", "stack", "index_select", "gather", "take",
    "take_along_dim", "masked_select", "atan2", "hypot", "xlogy", "logaddexp", "ldexp",
    "heaviside", "gcd", "nextafter", "fmax", "fmin", "diff", "kron", "tensordot", "diag",
    "histc", "logit", "polygamma", "mvlgamma", "aminmax", "renorm", "conj_physical", "lerp",
    "index_add", "index_copy", "scatter", "scatter_add", "signbit", "float_power",
    "bernoulli", "multinomial", "poisson", "igamma", "igammac", "angle", "arctan2",
    "logaddexp2", "lcm", "isposinf", "isneginf", "isin", "nonzero", "softmax", "log_softmax",
    "frexp",
)  # fmt: skip
# kael.special's functions that torch.special also takes out= for
SPECIAL_OUT_FORMS = ("xlog1py", "zeta", "multigammaln", "gammainc", "gammaincc")
# those torch builds as TensorIterator ops that cast their result into an out= of any dtype
# it may take (outputs.check_cast); the others' out= must have the result's dtype
CASTING_OUT_FORMS = frozenset({
    "cat", "concat", "concatenate", "stack", "atan2", "hypot", "xlogy", "logaddexp", "gcd",
    "nextafter", "fmax", "fmin", "diff", "kron", "logit", "polygamma", "mvlgamma", "lerp",
    "igamma", "igammac", "angle", "ldexp", "arctan2", "logaddexp2", "lcm", *SPECIAL_OUT_FORMS,
})  # fmt: skip


# those torch builds as TensorIterator ops: a resized out is laid out as their result
ELEMENTWISE_OUT_FORMS = frozenset({
    "angle", "arctan2", "atan2", "conj_physical", "diff", "float_power", "fmax", "fmin",
    "heaviside", "hypot", "igamma", "igammac", "isneginf", "isposinf", "ldexp", "lerp",
    "logaddexp", "logaddexp2", "logit", "nextafter", "signbit", "xlogy", "gcd", "lcm",
    "polygamma", "xlog1py", "zeta", "gammainc", "gammaincc",
})  # fmt: skip


def _casts(name: str, args: tuple, kwargs: dict) -> bool:
    """Whether a call of out form `name` casts into another dtype: the CASTING_OUT_FORMS do,
    but lerp with a weight tensor of 1 or more dims (torch's lerp then checks one dtype)."""
    if name == "lerp":
        weight = args[2] if len(args) > 2 else kwargs.get("weight")
        return not (isinstance(weight, Tensor) and weight.ndim)
    return name in CASTING_OUT_FORMS


# creation functions of `*size`, which torch also takes as size=
SIZED = ("zeros", "ones", "empty", "rand", "randn")
CREATION_OUT_FORMS = (
    "zeros", "ones", "full", "empty", "arange", "linspace", "logspace", "rand", "randn",
    "randint", "randperm",
)  # fmt: skip
# creation functions whose out keeps its shape when it holds the result's number of elements,
# resized to the result's 1-d shape otherwise: name -> whether that warns when out held any
KEEPS_SHAPE = {"arange": True, "linspace": False, "logspace": False}


def with_out(fn: Callable, name: str, creation: bool = False) -> Callable:
    """fn taking torch's keyword-only out= (a tensor, or a pair for a pair of results)."""

    sized = name in SIZED

    @functools.wraps(fn)
    def call(*args, out=None, **kwargs):
        if out is None and not kwargs:  # the common call, first: kael.zeros(100)
            return fn(*args)
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
            return created_out(out, fn(*args, **kwargs), name)
        casts, elementwise = _casts(name, args, kwargs), name in ELEMENTWISE_OUT_FORMS
        return written_out(out, fn(*args, **kwargs), name, casts, elementwise)

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


def created_out(out: Tensor, piece: Tensor, name: str) -> Tensor:
    """piece, what creation function `name` made, written into out as torch's factory out=
    forms write it: dtype and device checked first, out resized (_resize_created), then
    filled by the writer of `name` (a copy in out's shape unless _WRITERS names another)."""
    check_out_dtype(out, piece, name)
    device_of([piece, out], name)
    _resize_created(out, piece, name)
    return _WRITERS.get(name, _copied)(out, piece)


def _resize_created(out: Tensor, piece: Tensor, name: str) -> None:
    """out resized to piece's shape as torch resizes it, silently (torch's resize_), except
    that KEEPS_SHAPE functions keep an out of piece's element count in its own shape."""
    if name not in KEEPS_SHAPE:
        out.resize_(piece.shape)
    elif out.numel() != piece.numel():
        if KEEPS_SHAPE[name] and out.numel():  # RangeFactories.cpp's warning, in torch's words
            user_warning.warn(
                f"The number of elements in the out tensor of shape {list(out.shape)} is"
                f" {out.numel()} which does not match the computed number of elements"
                f" {piece.numel()}. Note that this may occur as a result of rounding error."
                f" The out tensor will be resized to a tensor of shape ({piece.numel()},).",
                UserWarning,
            )
        out.resize_(piece.shape)


def _copied(out: Tensor, piece: Tensor) -> Tensor:
    """out holding piece's elements in row-major order, whatever out's shape."""
    return out.copy_(piece.reshape(out.shape))


def _filled(out: Tensor, piece: Tensor) -> Tensor:
    """out filled with piece's one value: fill_, like torch's, takes an out whose elements
    share memory (an expanded tensor), where a copy is refused."""
    return out.fill_(piece.reshape(-1)[0]) if piece.numel() else out


def _unwritten(out: Tensor, piece: Tensor) -> Tensor:
    """out as it is: torch.empty(out=) only resizes it."""
    return out


# how a creation function's result reaches out, where it is not a copy
_WRITERS = {"zeros": _filled, "ones": _filled, "full": _filled, "empty": _unwritten}


def install(namespace: dict, names: tuple[str, ...] = OUT_FORMS) -> None:
    """Give the functions of `namespace` (kael's, or kael.special's with SPECIAL_OUT_FORMS)
    named in `names` their out= keyword, and kael's creation functions theirs."""
    for name in names:
        namespace[name] = with_out(namespace[name], name)
    if names is OUT_FORMS:
        for name in CREATION_OUT_FORMS:
            namespace[name] = with_out(namespace[name], name, creation=True)
