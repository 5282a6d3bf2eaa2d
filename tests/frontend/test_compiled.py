"""@kael.compile against eager kael: same values (bit for bit where the schedule is the same),
dtypes, shapes, mutations, errors and random streams, with the kernels fused as counted."""

from __future__ import annotations

import collections
import dataclasses
import gc
import math
import subprocess
import sys
import warnings
import weakref
from math import exp

import numpy as np
import pytest
from parity_helpers import same_tree

import kael
from kael.codegen.cpu import compiler
from kael.frontend import eager, pytree
from kael.frontend import plan as p
from kael.frontend.inspection import STAGES
from kael.ir.reduction import BLOCK
from kael.runtime.dtypes import float32


def _clones(args):
    leaves, tree = pytree.flatten(list(args))
    return pytree.unflatten(tree, [a.clone() if isinstance(a, kael.Tensor) else a for a in leaves])


def _same_tensor(a, b) -> None:
    assert isinstance(a, kael.Tensor) and isinstance(b, kael.Tensor)
    assert a.shape == b.shape and a.dtype == b.dtype
    assert kael.equal(a, b) or kael.allclose(a, b, equal_nan=True, rtol=0, atol=0)


def _same(a, b) -> None:
    """Two kael results identical, tensor for tensor (NaN equal to NaN)."""
    same_tree(a, b, _same_tensor)


def agree(fn, *args, calls: int = 3):
    """Run fn eagerly and compiled `calls` times on equal arguments; every result and every
    argument afterwards must be identical. Returns the compiled function."""
    compiled = kael.compile(fn)
    eager_args, compiled_args = _clones(args), _clones(args)
    for _ in range(calls):
        _same(fn(*eager_args), compiled(*compiled_args))
        for a, b in zip(eager_args, compiled_args):
            _same(a, b)
    return compiled


def kernels(compiled, *args) -> int:
    return len(compiled.kernels(*args))


x = kael.randn(64, 48)
y = kael.randn(64, 48)
row = kael.randn(48)


# ---- fusion -----------------------------------------------------------------------------------


def test_elementwise_chain_is_one_kernel():
    f = agree(lambda a: kael.tanh(a * 1.5 + 2.0) * a, x)
    assert kernels(f, x) == 1


def test_branching_dag_computes_shared_value_once_per_element():
    def f(a, b):
        s = a * b + 1
        return (s.exp() - s) * (s + b).sigmoid()

    c = agree(f, x, y)
    assert kernels(c, x, y) == 1


def test_broadcast_operand_fuses():
    c = agree(lambda a, b: kael.relu(a + b) * 2, x, row)
    assert kernels(c, x, row) == 1


def test_views_are_index_maps_not_copies():
    def f(a):
        t = a.reshape(8, 8, 48).permute(2, 0, 1)
        return t[1:3] * 3 + t[0:2].exp().transpose(1, 2)

    c = agree(f, x)
    assert kernels(c, x) == 1


def test_transposed_intermediate_fuses():
    c = agree(lambda a, b: (a.T * 2 + 1).T + b, x, y)
    assert kernels(c, x, y) == 1


def test_prologue_fuses_into_reduction():
    c = agree(lambda a: ((a - 1.0) ** 2).sum(-1), x)
    assert kernels(c, x) == 1


@pytest.mark.parametrize("dtype", [kael.float32, kael.float64])
@pytest.mark.parametrize("shape", [(64, 5), (16, 37), (3, 1000), (2, BLOCK + 9)])
@pytest.mark.parametrize(
    "f",
    [
        lambda a, s: (a * s).sum(-1),
        lambda a, s: (a * a).sum(),
        lambda a, s: (a * a).mean(-1),
        lambda a, s: (a * s).sum(0),
    ],
)
def test_a_fused_product_sums_with_eagers_bits(dtype, shape, f):
    # Eager stores the product rounded, then sums it: the fused kernel must not add it
    # with an fma (only norm's and var's own squares are).
    a = kael.randn(*shape, dtype=dtype)
    compiled = kael.compile(f, check=True)
    for _ in range(2):
        _same(compiled(a, 1.5), f(a, 1.5))
    assert kernels(compiled, a, 1.5) == 1


def test_norm_and_var_keep_their_own_fma_under_compile():
    a = kael.randn(8, 300, dtype=kael.float64)
    agree(lambda t: (kael.linalg.vector_norm(t, dim=1), t.var(1), (t * t).sum(1)), a)


def _row_group(compiled, *args):
    [step] = compiled.plan_for(*args).kernel_steps
    assert type(step).__name__ == "RowGroup"
    return step


def test_var_from_primitives_is_one_row_group():
    c = agree(lambda a: ((a - a.mean(-1, keepdim=True)) ** 2).mean(-1), x)
    assert len(_row_group(c, x).members) == 2


def test_softmax_from_primitives_is_one_row_group():
    def softmax(a):
        e = (a - a.amax(-1, keepdim=True)).exp()
        return e / e.sum(-1, keepdim=True)

    c = agree(softmax, x)
    # amax; exp(x - m), stored once since the sum and the divide both read it; the sum;
    # the divide. The maxima, the exp and the sums live in the driver's chunk scratch: the
    # plan holds no intermediate buffer, and the divide writes a result of its own.
    group = _row_group(c, x)
    assert len(group.members) == 4
    assert len(group.local) == 3
    text = str(c.inspect(x))
    assert "row group: 4 kernels run row by row over 64 rows" in text
    assert "live in the driver's chunk scratch" in text
    assert "peak intermediate memory 0 bytes" in text
    assert "reuses the memory of buffer" not in text


def test_rms_and_layer_norm_from_primitives_are_row_groups():
    def rms(a, w):
        return a * (a * a).mean(-1, keepdim=True).add(1e-6).rsqrt() * w

    def layer_norm(a, w):
        d = a - a.mean(-1, keepdim=True)
        return d * ((d * d).mean(-1, keepdim=True) + 1e-5).rsqrt() * w

    for f in (rms, layer_norm):
        _row_group(agree(f, x, row), x, row)


def _prefetched(group) -> list[tuple[int, int]]:
    """(member, input it prefetches) for each member launched in its prefetching variant."""
    return [(i, m.kernel.prefetch) for i, m in enumerate(group.members) if m.kernel.prefetch >= 0]


@pytest.mark.parametrize("shape", [(64, 48), (300, 2000), (5, 3)])
def test_first_vector_math_member_prefetches_the_streamed_rows(shape):
    def softmax(a):
        e = (a - a.amax(-1, keepdim=True)).exp()
        return e / e.sum(-1, keepdim=True)

    a = kael.randn(*shape)
    c = agree(softmax, a)
    group = _row_group(c, a)
    # exp(x - m) reads x (its input 0) where amax read it: one chunk of rows ahead
    assert _prefetched(group) == [(1, 0)]
    assert group.members[1].params[-1] == group.chunk * shape[1]
    assert "(prefetch in0: elements ahead)" in str(c.inspect(a))


