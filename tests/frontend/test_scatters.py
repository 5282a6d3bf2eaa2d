"""scatter(_), index_fill(_), index_copy(_), index_put(_), bincount, histc, unique and
unique_consecutive (frontend/scatters.py) against PyTorch: values, dtype and shape,
repeated indices, layouts, NaN; typed errors for bad indices and shapes."""

import math
import warnings

import numpy as np
import pytest
import torch
from kernel_helpers import TORCH_DTYPES
from parity_helpers import close_to_torch
from parity_helpers import torch_pair as pair

import kael
from kael.codegen.cpu.binning import CHUNK
from kael.frontend import index_ops, scatters

RNG = np.random.default_rng(53)


def _base(dtype=kael.float32):
    return pair(RNG.standard_normal((4, 6)), dtype)


@pytest.mark.parametrize("dtype", [kael.float32, kael.float64, kael.int64], ids=str)
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_scatter_of_src_and_value_matches_torch(dtype, dim):
    k, t = _base(dtype)
    shape = (3, 6) if dim == 0 else (4, 4)
    high = 4 if dim == 0 else 6
    ki, ti = pair(RNG.integers(0, high, shape), kael.int64)
    ks, ts = pair(RNG.standard_normal((5, 7)), dtype)  # src larger than index: its corner
    close_to_torch(kael.scatter(k, dim, ki, ks), torch.scatter(t, dim, ti, ts), 0)
    close_to_torch(kael.scatter(k, dim, ki, value=3), torch.scatter(t, dim, ti, value=3), 0)
    close_to_torch(kael.scatter(k, dim, ki, 2.5), torch.scatter(t, dim, ti, 2.5), 0)
    close_to_torch(k.scatter(dim, ki, 2), t.scatter(dim, ti, 2), 0)  # a number as src
    kk, tk = k.clone(), t.clone()
    assert kk.scatter_(dim, ki, ks) is kk
    close_to_torch(kk, tk.scatter_(dim, ti, ts), 0)
    kt, tt = k.transpose(0, 1), t.T  # a transposed self: [6, 4]
    kj, tj = pair(RNG.integers(0, kt.shape[dim], (2, 3)), kael.int64)
    close_to_torch(kt.scatter(dim, kj, value=1), tt.scatter(dim, tj, value=1), 0)


def test_scatter_refuses_bad_indices_and_keeps_self():
    k, _ = _base()
    before = k.clone()
    with pytest.raises(kael.IndexError, match="out of bounds"):
        k.scatter_(0, kael.tensor([[0, 9]]), kael.ones(1, 2))
    assert kael.equal(k, before)  # checked before anything is written
    with pytest.raises(kael.TypeError, match="exactly one of src and value"):
        kael.scatter(k, 0, kael.tensor([[0]]))
    with pytest.raises(kael.TypeError, match="int64"):
        kael.scatter(k, 0, kael.tensor([[0.0]]), value=1)


@pytest.mark.parametrize("reduce", ["add", "multiply"])
@pytest.mark.parametrize("dtype", [kael.float32, kael.int64], ids=str)
def test_scatters_deprecated_reduce_adds_and_multiplies_as_torch(reduce, dtype):
    k, t = pair(RNG.integers(1, 4, (4, 5)), dtype)
    ki, ti = pair(RNG.integers(0, 4, (6, 5)), kael.int64)  # repeated places combine
    ks, ts = pair(RNG.integers(1, 4, (6, 5)), dtype)
    with pytest.warns(UserWarning, match="reduce argument of torch.scatter with Tensor src"):
        got = k.clone().scatter_(0, ki, ks, reduce=reduce)
    with warnings.catch_warnings():  # torch warns once a process
        warnings.simplefilter("ignore")
        want = t.clone().scatter_(0, ti, ts, reduce=reduce)
    close_to_torch(got, want, 0)
    close_to_torch(kael.scatter(k, 0, ki, 2, reduce=reduce), t.scatter(0, ti, 2, reduce=reduce), 0)
    with pytest.raises(kael.ValueError, match="must be either add or multiply, got 'mean'"):
        k.scatter_(0, ki, ks, reduce="mean")


# writes by index whose source (or index) `s` is self itself: kael reads it from a copy
# (KAEL_QUIRKS aliased_operand_copied), torch refuses the overlap
SOURCE_WRITES = {
    "index_copy_": lambda lib, x, s: x.index_copy_(0, lib.tensor([1, 2, 3]), s[:3]),
    "index_copy_ of all self": lambda lib, x, s: x.index_copy_(0, lib.tensor([3, 2, 1, 0]), s),
    "scatter_": lambda lib, x, s: x.scatter_(0, lib.tensor([1, 2, 3]), s[:3]),
    "put_": lambda lib, x, s: x.put_(lib.tensor([1, 2, 3]), s[:3]),
    "put_ accumulate": lambda lib, x, s: x.put_(lib.tensor([1, 2, 3]), s[:3], accumulate=True),
}
INDEX_WRITES = {
    "index_fill_": lambda lib, x, s: x.index_fill_(0, s[:2], 3),
    "scatter_ value": lambda lib, x, s: x.scatter_(0, s[:2], 3),
    "put_": lambda lib, x, s: x.put_(s[:2], lib.tensor([3, 5])),
    "index_copy_": lambda lib, x, s: x.index_copy_(0, s[:2], lib.tensor([3, 5])),
}


@pytest.mark.parametrize(
    ("call", "start"),
    [(c, [0.0, 1.0, 2.0, 3.0]) for c in SOURCE_WRITES.values()]
    + [(c, [1, 0, 0, 0]) for c in INDEX_WRITES.values()],
    ids=[f"source {n}" for n in SOURCE_WRITES] + [f"index {n}" for n in INDEX_WRITES],
)
def test_a_source_or_index_that_is_self_is_read_as_before_the_call(call, start):
    x = kael.tensor(start)
    call(kael, x, x)
    want = kael.tensor(start)
    call(kael, want, want.clone())
    assert x.tolist() == want.tolist() and x.dtype == want.dtype
    t = torch.tensor(start)
    with pytest.raises(RuntimeError, match="refer to a single memory location"):
        call(torch, t, t)


def test_an_index_that_is_self_is_checked_whole_before_a_write():
    x = kael.zeros(8, dtype=kael.int64)
    x[:2] = kael.tensor([1, 9])
    with pytest.raises(kael.IndexError, match="index 9 is out of bounds"):
        x.index_fill_(0, x[:2], 10**9)
    assert x.tolist() == [1, 9, 0, 0, 0, 0, 0, 0]


def test_slices_of_one_storage_that_do_not_meet_write_as_torch():
    k, t = kael.arange(6.0), torch.arange(6.0)
    k[:3].index_copy_(0, kael.tensor([2, 0, 1]), k[3:])
    t[:3].index_copy_(0, torch.tensor([2, 0, 1]), t[3:])
    assert k.tolist() == t.tolist()
    k, t = kael.arange(6.0), torch.arange(6.0)
    k[::2].scatter_(0, kael.tensor([2, 0, 1]), k[1::2])  # interleaved: read from a copy
    t[::2].scatter_(0, torch.tensor([2, 0, 1]), t[1::2].clone())
    assert k.tolist() == t.tolist()


def test_index_fill_takes_negative_indices_from_the_end_once():
    k, t = _base()
    ki, ti = pair([-1, -4, 0], kael.int64)
    close_to_torch(kael.index_fill(k, 0, ki, 1.5), torch.index_fill(t, 0, ti, 1.5), 0)
    with pytest.raises(
        kael.IndexError, match="index -5 is out of bounds for dimension 0 with size 4"
    ):
        kael.index_fill(k, 0, kael.tensor([-5]), 1.5)


@pytest.mark.parametrize("dim", [0, 1])
def test_index_fill_and_index_copy_match_torch(dim):
    k, t = _base()
    ki, ti = pair([3, 0, 3] if dim == 0 else [5, 1], kael.int64)
    close_to_torch(kael.index_fill(k, dim, ki, -2.5), torch.index_fill(t, dim, ti, -2.5), 0)
    close_to_torch(
        k.index_fill(dim, ki, kael.tensor(7.0)), t.index_fill(dim, ti, torch.tensor(7.0)), 0
    )
    shape = [4, 6]
    shape[dim] = ki.numel()
    ks, ts = pair(RNG.standard_normal(shape))
    close_to_torch(kael.index_copy(k, dim, ki, ks), torch.index_copy(t, dim, ti, ts), 0)


