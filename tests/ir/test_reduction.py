"""Reduce nodes through the scheduler, the printer and the launch planner."""

import dataclasses

import pytest

from kael.ir import expr as x
from kael.ir import graph as g
from kael.ir.kernel import BCAST, CONTIG, STRIDED
from kael.ir.printer import format_kernel, format_reduction
from kael.ir.reduction import COLS, ROWS, RUN_LENGTH, plan_reduction
from kael.ir.scheduler import schedule_reduction
from kael.runtime.dtypes import bool_, float32, float64, int64


def _sum_of_squares():
    a = g.Input(float32, (), "a")
    wide = g.Cast(float64, (), a)
    sq = g.Binary(float64, (), "mul", wide, wide)
    r = g.Reduce(float64, (), "sum", sq, (0,))
    return g.Cast(float32, (), g.Unary(float64, (), "sqrt", r))


def test_the_graph_under_reduce_becomes_the_prologue_and_above_it_the_epilogue():
    red, inputs, scalars = schedule_reduction("norm", [_sum_of_squares()])
    assert red.op == "sum" and red.acc is float64
    assert [i.name for i in inputs] == ["a"] and scalars == []
    wide = x.Cast(float64, x.Load(float32, 0))
    assert red.prologue == x.Binary(float64, "mul", wide, wide)
    assert red.epilogues == (x.Cast(float32, x.Unary(float64, "sqrt", x.Load(float64, 0))),)
    assert red.outputs[0].dtype is float32


def test_scalars_of_prologue_and_epilogue_share_one_slot_list():
    a = g.Input(float64, (), "a")
    shifted = g.Binary(float64, (), "sub", a, g.Scalar(float64, (), "shift"))
    r = g.Reduce(float64, (), "sum", shifted, (0,))
    out = g.Binary(float64, (), "div", r, g.Scalar(float64, (), "count"))
    red, _, scalars = schedule_reduction("mean_shift", [out])
    assert scalars == ["shift", "count"]
    assert red.params == (float64, float64)


def test_max_and_argmax_of_one_operand_pair_into_one_kernel():
    a = g.Input(int64, (), "a")
    v = g.Reduce(int64, (), "max", a, (1,))
    i = g.Reduce(int64, (), "argmax", a, (1,))
    red, _, _ = schedule_reduction("max_dim", [v, i])
    assert red.op == "argmax" and red.is_arg
    assert red.epilogues == (x.Load(int64, 0), x.Load(int64, 1))


def test_two_sums_of_different_operands_pair_into_one_kernel():
    # var's second pass: sum(d) and sum(d^2) in one kernel, their subexpressions shared.
    a, m = g.Input(float64, (), "a"), g.Input(float64, (), "m")
    d = g.Binary(float64, (), "sub", a, m)
    total = g.Reduce(float64, (), "sum", d, (0,))
    squares = g.Reduce(float64, (), "sum", g.Binary(float64, (), "mul", d, d), (0,))
    red, inputs, _ = schedule_reduction("moments", [g.Binary(float64, (), "sub", squares, total)])
    assert red.op == "sum" and red.paired and not red.is_arg and red.second_dtype is float64
    assert [i.name for i in inputs] == ["a", "m"]
    dx = x.Binary(float64, "sub", x.Load(float64, 0), x.Load(float64, 1))
    # The sums are taken in the order the epilogue meets them: squares first here.
    assert red.prologue == x.Binary(float64, "mul", dx, dx) and red.second == dx
    assert red.epilogues == (x.Binary(float64, "sub", x.Load(float64, 0), x.Load(float64, 1)),)
    assert format_reduction(red).splitlines()[4:7] == [
        "  t0 = sub(in0, in1)",
        "  acc = sum(mul(t0, t0))",
        "  acc1 = sum(t0)",
    ]


def test_an_epilogue_may_raise_the_flag_but_a_prologue_may_not_fault():
    a = g.Input(float64, (), "a")
    r = g.Reduce(float64, (), "sum", a, (0,))
    flagged = g.Unary(bool_, (), "flag", g.Unary(bool_, (), "isinf", r))
    red, _, _ = schedule_reduction("flagged", [g.Where(float64, (), flagged, r, r)])
    assert red.may_fault
    i = g.Input(int64, (), "i")
    quotient = g.Binary(int64, (), "floordiv", i, i)
    with pytest.raises(NotImplementedError, match="can fault"):
        schedule_reduction("bad", [g.Reduce(int64, (), "sum", quotient, (0,))])


