"""Per-element expressions: the body of a Kernel, computing one output element.

Expressions are frozen and hashable, so a Kernel is its own cache key, and they
carry no shapes: one compiled kernel serves every shape of its rank and layout.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from kael.ir.ops import BINARY_OPS, UNARY_OPS, may_fault
from kael.runtime.dtypes import DType, bool_, int64


@dataclass(frozen=True, slots=True)
class Expr:
    """Base of all expressions; `dtype` is the element type of the value."""

    dtype: DType


@dataclass(frozen=True, slots=True)
class Load(Expr):
    """Element of input buffer `buffer` at the current index."""

    buffer: int


@dataclass(frozen=True, slots=True)
class Const(Expr):
    """A constant already converted to `dtype` (bool as 0/1, float32 rounded)."""

    value: bool | int | float

    def __eq__(self, other: object) -> bool:
        # NaN constants must compare equal so equal kernels share one cache entry.
        if not isinstance(other, Const) or other.dtype is not self.dtype:
            return False
        a, b = self.value, other.value
        if isinstance(a, float) and isinstance(b, float):
            return (math.isnan(a) and math.isnan(b)) or (
                a == b and math.copysign(1, a) == math.copysign(1, b)
            )
        return a == b and type(a) is type(b)

    def __hash__(self) -> int:
        return hash((Const, self.dtype.name, repr(self.value)))


@dataclass(frozen=True, slots=True)
class Param(Expr):
    """A scalar passed at run time in slot `slot`, so one kernel serves every value."""

    slot: int


@dataclass(frozen=True, slots=True)
class Index(Expr):
    """The int64 position along output dimension `axis` (arange, eye, tril...)."""

    axis: int


@dataclass(frozen=True, slots=True)
class Cast(Expr):
    """`x` converted to `dtype` with chapter 02's rules (bool normalises, float->int saturates)."""

    x: Expr


@dataclass(frozen=True, slots=True)
class Unary(Expr):
    op: str
    x: Expr


@dataclass(frozen=True, slots=True)
class Binary(Expr):
    op: str
    a: Expr
    b: Expr


@dataclass(frozen=True, slots=True)
class Where(Expr):
    cond: Expr
    a: Expr
    b: Expr


def index(axis: int) -> Index:
    return Index(int64, axis)


def cast(x: Expr, dtype: DType) -> Expr:
    """`x` as `dtype`, or `x` itself when it already is."""
    return x if x.dtype is dtype else Cast(dtype, x)


def _result(kind: str, op: str, dtype: DType) -> DType:
    if kind == "float" and not dtype.is_floating_point:
        raise AssertionError(f"{op} is built on floating operands only, got {dtype}")
    return bool_ if kind == "bool" else dtype


def unary(op: str, x: Expr) -> Unary:
    return Unary(_result(UNARY_OPS[op], op, x.dtype), op, x)


def binary(op: str, a: Expr, b: Expr) -> Binary:
    if a.dtype is not b.dtype:
        raise AssertionError(f"binary {op} needs one dtype, got {a.dtype} and {b.dtype}")
    return Binary(_result(BINARY_OPS[op], op, a.dtype), op, a, b)


def where(cond: Expr, a: Expr, b: Expr) -> Where:
    return Where(a.dtype, cast(cond, bool_), a, b)


def children(e: Expr) -> tuple[Expr, ...]:
    """The operands of an expression, in order."""
    if isinstance(e, Cast | Unary):
        return (e.x,)
    if isinstance(e, Binary):
        return (e.a, e.b)
    if isinstance(e, Where):
        return (e.cond, e.a, e.b)
    return ()


def walk(e: Expr) -> list[Expr]:
    """Every node of an expression tree, operands before users (a shared operand once per
    use). Iterative: nested generators cost a pass through every level per node."""
    out: list[Expr] = []
    stack: list[tuple[Expr, bool]] = [(e, False)]
    while stack:
        node, expanded = stack.pop()
        if expanded:
            out.append(node)
            continue
        stack.append((node, True))
        stack.extend((c, False) for c in reversed(children(node)))
    return out


def uses_ops(e: Expr, ops) -> bool:
    """Whether `e` has a unary or binary node whose op is in `ops`."""
    return any(isinstance(n, Unary | Binary) and n.op in ops for n in walk(e))


def uses_index(e: Expr) -> bool:
    return any(isinstance(n, Index) for n in walk(e))


def node_faults(n: Expr) -> bool:
    """Whether this node itself can report a fault (integer division by zero)."""
    return isinstance(n, Unary | Binary) and may_fault(n.op, children(n)[0].dtype)


def faults(e: Expr) -> bool:
    """Whether evaluating `e` can report a fault (integer division by zero)."""
    return any(node_faults(n) for n in walk(e))


# id(exprs) -> (exprs, whether any faults): asked at every launch planned, and a kernel's
# specializations share its tuple of expressions (the tuple is held, so its id stays its own)
_faulting: dict[int, tuple[tuple, bool]] = {}


def any_faults(exprs: tuple[Expr, ...]) -> bool:
    """Whether evaluating any of `exprs` can report a fault; memoized per tuple."""
    hit = _faulting.get(id(exprs))
    if hit is not None and hit[0] is exprs:
        return hit[1]
    found = any(faults(e) for e in exprs)
    if len(_faulting) >= 4096:
        _faulting.clear()
    _faulting[id(exprs)] = (exprs, found)
    return found
