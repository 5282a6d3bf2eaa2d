"""The combining step of every reduction, on both backends: each op's identity and its
`a (+) c` on scalars or vectors (kael/codegen/cpu/reduce.py, kael/codegen/ptx/reduce.py).

arg ops carry (value, index) pairs; a paired sum carries its second total the same way.
"""

from __future__ import annotations

from llvmlite import ir

from kael.codegen.lowering import declare, mangle
from kael.ir.reduction import ARG_OPS
from kael.runtime.dtypes import DType


def identity(op: str, dtype: DType) -> bool | int | float:
    """The value every block starts from: the op's neutral element."""
    base = ARG_OPS.get(op, op)
    if base in ("sum", "any"):
        return 0
    if base in ("prod", "all"):
        return 1
    if dtype.is_floating_point:
        return float("-inf") if base == "max" else float("inf")
    return dtype.min if base == "max" else dtype.max


class Combiner:
    """Emits `a (+) c` for one op, on scalars or vectors alike; arg ops carry indices."""

    def __init__(self, b: ir.IRBuilder, op: str, dtype: DType):
        self.b, self.op, self.dtype = b, op, dtype

    def _add(self, a, c, fuse=True):
        """a + c; with `fuse`, a prologue's product c = x * y (norm's, var's squares) is
        fused into fma(x, y, a): one rounding, one instruction."""
        b = self.b
        if not self.dtype.is_floating_point:
            return b.add(a, c)
        if fuse and isinstance(c, ir.Instruction) and c.opname == "fmul":
            fnty = ir.FunctionType(c.type, [c.type] * 3)
            fma = declare(b.module, f"llvm.fma.{mangle(c.type)}", fnty)
            return b.call(fma, [*c.operands, a])
        return b.fadd(a, c)

    def __call__(self, a, ia, c, ic, fuse=True):
        b, op, dt = self.b, self.op, self.dtype
        if op == "sum":
            return self._add(a, c, fuse), (
                None if ia is None or ic is None else self._add(ia, ic, fuse)
            )
        if op == "prod":
            return (b.fmul(a, c) if dt.is_floating_point else b.mul(a, c)), None
        if op == "all":
            return b.and_(a, c), None
        if op == "any":
            return b.or_(a, c), None
        greater = ARG_OPS.get(op, op) == "max"
        rel = ">" if greater else "<"
        if dt.is_floating_point:
            a_nan = b.fcmp_unordered("uno", a, a)
            c_nan = b.fcmp_unordered("uno", c, c)
            better = b.fcmp_ordered(rel, a, c)
            equal = b.fcmp_ordered("==", a, c)
        else:
            cmp = b.icmp_signed if dt.signed else b.icmp_unsigned
            better, equal = cmp(rel, a, c), cmp("==", a, c)
        if op not in ARG_OPS:
            if not dt.is_floating_point:
                return b.select(better, a, c), None
            # NaN wins from either side: max/min propagate it.
            return b.select(b.or_(a_nan, b.and_(b.not_(c_nan), better)), a, c), None
        first = b.icmp_signed("<", ia, ic)
        take_a = b.or_(better, b.and_(equal, first))
        if dt.is_floating_point:
            # The first NaN wins; any NaN beats every number.
            take_a = b.select(a_nan, b.or_(b.not_(c_nan), first), b.and_(b.not_(c_nan), take_a))
        return b.select(take_a, a, c), b.select(take_a, ia, ic)