@pytest.mark.parametrize("accumulate", [False, True])
def test_index_put_matches_torch(accumulate):
    k, t = _base()
    rows, cols = [0, 3, 0, -1], [1, 2, 1, 5]
    kv, tv = pair([1.0, 2.0, 3.0, 4.0])
    keys = (kael.tensor(rows), kael.tensor(cols))
    tkeys = (torch.tensor(rows), torch.tensor(cols))
    if accumulate:  # a repeated position adds up; torch's plain write keeps an arbitrary one
        close_to_torch(kael.index_put(k, keys, kv, True), torch.index_put(t, tkeys, tv, True), 1e-6)
    else:
        keys, tkeys = (
            (kael.tensor([0, 3]), kael.tensor([1, 2])),
            (torch.tensor([0, 3]), torch.tensor([1, 2])),
        )
        close_to_torch(kael.index_put(k, keys, kv[:2]), torch.index_put(t, tkeys, tv[:2]), 0)
    km, tm = pair([True, False, True, False], kael.bool)
    close_to_torch(
        k.clone().index_put_((km,), kael.tensor(1.5), accumulate),
        t.clone().index_put_((tm,), torch.tensor(1.5), accumulate),
        0,
    )
    kk, tt = k.clone(), t.clone()  # the function form writes in place too
    assert kael.index_put_(kk, (km,), kael.tensor(2.5), accumulate) is kk
    close_to_torch(kk, torch.index_put_(tt, (tm,), torch.tensor(2.5), accumulate), 0)


def test_bincount_and_histc_match_torch():
    kb, tb = pair(RNG.integers(0, 12, 200), kael.int64)
    close_to_torch(kael.bincount(kb), torch.bincount(tb), 0)
    close_to_torch(kael.bincount(kb, minlength=20), torch.bincount(tb, minlength=20), 0)
    kw, tw = pair(RNG.standard_normal(200))
    close_to_torch(kael.bincount(kb, kw), torch.bincount(tb, tw), 1e-5)
    close_to_torch(
        kael.bincount(kael.tensor([], dtype=kael.int64)),
        torch.bincount(torch.tensor([], dtype=torch.int64)),
        0,
    )
    empty, weights = kael.tensor([], dtype=kael.int64), kael.tensor([], dtype=kael.float64)
    t_empty, t_weights = torch.tensor([], dtype=torch.int64), torch.tensor([], dtype=torch.float64)
    close_to_torch(kael.bincount(empty, weights, 3), torch.bincount(t_empty, t_weights, 3), 0)
    kh, th = pair(RNG.standard_normal(5000))
    for args in ((10,), (7, -1.0, 1.0), (4, 0.5, 0.5)):
        close_to_torch(kael.histc(kh, *args), torch.histc(th, *args), 0)
    with pytest.raises(kael.ValueError, match="non-negative"):
        kael.bincount(kael.tensor([1, -1]))
    with pytest.raises(kael.ValueError, match="bins must be > 0"):
        kael.histc(kh, 0)


@pytest.mark.parametrize(
    "size, high", [(CHUNK - 1, 50), (CHUNK + 1, 50), (2 * CHUNK + 3, 3), (1000, 5000)]
)  # several rows of bins, one partial; the last: more bins than values (the scatter path)
@pytest.mark.parametrize("weights", [None, kael.float32, kael.float64, kael.int64], ids=str)
def test_bincount_by_chunks_matches_torch(size, high, weights):
    kb, tb = pair(RNG.integers(0, high, size), kael.int64)
    if weights is None:
        close_to_torch(kael.bincount(kb), torch.bincount(tb), 0)
        return
    kw, tw = pair(RNG.integers(-3, 4, size) if weights is kael.int64 else RNG.random(size), weights)
    tol = 1e-4 if weights is kael.float32 else 1e-12  # per-chunk sums, then their sum
    close_to_torch(kael.bincount(kb, kw), torch.bincount(tb, tw), tol)


@pytest.mark.parametrize("weights", [kael.float16, kael.bfloat16, kael.int32, kael.bool], ids=str)
@pytest.mark.parametrize("size", [6, 100_000])  # the scatter path and the histogram kernel
def test_bincount_sums_other_weight_dtypes_in_float64_as_torch(weights, size):
    kb, tb = pair(RNG.integers(0, 1000 if size > 6 else 4, size), kael.int64)
    kw, tw = pair(RNG.integers(0, 2, size), weights)
    got = kael.bincount(kb, kw)
    assert got.dtype is kael.float64
    close_to_torch(got, torch.bincount(tb, tw), 0)


@pytest.mark.gpu
def test_bincount_of_weights_on_another_device_is_refused():
    values, weights = kael.tensor([0, 1, 1]), kael.ones(3).cuda()
    with pytest.raises(kael.Error, match="cpu and cuda"):
        kael.bincount(values, weights)
    counts = kael.bincount(values.cuda(), weights)
    assert str(counts.device) == "cuda:0" and counts.cpu().tolist() == [1.0, 2.0]


def test_bincount_of_strided_narrow_ints_matches_torch():
    kb, tb = pair(RNG.integers(0, 9, (300, 4)), kael.int16)
    close_to_torch(kael.bincount(kb[:, 1]), torch.bincount(tb[:, 1]), 0)
    close_to_torch(
        kael.bincount(kb[::3, 2], minlength=30), torch.bincount(tb[::3, 2], minlength=30), 0
    )


def test_weighted_bincount_has_the_same_bits_on_any_number_of_threads():
    values, weights = kael.tensor(RNG.integers(0, 7, 3 * CHUNK)), kael.tensor(RNG.random(3 * CHUNK))
    threads = kael.get_num_threads()
    try:
        kael.set_num_threads(1)
        one = kael.bincount(values, weights).numpy()
    finally:
        kael.set_num_threads(threads)
    np.testing.assert_array_equal(kael.bincount(values, weights).numpy(), one)


@pytest.mark.parametrize("inverse", [False, True])
@pytest.mark.parametrize("counts", [False, True])
def test_unique_and_unique_consecutive_match_torch(inverse, counts):
    values = np.array([[2.0, np.nan, 1.0], [np.nan, 2.0, 1.0], [3.0, 3.0, 1.0]])
    k, t = pair(values)
    args = {"return_inverse": inverse, "return_counts": counts}
    close_to_torch(kael.unique(k, **args), torch.unique(t, **args), 0, equal_nan=True)
    ki, ti = pair([1, 1, 2, 2, 3, 1, 1, 2], kael.int64)
    close_to_torch(kael.unique_consecutive(ki, **args), torch.unique_consecutive(ti, **args), 0)
    close_to_torch(ki.unique(**args), ti.unique(**args), 0)
    ke, te = pair(np.zeros(0))
    close_to_torch(kael.unique(ke, **args), torch.unique(te, **args), 0)


INT64_MIN, INT64_MAX = np.iinfo(np.int64).min, np.iinfo(np.int64).max


@pytest.mark.parametrize("dtype", [kael.int64, kael.int32, kael.int16, kael.int8, kael.uint8])
@pytest.mark.parametrize("extra", [0, 1])  # a span at the counting path's limit, and past it
def test_unique_of_integers_counts_within_a_span_and_sorts_past_it(dtype, extra):
    """Integers spanning at most max(DENSE_SPAN, count) values take the counting path (no
    sort); one more and the sort: torch's values, positions and counts either way."""
    limit = scatters.DENSE_SPAN
    top = {kael.int8: 127, kael.uint8: 255, kael.int16: 32767}.get(dtype, limit + extra - 1)
    rng = np.random.default_rng(extra)
    values = np.concatenate([[0, min(top, limit + extra - 1)], rng.integers(0, top, 500)])
    k, t = pair(values.reshape(2, -1), dtype)
    args = {"return_inverse": True, "return_counts": True}
    close_to_torch(kael.unique(k, **args), torch.unique(t, **args), 0)
    close_to_torch(kael.unique(k), torch.unique(t), 0)
    counted = scatters._unique_dense(k.reshape(-1), False, False) is not None
    assert counted == (extra == 0 or dtype in (kael.int8, kael.uint8, kael.int16))


