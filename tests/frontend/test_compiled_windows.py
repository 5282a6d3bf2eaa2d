"""@kael.compile and x[t] for a 0-d integer tensor t: the view lies where each call's t puts
it (a WINDOW slot), traced once for every t, and writes through it or to the memory it
shows run in eager's order."""

from __future__ import annotations

import pytest
from parity_helpers import in_threads, same_tree

import kael
from kael.frontend import plan as p

SCHEDULE = kael.linspace(0.99, 0.01, 50)


def _same(a, b) -> None:
    def tensors(u, v):
        assert u.shape == v.shape and u.dtype == v.dtype
        assert kael.equal(u, v)

    same_tree(a, b, tensors)


def _grid(*shape):
    """Distinct values of both signs, the same at every call."""
    n = 1
    for size in shape:
        n *= size
    return (kael.arange(float(n)) - n / 2).reshape(shape)


def agree(fn, make, steps=range(0, 50, 7)):
    """fn compiled against fn eager over fresh arguments `make(t)` for each t in `steps`:
    identical results and arguments afterwards. Returns the compiled function."""
    compiled = kael.compile(fn)
    for t in steps:
        eager_args, compiled_args = make(t), make(t)
        _same(fn(*eager_args), compiled(*compiled_args))
        _same(eager_args, compiled_args)
    return compiled


def _sampler_step(x, t):
    a = SCHEDULE[t]
    return x * a.sqrt() + (1 - a).sqrt()


def _args(t):
    return kael.arange(12.0).reshape(3, 4), kael.tensor(t)


def test_a_row_picked_by_a_tensor_is_traced_once_for_every_value():
    c = agree(_sampler_step, _args)
    assert c.cache_info().traces == 1
    plan = c.plan_for(*_args(3))
    assert [s.kind for s in plan.slots].count(p.WINDOW) == 1
    assert "found where each call's values put it" in str(c.inspect(*_args(3)))


def test_negative_and_out_of_range_positions_follow_eager():
    c = agree(_sampler_step, _args, steps=[-1, -50, 49, 0])
    with pytest.raises(IndexError, match="50"):
        c(*_args(50))
    with pytest.raises(IndexError, match="-51"):
        c(*_args(-51))
    _same(c(*_args(5)), _sampler_step(*_args(5)))  # the plan still runs after an error
    assert c.cache_info().traces == 1


def _returned(x, t):
    return x[t], x[t] * 2


def test_a_returned_row_is_a_view_of_the_argument_at_this_calls_offset():
    c = agree(_returned, lambda t: (_grid(6, 5), kael.tensor(t % 6)))
    x = kael.randn(6, 5)
    row, _ = c(x, kael.tensor(4))
    assert row.storage_offset() == 20 and row.untyped_storage().data_ptr() == x.data_ptr()
    x[4, 0] = 7.0
    assert row[0].item() == 7.0


def _written_through(x, t):
    row = x[t]
    row.mul_(-2)
    return x.sum(0), row + 1


def _written_then_read(x, t):
    row = x[t]
    before = x * 3  # read before the write: a fused reader must not see it
    x.add_(1)
    x[0].fill_(5)  # written after the row is taken: the row is a view, it sees it
    return before + row, row.clone()


def _row_then_base_written(x, t):
    row = x[t]
    late = row * 2
    x.zero_()
    return late + row, x


@pytest.mark.parametrize("fn", [_written_through, _written_then_read, _row_then_base_written])
def test_writes_through_the_row_or_to_its_memory_run_in_eager_order(fn):
    c = agree(fn, lambda t: (_grid(4, 3), kael.tensor(t % 4)), steps=[0, 1, 2, 3, 1])
    assert c.cache_info().traces == 1


def test_a_write_through_the_row_bumps_the_arguments_version():
    c = kael.compile(lambda x, t: x[t].add_(1))
    for t in (0, 2):
        x = kael.zeros(3, 2)
        before = x._impl.storage.version
        c(x, kael.tensor(t))
        assert x._impl.storage.version > before and x[t].tolist() == [1.0, 1.0]


