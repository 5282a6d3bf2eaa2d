"""Formulas over one element: `Value`, a graph node with Python's operators, so an op
declared as a formula (an activation, a loss) reads like PyTorch's documentation of it,
and `launch`, which runs a formula over broadcast tensors as one kernel."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from kael.frontend import eager, fastpath, views
from kael.frontend.outputs import device_of, new_result, unaliased
from kael.frontend.tensor import Tensor
from kael.ir import graph as g
from kael.runtime.convert import CHECKED, convert_scalar
from kael.runtime.device import CPU
from kael.runtime.dtypes import DType, bool_, float32
from kael.runtime.tensor_impl import TensorImpl


class Value:
    """One graph node of a formula, with the arithmetic a formula needs."""

    __slots__ = ("node",)

    def __init__(self, node: g.Node) -> None:
        self.node = node

    def _lift(self, other) -> g.Node:
        return other.node if isinstance(other, Value) else g.Const(self.node.dtype, (), other)

    def _binary(self, op: str, other, reflected: bool = False) -> Value:
        a, b = self.node, self._lift(other)
        a, b = (b, a) if reflected else (a, b)
        return Value(g.Binary(self.node.dtype, (), op, a, b))

    def __add__(self, other) -> Value:
        return self._binary("add", other)

    def __radd__(self, other) -> Value:
        return self._binary("add", other, True)

    def __sub__(self, other) -> Value:
        return self._binary("sub", other)

    def __rsub__(self, other) -> Value:
        return self._binary("sub", other, True)

    def __mul__(self, other) -> Value:
        return self._binary("mul", other)

    def __rmul__(self, other) -> Value:
        return self._binary("mul", other, True)

    def __truediv__(self, other) -> Value:
        return self._binary("div", other)

    def __rtruediv__(self, other) -> Value:
        return self._binary("div", other, True)

    def __neg__(self) -> Value:
        return self.apply("neg")

    def _compare(self, op: str, other) -> Value:
        return Value(g.Binary(bool_, (), op, self.node, self._lift(other)))

    def __gt__(self, other) -> Value:
        return self._compare("gt", other)

    def __lt__(self, other) -> Value:
        return self._compare("lt", other)

    def __le__(self, other) -> Value:
        return self._compare("le", other)

    def eq(self, other) -> Value:
        """A bool Value: where self == other (== itself stays Python's identity)."""
        return self._compare("eq", other)

    def ne(self, other) -> Value:
        return self._compare("ne", other)

    def __and__(self, other: Value) -> Value:
        """Both bool values hold."""
        return Value(g.Binary(bool_, (), "and", self.node, other.node))

    def __or__(self, other: Value) -> Value:
        """Either bool value holds."""
        return Value(g.Binary(bool_, (), "or", self.node, other.node))

    def apply(self, op: str) -> Value:
        """The unary IR op `op` of this value (exp, expm1, log1p, tanh, abs, sigmoid, ...)."""
        return Value(g.Unary(self.node.dtype, (), op, self.node))


def where(cond: Value, a, b) -> Value:
    """a where cond holds, else b; one of them a Value (the other may be a number)."""
    ref = a if isinstance(a, Value) else b
    return Value(g.Where(ref.node.dtype, (), cond.node, ref._lift(a), ref._lift(b)))


def fma(a: Value, b, c) -> Value:
    """a * b + c rounded once (a float fused multiply-add); b and c may be numbers."""
    return Value(g.Fma(a.node.dtype, (), a.node, a._lift(b), a._lift(c)))


def maximum(a: Value, b) -> Value:
    return a._binary("max", b)


def minimum(a: Value, b) -> Value:
    return a._binary("min", b)


def stored(v: Value) -> Value:
    """v rounded to its dtype as a tensor would store it (float16/bfloat16; others are
    already exact): for activations PyTorch composes from ops, each op rounding."""
    dtype = v.node.dtype
    if not dtype.is_half:
        return v
    return Value(g.Cast(dtype, (), g.Cast(float32, (), v.node)))


def launch(
    key: tuple,
    tensors: Sequence[Tensor],
    compute: DType,
    formula: Callable[..., Value],
    params: dict | None = None,
    out: TensorImpl | None = None,
    fast: tuple | None = None,
    numbers: tuple[str, ...] = (),
    seen: list | None = None,
    common: DType | None = None,
    dtype: DType | None = None,
) -> Tensor:
    """formula(*tensors as `compute` values, *params as run-time scalars) over the tensors'
    broadcast shape, as one kernel into `out` (else a new tensor of `dtype`, by default
    `compute`: the kernel rounds into it, no second pass). `key`
    names the formula: one compiled template per key and input dtypes. `fast`: the fast
    door's key to remember the launch under (fastpath.dense_key: operands of one shape),
    its parameters at these values but those named in `numbers`, which its calls pass. One
    operand may be a CPU 0-d tensor beside tensors on a GPU, read there as a scalar, as
    PyTorch's TensorIterator reads one (lerp's weight, atan2's other). `seen` (a list)
    gains (template, output, inputs in kernel order) where the full door launched, for an
    op's own door to describe that launch (fastpath.inline_launch): such a call takes the
    full door, even where the layouts door would serve it. A new result is laid out as
    torch's elementwise result over the tensors (outputs.new_result), those of another
    dtype than `common` (the op's result dtype, where it converts them) read as converted."""
    from kael.frontend.elementwise import broadcast_shapes

    params = params or {}
    layouts = (
        _layouts_key(key, tensors, compute, dtype, out) if fast is None and not params else None
    )
    # a parameter-free formula of 2+ operands, by its layouts (not while a door captures a
    # call: eager.run's launch is what a capture sees)
    if layouts is not None and seen is None and not eager.capturing:
        order = _orders.get(layouts)
        if order is not None:
            ran = fastpath.shaped_launch(layouts, tuple([tensors[i]._impl for i in order]), out)
            if ran is not None:
                return Tensor(out) if out is not None else ran
    dtypes_in = tuple(t.dtype for t in tensors)
    shape = broadcast_shapes(*(t.shape for t in tensors))
    device = device_of(tensors, key[0], cpu_scalars=1)
    target = (
        out if out is not None else new_result(shape, dtype or compute, device, tensors, common)
    )
    ins = [unaliased(views.broadcast_view(t._impl, shape), target) for t in tensors]
    template_key = ("formula", *key, dtypes_in, compute, target.dtype)

    def build():
        leaves = [
            Value(g.Cast(compute, (), g.Input(d, (), str(i)))) for i, d in enumerate(dtypes_in)
        ]
        scalars = [Value(g.Scalar(compute, (), p)) for p in params]
        result = g.Cast(target.dtype, (), formula(*leaves, *scalars).node)
        _slots[template_key] = input_order(result)
        return key[0], [result]

    entry = eager.template(template_key, build)
    words = {p: convert_scalar(v, compute, CHECKED) for p, v in params.items()}
    ordered = [ins[i] for i in _slots[template_key]]
    eager.run(entry, [target], ordered, words)
    if seen is not None:
        seen.append((entry, target, ordered))
    if fast is not None:
        dtypes = (target.dtype, *dtypes_in)
        fixed = {p: w for p, w in words.items() if p not in numbers}
        passed = tuple((p, CHECKED) for p in numbers)
        order = _slots[template_key]
        fastpath.remember(fast, entry, dtypes, passed, target, ordered, fixed, order)
    elif layouts is not None and all(_same_place(i, t._impl) for i, t in zip(ins, tensors)):
        fastpath.remember(layouts, entry, (), (), target, ordered)
        if len(_orders) < _MAX_ORDERS:
            _orders[layouts] = _slots[template_key]
    return Tensor(target)


def _same_place(seen: TensorImpl, given: TensorImpl) -> bool:
    """Whether the kernel's operand starts where the caller's tensor does (itself, or its
    broadcast view), so a replay by the tensor's address reads it; not an unaliasing copy."""
    return seen.storage is given.storage and seen.offset == given.offset


def launch_many(
    key: tuple, tensors: Sequence[Tensor], compute: DType, formula: Callable, outs: Sequence[Tensor]
) -> None:
    """formula(*tensors as `compute` values) -> one Value per output, as one kernel writing
    every output (fresh tensors of one shape, which the inputs broadcast to)."""
    shape = outs[0].shape
    ins = [views.broadcast_view(t._impl, shape) for t in tensors]
    dtypes_in = tuple(t.dtype for t in tensors)
    template_key = ("formula_many", *key, dtypes_in, compute, len(outs))

    def build():
        leaves = [
            Value(g.Cast(compute, (), g.Input(d, (), str(i)))) for i, d in enumerate(dtypes_in)
        ]
        roots = [g.Cast(o.dtype, (), v.node) for o, v in zip(outs, formula(*leaves))]
        _slots[template_key] = input_order(*roots)
        return key[0], roots

    entry = eager.template(template_key, build)
    eager.run(entry, [o._impl for o in outs], [ins[i] for i in _slots[template_key]])


def _out_dtype(out: TensorImpl | None, compute: DType) -> DType:
    return compute if out is None else out.dtype


def _layouts_key(
    key: tuple, tensors: Sequence[Tensor], compute: DType, dtype: DType | None, out
) -> tuple | None:
    """The fast door's key of a formula launch by its operands' exact layouts (and the
    output's, when one is given, else the new result's dtype), or None where the door
    cannot serve it: fewer than two operands (their own door), a GPU, or an output that
    shares memory with an operand."""
    if len(tensors) < 2:
        return None
    parts = [fastpath.SHAPED, "formula", key, compute, dtype]
    for t in tensors:
        i = t._impl
        if i.device is not CPU or (out is not None and i.storage is out.storage):
            return None
        parts += (i.dtype, i.shape, i.strides)
    if out is not None:
        if out.device is not CPU:
            return None
        parts[4] = (out.shape, out.strides, out.dtype)
    return tuple(parts)


# Per formula template: which operand each kernel input is. The scheduler numbers a
# graph's inputs as it meets them, which is not the formula's argument order (y - x).
_slots: dict[tuple, tuple[int, ...]] = {}
# The same by a layouts key the fast door remembered (_layouts_key: it names the template),
# so a repeated launch builds no template key; bounded.
_orders: dict[tuple, tuple[int, ...]] = {}
_MAX_ORDERS = 4096


def input_order(*roots: g.Node) -> tuple[int, ...]:
    """The operands (Input nodes named by their position) in the scheduler's order: depth
    first from each output in turn, operands left to right, each node once."""
    seen: set[int] = set()
    order: list[int] = []
    stack = list(reversed(roots))
    while stack:
        n = stack.pop()
        if id(n) in seen:
            continue
        seen.add(id(n))
        if isinstance(n, g.Input):
            order.append(int(n.name))
        stack.extend(reversed(n.operands))
    return tuple(order)
