import math

import pytest

from kael.ir import expr as x
from kael.runtime.dtypes import bool_, float32, float64, int64


def test_cast_to_same_dtype_is_the_expression_itself():
    a = x.Load(float32, 0)
    assert x.cast(a, float32) is a
    assert isinstance(x.cast(a, int64), x.Cast)


def test_comparisons_give_bool_and_arithmetic_keeps_the_dtype():
    a, b = x.Load(int64, 0), x.Load(int64, 1)
    assert x.binary("lt", a, b).dtype is bool_
    assert x.binary("add", a, b).dtype is int64
    assert x.unary("not", a).dtype is bool_
    assert x.unary("neg", a).dtype is int64


def test_binary_of_two_dtypes_is_a_scheduler_bug():
    with pytest.raises(AssertionError, match="float32 and int64"):
        x.binary("add", x.Load(float32, 0), x.Load(int64, 1))


def test_unknown_op_is_rejected():
    with pytest.raises(KeyError):
        x.unary("no_such_op", x.Load(float32, 0))


def test_nan_constants_are_equal_so_kernels_share_a_cache_entry():
    a, b = x.Const(float64, math.nan), x.Const(float64, math.nan)
    assert a == b and hash(a) == hash(b)


def test_signed_zero_constants_differ():
    assert x.Const(float32, 0.0) != x.Const(float32, -0.0)


def test_constants_of_different_dtypes_differ():
    assert x.Const(float32, 1.0) != x.Const(float64, 1.0)


def test_equal_trees_are_equal_and_hash_alike():
    def tree():
        return x.binary("mul", x.cast(x.Load(int64, 0), float64), x.Param(float64, 0))

    assert tree() == tree() and hash(tree()) == hash(tree())


def test_int_bool_and_float_constants_of_one_value_differ():
    assert x.Const(int64, 1) != x.Const(int64, True)
    assert x.Const(float64, 1) != x.Const(float64, 1.0)
    assert x.Const(float64, 1.0) == x.Const(float64, 1.0)


def _doubling(depth: int, leaf: int = 0) -> x.Expr:
    """A DAG whose every level uses the one below twice: 2**depth paths, 2 depth nodes."""
    e = x.cast(x.Load(int64, leaf), float64)
    for _ in range(depth):
        e = x.binary("add", x.unary("abs", e), e)
    return e


def test_shared_dags_hash_compare_and_walk_per_node_not_per_path():
    a, b = _doubling(200), _doubling(200)  # 2**200 paths: anything per path never ends
    assert a is not b and a == b and hash(a) == hash(b)
    assert a != _doubling(200, leaf=1) and a != _doubling(199)
    assert len(x.walk(a)) == 2 + 2 * 200


def test_repr_of_a_shared_dag_prints_each_node_once():
    text = repr(_doubling(200))
    assert text.startswith("<float64 t0 = ") and len(text) < 20_000


def test_walk_visits_shared_operands_once():
    a = x.Load(float32, 0)
    e = x.binary("mul", x.unary("neg", a), a)
    assert x.walk(e) == [a, e.a, e]


def test_walk_visits_operands_before_users():
    a = x.Load(float32, 0)
    e = x.unary("neg", x.binary("add", a, a))
    order = list(x.walk(e))
    assert order[-1] is e
    assert order.index(a) < order.index(e.x)


def test_uses_index_finds_positions():
    assert x.uses_index(x.cast(x.index(1), float32))
    assert not x.uses_index(x.Load(float32, 0))


def test_any_faults_is_true_for_integer_division_only_and_answers_per_tuple():
    a, b = x.Load(int64, 0), x.Load(int64, 1)
    dividing = (x.binary("add", a, b), x.binary("floordiv", a, b))
    adding = (x.binary("add", a, b),)
    for _ in range(2):  # the second answer comes from the memo
        assert x.any_faults(dividing) and not x.any_faults(adding)
    # a tuple made later (perhaps at a freed tuple's address) gets its own answer
    assert x.any_faults(dividing[1:]) and not x.any_faults(adding + adding)


def test_fma_is_one_float_node_of_its_three_operands_in_order():
    a, b, c = (x.Load(float32, i) for i in range(3))
    e = x.fma(a, b, c)
    assert e.dtype is float32 and x.children(e) == (a, b, c)
    assert e == x.fma(a, b, c) and hash(e) == hash(x.fma(a, b, c))
    assert e != x.fma(b, a, c)
    assert x.walk(e) == [a, b, c, e]


def test_fma_of_two_dtypes_or_of_integers_is_a_scheduler_bug():
    with pytest.raises(AssertionError, match="float32, float64 and float32"):
        x.fma(x.Load(float32, 0), x.Load(float64, 1), x.Load(float32, 2))
    with pytest.raises(AssertionError, match="floating operands only, got int64"):
        x.fma(*(x.Load(int64, i) for i in range(3)))
