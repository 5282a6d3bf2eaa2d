"""Graph nodes: a DAG of values with dtypes and shapes, built by eager ops and by tracing.

Nodes compare by identity (two equal-looking inputs are still two inputs). Movement
nodes change how a value is indexed, never its bytes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from kael.runtime.dtypes import DType


@dataclass(frozen=True, eq=False, slots=True)
class Node:
    dtype: DType
    shape: tuple[int, ...]

    # The fields that hold operand nodes, in order; leaves have none.
    operand_fields: ClassVar[tuple[str, ...]] = ()

    @property
    def operands(self) -> tuple[Node, ...]:
        return tuple(getattr(self, f) for f in self.operand_fields)


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
    operand_fields: ClassVar[tuple[str, ...]] = ("x",)
    x: Node = None


@dataclass(frozen=True, eq=False, slots=True)
class Unary(Node):
    operand_fields: ClassVar[tuple[str, ...]] = ("x",)
    op: str = ""
    x: Node = None


@dataclass(frozen=True, eq=False, slots=True)
class Binary(Node):
    operand_fields: ClassVar[tuple[str, ...]] = ("a", "b")
    op: str = ""
    a: Node = None
    b: Node = None


@dataclass(frozen=True, eq=False, slots=True)
class Where(Node):
    operand_fields: ClassVar[tuple[str, ...]] = ("cond", "a", "b")
    cond: Node = None
    a: Node = None
    b: Node = None


@dataclass(frozen=True, eq=False, slots=True)
class Fma(Node):
    """a * b + c rounded once (a float fused multiply-add: torch's add with alpha)."""

    operand_fields: ClassVar[tuple[str, ...]] = ("a", "b", "c")
    a: Node = None
    b: Node = None
    c: Node = None


@dataclass(frozen=True, eq=False, slots=True)
class Reduce(Node):
    operand_fields: ClassVar[tuple[str, ...]] = ("x",)
    op: str = ""
    x: Node = None
    axes: tuple[int, ...] = ()


@dataclass(frozen=True, eq=False, slots=True)
class Matmul(Node):
    operand_fields: ClassVar[tuple[str, ...]] = ("a", "b")
    a: Node = None
    b: Node = None


@dataclass(frozen=True, eq=False, slots=True)
class Permute(Node):
    operand_fields: ClassVar[tuple[str, ...]] = ("x",)
    x: Node = None
    dims: tuple[int, ...] = ()


@dataclass(frozen=True, eq=False, slots=True)
class Expand(Node):
    operand_fields: ClassVar[tuple[str, ...]] = ("x",)
    x: Node = None


@dataclass(frozen=True, eq=False, slots=True)
class Reshape(Node):
    operand_fields: ClassVar[tuple[str, ...]] = ("x",)
    x: Node = None


@dataclass(frozen=True, eq=False, slots=True)
class Slice(Node):
    operand_fields: ClassVar[tuple[str, ...]] = ("x",)
    x: Node = None
    dim: int = 0
    start: int = 0
    step: int = 1


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
