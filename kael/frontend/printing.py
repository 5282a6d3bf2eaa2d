"""Tensor printing: PyTorch's nested-bracket layout with chapter 02's fields and number format."""

from __future__ import annotations

from kael.runtime.tensor_impl import format_shape

THRESHOLD = 1000  # more elements than this are summarised
EDGE_ITEMS = 3  # elements kept at each end of a summarised dim
LINE_WIDTH = 80
PREFIX = "tensor("
_ELLIPSIS = object()  # stands for the elided middle of a summarised dim


def format_tensor(tensor) -> str:
    """`tensor([...], shape=[...], dtype=...)`, plus `, device=cuda:0` off the CPU."""
    array = tensor._host_array()
    fmt = _formatter(tensor.dtype)
    suffix = f", shape={format_shape(tensor.shape)}, dtype={tensor.dtype}"
    if tensor.device.type != "cpu":
        suffix += f", device={tensor.device}"
    if array.ndim == 0:
        body = fmt(array.item())
    elif array.size == 0:
        body = "[]"
    else:
        summarize = array.size > THRESHOLD
        values = _summarized(array) if summarize else array.tolist()
        width = max(len(fmt(v)) for v in _leaves(values))
        body = _render(values, array.ndim, len(PREFIX), fmt, width)
    return f"{PREFIX}{body}{suffix})"


def _formatter(dtype):
    """Floats fixed with 4 decimals (nan, inf, -inf as such), ints as ints, bools as true/false."""
    if dtype.is_floating_point:
        return "{:.4f}".format
    if dtype.is_bool:
        return lambda v: "true" if v else "false"
    return str


def _summarized(array) -> list:
    """Nested lists of the shown values: the edge items of every long dim around _ELLIPSIS."""
    if array.ndim == 0:
        return array.item()
    n = array.shape[0]
    if n > 2 * EDGE_ITEMS:
        head = [_summarized(array[i]) for i in range(EDGE_ITEMS)]
        tail = [_summarized(array[i]) for i in range(n - EDGE_ITEMS, n)]
        return [*head, _ELLIPSIS, *tail]
    return [_summarized(array[i]) for i in range(n)]


def _leaves(values):
    """Every shown value of nested lists, skipping the ellipsis marks."""
    if not isinstance(values, list):
        yield values
        return
    for v in values:
        if v is not _ELLIPSIS:
            yield from _leaves(v)


def _render(values: list, ndim: int, indent: int, fmt, width: int) -> str:
    """PyTorch's layout: rows wrapped at 80 columns, blank lines between blocks of rank > 2."""
    if ndim == 1:
        items = [" ..." if v is _ELLIPSIS else fmt(v).rjust(width) for v in values]
        per_line = max(1, (LINE_WIDTH - indent) // (width + 2))
        lines = [", ".join(items[i : i + per_line]) for i in range(0, len(items), per_line)]
        return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"
    rows = [
        "..." if v is _ELLIPSIS else _render(v, ndim - 1, indent + 1, fmt, width) for v in values
    ]
    return "[" + ("," + "\n" * (ndim - 1) + " " * (indent + 1)).join(rows) + "]"
