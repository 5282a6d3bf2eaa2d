"""A plan's call written out as straight-line Python (frontend/replay.py): when it exists,
that it gives eager's bits, and when the plan runs step by step instead."""

from __future__ import annotations

import pytest
from parity_helpers import in_threads

import kael
from kael.frontend.inspection import record_launches

scale = kael.randn(48)


def _bits_equal(a, b) -> bool:
    if isinstance(a, kael.Tensor):
        return (
            a.shape == b.shape and a.dtype == b.dtype and a.numpy().tobytes() == b.numpy().tobytes()
        )
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_bits_equal(a[k], b[k]) for k in a)
    if isinstance(a, tuple | list):
        return len(a) == len(b) and all(_bits_equal(x, y) for x, y in zip(a, b))
    return a == b


def elementwise(a, b):
    return (a * 2.0 + b).exp() - a.abs()


def reductions(a, b):
    return (a * b).sum(0), a.amax(-1), (a - b).mean()


def softmax(a, b):
    e = (a - a.amax(-1, keepdim=True)).exp()
    return e / e.sum(-1, keepdim=True) + b


def with_float(a, b, lr):
    return a - lr * b, {"sum": (a * lr).sum(1)}


def in_place(a, b):
    a.mul_(2.0).add_(b)
    return a[1:]


def implicit(a, b):
    return a * scale + b


CASES = [
    (elementwise, ()),
    (reductions, ()),
    (softmax, ()),
    (with_float, (0.25,)),
    (implicit, ()),
]


def _args(extra):
    return [kael.randn(64, 48), kael.randn(64, 48), *extra]


@pytest.mark.parametrize("fn, extra", CASES, ids=[f.__name__ for f, _ in CASES])
def test_replay_gives_eagers_bits(fn, extra):
    c = kael.compile(fn)
    args = _args(extra)
    for _ in range(2):  # trace, then step by step (which writes the replay)
        c(*args)
    plan = c.plan_for(*args)
    assert plan.replay is not None, "this plan's steps can all be written out"
    for _ in range(2):
        fresh = _args(extra)
        assert _bits_equal(c(*fresh), fn(*fresh))


def test_a_row_group_replays_as_one_native_launch():
    # The members' blocks travel inside the row driver's block: the call stores the
    # operands' addresses into one template, as it does for one kernel.
    c = kael.compile(softmax)
    args = _args(())
    for _ in range(2):
        c(*args)
    plan = c.plan_for(*args)
    [group] = plan.kernel_steps
    assert len(group.members) == 4  # amax, exp, sum, divide and add
    lines = plan.replay.source.splitlines()
    assert sum("_launch(" in line for line in lines) == 1
    assert not any("_array(" in line or "[:]" in line for line in lines)
    fresh = _args(())
    assert _bits_equal(c(*fresh), softmax(*fresh))


def test_replay_bumps_versions_and_keeps_views():
    c = kael.compile(in_place)
    for _ in range(3):
        a, b = kael.randn(8, 4), kael.randn(8, 4)
        ea, version = a.clone(), a._impl.storage.version
        view = c(a, b)
        expected = in_place(ea, b)
        assert kael.equal(a, ea) and kael.equal(view, expected)
        assert a._impl.storage.version == version + 2
        assert view._impl.storage is a._impl.storage  # an output that is a view stays one
    assert c.plan_for(a, b).replay is not None


def test_in_place_on_an_empty_argument_still_bumps_its_version():
    # Found by the compile fuzzer: no kernel runs on 0 elements, but the write counts.
    c = kael.compile(lambda x: x.add_(x))
    for _ in range(3):
        x = kael.empty(0, 2)
        c(x)
        assert x._impl.storage.version == 1


def test_recorded_calls_run_step_by_step_and_show_every_kernel():
    c = kael.compile(elementwise)
    args = _args(())
    for _ in range(3):
        c(*args)
    assert c.plan_for(*args).replay is not None
    _, made = record_launches(c, *args)
    assert len(made) == len(c.kernels(*args)) == 1


