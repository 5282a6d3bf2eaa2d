"""The guarded replay (frontend/guard.py): each of a compiled function's last two
positional call signatures tested field by field in front of its plan's replay. It must
run exactly the calls the signature lookup would give the same plan, and hand every
other call back."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from parity_helpers import in_threads

import kael
from kael.frontend.guard import MISS


def _bits(t: kael.Tensor) -> tuple:
    return t.shape, t.dtype, t.numpy().tobytes()


def _agree(result: kael.Tensor, expected: kael.Tensor) -> bool:
    """Compiled and eager agree bit for bit on float32 (its products are exact in the
    float64 accumulator); on float64 the plan's fused sum of squares adds each product
    with one fma where eager rounds it first, so the last bits may differ."""
    if result.dtype == kael.float32:
        return _bits(result) == _bits(expected)
    a, b = result.numpy(), expected.numpy()
    return result.shape == expected.shape and np.allclose(a, b, rtol=1e-13, atol=0)


def scaled_norm(m, v, scale, power):
    v = m @ v
    return v * scale / (v * v).sum().sqrt() ** power


def _guarded(fn, *args):
    """The compiled function, after the calls that trace it, write its replay and then
    its guarded replay."""
    c = kael.compile(fn)
    for _ in range(3):
        c(*args)
    assert c._guarded is not None
    return c


def _guarding(*calls):
    """scaled_norm compiled and called with each signature in turn until it is guarded:
    the last one's guard first, the one before it second."""
    c = kael.compile(scaled_norm)
    for call in calls:
        for _ in range(3):
            c(*call)
    return c


def _call():
    return kael.randn(200, 200) / 20, kael.randn(200), 0.5, 2


def test_a_call_like_the_last_runs_through_the_guarded_replay():
    args = _call()
    c = _guarded(scaled_norm, *args)
    hits = c.cache_info().hits
    assert c._guarded(args) is not MISS
    assert c.cache_info().hits == hits + 1
    v = kael.randn(200)
    assert _bits(c(args[0], v, 0.25, 2)) == _bits(scaled_norm(args[0], v, 0.25, 2))


def _variants(m, v):
    """Calls of scaled_norm that differ from (m, v, 0.5, 2) in one field of its signature."""
    big = kael.randn(300)
    return {
        "argument count": (m, v, 0.5),
        "dtype": (m, v.double(), 0.5, 2),
        "shape": (m[:100], v, 0.5, 2),
        "strides": (m.T, v, 0.5, 2),
        "offset": (m, big[100:], 0.5, 2),
        "storage bytes": (m, big[:200], 0.5, 2),
        "float as an int": (m, v, 1, 2),
        "int value": (m, v, 0.5, 3),
        "bool for an int": (m, v, 0.5, True),
        "not a tensor": (m, v.numpy(), 0.5, 2),
    }


@pytest.mark.parametrize("field", list(_variants(kael.ones(1), kael.ones(1))))
def test_a_call_that_differs_in_one_field_misses_and_runs_its_own_plan(field):
    m, v, *_ = args = _call()
    c = _guarded(scaled_norm, *args)
    call = _variants(m, v)[field]
    guarded = c._guarded
    assert guarded(call) is MISS
    if field == "argument count":
        with pytest.raises(TypeError):
            c(*call)
        return
    if field == "not a tensor":
        return
    for _ in range(3):
        assert _agree(c(*call), scaled_norm(*call))
    # the last call's signature is the one guarded now, the one before it second
    assert c._guarded(call) is not MISS and c._other is guarded


def test_a_tensor_subclass_misses_and_takes_the_lookup():
    class Sub(kael.Tensor):
        __slots__ = ()

    m, v, *rest = args = _call()
    c = _guarded(scaled_norm, *args)
    sub = Sub(kael.randn(200)._impl)
    assert c._guarded((m, sub, *rest)) is MISS
    assert _bits(c(m, sub, *rest)) == _bits(scaled_norm(m, sub, *rest))


def add_into(a, b):
    a.add_(b)
    return a.sum()