def _nested(x, t, s):
    return x[t][s] * 2 + x[t, s]


def test_a_window_of_a_window_follows_both_values():
    c = agree(
        _nested,
        lambda t: (_grid(5, 4), kael.tensor(t % 5), kael.tensor(t % 4)),
        steps=range(9),
    )
    assert c.cache_info().traces == 1


@pytest.mark.filterwarnings("ignore:kael.compile")
def test_a_graph_break_after_a_write_through_the_row_keeps_it():
    def f(x, t):
        x[t].fill_(9)
        if x.sum() > 0:  # Python reads a value: the rest runs eagerly
            return x * 2
        return x

    c = kael.compile(f, fullgraph=False)
    for t in (1, 0, 2):
        x, y = kael.zeros(3, 2), kael.zeros(3, 2)
        _same(c(x, kael.tensor(t)), f(y, kael.tensor(t)))
        _same(x, y)


def test_check_mode_runs_the_window_against_eager_kernels():
    c = kael.compile(_written_through, check=True)
    for t in (0, 3):
        x = kael.randn(4, 3)
        y = x.clone()
        _same(c(x, kael.tensor(t)), _written_through(y, kael.tensor(t)))


def test_calls_from_threads_each_find_their_own_row():
    c = kael.compile(_sampler_step)
    x = kael.randn(3, 4)
    c(x, kael.tensor(0))
    errors = []

    def work(k):
        for t in range(k, 50, 4):
            got = c(x, kael.tensor(t))
            if not kael.equal(got, _sampler_step(x, kael.tensor(t))):
                errors.append(t)

    in_threads(work)
    assert errors == [] and c.cache_info().traces == 1


def _reduced_into_a_row(x, t):
    kael.sum(x, 0, out=x[t])  # eager reduces into a temporary: out meets the input
    return x * 1


def _copied_from_a_row(x, t):
    x.copy_(x[t].expand(4, 3))  # one row over every row
    return x + 0


def _sorted_into_its_operands(x, t):
    row = x[t]
    values, indices = kael.sort(row, out=(row, kael.empty(0, dtype=kael.int64)))
    return values is row, x + 0, indices


@pytest.mark.parametrize("fn", [_reduced_into_a_row, _copied_from_a_row, _sorted_into_its_operands])
def test_an_op_reading_the_memory_it_writes_through_a_row_sees_it_as_eager_does(fn):
    c = agree(fn, lambda t: (_grid(4, 3).flip(1).contiguous(), kael.tensor(t % 4)), steps=[0, 3, 1])
    assert c.cache_info().traces == 1


def _product_then_row(w, t, a):
    row = w[t]
    c = kael.matmul(a, a, out=w[1])
    return c + row.flip(0)  # an epilogue would read rows of w[1] other tiles still write


def test_a_product_writing_the_shown_memory_takes_no_epilogue_reading_it():
    c = agree(
        _product_then_row,
        lambda t: (_grid(3, 96, 96) / 1000, kael.tensor(t % 3), _grid(96, 96) / 1000),
        steps=[1, 0, 1, 2],
    )
    assert c.cache_info().traces == 1


@pytest.mark.parametrize(
    "read",
    [
        lambda row: row.as_strided((12,), (1,), 0).sum(),  # a layout from the storage's start
        lambda row: row * row.storage_offset(),
        lambda row: row * (row.data_ptr() % 7),
    ],
    ids=["as_strided", "storage_offset", "data_ptr"],
)
def test_python_reading_where_a_row_lies_needs_the_values(read):
    """Where x[t] lies follows t: Python reading it (or a layout from the storage's start)
    is a read of the values, never the trace's place baked in (or a view past the base)."""
    c = kael.compile(lambda x, t: read(x[t]))
    with pytest.raises(kael.Error, match="place follows the values"):
        c(_grid(4, 3), kael.tensor(1))
    loose = kael.compile(lambda x, t: read(x[t]), fullgraph=False)
    with pytest.warns(UserWarning, match="runs eagerly"):
        for t in (1, 3):
            x = _grid(4, 3)
            assert kael.equal(loose(x, kael.tensor(t)), read(x[t]))


