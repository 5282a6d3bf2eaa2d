import pytest

from kael.ir import expr as x
from kael.ir import graph as g
from kael.ir.scheduler import schedule_elementwise
from kael.runtime.dtypes import bool_, float32, float64, int64


def test_elementwise_chain_fuses_into_one_kernel():
    a = g.Input(float32, (3,), "a")
    b = g.Input(int64, (3,), "b")
    s = g.Binary(float64, (3,), "add", g.Cast(float64, (3,), a), g.Cast(float64, (3,), b))
    kernel, inputs, scalars = schedule_elementwise("k", [s])
    assert inputs == [a, b]
    assert [buf.dtype for buf in kernel.inputs] == [float32, int64]
    assert kernel.outputs[0].dtype is float64
    assert kernel.exprs[0] == x.binary(
        "add", x.cast(x.Load(float32, 0), float64), x.cast(x.Load(int64, 1), float64)
    )
    assert scalars == [] and kernel.rank == 1


def test_an_input_used_twice_is_loaded_from_one_buffer():
    a = g.Input(float32, (3,), "a")
    kernel, inputs, _ = schedule_elementwise("k", [g.Binary(float32, (3,), "mul", a, a)])
    assert inputs == [a] and len(kernel.inputs) == 1


def test_scalars_become_run_time_parameters_and_consts_literals():
    v = g.Scalar(float64, (), "value")
    one = g.Const(float64, (), 1.0)
    kernel, _, scalars = schedule_elementwise("k", [g.Binary(float64, (), "add", v, one)])
    assert scalars == ["value"]
    assert kernel.params == (float64,)
    assert kernel.exprs[0] == x.binary("add", x.Param(float64, 0), x.Const(float64, 1.0))


def test_position_nodes_read_the_index():
    kernel, _, _ = schedule_elementwise("k", [g.Position(bool_, (2, 2), 1)])
    assert kernel.uses_index


def test_outputs_of_different_shapes_cannot_fuse():
    a = g.Input(float32, (3,), "a")
    b = g.Input(float32, (4,), "b")
    with pytest.raises(ValueError, match=r"\[3\] and \[4\]"):
        schedule_elementwise("k", [a, b])


def test_reductions_are_not_fused_yet_and_say_so():
    a = g.Input(float32, (3,), "a")
    with pytest.raises(NotImplementedError, match="Reduce"):
        schedule_elementwise("k", [g.Reduce(float32, (), "sum", a, (0,))])


def test_fma_nodes_lower_to_one_fma_expression_over_inputs_and_scalars():
    a, b = g.Input(float32, (3,), "a"), g.Input(float32, (3,), "b")
    w = g.Scalar(float32, (), "alpha")
    kernel, inputs, scalars = schedule_elementwise("k", [g.Fma(float32, (3,), b, w, a)])
    assert inputs == [b, a] and scalars == ["alpha"]
    assert kernel.exprs[0] == x.fma(x.Load(float32, 0), x.Param(float32, 0), x.Load(float32, 1))