def test_reductions_of_different_operands_or_ops_are_refused():
    a, b = g.Input(float64, (), "a"), g.Input(float64, (), "b")
    with pytest.raises(ValueError, match="different operands"):
        schedule_reduction(
            "bad", [g.Reduce(float64, (), "max", a, ()), g.Reduce(float64, (), "max", b, ())]
        )
    c = g.Input(float64, (), "c")
    with pytest.raises(ValueError, match="different operands"):
        schedule_reduction("bad", [g.Reduce(float64, (), "sum", v, ()) for v in (a, b, c)])
    with pytest.raises(ValueError, match=r"\['max', 'sum'\]"):
        schedule_reduction(
            "bad", [g.Reduce(float64, (), "sum", a, ()), g.Reduce(float64, (), "max", a, ())]
        )
    with pytest.raises(ValueError, match="needs a Reduce node"):
        schedule_reduction("bad", [a])


def test_an_epilogue_reading_another_input_is_refused():
    a, b = g.Input(float64, (), "a"), g.Input(float64, (), "b")
    r = g.Reduce(float64, (), "sum", a, ())
    with pytest.raises(ValueError, match="only the reduced value"):
        schedule_reduction("bad", [g.Binary(float64, (), "add", r, b)])


def test_printed_reduction_names_op_schedule_and_expressions():
    red, _, _ = schedule_reduction("norm", [_sum_of_squares()])
    text = format_reduction(red)
    assert text.splitlines() == [
        "reduction norm sum rows kept=0 reduced=1",
        "  out0: float32",
        "  in0: float32 strided",
        "  acc = sum(mul(cast<float64>(in0), cast<float64>(in0)))",
        "  out0 = cast<float32>(sqrt(acc))",
    ]
    assert format_kernel(red) == text
    plan = plan_reduction((4, 8), (1,), [(1,)], [(8, 1)])
    assert "vector" in format_reduction(red.specialize(plan))


def _float64_sum():
    """sum(x) of float64 x: its prologue is the load itself."""
    total = g.Reduce(float64, (), "sum", g.Input(float64, (), "x"), ())
    return schedule_reduction("s", [total])[0]


def test_only_a_kernels_own_product_is_added_with_an_fma_after_fusion():
    # norm's x * x is the kernel's own; a product fusion puts in place of a plain sum's
    # load is not: eager adds that product after storing it, rounded.
    norm, _, _ = schedule_reduction("norm", [_sum_of_squares()])
    plain = _float64_sum()
    assert norm.fma and not plain.fma
    wide = x.Load(float64, 0)
    fused = dataclasses.replace(plain, prologue=x.Binary(float64, "mul", wide, wide))
    assert not fused.fma
    plan = plan_reduction((4, 8), (1,), [(1,)], [(8, 1)])
    assert dataclasses.replace(norm, name="n2").specialize(plan).fma
    assert not fused.specialize(plan).fma


def _float32_sum(result=float32):
    """sum(x) of float32 x accumulated in float64, stored as `result` (the frontend's sum)."""
    x_ = g.Input(float32, (), "x")
    total = g.Reduce(float64, (), "sum", g.Cast(float64, (), x_), ())
    return schedule_reduction("s", [g.Cast(result, (), total) if result != float64 else total])[0]


@pytest.mark.parametrize(
    "layout,runs",
    [
        (((4, 64), (1,), [(1,)], [(64, 1)]), float32),  # a row sum: vector ROWS
        (((64, 4), (0,), [(4,)], [(4, 1)]), None),  # gathered lanes keep float64
        (((4096, 4096), (0,), [(1,)], [(4096, 1)]), None),  # COLS
    ],
)
def test_only_vector_rows_float32_sums_add_float32_runs(layout, runs):
    red = _float32_sum().specialize(plan_reduction(*layout))
    assert red.run_dtype == runs
    assert ("float32-runs" in format_reduction(red)) == (runs is not None)


def test_a_float64_result_keeps_every_value_widened():
    red = _float32_sum(float64).specialize(plan_reduction((4, 64), (1,), [(1,)], [(64, 1)]))
    assert red.run_dtype is None


def test_a_sum_made_float64_keeps_every_value_widened_when_fusion_rounds_its_results():
    # a traced softmax's float64 sum fused with its 1 / sum rounded to float32: the float32
    # prologue still fills 16 lanes, but runs of one value, so the total stays whole
    layout = plan_reduction((4, 64), (1,), [(1,)], [(64, 1)])
    wide = _float32_sum(float64)
    fused = dataclasses.replace(wide, epilogues=(x.cast(x.Load(float64, 0), float32),))
    red = fused.specialize(layout)
    assert (red.run_dtype, red.run_length) == (float32, 1)
    assert "float32-runs of 1" in format_reduction(red)
    eager = _float32_sum().specialize(layout)
    assert (eager.run_dtype, eager.run_length) == (float32, RUN_LENGTH)
    assert "of 1" not in format_reduction(eager)


