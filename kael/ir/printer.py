"""Short, stable text for expressions, kernels and graphs; kernel text keys the kernel cache."""

from __future__ import annotations

import math

from kael.ir.expr import (
    Binary,
    Cast,
    Const,
    Expr,
    Fma,
    Index,
    Load,
    Param,
    Unary,
    Where,
    children,
    walk,
)
from kael.ir.kernel import NO_PREFETCH, Kernel
from kael.ir.reduction import RUN_LENGTH, Reduction


def format_const(value: bool | int | float, dtype) -> str:
    if dtype.is_bool:
        text = "true" if value else "false"
    elif isinstance(value, float):
        text = "nan" if math.isnan(value) else repr(value)
    else:
        text = str(value)
    return f"{dtype}({text})"


def format_expr(e: Expr, loads: tuple[str, ...] | None = None) -> str:
    """One expression as nested calls: `cast<float32>(in0)`; `loads` names Load(i) (a
    reduction's epilogue reads its accumulators, not its inputs). A shared subexpression
    is bound first: `t0 = abs(in0); where(lt(t0, 1.0), t0, ...)`."""
    lines, (text,) = _format_group((e,), _loader(loads), "{} = {}")
    return "; ".join([*lines, text])


def _loader(loads: tuple[str, ...] | None):
    return (lambda i: f"in{i}") if loads is None else (lambda i: loads[i])


def _trivial(e: Expr) -> bool:
    """Leaves and casts of leaves: printed in place however often they are used."""
    while isinstance(e, Cast):
        e = e.x
    return not children(e)


def _format_group(
    exprs: tuple[Expr, ...], load, binding: str, first: int = 0
) -> tuple[list[str], list[str]]:
    """(binding lines, one text per expression): every non-trivial node used more than
    once is printed once, as t<i> (numbered from `first`), so the text grows with the
    nodes of the DAG, not with its paths."""
    uses: dict[int, int] = {}
    order: dict[int, Expr] = {}
    for root in exprs:
        uses[id(root)] = uses.get(id(root), 0) + 1
        for n in walk(root):
            if id(n) not in order:
                order[id(n)] = n
                for c in children(n):
                    uses[id(c)] = uses.get(id(c), 0) + 1
    names: dict[int, str] = {}
    lines = []
    for n in order.values():
        if uses[id(n)] > 1 and not _trivial(n):
            text = _format(n, load, names)
            names[id(n)] = f"t{first + len(names)}"
            lines.append(binding.format(names[id(n)], text))
    return lines, [names.get(id(e)) or _format(e, load, names) for e in exprs]


def _format(e: Expr, load, names: dict[int, str]) -> str:
    """e's text, each named operand by its name."""

    def arg(c: Expr) -> str:
        return names.get(id(c)) or _format(c, load, names)

    if isinstance(e, Load):
        return load(e.buffer)
    if isinstance(e, Const):
        return format_const(e.value, e.dtype)
    if isinstance(e, Param):
        return f"p{e.slot}"
    if isinstance(e, Index):
        return f"idx{e.axis}"
    if isinstance(e, Cast):
        return f"cast<{e.dtype}>({arg(e.x)})"
    if isinstance(e, Unary):
        return f"{e.op}({arg(e.x)})"
    if isinstance(e, Binary):
        return f"{e.op}({arg(e.a)}, {arg(e.b)})"
    if isinstance(e, Where | Fma):
        return f"{type(e).__name__.lower()}({', '.join(arg(c) for c in children(e))})"
    raise TypeError(f"cannot print expression of type {type(e).__name__}")


def format_kernel(k: Kernel) -> str:
    """The kernel as a few lines: header, buffers, shared subexpressions, one line per
    output expression."""
    if isinstance(k, Reduction):
        return format_reduction(k)
    schedule = ("tiled" if k.tiled else "flat") + (" nontemporal" if k.nontemporal else "")
    schedule += "" if k.fenced or not k.nontemporal else " unfenced"
    lines = [f"kernel {k.name} rank={k.rank} {schedule}"]
    lines += [f"  out{i}: {b.dtype} {b.inner}" for i, b in enumerate(k.outputs)]
    lines += [f"  in{i}: {b.dtype} {b.inner}" for i, b in enumerate(k.inputs)]
    lines += _params(k)
    shared, texts = _format_group(k.exprs, _loader(None), "  {} = {}")
    lines += shared + [f"  out{i} = {t}" for i, t in enumerate(texts)]
    return "\n".join(lines)


