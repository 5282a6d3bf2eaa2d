"""What a compiled plan must not assume across calls: an argument's layout or memory that
the function changes in place, a write to a shifted window of a buffer another fused
kernel reads, -0.0 against 0.0, a global rebound to another view, a model's parameters
replaced, an unhashable argument's id, the thread's default device, what an argument
object holds, and that an object the function returns is the same at every call."""

import dataclasses
import enum
import functools
import gc
import math
import types
import warnings
import weakref

import numpy as np
import pytest
import torch
from parity_helpers import same

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
    """An argument the signature can name only by id (it has no hash, and no attributes of
    its own that a signature could describe it by)."""

    __slots__ = ("__weakref__",)
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


class _Holder:
    def __init__(self, a) -> None:
        self.a = a


@dataclasses.dataclass
class _Record:
    a: object


@dataclasses.dataclass(slots=True)
class _Slotted:
    a: object


class _Dict(dict):
    pass


class _List(list):
    pass


def _set_item(holder, value) -> None:
    holder[next(iter(holder)) if isinstance(holder, dict) else 0] = value


# Objects holding a tensor at `a` (or as their first item), as (make, read, rebind): leaves
# of a call's tree, which pytree does not open.
_AT_A = (lambda o: o.a, lambda o, v: setattr(o, "a", v))
_HOLDERS = {
    "object": (_Holder, *_AT_A),
    "dataclass": (_Record, *_AT_A),
    "slots dataclass": (_Slotted, *_AT_A),
    "namespace": (lambda v: types.SimpleNamespace(a=v), *_AT_A),
    "dict subclass": (lambda v: _Dict(a=v), lambda o: o["a"], _set_item),
    "list subclass": (lambda v: _List([v]), lambda o: o[0], _set_item),
}


@pytest.mark.parametrize("kind", _HOLDERS)
def test_a_result_object_holding_tensors_is_built_at_every_call(kind):
    make, read, _ = _HOLDERS[kind]
    f = kael.compile(lambda x: make(x * 2 + 1))
    seen = []
    with pytest.warns(UserWarning, match=f"the result holds a {type(make(None)).__name__}"):
        for value in (1.0, -3.0, 0.5):
            got = f(kael.full((3,), value))
            assert type(got) is type(make(None)) and all(got is not s for s in seen)
            same(read(got), torch.full((3,), value) * 2 + 1)
            seen.append(got)


def test_a_result_that_is_an_argument_object_is_the_calls_own():
    f = kael.compile(lambda o, x: (o, x + o.a))
    for value in (1.0, 4.0):
        torch_value = torch.full((2,), value)
        o = _Holder(kael.from_dlpack(torch_value.clone()))
        got, total = f(o, kael.ones(2))
        assert got is o
        same(total, torch_value + 1)
    assert f.cache_info().traces == 1


def test_immutable_result_leaves_stay_constants_of_the_plan():
    f = kael.compile(lambda x: (x + 1, None, 2, 1.5, "s", kael.float32, x.shape, x.device))
    for value in (1.0, 2.0):
        got = f(kael.full((2,), value))
        same(got[0], torch.full((2,), value) + 1)
        assert got[1:] == (None, 2, 1.5, "s", kael.float32, (2,), kael.device("cpu"))
    assert f.plan_for(kael.ones(2)).fallback is None


@pytest.mark.parametrize("kind", _HOLDERS)
def test_an_argument_objects_rebound_tensor_is_read_at_every_call(kind):
    make, read, rebind = _HOLDERS[kind]
    f = kael.compile(lambda o, x: read(o) * 2 + x)
    o = make(kael.ones(3))
    x = kael.ones(3)
    for value in (1.0, 3.0, -2.0):
        rebind(o, kael.full((3,), value))
        same(f(o, x), torch.full((3,), value) * 2 + 1)
    same(f(make(kael.full((3,), 5.0)), x), torch.full((3,), 11.0))  # another object alike
    assert f.cache_info().traces == 1  # its tensors are inputs of the plan, as arguments


