"""The scheduler: cuts a graph into Kernels.

Elementwise chains fuse into one kernel whose inputs are the graph's Input nodes.
Reductions, matmul and movement inside traced graphs arrive with their own issues;
meeting one here fails loudly rather than computing something else.
"""

from __future__ import annotations

from kael.ir import expr as x
from kael.ir import graph as g
from kael.ir.kernel import Buffer, Kernel


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
    memo: dict[int, x.Expr] = {}

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
        else:
            raise NotImplementedError(f"the scheduler cannot fuse {type(n).__name__} nodes yet")
        memo[id(n)] = e
        return e

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


def _params(exprs: tuple[x.Expr, ...]) -> list[x.Param]:
    found: dict[int, x.Param] = {}
    for e in exprs:
        for n in x.walk(e):
            if isinstance(n, x.Param):
                found[n.slot] = n
    return [found[s] for s in sorted(found)]
