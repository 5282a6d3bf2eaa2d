"""assert_close: are two (nested) values close, as torch.testing.assert_close decides it.

Inputs pair up as torch pairs them: None with None, bools with bools, Python numbers with
numbers, tensors with tensors (NumPy arrays with arrays), sequences item by item and mappings
key by key. Tensors must agree in shape, device, dtype (unless check_dtype=False: both are
promoted) and, on request, strides; then every element must satisfy
|actual - expected| <= atol + rtol * |expected| (kael.isclose). The messages are torch's
word for word, so a failing test reads the same under either library."""

from __future__ import annotations

import cmath
import collections.abc
import numbers
from collections.abc import Callable

import numpy as np

from kael.frontend import factories
from kael.frontend.tensor import Tensor
from kael.runtime.dtypes import DType, bfloat16, float16, float32, float64, promote_types
from kael.runtime.errors import TypeError, ValueError

# (rtol, atol) by dtype, torch's defaults; exact for integers and bool.
TOLERANCES: dict[DType, tuple[float, float]] = {
    float16: (1e-3, 1e-5),
    bfloat16: (1.6e-2, 1e-5),
    float32: (1.3e-6, 1e-5),
    float64: (1e-7, 1e-7),
}


class _Mismatch(AssertionError):
    """A failed comparison; `path` is the nested item it happened at ([1]['a'] ...)."""

    def __init__(self, text: str, path: str = "") -> None:
        super().__init__(text)
        self.text, self.path = text, path


# Python numbers compare at float64's tolerances (complex at complex128's: the same).
NUMBER_TOLERANCES = {int: (0.0, 0.0), float: (1e-7, 1e-7), complex: (1e-7, 1e-7)}
# torch's deprecated assert_allclose has its own table.
ALLCLOSE_TOLERANCES = {float16: (1e-3, 1e-3), float32: (1e-4, 1e-5), float64: (1e-5, 1e-8)}


def _tolerances(
    kinds: tuple, rtol: float | None, atol: float | None, table: dict = TOLERANCES
) -> tuple[float, float]:
    """The given tolerances, else the loosest default among the compared dtypes (or Python
    number types); exact for the integers and bool."""
    if rtol is not None:
        return rtol, atol
    rtols, atols = zip(*(table.get(k, NUMBER_TOLERANCES.get(k, (0.0, 0.0))) for k in kinds))
    return max(rtols), max(atols)


def _diff_line(kind: str, diff, index, tol: float, exact: bool) -> str:
    """One line of the summary: the (greatest) difference of a kind, and its allowance."""
    line = (
        f"{kind.title()} difference: {diff}"
        if index is None
        else f"Greatest {kind} difference: {diff} at index {index}"
    )
    return line if exact else f"{line} (up to {tol} allowed)"


def _message(what: str, extra: str, abs_part: tuple, rel_part: tuple, rtol, atol) -> str:
    """torch's failure text: "<what> are not close!", `extra`, then the two difference lines."""
    exact = rtol == 0 and atol == 0
    lines = [
        f"{what} are not {'equal' if exact else 'close'}!",
        "",
        extra,
        _diff_line("absolute", *abs_part, atol, exact),
        _diff_line("relative", *rel_part, rtol, exact),
    ]
    return "\n".join(lines)


def _scalar_message(actual, expected, rtol: float, atol: float) -> str:
    diff = abs(actual - expected)
    rel = float("inf") if expected == 0 else diff / abs(expected)
    extra = f"Expected {expected} but got {actual}."
    return _message("Scalars", extra, (diff, None), (rel, None), rtol, atol)


def _unravel(flat: int, shape: tuple[int, ...]) -> tuple[int, ...]:
    """The index in `shape` of row-major element `flat`."""
    index = []
    for size in reversed(shape):
        flat, rest = divmod(flat, size)
        index.append(rest)
    return tuple(reversed(index))