def test_an_argument_objects_nested_tensor_rebound_is_read_at_every_call():
    f = kael.compile(lambda o: o.a.a[1] - o.a.a[0])
    o = _Holder(_Holder([kael.zeros(2), kael.ones(2)]))
    o.me = o  # a cycle is followed once
    same(f(o), torch.ones(2))
    o.a.a[1] = kael.full((2,), 4.0)
    same(f(o), torch.full((2,), 4.0))
    o.a = _Holder([kael.ones(2), kael.full((2,), 9.0)])
    same(f(o), torch.full((2,), 8.0))
    o.a.a = [kael.ones(2, 2), kael.zeros(2, 2)]  # a new rank: traced again, reason given
    same(f(o), -torch.ones(2, 2))
    assert f.cache_info().recompiles == [
        "argument 0: _Holder.a.a[0] changed from a float32 tensor of rank 1 on cpu to a "
        "float32 tensor of rank 2 on cpu"
    ]


def test_an_argument_objects_changed_number_traces_again_and_says_why():
    f = kael.compile(lambda x, o: x * o.a + 1)
    o = _Holder(2.0)
    x = kael.full((2,), 3.0)
    for scale in (2.0, 3.0, -0.0, 3.0):
        o.a = scale
        same(f(x, o), torch.full((2,), 3.0) * scale + 1)
    assert f.cache_info().recompiles[0] == "argument 1: _Holder.a changed from 2.0 to 3.0"
    assert f.cache_info().traces == 3  # each value once: 3.0 again runs its plan


def test_a_function_rebinding_what_an_argument_object_holds_runs_eagerly():
    def step(o):
        o.a = o.a * 2
        o.count += 1
        return o.a + o.count

    compiled = kael.compile(step)
    mine, theirs = _Holder(kael.ones(2)), _Holder(torch.ones(2))
    mine.count = theirs.count = 0
    with pytest.warns(UserWarning, match="rebinds what an argument object holds"):
        for _ in range(3):
            same(compiled(mine), step(theirs))
    same(mine.a, theirs.a)


def test_an_argument_object_too_big_to_guard_runs_eagerly():
    f = kael.compile(lambda o: o.a + 1)
    o = types.SimpleNamespace(a=kael.ones(2), table=list(range(300)))
    with pytest.warns(UserWarning, match="argument 0 \\(a SimpleNamespace\\) holds more than 256"):
        for value in (1.0, 7.0):
            o.a = kael.full((2,), value)
            same(f(o), torch.full((2,), value) + 1)


@pytest.mark.parametrize("kind", _HOLDERS)
def test_a_tensor_an_object_in_a_closure_holds_is_read_as_rebound(kind):
    make, read, rebind = _HOLDERS[kind]
    o = make(kael.ones(3))
    f = kael.compile(lambda x: read(o) * 2 + x)
    x = kael.ones(3)
    for value in (1.0, 3.0, -2.0):
        rebind(o, kael.full((3,), value))
        for _ in range(3):  # the third call runs the guarded replay
            same(f(x), torch.full((3,), value) * 2 + 1)


_CONFIG = types.SimpleNamespace(weight=kael.ones(2), eps=1.0, rows=1)
_SCALE = 2.0
_DTYPE = kael.float32


def _scaled(x):
    return (x * _SCALE).to(_DTYPE)


def test_a_global_objects_rebound_tensor_and_number_are_read_at_every_call():
    @kael.compile
    def f(x):
        return (x * _CONFIG.weight + _CONFIG.eps).reshape(_CONFIG.rows, -1)

    x = kael.full((2,), 3.0)
    settings = [(kael.ones(2), 1.0, 1), (kael.full((2,), 5.0), 1.0, 1), (kael.ones(2), 0.5, 2)]
    try:
        for weight, eps, rows in settings:
            _CONFIG.weight, _CONFIG.eps, _CONFIG.rows = weight, eps, rows
            expected = torch.full((2,), 3.0) * torch.from_numpy(weight.numpy()) + eps
            for _ in range(3):
                same(f(x), expected.reshape(rows, -1))
    finally:
        _CONFIG.weight, _CONFIG.eps, _CONFIG.rows = kael.ones(2), 1.0, 1


