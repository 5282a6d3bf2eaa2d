"""Host programs (kael/codegen/cpu/program.py): launches built once per layout, moved onto
other storages of that layout by rewriting the words that address them, and kept so that
no two calls run one at once."""

import os
import threading

import numpy as np
import pytest
from kernel_helpers import order_kernel

import kael
from kael.codegen.cpu import pair, program
from kael.codegen.cpu.program import Program, Step

KEY = ("test_program",)


def _build(out) -> Program:
    """A launch on out[1:3], then one on out[0:3] nested in a chain, then one on the
    program's own scratch; the last two words of the first block are no addresses of
    out's: one past its end, and a small integer."""
    fn, held = order_kernel(), Program()
    at = out.data_ptr()
    own = held.scratch(4, kael.float64)
    kael.Tensor(own).zero_()
    held.add(Step.of(fn, [at + 8, 10, at + out.storage.nbytes, 7], 2, 0))
    held.add(pair.chains_step([[(fn, [at, 10], 3)]]))
    held.add(Step.of(fn, [own.data_ptr(), 10], 4, 0))
    return held


def _after(runs: int) -> list[float]:
    """out[:3] after `runs` runs of _build's program from zeros."""
    out = np.zeros(3)
    for _ in range(runs):
        out[1:3] = out[1:3] * 10 + [1, 2]
        out = out * 10 + [1, 2, 3]
    return [*out, 0.0]


def test_a_program_moved_onto_another_storage_writes_there_and_nowhere_else():
    first, second = kael.zeros(4, dtype=kael.float64), kael.zeros(4, dtype=kael.float64)
    held = _build(first._impl)
    _, here = program.storages(first._impl)
    _, there = program.storages(second._impl)
    held.bind(here)
    held.run()
    np.testing.assert_array_equal(first.numpy(), _after(1))
    held.run(tuple(base for base, _ in there))  # the nested chain's words moved too
    np.testing.assert_array_equal(second.numpy(), _after(1))
    np.testing.assert_array_equal(first.numpy(), _after(1))
    held.run(tuple(base for base, _ in here))  # and back
    np.testing.assert_array_equal(first.numpy(), _after(2))
    own = kael.Tensor(held.keep[0]).numpy()  # its first scratch
    np.testing.assert_array_equal(own, [111, 222, 333, 444])  # its own scratch, 3 runs
    block = held.steps[0].block
    assert block[2] == first.data_ptr() + first._impl.storage.nbytes and block[3] == 7


def test_a_program_in_use_is_not_handed_to_another_call():
    program.clear()
    builds = []

    def build(impl):
        builds.append(impl)
        return _build(impl)

    x = kael.zeros(4, dtype=kael.float64)
    program.run(KEY, (x._impl,), build)  # built and kept
    with (
        program.checked_out(KEY, (x._impl,), build) as a,
        program.checked_out(KEY, (x._impl,), build) as b,
    ):
        assert a is not b  # the kept one is taken: a second is built
    with program.checked_out(KEY, (x._impl,), build) as c:
        assert c is a or c is b
    assert len(builds) == 2
    np.testing.assert_array_equal(x.numpy(), _after(4))