def test_a_rows_offset_read_under_a_dynamic_int_specializes_to_it():
    x = _grid(4, 3)
    c = kael.compile(lambda x, p: x * x[p : p + 1].storage_offset())
    assert [c(x, p).sum().item() for p in range(4)] == [
        (x * x[p : p + 1].storage_offset()).sum().item() for p in range(4)
    ]


def _trimmed(ids, mask):
    n = mask.sum(-1).max()  # a 0-d tensor computed in the plan
    return ids[:, :n], ids[:, n - 1 : n] * 2


def test_a_slice_bounded_by_tensors_takes_each_calls_values():
    c = kael.compile(_trimmed)
    ids = kael.arange(12).reshape(2, 6)
    for k in [3, 5, 2, 5, 3]:
        mask = (kael.arange(6) < k).long().expand(2, 6)
        _same(c(ids, mask), _trimmed(ids, mask))


def _written_at_a_tensor_slice(x, t):
    x[t + 1 :].add_(1)  # its length follows t: a new one traces again, before any write
    x[t : t + 1] = 7  # after the write: a place follows t, never a shape
    return x * 1


def test_writes_through_a_slice_bounded_by_tensors_land_at_each_calls_place():
    agree(_written_at_a_tensor_slice, lambda t: (_grid(6), kael.tensor(t % 5)), steps=range(6))


def _incremented(x, t):
    x[t] += 1  # a row read, written, and stored again
    return x * 1


def _stepped(x, t):
    x.mul_(0.5)  # a write the caller sees, then a row of a global read at t
    x.add_(SCHEDULE[t])
    return x


@pytest.mark.parametrize("fn", [_incremented, _stepped])
def test_a_row_at_a_tensor_position_after_a_write_the_caller_sees_traces_once(fn):
    """A place, never a shape, follows t: no call needs tracing again, so the row may come
    after an in-place write to an argument (where a changed shape could not retrace)."""
    c = agree(fn, lambda t: (_grid(4, 3), kael.tensor(t % 4)), steps=[2, 0, 3, 1])
    assert c.cache_info().traces == 1


# ---- a 0-d argument that is a view at a new offset each call --------------------------------

TIMESTEPS = kael.arange(990, -1, -90)  # 12 steps, as a scheduler's timesteps


