"""The fusion pass: which steps of a program are inlined, stored, merged or dropped."""

from __future__ import annotations

import pytest

from kael.ir import expr as x
from kael.ir.fusion import MAX_EXPR_NODES, Step, fuse
from kael.ir.kernel import Buffer, Kernel
from kael.ir.views import View
from kael.runtime.dtypes import float32, int64


def _step(name, outs, ins, expr):
    kernel = Kernel(name, 0, tuple(Buffer(float32) for _ in ins), (Buffer(float32),), (expr,))
    return Step(kernel, outs, ins, [], name)


def _view(buffer, shape=(4,)):
    return View(buffer, shape, (1,) * len(shape), 0, float32)


def _exp(e):
    return x.unary("exp", e)


def test_chain_inlines_and_drops_the_intermediate():
    a, t, out = _view(0), _view(1), _view(2)
    steps = [
        _step("exp", [t], [a], _exp(x.Load(float32, 0))),
        _step("neg", [out], [t], x.unary("neg", x.Load(float32, 0))),
    ]
    program = fuse(steps, [16, 16, 16], live={0, 2})
    assert [s.covers for s in program.steps] == [["exp", "neg"]]
    assert program.dropped == ["exp"]


def test_live_intermediate_is_stored():
    a, t, out = _view(0), _view(1), _view(2)
    steps = [
        _step("exp", [t], [a], _exp(x.Load(float32, 0))),
        _step("neg", [out], [t], x.unary("neg", x.Load(float32, 0))),
    ]
    program = fuse(steps, [16, 16, 16], live={0, 1, 2})
    [merged] = program.steps  # one kernel computes it once and stores both values
    assert [v.buffer for v in merged.outs] == [1, 2] and len(merged.ins) == 1


def test_overwritten_input_is_not_inlined_past_the_write():
    a, t, out = _view(0), _view(1), _view(2)
    steps = [
        _step("exp", [t], [a], _exp(x.Load(float32, 0))),
        _step("neg_", [a], [a], x.unary("neg", x.Load(float32, 0))),  # a changes
        _step("abs", [out], [t], x.unary("abs", x.Load(float32, 0))),
    ]
    program = fuse(steps, [16, 16, 16], live={0, 2})
    assert program.cuts[0].reason == "an input of it was written in between"
    # the three then share one kernel: each element of a is read before it is overwritten
    [merged] = program.steps
    assert [v.buffer for v in merged.outs] == [0, 2]


def test_expression_size_limit_stores_values_on_both_sides():
    def chain(n):
        steps = []
        for i in range(n):
            e = x.Load(float32, 0)
            for _ in range(9):
                e = x.unary("neg", e)
            e = x.binary("mul", e, x.Load(float32, 0))  # 10 nodes per step
            steps.append(_step(f"op{i}", [_view(i + 1)], [_view(i)], e))
        return fuse(steps, [16] * (n + 1), live={0, n})

    assert len(chain(MAX_EXPR_NODES // 10 - 1).steps) == 1
    assert len(chain(MAX_EXPR_NODES // 10 + 1).steps) > 1


def test_a_value_used_twice_per_step_counts_once_against_the_limit():
    def squares(n):
        steps = []
        for i in range(n):
            e = x.binary("mul", x.Load(float32, 0), x.Load(float32, 0))
            steps.append(_step(f"sq{i}", [_view(i + 1)], [_view(i)], e))
        return fuse(steps, [16] * (n + 1), live={0, n})

    # 2**40 paths, 41 nodes: one kernel, compiled per node
    assert len(squares(40).steps) == 1


@pytest.mark.parametrize("offset", [0, 1])
def test_partial_write_keeps_the_value_before_it(offset):
    t = _view(1, (4,))
    part = View(1, (2,), (1,), offset, float32)
    steps = [
        _step("exp", [t], [_view(0)], _exp(x.Load(float32, 0))),
        _step("fill", [part], [], x.Const(float32, 0.0)),
    ]
    program = fuse(steps, [16, 16], live={0, 1})
    assert [s.covers for s in program.steps] == [["exp"], ["fill"]]


def test_an_fma_producer_inlines_into_its_reader_with_its_operands_rebased():
    a, b, t, out = _view(0), _view(1), _view(2), _view(3)
    load = [x.Load(float32, i) for i in range(2)]
    steps = [  # t = a * b + a; out = t * b + t
        _step("fma", [t], [a, b], x.fma(load[0], load[1], load[0])),
        _step("fma2", [out], [b, t], x.fma(load[1], load[0], load[1])),
    ]
    program = fuse(steps, [16, 16, 16, 16], live={0, 1, 3})
    [step] = program.steps
    assert program.dropped == ["fma"] and [v.buffer for v in step.ins] == [0, 1]
    t_expr = x.fma(load[0], load[1], load[0])
    assert step.kernel.exprs == (x.fma(t_expr, load[1], t_expr),)


def test_a_producer_written_column_major_inlines_into_a_reader_of_its_rows():
    """An elementwise result of a transposed input is stored column-major (its operands'
    memory order); a reader of it in another layout still inlines it, its loads rebased
    through the buffer's own order, and the value is never stored."""
    a = View(0, (4, 3), (1, 4), 0, float32)  # a [3, 4] input read transposed
    t = View(1, (4, 3), (1, 4), 0, float32)  # the result, column-major like its input
    read = View(1, (3, 4), (4, 1), 0, float32)  # the result transposed back: row-major reads
    out = View(2, (3, 4), (4, 1), 0, float32)
    steps = [
        _step("exp", [t], [a], _exp(x.Load(float32, 0))),
        _step("neg", [out], [read], x.unary("neg", x.Load(float32, 0))),
    ]
    program = fuse(steps, [48, 48, 48], live={0, 2})
    [fused] = program.steps
    assert fused.covers == ["exp", "neg"] and program.dropped == ["exp"]
    assert fused.ins == [View(0, (3, 4), (4, 1), 0, float32)]  # the input itself, row by row


def test_a_column_major_producer_of_positions_is_stored_not_inlined():
    """A value that reads its own positions (arange-like) keeps them in its dims' order:
    one written in another memory order is stored, as a reader would need them permuted."""
    t = View(1, (4, 3), (1, 4), 0, float32)  # column-major
    read = View(1, (3, 4), (4, 1), 0, float32)  # t transposed back: row by row in memory
    out = View(2, (3, 4), (4, 1), 0, float32)
    steps = [
        _step("index", [t], [], x.cast(x.Index(int64, 0), float32)),
        _step("neg", [out], [read], x.unary("neg", x.Load(float32, 0))),
    ]
    program = fuse(steps, [48, 48, 48], live={2})
    assert [s.covers for s in program.steps] == [["index"], ["neg"]]
    assert program.steps[1].ins == [read]  # stored, then loaded