def test_a_new_thread_count_runs_step_by_step_then_gets_its_own_replay():
    saved = kael.get_num_threads()
    c = kael.compile(softmax)
    a, b = kael.randn(512, 1024), kael.randn(512, 1024)  # large enough for the pool
    try:
        kael.set_num_threads(1)
        one = [c(a, b) for _ in range(3)][-1]
        assert c.plan_for(a, b).replay.threads == 1
        kael.set_num_threads(2)
        two = [c(a, b) for _ in range(3)][-1]
        assert c.plan_for(a, b).replay.threads == 2
    finally:
        kael.set_num_threads(saved)
    assert _bits_equal(one, two) and _bits_equal(one, softmax(a, b))


def test_externs_and_random_draws_run_their_own_step_inside_the_replay():
    fns = (
        lambda a: a.sort(-1)[0] * 2,
        lambda a: kael.rand(64, 48) * a + a.sum(),
        lambda a: kael.layer_norm(a, (48,)) * 3.0,  # a hand-written row kernel: an extern
    )
    for fn in fns:
        c = kael.compile(fn)
        a = kael.randn(64, 48)
        for _ in range(2):
            c(a)
        replay = c.plan_for(a).replay
        assert ".run(call)" in replay.source
        kael.manual_seed(3)
        got = c(a)
        kael.manual_seed(3)
        assert _bits_equal(got, fn(a))


def test_a_fused_product_whose_output_is_fresh_is_written_into_the_replay():
    # no step of its own: its launches, the epilogue's blocks patched in, are the replay's
    w = kael.randn(48, 16)
    c = kael.compile(lambda a: (a @ w).relu() + 1.0)
    a = kael.randn(64, 48)
    for _ in range(2):
        c(a)
    plan = c.plan_for(a)
    assert [type(s).__name__ for s in plan.steps].count("MatmulCall") == 1
    assert ".run(call)" not in plan.replay.source
    assert _bits_equal(c(a), ((a @ w).relu() + 1.0))


def test_the_replay_source_names_no_step_twice():
    c = kael.compile(reductions)
    args = _args(())
    for _ in range(2):
        c(*args)
    source = c.plan_for(*args).replay.source
    assert source.startswith("def replay(plan, tensors, scalars):")
    assert source.count("tensors[0]._impl.storage") == 1  # each argument's storage read once


def test_a_product_without_epilogue_is_written_out():
    # power iteration: the product's launches go into the replay, no Call is built
    def step(m, v):
        v = m @ v
        return v / (v * v).sum().sqrt()

    c = kael.compile(step)
    m, v = kael.randn(200, 200) / 20, kael.randn(200)
    for _ in range(2):
        c(m, v)
    source = c.plan_for(m, v).replay.source
    assert ".run(call)" not in source and "_Call" not in source
    for _ in range(3):
        v = c(m, v)
    ev = kael.randn(200)
    assert _bits_equal(c(m, ev), step(m, ev))


def power_step(m, v):
    v = m @ v
    return v / (v * v).sum().sqrt()


def _replayed(fn, *args):
    c = kael.compile(fn)
    for _ in range(2):  # trace, then step by step (which writes the replay)
        c(*args)
    return c, c.plan_for(*args).replay


def test_small_intermediates_stay_with_the_replay_between_calls():
    # power iteration's norm (4 bytes) is not allocated and freed by every call
    m, v = kael.randn(200, 200) / 20, kael.randn(200)
    c, replay = _replayed(power_step, m, v)
    pool = replay.fn.__globals__["_pool"]
    assert "pool[0]" in replay.source and replay.kept_bytes == 4 and pool == []
    c(m, v)  # the replay's first call makes the entry it keeps
    assert len(pool) == 1
    kept = pool[0]
    first, second = c(m, v), c(m, v)
    assert len(pool) == 1 and pool[0] is kept
    assert first._impl.storage is not second._impl.storage  # results are never kept
    for _ in range(3):  # the kept norm is written again by each call before it is read
        ev = kael.randn(200)
        assert _bits_equal(c(m, ev), power_step(m, ev))