def test_aliasing_is_guarded_both_ways():
    a, b = kael.ones(8), kael.ones(8)
    c = _guarded(add_into, a, b)
    assert c._guarded((a, a)) is MISS  # one storage where the plan has two
    s = kael.ones(8)
    c = _guarded(add_into, s, s)
    assert c._guarded((a, b)) is MISS  # two storages where the plan has one
    x = kael.ones(8)
    assert c(x, x).item() == 16.0 and x.tolist() == [2.0] * 8  # eager's answer


def test_two_storages_over_one_array_miss_and_run_eagerly():
    apart = np.ones(8, np.float32), np.ones(8, np.float32)
    c = _guarded(add_into, kael.from_numpy(apart[0]), kael.from_numpy(apart[1]))
    array = np.ones(8, np.float32)
    twins = kael.from_numpy(array), kael.from_numpy(array)
    assert c._guarded(twins) is MISS
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert c(*twins).item() == 16.0
    assert any("share memory" in str(w.message) for w in caught)


def five(a, b, c, d, e):
    a.add_(e)
    return a + b + c + d


def test_overlaps_among_many_arguments_are_tested_by_one_call():
    args = [kael.from_numpy(np.ones(8, np.float32)) for _ in range(5)]
    c = _guarded(five, *args)
    array = np.ones(8, np.float32)
    twins = [*args[:4], kael.from_numpy(array)]
    twins[0] = kael.from_numpy(array)  # arguments 0 and 4 share memory
    assert c._guarded(tuple(twins)) is MISS
    fresh = [kael.from_numpy(np.ones(8, np.float32)) for _ in range(5)]
    assert c._guarded(tuple(fresh)) is not MISS


class Model:
    def __init__(self, weight: kael.Tensor) -> None:
        self.weight = weight

    def forward(self, x):
        x.mul_(2)
        return x + self.weight


def test_an_argument_overlapping_a_tensor_the_plan_reads_from_an_attribute_misses():
    array = np.ones(8, np.float32)
    model = Model(kael.from_numpy(array))
    c = _guarded(Model.forward, model, kael.ones(8))
    assert c._guarded((model, kael.ones(8))) is not MISS
    assert c._guarded((model, kael.from_numpy(array))) is MISS


class Options:
    def __init__(self, weight: kael.Tensor, scale: float) -> None:
        self.weight, self.scale = weight, scale


def test_an_argument_object_is_guarded_by_what_it_holds():
    def fn(options, x):
        return x * options.scale + options.weight

    options, x = Options(kael.ones(4), 2.0), kael.ones(4)
    c = _guarded(fn, options, x)
    guarded = c._guarded
    options.weight = kael.full((4,), 3.0)  # another tensor of the layout: the plan's input
    got = guarded((options, x))
    assert got is not MISS and _bits(got) == _bits(fn(options, x))
    for changed in (
        Options(kael.ones(4, dtype=kael.float64), 2.0),  # another dtype
        Options(kael.ones(4), 3.0),  # another number, a constant of the plan
        Options(x, 2.0),  # the weight is the other argument
    ):
        assert guarded((changed, x)) is MISS
        assert _bits(c(changed, x)) == _bits(fn(changed, x))
    changed = Options(kael.ones(4), 2.0)
    changed.extra = None  # another attribute
    assert guarded((changed, x)) is MISS


def test_a_new_thread_count_misses_and_is_guarded_anew():
    args = _call()
    c = _guarded(scaled_norm, *args)
    guarded = c._guarded
    threads = kael.get_num_threads()
    try:
        kael.set_num_threads(3 - min(threads, 2))
        assert guarded(args) is MISS
        for _ in range(3):
            assert _bits(c(*args)) == _bits(scaled_norm(*args))
        assert c._guarded is not guarded and c._guarded(args) is not MISS
    finally:
        kael.set_num_threads(threads)


def test_a_watched_launch_misses(capsys):
    args = _call()
    c = _guarded(scaled_norm, *args)
    assert len(kael.explain(c, *args)) >= 3  # the product, the sum, the scaling: recorded
    assert "kernel 2:" in capsys.readouterr().out
    assert c._guarded(args) is not MISS


def test_what_the_guard_runs_the_lookup_runs_too():
    m, v, *_ = args = _call()
    c = _guarded(scaled_norm, *args)
    plan = c._positional(args)[0]
    calls = [*_variants(m, v).values(), args, (m, kael.randn(200), 0.75, 2)]
    for call in calls:
        if c._guarded(call) is not MISS:
            assert c._positional(call)[0] is plan


