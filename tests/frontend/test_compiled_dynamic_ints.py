"""@kael.compile and Python int arguments (tracing.SymInt): an int whose value changed
between two traces is dynamic from then on, as torch's automatic dynamic; the positions it
indexes are taken at each call, arithmetic on it stays tied, and any other use of its value
specializes the plan to it: never a plan that read one value serving another."""

from __future__ import annotations

import numpy as np
import pytest
from parity_helpers import in_threads

import kael

X = kael.arange(120.0).reshape(30, 4)


def agree(fn, values, *args) -> kael.compile:
    """fn compiled against eager over `values` of its last argument: identical results."""
    compiled = kael.compile(fn)
    for v in values:
        got, want = compiled(*args, v), fn(*args, v)
        for a, b in zip(*(r if isinstance(r, tuple) else (r,) for r in (got, want))):
            if isinstance(b, kael.Tensor):
                assert a.shape == b.shape and a.dtype == b.dtype and kael.equal(a, b), v
            else:
                assert type(a) is type(b) and a == b, v
    return compiled


def test_an_int_whose_value_changes_is_dynamic_from_the_next_trace():
    c = agree(lambda x, p: x[p : p + 1] * 2, range(12), X)
    info = c.cache_info()
    assert info.traces == 2 and info.hits == 10  # 0 as a constant, then dynamic
    assert info.recompiles == ["argument 1 changed from 0 to a dynamic int"]
    assert "leaf 1: an int, a run-time parameter" in str(c.inspect(X, 5))


def test_arithmetic_on_a_dynamic_int_stays_tied_to_it():
    def f(x, p):
        q = 2 * p + 1
        return x[q] - x[-p - 1], q, p // 3 - p % 2

    c = agree(f, [0, 1, 2, 5, 7, 14, 3], X)
    assert c.cache_info().traces == 2


def test_python_reading_the_value_specializes_the_plan_to_it():
    def f(x, p):
        if p > 3:  # a branch on the value
            return x[:2] * p
        return x[:2] + len(list(range(p)))  # range() reads it in C: __index__ sees it

    c = agree(f, [0, 1, 2, 5, 2, 5, 6, 0], X)
    assert c.cache_info().hits == 2  # 2 and 5 again


def test_a_dynamic_int_passed_to_a_view_method_or_numpy_is_specialized():
    def f(x, p):
        return x.narrow(0, p, 2) * float(np.zeros(p).size + 1) + kael.tensor([0] * p).sum()

    agree(f, [1, 2, 3, 4, 3, 1], X)


def test_a_shape_that_follows_a_dynamic_int_gets_a_plan_per_value():
    c = agree(lambda x, p: x[:p].sum(0) + x[p], [1, 2, 3, 4, 3, 4, 9, 3], X)
    assert c.cache_info().hits >= 3  # each value traced once


def test_isinstance_of_int_holds_for_a_dynamic_int():
    agree(lambda x, p: x * (p if isinstance(p, int) else -1), range(5), X)


def test_bools_and_ints_in_containers():
    c = agree(lambda x, flag: x * 2 if flag else x, [True, False, True, False], X)
    assert c.cache_info().traces == 2  # a bool stays a constant
    agree(lambda x, pair: x[pair[0] : pair[1]].sum(), [(0, 2), (1, 3), (2, 4), (5, 7)], X)


class _Decoder(kael.nn.Module):
    """A decode step with a key cache written at the position and read up to it, as
    Meta's llama does."""

    def __init__(self):
        super().__init__()
        self.register_buffer("cache", kael.zeros(1, 8, 4))

    def forward(self, x, start_pos: int):
        end = start_pos + x.shape[1]
        self.cache[:, start_pos:end] = x
        keys = self.cache[:, :end]
        return (x @ keys.transpose(1, 2)).softmax(-1) @ keys


def test_a_decode_step_with_a_cache_written_at_the_position_matches_eager():
    eager, compiled = _Decoder(), _Decoder()
    step = kael.compile(compiled)
    tokens = kael.arange(32.0).reshape(1, 8, 4) / 10
    for pos in range(8):
        x = tokens[:, pos : pos + 1]
        assert kael.equal(step(x, pos), eager(x, pos))
    assert kael.equal(compiled.cache, eager.cache)


def test_a_decode_step_reading_a_preallocated_cache_traces_twice():
    cache = kael.zeros(16, 4)

    def step(x, pos):
        cache[pos] = x  # gpt-fast's static cache: written at the position, read whole
        return (cache * x).sum(-1)

    eager_cache = kael.zeros(16, 4)
    c = kael.compile(step)
    for pos in range(16):
        x = kael.full((4,), float(pos))
        got = c(x, pos)
        eager_cache[pos] = x
        assert kael.equal(got, (eager_cache * x).sum(-1)) and kael.equal(cache, eager_cache)
    assert c.cache_info().traces == 2


def test_calls_from_threads_each_take_their_own_value():
    c = kael.compile(lambda x, p: x[p] + p)
    for p in range(3):
        c(X, p)
    errors = []

    def work(k):
        for p in range(k, 30, 4):
            if not kael.equal(c(X, p), X[p] + p):
                errors.append(p)

    in_threads(work)
    assert errors == [] and c.cache_info().traces == 2


@pytest.mark.parametrize("value", [-1, -30, 29])
def test_dynamic_positions_wrap_and_refuse_as_eager(value):
    c = agree(lambda x, p: x[p], [0, 1, value], X)
    with pytest.raises(IndexError, match="30"):
        c(X, 30)
    assert kael.equal(c(X, 7), X[7])  # the plan still runs after the error


@pytest.mark.filterwarnings("ignore:kael.compile")
def test_with_fullgraph_false_ints_stay_constants():
    """The rest of a call after a graph break runs eagerly on what Python holds: an int
    there is the caller's own, never a dynamic one."""

    def f(x, p):
        y = x[p : p + 2] * 2
        if y.sum() > 100:  # the values decide: the rest runs eagerly
            return y[p % 2] + p, p
        return y - p, p + 1

    c = kael.compile(f, fullgraph=False)
    for p in [0, 1, 2, 3, 10, 4]:
        (a, b), (e, g) = c(X, p), f(X, p)
        assert kael.equal(a, e) and b == g and type(b) is int
    assert "dynamic" not in " ".join(c.cache_info().recompiles)


@pytest.mark.parametrize("dynamic, traces", [(False, 6), (True, 1), (None, 2)])
def test_torchs_dynamic_argument_decides_when_ints_are_dynamic(dynamic, traces):
    c = kael.compile(lambda x, p: x[p] * 3, dynamic=dynamic)
    for p in range(6):
        assert kael.equal(c(X, p), X[p] * 3)
    assert c.cache_info().traces == traces


def _written_then_indexed(cache, x, p):
    cache.mul_(1.0)  # a write the caller sees comes first
    cache[p] = x  # then a place, never a shape, follows p
    return cache[p] * 2 + cache.sum()


def test_positions_after_a_write_the_caller_sees_stay_dynamic():
    c = kael.compile(_written_then_indexed)
    mine, theirs = kael.zeros(8, 3), kael.zeros(8, 3)
    for p in range(8):
        x = kael.full((3,), float(p))
        assert kael.equal(c(mine, x, p), _written_then_indexed(theirs, x, p))
        assert kael.equal(mine, theirs)
    assert c.cache_info().traces == 2
