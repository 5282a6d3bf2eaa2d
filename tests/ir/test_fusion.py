"""The fusion pass: view composition on both sides of its carry limit, and which steps of a
program are inlined, stored or dropped."""

from __future__ import annotations

import numpy as np
import pytest

from kael.ir import expr as x
from kael.ir.fusion import MAX_EXPR_NODES, Step, View, compose, fuse
from kael.ir.kernel import Buffer, Kernel
from kael.runtime.dtypes import float32


def _read(shape, strides, offset, produced, inner):
    """What compose says a read of the produced value reads of an input laid out as `inner`,
    checked element by element against NumPy index arithmetic."""
    composed = compose(shape, strides, offset, produced, [inner], False)
    if composed is None:
        return None
    source_strides, source_offset = inner
    for point in np.ndindex(*shape):
        flat = offset + sum(i * s for i, s in zip(point, strides))
        produced_index = np.unravel_index(flat, produced)
        want = source_offset + sum(i * s for i, s in zip(produced_index, source_strides))
        got = composed.offsets[0] + sum(i * s for i, s in zip(point, composed.strides[0]))
        assert got == want, (point, got, want)
    return composed


def test_compose_identity():
    assert _read((4, 6), (6, 1), 0, (4, 6), ((6, 1), 0)) is not None


def test_compose_transpose_of_a_transposed_input():
    assert _read((6, 4), (1, 6), 0, (4, 6), ((1, 4), 0)) is not None


def test_compose_reshape_merging_dims_the_input_steps_evenly():
    assert _read((24,), (1,), 0, (4, 6), ((6, 1), 3)) is not None


def test_compose_reshape_merging_dims_the_input_does_not_step_evenly_is_refused():
    # the input is the transpose of a [6, 4]: along the merged dim it jumps at each row end
    assert _read((24,), (1,), 0, (4, 6), ((1, 4), 0)) is None


def test_compose_slice_inside_one_row_and_just_past_it():
    assert _read((2, 3), (6, 1), 3, (4, 6), ((1, 4), 0)) is not None  # cols 3..5: fits
    assert _read((2, 4), (6, 1), 3, (4, 6), ((1, 4), 0)) is None  # cols 3..6: carries


def test_compose_broadcast_read():
    assert _read((5, 4, 6), (0, 6, 1), 0, (4, 6), ((0, 1), 0)) is not None


def test_compose_positions_of_a_permuted_read():
    composed = compose((6, 4), (1, 6), 0, (4, 6), [], True)
    assert composed.axes == ((0, {1: 1}), (0, {0: 1}))


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
        steps, e = [], None
        for i in range(n):
            e = x.binary("mul", x.Load(float32, 0), x.Load(float32, 0))
            steps.append(_step(f"sq{i}", [_view(i + 1)], [_view(i)], e))
        return fuse(steps, [16] * (n + 1), live={0, n})

    # each square doubles the tree: 2^k nodes stay under the limit, the next one does not
    fits = int(np.log2(MAX_EXPR_NODES))
    assert len(chain(fits).steps) == 1
    assert len(chain(fits + 3).steps) > 1


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