def _denoise(x, t):
    return x * SCHEDULE[t // 20].sqrt() + t.float() * 1e-3


def _reads_the_timesteps_too(x, t):
    return x * TIMESTEPS[3].float() + t.float()  # a global over t's storage


def _reads_its_offset(x, t):
    return x + t.storage_offset()


def _writes_it(x, t):
    t.add_(1)
    return x * t


def test_iterating_a_tensor_of_timesteps_traces_once():
    """`for t in scheduler.timesteps` hands a view at a new offset each step: the plan
    reads the argument wherever it lies, one trace for every step."""
    c = kael.compile(_denoise)
    x = _grid(4, 3)
    for t in TIMESTEPS:
        _same(c(x, t), _denoise(x, t))
    assert c.cache_info().traces == 1


@pytest.mark.parametrize("fn", [_reads_the_timesteps_too, _reads_its_offset, _writes_it])
def test_an_argument_read_through_its_storage_keeps_a_plan_per_place(fn):
    """Where the plan reads more of the storage than the argument's element (a global over
    it), or Python reads its place, the plan is kept per offset; writes land in place."""
    c = kael.compile(fn)
    x = _grid(4, 3)
    mine, theirs = TIMESTEPS.clone(), TIMESTEPS.clone()
    for i in range(5):
        _same(c(x, mine[i]), fn(x, theirs[i]))
    _same(mine, theirs)


def _row_of_an_intermediate_then_written(w, t):
    h = w * 2
    row = h[t]
    out = row + 1
    h.mul_(0)  # the window's memory written after: the row, a view, sees it
    return out, row * 1, h.sum()


def _rows_of_an_intermediate(w, t):
    h = (w * 2).exp()
    return h[t] * h[t - 1], h[t]


def _row_of_an_extern_result(w, t):
    return w.softmax(-1)[t] + 0  # a hand-written kernel's output


@pytest.mark.parametrize(
    "fn",
    [_row_of_an_intermediate_then_written, _rows_of_an_intermediate, _row_of_an_extern_result],
)
def test_a_row_of_memory_the_plan_makes_is_found_at_each_calls_place(fn):
    c = agree(fn, lambda t: (_grid(6, 4) / 10, kael.tensor(t % 5 + 1)), steps=range(6))
    assert c.cache_info().traces == 1


@pytest.mark.parametrize("dtype", [kael.int64, kael.int32, kael.int16, kael.int8], ids=str)
def test_a_row_is_read_at_each_calls_index_of_every_integer_dtype(dtype):
    """x[t] reads t and binds the row itself (ExternCall.select), for each index dtype."""
    c = kael.compile(_sampler_step)
    x = _grid(3, 4)
    for t in (3, -2, 0, 49, -50):
        key = kael.tensor(t, dtype=dtype)
        _same(c(x, key), _sampler_step(x, key))
    with pytest.raises(IndexError, match="index -51 is out of bounds for dimension 0 with size 50"):
        c(x, kael.tensor(-51, dtype=dtype))
    assert c.cache_info().traces == 1


def _pooled_row(v, t, out):
    row = v[t]
    out.add_(1)  # a write the caller sees
    return row.diagonal(), kael.nn.functional.max_pool2d(row.unsqueeze(0), 2)


def test_kaels_own_ops_over_a_row_are_no_reads_of_its_place():
    """diagonal and pooling compute their views from the row's own offset (their
    storage_offset and as_strided are kael's, inside the op): no read of the values."""
    c = kael.compile(_pooled_row)
    for t in (0, 2, 1):
        mine, theirs = kael.zeros(2), kael.zeros(2)
        v = _grid(3, 4, 4)
        _same(c(v, kael.tensor(t), mine), _pooled_row(v, kael.tensor(t), theirs))
        _same(mine, theirs)
    assert c.cache_info().traces == 1


def _scaled_after_the_row(x, t):
    w = x * 2
    row = w[t]
    w.mul_(3)  # written after the row is taken: the row, a view, sees it
    return row


def _zeroed_after_the_row(x, t):
    w = x.exp()
    row = w[t]
    w.zero_()
    return row, row + 0


@pytest.mark.parametrize("fn", [_scaled_after_the_row, _zeroed_after_the_row])
def test_a_write_to_an_intermediate_a_row_shows_is_kept(fn):
    """The write's only reader is the row: the plan must not drop it as unread."""
    agree(fn, lambda t: (_grid(6, 4) / 10, kael.tensor(t % 6)), steps=[0, 0, 3, 5, 1])


def _absolute_layout_of_a_row(x, t):
    return kael.as_strided(x[t], (4,), (1,), 0) * 1  # from the storage's start: row 0


def test_an_absolute_layout_of_a_row_through_the_function_is_taken_per_call():
    """kael.as_strided reads where the row lies (inside its door): it runs as an extern
    step on the memory itself at each call, from the storage's start as eager."""
    agree(_absolute_layout_of_a_row, lambda t: (_grid(6, 4), kael.tensor(t % 6)), steps=[5, 3, 0])


def test_an_out_of_range_row_raises_kaels_index_error():
    c = kael.compile(_sampler_step)
    c(*_args(1))
    with pytest.raises(kael.IndexError, match="index 50 is out of bounds"):
        c(*_args(50))