@pytest.mark.parametrize(
    "values",
    [
        [INT64_MIN, INT64_MIN + 3, INT64_MIN, INT64_MIN + 1],  # shifted by -min: no overflow
        [INT64_MAX - 3, INT64_MAX, INT64_MAX],
        [INT64_MIN, INT64_MAX, 0, 5],  # a span past int64: the sort
        [-7, -7, -7],
    ],
)
def test_unique_of_int64_extremes_matches_torch(values):
    k, t = pair(values, kael.int64)
    args = {"return_inverse": True, "return_counts": True}
    close_to_torch(kael.unique(k, **args), torch.unique(t, **args), 0)


def test_unique_counts_a_span_up_to_the_element_count():
    n = scatters.DENSE_SPAN + 10  # more elements than DENSE_SPAN: their count is the limit
    values = np.arange(n)[::-1].copy()
    values[0] = n  # the span n + 1 - 1 = n: still counted
    k, t = pair(values, kael.int64)
    close_to_torch(kael.unique(k, return_inverse=True), torch.unique(t, return_inverse=True), 0)


@pytest.mark.parametrize("inverse", [False, True])
@pytest.mark.parametrize("counts", [False, True])
def test_unique_of_bfloat16_matches_torch(inverse, counts):
    values = [[3.0, -1.5, np.nan, 2.0], [-1.5, 3.0, -7.0, 1e30], [0.0, -7.0, 3.0, -1e30]]
    k, t = pair(values, kael.bfloat16)
    args = {"return_inverse": inverse, "return_counts": counts}
    close_to_torch(kael.unique(k, **args), torch.unique(t, **args), 0, equal_nan=True)


@pytest.mark.parametrize("name", ["unique", "unique_consecutive"])
@pytest.mark.parametrize("dim", [0, 1, -1, 2])
@pytest.mark.parametrize("dtype", [kael.float32, kael.int64, kael.bool, kael.bfloat16], ids=str)
def test_unique_along_a_dim_matches_torch(name, dim, dtype):
    values = RNG.integers(0, 2, (6, 3, 4))
    values[3] = values[0]  # equal slices, apart and (below) adjacent
    values[2] = values[1]
    k, t = pair(values, dtype)
    fn, ref = getattr(kael, name), getattr(torch, name)
    args = {"return_inverse": True, "return_counts": True, "dim": dim}
    close_to_torch(fn(k, **args), ref(t, **args), 0)
    close_to_torch(fn(k.mT, dim=dim), ref(t.mT, dim=dim), 0)
    if dim == 0:
        ke, te = pair(np.zeros((0, 3)), dtype)
        close_to_torch(fn(ke, **args), ref(te, **args), 0)


def test_unique_along_a_dim_rejects_what_torch_rejects():
    with pytest.raises(kael.ValueError, match="0 sized dimensions, and they aren't selected"):
        kael.unique(kael.zeros(3, 0), dim=0)
    with pytest.raises(kael.IndexError):
        kael.unique(kael.zeros(3, 2), dim=2)
    with pytest.raises(kael.IndexError, match="0-d"):
        kael.unique_consecutive(kael.tensor(1.0), dim=0)


@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("dtype", [kael.float32, kael.float64, kael.int64], ids=str)
def test_scatter_reduce_matches_torch(reduce, include_self, dtype):
    k, t = pair(RNG.integers(-5, 6, (4, 6)), dtype)
    ki, ti = pair(RNG.integers(0, 4, (5, 6)), kael.int64)
    ks, ts = pair(RNG.integers(-5, 6, (5, 6)), dtype)
    args = (reduce,)
    kw = {"include_self": include_self}
    close_to_torch(
        kael.scatter_reduce(k, 0, ki, ks, *args, **kw),
        torch.scatter_reduce(t, 0, ti, ts, *args, **kw),
        1e-6,
    )
    kk, tk = k.clone(), t.clone()
    assert kk.scatter_reduce_(1, ki[:4, :4], ks, *args, **kw) is kk
    close_to_torch(kk, tk.scatter_reduce_(1, ti[:4, :4], ts, *args, **kw), 1e-6)
    with pytest.raises(kael.ValueError, match="no larger than"):
        kk.scatter_reduce_(1, ki[:, :4], ks, *args, **kw)  # 5 index rows for 4 of self


