"""What a compiled plan must not assume across calls: an argument's layout or memory that
the function changes in place, a write to a shifted window of a buffer another fused
kernel reads, -0.0 against 0.0, a global rebound to another view, a model's parameters
replaced, an unhashable argument's id, and the thread's default device."""

import gc
import math
import warnings
import weakref

import numpy as np
import pytest

import kael


def test_an_out_resized_inside_a_compiled_function_is_resized_again_each_call():
    @kael.compile
    def f(x, out):
        return kael.add(x, 1, out=out)

    with pytest.warns(UserWarning, match="changed its layout in place"):
        for _ in range(3):  # the second call once wrote 12 bytes into a 0-byte storage
            out = kael.empty(0)
            result = f(kael.arange(3.0), out)
            assert result is out and out.tolist() == [1.0, 2.0, 3.0]


def test_a_grown_argument_is_not_read_through_the_old_plan():
    def fn(x):
        x.resize_(1 << 16)
        return x[:2] * 1

    compiled = kael.compile(fn)
    with pytest.warns(UserWarning, match="runs eagerly"):
        for _ in range(3):  # the second call once read 256 KB from an 8-byte storage
            x = kael.ones(2)
            result = compiled(x)
            assert x.shape == (1 << 16,) and result.tolist() == [1.0, 1.0]


@pytest.mark.parametrize(
    "change",
    [lambda x: x.t_(), lambda x: x.unsqueeze_(0), lambda x: x.as_strided_((3,), (2,))],
)
def test_an_argument_changed_in_place_keeps_its_new_layout_on_every_call(change):
    def fn(x):
        change(x)
        return x * 2

    compiled = kael.compile(fn)
    for _ in range(3):
        x, y = kael.arange(6.0).reshape(2, 3), kael.arange(6.0).reshape(2, 3)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            got = compiled(x)
        expected = fn(y)
        assert x.shape == y.shape and x.strides() == y.strides()
        np.testing.assert_array_equal(got.numpy(), expected.numpy())


def test_fusion_keeps_the_order_of_writes_to_overlapping_windows():
    def fn(a, b):
        b.copy_(a + 2.0)  # writes base[1:7]
        a.copy_(a + 0.5)  # reads base[0:6], which the line above wrote

    compiled = kael.compile(fn)
    for _ in range(2):
        base, expected = kael.arange(8.0), kael.arange(8.0)
        compiled(base[0:6], base[1:7])
        fn(expected[0:6], expected[1:7])
        assert base.tolist() == expected.tolist() == [0.5, 2.5, 3.5, 4.5, 5.5, 6.5, 7.0, 7.0]


def test_a_float_used_as_a_value_tells_minus_zero_from_zero():
    @kael.compile
    def f(x, s):
        return 1 / (x * (s * 2))

    x = kael.ones(2)
    assert f(x, 0.0).tolist() == [math.inf, math.inf]
    assert f(x, -0.0).tolist() == [-math.inf, -math.inf]


def test_a_float_used_as_a_value_finds_its_nan_plan_again():
    @kael.compile
    def f(x, s):
        return x + (s * 1)

    for _ in range(3):  # a new NaN object each call: equal to no other float
        assert math.isnan(f(kael.ones(1), float("nan")).item())
    assert f.cache_info().traces == 1


W = kael.arange(6.0).reshape(2, 3)


def test_a_global_rebound_to_another_view_of_its_storage_is_read_as_rebound():
    global W

    @kael.compile
    def f(x):
        return x + W.sum(0)

    x = kael.zeros(3)
    f(x), f(x)
    base = W.reshape(-1)
    W = base.reshape(3, 2).t()  # the same storage, other strides
    try:
        assert f(x).tolist() == W.sum(0).tolist() == [1.0, 5.0, 9.0]
    finally:
        W = base.reshape(2, 3)


def test_a_compiled_model_reads_replaced_parameters():
    model = kael.nn.Linear(2, 2)
    fast = kael.compile(model)
    x = kael.ones(1, 2)
    fast(x), fast(x)
    model.weight = kael.nn.Parameter(kael.full((2, 2), 3.0))
    assert fast(x).tolist() == model(x).tolist()
    model.weight.data = kael.zeros(2, 2)
    assert fast(x).tolist() == model(x).tolist() == [model.bias.tolist()]
    model.double()
    assert fast(x.double()).dtype is kael.float64


class _Options:
    """An argument the signature can name only by id (it has no hash)."""

    __hash__ = None
    scale = 2.0


def test_an_unhashable_argument_is_kept_alive_while_its_plans_are():
    @kael.compile
    def f(x, options):
        return x * options.scale

    options = _Options()
    alive = weakref.ref(options)
    f(kael.ones(1), options)
    del options
    gc.collect()
    assert alive() is not None  # a new object cannot take its id and its plan


def test_a_no_op_in_place_view_of_an_argument_keeps_the_plan():
    @kael.compile
    def f(x):
        x.unsqueeze_(0).squeeze_(0)
        return x * 2

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "runs eagerly" warning
        for _ in range(3):
            assert f(kael.ones(2, 3)).tolist() == [[2.0] * 3] * 2