def test_results_aliased_and_large_intermediates_are_made_by_every_call():
    from kael.frontend import replay as replay_module
    from kael.frontend.plan import Alias

    m, v = kael.randn(200, 200) / 20, kael.randn(200)
    plan = kael.compile(power_step).plan_for(m, v)
    kept = replay_module._kept_slots(plan, [])
    results = {leaf.buffer for leaf in plan.out_leaves}
    assert kept and not kept & results
    # the product's output becomes the result through an alias: never kept either
    aliased = {s for step in plan.steps if type(step) is Alias for s in (step.src, step.dst)}
    assert aliased and not kept & aliased

    def big(a, b):
        return (a @ b).exp().sum(-1)

    a = kael.randn(256, 256)
    c, replay = _replayed(big, a, a)
    product = c.plan_for(a, a).steps[0].c.buffer
    assert replay_module.POOL_BYTES < 256 * 256 * 4  # the product's output is too big to keep
    assert f"s{product} = pool" not in replay.source
    assert replay.kept_bytes <= replay_module.POOL_BYTES
    assert _bits_equal(c(a, a), big(a, a))


def test_threads_calling_one_replay_at_once_each_compute_their_own_result():

    def spread(m, v):  # the kept norm is written, then read after a product long enough
        n = (v * v).sum().sqrt()  # to release the GIL: another call runs in between
        return (m @ v) / n

    m = kael.randn(1000, 1000)
    vs = [kael.randn(1000) for _ in range(4)]
    expected = [spread(m, v) for v in vs]
    c, replay = _replayed(spread, m, vs[0])
    assert "pool[0]" in replay.source
    wrong = []

    def work(i):
        for _ in range(50):
            if not _bits_equal(c(m, vs[i]), expected[i]):
                wrong.append(i)

    in_threads(work)
    assert wrong == []  # one entry shared by every call: about 160 of 200 wrong


def test_a_pool_entry_holds_at_most_pool_bytes_scratch_included():
    from kael.frontend import replay as replay_module

    def two_products(a, b, x, y):  # kept slots and two products' packing scratch
        return (a @ b.T).sum() + (x @ y).sum()

    args = (kael.randn(64, 128), kael.randn(64, 128), kael.randn(96, 64), kael.randn(64, 128))
    c, replay = _replayed(two_products, *args)
    assert 0 < replay.kept_bytes <= replay_module.POOL_BYTES
    assert _bits_equal(c(*args), two_products(*args))


def test_a_dropped_compiled_function_frees_its_kept_intermediates_at_once():
    import gc

    m, v = kael.randn(200, 200) / 20, kael.randn(200)
    gc.collect()
    gc.disable()  # without the cyclic collector: reference counts alone must free them
    try:
        before = kael.memory_stats()["in_use_bytes"]
        c, replay = _replayed(power_step, m, v)
        for _ in range(3):
            c(m, v)
        assert kael.memory_stats()["in_use_bytes"] > before  # the pool's entry
        del c, replay
        assert kael.memory_stats()["in_use_bytes"] == before
    finally:
        gc.enable()


def test_a_row_groups_chunk_local_slots_take_no_room_in_the_pool():
    # the row driver keeps them in its own scratch: the replay never makes their storage
    from kael.frontend import replay as replay_module
    from kael.frontend.plan import RowGroup

    args = _args(())
    c = kael.compile(softmax)
    for _ in range(2):
        c(*args)
    plan = c.plan_for(*args)
    local = {s for step in plan.steps if type(step) is RowGroup for s in step.local}
    assert local and not replay_module._kept_slots(plan, []) & local
