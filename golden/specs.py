"""The vocabulary of the golden pattern tables: how one input is made (Spec), a case template
(Pattern) and the special values every float grid uses. golden/patterns*.py write the cases
with it; golden/generate.py turns them into files with PyTorch."""

from __future__ import annotations

import math
from dataclasses import dataclass

INT64_MAX, INT64_MIN = 2**63 - 1, -(2**63)
NAN, INF = math.nan, math.inf
SPECIAL_VALUES = [NAN, INF, -INF, 0.0, -0.0, 1.0, -1.0, 1e-10, 1000.0, -1000.0]
# The dtypes added after the first grids: integers of every width and the half floats.
SMALL_INTS = ("int32", "int16", "int8", "uint8")
HALF_FLOATS = ("float16", "bfloat16")


@dataclass(frozen=True)
class Spec:
    """How to make one input: kind is normal, positive, int64 (small integers, -5..5, in any
    dtype: uint8 wraps the negative ones), nonzero (those without 0), index (int64 in
    [0, high)), bool, unit (floats in (0, 1)) or values (explicit `values`, reshaped to
    `shape`)."""

    shape: tuple[int, ...]
    dtype: str = "float32"
    kind: str = ""
    view: str = "none"
    values: tuple | None = None
    high: int = 0


def spec(shape, dtype="float32", kind="", view="none", values=None, high=0) -> Spec:
    """A Spec whose kind defaults to values (when given), small integers for an integer
    dtype, bool for bool and normal floats otherwise."""
    if not kind:
        if values is not None:
            kind = "values"
        elif dtype == "bool":
            kind = "bool"
        elif dtype == "int64" or dtype in SMALL_INTS:
            kind = "int64"
        else:
            kind = "normal"
    return Spec(tuple(shape), dtype, kind, view, None if values is None else tuple(values), high)


@dataclass(frozen=True)
class Pattern:
    """A case template: name, named input specs and keyword args for the op."""

    name: str
    inputs: dict[str, Spec]
    args: dict


def P(name: str, args: dict | None = None, **inputs: Spec) -> Pattern:
    return Pattern(name, inputs, args or {})


def layout_patterns(kind: str = "normal") -> list[Pattern]:
    """One input x of float32 `kind` in every layout: contiguous, transposed, stepped,
    expanded, permuted, 0-d and empty (the head of the unary and activation grids)."""
    f = lambda shape, view="none": spec(shape, "float32", kind, view)  # noqa: E731
    return [
        P("contiguous", x=f((3, 4))),
        P("transposed", x=f((5, 3), "transpose:0:1")),
        P("stepped", x=f((3, 8), "slice:1:1:8:3")),
        P("expanded", x=f((1, 4), "expand:3:4")),
        P("permuted", x=f((4, 2, 3), "permute:2:0:1")),
        P("zero_d", x=f(())),
        P("empty", x=f((0, 3))),
    ]


def renamed(patterns: list[Pattern], prefix: str) -> list[Pattern]:
    """The patterns with `prefix_` before each name: one grid reused under another heading."""
    return [Pattern(f"{prefix}_{p.name}", p.inputs, p.args) for p in patterns]


def with_args(patterns: list[Pattern], **args) -> list[Pattern]:
    """The patterns with `args` added to each one's (an op's required arguments)."""
    return [Pattern(p.name, p.inputs, {**p.args, **args}) for p in patterns]


def only(patterns: list[Pattern], *names: str) -> list[Pattern]:
    """The patterns of the given names, in the grid's order."""
    return [p for p in patterns if p.name in names]