def _params(k: Kernel | Reduction) -> list[str]:
    """The run-time parameter lines; the prefetch distance names what it fetches."""
    lines = [f"  p{i}: {d}" for i, d in enumerate(k.params)]
    if k.prefetch != NO_PREFETCH:
        ahead = getattr(k, "fetch_ahead", 0)
        if ahead:
            lines.append(f"  prefetch in{k.prefetch}: {ahead} elements ahead")
        else:
            lines[-1] += f" (prefetch in{k.prefetch}: elements ahead)"
    return lines


def format_reduction(k: Reduction) -> str:
    """A reduction kernel: header, buffers, the prologue and each output's epilogue.

    An epilogue reads `acc`, the reduced value, and `index` (arg ops) or `acc1` (a paired
    sum's second total).
    """
    vector = (" vector" if k.vector else "") + (" short" if k.short else "")
    if k.run_dtype is not None:
        vector += f" {k.run_dtype}-runs" + (
            "" if k.run_length == RUN_LENGTH else f" of {k.run_length}"
        )
    lines = [f"reduction {k.name} {k.op} {k.schedule} kept={k.kept} reduced={k.reduced}{vector}"]
    lines += [f"  out{i}: {b.dtype}" for i, b in enumerate(k.outputs)]
    fixed = k.invariant or (False,) * len(k.inputs)
    lines += [
        f"  in{i}: {b.dtype} {b.inner}" + (" invariant" if inv else "")
        for i, (b, inv) in enumerate(zip(k.inputs, fixed))
    ]
    lines += _params(k)
    shared, texts = _format_group(k.summed, _loader(None), "  {} = {}")
    lines += shared + [f"  {a} = {k.op}({t})" for a, t in zip(("acc", "acc1"), texts)]
    if not k.fma and any(isinstance(v, Binary) and v.op == "mul" for v in k.summed):
        lines.append("  (a fused-in product: rounded, then added without an fma)")
    names = ("acc", "index" if k.is_arg else "acc1")
    shared, texts = _format_group(k.epilogues, _loader(names), "  {} = {}", len(shared))
    lines += shared + [f"  out{i} = {t}" for i, t in enumerate(texts)]
    return "\n".join(lines)


def _shape(shape: tuple[int, ...]) -> str:
    return "[" + ", ".join(str(s) for s in shape) + "]"


def format_graph(outputs: list) -> str:
    """A graph as SSA lines, `%1 = cast<float64> %0 : float64[2, 3]`, outputs last."""
    from kael.ir import graph as g

    order = g.topo_order(outputs)
    names = {id(n): f"%{i}" for i, n in enumerate(order)}
    lines = []
    for n in order:
        args = " ".join(names[id(o)] for o in n.operands)
        if isinstance(n, g.Input):
            what = f"input {n.name}".rstrip()
        elif isinstance(n, g.Const):
            what = "const " + format_const(n.value, n.dtype)
        elif isinstance(n, g.Scalar):
            what = f"scalar {n.name}"
        elif isinstance(n, g.Position):
            what = f"position axis={n.axis}"
        elif isinstance(n, g.Cast):
            what = f"cast<{n.dtype}> {args}"
        elif isinstance(n, g.Unary | g.Binary):
            what = f"{n.op} {args}"
        elif isinstance(n, g.Reduce):
            what = f"reduce.{n.op} {args} axes={list(n.axes)}"
        elif isinstance(n, g.Permute):
            what = f"permute {args} dims={list(n.dims)}"
        elif isinstance(n, g.Slice):
            what = f"slice {args} dim={n.dim} start={n.start} step={n.step}"
        else:
            what = f"{type(n).__name__.lower()} {args}"
        lines.append(f"{names[id(n)]} = {what} : {n.dtype}{_shape(n.shape)}")
    lines.append("return " + ", ".join(names[id(o)] for o in outputs))
    return "\n".join(lines)