def test_threads_sharing_the_guarded_replay_each_get_their_own_result():
    m = kael.randn(200, 200) / 20
    vs = [kael.randn(200) for _ in range(4)]
    expected = [_bits(scaled_norm(m, v, 0.5, 2)) for v in vs]
    c = _guarded(scaled_norm, m, vs[0], 0.5, 2)
    wrong = []

    def work(i):
        for _ in range(200):
            if _bits(c(m, vs[i], 0.5, 2)) != expected[i]:
                wrong.append(i)

    in_threads(work)
    assert wrong == []


def test_the_guarded_replay_shares_the_replays_pool():
    args = _call()
    c = _guarded(scaled_norm, *args)
    entry = c._entries[next(iter(c._entries))]
    replay = c.plan_for(*args).replay
    assert entry.guarded.pool[1] is replay.pool[1] and replay.pool[0]


def test_kael_debug_misses_so_each_launch_is_reported(capsys):
    from kael.runtime import debug

    args = _call()
    c = _guarded(scaled_norm, *args)
    before = debug.get_debug()
    debug.set_debug(1)
    try:
        assert c._guarded(args) is MISS
        c(*args)
    finally:
        debug.set_debug(before)
    assert capsys.readouterr().err.count("kael_") >= 3


def test_two_signatures_called_in_turn_both_stay_guarded(monkeypatch):
    m, v, *_ = args = _call()
    other = (m.double(), v.double(), 0.5, 2)
    c = kael.compile(scaled_norm)
    for _ in range(3):
        c(*args), c(*other)
    looked_up = []
    real = c._positional
    monkeypatch.setattr(c, "_positional", lambda a: looked_up.append(a) or real(a))
    for _ in range(3):
        assert _bits(c(*args)) == _bits(scaled_norm(*args))
        assert _agree(c(*other), scaled_norm(*other))
    assert looked_up == []


def test_a_third_signature_pushes_out_the_oldest_guard():
    m, v, *_ = args = _call()
    calls = [args, (m.double(), v.double(), 0.5, 2), (m[:100], v, 0.5, 2)]
    c = _guarding(*calls)
    assert c._guarded(calls[2]) is not MISS and c._other(calls[1]) is not MISS
    assert MISS is c._guarded(calls[0]) is c._other(calls[0])


def test_a_hit_on_the_second_guard_puts_it_first():
    m, v, *_ = args = _call()
    other = (m[:100], v, 0.5, 2)
    c = _guarding(args, other)
    first, second = c._guarded, c._other
    assert first(other) is not MISS and second(args) is not MISS
    c(*args)
    assert (c._guarded, c._other) == (second, first)


def test_clearing_the_plans_drops_both_guards(monkeypatch):
    from kael.frontend import compiled

    m, v, *_ = args = _call()
    c = _guarding(args, (m[:100], v, 0.5, 2))
    assert c._guarded is not None and c._other is not None
    monkeypatch.setattr(compiled, "MAX_PLANS", 2)
    c(m[:50], v, 0.5, 2)  # a third plan: the table is cleared before it is stored
    assert c._guarded is None and c._other is None


def test_a_signature_traced_again_drops_its_guard():
    args = _call()
    c = _guarded(scaled_norm, *args)
    entry = c._entries[next(iter(c._entries))]
    assert entry.guarded is not None
    _, tensors, key = c._positional(args)
    leaves = list(args)
    c._trace(leaves, ("args", len(args)), tensors, key)
    assert entry.guarded is None and c._guarded is None and c._other is None
    for _ in range(2):
        assert _bits(c(*args)) == _bits(scaled_norm(*args))
    assert c._entries[key].guarded.fn is c._guarded


def test_a_signature_traced_again_keeps_the_other_signatures_guard():
    m, v, *_ = args = _call()
    other = (m[:100], v, 0.5, 2)
    c = _guarding(other, args)
    _, _, key2 = c._positional(other)
    kept = c._entries[key2].guarded
    assert kept is not None and c._other is kept.fn
    _, tensors, key = c._positional(args)
    c._trace(list(args), ("args", len(args)), tensors, key)
    assert c._guarded is None and c._other is kept.fn and c._entries[key2].guarded is kept
