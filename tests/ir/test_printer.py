import math

from kael.ir import expr as x
from kael.ir import graph as g
from kael.ir.kernel import BCAST, CONTIG, Buffer, Kernel
from kael.ir.printer import format_expr, format_graph, format_kernel
from kael.runtime.dtypes import bool_, float32, float64, int64


def test_expression_prints_as_nested_calls():
    e = x.where(
        x.binary("eq", x.index(0), x.index(1)),
        x.Const(float32, 1.0),
        x.cast(x.Load(int64, 0), float32),
    )
    assert format_expr(e) == "where(eq(idx0, idx1), float32(1.0), cast<float32>(in0))"


def test_shared_subexpressions_print_once_bound_to_a_name():
    a = x.unary("abs", x.Load(float32, 0))
    e = x.binary("add", a, x.binary("mul", a, a))
    assert format_expr(e) == "t0 = abs(in0); add(t0, mul(t0, t0))"


def test_shared_leaves_and_casts_of_leaves_print_in_place():
    a = x.cast(x.Load(int64, 0), float32)
    assert format_expr(x.binary("mul", a, a)) == "mul(cast<float32>(in0), cast<float32>(in0))"


def test_a_deeply_shared_kernel_prints_per_node():
    e = x.Load(float64, 0)
    for _ in range(200):
        e = x.binary("add", x.unary("exp", e), e)
    k = Kernel(
        name="deep",
        rank=1,
        inputs=(Buffer(float64, CONTIG),),
        outputs=(Buffer(float64, CONTIG),),
        exprs=(e, x.unary("neg", e)),
        params=(),
    )
    lines = format_kernel(k).splitlines()
    assert lines[3:5] == ["  t0 = add(exp(in0), in0)", "  t1 = add(exp(t0), t0)"]
    assert lines[-2:] == ["  out0 = t199", "  out1 = neg(t199)"] and len(lines) == 5 + 200


def test_constants_print_their_dtype_and_special_values():
    assert format_expr(x.Const(bool_, 1)) == "bool(true)"
    assert format_expr(x.Const(float64, math.nan)) == "float64(nan)"
    assert format_expr(x.Const(float64, -math.inf)) == "float64(-inf)"
    assert format_expr(x.Const(int64, -3)) == "int64(-3)"
    assert format_expr(x.Param(float32, 2)) == "p2"


def test_kernel_text_names_schedule_buffers_params_and_body():
    k = Kernel(
        name="copy",
        rank=2,
        inputs=(Buffer(float32, BCAST),),
        outputs=(Buffer(float64, CONTIG),),
        exprs=(x.binary("add", x.cast(x.Load(float32, 0), float64), x.Param(float64, 0)),),
        params=(float64,),
        nontemporal=True,
    )
    assert format_kernel(k) == (
        "kernel copy rank=2 flat nontemporal\n"
        "  out0: float64 contig\n"
        "  in0: float32 bcast\n"
        "  p0: float64\n"
        "  out0 = add(cast<float64>(in0), p0)"
    )


def test_kernel_text_is_stable_across_equal_kernels():
    def make():
        return Kernel(
            "k", 1, (Buffer(int64),), (Buffer(bool_),), (x.cast(x.Load(int64, 0), bool_),)
        )

    assert format_kernel(make()) == format_kernel(make())


def test_graph_prints_ssa_lines_with_shapes():
    a = g.Input(float32, (2, 3), "a")
    c = g.Cast(float64, (2, 3), a)
    r = g.Reduce(float64, (2,), "sum", c, (1,))
    assert format_graph([r]) == (
        "%0 = input a : float32[2, 3]\n"
        "%1 = cast<float64> %0 : float64[2, 3]\n"
        "%2 = reduce.sum %1 axes=[1] : float64[2]\n"
        "return %2"
    )


def test_graph_prints_shared_nodes_once():
    a = g.Input(float32, (4,), "a")
    s = g.Binary(float32, (4,), "add", a, a)
    text = format_graph([s])
    assert text.count("input") == 1
    assert "%1 = add %0 %0 : float32[4]" in text


def test_fma_prints_as_a_call_of_its_three_operands():
    e = x.fma(x.Load(float32, 0), x.unary("neg", x.Param(float32, 0)), x.Load(float32, 1))
    assert format_expr(e) == "fma(in0, neg(p0), in1)"
    a, b = g.Input(float64, (2,), "a"), g.Scalar(float64, (), "w")
    graph = format_graph([g.Fma(float64, (2,), a, b, a)])
    assert graph.splitlines()[-2:] == ["%2 = fma %0 %1 %0 : float64[2]", "return %2"]