def test_a_global_number_or_dtype_rebound_traces_again():
    global _SCALE, _DTYPE
    f = kael.compile(_scaled)
    x = kael.full((2,), 3.0)
    try:
        for scale, dtype in [(2.0, "float32"), (0.0, "float32"), (-0.0, "float32"),
                             (-0.0, "float64"), (2.0, "float32")]:  # fmt: skip
            _SCALE, _DTYPE = scale, getattr(kael, dtype)
            for _ in range(3):
                same(f(x), (torch.full((2,), 3.0) * scale).to(getattr(torch, dtype)))
        assert f.cache_info().traces == 5  # one per change: only the plan of the last is kept
    finally:
        _SCALE, _DTYPE = 2.0, kael.float32


def test_a_closure_number_read_in_a_comprehension_traces_again_when_rebound():
    scale = 2.0

    @kael.compile
    def f(xs):
        return [x * scale for x in xs]

    x = kael.ones(2)
    for scale in (2.0, 5.0):  # noqa: B007 (the closure cell is what f reads)
        for _ in range(2):
            same(f([x, x])[1], torch.full((2,), scale))


_CALLS = 0
_UNREAD = 1.0


def test_a_function_that_assigns_a_global_runs_eagerly_and_repeats_its_effect():
    global _CALLS

    @kael.compile
    def f(x):
        global _CALLS
        _CALLS += 1
        return x * _CALLS

    x = kael.ones(2)
    _CALLS = 0
    with pytest.warns(UserWarning, match="rebinds a global"):
        for n in (1, 2, 3):
            same(f(x), torch.full((2,), float(n)))
    assert _CALLS == 3


def test_a_global_the_function_never_names_keeps_its_plan():
    global _UNREAD
    f = kael.compile(lambda x: x + 1)
    x = kael.ones(2)
    for value in (1.0, 2.0, 3.0):
        _UNREAD = value
        same(f(x), torch.full((2,), 2.0))
    assert f.cache_info().traces == 1


_STATE = {"step": 0}
_AVERAGE = types.SimpleNamespace(m=kael.zeros(2))


def _count_steps(x):
    _STATE["step"] += 1
    return x * _STATE["step"]


def _moving_average(x):
    _AVERAGE.m = _AVERAGE.m * 0.5 + x * 0.5
    return _AVERAGE.m


@pytest.mark.parametrize("fn", [_count_steps, _moving_average])
def test_a_function_updating_what_a_global_object_holds_gives_eagers_values(fn):
    _STATE["step"], _AVERAGE.m = 0, kael.zeros(2)
    compiled = kael.compile(fn)
    with pytest.warns(UserWarning, match="rebinds a global"):
        got = [compiled(kael.ones(2)).tolist() for _ in range(3)]
    _STATE["step"], _AVERAGE.m = 0, kael.zeros(2)
    assert got == [fn(kael.ones(2)).tolist() for _ in range(3)]


_MEMO: dict = {}