@pytest.mark.parametrize("cols", [2000, 9000])
def test_a_chunk_of_rows_stays_in_cache_when_every_member_reduces(cols):
    # var's members are both reductions (one work item a row): the chunk is sized by the
    # elements they read per row, not by their items (it was 512 rows, 8 MiB, once), and
    # the mean a row it keeps in the chunk scratch
    a = kael.randn(300, cols)
    group = _row_group(agree(lambda t: ((t - t.mean(-1, keepdim=True)) ** 2).mean(-1), a), a)
    work_items = -(-300 // (4 * kael.get_num_threads()))  # rows enough for every thread
    assert group.chunk == max(1, min(p.CHUNK_BYTES // (cols * 4 + 4), work_items))


@pytest.mark.parametrize("cols", [48, 1000, 2000, 4096])
def test_a_chunks_rows_and_their_chunk_local_values_fit_chunk_bytes_together(cols, monkeypatch):
    # softmax keeps a row's maxima, exp and sum in the chunk scratch: a chunk of rows takes
    # CHUNK_BYTES with them (two 4096-float rows and their exp overflowed L1: 1.02x the time)
    a = kael.randn(400, cols)
    work_items = -(-400 // (4 * kael.get_num_threads()))
    group = _row_group(agree(lambda t: _softmax_parts(t)[2], a), a)
    assert sorted(row for _, row in group.local.values()) == [4, 4, cols * 4]
    together = cols * 4 + cols * 4 + 8
    assert group.chunk == max(1, min(p.CHUNK_BYTES // together, work_items))
    monkeypatch.setattr(p, "CHUNK_LOCAL", False)  # nothing local: the rows alone
    group = _row_group(agree(lambda t: _softmax_parts(t)[2], a), a)
    assert group.chunk == max(1, min(p.CHUNK_BYTES // (cols * 4), work_items))


def test_a_streaming_last_member_leaves_its_fence_to_the_row_driver(monkeypatch):
    # a fence a chunk waited for the chunk's streaming stores to reach memory before the
    # next chunk began (softmax 4096x4096 1.06x the time): the driver fences once at its end
    from kael.codegen.cpu import rowdriver

    monkeypatch.setattr(eager, "NONTEMPORAL_BYTES", 4096)  # so the divide's stores stream
    monkeypatch.setattr(eager, "STREAM_ROW_BYTES", 0)  # however short the rows
    a = kael.randn(64, 96)
    c = agree(lambda t: _softmax_parts(t)[2], a)
    plan = c.plan_for(a)
    group = _row_group(c, a)
    last = group.members[-1].specialized(plan.slots)
    assert last.nontemporal and not last.fenced
    assert "fence" not in compiler.kernel_text(last, "k")
    assert "rank=2 flat nontemporal unfenced" in str(c.inspect(a))
    assert rowdriver.driver().library.text.count("fence seq_cst") == 1
    for m in group.members[:-1]:  # their rows are read again: neither streamed nor unfenced
        k = m.specialized(plan.slots)
        assert not getattr(k, "nontemporal", False) and getattr(k, "fenced", True)
    # the kernel every other launch runs fences before it returns
    assert "fence seq_cst" in compiler.kernel_text(dataclasses.replace(last, fenced=True), "k")


def test_cheap_members_do_not_prefetch_rows_below_fetch_from_bytes():
    def var(a):
        return ((a - a.mean(-1, keepdim=True)) ** 2).mean(-1)

    below = kael.randn(eager.FETCH_FROM_BYTES // (4 * 1024) - 1, 1024)
    assert _prefetched(_row_group(agree(var, below), below)) == []
    at = kael.randn(eager.FETCH_FROM_BYTES // (4 * 1024), 1024)
    assert _prefetched(_row_group(agree(var, at), at)) == [(1, 0)]


def test_a_last_member_writing_with_streaming_stores_prefetches():
    # RMSNorm over rows big enough for streaming stores: x * r * w (cheap) prefetches the
    # next chunk of x while its stores go out; at a size below streaming stores it does not
    def rms(a, w):
        return a * (a * a).mean(-1, keepdim=True).add(1e-6).rsqrt() * w

    big, w = kael.randn(8192, 1024), kael.randn(1024)  # 32 MiB out: streaming stores
    c = agree(rms, big, w, calls=2)
    assert _prefetched(_row_group(c, big, w)) == [(1, 0)]
    small = kael.randn(64, 1024)
    c = agree(rms, small, w)
    assert _prefetched(_row_group(c, small, w)) == []


def _softmax_parts(a):
    e = (a - a.amax(-1, keepdim=True)).exp()
    s = e.sum(-1, keepdim=True)
    return e, s, e / s


@pytest.mark.parametrize("threads", [1, 2, 3])
@pytest.mark.parametrize("shape", [(64, 48), (7, 5000), (300, 2000), (3, 17)])
def test_chunk_local_values_give_eagers_bits_for_any_thread_count(threads, shape):
    saved = kael.get_num_threads()
    kael.set_num_threads(threads)
    try:
        a = kael.randn(*shape)
        c = agree(lambda t: _softmax_parts(t)[2], a)
        group = _row_group(c, a)
        chunk_bytes = {slot: group.chunk * row for slot, (_, row) in group.local.items()}
        assert len(group.local) == 3  # the maxima, the exp, the sums
        assert group.scratch_bytes == sum(-(-b // 64) * 64 for b in chunk_bytes.values())
        assert c.plan_for(a).peak_bytes == 0
    finally:
        kael.set_num_threads(saved)


def test_values_read_after_the_group_keep_their_buffers():
    # returned (e and s live on) or read by a later step: never chunk-local
    c = agree(_softmax_parts, x)
    [group] = [s for s in c.plan_for(x).kernel_steps if type(s).__name__ == "RowGroup"]
    assert set(group.local) == {group.members[0].outs[0].buffer}  # the maxima alone
    plan = c.plan_for(x)
    written = {v.buffer for m in group.members for v in m.outs}
    returned = {v.buffer for v in plan.out_leaves if type(v).__name__ == "View"}
    assert not set(group.local) & returned and returned <= written

    def then_scaled(a):
        e, s, out = _softmax_parts(a)
        return out + e.amax()  # e read after the group

    c = agree(then_scaled, x)
    group = next(s for s in c.plan_for(x).kernel_steps if type(s).__name__ == "RowGroup")
    e_slot = group.members[1].outs[0].buffer
    assert e_slot not in group.local


def test_check_mode_compares_every_member_of_a_group_with_chunk_local_values():
    c = kael.compile(lambda t: _softmax_parts(t)[2], check=True)
    for _ in range(2):
        _same(c(x), _softmax_parts(x)[2])
    assert _row_group(c, x).local


def test_chunk_local_values_can_be_switched_off_with_the_same_bits(monkeypatch):
    monkeypatch.setattr(p, "CHUNK_LOCAL", False)
    c = agree(lambda t: _softmax_parts(t)[2], x)
    assert _row_group(c, x).local == {}
    assert c.plan_for(x).peak_bytes > 0


def test_a_prefetching_reduction_gives_the_same_bits():
    # the sum's prologue runs exp on x: the reduction is the member that prefetches
    def logsumexp(a):
        m = a.amax(-1, keepdim=True)
        return (a - m).exp().sum(-1, keepdim=True).log() + m

    a = kael.randn(300, 2000)
    c = agree(logsumexp, a)
    [group] = [s for s in c.plan_for(a).kernel_steps if type(s).__name__ == "RowGroup"]
    assert _prefetched(group) == [(1, 0)]


def _softmax(a):
    e = (a - a.amax(-1, keepdim=True)).exp()
    return e / e.sum(-1, keepdim=True)


@pytest.mark.parametrize("cols", [BLOCK + 1, 3 * BLOCK, 50257])
def test_rows_longer_than_a_block_run_in_the_row_driver(cols):
    # amax and the sum reduce each row in several blocks: the driver runs each one's blocks
    # (partials in its chunk scratch) and then its tree, row by row: one launch in all
    a = kael.randn(5, cols)
    c = agree(_softmax, a)
    group = _row_group(c, a)
    assert sorted(group.partials) == [0, 2]  # amax's and the sum's
    kael.compile(_softmax, check=True)(a)  # every member's output as its ops give it


def test_long_row_arg_reductions_keep_their_indices_in_chunk_scratch():
    # argmax carries an index per partial beside its value: both in the driver's scratch
    def f(a):
        return (a - a.mean(-1, keepdim=True)).abs().argmax(-1)

    a = kael.randn(3, 2 * BLOCK + 5)
    a[1, 2 * BLOCK + 1] = 1000.0  # the farthest value, in the last block of row 1
    group = _row_group(agree(f, a), a)
    # (offset, bytes a row) of each member's partials and indices
    (_, mean_values), (_, mean_indices) = group.partials[0]
    assert (mean_values, mean_indices) == (3 * 8, 0)  # three float64 partials, no indices
    (_, arg_values), (_, arg_indices) = group.partials[1]
    assert (arg_values, arg_indices) == (3 * 4, 3 * 8)  # three float32 values, three indices
    assert f(a).tolist()[1] == 2 * BLOCK + 1


def test_long_row_groups_give_the_same_bits_for_any_thread_count():
    a = kael.randn(7, 2 * BLOCK + 100)
    c = kael.compile(_softmax)
    saved = kael.get_num_threads()
    try:
        results = []
        for threads in (1, 2, 3):
            kael.set_num_threads(threads)
            results.append(c(a))
    finally:
        kael.set_num_threads(saved)
    assert all(kael.equal(r, _softmax(a)) for r in results)


def test_rows_up_to_row_bytes_are_grouped_and_longer_ones_are_not():
    at = kael.randn(2, p.ROW_BYTES // 4)
    assert kernels(agree(_softmax, at, calls=1), at) == 1
    past = kael.randn(2, p.ROW_BYTES // 4 + 1)
    assert kernels(agree(_softmax, past, calls=1), past) == 4


def test_rows_read_across_rows_are_not_grouped():
    # the second reduction reads the first one's result transposed: another row's value
    def f(a):
        m = a.amax(-1, keepdim=True)  # [64, 1]
        return (a[:, :1].T - m.T).sum(-1)  # [1, 64] minus [1, 64]: one row, 64 results

    c = agree(f, x)
    assert all(type(s).__name__ != "RowGroup" for s in c.plan_for(x).kernel_steps)


def test_row_groups_give_the_same_bits_for_any_thread_count():
    def softmax(a):
        e = (a - a.amax(-1, keepdim=True)).exp()
        return e / e.sum(-1, keepdim=True)

    big = kael.randn(300, 2000)
    c = kael.compile(softmax)
    saved = kael.get_num_threads()
    try:
        kael.set_num_threads(1)
        one = c(big)
        kael.set_num_threads(2)
        two = c(big)
    finally:
        kael.set_num_threads(saved)
    assert kael.equal(one, two) and kael.equal(one, softmax(big))


def test_dead_values_are_not_computed():
    def f(a):
        unused = a.exp() * 3  # noqa: F841 - dead on purpose
        return a + 1

    c = agree(f, x)
    assert kernels(c, x) == 1


def test_value_read_across_unmergeable_dims_is_stored():
    # a.T (strided) reshaped merges dims the producer's input does not step evenly along.
    def f(a):
        t = a.T * 2
        return t.reshape(-1)[:100] + 1

    c = agree(f, x)
    assert kernels(c, x) == 2
    assert any("merge" in str(cut.reason) for cut in c.plan_for(x).cuts)


def test_returned_intermediate_is_stored_and_reused():
    def f(a):
        s = a * 2
        return s, s + 1

    c = agree(f, x)
    [kernel] = c.kernels(x)
    assert len(kernel.outputs) == 2  # s computed once per element, stored, and used


def test_buffer_reuse_needs_every_read_at_the_written_position():
    # The stored exp is read straight and transposed by the last kernel: its result may not
    # be written over the exp, whose transposed elements are still to be read.
    sq = kael.randn(48, 48)

    def f(a):
        e = a.exp()
        return e / e.sum(-1, keepdim=True) + e.T

    c = agree(f, sq)
    assert not any(type(s).__name__ == "Alias" for s in c.plan_for(sq).steps)


def test_row_group_members_compile_only_the_code_they_run(monkeypatch):
    # Choosing a row group reads launch layouts without compiling: a member that gives up
    # streaming stores never has its streaming variant compiled.
    from kael.codegen.cpu import jit
    from kael.frontend import eager

    monkeypatch.setattr(eager, "NONTEMPORAL_BYTES", 4096)  # so these rows would stream
    monkeypatch.setattr(eager, "STREAM_ROW_BYTES", 0)  # however short the rows
    a = kael.randn(64, 96)

    def f(x):
        e = (x - x.amax(-1, keepdim=True)).exp()  # stored: the sum and the divide read it
        return e / e.sum(-1, keepdim=True)

    c = agree(f, a)
    plan = c.plan_for(a)
    [group] = [s for s in plan.steps if type(s).__name__ == "RowGroup"]
    elementwise = [m for m in group.members[:-1] if m.axes is None]
    assert elementwise
    for m in elementwise:
        assert not m.streaming
        outs, ins = ([p._layout_only(v, plan.slots) for v in vs] for vs in (m.outs, m.ins))
        streaming = eager.specialized(m.template, outs, ins, None, streaming=True)
        assert streaming != m.specialized(plan.slots)
        assert not jit.compiled_here(streaming)


def test_optimizer_updates_of_several_tensors_are_one_kernel():
    def adam(w, g, m, v, lr):
        m.mul_(0.9).add_(g * 0.1)
        v.mul_(0.999).add_(g * g * 0.001)
        w.sub_(lr * m / (v.sqrt() + 1e-8))
        return w

    c = agree(adam, x, y, kael.zeros(64, 48), kael.zeros(64, 48), 0.01)
    [kernel] = c.kernels(x, y, kael.zeros(64, 48), kael.zeros(64, 48), 0.01)
    assert len(kernel.outputs) == 3


# ---- mutation and aliasing --------------------------------------------------------------------


def test_inplace_on_inputs_is_seen_by_the_caller():
    def f(a, b):
        a.add_(1)
        b.mul_(a)
        a[0] = 5
        return a + b

    agree(f, x, y)


def _bump_twice(a):
    a.add_(1)
    a.mul_(2)
    return a


def _bump_in_externs(a):  # cumsum_ runs as an extern step, which bumps versions itself
    b = a * 2
    b.cumsum_(0)
    b.add_(1)
    a.cumsum_(1)
    return b


@pytest.mark.parametrize("f", [_bump_twice, _bump_in_externs])
def test_inplace_bumps_the_version_counter_as_eager(f):
    c = kael.compile(f)
    e, t = x.clone(), x.clone()
    for _ in range(3):
        want, got = f(e), c(t)
        assert got._impl.storage.version == want._impl.storage.version
        assert t._impl.storage.version == e._impl.storage.version


def test_output_view_of_input_stays_a_view():
    c = kael.compile(lambda a: a[1:3].T)
    a = x.clone()
    for _ in range(2):
        out = c(a)
        assert out._impl.storage is a._impl.storage
        assert out.shape == (48, 2)


def test_mutated_input_aliasing_another_recompiles():
    # pytorch issue 139789: the second call's inputs overlap; torch.compile reuses the first
    # graph and returns [3, 3, 3, 3] where eager gives [4, 4, 3, 3].
    def f(a, b):
        a.mul_(2)
        return a + b

    c = kael.compile(f)
    assert c(kael.ones(4), kael.ones(4)).tolist() == [3.0] * 4
    base = kael.ones(8)
    assert c(base[:4], base[2:6]).tolist() == [4.0, 4.0, 3.0, 3.0]
    base = kael.ones(8)
    assert c(base[:4], base[2:6]).tolist() == [4.0, 4.0, 3.0, 3.0]
    assert c(kael.ones(4), kael.ones(4)).tolist() == [3.0] * 4
    info = c.cache_info()
    assert info.guards == 2 and "aliasing" in info.recompiles[0]


def test_arguments_over_one_array_in_two_storages_run_eagerly_with_a_warning():
    # Two from_numpy of one array: two Storage objects, one memory. The trace tells
    # aliasing by storage, so such a call runs eagerly (eager reads a shifted twin first).
    def f(a, b):
        a[1:].add_(b[:-1])
        return (a * 2).sum()

    def twins():
        array = np.arange(3000, dtype=np.float32)
        return kael.from_numpy(array), kael.from_numpy(array)

    c = kael.compile(f)
    ea, eb = twins()
    expected = f(ea, eb)
    for call in range(2):
        a, b = twins()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            got = c(a, b)
        assert kael.equal(got, expected) and kael.equal(a, ea)
        assert [str(w.message) for w in caught if "share memory" in str(w.message)] == (
            ["kael.compile(f): argument 0 and argument 1 share memory (one storage, or two"
             " from_numpy of one array) where the trace saw them apart; calls like this run"
             " eagerly, which keeps eager's results"] if call == 0 else []
        )  # fmt: skip
    apart = np.arange(3000, dtype=np.float32), np.arange(3000, dtype=np.float32)
    expected = f(*(kael.from_numpy(v.copy()) for v in apart))
    a, b = kael.from_numpy(apart[0]), kael.from_numpy(apart[1])  # no shared memory: traced
    assert kael.equal(c(a, b), expected)
    assert c.cache_info().traces == 1


def _writes_and_reads_a_global():
    """(an array, f) where f writes its argument and reads a global over the same array."""
    import numpy as np

    array = np.arange(16, dtype=np.float32)
    shared = kael.from_numpy(array)

    def f(a):
        a.add_(1)
        return shared * 2

    return array, f


def test_a_global_over_an_arguments_array_raises_at_the_trace_naming_the_line():
    array, f = _writes_and_reads_a_global()
    with pytest.raises(kael.Error, match=r"reads from outside its arguments.*`return shared \* 2`"):
        kael.compile(f)(kael.from_numpy(array))


def test_a_later_call_whose_argument_twins_a_global_runs_eagerly():
    array, f = _writes_and_reads_a_global()
    c = kael.compile(f)
    c(kael.arange(16, dtype=kael.float32))  # traced apart from `shared`
    with pytest.warns(UserWarning, match="argument 0 and a tensor it reads from outside"):
        got = c(kael.from_numpy(array))
    assert got.tolist() == [2.0 * (i + 1) for i in range(16)]  # eager's: the write seen


def test_twin_storages_are_found_as_a_pairwise_check_finds_them():
    # compiled._twins: two storage objects over overlapping memory, found by one sweep in
    # address order (or, for two storages, one comparison); the same object twice, an
    # empty storage and storages that only touch are not twins
    from kael.frontend import compiled

    rng = np.random.default_rng(11)
    array = np.arange(64, dtype=np.float32)
    for _ in range(400):
        storages = []
        for _ in range(rng.integers(1, 6)):
            if storages and rng.random() < 0.2:
                storages.append(storages[rng.integers(len(storages))])  # one object again
            else:
                start = int(rng.integers(0, 64))
                end = int(rng.integers(start, min(64, start + 24) + 1))
                storages.append(kael.from_numpy(array[start:end])._impl.storage)
        pairs = [
            (i, j)
            for i in range(len(storages))
            for j in range(i + 1, len(storages))
            if storages[i] is not storages[j] and storages[i].overlaps(storages[j])
        ]
        found = compiled._twins(storages)
        assert (found is None) == (not pairs), (storages, pairs)
        if found is not None:
            assert found in pairs


def test_an_in_place_write_over_a_product_keeps_the_products_values():
    # Found by review: the write's result must not be rebound to a dead temporary's
    # buffer when the product already filled the output.
    def f(a, b, t):
        y = a @ b
        e = t.exp()
        y.add_(e / e.sum(1, keepdim=True))
        return y

    agree(f, kael.randn(32, 16), kael.randn(16, 32), kael.randn(32, 32))


@pytest.mark.parametrize(
    "split",
    [
        lambda base: (base, base),  # the same tensor twice
        lambda base: (base[:4], base[4:]),  # one storage, disjoint
        lambda base: (base[:4], base[2:6]),  # overlapping
        lambda base: (base[:4], base[:4].flip(0)),  # reversed overlap
    ],
)
def test_aliased_arguments_agree_with_eager(split):
    def f(a, b):
        a.add_(1)
        b.mul_(3)
        return a * b

    c = kael.compile(f)
    for _ in range(2):
        eb, cb = kael.arange(8, dtype=kael.float32), kael.arange(8, dtype=kael.float32)
        _same(f(*split(eb)), c(*split(cb)))
        _same(eb, cb)


def _identities(result) -> list[int]:
    """Per result leaf, the first leaf that is the same object."""
    leaves, _ = pytree.flatten(result)
    return [next(j for j, u in enumerate(leaves) if u is v) for v in leaves]


@pytest.mark.parametrize(
    "f",
    [
        lambda a: (lambda y: (y, y))(a * 2),
        lambda a: (lambda y: {"y": y, "more": [y, a * 3, y]})(a + 1),
        lambda a: (lambda y: (y, y[:], y))(a.exp()),  # a view of it is another object
        lambda a: (a, a),
        lambda a: (a.mul_(2), a),
    ],
)
def test_a_tensor_returned_twice_is_one_object_at_every_call(f):
    compiled = kael.compile(f)
    for _ in range(4):
        want, got = f(kael.ones(2, 3)), compiled(kael.ones(2, 3))
        _same(want, got)
        assert _identities(got) == _identities(want)
    # the replay written for the plan keeps the identities too (calls 3 and 4 ran it)
    assert compiled.plan_for(kael.ones(2, 3)).replay is not None


def test_a_metadata_change_on_a_twice_returned_tensor_shows_on_both():
    compiled = kael.compile(lambda a: (lambda y: (y, y))(a * 2))
    for _ in range(3):
        first, second = compiled(kael.ones(2, 3))
        first.t_()
        assert second.shape == (3, 2)


# ---- guards and scalars -----------------------------------------------------------------------


def _llvm_compiles(monkeypatch) -> list:
    """The LLVM IR texts compiled from now on (either tier: codegen/cpu/tiers.py)."""
    made = []

    def counting(original):
        def compile_text(text, *args, **kwargs):
            made.append(text[:300])
            return original(text, *args, **kwargs)

        return compile_text

    for name in ("emit_object", "emit_tier0"):
        monkeypatch.setattr(compiler, name, counting(getattr(compiler, name)))
    return made


def test_float_arguments_are_runtime_parameters(monkeypatch):
    def step(w, g, lr):
        w -= lr * g
        return w

    c = kael.compile(step)
    e, t = kael.ones(5), kael.ones(5)
    g = kael.full((5,), 0.5)
    for lr in (0.1, 0.2, 0.3):
        step(e, g, lr)
        c(t, g, lr)
    _same(e, t)
    info = c.cache_info()
    assert info.traces == 1 and info.hits == 2


def test_float_used_in_python_specializes_the_plan():
    def f(a, scale):
        return a * (scale * 2)  # Python arithmetic on the float

    c = agree(f, x, 0.5)
    assert c(x, 0.75).sub(x * 1.5).abs().max().item() == 0
    assert c.cache_info().traces == 2


def _scaled(a, d):
    return a / math.sqrt(d)  # C reads d's value: kael cannot see that use


def _exp_scaled(a, d):
    def inner(t):  # a nested function's code is looked into
        return t * exp(d)

    return inner(a)


class _Scaled(kael.nn.Module):
    def forward(self, a, d):
        return a / math.sqrt(d)


def _local_import(a, d):
    import math as local

    return a / local.sqrt(d)


def _default_argument(a, d, root=math.sqrt):
    return a / root(d)


def _closed_over():
    module = math
    return lambda a, d: a / module.sqrt(d)


C_READERS = {
    "math": _scaled,
    "from": _exp_scaled,
    "module": _Scaled(),
    "local import": _local_import,
    "default": _default_argument,
    "closure": _closed_over(),
}


@pytest.mark.parametrize("fn", C_READERS.values(), ids=C_READERS.keys())
def test_a_function_naming_math_has_its_floats_specialized(fn):
    c = kael.compile(fn)
    for d in (4.0, 9.0, 0.5, 9.0):
        _same(c(x, d), fn(x, d))
    assert c.cache_info().traces == 3


HELPER_WEIGHT = kael.ones(3)


def _weighted(a):
    return a * HELPER_WEIGHT  # a global tensor read by a helper, not by the compiled function


def _outer(a):
    return _weighted(a) + 1


def test_a_helpers_global_tensor_rebound_is_seen_as_the_functions_own():
    global HELPER_WEIGHT
    saved = HELPER_WEIGHT
    try:
        direct, nested, a = kael.compile(lambda t: _weighted(t)), kael.compile(_outer), kael.ones(3)
        assert direct(a).tolist() == [1.0] * 3 and nested(a).tolist() == [2.0] * 3
        HELPER_WEIGHT = kael.full((3,), 5.0)  # rebound: the plans trace again
        assert direct(a).tolist() == [5.0] * 3 and nested(a).tolist() == [6.0] * 3
        HELPER_WEIGHT.fill_(7.0)  # changed in place: the same plans read it
        assert direct(a).tolist() == [7.0] * 3 and nested(a).tolist() == [8.0] * 3
        assert direct.cache_info().traces == 2
    finally:
        HELPER_WEIGHT = saved


def test_new_batch_sizes_compile_no_new_kernels(monkeypatch):
    w, b = kael.randn(48, 16), kael.randn(16)

    def mlp(a, w, b):
        return kael.relu(a @ w + b) * 0.5

    c = kael.compile(mlp)
    first = kael.randn(7, 48)
    c(first, w, b)  # the trace (the product, then its epilogue apart)
    c(first, w, b)  # a replay (the epilogue inside the product)
    sizes = (2, 3, 5, 8, 13, 21, 34, 55, 89, 144)
    inputs = {n: kael.randn(n, 48) for n in sizes}
    # the eager references first: their launches may promote an eager kernel to its
    # optimized tier (an LLVM compile that is not the compiled function's)
    wants = {n: mlp(inputs[n], w, b) for n in sizes}
    made = _llvm_compiles(monkeypatch)
    got = {n: [c(inputs[n], w, b) for _ in range(2)] for n in sizes}  # traced, then replayed
    assert made == []
    for n in sizes:  # compared after: the comparisons launch eager kernels too
        for out in got[n]:
            _same(out, wants[n])
    assert c.cache_info().guards == 1  # sizes are not in the guard (n = 1 would be)


def test_dtype_change_recompiles_and_says_why():
    c = kael.compile(lambda a: a + 1)
    c(x)
    c(x.double())
    assert c.cache_info().recompiles == ["argument 0: dtype changed from float32 to float64"]


def test_a_new_generator_each_call_runs_one_plan_and_none_is_kept_alive():
    """Diffusers' pattern (kael.Generator().manual_seed(seed) per request): the plan takes
    the call's generator, so no call traces again, and no generator outlives its call."""
    c = kael.compile(lambda a, g: a + kael.rand(3, generator=g))
    kept = []
    for seed in range(12):
        g = kael.Generator().manual_seed(seed)
        kept.append(weakref.ref(g))
        got, after = c(kael.zeros(3), g), g.get_state()
        eager = kael.Generator().manual_seed(seed)
        assert got.tolist() == kael.rand(3, generator=eager).tolist()
        assert after.tolist() == eager.get_state().tolist()  # advanced as eagerly
    info = c.cache_info()
    assert (info.traces, info.plans, info.recompiles) == (1, 1, [])
    del g
    gc.collect()
    assert not any(ref() is not None for ref in kept)


def test_a_generator_whose_state_python_reads_keeps_a_plan_per_generator():
    c = kael.compile(lambda a, g: a + g.initial_seed())
    for seed in (3, 4, 3):
        g = kael.Generator().manual_seed(seed)
        assert c(kael.zeros(2), g).tolist() == [float(seed)] * 2
    assert c.cache_info().traces == 3  # by identity: each generator its own plan
    assert "generators' states" in c.cache_info().recompiles[0]


def test_a_generator_argument_reseeded_inside_is_the_calls_own():
    def f(a, g):
        g.manual_seed(7)
        return a + kael.rand(5, generator=g)

    c = kael.compile(f)
    eager = kael.Generator()
    want = f(kael.zeros(5), eager)
    for _ in range(3):
        g = kael.Generator()
        assert c(kael.zeros(5), g).tolist() == want.tolist()
        assert g.get_state().tolist() == eager.get_state().tolist()  # where eager left it
    assert c.cache_info().traces == 1
    assert "manual_seed(7) of the generator of leaf 1" in str(c.inspect(kael.zeros(5), g))


def test_too_many_recompiles_warn_once_naming_the_change():
    """Past max_recompiles the function warns once (a loop over new values was flooded
    with one warning a call); cache_info keeps every reason."""
    c = kael.compile(lambda a, k: a + len(k), max_recompiles=2)  # a str stays a constant
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        for k in range(6):
            _same(c(x, "k" * k), x + k)
    messages = [str(w.message) for w in seen]
    assert len(messages) == 1 and "3 times" in messages[0]
    assert "argument 1 changed from 'kk' to 'kkk'" in messages[0]
    assert len(c.cache_info().recompiles) == 5


def test_kaels_own_compiled_functions_keep_no_guard_history_and_never_warn():
    from kael.frontend.compiled import CompiledFunction

    c = CompiledFunction(lambda a, k: a + k, max_recompiles=None)  # an eager op's plans
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        for k in range(12):
            _same(c(x, k), x + k)
    info = c.cache_info()
    assert seen == [] and info.recompiles == [] and info.guards == 0 and info.plans == 12


def test_globals_are_read_at_each_call():
    global _WEIGHT
    _WEIGHT = kael.ones(48)
    c = kael.compile(_scaled_by_global)
    _same(c(x), x * 1)
    _WEIGHT.mul_(3)  # an in-place update of the global
    _same(c(x), x * 3)
    _WEIGHT = kael.full((48,), 2.0)  # the name rebound
    _same(c(x), x * 2)


_WEIGHT = kael.ones(48)


def _scaled_by_global(a):
    return a * _WEIGHT


def test_closure_tensors_are_read_at_each_call():
    w = kael.ones(48)
    c = kael.compile(lambda a: a * w)
    _same(c(x), x)
    w.add_(1)
    _same(c(x), x * 2)


def test_argument_trees_of_lists_tuples_and_dicts():
    def f(pair, named):
        a, b = pair
        return {"sum": a + named["c"], "prod": [b * named["c"]]}

    agree(f, (x, y), {"c": row})


# ---- random -----------------------------------------------------------------------------------


def same_stream(fn, a, calls: int, seed: int):
    """fn and kael.compile(fn) from one seed, `calls` times each: the same values, and the
    generator left in the same state. Returns the compiled function."""
    c = kael.compile(fn)
    kael.manual_seed(seed)
    expected = [fn(a) for _ in range(calls)]
    after = kael.randn(3)
    kael.manual_seed(seed)
    got = [c(a) for _ in range(calls)]
    _same(expected, got)
    _same(after, kael.randn(3))  # the generator advanced the same way
    return c


def test_random_ops_draw_the_eager_stream():
    def noisy(a):
        return a + kael.randn(64, 48) * 0.1 + kael.rand(48)

    same_stream(noisy, x, 3, 7)


def _reseeds(a):
    noise = a + kael.randn(64, 48)  # drawn before the seed
    kael.manual_seed(5)
    return noise, a * kael.rand(48), kael.randperm(6)  # a kernel's draw, an extern's


def test_manual_seed_inside_the_function_is_a_step_of_the_plan():
    c = same_stream(_reseeds, x, 3, 7)
    assert "manual_seed(5)" in str(c.inspect(x))


def test_a_generator_reseeded_inside_the_function_is_reseeded_at_each_call():
    g = kael.Generator()

    def f(a):
        g.manual_seed(11)
        return a + kael.rand(48, generator=g)

    c = kael.compile(f)
    for _ in range(3):
        got, after = c(row), g.get_state()
        expected, eager_after = f(row), g.get_state()
        _same(got, expected)
        _same(after, eager_after)


def test_a_seed_from_the_os_inside_the_function_ends_the_trace():
    with pytest.raises(kael.Error, match=r"Generator.seed\(\) .*needs a tensor's values"):
        kael.compile(lambda a: (kael.Generator().seed(), a + 1))(x)


# ---- data-dependent Python ---------------------------------------------------------------------


def _branchy(a):
    if a.sum() > 0:
        return a + 1
    return a - 1


def test_branch_on_a_tensor_names_the_line():
    with pytest.raises(
        kael.Error, match=r"bool\(tensor\).*test_compiled.py:\d+: `if a.sum\(\) > 0:`"
    ):
        kael.compile(_branchy)(x)


@pytest.mark.parametrize(
    "read",
    [lambda t: t.item(), lambda t: t.tolist(), lambda t: t.numpy(), lambda t: float(t), repr],
)
def test_host_reads_are_refused_in_full_graphs(read):
    with pytest.raises(kael.Error, match="kael.where"):
        kael.compile(lambda a: read(a.sum()))(x)


def test_fullgraph_false_runs_eagerly_with_one_warning():
    c = kael.compile(_branchy, fullgraph=False)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        for sign in (1, -1, 1):
            _same(c(x * sign), _branchy(x * sign))
    assert len(seen) == 1 and "runs eagerly" in str(seen[0].message)


def _made_before_a_break(a):
    out, buf, grown = kael.empty(0), kael.empty(2, 3), kael.zeros(2)
    row = buf[1]  # a view made before the break, written after it
    n = int((a * 2).sum().item())  # the graph break: the rest runs eagerly
    kael.add(a, n, out=out)
    row.fill_(7)
    buf[0] = a[:3]
    grown.resize_(4)[2:] = 5
    return out, buf, grown[2:]


def test_tensors_made_before_a_graph_break_are_usable_after_it():
    # empty() tensors no step wrote got no memory at the trace: the break gives them some,
    # and an out= or resize_ of them grows it
    c = kael.compile(_made_before_a_break, fullgraph=False)
    a = kael.arange(6.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(2):
            for got, want in zip(c(a), _made_before_a_break(a), strict=True):
                _same(got, want)


def test_a_tensor_kept_from_a_trace_that_raised_is_refused():
    kept = []

    def f(a):
        kept.append(kael.empty(3))
        raise RuntimeError("the user's own")

    with pytest.raises(RuntimeError, match="the user's own"):
        kael.compile(f)(x)
    with pytest.raises(kael.Error, match="trace did not finish"):
        kept[0].fill_(1)


def test_predicates_returning_python_bools_are_data_dependent():
    with pytest.raises(kael.Error, match="allclose"):
        kael.compile(lambda a, b: kael.allclose(a, b))(x, y)


# ---- extern steps -----------------------------------------------------------------------------


def test_matrix_products_run_in_one_batch_with_the_kernels_after_them(monkeypatch):
    # A product adds itself to the plan unrun: the trace compiles and runs it with the
    # kernels that follow (its epilogue joined), not one segment at a time.
    from kael.frontend import tracing

    batches = []
    real = tracing._compile_ahead

    def recorded(steps, slots):
        batches.append([type(s).__name__ for s in steps])
        return real(steps, slots)

    monkeypatch.setattr(tracing, "_compile_ahead", recorded)
    w, v = kael.randn(48, 32), kael.randn(32, 16)

    def f(a, w, v):
        h = (a @ w).relu()
        return (h @ v).tanh() + h.sum()

    agree(f, x, w, v)
    assert len(batches) == 1 and batches[0].count("MatmulCall") == 2


def test_hand_written_ops_are_extern_steps():
    w = kael.randn(48, 32)

    def f(a, w):
        h = kael.layer_norm(a @ w, (32,))
        return h.sort(-1)[0] + h.cumsum(-1)

    c = agree(f, x, w)
    plan = c.plan_for(x, w)
    externs = [s.name for s in plan.steps if type(s).__name__ == "ExternCall"]
    assert externs == ["layer_norm", "sort", "cumsum"]  # the product is a step of its own
    assert "extern sort: runs eagerly, never fused" in str(c.inspect(x, w))


def test_an_extern_whose_tensors_are_whole_arguments_fills_them_in_per_call():
    w, b = kael.randn(48), kael.randn(48)

    def f(a, w, b, eps):
        small = kael.nn.functional.interpolate(a[None, None], size=[8, 8])  # a list argument
        return kael.layer_norm(a, (48,), weight=w, bias=b, eps=eps) + small.sum()

    c = kael.compile(f)
    for eps in (1e-5, 1e-3):  # a float the op reads traces again: a constant of each plan
        for a in (x, y):
            _same(f(a, w, b, eps), c(a, w, b, eps))
    steps = {s.name: s for s in c.plan_for(x, w, b, 1e-5).steps if type(s) is p.ExternCall}
    assert steps["layer_norm"].direct is not None  # x, weight=, bias=, eps= filled in
    assert steps["interpolate"].direct is None  # a list the callee may keep: built per call


def test_an_extern_given_a_named_tuple_holding_tensors_rebuilds_it_per_call():
    lengths = kael.tensor([3, 2])

    def f(a):  # pad_packed_sequence takes a PackedSequence, whose __new__ checks its tensors
        packed = kael.nn.utils.rnn.pack_padded_sequence(a, lengths)
        return kael.nn.utils.rnn.pad_packed_sequence(packed)[0] * 2

    agree(f, kael.randn(3, 2, 4))


def test_direct_calls_fill_only_top_level_leaves_of_immutable_arguments():
    view, scalar = p.View(0, (2,), (1,), 0, float32), p.ArgScalar(0)

    def direct(args, kwargs):
        leaves, treedef = pytree.flatten((args, kwargs))
        marked = [view if v == "t" else scalar if v == "s" else v for v in leaves]
        return p._direct_call(treedef, marked)

    given, kwargs, *fills = direct(("t", (3,), "s"), {"bias": "t", "eps": 0.5})
    assert given[1] == (3,) and kwargs["eps"] == 0.5
    assert fills == [((0, view), (2, scalar)), (("bias", view),)]  # positions, keywords
    assert direct(("t", ("t", 1)), {}) is None  # a tensor inside a tuple
    assert direct(("t", [1, 2]), {}) is None  # a list the callee may keep or change
    assert direct(("t", ((1, [2]),)), {}) is None  # ... even inside a tuple
    assert direct(("t",), {"sizes": {"a": 1}}) is None
    assert direct(("t", (1, (2, 3))), {}) is not None  # nested tuples of numbers are constants


def _unread_before_an_extern(a):
    _unused = (a + 1).exp()  # flushed at the sort, while it is still alive
    return a.sort()[0] * 2


def test_a_kernel_whose_result_nobody_reads_is_dropped_from_the_plan():
    c = agree(_unread_before_an_extern, x)
    plan = c.plan_for(x)
    assert [s.name for s in plan.steps if type(s).__name__ == "ExternCall"] == ["sort"]
    assert len(plan.kernel_steps) == 1 and plan.unread == ["add", "exp"]
    assert "never run (no one reads them): add, exp" in str(c.inspect(x))


def _unread_division(a, b):
    _unused = a // b  # an integer division by zero raises even unread, as in eager
    return a.sort()[0]


def test_an_unread_kernel_that_may_fault_stays_and_raises():
    a, b = kael.tensor([3, 1, 2]), kael.tensor([1, 1, 1])
    c = agree(_unread_division, a, b)
    assert len(c.plan_for(a, b).kernel_steps) == 1
    with pytest.raises(kael.Error, match="division by zero"):
        _unread_division(a, kael.tensor([1, 0, 1]))
    with pytest.raises(kael.Error, match="division by zero"):
        c(a, kael.tensor([1, 0, 1]))


@pytest.mark.parametrize("name", ["softmax", "log_softmax", "logsumexp"])
def test_the_softmax_family_is_traced_as_its_composed_ops_and_fuses_with_its_neighbours(name):
    # eagerly a hand-written row kernel; traced, the book's composed ops: the scale and
    # shift before it join its row group, and nothing runs as an extern step
    op = getattr(kael, name)

    def f(a):
        return op(a * 0.5 + 1.0, -1)

    c = kael.compile(f)
    for _ in range(2):  # another schedule than eager's row kernel: equal within rounding
        assert kael.allclose(c(x), f(x), rtol=1e-6, atol=1e-7)
    plan = c.plan_for(x)
    # logsumexp's last add (log of the sum plus the shift), one value a row, joins it too
    assert [type(s).__name__ for s in plan.kernel_steps] == ["RowGroup"]
    assert "0 extern steps" in str(c.inspect(x))


@pytest.mark.parametrize("name", ["softmax", "logsumexp"])
@pytest.mark.parametrize("shape", [(4, 33), (300, 257), (2000, 7)])
@pytest.mark.parametrize("scale", [1.0, 60.0])
def test_the_composed_softmax_takes_the_row_kernels_float32_arithmetic(name, shape, scale):
    # the exps summed in float64 and kept so (no float32 runs), 1 / sum and log(sum) in
    # float64 rounded once, as codegen/cpu/rows.py: compiled and eager agree bit for bit
    # (float64 sums in two orders differ far below a float32's precision)
    op = getattr(kael, name)
    kael.manual_seed(5)
    a = kael.randn(*shape) * scale
    eager = op(a, -1)
    assert kael.equal(kael.compile(lambda t: op(t, -1))(a), eager)


def test_advanced_indexing_inside_a_trace():
    idx = kael.tensor([3, 1, 4, 1, 5])

    def f(a, i):
        a[i] = 0.5
        return a[i] * 2

    agree(f, x, idx)


# ---- errors -----------------------------------------------------------------------------------


def test_check_errors_match_eager():
    def f(a, b):
        return a + b

    with pytest.raises(kael.ValueError) as eager_err:
        f(x, kael.randn(3))
    with pytest.raises(kael.ValueError) as compiled_err:
        kael.compile(f)(x, kael.randn(3))
    assert str(eager_err.value) == str(compiled_err.value)


def test_kernel_faults_are_raised_at_the_call():
    a = kael.tensor([4, 6, 8])
    c = kael.compile(lambda a, b: (a + 1) // b)
    assert c(a, kael.tensor([1, 2, 3])).tolist() == [5, 3, 3]
    with pytest.raises(kael.Error, match="division by zero") as err:
        c(a, kael.tensor([1, 0, 3]))
    with pytest.raises(kael.Error) as eager_err:
        (a + 1) // kael.tensor([1, 0, 3])
    assert str(err.value) == str(eager_err.value)


@pytest.mark.parametrize("op", ["remainder_", "floor_divide_"])
def test_faulting_inplace_op_leaves_the_version_as_eager(op):
    # Eager raises before its in-place write counts; the trace runs the faulting kernel at
    # the op, so its version bump never happens either (found by the compile fuzzer).
    def f(a, b):
        getattr(a.add_(1), op)(b)
        return a

    results = []
    for run in (f, kael.compile(f)):
        a = kael.tensor([4, 6, 8])
        with pytest.raises(kael.Error, match="division by zero") as err:
            run(a, kael.tensor([1, 0, 3]))
        results.append((a.tolist(), a._impl.storage.version, str(err.value)))
    assert results[0] == results[1]
    assert results[0][1] == 1  # the add_ only


def test_unused_faulting_op_still_raises():
    def f(a, b):
        _ = a // b
        return a + 1

    with pytest.raises(kael.Error, match="division by zero"):
        kael.compile(f)(kael.tensor([1, 2]), kael.tensor([0, 1]))


# ---- inspection -------------------------------------------------------------------------------


def test_inspect_shows_fusion_and_kernel_ir():
    c = kael.compile(lambda a: (a * 2).exp().sum(-1))
    text = str(c.inspect(x))
    assert "1 kernels, 0 extern steps" in text
    assert "fuses mul, exp, sum" in text
    assert "acc = sum(" in text


def test_inspect_llvm_stage():
    c = kael.compile(lambda a: a * 2 + 1)
    assert "define" in str(c.inspect(x, stages=("llvm",)))


def test_nested_compiled_functions_trace_as_one():
    inner = kael.compile(lambda a: a * 2)
    outer = agree(lambda a: inner(a) + 1, x)
    assert kernels(outer, x) == 1


def test_debug_level_prints_each_new_plan(capsys):
    kael.set_debug(2)
    try:
        kael.compile(lambda a: a * 3 - 1)(x)
    finally:
        kael.set_debug(0)
    err = capsys.readouterr().err
    assert "[kael] traced compiled <lambda>:" in err and "out0 = sub(mul(in0, p0), p1)" in err


def test_explain_times_the_first_call_apart(capsys):
    c = kael.compile(lambda a: (a * 2).exp().sum(-1))
    made = kael.explain(c, x)
    out = capsys.readouterr().out
    assert "trace and compile (a first call)" in out and "plan: 1 fused kernels" in out
    assert len(made) == 1 and "out0 = cast<float32>(acc)" in out
    kael.explain(c, x)
    assert "trace and compile" not in capsys.readouterr().out


# ---- threads and fork -------------------------------------------------------------------------


def test_threads_racing_through_first_calls_agree_with_eager():
    import threading

    def f(a, b, s):
        h = (a * s + b).tanh()
        return h / h.sum(-1, keepdim=True), (a - a.mean(-1, keepdim=True)).exp()

    c = kael.compile(f)
    inputs = [(kael.randn(8 + i % 3, 40), kael.randn(40), 0.5 + i) for i in range(8)]
    barrier = threading.Barrier(4)
    results: dict[int, object] = {}

    def worker(k: int) -> None:
        barrier.wait()
        for i in range(k, len(inputs), 4):
            for _ in range(3):
                results[i] = c(*inputs[i])

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i, args in enumerate(inputs):
        _same(results[i], f(*args))


def test_forked_child_replays_and_traces(tmp_path):
    import os

    c = kael.compile(lambda a: (a * 2 + 1).exp().sum(-1))
    a = kael.randn(16, 32)
    want = c(a)
    pid = os.fork()
    if pid == 0:
        try:
            ok = kael.equal(c(a), want) and kael.equal(c(a[:5]), (a[:5] * 2 + 1).exp().sum(-1))
        except BaseException:
            ok = False
        os._exit(0 if ok else 1)
    import time

    deadline = time.monotonic() + 120  # a hung child fails the test instead of the suite
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done or time.monotonic() > deadline:
            break
        time.sleep(0.01)
    if not done:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
    assert done and os.waitstatus_to_exitcode(status) == 0


# ---- check=True -------------------------------------------------------------------------------


def test_check_mode_passes_for_fused_plans():
    def f(a, b):
        a.add_(1)
        e = (a - a.amax(-1, keepdim=True)).exp()
        return e / e.sum(-1, keepdim=True) + kael.layer_norm(b, (48,)), (a * b).tanh().sum(0)

    c = kael.compile(f, check=True)
    eager_args, compiled_args = (x.clone(), y.clone()), (x.clone(), y.clone())
    for _ in range(2):
        _same(f(*eager_args), c(*compiled_args))


def test_check_mode_names_the_kernel_that_differs():
    import dataclasses

    from kael.frontend import eager
    from kael.ir import expr as ir_expr

    c = kael.compile(lambda a: (a * 2).exp() + 1, check=True)
    c(x)
    [step] = c.plan_for(x).kernel_steps
    k = step.template.kernel
    off = ir_expr.Binary(k.exprs[0].dtype, "add", k.exprs[0], ir_expr.Const(float32, 1e-3))
    step.template = eager.fused_template(dataclasses.replace(k, exprs=(off,)))
    step.prepared = None
    with pytest.raises(kael.Error, match=r"kernel mul_exp_add \(fusing mul, exp, add\) output 0"):
        c(x)


def _draws(p, g, a):
    picked = kael.multinomial(p, 3, generator=g)  # an extern drawing from g
    return a[picked] * 2 + kael.rand(3, generator=g), kael.dropout(a, 0.5, True)


def test_check_mode_leaves_every_generator_where_eager_does():
    # check=True runs the plan twice more (fused and op by op): each run draws the same
    # numbers, and afterwards the default generator and a given one stand as eagerly
    p, a = kael.ones(10), kael.arange(10.0)
    results = []
    for f in (_draws, kael.compile(_draws, check=True)):
        kael.manual_seed(5)
        g = kael.Generator().manual_seed(7)
        got = [f(p, g, a) for _ in range(3)]
        results.append((got, kael.rand(2), kael.rand(2, generator=g)))
    (eager, eager_next, eager_g), (checked, checked_next, checked_g) = results
    for e, c in zip(eager, checked, strict=True):
        _same(c, e)
    _same(checked_next, eager_next)
    _same(checked_g, eager_g)


HALF_CHAINS = {
    "mul add": lambda t: t * t + t,
    "silu exp": lambda t: (t.silu() * 3).exp(),
    "to float32": lambda t: (t * t).float() + 1,
    "softmax": lambda t: kael.softmax(t.view(64, 64) * 4, -1),
    "exp overflow": lambda t: (t * 8).exp() * t - 1,
    "softmax rows": lambda t: kael.softmax(t.view(64, 64) * 3.1, -1),  # a row group
    "reduction prologue": lambda t: (t * 3.1).float().amax(-1),
    "layer_norm": lambda t: kael.layer_norm(t.view(64, 64) * 2, (64,)),
}


@pytest.mark.parametrize("dtype", [kael.float16, kael.bfloat16], ids=str)
@pytest.mark.parametrize("seed", [2, 9, 14])  # seeds where 4 steps were not enough
def test_check_mode_allows_half_kernels_their_float32_intermediates(dtype, seed):
    """A fused half chain keeps float32 between its ops (each op alone rounds, and exp
    amplifies that): some of the half type's steps apart is no fusion bug; an added 8 is."""
    import dataclasses

    from kael.frontend import eager
    from kael.ir import expr as ir_expr

    kael.manual_seed(seed)
    a = kael.randn(4096).to(dtype)
    for f in HALF_CHAINS.values():
        c = kael.compile(f, check=True)
        c(a)
        c(a)
    c = kael.compile(HALF_CHAINS["mul add"], check=True)
    c(a)
    [step] = c.plan_for(a).kernel_steps
    k = step.template.kernel
    off = ir_expr.Binary(k.exprs[0].dtype, "add", k.exprs[0], ir_expr.Const(dtype, 8.0))
    step.template = eager.fused_template(dataclasses.replace(k, exprs=(off,)))
    step.prepared = None
    with pytest.raises(kael.Error, match="by more than 16 rounding steps of its half type"):
        c(a)


def test_inspect_states_the_guard_and_bytes_moved():
    c = kael.compile(lambda a, b, s: (a * s + b).sum(-1))
    text = str(c.inspect(x, x[0], 0.5))
    assert (
        "leaf 1: float32 tensor of rank 1 on cpu, contiguous, sharing storage with leaf 0" in text
    )
    assert "leaf 2: a float, a run-time parameter" in text
    assert f"moves {64 * 48 * 4 * 2 + 64 * 4} bytes" in text  # as launches count: b broadcast


def test_inspect_shows_assembly_of_reductions():
    c = kael.compile(lambda a: (a * 2).sum(-1))
    assert "mul_sum_float32_to_float32:" in str(c.inspect(x, stages=("asm",)))


@pytest.mark.parametrize("stage", STAGES)
def test_every_listed_kernel_shows_every_stage(stage):
    # The kernels a plan lists are the ones it launches (specialized for the operands'
    # layouts), so each stage of each can be built: a transposed read and a reduction.
    from kael.frontend.inspection import kernel_stage

    c = kael.compile(lambda a, b: ((a.T + b).exp() * 2, (a * 2).sum(-1)))
    square = kael.randn(48, 48)
    listed = c.kernels(square, square)
    assert len(listed) == 2
    for kernel in listed:
        assert kernel.name in kernel_stage(kernel, stage)


# ---- edges ------------------------------------------------------------------------------------


def test_out_arguments_are_written_as_in_eager():
    def f(a, out):
        kael.add(a, 1, out=out)
        return out * 2

    agree(f, x, kael.zeros(64, 48))


def test_an_error_midway_keeps_the_mutations_before_it():
    def f(a):
        a.add_(1)
        return a + kael.randn(3)  # shapes do not broadcast

    e, c = x.clone(), x.clone()
    with pytest.raises(kael.ValueError) as eager_err:
        f(e)
    with pytest.raises(kael.ValueError) as compiled_err:
        kael.compile(f)(c)
    assert str(eager_err.value) == str(compiled_err.value)
    _same(e, c)


def test_returned_arguments_are_the_same_objects():
    c = kael.compile(lambda a, b: (a, b.add_(1), a * 2))
    b = y.clone()
    for _ in range(2):
        first, second, _ = c(x, b)
        assert first is x and second is b


@pytest.mark.parametrize(
    "make",
    [
        lambda: (kael.randn(0, 3),),
        lambda: (kael.tensor(2.0), kael.tensor(3.0)),
        lambda: (kael.tensor(2.0), 3.0),
        lambda: (kael.arange(8), 3),
    ],
)
def test_empty_zero_dim_and_integer_operands(make):
    def f(*args):
        a = args[0]
        if len(args) == 1:
            return (a * 2).sum(0)
        b = args[1]
        if a.dtype is kael.int64:
            return (a * b // 2) > 4
        return a * b + 1

    agree(f, *make())


def test_per_row_math_folds_into_the_reduction_epilogue():
    def layer_norm(a):
        d = a - a.mean(-1, keepdim=True)
        return d * ((d * d).mean(-1, keepdim=True) + 1e-5).rsqrt()

    c = agree(layer_norm, x)
    group = _row_group(c, x)
    var = group.members[1].kernel
    assert [str(e.op) for e in var.epilogues] == ["rsqrt"]  # var itself is no longer stored
    assert "computed again for every element it is broadcast to" in str(c.inspect(x))


# ---- found by tests/frontend/test_compile_fuzz.py ---------------------------------------------


@pytest.mark.parametrize(
    "f",
    [lambda a: a.softmax(0), lambda a: (lambda b: (b, b.sum(0)))(a * 2)],
)
def test_reductions_over_leading_dims_are_not_row_grouped(f):
    agree(f, kael.randn(2, 2))
    agree(f, x)


def test_named_tuple_results_replay_with_new_data():
    c = kael.compile(lambda a: a.sort(-1))
    for a in (x, y, x * 3):
        got = c(a)
        assert type(got).__name__ == "ValuesIndices"
        _same(tuple(got), tuple(a.sort(-1)))


def test_empty_values_reach_extern_ops():
    agree(lambda a: (a[:0] * 2).sort(-1), x)


def test_a_zero_dim_mask_is_a_data_shaped_extern():
    c = kael.compile(lambda a: a[a > 0] * 2)
    for v in (1.5, -1.5, 2.5):  # the result has 1, 0, then 1 element
        a = kael.tensor(v)
        _same(c(a), a[a > 0] * 2)
    assert c.cache_info().traces == 3


@pytest.mark.parametrize(
    "op",
    [
        lambda a: kael.median(a * 2, 1),  # the host's partition of a traced value
        lambda a: kael.quantile(a, kael.tensor([0.25, 0.5]), dim=1),
        lambda a: kael.histc(a + 1, 5),  # its range read from the data
        lambda a: kael.histogram(a, 4),
    ],
    ids=["median", "quantile", "histc", "histogram"],
)
def test_an_op_whose_own_python_reads_values_is_an_extern_step(op):
    """The op's Python (a host sort, a range from the data) reads values: it runs eagerly
    inside the plan at each call, where it ended the trace with an error before."""
    c = kael.compile(op)
    for scale in (1.0, 3.0, -2.0):
        a = kael.randn(6, 9) * scale
        _same(c(a), op(a))
    assert c.cache_info().traces == 1


def _counted(i):
    return kael.bincount(i) * 2, kael.unique(i, return_counts=True)


def test_ops_sized_by_their_values_retrace_when_the_size_changes():
    c = kael.compile(_counted)
    # bins 4, 4, 4, 6; distinct values 2, 2, 3, 3: a new trace at the third and fourth
    for values in ([0, 3, 3], [3, 0, 3], [1, 0, 3], [5, 0, 1]):
        i = kael.tensor(values)
        _same(c(i), _counted(i))
    assert c.cache_info().traces == 3


def test_an_op_returning_a_python_value_from_the_data_still_ends_the_trace():
    with pytest.raises(kael.Error, match=r"equal .*needs a tensor's values"):
        kael.compile(lambda a, b: kael.equal(a * 2, b))(x, x)
    loose = kael.compile(lambda a, b: (kael.equal(a * 2, b), a + 1), fullgraph=False)
    with pytest.warns(UserWarning, match="runs eagerly"):
        assert loose(x, x * 2)[0] is True and loose(x, x)[0] is False


def _masked(a, m):
    b = a * 2
    return b[m > 0] + 1, (a > 0).nonzero()


def test_nonzero_and_masks_are_extern_steps_checked_at_each_call():
    c = kael.compile(_masked)
    a = kael.randn(40)
    masks = [kael.randn(40) for _ in range(3)]
    for m in (masks[0], masks[0], masks[1], masks[2], masks[2]):
        _same(c(a, m), _masked(a, m))
    counts = [int((m > 0).sum().item()) for m in masks]
    # a new trace only where the count of selected elements changed
    assert c.cache_info().traces == 1 + (counts[1] != counts[0]) + (counts[2] != counts[1])
    assert "its output shapes depend on the values" in str(c.inspect(a, masks[0]))


def test_data_shaped_extern_retraces_with_the_random_stream_of_eager():
    def f(a):
        r = kael.rand(40)
        return a[r > 0.5] + r[r > 0.5]

    c = same_stream(f, kael.randn(40), 4, 3)
    assert c.cache_info().traces > 1  # the counts changed between calls


def test_an_extern_whose_shapes_follow_the_values_retraces_though_its_python_reads_none():
    """unique_consecutive launches its scan kernel before any value reaches Python, so it is
    a plain extern; a change of its output shape traces the call again all the same."""
    c = kael.compile(lambda i: kael.unique_consecutive(i * 1, return_counts=True))
    for values in ([1, 1, 2], [1, 2, 3], [4, 4, 4]):  # 2, 3 then 1 runs
        i = kael.tensor(values)
        _same(c(i), kael.unique_consecutive(i, return_counts=True))
    assert c.cache_info().traces == 3


def _drawn_then_counted(p, i):
    return kael.multinomial(p, 4, replacement=True), kael.randperm(5), kael.bincount(i)


def test_a_retrace_puts_back_what_random_externs_drew():
    """multinomial and randperm draw from the default generator inside their extern steps;
    the retrace at bincount's new size rewinds those draws too, so it draws eager's."""
    p, c = kael.rand(10) + 0.1, kael.compile(_drawn_then_counted)
    for n, values in enumerate(([0, 1], [0, 5], [0, 7])):
        i = kael.tensor(values)
        kael.manual_seed(n)
        expected, after = _drawn_then_counted(p, i), kael.rand(2)
        kael.manual_seed(n)
        _same(c(p, i), expected)
        _same(kael.rand(2), after)
    assert c.cache_info().traces == 3


def test_a_retrace_puts_back_a_generator_argument():
    def f(a, g):
        return kael.rand(3, generator=g), a[a > 0]

    c, g = kael.compile(f), kael.Generator()
    for n in range(4):
        a = kael.randn(12)
        g.manual_seed(100 + n)
        expected, after = f(a, g), kael.rand(2, generator=g)
        g.manual_seed(100 + n)
        _same(c(a, g), expected)
        _same(kael.rand(2, generator=g), after)


def test_a_retrace_rewinds_the_default_generator_once_when_an_extern_takes_it_by_name():
    def f(a):
        return kael.rand(2), kael.randperm(4, generator=kael.default_generator), a[a > 0]

    c = kael.compile(f)
    for n, values in enumerate(([1.0, -1.0, -2.0], [1.0, 2.0, -3.0])):  # a retrace at call 1
        a = kael.tensor(values)
        kael.manual_seed(n)
        expected, where = f(a), kael.default_generator.get_state()
        kael.manual_seed(n)
        _same(c(a), expected)
        _same(kael.default_generator.get_state(), where)


def test_a_retrace_never_repeats_another_threads_draws(monkeypatch):
    """Another thread draws while compiled calls trace again (unique's size changes each
    call; randperm turns extern after drawing): the trace's rollback and the call's rewind
    put back only what their own thread drew, so no counter is handed out twice."""
    import threading

    from kael.frontend.random import default_generator

    taken, lock = [], threading.Lock()
    reserve, rewind = default_generator.reserve, default_generator.rewind

    def logged(count):
        seed, first = reserve(count)
        with lock:
            taken.append((first, first + count, threading.get_ident()))
        return seed, first

    def given_back(state, count):
        # a rewound range was never used: its counters may go to any thread next
        with lock:
            done = rewind(state, count)
            me, start = threading.get_ident(), state[1]
            if done:
                taken[:] = [r for r in taken if r[2] != me or not start <= r[0] < start + count]
        return done

    monkeypatch.setattr(default_generator, "reserve", logged)
    monkeypatch.setattr(default_generator, "rewind", given_back)
    c = kael.compile(lambda i: (kael.randperm(5), kael.unique(i), kael.rand(3)))
    inputs = [kael.arange(40_000) % k for k in (100, 101, 102)]
    stop = threading.Event()
    drawer = threading.Thread(target=lambda: [kael.rand(1) for _ in iter(stop.is_set, True)])
    drawer.start()
    try:
        for n in range(12):
            c(inputs[n % 3])
    finally:
        stop.set()
        drawer.join()
    taken.sort()
    # a rollback hands its own thread's counters back to the op that drew them: only
    # ranges reaching two threads are repeated random numbers
    shared = [(a, b) for a, b in zip(taken, taken[1:]) if b[0] < a[1] and a[2] != b[2]]
    assert len({t for *_, t in taken}) == 2 and not shared


def test_an_extern_drawing_from_a_generator_argument_draws_once_at_the_trace():
    """multinomial draws from g, then turns extern: the trace puts g back before the extern
    draws again, as it does the default generator."""

    def f(p, g):
        return kael.multinomial(p, 3, generator=g)

    c, g, p = kael.compile(f), kael.Generator(), kael.rand(10) + 0.1
    for n in range(2):
        g.manual_seed(n)
        expected, where = f(p, g), g.get_state()
        g.manual_seed(n)
        _same(c(p, g), expected)
        _same(g.get_state(), where)


def test_an_extern_writing_a_tensor_made_inside_the_call_leaves_it_restartable():
    """index_add_ into a fresh zeros() bumps a version nobody outside the call sees: a
    value-reading op after it may still trace the call again."""

    def f(a, labels):
        sums = kael.zeros(3, dtype=a.dtype).index_add_(0, labels, a)
        return sums, kael.median(a), a[a > 2.5]

    c, labels = kael.compile(f), kael.tensor([0, 1, 2, 0])
    for values in ([1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0]):
        a = kael.tensor(values)
        _same(c(a, labels), f(a, labels))
    assert c.cache_info().traces == 2


def _writes_then_masks_inplace(a, m):
    a.add_(1)
    return a[m > 0]


def _writes_then_masks_out(a, m):
    kael.add(a, 1, out=a)  # bumps no version counter, as in eager
    return a[m > 0]


@pytest.mark.parametrize("f", [_writes_then_masks_inplace, _writes_then_masks_out])
def test_data_shaped_op_after_a_write_to_an_argument_is_a_graph_break(f):
    # a retrace would write the argument a second time
    with pytest.raises(kael.Error, match="cannot be traced again"):
        kael.compile(f)(kael.randn(10), kael.randn(10))


def test_an_extern_changing_shape_after_a_write_to_an_argument_raises():
    def f(a):
        a.add_(1)
        return kael.unique_consecutive(a)

    c = kael.compile(f)
    _same(c(kael.tensor([1, 1, 2])), kael.tensor([2, 3]))
    with pytest.raises(kael.Error, match=r"shape \[3\] where its trace returned \[2\].*argument"):
        c(kael.tensor([1, 2, 3]))


def test_float_arguments_read_as_floats_in_messages():
    with pytest.raises(kael.TypeError, match="got float$"):
        kael.compile(lambda a, s: kael.minimum(a, s))(x, 0.5)


def test_chunk_scratch_is_bounded_and_the_rest_stays_in_memory(monkeypatch):
    # a tight LOCAL_BYTES keeps only what fits; the values left out keep their buffers
    a = kael.randn(64, 48)
    chunk_row = 48 * 4
    monkeypatch.setattr(p, "LOCAL_BYTES", 64)  # the row maxima and sums, not the exp
    c = agree(lambda t: _softmax_parts(t)[2], a)
    group = _row_group(c, a)
    assert group.scratch_bytes <= 64
    exp_slot = group.members[1].outs[0].buffer
    assert exp_slot not in group.local and group.chunk * chunk_row > 64
    assert c.plan_for(a).peak_bytes >= 64 * 48 * 4


def test_a_large_groups_later_member_fetches_ahead_not_its_first_reduction():
    # var over rows past FETCH_FROM_BYTES: the squared deviations (cheap) prefetch the next
    # chunk while this one is summed from cache, and the mean does not fetch them again;
    # softmax: the exp member prefetches them, so the maxima's reduction does not
    big = kael.randn(1024, 4096)  # 16 MiB: past FETCH_FROM_BYTES
    var = agree(lambda a: ((a - a.mean(-1, keepdim=True)) ** 2).mean(-1), big, calls=2)
    plan = var.plan_for(big)
    group = _row_group(var, big)
    assert _prefetched(group) == [(1, 0)]
    assert group.members[1].params[-1] == group.chunk * 4096
    assert group.members[0].specialized(plan.slots).fetch_ahead == 0
    soft = agree(lambda t: _softmax_parts(t)[2], big, calls=2)
    plan = soft.plan_for(big)
    group = _row_group(soft, big)
    assert _prefetched(group) == [(1, 0)]
    assert group.members[0].specialized(plan.slots).fetch_ahead == 0


def test_chunk_scratch_never_takes_a_small_thread_stack():
    # 128 KiB of chunk scratch, called on one thread (inline) from a thread whose stack is
    # 160 KiB: the scratch comes from the heap, so the call neither crashes nor differs
    code = (
        "import threading, kael, numpy as np\n"
        "kael.set_num_threads(1)\n"
        "@kael.compile\n"
        "def chain(x):\n"
        "    a = x.exp(); sa = a.sum(-1, keepdim=True)\n"
        "    b = (a / sa).sin(); sb = b.sum(-1, keepdim=True)\n"
        "    return b / sb\n"
        "x = kael.randn(8, 16384, dtype=kael.float64)\n"
        "want = chain(x).numpy()\n"
        "[g] = [s for s in chain.plan_for(x).steps if type(s).__name__ == 'RowGroup']\n"
        "assert g.scratch_bytes >= 128 * 1024, g.scratch_bytes\n"
        "threading.stack_size(160 * 1024)\n"
        "out = {}\n"
        "t = threading.Thread(target=lambda: out.update(r=chain(x).numpy())); t.start(); t.join()\n"
        "assert np.array_equal(out['r'], want)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]


class _Pair(tuple):
    pass


def test_sizes_and_tuple_subclasses_cross_the_compiled_boundary_whole():
    """pytree rebuilt every tuple subclass as a named tuple (kind(*values)): a kael.Size
    argument, result or extern argument raised a builtin TypeError, and a plain tuple
    subclass was rebuilt from its first element's items (wrong values)."""
    x = kael.ones(2, 3)
    doubled, shape = kael.compile(lambda x: (x * 2, x.shape))(x)
    assert shape == (2, 3) and type(shape) is kael.Size and doubled.tolist() == (x * 2).tolist()
    assert kael.compile(lambda x, s: x.reshape(s[::-1]))(x, x.shape).shape == (3, 2)
    g = kael.Generator().manual_seed(0)
    draws = kael.compile(lambda x, g: x + kael.rand(x.shape, generator=g))
    assert draws(x, g).shape == draws(x, g).shape == (2, 3)
    got = kael.compile(lambda x, p: x + p[0])(kael.zeros(3), _Pair((kael.tensor([1.0, 2.0, 3.0]),)))
    assert got.tolist() == [1.0, 2.0, 3.0]


def test_a_state_dict_argument_is_flattened_so_a_rebound_entry_is_seen():
    """An OrderedDict (a state_dict) was one opaque leaf keyed by its id: replacing an
    entry kept the first call's tensor in the plan."""
    model = kael.nn.Linear(3, 2)

    def run(params, x):
        return kael.func.functional_call(model, params, (x,))

    compiled, state, x = kael.compile(run), model.state_dict(), kael.ones(1, 3)
    assert kael.equal(compiled(state, x), run(state, x))
    state["weight"] = kael.full((2, 3), 2.0)
    assert kael.equal(compiled(state, x), run(state, x))
    defaults = collections.defaultdict(list, {"a": kael.ones(2)})
    assert kael.compile(lambda d: d["a"] * 2)(defaults).tolist() == [2.0, 2.0]


def test_two_reductions_over_empty_rows_compile_as_eager():
    for fn in (lambda a: (a.sum(1), a.mean(1)), lambda a: (a.sum(1), a.prod(1))):
        got, want = kael.compile(fn)(kael.zeros(2, 0)), fn(kael.zeros(2, 0))
        for g, w in zip(got, want):
            assert str(g.tolist()) == str(w.tolist())  # nan too


def test_an_op_that_turns_extern_leaves_none_of_its_own_steps_in_the_plan():
    """multi_head_attention_forward adds its input projections (matrix products add
    themselves to the plan at once), then turns extern: the extern repeats them, so the
    plan keeps the extern alone (it ran them twice a call)."""
    mha = kael.nn.MultiheadAttention(16, 2, batch_first=True).eval()
    f = kael.compile(lambda x: mha(x, x, x, need_weights=False)[0] * 2)
    x = kael.randn(2, 5, 16)
    with kael.no_grad():
        want = mha(x, x, x, need_weights=False)[0] * 2
        for _ in range(2):
            np.testing.assert_allclose(f(x).numpy(), want.numpy(), rtol=1e-6, atol=1e-6)
        steps = [type(s).__name__ for s in f.plan_for(x).steps]
    assert steps == ["ExternCall", "KernelCall"]


def _attention_module():
    kael.manual_seed(0)
    return kael.nn.MultiheadAttention(16, 2, batch_first=True).eval()


def test_steps_pending_before_an_op_that_turns_extern_stay_in_the_plan():
    """A flush inside the op (a matrix product, a kernel that may fault) adds what came
    before the op to the plan first: the op's rollback keeps it (its rollback once took
    the producer of the op's own input with it)."""
    mha, w = _attention_module(), kael.randn(16, 16)
    fns = [
        lambda x: mha(x * 3 + 1, x * 3 + 1, x * 3 + 1, need_weights=False)[0],
        lambda x: mha(x @ w + 1, x @ w + 1, x @ w + 1, need_weights=False)[0],
        lambda x: kael.nanmedian(x * 2, dim=1)[0] + 1,
    ]
    with kael.no_grad():
        for fn in fns:
            f = kael.compile(fn)
            for _ in range(3):
                x = kael.randn(2, 5, 16)
                np.testing.assert_array_equal(f(x).numpy(), fn(x).numpy())


def test_an_in_place_write_to_an_argument_before_an_op_that_turns_extern_is_kept():
    mha = _attention_module()

    def fn(x):
        x.mul_(2)
        return mha(x, x, x, need_weights=False)[0]

    f = kael.compile(fn)
    with kael.no_grad():
        for _ in range(3):
            x = kael.randn(2, 5, 16)
            a, b = x.clone(), x.clone()
            np.testing.assert_array_equal(f(a).numpy(), fn(b).numpy())
            np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_random_draws_before_an_op_that_turns_extern_are_kept():
    mha = _attention_module()

    def fn(x):
        y = kael.nn.functional.dropout(x, 0.5, training=True)
        return mha(y, y, y, need_weights=False)[0], kael.nn.functional.dropout(
            x, 0.5, training=True
        )

    f = kael.compile(fn)
    x = kael.randn(2, 5, 16)
    with kael.no_grad():
        for i in range(3):
            kael.manual_seed(i)
            got = f(x)
            kael.manual_seed(i)
            want = fn(x)
            for g, w in zip(got, want, strict=True):
                np.testing.assert_array_equal(g.numpy(), w.numpy())


def test_an_op_taken_back_leaves_no_fusion_notes_in_the_inspection():
    f = kael.compile(lambda x: kael.nanmedian(x * 2, dim=1)[0])
    x = kael.randn(4, 6)
    f(x)
    text = str(f.inspect(x))
    assert "extern nanmedian" in text and "fused away" not in text


@pytest.mark.parametrize(
    "fn",
    [
        lambda x: kael.add(x, 1, out=kael.empty(0)),  # a traced kernel's out=
        lambda x: kael.add(x * 2, 1, out=kael.empty(0)),  # with a kernel pending before it
        lambda x: kael.topk(x, 2, out=(kael.empty(0), kael.empty(0, dtype=kael.int64))),
        lambda x: kael.sort(x, out=(kael.empty(0), kael.empty(0, dtype=kael.int64)))[0] * 2,
    ],
    ids=[
        "add",
        "add after a pending kernel",
        "topk (an extern)",
        "sort (an extern), then a kernel",
    ],
)
def test_an_empty_out_the_function_made_is_resized_as_eager(fn):
    """torch's ops resize an empty out=; in a compiled function its slot grows (traced), or
    the extern's bound storage grows with it, and every call makes the slot that big."""
    f = kael.compile(fn)
    for _ in range(3):
        x = kael.randn(6)
        got, want = f(x), fn(x)
        for g, w in zip(*(r if isinstance(r, tuple) else (r,) for r in (got, want)), strict=True):
            assert g.shape == w.shape and g.dtype is w.dtype
            np.testing.assert_array_equal(g.numpy(), w.numpy())


def test_a_non_empty_out_no_step_wrote_is_resized_as_eager_with_its_warning():
    # (the trace warns; the plan's replays run no Python to warn from)
    f = kael.compile(lambda x: kael.add(x, 1, out=kael.empty(2)))
    x = kael.randn(4)
    with pytest.warns(UserWarning, match="resized"):
        got = f(x)
    for _ in range(2):
        assert got.shape == (4,) and got.tolist() == (x + 1).tolist()
        x = kael.randn(4)
        got = f(x)


def test_a_non_empty_out_a_step_wrote_is_not_resized_in_a_compiled_function():
    f = kael.compile(lambda x: kael.add(x, 1, out=kael.zeros(2)))  # zeros: a fill step
    with pytest.warns(UserWarning, match="resized"), pytest.raises(kael.Error, match="resiz"):
        f(kael.randn(4))


def test_an_empty_tensor_that_escapes_its_trace_is_not_resized_later():
    """Only the trace, or its own extern step, grows an empty slot: a lazy tensor kept past
    the trace is refused, and the published plan keeps its slot's size."""
    kept = []

    def fn(x):
        o = kael.empty(0)
        kael.nanmedian(o.view(0, 1), 1)  # an extern binds the empty slot
        kept.append(o)
        return x + 1

    f = kael.compile(fn)
    for _ in range(2):
        x = kael.randn(4)
        np.testing.assert_array_equal(f(x).numpy(), (x + 1).numpy())
    sizes = [slot.nbytes for slot in f.plan_for(x).slots]
    with pytest.raises(kael.Error, match="not resizable"):
        kept[0].resize_(250)
    assert [slot.nbytes for slot in f.plan_for(x).slots] == sizes


@pytest.mark.parametrize("dtype", [kael.int32, kael.int16, kael.uint8], ids=str)
def test_a_value_read_through_a_view_of_another_dtype_keeps_its_bits(dtype):
    """x.view(dtype) of an intermediate reads its bytes: fusion does not inline the
    producer's value converted (it gave [1, 2] for the bits of [1.0, 2.0])."""
    f = kael.compile(lambda x: (x * 1).view(dtype) + 0)
    x = kael.tensor([1.0, 2.0, -3.5, 0.25])
    want = (x * 1).view(dtype) + 0
    got = f(x)
    assert got.dtype is want.dtype and got.tolist() == want.tolist()


@pytest.mark.parametrize("dtype", [kael.bfloat16, kael.float16, kael.float32], ids=str)
@pytest.mark.parametrize("sample", ["uniform_", "normal_", "exponential_"])
def test_an_in_place_sample_into_a_half_tensor_matches_eager(dtype, sample):
    """Found by review: a compiled x.uniform_() of a bfloat16 x gave subnormals and zeros.
    Its copy moves bfloat16 elements as int16 words, and fusion inlined the sample into
    that copy, converting the sampled value to int16 instead of taking its bits."""

    def f(x):
        return getattr(x, sample)()

    step = kael.compile(f)
    for _ in range(2):
        kael.manual_seed(11)
        got = step(kael.zeros(8, dtype=dtype))
        kael.manual_seed(11)
        want = f(kael.zeros(8, dtype=dtype))
        assert got.dtype is dtype and got.tolist() == want.tolist()


CONSTANT_REDUCTIONS = {
    "sum": lambda x: x + kael.ones(4, 3).sum(0),
    "amax": lambda x: kael.zeros_like(x).amax() + x,
    "softmax": lambda x: kael.full((2, 3), 2.0).softmax(-1) + x,
    "var": lambda x: kael.ones(3, 3).var(0) + x,
    "argmax": lambda x: kael.ones_like(x).argmax() + x,
    "norm": lambda x: x.new_ones(5).norm() + x,
}


@pytest.mark.parametrize("name", sorted(CONSTANT_REDUCTIONS))
def test_a_reduction_of_a_constant_the_call_made_compiles(name):
    """Found by a port: fusion inlined the fill into the reduction, which then read no
    input and its launch planning failed (IndexError); the fill is now stored first."""
    f = CONSTANT_REDUCTIONS[name]
    step, x = kael.compile(f), kael.ones(3)
    for _ in range(2):
        _same(step(x), f(x))


def test_generator_arguments_keep_their_aliasing_and_the_default_generator_apart():
    """One generator passed twice is one stream; kael.default_generator is told apart (ops
    reserve from it, and code may test `g is kael.default_generator`); a returned generator
    is the call's own. A plan traced for one pattern is not run for another."""

    def f(x, g1, g2):
        return x + kael.rand(3, generator=g1) * 10 + kael.rand(3, generator=g2) * 100

    c, x = kael.compile(f), kael.zeros(3)
    for _ in range(2):
        shared = kael.Generator().manual_seed(3)
        assert (
            c(x, shared, shared).tolist() == f(x, *[kael.Generator().manual_seed(3)] * 2).tolist()
        )
        a, b = kael.Generator().manual_seed(1), kael.Generator().manual_seed(2)
        want = f(x, kael.Generator().manual_seed(1), kael.Generator().manual_seed(2))
        assert c(x, a, b).tolist() == want.tolist()
    which = kael.compile(lambda x, g: x + (1.0 if g is kael.default_generator else 2.0))
    assert which(x, kael.default_generator).tolist() == [1.0] * 3
    assert which(x, kael.Generator()).tolist() == [2.0] * 3
    handed = kael.compile(lambda x, g: (x + kael.rand(3, generator=g), g))
    first, second = kael.Generator(), kael.Generator()
    assert handed(x, first)[1] is first and handed(x, second)[1] is second