@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("dtype", [kael.float32, kael.float16, kael.int64, kael.uint8], ids=str)
def test_a_long_scatter_reduce_into_a_short_table_splits_and_matches_torch(
    reduce, include_self, dtype
):
    """A 1-d source of 2 * SPLIT_ELEMENTS + 5 into 1000 places: private tables per thread,
    folded in order. Small integers keep every reduction exact, so torch's values match
    to the bit; a bad index anywhere leaves self as it was."""
    size = 2 * index_ops.SPLIT_ELEMENTS + 5
    values = RNG.choice([1, -1], size) if reduce == "prod" else RNG.integers(-5, 6, size)
    if reduce == "prod":
        values[RNG.integers(0, size, 6)] = 2
    if dtype is kael.uint8:
        values = np.abs(values)
    ks, ts = pair(values, dtype)
    ki, ti = pair(RNG.integers(0, 1000, size), kael.int64)
    k, t = pair(RNG.integers(0, 6, 1000), dtype)
    kw = {"include_self": include_self}
    threads = kael.get_num_threads()
    try:
        kael.set_num_threads(2)
        assert index_ops._split_parts((size,), 1000, k.device) == 2
        got = kael.scatter_reduce(k, 0, ki, ks, reduce, **kw)
        bad = ki.clone()
        bad[size // 2] = -1
        with pytest.raises(kael.IndexError, match="index -1 is out of bounds"):
            k.scatter_reduce_(0, bad, ks, reduce, **kw)
    finally:
        kael.set_num_threads(threads)
    close_to_torch(got, torch.scatter_reduce(t, 0, ti, ts, reduce, **kw), 0)
    close_to_torch(k, t, 0)


LONG = 2 * index_ops.SPLIT_ELEMENTS + 5  # a 1-d source that splits on 2 threads
LONG_LAYOUTS = ["contiguous", "source stride 2", "index stride 2"]


def _long_scatter_inputs(reduce, dtype, layout):
    """A LONG float source, its places in [0, 1000) and a self of 1000, as kael and torch
    pairs (the same for every layout); the source or the index a stride-2 view where
    `layout` says."""
    rng = np.random.default_rng(59)
    values = rng.standard_normal(LONG)
    if reduce == "prod":
        values = 1 + values / 64
    places = rng.integers(0, 1000, LONG)
    (ks, ts), (ki, ti) = pair(values, dtype), pair(places, kael.int64)
    if layout == "source stride 2":
        (ks, ts) = pair(np.repeat(values, 2), dtype)
        ks, ts = ks[::2], ts[::2]
    if layout == "index stride 2":
        (ki, ti) = pair(np.repeat(places, 2), kael.int64)
        ki, ti = ki[::2], ti[::2]
    return (ks, ts), (ki, ti), pair(rng.standard_normal(1000), dtype)


def _on_threads(n: int, fn, *args, **kwargs):
    """fn(*args, **kwargs) with kael on `n` threads."""
    threads = kael.get_num_threads()
    kael.set_num_threads(n)
    try:
        return fn(*args, **kwargs)
    finally:
        kael.set_num_threads(threads)


@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("dtype", [kael.float32, kael.float64], ids=str)
@pytest.mark.parametrize("layout", LONG_LAYOUTS)
def test_a_long_scatter_reduce_on_one_thread_gives_torchs_bits_in_any_layout(reduce, dtype, layout):
    """One thread walks the line in index order, as torch does: random floats round alike."""
    (ks, ts), (ki, ti), (k, t) = _long_scatter_inputs(reduce, dtype, layout)
    assert _on_threads(1, index_ops._split_parts, (LONG,), 1000, k.device) == 0
    got = _on_threads(1, kael.scatter_reduce, k, 0, ki, ks, reduce)
    close_to_torch(got, torch.scatter_reduce(t, 0, ti, ts, reduce), 0)


@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("dtype", [kael.float32, kael.float64], ids=str)
def test_a_long_split_scatter_reduce_has_one_set_of_bits_in_any_layout(reduce, dtype):
    """Two threads: private tables folded in order, so float sums and products round
    unlike torch's (within its tolerance), but alike from every layout of the inputs."""
    results = []
    for layout in LONG_LAYOUTS:
        (ks, ts), (ki, ti), (k, t) = _long_scatter_inputs(reduce, dtype, layout)
        assert _on_threads(2, index_ops._split_parts, (LONG,), 1000, k.device) == 2
        got = _on_threads(2, kael.scatter_reduce, k, 0, ki, ks, reduce)
        close_to_torch(got, torch.scatter_reduce(t, 0, ti, ts, reduce), 1e-5)
        results.append(got.numpy())
    for other in results[1:]:
        assert np.array_equal(results[0].view(np.uint8), other.view(np.uint8))


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("value", [1000, -1001, 1 << 62, -(1 << 63)], ids=str)
@pytest.mark.parametrize("where", [0, LONG // 2, LONG - 20, LONG - 1], ids=str)
def test_a_long_scatter_reduce_names_a_far_out_index_anywhere_and_writes_nothing(
    threads, value, where
):
    """However far out (its prefetch aims far outside the table), at a chunk's start or
    end or one prefetch distance before the source's end: torch's error, self unchanged."""
    (ks, _), (ki, _), (k, t) = _long_scatter_inputs("sum", kael.float32, "contiguous")
    ki[where] = value
    with pytest.raises(kael.IndexError, match=f"index {value} is out of bounds for dimension 0"):
        _on_threads(threads, k.scatter_reduce_, 0, ki, ks, "sum")
    close_to_torch(k, t, 0)


@pytest.mark.parametrize("reduce", ["sum", "prod", "mean"])
@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("dtype", [kael.float16, kael.bfloat16], ids=str)
def test_half_scatter_reduce_accumulates_in_float32_and_rounds_once(reduce, include_self, dtype):
    """3000 values into 7 places: a float16 (bfloat16) running sum would stall at 2048 (256)
    times its step, so only float32 partials rounded once give torch's bits; a mean divides
    that sum, rounded, by a count rounded to self's dtype, as torch does."""
    values = RNG.standard_normal(3000) * 4
    ks, ts = pair(values / 64 + 1 if reduce == "prod" else values, dtype)
    ki, ti = pair(RNG.integers(0, 7, 3000), kael.int64)
    k, t = pair(RNG.standard_normal(7), dtype)
    kw = {"include_self": include_self}
    close_to_torch(
        kael.scatter_reduce(k, 0, ki, ks, reduce, **kw),
        torch.scatter_reduce(t, 0, ti, ts, reduce, **kw),
        0,
    )


@pytest.mark.parametrize("dtype", [kael.float16, kael.bfloat16], ids=str)
def test_half_scatter_add_rounds_once_where_index_add_rounds_each_step(dtype):
    """torch's scatter_add sums half in float32; its index_add and index_put_ round every
    add to the dtype (2.0 added 3000 times stalls at 4096 in float16, 512 in bfloat16)."""
    ks, ts = pair(np.full(3000, 2.0), dtype)
    ki, ti = pair(np.zeros(3000, np.int64), kael.int64)
    k, t = pair([0.0], dtype)
    close_to_torch(k.clone().scatter_add_(0, ki, ks), t.clone().scatter_add_(0, ti, ts), 0)
    close_to_torch(k.clone().index_add_(0, ki, ks), t.clone().index_add_(0, ti, ts), 0)
    close_to_torch(
        k.clone().index_put_((ki,), ks, accumulate=True),
        t.clone().index_put_((ti,), ts, accumulate=True),
        0,
    )
    assert float(k.clone().scatter_add_(0, ki, ks)) > 4096 >= float(k.clone().index_add_(0, ki, ks))


@pytest.mark.parametrize("dtype", [kael.float16, kael.bfloat16], ids=str)
def test_a_long_half_index_add_rounds_in_index_order_on_every_thread_count(dtype):
    """A source long enough for the per-thread split (4 * SPLIT_ELEMENTS into one place)
    still adds in index order: private tables would reach the stall point each and sum."""
    n = 4 * index_ops.SPLIT_ELEMENTS
    ks, ts = pair(np.full(n, 2.0), dtype)
    ki, ti = pair(np.zeros(n, np.int64), kael.int64)
    k, t = pair([0.0], dtype)
    close_to_torch(k.clone().index_add_(0, ki, ks), t.clone().index_add_(0, ti, ts), 0)
    close_to_torch(
        k.clone().index_put_((ki,), ks, accumulate=True),
        t.clone().index_put_((ti,), ts, accumulate=True),
        0,
    )


def test_index_put_accumulate_checks_each_key_against_its_own_dim():
    """[0, 5] into [3, 4] is out of bounds in dim 1, though its flat offset 5 is inside."""
    k = kael.zeros(3, 4)
    for keys, dim in (((0,), (5,)), 1), (((0,), (-5,)), 1), (((3,), (0,)), 0):
        with pytest.raises(kael.IndexError, match=f"out of bounds for dimension {dim} with size"):
            k.index_put_(tuple(kael.tensor(c) for c in keys), kael.tensor(1.0), accumulate=True)
    assert k.eq(0).all()
    with pytest.raises(kael.TypeError, match="value's dtype to match"):
        k.index_put_((kael.tensor([0]),), kael.tensor([1]), accumulate=True)
    with pytest.raises(kael.TypeError, match="got float64 for the value and float32"):
        mask = kael.tensor([True, False, True])  # no masked_fill exemption when adding
        k.index_put_((mask,), kael.tensor([1.0], dtype=kael.float64), accumulate=True)
    with pytest.raises(kael.Error, match="clone"):
        kael.zeros(4).expand(3, 4).index_put_((kael.tensor([0]),), kael.tensor(1.0), True)


def test_index_put_accumulate_splits_over_threads_without_a_race():
    """Rows of 3 on 4 threads: fewer lines than threads, so the sum splits into private
    tables folded into self; each element of self is one element of the fold."""
    n, count = 5000, 300_000
    ki, ti = pair(RNG.integers(0, n, count), kael.int64)
    kv, tv = pair(RNG.integers(-4, 5, (count, 3)), kael.float32)  # exact sums: any order
    threads = kael.get_num_threads()
    kael.set_num_threads(4)
    try:
        for _ in range(3):
            got = kael.zeros(n, 3).index_put_((ki,), kv, accumulate=True)
            close_to_torch(got, torch.zeros(n, 3).index_put_((ti,), tv, accumulate=True), 0)
    finally:
        kael.set_num_threads(threads)


@pytest.mark.parametrize(
    "make, keys, stride",
    [
        (lambda: kael.zeros(6, 4)[:, 1], 1, 4),  # a column: its own stride, not 1
        (lambda: kael.zeros(3, 4, 5)[:, :, 2], 2, 5),  # two keyed dims merged
        (lambda: kael.zeros(3, 4, 5), 1, 20),  # one keyed dim over rows of 20
    ],
)
def test_index_put_accumulate_scatters_into_self_and_nothing_else(make, keys, stride):
    """The destination is self with its keyed dims merged into one: no element outside
    self is read or written, and no two positions are one element."""
    from kael.frontend import indexing

    x = make()
    dst, _, _ = indexing.accumulation(x, tuple(kael.tensor([0]) for _ in range(keys)), 1.0)
    assert dst.strides[0] == stride and dst.shape[0] == math.prod(x.shape[:keys])
    assert dst.shape[1:] == x.shape[keys:] and dst.strides[1:] == x._impl.strides[keys:]


@pytest.mark.parametrize("layout", ["transposed", "sliced"])
def test_index_put_accumulate_writes_through_a_strided_self(layout):
    k, t = pair(RNG.standard_normal((6, 5)))
    kv, tv = (k.T, t.T) if layout == "transposed" else (k[1::2, 1:], t[1::2, 1:])
    keys = ([0, 2, 0, -1], [1, 2, 1, 0])
    ks, ts = pair([1.0, 2.0, 3.0, 4.0])
    kv.index_put_(tuple(kael.tensor(c) for c in keys), ks, accumulate=True)
    tv.index_put_(tuple(torch.tensor(c) for c in keys), ts, accumulate=True)
    close_to_torch(k, t, 1e-6)  # the base: written through the view, nowhere else
    kr, tr = pair(RNG.standard_normal((3, kv.shape[1])))
    kv.index_put_((kael.tensor([2, 0, 2]),), kr, accumulate=True)  # rows: the rest dim spread
    tv.index_put_((torch.tensor([2, 0, 2]),), tr, accumulate=True)
    close_to_torch(k, t, 1e-6)


@pytest.mark.parametrize("dtype", [kael.int8, kael.uint8], ids=str)
@pytest.mark.parametrize("n", [130, 255, 256, 300])
def test_an_integer_scatter_mean_counts_in_self_dtype(dtype, n):
    """n ones into one place of int8 (uint8): the sum and the count wrap alike (256 counts as
    0, which divides by 1; 130 as -126 in int8), as torch's do."""
    ks, ts = pair(np.ones(n), dtype)
    ki, ti = pair(np.zeros(n, np.int64), kael.int64)
    for include_self in (True, False):
        k, t = pair([3], dtype)
        close_to_torch(
            kael.scatter_reduce(k, 0, ki, ks, "mean", include_self=include_self),
            torch.scatter_reduce(t, 0, ti, ts, "mean", include_self=include_self),
            0,
        )


def test_scatter_reduce_mean_refuses_bool_self():
    k = kael.tensor([True, False])
    with pytest.raises(kael.TypeError, match="reduce='mean' is not implemented for bool"):
        k.scatter_reduce_(0, kael.tensor([0, 1]), kael.tensor([True, True]), "mean")
    assert k.tolist() == [True, False]
    got = kael.scatter_reduce(k, 0, kael.tensor([0, 0]), kael.tensor([False, True]), "amax")
    assert got.tolist() == [True, False]


def test_scatter_reduce_propagates_nan_and_refuses_bad_reduce():
    k, t = pair([1.0, 2.0, 3.0])
    ki, ti = pair([0, 0, 2], kael.int64)
    ks, ts = pair([np.nan, 5.0, -1.0])
    for reduce in ("amax", "amin", "sum"):
        close_to_torch(
            kael.scatter_reduce(k, 0, ki, ks, reduce),
            torch.scatter_reduce(t, 0, ti, ts, reduce),
            0,
            equal_nan=True,
        )
    with pytest.raises(kael.ValueError, match="reduce argument"):
        kael.scatter_reduce(k, 0, ki, ks, "max")


NAN, INF = math.nan, math.inf


@pytest.mark.parametrize(
    "name, data, args, kwargs",
    [
        ("histc", [1.0, NAN], (3,), {}),
        ("histc", [1.0, INF], (3,), {}),
        ("histc", [-INF, 1.0], (3,), {}),
        ("histc", [1.0, 2.0], (3, 0, INF), {}),
        ("histc", [1.0, NAN, INF, -INF, 2.0], (3, 0, 3), {}),  # a finite range: not counted
        ("histogram", [1.0, INF], (3,), {}),
        ("histogram", [1.0, NAN], (3,), {}),
        ("histogram", [1.0, 2.0], (3,), {"range": (0.0, INF)}),
        ("histogram", [1.0, NAN, INF, 2.0], (3,), {"range": (0.0, 3.0)}),
    ],
)
def test_histograms_refuse_a_non_finite_range_as_torch(name, data, args, kwargs):
    kx, tx = pair(data)
    try:
        want = getattr(torch, name)(tx, *args, **kwargs)
    except RuntimeError as e:
        with pytest.raises(kael.ValueError) as got:
            getattr(kael, name)(kx, *args, **kwargs)
        assert str(got.value) == str(e).replace("-nan", "nan")
        return
    close_to_torch(getattr(kael, name)(kx, *args, **kwargs), want, 0)


def test_histogram_of_no_data_spans_zero_to_one():
    got, want = kael.histogram(kael.empty(0), bins=4), torch.histogram(torch.empty(0), bins=4)
    close_to_torch(got.bin_edges, want.bin_edges, 0)
    close_to_torch(got.hist, want.hist, 0)


@pytest.mark.parametrize("density", [False, True])
def test_histogram_matches_torch(density):
    kx, tx = pair(RNG.standard_normal(5000))
    for args, kwargs in (
        ((50,), {}),
        ((7,), {"range": (-1.0, 1.5)}),
        ((5,), {"range": (0.5, 0.5)}),
    ):
        got = kael.histogram(kx, *args, density=density, **kwargs)
        want = torch.histogram(tx, *args, density=density, **kwargs)
        close_to_torch(got.hist, want.hist, 1e-6 if density else 0)  # float32 division
        close_to_torch(got.bin_edges, want.bin_edges, 0)
    ke, te = pair([-3.0, -1.0, 0.5, 2.0, 4.0])
    kw, tw = pair(RNG.uniform(0, 2, 5000))
    got = kael.histogram(kx, ke, weight=kw, density=density)
    want = torch.histogram(tx, te, weight=tw, density=density)
    close_to_torch(got.hist, want.hist, 1e-5)  # float32 sums of thousands of weights
    with pytest.raises(kael.TypeError, match="floating point"):
        kael.histogram(kael.arange(4), 2)


# ---- put, masked_scatter, select/slice/diagonal_scatter, index_reduce -----------------------

NEW_DTYPES = [kael.float32, kael.float64, kael.int64, kael.bool, kael.float16]
VIEWS = {
    "contiguous": lambda x: x,
    "transposed": lambda x: x.transpose(0, -1),
    "sliced": lambda x: x[..., ::2],
}


def _viewed(shape, dtype, layout, low=-4, high=5):
    """(kael, torch) equal tensors of `shape` in `layout` (the same view of both)."""
    if len(shape) < 2:  # one dim: sliced is the only other layout, transposed is itself
        layout = "contiguous" if layout == "transposed" or not shape else layout
    base = {"contiguous": shape, "transposed": shape[::-1], "sliced": (*shape[:-1], 2 * shape[-1])}
    values = RNG.integers(
        0 if dtype is kael.bool else low, 2 if dtype is kael.bool else high, base[layout]
    )
    k, t = pair(values, dtype)
    return VIEWS[layout](k), VIEWS[layout](t)


@pytest.mark.parametrize("layout", list(VIEWS))
@pytest.mark.parametrize("dtype", NEW_DTYPES, ids=str)
@pytest.mark.parametrize("accumulate", [False, True])
def test_put_writes_self_as_1d_in_logical_order_and_accumulate_sums_repeats(
    layout, dtype, accumulate
):
    k, t = _viewed((3, 4), dtype, layout)
    picks = [0, -1, 5, 11, -12, 7] if not accumulate else [0, -1, 5, 0, 11, 5, 5]  # repeats sum
    ki, ti = pair(picks, kael.int64)
    ks, ts = _viewed((1, len(picks)), dtype, "contiguous")
    close_to_torch(kael.put(k, ki, ks[0], accumulate), torch.put(t, ti, ts[0], accumulate), 0)
    close_to_torch(
        k.put(ki, ks[0], accumulate=accumulate), t.put(ti, ts[0], accumulate=accumulate), 0
    )
    assert k.put_(ki, ks[0], accumulate) is k  # in place, through the view
    close_to_torch(k, t.put_(ti, ts[0], accumulate), 0)


@pytest.mark.parametrize("dtype", [kael.float16, kael.bfloat16], ids=str)
def test_put_accumulate_of_half_rounds_every_step_as_torch(dtype):
    k, t = pair([0.0, 0.0], dtype)
    ki, ti = pair(np.zeros(3000, np.int64), kael.int64)
    ks, ts = pair(np.full(3000, 2.0), dtype)
    close_to_torch(k.put(ki, ks, accumulate=True), t.put(ti, ts, accumulate=True), 0)


@pytest.mark.parametrize(
    "shape, picks, values",
    [
        ((), [0, -1], [2.0, 3.0]),
        ((2, 0), [], []),
        ((0,), [], []),
        ((3,), [[1], [2]], [[4.0], [5.0]]),
    ],
    ids=["0d-self", "empty-self", "empty-both", "2d-index"],
)
def test_put_of_0d_empty_and_shaped_operands_matches_torch(shape, picks, values):
    k, t = pair(np.arange(math.prod(shape), dtype=np.float64).reshape(shape))
    ki, ti = pair(np.array(picks, dtype=np.int64), kael.int64)
    ks, ts = pair(np.array(values, dtype=np.float64))
    close_to_torch(kael.put(k, ki, ks), torch.put(t, ti, ts), 0)


@pytest.mark.parametrize(
    "call, error, message",
    [
        (
            lambda x: x.put_(kael.tensor([0, 6]), kael.ones(2)),
            kael.IndexError,
            "index 6 is out of range for a tensor of 6 elements",
        ),
        (
            lambda x: x.put_(kael.tensor([-7]), kael.ones(1), True),
            kael.IndexError,
            "index -7 is out of range for a tensor of 6",
        ),
        (
            lambda x: x.put_(kael.tensor([0.0]), kael.ones(1)),
            kael.TypeError,
            "long tensor for index, but got float32",
        ),
        (
            lambda x: x.put_(kael.tensor([0], dtype=kael.int32), kael.ones(1)),
            kael.TypeError,
            "but got int32",
        ),
        (
            lambda x: x.put_(kael.tensor([0]), kael.ones(1, dtype=kael.int64)),
            kael.TypeError,
            "self.dtype = float32 and source.dtype = int64",
        ),
        (
            lambda x: x.put_(kael.tensor([0, 1]), kael.ones(3)),
            kael.ValueError,
            r"source.numel\(\) = 3, index.numel\(\) = 2",
        ),
        (
            lambda x: kael.put(kael.ones(0), kael.tensor([0]), kael.ones(1)),
            kael.IndexError,
            "put 1 elements into an empty tensor",
        ),
    ],
    ids=[
        "past-end",
        "before-start",
        "float-index",
        "int32-index",
        "source-dtype",
        "count",
        "empty-self",
    ],
)
def test_put_refuses_bad_inputs_and_keeps_self(call, error, message):
    x = kael.arange(6.0).reshape(2, 3)
    with pytest.raises(error, match=message):
        call(x)
    assert x.tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]


@pytest.mark.parametrize("layout", list(VIEWS))
@pytest.mark.parametrize("dtype", NEW_DTYPES, ids=str)
def test_masked_scatter_fills_the_masked_positions_with_source_in_order(layout, dtype):
    k, t = _viewed((3, 4), dtype, layout)
    km, tm = pair(RNG.integers(0, 2, (3, 4)), kael.bool)
    ks, ts = _viewed((5, 3), dtype, "transposed")  # 15 values in logical order: enough
    close_to_torch(kael.masked_scatter(k, km, ks), torch.masked_scatter(t, tm, ts), 0)
    close_to_torch(k.masked_scatter(km[0], ks), t.masked_scatter(tm[0], ts), 0)  # mask broadcast
    assert k.masked_scatter_(km, ks) is k
    close_to_torch(k, t.masked_scatter_(tm, ts), 0)


@pytest.mark.parametrize(
    "shape, mask_shape",
    [((), ()), ((4,), (3, 4)), ((0, 3), (0, 3)), ((2, 3), (2, 1))],
    ids=["0d", "input-broadcast", "empty", "mask-broadcast"],
)
def test_masked_scatter_broadcasts_input_and_mask_as_torch(shape, mask_shape):
    k, t = pair(RNG.standard_normal(shape))
    km, tm = pair(RNG.integers(0, 2, mask_shape), kael.bool)
    ks, ts = pair(RNG.standard_normal(12))
    close_to_torch(kael.masked_scatter(k, km, ks), torch.masked_scatter(t, tm, ts), 0)


@pytest.mark.parametrize(
    "call, error, message",
    [
        (
            lambda x: x.masked_scatter_(kael.ones(2, 3, dtype=kael.bool), kael.ones(5)),
            kael.ValueError,
            r"source \(5\) < number of ones in mask \(6\)",
        ),
        (
            lambda x: x.masked_scatter_(kael.ones(2, 3), kael.ones(6)),
            kael.TypeError,
            "boolean masks, but got mask with dtype float32",
        ),
        (
            lambda x: x.masked_scatter_(kael.ones(2, 3, dtype=kael.uint8), kael.ones(6)),
            kael.TypeError,
            "dtype uint8",
        ),
        (
            lambda x: x.masked_scatter_(
                kael.ones(2, 3, dtype=kael.bool), kael.ones(6, dtype=kael.float64)
            ),
            kael.TypeError,
            "float32 and float64",
        ),
        (
            lambda x: x.masked_scatter_(kael.ones(4, 2, 3, dtype=kael.bool), kael.ones(30)),
            kael.ValueError,
            r"mask of shape \[4, 2, 3\] does not broadcast to self's shape \[2, 3\]",
        ),
        (
            lambda x: kael.masked_scatter(x, kael.ones(2, 2, dtype=kael.bool), kael.ones(6)),
            kael.ValueError,
            "2",
        ),
    ],
    ids=[
        "short-source",
        "float-mask",
        "uint8-mask",
        "source-dtype",
        "mask-too-big",
        "no-broadcast",
    ],
)
def test_masked_scatter_refuses_bad_inputs_and_keeps_self(call, error, message):
    x = kael.zeros(2, 3)
    with pytest.raises(error, match=message):
        call(x)
    assert x.eq(0).all()


EMBEDDINGS = [
    ("select_scatter", (4, 3), (3,), (0, -1)),
    ("select_scatter", (4, 3), (4,), (1, 2)),
    ("select_scatter", (5,), (), (0, 1)),
    ("slice_scatter", (4, 3), (2, 3), (0, 1, 4, 2)),
    ("slice_scatter", (4, 3), (4, 3), ()),
    ("slice_scatter", (4, 3), (4, 1), (1, -1)),
    ("slice_scatter", (4, 3), (4, 2), (1, 1, 100)),
    ("slice_scatter", (4, 3), (4, 3), (1, -10)),
    ("slice_scatter", (4, 3), (4, 0), (1, 2, 1)),
    ("diagonal_scatter", (3, 4), (3,), ()),
    ("diagonal_scatter", (3, 4), (2,), (-1,)),
    ("diagonal_scatter", (3, 4), (2,), (2,)),
    ("diagonal_scatter", (3, 4), (0,), (5,)),
    ("diagonal_scatter", (2, 3, 3), (3, 2), (0, 0, 2)),
]


@pytest.mark.parametrize("layout", list(VIEWS))
@pytest.mark.parametrize("dtype", NEW_DTYPES, ids=str)
@pytest.mark.parametrize("name, shape, src_shape, args", EMBEDDINGS, ids=lambda v: str(v))
def test_the_scatter_embeddings_copy_input_with_src_in_place(
    name, shape, src_shape, args, dtype, layout
):
    k, t = _viewed(shape, dtype, layout)
    ks, ts = pair(
        RNG.integers(0 if dtype is kael.bool else -9, 2 if dtype is kael.bool else 9, src_shape),
        dtype,
    )
    before = k.clone()
    close_to_torch(getattr(kael, name)(k, ks, *args), getattr(torch, name)(t, ts, *args), 0)
    close_to_torch(getattr(k, name)(ks, *args), getattr(t, name)(ts, *args), 0)
    assert kael.equal(k, before)  # a copy: input untouched


def test_the_scatter_embeddings_convert_src_to_input_dtype_as_torch():
    k, t = pair(np.zeros((3, 3)))
    ks, ts = pair([1, 2, 3], kael.int64)
    close_to_torch(kael.diagonal_scatter(k, ks), torch.diagonal_scatter(t, ts), 0)
    close_to_torch(kael.select_scatter(k, ks, 0, 1), torch.select_scatter(t, ts, 0, 1), 0)


@pytest.mark.parametrize(
    "call, error, message",
    [
        (lambda x: kael.select_scatter(x, kael.ones(2), 0, 0), kael.ValueError, r"src size = \[2\], slice size = \[3\]"),
        (lambda x: kael.select_scatter(x, kael.ones(1), 0, 0), kael.ValueError, r"src size = \[1\], slice size = \[3\]"),
        (lambda x: kael.select_scatter(x, kael.ones(3), 0, 2), kael.IndexError, "index 2 out of range for tensor of size"),
        (lambda x: kael.select_scatter(x, kael.ones(3), 0, -3), kael.IndexError, "index -3 out of range"),
        (lambda x: kael.select_scatter(x, kael.ones(3), 2, 0), kael.IndexError, "but got 2"),
        (lambda x: kael.select_scatter(kael.tensor(1.0), kael.tensor(2.0), 0, 0), kael.IndexError, "0-dim"),
        (lambda x: kael.select_scatter(x, 2.0, 0, 0), kael.TypeError, "src"),
        (lambda x: kael.slice_scatter(x, kael.ones(2, 2), 1, 0), kael.ValueError, r"src size = \[2, 2\], slice size = \[2, 3\]"),
        (lambda x: kael.slice_scatter(x, kael.ones(2, 3), 1, 0, 3, 0), kael.ValueError, "step must be positive, got 0"),
        (lambda x: kael.slice_scatter(x, kael.ones(2, 3), 1, 0, 3, -1), kael.ValueError, "got -1"),
        (lambda x: kael.slice_scatter(kael.tensor(1.0), kael.tensor(2.0)), kael.IndexError, "0-dim"),
        (lambda x: kael.slice_scatter(x, kael.ones(2, 3), 2), kael.IndexError, "but got 2"),
        (lambda x: kael.diagonal_scatter(x, kael.ones(3), 1), kael.ValueError, r"src size = \[3\], slice size = \[2\]"),
        (lambda x: kael.diagonal_scatter(x, kael.ones(2), 0, 1, 1), kael.ValueError, "cannot be identical 1, 1"),
        (lambda x: kael.diagonal_scatter(kael.zeros(3), kael.ones(3)), kael.IndexError, "but got 1"),
    ],
    ids=[
        "select-shape", "select-no-broadcast", "select-index", "select-negative", "select-dim",
        "select-0d", "select-number", "slice-shape", "slice-step-0", "slice-step-negative",
        "slice-0d", "slice-dim", "diagonal-shape", "diagonal-same-dims", "diagonal-1d",
    ],
)  # fmt: skip
def test_the_scatter_embeddings_refuse_what_torch_refuses(call, error, message):
    x = kael.zeros(2, 3)
    with pytest.raises(error, match=message):
        call(x)
    assert x.eq(0).all()


@pytest.mark.parametrize("layout", list(VIEWS))
@pytest.mark.parametrize("dtype", [kael.float32, kael.float64, kael.int64, kael.float16], ids=str)
@pytest.mark.parametrize("reduce", ["prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("dim", [0, 1])
def test_index_reduce_matches_torch_with_duplicate_indices(
    layout, dtype, reduce, include_self, dim
):
    k, t = _viewed((4, 6), dtype, layout)
    picks = [3, 0, 3, 1, 3] if dim == 0 else [5, 0, 5, 5, 2, 0, 1]  # one slice never named
    ki, ti = pair(picks, kael.int64)
    shape = [4, 6]
    shape[dim] = len(picks)
    ks, ts = _viewed(tuple(shape), dtype, "contiguous")
    kw = {"include_self": include_self}
    close_to_torch(
        kael.index_reduce(k, dim, ki, ks, reduce, **kw),
        torch.index_reduce(t, dim, ti, ts, reduce, **kw),
        1e-6,
    )
    assert k.index_reduce_(dim, ki.int(), ks, reduce, **kw) is k  # int32 index too
    close_to_torch(k, t.index_reduce_(dim, ti.int(), ts, reduce, **kw), 1e-6)


@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize(
    "self_values, picks, source",
    [(3.0, 0, 5.0), ([2.0, 7.0], [], []), ([[1.0, 2.0]], [0, 0], [[np.nan, 1.0], [3.0, -np.inf]])],
    ids=["0d", "empty-index", "nan"],
)
@pytest.mark.parametrize("reduce", ["prod", "mean", "amax", "amin"])
def test_index_reduce_of_0d_empty_and_nan_matches_torch(
    self_values, picks, source, reduce, include_self
):
    k, t = pair(self_values)
    ki, ti = pair(np.array(picks, dtype=np.int64), kael.int64)
    ks, ts = pair(np.array(source, dtype=np.float64))
    kw = {"include_self": include_self}
    close_to_torch(
        kael.index_reduce(k, 0, ki, ks, reduce, **kw),
        torch.index_reduce(t, 0, ti, ts, reduce, **kw),
        0,
        equal_nan=True,
    )


@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("shape", [(1,), (1, 2)], ids=["1d", "2d"])
@pytest.mark.parametrize("reduce", ["mean", "prod"])
@pytest.mark.parametrize("dtype", [kael.float16, kael.bfloat16], ids=str)
def test_half_index_reduce_rounds_every_step_as_torch_loop(dtype, reduce, shape, include_self):
    """3000 values into one slice: torch's loop rounds every product and sum in the dtype
    (a float16 sum of 2.0 stalls at 4096); a 1-d self counts its mean step by step too
    (stalling at 2048), a wider one counts whole slices (3000, rounded once)."""
    ki, ti = pair(np.zeros(3000, np.int64), kael.int64)
    ks, ts = pair(np.full((3000, *shape[1:]), 1.001 if reduce == "prod" else 2.0), dtype)
    k, t = pair(np.ones(shape), dtype)
    kw = {"include_self": include_self}
    close_to_torch(
        kael.index_reduce(k, 0, ki, ks, reduce, **kw),
        torch.index_reduce(t, 0, ti, ts, reduce, **kw),
        0,
    )


@pytest.mark.parametrize("include_self", [True, False])
def test_integer_index_reduce_mean_rounds_down_as_torch(include_self):
    k, t = pair([-1, 2, 3], kael.int64)
    ki, ti = pair([0, 0, 1], kael.int64)
    ks, ts = pair([-4, 0, 4], kael.int64)
    kw = {"include_self": include_self}
    close_to_torch(
        kael.index_reduce(k, 0, ki, ks, "mean", **kw),
        torch.index_reduce(t, 0, ti, ts, "mean", **kw),
        0,
    )


@pytest.mark.parametrize(
    "call, error, message",
    [
        (lambda x, i, s: x.index_reduce_(0, kael.tensor([0, 3, 0]), s, "prod"), kael.IndexError, "index 3 is out of bounds for dimension 0 with size 3"),
        (lambda x, i, s: x.index_reduce_(0, kael.tensor([0, -1, 0]), s, "amax", include_self=False), kael.IndexError, "index -1 is out of bounds"),
        (lambda x, i, s: x.index_reduce_(0, i, s, "sum"), kael.ValueError, "prod, mean, amax or amin but got 'sum'"),
        (lambda x, i, s: x.index_reduce_(0, i.float(), s, "prod"), kael.TypeError, "int32 or int64 for index, got float32"),
        (lambda x, i, s: x.index_reduce_(0, i.reshape(3, 1), s, "prod"), kael.ValueError, r"vector, but got dim: 2 of shape \[3, 1\]"),
        (lambda x, i, s: x.index_reduce_(0, i, s.double(), "prod"), kael.TypeError, "float32, got float64"),
        (lambda x, i, s: x.index_reduce_(0, i, s[:, :1], "prod"), kael.ValueError, r"self.shape = \[3, 2\] source.shape = \[3, 1\]"),
        (lambda x, i, s: x.index_reduce_(0, i[:2], s, "prod"), kael.ValueError, r"Number of indices \(2\) should be equal to source.size\(dim\): \(3\)"),
        (lambda x, i, s: x.index_reduce_(2, i, s, "prod"), kael.IndexError, "but got 2"),
        (lambda x, i, s: kael.tensor([True]).index_reduce_(0, kael.tensor([0]), kael.tensor([True]), "amax"), kael.TypeError, "bool"),
    ],
    ids=["past-end", "negative", "sum", "float-index", "2d-index", "source-dtype", "source-shape", "count", "dim", "bool"],
)  # fmt: skip
def test_index_reduce_refuses_bad_inputs_and_keeps_self(call, error, message):
    x = kael.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    index, source = kael.tensor([0, 2, 0]), kael.full((3, 2), 2.0)
    with pytest.raises(error, match=message):
        call(x, index, source)
    assert x.tolist() == [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]


@pytest.mark.parametrize("dtype", [kael.float32, kael.float64])
def test_histc_bins_values_at_the_edges_as_torch(dtype):
    rng = np.random.default_rng(5)
    for _ in range(40):
        lo = float(rng.normal() * 5)
        hi, bins = lo + float(rng.random() * 10) + 1e-3, int(rng.integers(1, 40))
        values = np.concatenate([rng.uniform(lo, hi, 20), np.linspace(lo, hi, bins + 1)])
        expected = torch.histc(torch.tensor(values, dtype=TORCH_DTYPES[dtype]), bins, lo, hi)
        got = kael.histc(kael.tensor(values, dtype=dtype), bins, lo, hi)
        np.testing.assert_array_equal(got.numpy(), expected.numpy())


def test_histc_refuses_a_range_its_dtype_cannot_hold():
    with pytest.raises(RuntimeError, match="without overflow"):
        torch.histc(torch.ones(3), 4, -1e39, 1e39)
    with pytest.raises(kael.ValueError, match=r"range \[-1e\+39, 1e\+39\] cannot be converted"):
        kael.histc(kael.ones(3), 4, -1e39, 1e39)
    with pytest.raises(kael.ValueError, match=r"range \[0, 100000\] cannot be converted"):
        kael.histc(kael.ones(3, dtype=kael.float16), 2, 0, 1e5)  # past float16's 65504


@pytest.mark.parametrize(("dtype", "top"), [("float32", 1e10), ("float16", 60000.0)])
def test_histc_takes_a_range_within_the_float_dtype_past_its_width_in_ints(dtype, top):
    """The limit is the dtype's largest float (it was the integer maximum of its width)."""
    got = kael.histc(kael.tensor([1.0, 2.0], dtype=getattr(kael, dtype)), 2, 0, top)
    want = torch.histc(torch.tensor([1.0, 2.0], dtype=getattr(torch, dtype)), 2, 0, top)
    assert got.float().tolist() == want.float().tolist()


def test_scatter_with_no_index_returns_self_whatever_the_ranks():
    expected = torch.zeros(2, 3).scatter(0, torch.tensor([], dtype=torch.long), torch.ones(2, 3))
    got = kael.zeros(2, 3).scatter(0, kael.tensor([], dtype=kael.int64), kael.ones(2, 3))
    np.testing.assert_array_equal(got.numpy(), expected.numpy())


@pytest.mark.parametrize("bad", [5, -4])
def test_index_reduce_checks_indices_even_when_self_has_no_elements(bad):
    with pytest.raises(IndexError):
        torch.zeros(3, 0).index_reduce_(0, torch.tensor([bad]), torch.zeros(1, 0), "prod")
    with pytest.raises(kael.IndexError, match=f"index {bad} is out of range for dimension 0"):
        kael.zeros(3, 0).index_reduce_(0, kael.tensor([bad]), kael.zeros(1, 0), "prod")
    assert kael.zeros(3, 0).index_reduce_(0, kael.tensor([2]), kael.zeros(1, 0), "prod").shape == (
        3,
        0,
    )


def test_histogram_and_scatter_reduce_write_into_out_as_torch():
    x = torch.arange(12.0).reshape(3, 4)
    k = kael.tensor(x.numpy())
    hist, edges = kael.empty(0), kael.empty(0)
    got = kael.histogram(k, 3, out=(hist, edges))
    want = torch.histogram(x, 3)
    assert got.hist is hist and got.bin_edges is edges
    close_to_torch(hist, want.hist, 0)
    close_to_torch(edges, want.bin_edges, 1e-6)
    index = torch.tensor([[0, 1, 2, 0], [2, 2, 1, 0], [1, 0, 0, 0]])
    out = kael.empty(3, 4)
    got = kael.scatter_reduce(k, 0, kael.tensor(index.numpy()), k, "sum", out=out)
    assert got is out
    close_to_torch(out, torch.scatter_reduce(x, 0, index, x, "sum"), 0)


# ---- complex tensors: the walks move and add their float parts -------------------------------

CDTYPES = [torch.complex64, torch.complex128]


def _complex(shape, dtype, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(shape, dtype=dtype, generator=g)


def _k(t: torch.Tensor) -> kael.Tensor:
    return kael.from_dlpack(t.clone())


def _close(got: kael.Tensor, want: torch.Tensor) -> None:
    assert str(got.dtype) == str(want.dtype).replace("torch.", "")
    tol = 1e-5 if want.dtype == torch.complex64 else 1e-12
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=tol, atol=tol)


COMPLEX_CALLS = {
    "index_copy": lambda L, x, i, s: x.index_copy(0, i[:2, 0], s[:2]),
    "index_fill": lambda L, x, i, s: x.index_fill(1, i[:2, 0], 1 - 2j),
    "index_add": lambda L, x, i, s: x.index_add(0, i[:, 0], s),
    "scatter_add": lambda L, x, i, s: L.scatter_add(x, 0, i, s),
    "scatter_reduce sum": lambda L, x, i, s: L.scatter_reduce(x, 0, i, s, "sum"),
    "scatter_reduce sum without self": lambda L, x, i, s: L.scatter_reduce(x, 0, i, s, "sum", include_self=False),
    "scatter_reduce mean": lambda L, x, i, s: L.scatter_reduce(x, 0, i, s, "mean"),
    "scatter_reduce mean without self": lambda L, x, i, s: L.scatter_reduce(x, 0, i, s, "mean", include_self=False),
    "scatter_ add": lambda L, x, i, s: x.clone().scatter_(0, i, s, reduce="add"),
    "scatter_ add a number": lambda L, x, i, s: x.clone().scatter_(0, i, 0.5 + 1j, reduce="add"),
    "index_put accumulate": lambda L, x, i, s: x.index_put((i[:, 0],), s, accumulate=True),
    "gather": lambda L, x, i, s: L.gather(x, 1, i[:3] % 4),
    "take": lambda L, x, i, s: L.take(x.mT, i.reshape(-1)),
}  # fmt: skip


@pytest.mark.parametrize("dtype", CDTYPES, ids=str)
@pytest.mark.parametrize("name", list(COMPLEX_CALLS))
def test_index_writes_and_reads_of_complex_tensors_match_torch(name, dtype):
    x, s = _complex((3, 4), dtype, 1), _complex((5, 4), dtype, 2)
    i = torch.tensor([[2, 0, 1, 1], [0, 0, 2, 1], [1, 2, 2, 0], [2, 2, 0, 0], [0, 1, 2, 2]])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's deprecation of scatter_'s reduce
        want = COMPLEX_CALLS[name](torch, x, i, s)
    _close(COMPLEX_CALLS[name](kael, _k(x), _k(i), _k(s)), want)


@pytest.mark.parametrize("threads", [1, 2])
def test_a_long_complex_scatter_into_few_places_sums_as_torch(threads):
    """16K values into 100 places: on two threads the private tables' split, by parts."""
    x, s = _complex(100, torch.complex128, 3), _complex(1 << 14, torch.complex128, 4)
    i = torch.randint(0, 100, (1 << 14,), generator=torch.Generator().manual_seed(5))
    before = kael.get_num_threads()
    try:
        kael.set_num_threads(threads)
        got = kael.scatter_reduce(_k(x), 0, _k(i), _k(s), "sum")
    finally:
        kael.set_num_threads(before)
    _close(got, torch.scatter_reduce(x, 0, i, s, "sum"))


@pytest.mark.parametrize("reduce", ["prod", "amax", "amin"])
@pytest.mark.parametrize("count", [3, 0], ids=["some", "none"])
def test_complex_products_and_extremes_of_a_scatter_are_refused_by_dtype(reduce, count):
    x = kael.zeros(3, dtype=kael.complex64)
    index = kael.zeros(count, dtype=kael.int64)
    with pytest.raises(kael.TypeError, match=f"reduce='{reduce}' is not implemented for complex64"):
        kael.scatter_reduce(
            x, 0, index, kael.ones(count, dtype=kael.complex64), reduce, include_self=False
        )
    with pytest.raises(kael.TypeError, match="multiply"):
        x.scatter_(0, index, kael.ones(count, dtype=kael.complex64), reduce="multiply")


def test_a_complex_index_out_of_range_names_the_index():
    x = kael.zeros(3, 2, dtype=kael.complex64)
    with pytest.raises(
        kael.IndexError, match="index 5 is out of bounds for dimension 0 with size 3"
    ):
        x.index_copy_(0, kael.tensor([5]), kael.ones(1, 2, dtype=kael.complex64))
    assert x.abs().sum().item() == 0.0  # nothing written


@pytest.mark.parametrize("alpha", [2, -0.5, 1j, 2 - 1j], ids=str)
def test_complex_index_add_scales_by_any_alpha_as_torch(alpha):
    x, s = _complex((3, 4), torch.complex64, 8), _complex((2, 4), torch.complex64, 9)
    i = torch.tensor([2, 0])
    _close(
        _k(x).index_add_(0, _k(i), _k(s), alpha=alpha), x.clone().index_add_(0, i, s, alpha=alpha)
    )