def _tensor_message(actual: Tensor, expected: Tensor, matches: Tensor, rtol, atol) -> str:
    """torch's summary: how many elements differ, and the greatest absolute and relative
    differences among them with their indices (integers widened to int64 first)."""
    total = matches.numel()
    wrong = total - int(matches.sum().item())
    extra = f"Mismatched elements: {wrong} / {total} ({wrong / total:.1%})"
    a, e, ok = actual.flatten(), expected.flatten(), matches.flatten()
    if not actual.dtype.is_floating_point:
        a, e = a.long(), e.long()
    abs_diff = factories.zeros_like(a).where(ok, (a - e).abs())
    rel_diff = (abs_diff / e.abs()).masked_fill(ok, 0)
    parts = []
    for diff in (abs_diff, rel_diff):
        value, at = diff.max(0)
        parts.append((value.item(), _unravel(int(at.item()), actual.shape)))
    return _message("Tensor-likes", extra, *parts, rtol, atol)


def _compare_tensors(actual: Tensor, expected: Tensor, options: dict) -> None:
    """Attributes first (shape, device, dtype, strides), then the values elementwise."""
    if not options["check_device"] and actual.device != expected.device:
        actual, expected = actual.cpu(), expected.cpu()
    checks = [("shape", lambda t: t.shape, True), ("device", lambda t: t.device, True)]
    checks += [("dtype", lambda t: t.dtype, options["check_dtype"])]
    checks += [("stride()", lambda t: t.stride(), options["check_stride"])]
    for name, read, wanted in checks:
        if wanted and read(actual) != read(expected):
            a, b = read(actual), read(expected)
            if name == "shape":
                a, b = factories.Size(a), factories.Size(b)
            raise _Mismatch(f"The values for attribute '{name}' do not match: {a!r} != {b!r}.")
    rtol, atol = _tolerances(
        (actual.dtype, expected.dtype), options["rtol"], options["atol"], options["table"]
    )
    if actual.dtype != expected.dtype:
        common = promote_types(actual.dtype, expected.dtype)
        actual, expected = actual.to(common), expected.to(common)
    if actual.numel() == 0:
        return
    matches = actual.isclose(expected, rtol=rtol, atol=atol, equal_nan=options["equal_nan"])
    if bool(matches.all().item()):
        return
    if actual.dim() == 0:
        raise _Mismatch(_scalar_message(actual.item(), expected.item(), rtol, atol))
    raise _Mismatch(_tensor_message(actual, expected, matches, rtol, atol))


def _compare_numbers(actual, expected, options: dict) -> None:
    """Python numbers (NumPy's as their Python values): the same type unless check_dtype
    is off, then close at the wider type's tolerances."""
    actual, expected = (x.item() if isinstance(x, np.generic) else x for x in (actual, expected))
    if options["check_dtype"] and type(actual) is not type(expected):
        raise _Mismatch(f"The (d)types do not match: {type(actual)} != {type(expected)}.")
    kinds = (type(actual), type(expected))
    rtol, atol = _tolerances(kinds, options["rtol"], options["atol"])
    if actual == expected:
        return
    if options["equal_nan"] and cmath.isnan(actual) and cmath.isnan(expected):
        return
    if abs(actual - expected) <= atol + rtol * abs(expected):
        return
    raise _Mismatch(_scalar_message(actual, expected, rtol, atol))


def _is_number(x) -> bool:
    return isinstance(x, numbers.Number) and not isinstance(x, (bool, np.bool_))


def _is_sequence(x) -> bool:
    return isinstance(x, collections.abc.Sequence) and not isinstance(x, str)


def _compare(actual, expected, options: dict, path: str) -> None:
    """Compare one pair, recursing into sequences and mappings; _Mismatch on a difference,
    TypeError where no pair takes the two types."""
    try:
        _compare_one(actual, expected, options, path)
    except _Mismatch as failure:
        if not failure.path:
            failure.path = path
        raise