def test_a_cache_filled_by_the_first_trace_leaves_a_plan_from_the_second():
    _MEMO.clear()

    @kael.compile
    def f(x):
        if "w" not in _MEMO:
            _MEMO["w"] = kael.full((2,), 3.0)
        return x * _MEMO["w"]

    x = kael.ones(2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no eager fallback
        for _ in range(4):
            same(f(x), torch.full((2,), 3.0))
    info = f.cache_info()
    assert info.traces == 2 and info.hits == 2  # the first trace filled the cache


_WEIGHTS = [kael.full((2,), 2.0)]


def test_a_global_list_that_grows_traces_again():
    @kael.compile
    def f(x):
        for w in _WEIGHTS:
            x = x * w
        return x

    x = kael.ones(2)
    try:
        same(f(x), torch.full((2,), 2.0))
        _WEIGHTS.append(kael.full((2,), 3.0))
        same(f(x), torch.full((2,), 6.0))
        assert f.cache_info().recompiles == ["the length of global _WEIGHTS changed from 1 to 2"]
    finally:
        del _WEIGHTS[1:]


class _Settings:
    eps = 1.0


class _Mode(enum.Enum):
    A = 1
    B = 2


_SETTINGS = _Settings()
_USER_MODULE = types.ModuleType("user_settings")
_USER_MODULE.EPS = 1.0
_MODE = _Mode.A
_ROWS = np.int64(1)


def _plus_class_attribute(x):
    return x + _SETTINGS.eps


def _plus_module_attribute(x):
    return x + _USER_MODULE.EPS


def _through_a_helper(settings, x):
    return x + settings.eps


def _plus_through_a_helper(x):
    return _through_a_helper(_SETTINGS, x)


def _by_mode(x):
    return (x * 10 if _MODE is _Mode.A else x * 20).reshape(_ROWS, -1)


@pytest.mark.parametrize(
    "fn, owner, name",
    [
        (_plus_class_attribute, _Settings, "eps"),
        (_plus_module_attribute, _USER_MODULE, "EPS"),
        (_plus_through_a_helper, _Settings, "eps"),
    ],
)
def test_a_class_or_module_attribute_read_outside_the_arguments_is_guarded(fn, owner, name):
    f = kael.compile(fn)
    x = kael.ones(2)
    try:
        for value in (1.0, 4.0):
            setattr(owner, name, value)
            same(f(x), torch.full((2,), 1.0 + value))
    finally:
        setattr(owner, name, 1.0)


def test_an_enum_and_a_numpy_scalar_global_are_guarded():
    global _MODE, _ROWS
    f = kael.compile(_by_mode)
    x = kael.ones(2)
    try:
        for mode, rows, scale in ((_Mode.A, 1, 10.0), (_Mode.B, 2, 20.0)):
            _MODE, _ROWS = mode, np.int64(rows)
            same(f(x), torch.full((2,), scale).reshape(rows, -1))
    finally:
        _MODE, _ROWS = _Mode.A, np.int64(1)


class _Shifter:
    def __init__(self) -> None:
        self.shift = 1.0

    def apply(self, x):
        return x + self.shift


def _shifted(x, by):
    return x + by.shift


def test_a_bound_method_and_a_partial_guard_the_objects_they_hold():
    shifter = _Shifter()
    x = kael.ones(2)
    for f in (kael.compile(shifter.apply), kael.compile(functools.partial(_shifted, by=shifter))):
        for value in (1.0, 5.0):
            shifter.shift = value
            same(f(x), torch.full((2,), 1.0 + value))
        shifter.shift = 1.0


class _ScaledByGlobal(kael.nn.Module):
    def forward(self, x):
        return x * _SCALE


def test_a_compiled_modules_forward_reads_its_rebound_global_number():
    global _SCALE
    fast = kael.compile(_ScaledByGlobal())
    x = kael.ones(2)
    try:
        for scale in (2.0, 3.0):
            _SCALE = scale
            for _ in range(2):
                same(fast(x), torch.full((2,), scale))
    finally:
        _SCALE = 2.0


def test_inspect_lists_what_the_plan_reads_from_outside_its_arguments():
    f = kael.compile(_scaled)
    text = str(f.inspect(kael.ones(2)))
    assert "global _SCALE == 2.0" in text and "global _DTYPE == kael.float32" in text
    text = str(kael.compile(lambda x: x * _CONFIG.weight).inspect(kael.ones(2)))
    assert "global _CONFIG.weight: this tensor (storage and layout)" in text


_COMPLEX = complex(-0.0, 0.0)
_LABEL = np.str_("a")
_TABLE = [float(i) for i in range(3000)]


def test_a_complex_global_tells_minus_zero_and_finds_its_nan_plan_again():
    global _COMPLEX
    f = kael.compile(lambda x: x * _COMPLEX)
    x = kael.ones(1, dtype=kael.complex64)
    try:
        for value in (complex(-0.0, 0.0), complex(0.0, 0.0)):
            _COMPLEX = value
            want = torch.ones(1, dtype=torch.complex64) * value
            assert kael.view_as_real(f(x)).tolist() == torch.view_as_real(want).tolist()
            assert math.copysign(1.0, kael.view_as_real(f(x))[0, 0].item()) == math.copysign(
                1.0, torch.view_as_real(want)[0, 0].item()
            )
        traces = f.cache_info().traces
        for _ in range(3):
            _COMPLEX = complex("nan")  # a new object each time, the same bits
            f(x)
        assert f.cache_info().traces == traces + 1
    finally:
        _COMPLEX = complex(-0.0, 0.0)


def test_a_numpy_string_global_rebound_says_what_changed():
    global _LABEL
    f = kael.compile(lambda x: x * 2.0 if _LABEL == "a" else x)
    try:
        same(f(kael.ones(2)), torch.full((2,), 2.0))
        _LABEL = np.str_("b")
        same(f(kael.ones(2)), torch.ones(2))
        assert f.cache_info().recompiles == [
            "global _LABEL changed from np.str_('a') to np.str_('b')"
        ]
    finally:
        _LABEL = np.str_("a")


def test_a_function_that_keeps_assigning_a_global_settles_on_eager_calls():
    global _CALLS

    @kael.compile
    def f(x):
        global _CALLS
        _CALLS += 1
        return x * 2.0

    _CALLS = 0
    with pytest.warns(UserWarning, match="rebinds a global"):
        for _ in range(20):
            same(f(kael.ones(2)), torch.full((2,), 2.0))
    assert _CALLS == 20 and f.cache_info().traces == 2 and f.cache_info().recompiles == []


def test_a_long_global_list_of_numbers_is_compared_whole():
    f = kael.compile(lambda x: x * _TABLE[5])
    x = kael.ones(2)
    try:
        same(f(x), torch.full((2,), 5.0))
        assert "global _TABLE == 3000 items" in str(f.inspect(x))
        _TABLE[5] = 7.0
        same(f(x), torch.full((2,), 7.0))
    finally:
        _TABLE[5] = 5.0


_SMALL = [1]
_ZERO = {"z": 0.0}


def test_a_short_global_list_or_dict_tells_int_from_float_and_signed_zeros():
    f = kael.compile(lambda x: x * _SMALL[0])
    g = kael.compile(lambda y: y * _ZERO["z"])
    x, y = kael.tensor([1, 2, 3]), kael.tensor([-1.0, 1.0])
    try:
        assert f(x).dtype is kael.int64
        _SMALL[0] = 1.0
        assert f(x).dtype is kael.float32
        for zero in (0.0, -0.0):
            _ZERO["z"] = zero
            got, want = g(y).numpy(), (torch.tensor([-1.0, 1.0]) * zero).numpy()
            assert np.signbit(got).tolist() == np.signbit(want).tolist()
    finally:
        _SMALL[0], _ZERO["z"] = 1, 0.0


class _Scaler:
    factor = 2.0  # a class constant its method reads through self

    @kael.compile
    def forward(self, x):
        return x * self.factor


def test_a_class_constant_read_through_a_self_argument_is_guarded():
    scaler, x = _Scaler(), kael.ones(2)
    try:
        for factor in (2.0, 5.0):
            _Scaler.factor = factor
            same(scaler.forward(x), torch.full((2,), factor))
        scaler.factor = 7.0  # an instance attribute now shadows it
        same(scaler.forward(x), torch.full((2,), 7.0))
    finally:
        _Scaler.factor = 2.0


class _LateSettings:
    pass


_LATE = _LateSettings()
_WEIGHTS_BY_NAME = {"a": 1.0, "b": 2.0}


def test_a_class_constant_added_after_the_class_was_seen_is_guarded():
    x = kael.ones(2)
    kael.compile(lambda x, c: x + 1)(x, _LATE)  # the class seen with no constants
    _LateSettings.scale = 2.0
    try:
        g = kael.compile(lambda x: x * _LATE.scale)
        h = kael.compile(lambda x, c: x * c.scale)
        for scale in (2.0, 5.0):
            _LateSettings.scale = scale
            same(g(x), torch.full((2,), scale))
            same(h(x, _LATE), torch.full((2,), scale))
    finally:
        del _LateSettings.scale


def test_a_short_global_dict_read_through_values_or_a_variable_key_is_guarded():
    f = kael.compile(lambda x: x * sum(_WEIGHTS_BY_NAME.values()))
    g = kael.compile(lambda x, k: x * _WEIGHTS_BY_NAME[k])
    x = kael.ones(2)
    try:
        for a, b in ((1.0, 2.0), (7.0, 10.0)):
            _WEIGHTS_BY_NAME["a"], _WEIGHTS_BY_NAME["b"] = a, b
            same(f(x), torch.full((2,), a + b))
            same(g(x, "a"), torch.full((2,), a))
    finally:
        _WEIGHTS_BY_NAME["a"], _WEIGHTS_BY_NAME["b"] = 1.0, 2.0


# ---- what the function calls: rebound, or reading what changed -------------------------------

ONES = kael.ones(2)


def _doubled(x):
    return x * 2


def test_a_rebound_global_function_traces_again():
    global HELPER, ACTIVATION
    HELPER, ACTIVATION = _doubled, kael.relu
    f = kael.compile(lambda x: HELPER(x) + ACTIVATION(x))
    assert f(-ONES).tolist() == [-2.0, -2.0]
    HELPER, ACTIVATION = (lambda x: x * 3), kael.sigmoid  # a user's function, then kael's
    assert f(-ONES).tolist() == (-ONES * 3 + kael.sigmoid(-ONES)).tolist()


class _Applier:
    def __init__(self, k):
        self.k = k

    def apply(self, x):
        return x * self.k

    def __call__(self, x):
        return x * self.k

    @staticmethod
    def shared(x):
        return x * _Applier.factor

    factor = 2


def test_a_method_or_call_of_a_global_object_is_guarded_by_what_it_reads():
    global SCALER, CALLABLE
    SCALER, CALLABLE = _Applier(2), _Applier(3)
    f = kael.compile(lambda x: SCALER.apply(x) + CALLABLE(x) + _Applier.shared(x))
    assert f(ONES).tolist() == [7.0, 7.0]
    SCALER.k, CALLABLE.k, _Applier.factor = 10, 20, 30
    try:
        assert f(ONES).tolist() == [60.0, 60.0]
    finally:
        _Applier.factor = 2


def _reads_k(x):
    return x * K_READ


def test_a_function_held_in_a_dict_or_an_attribute_is_looked_into():
    global K_READ, TABLE, HOLDER
    K_READ = 2
    TABLE = {"act": _reads_k}
    HOLDER = types.SimpleNamespace(fn=_reads_k)
    f = kael.compile(lambda x: TABLE["act"](x) + HOLDER.fn(x))
    assert f(ONES).tolist() == [4.0, 4.0]
    K_READ = 5
    assert f(ONES).tolist() == [10.0, 10.0]
    TABLE["act"] = _doubled  # the dict's function replaced
    assert f(ONES).tolist() == [7.0, 7.0]


def test_a_helper_module_function_reading_its_module_state_is_guarded():
    global HELPERS
    HELPERS = types.ModuleType("helpers")
    exec("CFG = {'a': 2}\ndef deep(x):\n    return x * CFG['a']", HELPERS.__dict__)
    f = kael.compile(lambda x: HELPERS.deep(x))
    assert f(ONES).tolist() == [2.0, 2.0]
    HELPERS.CFG["a"] = 6
    assert f(ONES).tolist() == [6.0, 6.0]


def _level(n):
    """A chain of n helpers, the last reading the global DEPTH_K."""
    code = "def h0(x):\n    return x * DEPTH_K\n"
    for i in range(1, n):
        code += f"def h{i}(x):\n    return h{i - 1}(x)\n"
    space = {"DEPTH_K": 2}
    exec(code, space)
    return space, space[f"h{n - 1}"]


def test_a_chain_of_helpers_is_guarded_to_its_depth_and_runs_eagerly_past_it():
    from kael.frontend.compiled import HELPER_DEPTH

    for n, compiled in ((HELPER_DEPTH, True), (HELPER_DEPTH + 2, False)):
        space, top = _level(n)
        f = kael.compile(lambda x, top=top: top(x))
        if compiled:
            f(ONES)
        else:
            with pytest.warns(UserWarning, match="too deep to guard"):
                f(ONES)
        space["DEPTH_K"] = 3
        assert f(ONES).tolist() == [3.0, 3.0]
        assert (f.plan_for(ONES).fallback is None) == compiled


def test_a_global_path_past_held_depth_runs_eagerly_with_a_warning():
    from kael.frontend.compiled import HELD_DEPTH

    global DEEP
    DEEP = node = types.SimpleNamespace()
    for _ in range(HELD_DEPTH + 1):
        node.a = types.SimpleNamespace()
        node = node.a
    node.v = 2
    path = "DEEP" + ".a" * (HELD_DEPTH + 1) + ".v"
    f = kael.compile(eval(f"lambda x: x * {path}"))
    with pytest.warns(UserWarning, match="too deep to guard"):
        assert f(ONES).tolist() == [2.0, 2.0]
    node.v = 3
    assert f(ONES).tolist() == [3.0, 3.0]


def test_changed_defaults_trace_again():
    def f(x, k=2, *, cfg={"m": 1}):  # noqa: B006 - the mutable default is the case
        return x * k * cfg["m"]

    c = kael.compile(f)
    assert c(ONES).tolist() == [2.0, 2.0]
    f.__defaults__ = (4,)
    assert c(ONES).tolist() == [4.0, 4.0]
    f.__kwdefaults__["cfg"]["m"] = 3
    assert c(ONES).tolist() == [12.0, 12.0]
    f.__kwdefaults__ = {"cfg": {"m": 5}}
    assert c(ONES).tolist() == [20.0, 20.0]


class _Sub(kael.Tensor):
    pass


@pytest.mark.parametrize("kind", [_Sub, kael.nn.Parameter], ids=["subclass", "Parameter"])
def test_a_tensor_subclass_is_its_own_signature(kind):
    f = kael.compile(lambda x: x * 10 if isinstance(x, kind) else x * 3)
    for _ in range(2):  # the plain tensor first, then the subclass, and back
        assert f(ONES).tolist() == [3.0, 3.0]
        assert f(kind(kael.ones(2))).tolist() == [10.0, 10.0]
    assert f.cache_info().plans == 2


class _Rotary(kael.nn.Module):
    def __init__(self):
        super().__init__()
        self.table = kael.arange(40.0).reshape(10, 4)
        self.calls = 0

    def forward(self, x, position: int):
        self.table = self.table.to(x.device)  # the object it holds: no change (Meta's llama)
        return x + self.table[position]


def test_setting_a_module_attribute_to_the_object_it_holds_is_no_side_effect():
    model, x = _Rotary(), kael.ones(4)
    f = kael.compile(model)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "runs eagerly" warning
        for _ in range(3):
            assert kael.equal(f(x, 2), x + model.table[2])
    assert f.cache_info().hits == 2


class _Counting(kael.nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = 0

    def forward(self, x, scale: int):
        self.calls = self.calls + 1  # a side effect at every call
        return x * scale


def test_a_side_effect_under_a_changing_int_is_warned_of_and_runs_eagerly():
    """The int turns dynamic, so the calls share a signature whose second side effect makes
    it eager (before, each int was a signature of its own, every trace a first fill)."""
    model = _Counting()
    f = kael.compile(model)
    with pytest.warns(UserWarning, match="sets 'calls'.*runs eagerly"):
        for scale in range(6):
            assert f(ONES, scale).tolist() == [float(scale)] * 2
    assert model.calls == 6


class _Ops:
    @staticmethod
    def act(x):
        return x * 2

    def apply(self, x):
        return x + 1


def test_a_method_or_module_function_rebound_where_the_code_finds_it_traces_again():
    global OPS, UTILS, ACTS
    OPS, ACTS = _Ops(), {"act": kael.relu}
    UTILS = types.ModuleType("utils")
    UTILS.act = kael.relu
    f = kael.compile(lambda x: _Ops.act(x) + OPS.apply(x) + UTILS.act(x) + ACTS["act"](x))
    assert f(-ONES).tolist() == [-2.0, -2.0]
    saved = _Ops.act, _Ops.apply
    try:
        _Ops.act = staticmethod(lambda x: x * 3)  # on the class
        _Ops.apply = lambda self, x: x + 10  # the method of the object it names
        UTILS.act, ACTS["act"] = kael.sigmoid, kael.sigmoid  # a module's, a dict's kael op
        want = -ONES * 3 + (-ONES + 10) + 2 * kael.sigmoid(-ONES)
        assert kael.allclose(f(-ONES), want)
    finally:
        _Ops.act, _Ops.apply = saved


class _Shaped:
    def __init__(self):
        self.scale = 2.0
        self.w = kael.ones(4)


def test_an_argument_object_beside_a_changing_int_keeps_its_plan():
    f = kael.compile(lambda c, x, p: x[p : p + 1] * c.scale + c.w)
    x = kael.arange(32.0).reshape(8, 4)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "runs eagerly"
        for p in range(8):
            assert kael.equal(f(_Shaped(), x, p), x[p : p + 1] * 2.0 + 1)
    assert f.cache_info().traces == 2


def test_what_the_code_never_reads_is_no_reason_to_run_eagerly():
    global NESTED
    NESTED = {"model": {"enc": {"layers": [{"dim": 4, "act": {"name": "relu"}}]}}, "lr": 0.1}

    def big_default(x, table=list(range(5000))):  # noqa: B006 - never read
        return x * 2

    space, chain = _level_reading_nothing(HELPER_DEPTH_PLUS)
    for fn in (lambda x: x * NESTED["lr"], big_default, lambda x: chain(x)):
        f = kael.compile(fn)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            f(ONES)
        assert f.plan_for(ONES).fallback is None


HELPER_DEPTH_PLUS = 8


def _level_reading_nothing(n):
    """A chain of n helpers, none reading a global."""
    code = "def h0(x):\n    return x * 2\n"
    for i in range(1, n):
        code += f"def h{i}(x):\n    return h{i - 1}(x)\n"
    space: dict = {}
    exec(code, space)
    return space, space[f"h{n - 1}"]


class _Denoiser(kael.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("timesteps", kael.arange(900, -1, -100).float())

    def forward(self, x, t):
        return x * (t / self.timesteps[0]) + self.timesteps[3]


@pytest.mark.filterwarnings("ignore:kael.compile")
def test_an_argument_that_is_the_memory_of_a_module_buffer_it_reads_is_not_moved():
    """t is a view of the module's own timesteps: the trace cannot tell its read of
    self.timesteps[0] from t's, so the calls run eagerly instead of shifting both."""
    model = _Denoiser()
    step = kael.compile(model)
    for t in model.timesteps:
        assert kael.equal(step(ONES, t), model(ONES, t))


_SHARED = kael.arange(8.0)


def _doubles_the_global(t):
    _SHARED.mul_(2.0)
    return _SHARED + t


@pytest.mark.filterwarnings("ignore:kael.compile")
def test_an_argument_that_is_a_globals_memory_is_never_read_in_its_place():
    global _SHARED
    c = kael.compile(_doubles_the_global)
    c(kael.zeros(8)[0])
    c(kael.zeros(8)[1])
    _SHARED.copy_(kael.arange(8.0))
    theirs = kael.arange(8.0)
    got = c(_SHARED[7])
    _SHARED, saved = theirs, _SHARED
    try:
        want = _doubles_the_global(theirs[7])
    finally:
        _SHARED = saved
    assert kael.equal(got, want)
    h = kael.ones(3)
    g = kael.compile(lambda a: a + h)
    g(h)  # the argument is the closure's tensor at the trace
    assert g(kael.zeros(3)).tolist() == [1.0, 1.0, 1.0]


def test_a_nested_list_past_the_depth_and_a_big_default_are_seen_changing():
    global DEEP_LIST, BIG
    DEEP_LIST = [[[[[[2.0]]]]]]
    BIG = [1.0] * 5000

    def uses_default(x, table=BIG):
        return x * table[0]

    f = kael.compile(lambda x: x * DEEP_LIST[0][0][0][0][0][0])
    g = kael.compile(uses_default)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert f(ONES).tolist() == [2.0, 2.0] and g(ONES).tolist() == [1.0, 1.0]
        DEEP_LIST[0][0][0][0][0][0], BIG[0] = 3.0, 8.0
        assert f(ONES).tolist() == [3.0, 3.0] and g(ONES).tolist() == [8.0, 8.0]


class _WithProperty:
    def __init__(self):
        self._k = 2.0

    @property
    def k(self):
        return self._k


def test_what_a_property_getter_reads_is_guarded():
    global WITH_PROPERTY
    WITH_PROPERTY = _WithProperty()
    f = kael.compile(lambda x: x * WITH_PROPERTY.k)
    assert f(ONES).tolist() == [2.0, 2.0]
    WITH_PROPERTY._k = 5.0
    assert f(ONES).tolist() == [5.0, 5.0]
