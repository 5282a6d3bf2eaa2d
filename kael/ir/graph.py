"""Graph nodes: a DAG of values with dtypes and shapes, built by eager ops and by tracing.

Nodes compare by identity (two equal-looking inputs are still two inputs). Movement
nodes change how a value is indexed, never its bytes.
"""

from __future__ import annotations

from dataclasses import dataclass

from kael.runtime.dtypes import DType


@dataclass(frozen=True, eq=False, slots=True)
class Node:
    dtype: DType
    shape: tuple[int, ...]

    @property
    def operands(self) -> tuple[Node, ...]:
        return ()


@dataclass(frozen=True, eq=False, slots=True)
class Input(Node):
    """A strided buffer passed at run time."""

    name: str = ""


@dataclass(frozen=True, eq=False, slots=True)
class Const(Node):
    value: bool | int | float = 0


@dataclass(frozen=True, eq=False, slots=True)
class Scalar(Node):
    """A scalar supplied at run time under `name`, so one kernel serves every value."""

    name: str = ""


@dataclass(frozen=True, eq=False, slots=True)
class Position(Node):
    """The int64 index along `axis` of its own shape (arange, eye)."""

    axis: int = 0


@dataclass(frozen=True, eq=False, slots=True)
class Cast(Node):
    x: Node = None

    @property
    def operands(self) -> tuple[Node, ...]:
        return (self.x,)


@dataclass(frozen=True, eq=False, slots=True)
class Unary(Node):
    op: str = ""
    x: Node = None

    @property
    def operands(self) -> tuple[Node, ...]:
        return (self.x,)


@dataclass(frozen=True, eq=False, slots=True)
class Binary(Node):
    op: str = ""
    a: Node = None
    b: Node = None

    @property
    def operands(self) -> tuple[Node, ...]:
        return (self.a, self.b)


@dataclass(frozen=True, eq=False, slots=True)
class Where(Node):
    cond: Node = None
    a: Node = None
    b: Node = None

    @property
    def operands(self) -> tuple[Node, ...]:
        return (self.cond, self.a, self.b)


@dataclass(frozen=True, eq=False, slots=True)
class Reduce(Node):
    op: str = ""
    x: Node = None
    axes: tuple[int, ...] = ()

    @property
    def operands(self) -> tuple[Node, ...]:
        return (self.x,)


@dataclass(frozen=True, eq=False, slots=True)
class Matmul(Node):
    a: Node = None
    b: Node = None

    @property
    def operands(self) -> tuple[Node, ...]:
        return (self.a, self.b)


@dataclass(frozen=True, eq=False, slots=True)
class Permute(Node):
    x: Node = None
    dims: tuple[int, ...] = ()

    @property
    def operands(self) -> tuple[Node, ...]:
        return (self.x,)


@dataclass(frozen=True, eq=False, slots=True)
class Expand(Node):
    x: Node = None

    @property
    def operands(self) -> tuple[Node, ...]:
        return (self.x,)


@dataclass(frozen=True, eq=False, slots=True)
class Reshape(Node):
    x: Node = None

    @property
    def operands(self) -> tuple[Node, ...]:
        return (self.x,)


@dataclass(frozen=True, eq=False, slots=True)
class Slice(Node):
    x: Node = None
    dim: int = 0
    start: int = 0
    step: int = 1

    @property
    def operands(self) -> tuple[Node, ...]:
        return (self.x,)


def topo_order(outputs: list[Node]) -> list[Node]:
    """Every node reachable from `outputs`, operands before users, each once."""
    seen: set[int] = set()
    order: list[Node] = []

    def visit(n: Node) -> None:
        if id(n) in seen:
            return
        seen.add(id(n))
        for o in n.operands:
            visit(o)
        order.append(n)

    for out in outputs:
        visit(out)
    return order