def _compare_one(actual, expected, options: dict, path: str) -> None:
    subclasses = options["allow_subclasses"]
    if actual is None or expected is None:
        if actual is not expected:
            raise _Mismatch(f"None mismatch: {actual} is not {expected}")
        return
    if isinstance(actual, (bool, np.bool_)) and isinstance(expected, (bool, np.bool_)):
        if bool(actual) != bool(expected):
            raise _Mismatch(f"Booleans mismatch: {bool(actual)} is not {bool(expected)}")
        return
    if _is_number(actual) and _is_number(expected):
        return _compare_numbers(actual, expected, options)
    for kind in (Tensor, np.ndarray):  # tensors pair with tensors, arrays with arrays
        paired = isinstance(actual, kind) and isinstance(expected, kind)
        if paired and (subclasses or type(actual) is type(expected)):
            a, e = (
                x if isinstance(x, Tensor) else factories.as_tensor(x) for x in (actual, expected)
            )
            return _compare_tensors(a, e, options)
    if _is_sequence(actual) and _is_sequence(expected):
        if len(actual) != len(expected):
            raise _Mismatch(
                f"The length of the sequences mismatch: {len(actual)} != {len(expected)}"
            )
        for i, (a, e) in enumerate(zip(actual, expected)):
            _compare(a, e, options, f"{path}[{i}]")
        return
    if isinstance(actual, collections.abc.Mapping) and isinstance(
        expected, collections.abc.Mapping
    ):
        missing = sorted(set(expected) - set(actual), key=repr)
        extra = sorted(set(actual) - set(expected), key=repr)
        if missing or extra:
            raise _Mismatch(
                "The keys of the mappings do not match:\n"
                f"Missing keys in the actual mapping: {missing}\n"
                f"Additional keys in the actual mapping: {extra}"
            )
        for key in expected:
            _compare(actual[key], expected[key], options, f"{path}[{key!r}]")
        return
    raise TypeError(
        f"No comparison pair was able to handle inputs of type {type(actual)} and {type(expected)}."
    )


def assert_close(
    actual,
    expected,
    *,
    allow_subclasses: bool = True,
    rtol: float | None = None,
    atol: float | None = None,
    equal_nan: bool = False,
    check_device: bool = True,
    check_dtype: bool = True,
    check_layout: bool = True,
    check_stride: bool = False,
    msg: str | Callable[[str], str] | None = None,
) -> None:
    """Raise AssertionError unless `actual` and `expected` are close (torch.testing's rules,
    defaults and messages); `msg` replaces the message, or rewrites it when callable.
    check_layout is accepted for torch's signature: kael tensors are all strided."""
    if (rtol is None) != (atol is None):
        missing = "atol" if atol is None else "rtol"
        raise ValueError(
            f"Both 'rtol' and 'atol' must be either specified or omitted, but got no {missing}."
        )
    options = {
        "table": TOLERANCES,
        "allow_subclasses": allow_subclasses,
        "rtol": rtol,
        "atol": atol,
        "equal_nan": equal_nan,
        "check_device": check_device,
        "check_dtype": check_dtype,
        "check_stride": check_stride,
    }
    try:
        _compare(actual, expected, options, "")
    except _Mismatch as failure:
        text = failure.text
        if failure.path:
            text += f"\n\nThe failure occurred for item {failure.path}"
        if callable(msg):
            text = msg(text)
        elif msg is not None:
            text = msg
        raise AssertionError(text) from None


def assert_allclose(actual, expected, rtol=None, atol=None, equal_nan=True, msg="") -> None:
    """torch's deprecated form: numbers and arrays become tensors of one dtype first, NaNs
    compare equal by default, and its own (looser) default tolerances."""
    if not isinstance(actual, Tensor):
        actual = factories.tensor(actual)
    if not isinstance(expected, Tensor):
        expected = factories.tensor(expected, dtype=actual.dtype)
    if rtol is None and atol is None:
        rtol, atol = _tolerances((actual.dtype, expected.dtype), None, None, ALLCLOSE_TOLERANCES)
    assert_close(
        actual, expected, rtol=rtol, atol=atol, equal_nan=equal_nan, check_device=True,
        check_dtype=False, check_stride=False, msg=msg or None,
    )  # fmt: skip
