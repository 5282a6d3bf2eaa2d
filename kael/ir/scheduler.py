"""The scheduler: cuts a graph into Kernels.

Elementwise chains fuse into one kernel whose inputs are the graph's Input nodes. A
Reduce node becomes one Reduction kernel: the elementwise graph under it is its
per-element prologue, the elementwise graph above it each output's epilogue. Matmul
and movement inside traced graphs arrive with their own issues; meeting one here fails
loudly rather than computing something else.
"""

from __future__ import annotations

from kael.ir import expr as x
from kael.ir import graph as g
from kael.ir.kernel import Buffer, Kernel
from kael.ir.reduction import ARG_OPS, OPS, Reduction, acc_load, index_load, second_load


def schedule_elementwise(
    name: str, outputs: list[g.Node]
) -> tuple[Kernel, list[g.Input], list[str]]:
    """One Kernel for an elementwise graph, its Input nodes and its Scalar names, in slot order.

    Scalars become run-time parameters, so `fill(t, 2.0)` and `fill(t, 3.0)` share code;
    Consts are literals compiled into the kernel.
    """
    shape = outputs[0].shape
    for o in outputs:
        if o.shape != shape:
            raise ValueError(f"fused outputs need one shape, got {list(shape)} and {list(o.shape)}")
    inputs: list[g.Input] = []
    scalars: list[str] = []
    lower = _lowering(inputs, scalars, {})
    exprs = tuple(lower(o) for o in outputs)
    kernel = Kernel(
        name=name,
        rank=len(shape),
        inputs=tuple(Buffer(i.dtype) for i in inputs),
        outputs=tuple(Buffer(o.dtype) for o in outputs),
        exprs=exprs,
        params=tuple(e.dtype for e in _params(exprs)),
    )
    return kernel, inputs, scalars


def _lowering(inputs: list[g.Input], scalars: list[str], memo: dict[int, x.Expr]):
    """Graph node -> expression, appending Inputs and Scalars to the lists as met."""

    def lower(n: g.Node) -> x.Expr:
        if id(n) in memo:
            return memo[id(n)]
        if isinstance(n, g.Input):
            inputs.append(n)
            e: x.Expr = x.Load(n.dtype, len(inputs) - 1)
        elif isinstance(n, g.Const):
            e = x.Const(n.dtype, n.value)
        elif isinstance(n, g.Scalar):
            scalars.append(n.name)
            e = x.Param(n.dtype, len(scalars) - 1)
        elif isinstance(n, g.Position):
            e = x.cast(x.index(n.axis), n.dtype)
        elif isinstance(n, g.Cast):
            e = x.cast(lower(n.x), n.dtype)
        elif isinstance(n, g.Unary):
            e = x.unary(n.op, lower(n.x))
        elif isinstance(n, g.Binary):
            e = x.binary(n.op, lower(n.a), lower(n.b))
        elif isinstance(n, g.Where):
            e = x.where(lower(n.cond), lower(n.a), lower(n.b))
        elif isinstance(n, g.Fma):
            e = x.fma(lower(n.a), lower(n.b), lower(n.c))
        else:
            raise NotImplementedError(f"the scheduler cannot fuse {type(n).__name__} nodes yet")
        memo[id(n)] = e
        return e

    return lower


def _reduce_nodes(outputs: list[g.Node]) -> list[g.Reduce]:
    return [n for n in g.topo_order(outputs) if isinstance(n, g.Reduce)]


def schedule_reduction(
    name: str, outputs: list[g.Node]
) -> tuple[Reduction, list[g.Input], list[str]]:
    """One Reduction for outputs that each apply an epilogue to one Reduce node.

    Every Reduce must read the same operand with one op, except that max and argmax (or
    min and argmin) pair into one argmax kernel giving values and indices, and two sums
    of different operands pair into one kernel with two accumulators. Returns the
    kernel, the prologue's Input nodes and the Scalar names, in slot order.
    """
    reduces = _reduce_nodes(outputs)
    if not reduces:
        raise ValueError("schedule_reduction needs a Reduce node")
    operands = list({id(r.x): r.x for r in reduces}.values())
    ops = {r.op for r in reduces}
    paired = len(operands) == 2 and ops == {"sum"}
    if not ops <= set(OPS) or (len(operands) > 1 and not paired):
        raise ValueError(f"cannot fuse reductions {sorted(ops)} over different operands")
    arg = [op for op in ops if op in ARG_OPS]
    if len(ops) > 1 and not (len(arg) == 1 and ops == {arg[0], ARG_OPS[arg[0]]}):
        raise ValueError(f"cannot fuse reductions {sorted(ops)} into one kernel")
    op = arg[0] if arg else reduces[0].op
    inputs: list[g.Input] = []
    scalars: list[str] = []
    lower = _lowering(inputs, scalars, {})
    prologue = lower(operands[0])
    second = lower(operands[1]) if paired else None
    if second is not None and second.dtype is not prologue.dtype:
        raise ValueError(f"paired sums need one dtype, got {prologue.dtype} and {second.dtype}")
    memo: dict[int, x.Expr] = {}
    for r in reduces:
        if r.op in ARG_OPS:
            memo[id(r)] = index_load()
        elif r.x is operands[0]:
            memo[id(r)] = acc_load(prologue.dtype)
        else:
            memo[id(r)] = second_load(prologue.dtype)
    stray: list[g.Input] = []
    epilogues = tuple(_lowering(stray, scalars, memo)(o) for o in outputs)
    if stray:
        raise ValueError("an epilogue may read only the reduced value, not other inputs")
    exprs = (prologue, *epilogues) if second is None else (prologue, second, *epilogues)
    if x.faults(prologue) or (second is not None and x.faults(second)):
        raise NotImplementedError("reductions over ops that can fault are not supported")
    kernel = Reduction(
        name=name,
        op=op,
        inputs=tuple(Buffer(i.dtype) for i in inputs),
        prologue=prologue,
        epilogues=epilogues,
        params=tuple(e.dtype for e in _params(exprs)),
        second=second,
    )
    return kernel, inputs, scalars


def _params(exprs: tuple[x.Expr, ...]) -> list[x.Param]:
    found: dict[int, x.Param] = {}
    for e in exprs:
        for n in x.walk(e):
            if isinstance(n, x.Param):
                found[n.slot] = n
    return [found[s] for s in sorted(found)]
