"""Tensor printing: PyTorch's nested-bracket layout with chapter 02's fields and number format."""

from __future__ import annotations

import math
from typing import NamedTuple

from kael.runtime import sync
from kael.runtime.errors import TypeError, ValueError
from kael.runtime.tensor_impl import format_shape

PREFIX = "tensor("
_ELLIPSIS = object()  # stands for the elided middle of a summarised dim


class PrintOptions(NamedTuple):
    """torch.set_printoptions' fields; sci_mode None is kael's fixed-point default."""

    precision: int = 4  # decimals of a float
    threshold: float = 1000  # more elements than this are summarised
    edgeitems: int = 3  # elements kept at each end of a summarised dim
    linewidth: int = 80
    sci_mode: bool | None = None


PROFILES = {
    "default": PrintOptions(),
    "short": PrintOptions(precision=2, edgeitems=2),
    "full": PrintOptions(threshold=math.inf),
}
# One immutable record, replaced whole under the lock: a printing thread reads it once.
_options = PROFILES["default"]
_setting = sync.lock()  # a forked child gets it unlocked


def set_printoptions(
    precision: int | None = None,
    threshold: float | None = None,
    edgeitems: int | None = None,
    linewidth: int | None = None,
    profile: str | None = None,
    sci_mode: bool | None = None,
) -> None:
    """torch.set_printoptions: a profile's options (else the current ones) with the given
    fields replaced; sci_mode is always set (None: fixed point, kael's default)."""
    global _options
    changes = {
        name: _count(value, name)
        for name, value in (("precision", precision), ("edgeitems", edgeitems))
        if value is not None
    }
    if threshold is not None:
        changes["threshold"] = _threshold(threshold)
    if linewidth is not None:
        changes["linewidth"] = _count(linewidth, "linewidth")
    if sci_mode is not None and not isinstance(sci_mode, bool):
        raise TypeError(f"set_printoptions(): sci_mode must be a bool or None, got {sci_mode!r}")
    if profile is not None and profile not in PROFILES:
        raise ValueError(
            f"set_printoptions(): profile must be one of {', '.join(PROFILES)}, got {profile!r}"
        )
    with _setting:
        base = _options if profile is None else PROFILES[profile]
        _options = base._replace(**changes, sci_mode=sci_mode)


def get_printoptions() -> dict:
    """The current print options as a dict, as torch._tensor_str.get_printoptions gives them."""
    return _options._asdict()


def _count(value, name: str) -> int:
    """A non-negative int option; kael.TypeError or kael.ValueError naming it otherwise."""
    if type(value) is not int:
        raise TypeError(f"set_printoptions(): {name} must be an int, got {value!r}")
    if value < 0:
        raise ValueError(f"set_printoptions(): {name} must be non-negative, got {value}")
    return value


def _threshold(value) -> float:
    """threshold: an int, or a float such as math.inf (profile 'full' uses it)."""
    if type(value) not in (int, float) or math.isnan(value):
        raise TypeError(f"set_printoptions(): threshold must be a number, got {value!r}")
    return value


def format_tensor(tensor) -> str:
    """`tensor([...], shape=[...], dtype=...)`, plus `, device=cuda:0` off the CPU."""
    options = _options
    suffix = f", shape={format_shape(tensor.shape)}, dtype={tensor.dtype}"
    if tensor.device.type != "cpu":
        suffix += f", device={tensor.device}"
    if tensor.ndim and not tensor.numel():  # no values (NumPy refuses shapes past 2**63)
        return f"{PREFIX}[]{suffix})"
    fmt = _formatter(tensor.dtype, options)
    if tensor.ndim == 0:
        body = fmt(tensor._host_array().item())
    else:
        values = _shown_values(tensor, options)
        width = max((len(fmt(v)) for v in _leaves(values)), default=0)
        body = _render(values, tensor.ndim, len(PREFIX), fmt, (width, options.linewidth))
    return f"{PREFIX}{body}{suffix})"


def _shown_values(tensor, options: PrintOptions) -> list:
    """The values printed, as nested lists; past `threshold` elements, only the summary's
    are read (and converted, for bfloat16 or a GPU tensor), around _ELLIPSIS marks."""
    if tensor.numel() <= options.threshold:
        return tensor._host_array().tolist()
    edge = options.edgeitems
    cut = tuple(n > 2 * edge for n in tensor.shape)
    return _summarized(_shown(tensor, edge, cut)._host_array(), cut)


def _shown(tensor, edge: int, cut: tuple[bool, ...]):
    """A view (no copy) of the elements a summary shows: each cut dim split in two dims,
    (its head, its tail) by `edge` elements each."""
    shape, strides = [], []
    for n, stride, is_cut in zip(tensor.shape, tensor.stride(), cut):
        shape += [2, edge] if is_cut else [n]
        strides += [stride * (n - edge), stride] if is_cut else [stride]
    return tensor.as_strided(shape, strides)


def _formatter(dtype, options: PrintOptions):
    """Floats with `precision` decimals, fixed or in sci_mode scientific (nan, inf, -inf as
    such), complex numbers as two such parts (1.0000+2.0000j), ints as ints, bools as
    true/false."""
    style = "e" if options.sci_mode else "f"
    if dtype.is_floating_point:
        return f"{{:.{options.precision}{style}}}".format
    if dtype.is_complex:  # 1.0000+2.0000j
        spec = f"{{:.{options.precision}{style}}}{{:+.{options.precision}{style}}}j"
        return lambda v: spec.format(v.real, v.imag)
    if dtype.is_bool:
        return lambda v: "true" if v else "false"
    return str


def _summarized(array, cut: tuple[bool, ...]):
    """Nested lists of _shown's values: a cut dim's head and tail around _ELLIPSIS."""
    if not cut:
        return array.item()
    if cut[0]:
        head, tail = ([_summarized(row, cut[1:]) for row in half] for half in array)
        return [*head, _ELLIPSIS, *tail]
    return [_summarized(row, cut[1:]) for row in array]


def _leaves(values):
    """Every shown value of nested lists, skipping the ellipsis marks."""
    if not isinstance(values, list):
        yield values
        return
    for v in values:
        if v is not _ELLIPSIS:
            yield from _leaves(v)


def _render(values: list, ndim: int, indent: int, fmt, widths: tuple[int, int]) -> str:
    """PyTorch's layout: rows wrapped at `linewidth` columns (widths is the element's width
    and the line's), blank lines between blocks of rank > 2."""
    width, line = widths
    if ndim == 1:
        mark = " ..." if len(values) > 1 else "..."  # alone (edgeitems=0): torch's "[...]"
        items = [mark if v is _ELLIPSIS else fmt(v).rjust(width) for v in values]
        per_line = max(1, (line - indent) // (width + 2))
        lines = [", ".join(items[i : i + per_line]) for i in range(0, len(items), per_line)]
        return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"
    rows = [
        "..." if v is _ELLIPSIS else _render(v, ndim - 1, indent + 1, fmt, widths) for v in values
    ]
    return "[" + ("," + "\n" * (ndim - 1) + " " * (indent + 1)).join(rows) + "]"