def test_threads_on_one_layout_each_get_their_own_results():
    program.clear()
    outs = [kael.zeros(4, dtype=kael.float64) for _ in range(4)]
    start = threading.Barrier(len(outs))

    def work(x):
        start.wait()
        for _ in range(5):
            program.run(KEY, (x._impl,), _build)

    threads = [threading.Thread(target=work, args=(x,)) for x in outs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for x in outs:
        np.testing.assert_array_equal(x.numpy(), _after(5))
    assert len(list(program.kept())) <= program.MAX_PER_KEY


def test_a_program_with_more_scratch_than_max_kept_bytes_runs_once(monkeypatch):
    program.clear()
    x = kael.zeros(4, dtype=kael.float64)
    monkeypatch.setattr(program, "MAX_KEPT_BYTES", _build(x._impl).kept_bytes - 1)
    program.run(KEY, (x._impl,), _build)
    assert not program.kept()
    monkeypatch.setattr(program, "MAX_KEPT_BYTES", _build(x._impl).kept_bytes)
    program.run(KEY, (x._impl,), _build)
    assert len(program.kept()) == 1


def _layouts(count: int) -> list:
    """`count` impls of distinct layouts (sizes 4..), each its own key."""
    return [kael.zeros(4 + i, dtype=kael.float64)._impl for i in range(count)]


def test_the_least_recently_used_layouts_go_past_max_keys(monkeypatch):
    monkeypatch.setattr(program, "MAX_KEYS", 3)
    program.clear()
    builds = []

    def build(impl):
        builds.append(impl.shape)
        return _build(impl)

    first, second, third, fourth = _layouts(4)
    for impl in (first, second, third, first, fourth):  # first used again: second is oldest
        program.run(KEY, (impl,), build)
    assert len(program.kept()) == 3
    program.run(KEY, (first,), build)
    program.run(KEY, (third,), build)
    assert builds == [(4,), (5,), (6,), (7,)]  # first, third and fourth still kept
    program.run(KEY, (second,), build)
    assert builds[-1] == (5,)


def test_kept_programs_hold_at_most_max_total_bytes(monkeypatch):
    program.clear()
    one = _build(_layouts(1)[0]).kept_bytes
    monkeypatch.setattr(program, "MAX_TOTAL_BYTES", 2 * one)
    for impl in _layouts(4):
        program.run(KEY, (impl,), _build)
    assert len(program.kept()) == 2


def test_empty_cache_drops_the_kept_programs():
    program.clear()
    x = kael.zeros(4, dtype=kael.float64)
    program.run(KEY, (x._impl,), _build)
    assert program.kept()
    kael.empty_cache()
    assert not program.kept()


def test_layouts_differ_by_offset_and_by_shared_storage():
    x = kael.zeros(8, dtype=kael.float64)
    base, _ = program.storages(x[:4]._impl, x[4:]._impl)
    shifted, _ = program.storages(x[1:5]._impl, x[4:]._impl)
    apart, regions = program.storages(x[:4]._impl, kael.zeros(4, dtype=kael.float64)._impl)
    assert len({base, shifted, apart}) == 3 and len(regions) == 2


def test_a_program_on_cuda_memory_is_refused(monkeypatch):
    x = kael.zeros(4, dtype=kael.float64)
    monkeypatch.setattr(x._impl, "device", kael.device("cuda"), raising=False)
    with pytest.raises(kael.Error, match="host kernel given memory on cuda"):
        program.storages(x._impl)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork()")
def test_a_forked_child_runs_the_kept_programs():
    a = np.random.default_rng(5).standard_normal((256, 256))
    want = np.linalg.slogdet(a)[1]
    kael.linalg.slogdet(kael.tensor(a))  # kept in the parent
    pid = os.fork()
    if pid == 0:
        try:
            got = kael.linalg.slogdet(kael.tensor(a)).logabsdet.item()
            os._exit(0 if abs(got - want) < 1e-9 * abs(want) else 1)
        except BaseException:
            os._exit(2)
    _, status = os.waitpid(pid, 0)
    assert os.WEXITSTATUS(status) == 0


def test_kept_bytes_count_the_allocators_blocks():
    """A program's scratch counts as the blocks the allocator holds for it (powers of two
    past 64 KiB), so MAX_TOTAL_BYTES bounds the memory really held."""
    from kael.runtime.allocator import block_capacity

    held = Program()
    held.scratch(70_000, kael.float64)
    held.buffer(100)
    assert held.kept_bytes == block_capacity(560_000) + block_capacity(100) == (1 << 20) + 512


def test_running_out_of_memory_drops_the_kept_programs(monkeypatch):
    """The allocator's out-of-memory retry lets the holders above it (kept programs) give
    their blocks back first."""
    from kael.runtime import allocator

    program.clear()
    program.run(KEY, (kael.zeros(4, dtype=kael.float64)._impl,), _build)
    assert program.kept()
    host = allocator.allocator_for(kael.device("cpu"))
    real, tries = host._system_alloc, []

    def refuse_once(capacity):
        tries.append(capacity)
        if len(tries) == 1:
            raise MemoryError
        return real(capacity)

    monkeypatch.setattr(host, "_system_alloc", refuse_once)
    kael.empty(1 << 22, dtype=kael.uint8)  # a bucket the cache holds none of
    assert len(tries) == 2 and not program.kept()