def test_plan_coalesces_kept_and_reduced_dims_separately():
    p = plan_reduction((2, 3, 4, 5), (2, 3), [(3, 1)], [(60, 20, 5, 1)])
    assert p.kept == (6,) and p.reduced == (20,)
    assert p.out_strides == ((1,),) and p.in_strides == ((20, 1),)
    assert (p.schedule, p.inners) == (ROWS, (CONTIG,))


def test_plan_walks_reduced_dims_in_memory_order_with_their_flat_index_steps():
    transposed = plan_reduction((3, 4), (0, 1), [()], [(1, 3)])  # a transposed [3, 4]
    assert transposed.reduced == (4, 3) and transposed.in_strides == ((3, 1),)
    assert transposed.index_strides == (1, 4) and transposed.vector
    contiguous = plan_reduction((3, 4), (0, 1), [()], [(4, 1)])
    assert contiguous.reduced == (12,) and contiguous.index_strides == (1,)
    two = plan_reduction((2, 3, 4), (0, 2), [(1,)], [(12, 4, 1)])
    assert two.reduced == (2, 4) and two.index_strides == (4, 1)


def test_plan_marks_broadcast_inputs_and_strided_ones():
    p = plan_reduction((4, 8), (1,), [(1,)], [(8, 1), (1, 0)])
    assert p.inners == (CONTIG, BCAST)
    p = plan_reduction((4, 8), (1,), [(1,)], [(16, 2)])
    assert p.inners == (STRIDED,)


def test_plan_of_an_outer_reduction_chunks_columns():
    p = plan_reduction((100, 1000), (0,), [(1,)], [(1000, 1)])
    assert p.schedule == COLS and (p.columns, p.chunks, p.work_items) == (1024, 1, 1)
    p = plan_reduction((100, 1000), (0,), [(1,)], [(1000, 1)], threads=16)
    assert (p.columns, p.chunks) == (256, 4)  # never narrower than 256 outputs
    p = plan_reduction((3, 20000, 9000), (1,), [(9000, 1)], [(180000000, 9000, 1)], threads=2)
    assert (p.columns, p.chunks, p.blocks, p.work_items) == (4096, 3, 2, 3 * 3 * 2)
    p = plan_reduction((100, 4), (0,), [(1,)], [(4, 1)])
    assert p.schedule == ROWS and p.inners == (STRIDED,)  # too few columns for chunks


def test_plan_of_empty_and_size_one_reductions():
    empty = plan_reduction((0, 3), (0,), [(1,)], [(3, 1)])
    assert empty.reduced == (0,) and empty.length == 0 and empty.blocks == 1
    nothing = plan_reduction((5, 1), (1,), [(1,)], [(1, 1)])
    assert nothing.reduced == (1,) and nothing.length == 1
    scalar = plan_reduction((), (), [()], [()])
    assert scalar.kept == () and scalar.outputs == 1 and scalar.length == 1


def test_bool_prologue_for_all_and_any():
    a = g.Input(float32, (), "a")
    r = g.Reduce(bool_, (), "all", g.Cast(bool_, (), a), (0,))
    red, _, _ = schedule_reduction("all", [r])
    assert red.acc is bool_ and red.prologue == x.Cast(bool_, x.Load(float32, 0))


def test_plan_marks_inputs_that_do_not_move_along_the_reduced_dims():
    # var's second pass over dim 0: x walks the rows, its keepdim mean (1, 8) does not, so
    # the kernel loads the mean once per output; the mark is part of the printed key.
    p = plan_reduction((5, 8), (0,), [(1,)], [(8, 1), (0, 1)])
    assert p.invariant == (False, True)
    p = plan_reduction((5, 8), (1,), [(1,)], [(8, 1), (1, 0)])
    assert p.invariant == (False, True)
    a, m = g.Input(float64, (), "a"), g.Input(float64, (), "m")
    d = g.Binary(float64, (), "sub", a, m)
    r = g.Reduce(float64, (), "sum", g.Binary(float64, (), "mul", d, d), (0,))
    red, _, _ = schedule_reduction("sq", [r])
    text = format_reduction(red.specialize(plan_reduction((5, 8), (0,), [(1,)], [(8, 1), (0, 1)])))
    assert "  in0: float64 contig\n  in1: float64 contig invariant" in text
