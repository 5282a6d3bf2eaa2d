"""Per-element expressions: the body of a Kernel, computing one output element.

Expressions are frozen and hashable, so a Kernel is its own cache key, and they
carry no shapes: one compiled kernel serves every shape of its rank and layout.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kael.ir.ops import BINARY_OPS, UNARY_OPS, may_fault
from kael.runtime.dtypes import DType, bool_, int64

# Expressions are DAGs: a formula reuses its subexpressions (asin's is 123 nodes, 1.4
# million as a tree). So each node keeps its hash, computed once from its operands' hashes,
# equality walks each pair of nodes once, and walks visit each node once.
_node = dataclass(frozen=True, slots=True, eq=False, repr=False)


@_node
class Expr:
    """Base of all expressions; `dtype` is the element type of the value."""

    dtype: DType
    _hash: int = field(init=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_hash", hash((type(self).__name__, *self._key())))

    def _key(self) -> tuple:
        """The fields that decide equality, operands included (every expression class
        derives from Expr directly, so its own slots and the dtype are all its fields)."""
        return (self.dtype, *(getattr(self, name) for name in self.__slots__))

    def __hash__(self) -> int:
        return self._hash

    def __repr__(self) -> str:
        """The printer's text (each shared node once; a dataclass repr goes by paths)."""
        from kael.ir.printer import format_expr  # it imports this module

        return f"<{self.dtype} {format_expr(self)}>"

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        if type(other) is not type(self) or other._hash != self._hash:
            return False
        return _same(self, other)


@_node
class Load(Expr):
    """Element of input buffer `buffer` at the current index."""

    buffer: int


@_node
class Const(Expr):
    """A constant already converted to `dtype` (bool as 0/1, float32 rounded)."""

    value: bool | int | float

    def _key(self) -> tuple:
        # repr tells 1 from 1.0 and True, and -0.0 from 0.0, and makes every NaN one
        # constant, so equal kernels share one cache entry.
        return (self.dtype, "nan" if self.value != self.value else repr(self.value))


@_node
class Param(Expr):
    """A scalar passed at run time in slot `slot`, so one kernel serves every value."""

    slot: int


@_node
class Index(Expr):
    """The int64 position along output dimension `axis` (arange, eye, tril...)."""

    axis: int


@_node
class Cast(Expr):
    """`x` converted to `dtype` with chapter 02's rules (bool normalises, float->int saturates)."""

    x: Expr


@_node
class Unary(Expr):
    op: str
    x: Expr


@_node
class Binary(Expr):
    op: str
    a: Expr
    b: Expr


@_node
class Where(Expr):
    cond: Expr
    a: Expr
    b: Expr


@_node
class Fma(Expr):
    """a * b + c of one float dtype, rounded once (llvm.fma)."""

    a: Expr
    b: Expr
    c: Expr


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


def fma(a: Expr, b: Expr, c: Expr) -> Fma:
    """a * b + c rounded once; the three of one float dtype (the scheduler casts them)."""
    if not (a.dtype is b.dtype is c.dtype):
        raise AssertionError(f"fma needs one dtype, got {a.dtype}, {b.dtype} and {c.dtype}")
    return Fma(_result("float", "fma", a.dtype), a, b, c)


def children(e: Expr) -> tuple[Expr, ...]:
    """The operands of an expression, in order."""
    if isinstance(e, Cast | Unary):
        return (e.x,)
    if isinstance(e, Binary):
        return (e.a, e.b)
    if isinstance(e, Where):
        return (e.cond, e.a, e.b)
    if isinstance(e, Fma):
        return (e.a, e.b, e.c)
    return ()


def walk(e: Expr) -> list[Expr]:
    """Every node of an expression, operands before users, each shared node once.
    Iterative: nested generators cost a pass through every level per node."""
    out: list[Expr] = []
    seen: set[int] = set()
    stack: list[tuple[Expr, bool]] = [(e, False)]
    while stack:
        node, expanded = stack.pop()
        if expanded:
            out.append(node)
        elif id(node) not in seen:
            seen.add(id(node))
            stack.append((node, True))
            stack.extend((c, False) for c in reversed(children(node)))
    return out


def _same(a: Expr, b: Expr) -> bool:
    """Structural equality of two expressions of one class and hash, each pair of nodes
    compared once (equal DAGs built apart share no nodes, so a pair recurs per path)."""
    done: set[tuple[int, int]] = set()
    stack = [(a, b)]
    while stack:
        a, b = stack.pop()
        if a is b or (id(a), id(b)) in done:
            continue
        if type(a) is not type(b) or a._hash != b._hash:
            return False
        done.add((id(a), id(b)))
        ka, kb = a._key(), b._key()
        for x, y in zip(ka, kb, strict=True):
            if isinstance(x, Expr):
                stack.append((x, y))
            elif x != y:
                return False
    return True


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
