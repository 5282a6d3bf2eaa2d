"""Indexing ops against PyTorch: cat, stack, gather, index_select, scatter_add, index_add,
take_along_dim, nonzero, sort, argsort, topk and masked_fill's wide mask.

Inputs come in four layouts (contiguous, transposed, stepped, expanded) and every dtype
the op accepts; each rule's limit is tested on both sides, and each bad input must raise
a typed kael error whose message names the offending values.
"""

import math

import numpy as np
import pytest
import torch
from kernel_helpers import KAEL_DTYPES, TORCH_DTYPES
from parity_helpers import door_and_full

import kael
from kael.frontend import index_ops
from kael.frontend.inspection import record_launches
from kael.frontend.outputs import device_of
from kael.runtime.device import CPU, CUDA

DTYPES = [kael.float32, kael.float64, kael.int64, kael.bool]
DTYPE_IDS = ["f32", "f64", "i64", "bool"]
LAYOUTS = ["contiguous", "transposed", "stepped", "expanded"]


def _values(shape, dtype, seed):
    gen = torch.Generator().manual_seed(seed)
    n = math.prod(shape)
    tdtype = TORCH_DTYPES[dtype]
    if dtype.is_floating_point:
        return (torch.randint(-20, 20, (n,), generator=gen) / 4).to(tdtype).reshape(shape)
    if dtype is kael.bool:
        return torch.randint(0, 2, (n,), generator=gen).bool().reshape(shape)
    return torch.randint(-50, 50, (n,), generator=gen).reshape(shape)


def make(shape, dtype=kael.float32, layout="contiguous", seed=0):
    """(kael, torch) tensors with equal values and `shape`, both in the given layout."""
    shape = tuple(shape)
    if layout == "transposed":
        base, view = shape[::-1], lambda x: x.permute(*reversed(range(x.ndim)))
    elif layout == "stepped":
        base, view = shape[:-1] + (2 * shape[-1],), lambda x: x[..., ::2]
    elif layout == "expanded":
        base, view = (1,) + shape[1:], lambda x: x.expand(*shape)
    else:
        base, view = shape, lambda x: x
    t = _values(base, dtype, seed)
    k = kael.tensor(t.numpy())
    return view(k), view(t)


def as_kael(t: torch.Tensor) -> kael.Tensor:
    return kael.tensor(t.contiguous().numpy())


def assert_same(k, t):
    """Same shape, dtype and values (NaN equals NaN)."""
    assert isinstance(k, kael.Tensor)
    assert k.shape == tuple(t.shape), (k.shape, t.shape)
    assert KAEL_DTYPES[t.dtype] is k.dtype, (k.dtype, t.dtype)
    np.testing.assert_array_equal(np.asarray(k.numpy()), t.numpy())


# ---- cat and stack -----------------------------------------------------------------------------


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_cat_matches_torch_over_layouts_and_dtypes(layout, dtype, dim):
    a, ta = make((2, 3), dtype, layout, seed=1)
    b, tb = make((2, 3), dtype, "contiguous", seed=2)
    assert_same(kael.cat([a, b, a], dim), torch.cat([ta, tb, ta], dim))


@pytest.mark.parametrize(
    ("first", "second"),
    [
        (kael.int64, kael.float32),
        (kael.bool, kael.int64),
        (kael.float32, kael.float64),
        (kael.bool, kael.bool),
    ],
)
def test_cat_promotes_the_dtypes_of_all_inputs(first, second):
    a, ta = make((2, 2), first, seed=3)
    b, tb = make((1, 2), second, seed=4)
    assert_same(kael.cat((a, b)), torch.cat((ta, tb)))


def test_cat_skips_1d_empty_tensors_but_promotes_with_them():
    a, ta = make((2, 3), kael.int64)
    e, te = kael.empty(0, dtype=kael.float64), torch.empty(0, dtype=torch.float64)
    assert_same(kael.cat([a, e]), torch.cat([ta, te]))
    # dim wraps against the first tensor that is not skipped
    assert_same(kael.cat([e, a], dim=-1), torch.cat([te, ta], dim=-1))
    assert_same(kael.cat([e, e]), torch.cat([te, te]))


def test_cat_checks_the_shape_of_2d_empty_tensors():
    assert_same(
        kael.cat([kael.empty(0, 3), kael.ones(2, 3)]),
        torch.cat([torch.empty(0, 3), torch.ones(2, 3)]),
    )
    with pytest.raises(kael.ValueError, match=r"expected size 2 but got size 3 in dimension 1"):
        kael.cat([kael.empty(0, 2), kael.ones(2, 3)])


def test_cat_result_is_a_new_tensor():
    a = kael.zeros(2)
    out = kael.cat([a, a])
    a.fill_(1)
    assert out.tolist() == [0.0, 0.0, 0.0, 0.0]


def test_cat_rejects_bad_inputs_naming_them():
    with pytest.raises(kael.ValueError, match="non-empty list"):
        kael.cat([])
    with pytest.raises(kael.TypeError, match="Tensor as element 1, got int"):
        kael.cat([kael.ones(2), 3])
    with pytest.raises(kael.TypeError, match="list or tuple of Tensors, got Tensor"):
        kael.cat(kael.ones(2))
    with pytest.raises(kael.ValueError, match=r"zero-dimensional tensor \(at position 1\)"):
        kael.cat([kael.ones(2), kael.tensor(1.0)])
    with pytest.raises(kael.ValueError, match="same number of dimensions: got 2 and 1"):
        kael.cat([kael.ones(2, 3), kael.ones(3)])
    with pytest.raises(
        kael.ValueError,
        match=r"except in dimension 0: expected size 3 but got size 4 in dimension 1 for tensor number 1",
    ):
        kael.cat([kael.ones(2, 3), kael.ones(2, 4)])
    kael.cat([kael.ones(2, 3)], dim=1)
    with pytest.raises(kael.IndexError, match=r"range of \[-2, 1\], but got 2"):
        kael.cat([kael.ones(2, 3)], dim=2)


# Dense CPU pieces of the result's dtype join by whole rows (block_copy) when their rows are
# long or the result small; the others through the strided copy. Both give torch's bytes.
ROW_CASES = {
    "short rows, small": ((3, 5, 2), (3, 2, 2), 1),
    "short rows, large": ((5000, 3), (5000, 2), 1),  # 20 bytes a row past ROWS_COPY_SMALL
    "long rows, large": ((300, 700), (300, 10), 1),
    "one row, split": ((600, 128), (90, 128), 0),  # one row a piece: the pieces split
    "an offset": ((4, 9), (4, 9), 0),
}


@pytest.mark.parametrize(("a_shape", "b_shape", "dim"), ROW_CASES.values(), ids=ROW_CASES.keys())
@pytest.mark.parametrize("threads", [1, 2])
def test_cat_and_stack_by_rows_or_strided_copies_give_torchs_bytes(a_shape, b_shape, dim, threads):
    rng = np.random.default_rng(7)
    base = rng.standard_normal((a_shape[0] + 1, *a_shape[1:]))
    a_np, b_np = base[1:], rng.standard_normal(b_shape)  # a: a dense view at an offset
    a, b = kael.tensor(base)[1:], kael.tensor(b_np)
    with _threads(threads):
        assert_same(
            kael.cat([a, b, a], dim),
            torch.cat([torch.from_numpy(x) for x in (a_np, b_np, a_np)], dim),
        )
        assert_same(kael.stack([a, a], dim), torch.stack([torch.from_numpy(a_np)] * 2, dim))


class _threads:
    """kael.set_num_threads(n) for a block, the previous count restored after."""

    def __init__(self, n: int) -> None:
        self.n = n

    def __enter__(self) -> None:
        self.saved = kael.get_num_threads()
        kael.set_num_threads(self.n)

    def __exit__(self, *exc) -> None:
        kael.set_num_threads(self.saved)


def test_cat_by_rows_leaves_recorded_and_traced_calls_to_the_strided_copy():
    a, b = kael.randn(4, 16), kael.randn(4, 16)
    _, launched = record_launches(lambda: kael.cat([a, b], 1))
    assert len(launched) == 2  # one strided copy a piece, each recorded
    joined = kael.compile(lambda x, y: kael.cat([x, y], 1) * 2)
    for _ in range(2):
        np.testing.assert_array_equal(
            joined(a, b).numpy(), np.concatenate([a.numpy(), b.numpy()], 1) * 2
        )


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("dim", [0, 1, 2, -1, -3])
def test_stack_matches_torch(layout, dtype, dim):
    a, ta = make((2, 3), dtype, layout, seed=5)
    b, tb = make((2, 3), dtype, "contiguous", seed=6)
    assert_same(kael.stack([a, b], dim), torch.stack([ta, tb], dim))


def test_stack_of_0d_and_empty_tensors():
    assert_same(
        kael.stack([kael.tensor(1.0), kael.tensor(2.0)]),
        torch.stack([torch.tensor(1.0), torch.tensor(2.0)]),
    )
    assert_same(kael.stack([kael.empty(0), kael.empty(0)]), torch.stack([torch.empty(0)] * 2))
    assert_same(
        kael.stack([kael.ones(2), kael.ones(2, dtype=kael.int64)], 1),
        torch.stack([torch.ones(2), torch.ones(2, dtype=torch.int64)], 1),
    )


def test_stack_rejects_bad_inputs_naming_them():
    with pytest.raises(
        kael.ValueError, match=r"but got \[2, 3\] at entry 0 and \[2, 4\] at entry 1"
    ):
        kael.stack([kael.ones(2, 3), kael.ones(2, 4)])
    with pytest.raises(kael.ValueError, match="non-empty list"):
        kael.stack([])
    kael.stack([kael.ones(2, 3)], dim=2)
    with pytest.raises(kael.IndexError, match=r"range of \[-3, 2\], but got 3"):
        kael.stack([kael.ones(2, 3)], dim=3)


# ---- gather ------------------------------------------------------------------------------------------


def _indices(shape, size, seed, low=0):
    gen = torch.Generator().manual_seed(seed)
    return torch.randint(low, size, shape, generator=gen)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("dim", [0, 1, 2, -1])
def test_gather_matches_torch(layout, dtype, dim):
    k, t = make((3, 4, 5), dtype, layout, seed=7)
    d = dim % 3
    shape = [2, 3, 4]
    shape[d] = 6  # larger than the input along dim, smaller elsewhere
    ti = _indices(tuple(shape), t.shape[d], seed=8)
    assert_same(kael.gather(k, dim, as_kael(ti)), torch.gather(t, dim, ti))
    assert_same(k.gather(dim, as_kael(ti)), t.gather(dim, ti))


@pytest.mark.parametrize("layout", ["transposed", "stepped", "expanded"])
def test_gather_reads_index_tensors_in_any_layout(layout):
    k, t = make((4, 4), kael.float64, seed=9)
    ki, ti = make((4, 4), kael.int64, layout, seed=10)
    ki, ti = ki.remainder(4), ti.remainder(4)
    assert_same(kael.gather(k, 1, ki), torch.gather(t, 1, ti))


def test_gather_of_0d_and_empty_tensors():
    s, ts = kael.tensor(5.0), torch.tensor(5.0)
    assert_same(kael.gather(s, 0, kael.tensor(0)), torch.gather(ts, 0, torch.tensor(0)))
    assert_same(kael.gather(s, -1, kael.tensor([0, 0])), torch.gather(ts, -1, torch.tensor([0, 0])))
    v, tv = make((3,), kael.int64)
    assert_same(kael.gather(v, 0, kael.tensor(2)), torch.gather(tv, 0, torch.tensor(2)))
    k, t = make((2, 3))
    empty = torch.zeros(2, 0, dtype=torch.int64)
    assert_same(kael.gather(k, 1, as_kael(empty)), torch.gather(t, 1, empty))
    z = torch.zeros(0, 1, dtype=torch.int64)
    assert_same(kael.gather(kael.zeros(0, 3), 1, as_kael(z)), torch.gather(torch.zeros(0, 3), 1, z))


def test_gather_index_bounds_size_minus_1_passes_size_and_negative_raise():
    k, t = make((2, 3))
    ok = torch.tensor([[2, 0]])
    assert_same(kael.gather(k, 1, as_kael(ok)), torch.gather(t, 1, ok))
    with pytest.raises(
        kael.IndexError, match="gather.*index 3 is out of bounds for dimension 1 with size 3"
    ):
        kael.gather(k, 1, kael.tensor([[0, 3]]))
    with pytest.raises(
        kael.IndexError, match="gather.*index -1 is out of bounds for dimension 1 with size 3"
    ):
        kael.gather(k, 1, kael.tensor([[-1, 0]]))
    with pytest.raises(
        kael.IndexError, match="index 0 is out of bounds for dimension 1 with size 0"
    ):
        kael.gather(kael.zeros(2, 0), 1, kael.zeros(2, 1, dtype=kael.int64))


def test_gather_names_the_first_bad_index_of_a_large_input():
    k = kael.zeros(1000, 1000)
    index = kael.zeros(1000, 1000, dtype=kael.int64)
    index[700, 3] = 5000
    index[900, 0] = -7
    with pytest.raises(kael.IndexError, match="index 5000 is out of bounds"):
        kael.gather(k, 1, index)


def test_gather_rejects_bad_arguments_naming_them():
    k = kael.zeros(2, 3)
    with pytest.raises(
        kael.TypeError, match="expected dtype int32 or int64 for index, got float32"
    ):
        kael.gather(k, 1, kael.zeros(2, 1))
    with pytest.raises(kael.ValueError, match="same number of dimensions as input, got 1 and 2"):
        kael.gather(k, 1, kael.tensor([0]))
    with pytest.raises(
        kael.ValueError,
        match=r"dimension 0: expected index \[3, 1\] to be no larger than input \[2, 3\] apart from dimension 1",
    ):
        kael.gather(k, 1, kael.zeros(3, 1, dtype=kael.int64))
    with pytest.raises(kael.IndexError, match=r"range of \[-2, 1\], but got 2"):
        kael.gather(k, 2, kael.zeros(2, 1, dtype=kael.int64))
    with pytest.raises(kael.TypeError, match="input must be a Tensor, got list"):
        kael.gather([1, 2], 0, kael.tensor([0]))


# ---- index_select ------------------------------------------------------------------------------------


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_index_select_matches_torch(layout, dtype, dim):
    k, t = make((3, 4), dtype, layout, seed=11)
    ti = _indices((5,), t.shape[dim], seed=12)
    assert_same(kael.index_select(k, dim, as_kael(ti)), torch.index_select(t, dim, ti))
    stepped = ti.repeat(2)[::2]
    assert_same(k.index_select(dim, as_kael(ti.repeat(2))[::2]), t.index_select(dim, stepped))


def test_index_select_with_0d_index_0d_input_and_empty_tensors():
    k, t = make((3, 2), kael.int64)
    assert_same(kael.index_select(k, 1, kael.tensor(1)), torch.index_select(t, 1, torch.tensor(1)))
    s, ts = kael.tensor(4), torch.tensor(4)
    assert_same(
        kael.index_select(s, 0, kael.tensor([0])), torch.index_select(ts, 0, torch.tensor([0]))
    )
    none = torch.tensor([], dtype=torch.int64)
    assert_same(
        kael.index_select(kael.zeros(0, 2), 0, as_kael(none)),
        torch.index_select(torch.zeros(0, 2), 0, none),
    )
    assert_same(kael.index_select(k, 0, as_kael(none)), torch.index_select(t, 0, none))


def test_index_select_bounds_size_minus_1_passes_size_and_negative_raise():
    k, t = make((3, 2), kael.int64)
    assert_same(
        kael.index_select(k, 0, kael.tensor([2])), torch.index_select(t, 0, torch.tensor([2]))
    )
    with pytest.raises(
        kael.IndexError, match="index 3 is out of bounds for dimension 0 with size 3"
    ):
        kael.index_select(k, 0, kael.tensor([0, 3]))
    with pytest.raises(
        kael.IndexError, match="index -1 is out of bounds for dimension 0 with size 3"
    ):
        kael.index_select(k, 0, kael.tensor([-1]))
    with pytest.raises(
        kael.IndexError, match="index 1 is out of bounds for dimension 0 with size 1"
    ):
        kael.index_select(kael.tensor(4), 0, kael.tensor([1]))


def test_index_select_rejects_bad_arguments_naming_them():
    k = kael.zeros(3, 2)
    with pytest.raises(
        kael.ValueError, match=r"1-d \(or 0-d\) tensor, got 2 dims of shape \[1, 1\]"
    ):
        kael.index_select(k, 0, kael.tensor([[0]]))
    with pytest.raises(
        kael.TypeError, match="expected dtype int32 or int64 for index, got float32"
    ):
        kael.index_select(k, 0, kael.tensor([0.0]))
    with pytest.raises(kael.ValueError, match="index of a 0-d input must have 1 value, got 2"):
        kael.index_select(kael.tensor(4), 0, kael.tensor([0, 0]))


# ---- scatter_add and index_add --------------------------------------------------------------------


def test_scatter_add_sums_repeated_indices_as_in_the_book():
    out = kael.zeros(3).scatter_add_(0, kael.tensor([0, 2, 0, 0]), kael.tensor([1.0, 2, 3, 4]))
    assert out.tolist() == [8.0, 0.0, 2.0]


@pytest.mark.parametrize("layout", ["contiguous", "transposed", "stepped"])
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_scatter_add_matches_torch(layout, dtype, dim):
    k, t = make((3, 4), dtype, layout, seed=13)
    d = dim % 2
    shape = [2, 3]
    shape[d] = 7  # more source rows than self has: repeated indices
    ti = _indices(tuple(shape), t.shape[d], seed=14)
    src_layout = "expanded" if layout == "stepped" else "transposed"
    src, tsrc = make((7, 5) if d == 0 else (3, 7), dtype, src_layout, seed=15)
    result = k.scatter_add_(dim, as_kael(ti), src)
    assert result is k
    assert_same(k, t.scatter_add_(dim, ti, tsrc))


def test_scatter_add_functional_leaves_the_input_unchanged():
    k, t = make((3,), kael.float64)
    before = k.tolist()
    idx, src = torch.tensor([2, 2]), torch.tensor([1.5, 2.5], dtype=torch.float64)
    assert_same(
        kael.scatter_add(k, 0, as_kael(idx), as_kael(src)), torch.scatter_add(t, 0, idx, src)
    )
    assert k.tolist() == before


def test_scatter_add_of_0d_and_empty_tensors():
    s = kael.tensor(1.0).scatter_add_(0, kael.tensor(0), kael.tensor(2.0))
    assert_same(s, torch.tensor(1.0).scatter_add_(0, torch.tensor(0), torch.tensor(2.0)))
    k, t = make((2, 3))
    none = torch.zeros(2, 0, dtype=torch.int64)
    assert_same(
        k.scatter_add_(1, as_kael(none), kael.ones(2, 1)), t.scatter_add_(1, none, torch.ones(2, 1))
    )


@pytest.mark.parametrize("dim", [0, 1])
def test_scatter_add_is_the_same_for_any_thread_count(dim):
    gen = torch.Generator().manual_seed(16)
    ti = torch.randint(0, 50, (400, 3000) if dim else (3000, 400), generator=gen)
    tsrc = torch.randn(*ti.shape, generator=gen)
    shape = (400, 50) if dim else (50, 400)
    index, src = as_kael(ti), as_kael(tsrc)
    threads = kael.get_num_threads()
    try:
        kael.set_num_threads(1)
        one = kael.zeros(*shape).scatter_add_(dim, index, src)
        kael.set_num_threads(2)
        two = kael.zeros(*shape).scatter_add_(dim, index, src)
    finally:
        kael.set_num_threads(threads)
    np.testing.assert_array_equal(one.numpy(), two.numpy())
    want = torch.zeros(*shape, dtype=torch.float64).scatter_add_(dim, ti, tsrc.double())
    np.testing.assert_allclose(one.numpy(), want.numpy(), rtol=1e-4, atol=1e-3)


def test_index_add_of_rows_is_the_same_for_any_thread_count_and_matches_torch():
    gen = torch.Generator().manual_seed(32)
    ti = torch.randint(0, 300, (2000,), generator=gen)
    tsrc = torch.randn(2000, 700, generator=gen)
    threads = kael.get_num_threads()
    try:
        results = []
        for n in (1, 2):
            kael.set_num_threads(n)
            results.append(kael.zeros(300, 700).index_add_(0, as_kael(ti), as_kael(tsrc)))
    finally:
        kael.set_num_threads(threads)
    np.testing.assert_array_equal(results[0].numpy(), results[1].numpy())
    want = torch.zeros(300, 700, dtype=torch.float64).index_add_(0, ti, tsrc.double())
    np.testing.assert_allclose(results[0].numpy(), want.numpy(), rtol=1e-4, atol=1e-3)
    with pytest.raises(
        kael.IndexError, match="index 300 is out of bounds for dimension 0 with size 300"
    ):
        bad = ti.clone()
        bad[1500] = 300
        kael.zeros(300, 700).index_add_(0, as_kael(bad), as_kael(tsrc))


def test_a_scatter_splits_into_private_tables_only_when_lines_are_too_few_to_share():
    split, n = index_ops._split_parts, index_ops.SPLIT_ELEMENTS
    threads = kael.get_num_threads()
    try:
        kael.set_num_threads(2)
        assert split((2 * n,), 1000, CPU) == 2  # one line: a table per thread
        assert split((2 * n - 1,), 1000, CPU) == 0  # under SPLIT_ELEMENTS per table
        assert split((1, 2 * n), n, CPU) == 2  # the tables hold as many elements as the source
        assert split((1, 2 * n), n + 1, CPU) == 0  # more: the line walk
        assert split((2, 2 * n), 10, CPU) == 0  # a line per thread already
        kael.set_num_threads(3)
        assert split((2, 3 * n), 10, CPU) == 3
        kael.set_num_threads(1)
        assert split((64 * n,), 10, CPU) == 0
    finally:
        kael.set_num_threads(threads)
    assert split((4 * n,), 10, CUDA) == 0  # the CPU's kernels only


@pytest.mark.parametrize("dtype", [kael.float32, kael.int64], ids=str)
def test_a_split_scatter_add_matches_torch_and_checks_every_index_first(dtype):
    gen = torch.Generator().manual_seed(8)
    size = 2 * index_ops.SPLIT_ELEMENTS + 77
    ti = torch.randint(0, 999, (size,), generator=gen)
    tsrc = torch.randint(-50, 50, (size,), generator=gen).to(TORCH_DTYPES[dtype])
    base = torch.arange(2000).to(TORCH_DTYPES[dtype])
    threads = kael.get_num_threads()
    try:
        kael.set_num_threads(2)
        assert index_ops._split_parts((size,), 1000, CPU) == 2
        k = as_kael(base)[::2][:999]  # a view: the fold writes through its stride 2
        k.scatter_add_(0, as_kael(ti), as_kael(tsrc))
        bad = ti.clone()
        bad[size - 5] = 999
        with pytest.raises(kael.IndexError, match="index 999 is out of bounds for dimension 0"):
            k.scatter_add_(0, as_kael(bad), as_kael(tsrc))
    finally:
        kael.set_num_threads(threads)
    want = base[::2][:999].clone().scatter_add_(0, ti, tsrc)
    np.testing.assert_array_equal(k.numpy(), want.numpy())  # integer sums: exact


def test_scatter_add_bounds_leave_self_unchanged_on_a_bad_index():
    k = kael.zeros(3)
    k.scatter_add_(0, kael.tensor([2]), kael.tensor([1.0]))
    assert k.tolist() == [0.0, 0.0, 1.0]
    with pytest.raises(
        kael.IndexError, match="index 3 is out of bounds for dimension 0 with size 3"
    ):
        k.scatter_add_(0, kael.tensor([0, 3]), kael.tensor([5.0, 5.0]))
    with pytest.raises(
        kael.IndexError, match="index -1 is out of bounds for dimension 0 with size 3"
    ):
        k.scatter_add_(0, kael.tensor([0, -1]), kael.tensor([5.0, 5.0]))
    assert k.tolist() == [0.0, 0.0, 1.0]


def test_scatter_add_rejects_aliasing_and_bad_arguments():
    a = kael.zeros(4)
    with pytest.raises(kael.Error, match="src shares memory with self"):
        a.scatter_add_(0, kael.tensor([0]), a[:1])
    ints = kael.zeros(4, dtype=kael.int64)
    with pytest.raises(kael.Error, match="index shares memory with self"):
        ints.scatter_add_(0, ints[:2], kael.ones(2, dtype=kael.int64))
    with pytest.raises(kael.Error, match="more than one element of the written-to tensor"):
        kael.zeros(3).expand(2, 3).scatter_add_(0, kael.tensor([[0]]), kael.tensor([[2.0]]))
    with pytest.raises(kael.TypeError, match="src to have self's dtype float32, got float64"):
        kael.zeros(3).scatter_add_(0, kael.tensor([0]), kael.tensor([1.0], dtype=kael.float64))
    with pytest.raises(
        kael.ValueError, match=r"index \[2\] to be no larger than self \[3\].*src \[1\]"
    ):
        kael.zeros(3).scatter_add_(0, kael.tensor([0, 1]), kael.tensor([1.0]))
    with pytest.raises(kael.ValueError, match=r"index \[1, 3\] to be no larger than self \[3, 2\]"):
        kael.zeros(3, 2).scatter_add_(0, kael.zeros(1, 3, dtype=kael.int64), kael.ones(1, 3))
    with pytest.raises(kael.ValueError, match="same number of dimensions as self, got 1 and 2"):
        kael.zeros(3, 2).scatter_add_(0, kael.zeros(1, dtype=kael.int64), kael.ones(1, 3))


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("dim", [0, 1])
@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
def test_index_add_matches_torch(dtype, dim, layout):
    k, t = make((3, 4), dtype, layout, seed=17)
    ti = torch.tensor([0, 2, 0, 2, 1])[: 4 if dim else 5] % t.shape[dim]
    shape = (5, 4) if dim == 0 else (3, 4)
    src, tsrc = make(shape, dtype, "stepped", seed=18)
    assert_same(k.index_add_(dim, as_kael(ti), src), t.index_add_(dim, ti, tsrc))


@pytest.mark.parametrize(
    ("dtype", "alpha"),
    [(kael.float32, 2.5), (kael.float64, -1), (kael.int64, 3), (kael.int64, 2.5)],
)
def test_index_add_scales_by_alpha_in_self_dtype(dtype, alpha):
    k, t = make((3, 2), dtype, seed=19)
    src, tsrc = make((3, 2), dtype, seed=20)
    ti = torch.tensor([0, 2, 0])
    assert_same(
        k.index_add_(0, as_kael(ti), src, alpha=alpha), t.index_add_(0, ti, tsrc, alpha=alpha)
    )


@pytest.mark.parametrize("alpha", [2**63, 2**64 - 1, 2**64, -(2**63) - 1], ids=repr)
def test_index_add_reads_an_alpha_beyond_int64_as_a_pytorch_scalar(alpha):
    # A uint64 alpha scales float and bool tensors by value and is refused by int64; past
    # torch's Scalar range [-2**63, 2**64) it is refused for every dtype.
    for name in ("float32", "float64", "int64", "bool"):
        t = torch.zeros(3, dtype=getattr(torch, name))
        k = kael.zeros(3, dtype=getattr(kael, name))
        ti, tsrc = torch.tensor([0, 2]), torch.ones(2, dtype=t.dtype)
        try:
            want = t.index_add(0, ti, tsrc, alpha=alpha)
        except (RuntimeError, OverflowError):
            with pytest.raises(kael.ValueError, match=f"^value {alpha} "):
                k.index_add_(0, as_kael(ti), as_kael(tsrc), alpha=alpha)
            assert k.tolist() == t.tolist()
            continue
        assert_same(kael.index_add(k, 0, as_kael(ti), as_kael(tsrc), alpha=alpha), want)


def test_index_add_functional_0d_and_0d_index():
    k, t = make((3, 2))
    assert_same(
        kael.index_add(k, 0, kael.tensor(1), kael.ones(1, 2)),
        torch.index_add(t, 0, torch.tensor(1), torch.ones(1, 2)),
    )
    assert_same(
        kael.tensor(1.0).index_add_(0, kael.tensor(0), kael.tensor(2.0)),
        torch.tensor(1.0).index_add_(0, torch.tensor(0), torch.tensor(2.0)),
    )


def test_index_add_and_take_along_dim_of_empty_tensors():
    none = torch.tensor([], dtype=torch.int64)
    k, t = make((3, 2))
    assert_same(
        k.index_add_(0, as_kael(none), kael.ones(0, 2)), t.index_add_(0, none, torch.ones(0, 2))
    )
    e, te = kael.zeros(0, 3), torch.zeros(0, 3)
    i = torch.zeros(0, 2, dtype=torch.int64)
    assert_same(kael.take_along_dim(e, as_kael(i), 1), torch.take_along_dim(te, i, 1))
    assert_same(kael.take_along_dim(e, as_kael(none)), torch.take_along_dim(te, none))


def test_index_add_rejects_bad_arguments_naming_them():
    k = kael.zeros(3, 2)
    with pytest.raises(
        kael.ValueError, match=r"number of indices \(2\) must equal source.size\(0\) \(3\)"
    ):
        k.index_add_(0, kael.tensor([0, 2]), kael.ones(3, 2))
    with pytest.raises(
        kael.ValueError, match=r"source shape \[2, 3\] must match self shape \[3, 2\]"
    ):
        k.index_add_(0, kael.tensor([0, 2]), kael.ones(2, 3))
    with pytest.raises(kael.ValueError, match=r"1-d \(or 0-d\) tensor, got 2 dims"):
        k.index_add_(0, kael.tensor([[0, 2]]), kael.ones(2, 2))
    with pytest.raises(kael.TypeError, match="source to have self's dtype float32, got float64"):
        k.index_add_(0, kael.tensor([0, 2]), kael.ones(2, 2, dtype=kael.float64))
    k.index_add_(0, kael.tensor([2]), kael.ones(1, 2))
    with pytest.raises(
        kael.IndexError, match="index 3 is out of bounds for dimension 0 with size 3"
    ):
        k.index_add_(0, kael.tensor([0, 3]), kael.ones(2, 2))
    with pytest.raises(
        kael.IndexError, match="index -1 is out of bounds for dimension 0 with size 3"
    ):
        k.index_add_(0, kael.tensor([0, -1]), kael.ones(2, 2))
    with pytest.raises(kael.Error, match="source shares memory with self"):
        k.index_add_(0, kael.tensor([0]), k[:1])


# views of one tensor, as (base, how self and the added tensor are cut from it)
SPLITS = {
    "interleaved": (lambda lib: lib.arange(8.0), lambda x: (x[::2], x[1::2])),
    "halves": (lambda lib: lib.arange(8.0), lambda x: (x[:4], x[4:])),
    "columns": (lambda lib: lib.arange(12.0).reshape(3, 4), lambda m: (m[:, :2], m[:, 2:])),
    "meeting": (lambda lib: lib.arange(8.0), lambda x: (x[:4], x[2:6])),
    "same": (lambda lib: lib.arange(8.0), lambda x: (x[:4], x[:4])),
}
SHARING = ("meeting", "same")  # torch refuses these: dense views whose elements meet


def _add_into_a_view(lib, split: str, op: str):
    """base after op adds one view of it into another, or the error it raised."""
    make, cut = SPLITS[split]
    base = make(lib)
    target, added = cut(base)
    rows = lib.arange(added.shape[0])
    try:
        if op == "index_add_":
            target.index_add_(0, rows, added)
        else:
            index = (rows.reshape((-1,) + (1,) * (added.ndim - 1)) + 0 * added).to(lib.int64)
            target.scatter_add_(0, index, added)
    except Exception as error:  # noqa: BLE001 - compared with the other library's
        return error
    return base


@pytest.mark.parametrize("op", ["index_add_", "scatter_add_"])
@pytest.mark.parametrize("split", sorted(SPLITS))
def test_adding_a_view_into_another_of_one_tensor_refused_only_where_they_meet(split, op):
    """Views that share no element (x[::2] and x[1::2]) add as torch adds them; dense views
    whose elements meet are refused as torch refuses them."""
    want, got = _add_into_a_view(torch, split, op), _add_into_a_view(kael, split, op)
    if split in SHARING:
        assert isinstance(want, RuntimeError) and "some elements of the input tensor" in str(want)
        what = "source" if op == "index_add_" else "src"
        assert isinstance(got, kael.Error) and f"{what} shares memory with self" in str(got)
        return
    assert not isinstance(got, Exception), got
    assert got.shape == tuple(want.shape) and got.dtype is KAEL_DTYPES[want.dtype]
    np.testing.assert_array_equal(got.numpy(), want.numpy())


# ---- take_along_dim --------------------------------------------------------------------------------


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_take_along_dim_without_dim_reads_the_flattened_input(layout, dtype):
    k, t = make((3, 4), dtype, layout, seed=21)
    ti = _indices((2, 5), 12, seed=22)
    # torch views the input as 1-d, which fails for some layouts; kael reshapes any layout
    assert_same(kael.take_along_dim(k, as_kael(ti)), torch.take_along_dim(t.contiguous(), ti))
    with pytest.raises(
        kael.IndexError, match="index -1 is out of bounds for dimension 0 with size 12"
    ):
        kael.take_along_dim(k, kael.tensor([-1]))


@pytest.mark.parametrize(
    ("index_shape", "dim"), [((3, 2), 1), ((1, 2), 1), ((3, 1), 1), ((2, 1), 0), ((5, 4), 0)]
)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_take_along_dim_broadcasts_outside_dim(index_shape, dim, layout):
    k, t = make((3, 4), kael.float64, layout, seed=23)
    ti = _indices(index_shape, t.shape[dim], seed=24)
    assert_same(kael.take_along_dim(k, as_kael(ti), dim), torch.take_along_dim(t, ti, dim))
    small, tsmall = make((1, 4), kael.int64, seed=25)
    big = _indices((3, 2), 4, seed=26)
    assert_same(kael.take_along_dim(small, as_kael(big), 1), torch.take_along_dim(tsmall, big, 1))


def test_take_along_dim_with_a_dim_wraps_indices_modulo_the_size_like_torch():
    k, t = make((2, 3))
    ti = torch.tensor([[3, 5, -1, -4, -7, 2]])
    assert_same(kael.take_along_dim(k, as_kael(ti), dim=1), torch.take_along_dim(t, ti, dim=1))


def test_take_along_dim_of_0d_tensors():
    s, ts = kael.tensor(3.0), torch.tensor(3.0)
    assert_same(kael.take_along_dim(s, kael.tensor(0)), torch.take_along_dim(ts, torch.tensor(0)))
    with pytest.raises(
        kael.IndexError, match="Dimension specified as 0 but tensor has no dimensions"
    ):
        kael.take_along_dim(s, kael.tensor(0), 0)


def test_take_along_dim_rejects_bad_arguments_naming_them():
    k = kael.zeros(2, 3)
    with pytest.raises(
        kael.ValueError, match="got 2 dimensions for input, and 1 dimensions for indices"
    ):
        kael.take_along_dim(k, kael.tensor([0]), dim=1)
    with pytest.raises(kael.TypeError, match="int64 for indices, got float32"):
        kael.take_along_dim(k, kael.tensor([[0.0]]), dim=1)
    with pytest.raises(kael.ValueError, match=r"shapes \[3, 1\] and \[2, 1\] cannot be broadcast"):
        kael.take_along_dim(k, kael.zeros(3, 1, dtype=kael.int64), dim=1)
    with pytest.raises(
        kael.IndexError, match="index 0 is out of bounds for dimension 1 with size 0"
    ):
        kael.take_along_dim(kael.zeros(2, 0), kael.zeros(2, 1, dtype=kael.int64), dim=1)


INT32_INDEX = {  # PyTorch 2.13 takes an int32 index in these ops
    "gather": lambda lib, x, i: lib.gather(x, 1, i),
    "index_select": lambda lib, x, i: lib.index_select(x, 0, i[0]),
    "index_add": lambda lib, x, i: lib.index_add(x, 0, i[0], x[:2] * 3),
    "index_add_": lambda lib, x, i: x.clone().index_add_(1, i[1], x[:, :2], alpha=2),
    "scatter_add": lambda lib, x, i: lib.scatter_add(x, 1, i, x[:2, :2]),
    "scatter_add_": lambda lib, x, i: x.clone().scatter_add_(0, i, x[:2, :2]),
    "scatter": lambda lib, x, i: lib.scatter(x, 1, i, x[:2, :2]),
    "scatter_value": lambda lib, x, i: lib.scatter(x, 0, i, 5.0),
    "scatter_reduce": lambda lib, x, i: lib.scatter_reduce(x, 1, i, x[:2, :2], "amax"),
    "take_along_dim_flat": lambda lib, x, i: lib.take_along_dim(x, i),
}


@pytest.mark.parametrize("name", INT32_INDEX)
def test_an_int32_index_is_taken_where_torch_takes_it(name):
    k, t = make((3, 3), kael.float32, seed=31)
    ti = torch.tensor([[2, 0], [1, 1]], dtype=torch.int32)
    assert_same(INT32_INDEX[name](kael, k, as_kael(ti)), INT32_INDEX[name](torch, t, ti))


@pytest.mark.parametrize("name", ["gather", "index_select", "scatter_add", "scatter"])
def test_an_int16_index_is_refused_naming_both_index_dtypes(name):
    k, t = make((3, 3), kael.float32, seed=31)
    ti = torch.tensor([[2, 0], [1, 1]], dtype=torch.int16)
    with pytest.raises(RuntimeError, match="int32.*int64"):
        INT32_INDEX[name](torch, t, ti)
    with pytest.raises(kael.TypeError, match="expected dtype int32 or int64 for index, got int16"):
        INT32_INDEX[name](kael, k, as_kael(ti))


def test_take_along_dim_with_a_dim_refuses_an_int32_index_as_torch():
    ti = torch.zeros(3, 1, dtype=torch.int32)
    with pytest.raises(RuntimeError, match="should be Long"):
        torch.take_along_dim(torch.ones(3, 3), ti, 1)
    with pytest.raises(kael.TypeError, match="expected dtype int64 for indices, got int32"):
        kael.take_along_dim(kael.ones(3, 3), as_kael(ti), 1)


# ---- nonzero ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_nonzero_matches_torch(layout, dtype):
    k, t = make((3, 4, 5), dtype, layout, seed=27)
    assert_same(kael.nonzero(k), torch.nonzero(t))
    for a, b in zip(k.nonzero(as_tuple=True), t.nonzero(as_tuple=True), strict=True):
        assert_same(a, b)


@pytest.mark.parametrize(
    "value",
    [[[0, 0, 0], [0, 0, 0]], 5, 0, [1, 1, 1], [[[1, 1], [1, 1]], [[1, 0], [1, 1]]], [[1, 2, 3]]],
    ids=["none", "0-d", "0-d zero", "1-d", "3-d", "one row"],
)
def test_nonzero_is_column_major_as_torch_and_its_columns_dense(value):
    k, t = kael.tensor(value), torch.tensor(value)
    for got, want in ((kael.nonzero(k), torch.nonzero(t)), (kael.argwhere(k), torch.argwhere(t))):
        assert_same(got, want)
        assert got.stride() == want.stride()
    for got, want in zip(kael.nonzero(k, as_tuple=True), torch.nonzero(t, as_tuple=True)):
        assert_same(got, want)
        assert got.stride() == want.stride() == (1,)
    for size in (0, 1, 4):  # nonzero_static's rows are row-major, as torch's
        got, want = kael.nonzero_static(k, size=size), torch.nonzero_static(t, size=size)
        assert_same(got, want)
        assert got.stride() == want.stride()


def test_nonzero_over_many_blocks_writes_each_column_in_element_order():
    mask = np.random.default_rng(8).random((300, 700)) < 0.3  # dozens of listing blocks
    got = kael.nonzero(kael.tensor(mask))
    want = torch.nonzero(torch.from_numpy(mask))
    assert_same(got, want)
    assert got.stride() == want.stride() == (1, len(want))


def test_nonzero_counts_nan_but_not_negative_zero():
    values = [float("nan"), 0.0, -0.0, 1.0, float("-inf")]
    assert_same(kael.nonzero(kael.tensor(values)), torch.nonzero(torch.tensor(values)))


@pytest.mark.parametrize("value", [0, 3])
def test_nonzero_of_0d_and_empty_tensors(value):
    assert_same(kael.nonzero(kael.tensor(value)), torch.nonzero(torch.tensor(value)))
    (got,) = kael.nonzero(kael.tensor(value), as_tuple=True)
    (want,) = torch.nonzero(torch.tensor(value), as_tuple=True)
    assert_same(got, want)
    assert_same(kael.nonzero(kael.zeros(0, 3)), torch.nonzero(torch.zeros(0, 3)))


@pytest.mark.parametrize("layout", LAYOUTS)
def test_where_of_a_condition_alone_is_nonzero_as_a_tuple(layout):
    for k, t in (make((3, 4), kael.int64, layout, seed=29), (kael.tensor(2.5), torch.tensor(2.5))):
        for a, b in zip(kael.where(k), torch.where(t), strict=True):
            assert_same(a, b)
    with pytest.raises(kael.TypeError, match="a condition alone"):
        kael.where(k > 0, k)


def test_nonzero_keeps_row_major_order_over_many_blocks_and_threads():
    gen = torch.Generator().manual_seed(28)
    t = torch.rand(700, 1500, generator=gen) > 0.7
    k = as_kael(t)
    threads = kael.get_num_threads()
    try:
        kael.set_num_threads(2)
        assert_same(kael.nonzero(k), torch.nonzero(t))
        assert_same(kael.nonzero(k.T), torch.nonzero(t.T))
    finally:
        kael.set_num_threads(threads)


# ---- sort, argsort, topk ----------------------------------------------------------------------------


def test_sort_puts_nan_last_ascending_and_first_descending():
    x = [3.0, float("nan"), 1.0, 2.0]
    values, indices = kael.sort(kael.tensor(x))
    assert_same(values, torch.tensor([1.0, 2.0, 3.0, float("nan")]))
    assert indices.tolist() == [2, 3, 0, 1]
    got = kael.sort(kael.tensor(x), descending=True)
    want = torch.sort(torch.tensor(x), descending=True)
    assert_same(got.values, want.values)
    assert_same(got.indices, want.indices)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("descending", [False, True])
def test_stable_sort_matches_torch(layout, dtype, dim, descending):
    k, t = make((6, 7), dtype, layout, seed=29)  # few distinct values: many ties
    got = k.sort(dim, descending=descending, stable=True)
    want = t.sort(dim=dim, descending=descending, stable=True)
    assert_same(got.values, want.values)
    assert_same(got.indices, want.indices)
    assert_same(kael.argsort(k, dim, descending=descending, stable=True), want.indices)


def test_sort_keeps_ties_in_input_order_in_both_directions():
    x = [1.0, -0.0, 1.0, 0.0, float("nan"), 1.0, float("nan")]
    for descending in (False, True):
        got = kael.sort(kael.tensor(x), descending=descending)
        want = torch.sort(torch.tensor(x), descending=descending, stable=True)
        assert_same(got.indices, want.indices)


ALL_SORT_DTYPES = [kael.float32, kael.float64, kael.float16, kael.bfloat16, kael.int64,
                   kael.int32, kael.int16, kael.int8, kael.uint8, kael.bool]  # fmt: skip


def _long_rows(shape, dtype, seed):
    """(kael, torch) rows long enough for the radix sort: ties, and NaN, infinities and -0
    among the floats; bfloat16 built from float32 on both sides."""
    gen = torch.Generator().manual_seed(seed)
    t = torch.randint(-30, 30, shape, generator=gen).double()
    if dtype.is_floating_point:
        t = t * 0.375
        picks = torch.rand(shape, generator=gen)
        t[picks < 0.08] = float("nan")
        t[(picks >= 0.08) & (picks < 0.12)] = -0.0
        t[(picks >= 0.12) & (picks < 0.14)] = float("inf")
        t[(picks >= 0.14) & (picks < 0.16)] = -float("inf")
    if dtype is kael.uint8:
        t = t + 30
    t = (t > 0) if dtype is kael.bool else t.to(TORCH_DTYPES[dtype])
    return kael.tensor(t.float().numpy()).to(dtype), t


@pytest.mark.parametrize("descending", [False, True], ids=["ascending", "descending"])
@pytest.mark.parametrize("n", [1, 31, 32, 33, 63, 64, 127, 128, 700, 9000])
@pytest.mark.parametrize("dtype", ALL_SORT_DTYPES, ids=str)
def test_sort_of_rows_either_side_of_each_kernels_length_matches_torch(dtype, n, descending):
    k, t = _long_rows((3, n), dtype, n)
    got = k.sort(-1, descending=descending)
    want = t.sort(dim=-1, descending=descending, stable=True)
    assert_same(got.indices, want.indices)
    assert_same(kael.argsort(k, -1, descending=descending), want.indices)
    assert_same(got.values.to(kael.float32), want.values.float())
    assert got.values.dtype is dtype


@pytest.mark.parametrize(
    "dtype, n, kernel",
    [(kael.float32, 1, "rank"), (kael.float32, 128, "rank"), (kael.float32, 129, "radix"),
     (kael.int64, 128, "rank"), (kael.int64, 129, "radix"), (kael.int8, 129, "radix"),
     (kael.float64, 2**31 - 1, "radix"), (kael.float64, 2**31, "merge")],
)  # fmt: skip
def test_short_rows_are_ranked_long_ones_radix_sorted_and_the_longest_merge_sorted(
    dtype, n, kernel
):
    assert index_ops._sort_kernel(dtype, n) == kernel


@pytest.mark.parametrize("layout", ["transposed", "stepped", "expanded"])
@pytest.mark.parametrize("dim", [0, 1])
def test_radix_sort_along_any_dim_of_any_layout_matches_torch(layout, dim):
    k, t = make((130, 140), kael.float64, layout, seed=41)  # radix rows both ways
    got = k.sort(dim, descending=True, stable=True)
    want = t.sort(dim=dim, descending=True, stable=True)
    assert_same(got.values, want.values)
    assert_same(got.indices, want.indices)


def test_sort_of_wide_int64_keys_matches_torch():
    gen = torch.Generator().manual_seed(42)
    t = torch.randint(-(2**62), 2**62, (2, 5000), generator=gen)
    t[0, :3] = torch.tensor([-(2**63), 2**63 - 1, 0])
    got = kael.tensor(t.numpy()).sort()
    want = t.sort(stable=True)
    assert_same(got.values, want.values)
    assert_same(got.indices, want.indices)


def test_sort_of_0d_and_empty_tensors():
    got = kael.sort(kael.tensor(3.0))
    assert_same(got.values, torch.tensor(3.0))
    assert_same(got.indices, torch.tensor(0))
    got = kael.sort(kael.zeros(3, 0), dim=1)
    assert_same(got.values, torch.zeros(3, 0))
    assert_same(got.indices, torch.zeros(3, 0, dtype=torch.int64))
    with pytest.raises(kael.IndexError, match=r"range of \[-1, 0\], but got 1"):
        kael.sort(kael.tensor(3.0), dim=1)


def _distinct(shape, layout, dtype=kael.float32):
    """Tensors with no repeated value, so topk's order is fully determined."""
    n = math.prod(shape)
    perm = torch.randperm(n, generator=torch.Generator().manual_seed(30))
    t = perm.to(TORCH_DTYPES[dtype]).reshape(shape)
    k, tk = make(shape, dtype, "contiguous")
    k, tk = as_kael(t), t
    if layout == "transposed":
        return k.T.contiguous().T, tk
    return k, tk


@pytest.mark.parametrize("dtype", [kael.float32, kael.float64, kael.int64], ids=DTYPE_IDS[:3])
@pytest.mark.parametrize("dim", [0, 1])
@pytest.mark.parametrize("largest", [True, False])
@pytest.mark.parametrize("k", [0, 1, 3, 5])
def test_topk_matches_torch(dtype, dim, largest, k):
    x, t = _distinct((5, 6), "transposed", dtype)
    got = kael.topk(x, k, dim, largest=largest)
    want = torch.topk(t, k, dim, largest=largest)
    assert_same(got.values, want.values)
    assert_same(got.indices, want.indices)


@pytest.mark.parametrize("largest", [True, False])
@pytest.mark.parametrize("k", [1, 4, 9])
def test_topk_with_ties_gives_torch_values_and_indices_that_point_at_them(largest, k):
    x, t = make((4, 9), kael.float64, "transposed", seed=31)
    x[0, 3] = float("nan")
    t[0, 3] = float("nan")
    got = kael.topk(x, k, largest=largest)
    want = torch.topk(t, k, largest=largest)
    assert_same(got.values, want.values)  # tied values may come from other positions
    assert_same(kael.gather(x, 1, got.indices), want.values)


def test_topk_k_limits_size_passes_size_plus_1_and_negative_raise():
    x = kael.tensor([3.0, float("nan"), 1.0, 2.0])
    values, indices = x.topk(4)
    want = torch.topk(torch.tensor([3.0, float("nan"), 1.0, 2.0]), 4)
    assert_same(values, want.values)
    assert_same(indices, want.indices)
    assert x.topk(0).values.shape == (0,)
    with pytest.raises(kael.IndexError, match="k is 5 but dimension 0 has size 4"):
        x.topk(5)
    with pytest.raises(kael.IndexError, match="k is -1 but dimension 0 has size 4"):
        x.topk(-1)


def test_topk_counts_nan_as_the_largest_value():
    x = [3.0, float("nan"), 1.0, 2.0]
    for largest in (True, False):
        got = kael.topk(kael.tensor(x), 2, largest=largest)
        want = torch.topk(torch.tensor(x), 2, largest=largest)
        assert_same(got.values, want.values)
        assert_same(got.indices, want.indices)


def test_topk_of_0d_and_empty_tensors_and_bad_arguments():
    got = kael.topk(kael.tensor(3.0), 1)
    assert_same(got.values, torch.tensor(3.0))
    assert_same(got.indices, torch.tensor(0))
    with pytest.raises(kael.IndexError, match="k is 2 but dimension 0 has size 1"):
        kael.topk(kael.tensor(3.0), 2)
    assert kael.topk(kael.zeros(3, 0), 0).indices.shape == (3, 0)
    with pytest.raises(kael.IndexError, match="k is 1 but dimension 1 has size 0"):
        kael.topk(kael.zeros(3, 0), 1)
    with pytest.raises(kael.TypeError, match="topk.*does not support bool"):
        kael.topk(kael.tensor([True, False]), 1)
    with pytest.raises(kael.TypeError, match="k must be an int, got float"):
        kael.topk(kael.tensor([1.0]), 1.0)


# ---- masked_fill, devices -----------------------------------------------------------------------------


def test_masked_fill_with_a_wider_mask_widens_the_result_like_torch():
    mask = [[True, False, True], [False, False, True]]
    got = kael.masked_fill(kael.zeros(3), kael.tensor(mask), 5.0)
    assert_same(got, torch.zeros(3).masked_fill(torch.tensor(mask), 5.0))


def test_the_ops_are_functions_and_methods_except_cat_and_stack():
    for name in (
        "gather",
        "index_select",
        "take_along_dim",
        "scatter_add",
        "index_add",
        "nonzero",
        "sort",
        "argsort",
        "topk",
        "scatter_add_",
        "index_add_",
    ):
        assert callable(getattr(kael.Tensor, name)), name
    for name in ("cat", "stack"):
        assert callable(getattr(kael, name)) and not hasattr(kael.Tensor, name)
    values, indices = kael.tensor([2.0, 1.0]).sort()
    assert indices.tolist() == [1, 0] and values.tolist() == [1.0, 2.0]


@pytest.mark.parametrize(
    ("name", "call"),
    [
        ("gather", lambda x: kael.gather(x, 0, kael.tensor([0]))),
        ("index_select", lambda x: kael.index_select(x, 0, kael.tensor([0]))),
        ("take_along_dim", lambda x: kael.take_along_dim(x, kael.tensor([0]))),
        ("scatter_add", lambda x: kael.scatter_add(x, 0, kael.tensor([0]), kael.ones(1))),
        ("index_add", lambda x: kael.index_add(x, 0, kael.tensor([0]), kael.ones(1))),
        ("nonzero", kael.nonzero),
        ("sort", kael.sort),
        ("argsort", kael.argsort),
        ("topk", lambda x: kael.topk(x, 1)),
    ],
)
def test_ops_reject_inputs_that_are_not_tensors(name, call):
    with pytest.raises(kael.TypeError, match=rf"{name}\(\): input must be a Tensor, got list"):
        call([1.0, 2.0])


class _OnCuda:
    device = CUDA


def test_index_ops_refuse_operands_on_two_devices_naming_both():
    with pytest.raises(
        kael.Error,
        match=r"gather\(\): expected all tensors on one device, but found cpu and cuda:0",
    ):
        device_of([kael.ones(2)._impl, _OnCuda()], "gather()")


BOOL_FLAGS = {
    "sort descending": lambda L, x, v: L.sort(x, 0, descending=v),
    "sort stable": lambda L, x, v: L.sort(x, dim=0, stable=v),
    "argsort descending": lambda L, x, v: L.argsort(x, 0, descending=v),
    "argsort stable": lambda L, x, v: L.argsort(x, dim=0, stable=v),
    "topk largest": lambda L, x, v: L.topk(x, 1, largest=v),
    "topk sorted": lambda L, x, v: L.topk(x, 1, sorted=v),
    "gather sparse_grad": lambda L, x, v: L.gather(x, 0, x.long() * 0, sparse_grad=v),
    "nonzero as_tuple": lambda L, x, v: L.nonzero(x, as_tuple=v),
}


@pytest.mark.parametrize("value", ["yes", 1, np.bool_(True)], ids=repr)
@pytest.mark.parametrize("flag", list(BOOL_FLAGS))
def test_bool_flags_must_be_bools(flag, value):
    # Each was read by its truth value, so "yes" or 1 passed for True; PyTorch refuses them.
    with pytest.raises(TypeError):
        BOOL_FLAGS[flag](torch, torch.ones(3), value)
    op, what = flag.split()
    kind = "numpy.bool" if isinstance(value, np.bool_) else type(value).__name__
    with pytest.raises(kael.TypeError, match=rf"^{op}\(\): {what} must be a bool, got {kind}$"):
        BOOL_FLAGS[flag](kael, kael.ones(3), value)


@pytest.mark.parametrize("flag", list(BOOL_FLAGS))
def test_bool_flags_take_both_bools_like_torch(flag):
    for value in (False, True):
        got = BOOL_FLAGS[flag](kael, kael.tensor([1.0, 0.0, 2.0]), value)
        want = BOOL_FLAGS[flag](torch, torch.tensor([1.0, 0.0, 2.0]), value)
        got, want = (r[0] if isinstance(r, tuple) else r for r in (got, want))
        np.testing.assert_array_equal(got.numpy(), want.numpy())


# ---- take ------------------------------------------------------------------------------------

TAKE_DTYPES = [kael.float32, kael.float64, kael.int64, kael.bool, kael.float16]


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", TAKE_DTYPES, ids=str)
def test_take_reads_the_input_as_1d_in_logical_order_with_negative_indices(layout, dtype):
    k, t = make((3, 4), dtype, layout, seed=21)
    picks = torch.tensor([[0, -1, 5], [11, -12, 5]])  # any index shape; repeats allowed
    assert_same(kael.take(k, as_kael(picks)), torch.take(t, picks))
    assert_same(k.take(as_kael(picks[0])), t.take(picks[0]))


@pytest.mark.parametrize(
    "shape, picks",
    [((), [0]), ((), 0), ((5,), 3), ((5,), []), ((0,), []), ((2, 0), [[]])],
    ids=["0d-input", "0d-both", "0d-index", "empty-index", "empty-both", "empty-2d"],
)
def test_take_of_0d_and_empty_tensors_matches_torch(shape, picks):
    k, t = (
        make(shape, kael.float32, seed=22)
        if math.prod(shape)
        else (kael.zeros(shape), torch.zeros(shape))
    )
    tp = torch.tensor(picks, dtype=torch.int64)
    assert_same(kael.take(k, as_kael(tp)), torch.take(t, tp))


@pytest.mark.parametrize(
    "call, error, message",
    [
        (
            lambda: kael.take(kael.ones(2, 3), kael.tensor([0, 6])),
            kael.IndexError,
            "index 6 is out of range for a tensor of 6 elements",
        ),
        (
            lambda: kael.take(kael.ones(2, 3), kael.tensor([-7])),
            kael.IndexError,
            "index -7 is out of range for a tensor of 6",
        ),
        (
            lambda: kael.take(kael.ones(0), kael.tensor([0])),
            kael.IndexError,
            "take 1 elements from an empty tensor",
        ),
        (
            lambda: kael.take(kael.ones(3), kael.tensor([0.0])),
            kael.TypeError,
            "long tensor for index, but got float32",
        ),
        (
            lambda: kael.take(kael.ones(3), kael.tensor([0], dtype=kael.int32)),
            kael.TypeError,
            "but got int32",
        ),
        (lambda: kael.take(kael.ones(3), [0]), kael.TypeError, "index"),
    ],
    ids=["past-end", "before-start", "empty-input", "float-index", "int32-index", "list-index"],
)
def test_take_refuses_bad_indices_with_typed_errors(call, error, message):
    with pytest.raises(error, match=message):
        call()


@pytest.mark.parametrize("reduce", ["sum", "amax", "mean"])
def test_scatters_of_an_empty_index_with_zero_strides_change_nothing(reduce):
    # NumPy's and torch's empty arrays have strides (0, 0): the index check walked one of
    # its (nonexistent) elements, a segfault, before empty dims were kept empty
    index = kael.tensor(np.zeros((0, 1), dtype=np.int64))
    assert index.stride() == (0, 0)
    x = kael.zeros(1, 2, dtype=kael.int64)
    x.scatter_add_(1, index, kael.tensor(np.zeros((0, 1), dtype=np.int64)))
    assert x.tolist() == [[0, 0]]
    t = torch.zeros(3, 2)
    empty, values = torch.from_numpy(np.zeros((0, 2), dtype=np.int64)), torch.ones(0, 2)
    got = kael.scatter_reduce(
        kael.zeros(3, 2), 0, kael.tensor(empty.numpy()), kael.ones(0, 2), reduce
    )
    assert_same(got, torch.scatter_reduce(t, 0, empty, values, reduce))


@pytest.mark.parametrize("largest", [True, False])
@pytest.mark.parametrize("k", [1, 5, 129, 699])
@pytest.mark.parametrize("dtype", [kael.float32, kael.float16, kael.int64, kael.int8], ids=str)
def test_topk_of_long_rows_is_the_stable_sorts_first_k_as_torch_values(dtype, k, largest):
    k_rows, t_rows = _long_rows((3, 700), dtype, k)
    assert index_ops.selects(dtype, 700)  # few: the heap; many: radix selection, k sorted
    assert index_ops._heap_pays(700, k, 3, CPU) == (k < 100)
    values, indices = kael.topk(k_rows, k, 1, largest)
    want = torch.topk(t_rows, k, 1, largest)
    assert_same(values.to(kael.float32), want.values.float())
    stable = t_rows.sort(dim=1, descending=largest, stable=True).indices[:, :k]
    assert_same(indices, stable)


@pytest.mark.parametrize("order", ["random", "ascending", "descending"])
@pytest.mark.parametrize("k", [1, 40, 300])
def test_topk_by_the_heap_and_by_radix_selection_agree(monkeypatch, k, order):
    k_rows, t_rows = _long_rows((4, 2000), kael.float32, k)
    if order != "random":
        t_rows = t_rows.sort(dim=1, descending=order == "descending", stable=True).values
        k_rows = kael.tensor(t_rows.numpy())
    both = []
    for cost in (1e9, 0.0):  # every topk the heap's, then none
        monkeypatch.setattr(index_ops, "HEAP_ENTRY_COST", cost)
        assert index_ops._heap_pays(2000, k, 4, CPU) == (cost > 0)
        both.append(kael.topk(k_rows, k, 1))
    for got in both:
        assert_same(got.values, torch.topk(t_rows, k, 1).values)
        assert_same(got.indices, t_rows.sort(dim=1, descending=True, stable=True).indices[:, :k])


@pytest.mark.parametrize("largest", [True, False])
def test_topk_of_small_inputs_by_the_heap_and_by_rank_agree(monkeypatch, largest):
    """A small input takes the heap whatever k (no copies of whole ranked rows); the rank
    kernel gives the same values and indices: the stable order's first k, NaN largest."""
    values = np.array([[3, 1, 3, float("nan"), 2, 1, 0, 3, 2, 5, -1, 3, 1, 2, 0, 4]] * 3)
    k_rows, t_rows = kael.tensor(values, dtype=kael.float32), torch.tensor(values).float()
    stable = t_rows.sort(dim=1, descending=largest, stable=True)
    for threshold in (index_ops.SMALL_TOPK, 0):  # every small topk the heap's, then none
        monkeypatch.setattr(index_ops, "SMALL_TOPK", threshold)
        for k in range(1, 17):
            got = kael.topk(k_rows, k, 1, largest)
            assert_same(got.values, stable.values[:, :k])
            assert_same(got.indices, stable.indices[:, :k])


@pytest.mark.parametrize("n", [16, 20, 64])
def test_topk_of_short_rows_takes_the_heap_while_k_is_few(monkeypatch, n):
    # (k - 1) * RANK_HEAP <= n: the heap; one more, the rank kernel; both give torch's
    from kael.codegen.cpu import top

    heaps, original = [], top.order
    monkeypatch.setattr(top, "order", lambda *a: heaps.append(a) or original(*a))
    k_rows, t_rows = make((300, n), kael.float32, seed=n)  # past SMALL_TOPK elements
    assert k_rows.numel() > index_ops.SMALL_TOPK
    most = n // index_ops.RANK_HEAP + 1
    for k, heap in ((most, True), (most + 1, False)):
        heaps.clear()
        got = kael.topk(k_rows, k, 1)
        assert bool(heaps) is heap
        assert_same(got.values, torch.topk(t_rows, k, 1).values)
        assert_same(got.indices, t_rows.sort(dim=1, descending=True, stable=True).indices[:, :k])


def test_topk_of_many_from_rows_radix_selection_cannot_take_sorts_them(monkeypatch):
    # past radix selection's rows (here past a lowered MAX_ROW), a k the heap does not pay
    # for takes the whole order (the parallel merge sort), not one heap a row
    from kael.codegen.cpu import radix, top

    monkeypatch.setattr(radix, "MAX_ROW", 1000)
    heaps = []
    monkeypatch.setattr(top, "order", lambda *a: heaps.append(a))
    x = kael.tensor(np.random.default_rng(5).standard_normal((1, 5000), dtype=np.float32))
    assert not index_ops.selects(kael.float32, 5000)
    assert not index_ops._heap_pays(5000, 2500, 1, CPU)
    got = kael.topk(x, 2500)
    assert heaps == []
    want = torch.from_numpy(x.numpy()).sort(dim=1, descending=True, stable=True)
    assert_same(got.indices, want.indices[:, :2500])


def test_topk_of_few_long_rows_on_a_gpu_takes_radix_selection():
    # a GPU thread runs a heap row: a few rows would leave the device idle
    assert index_ops._heap_pays(50_000, 10, 64, CPU)
    assert not index_ops._heap_pays(50_000, 10, 64, CUDA)
    assert index_ops._heap_pays(50_000, 10, index_ops.DEVICE_HEAP_ROWS, CUDA)


@pytest.mark.parametrize("dim", [0, 1])
def test_topk_of_long_rows_along_any_dim_matches_torch(dim):
    k_rows, t_rows = make((300, 280), kael.float32, "transposed", seed=43)
    values, indices = kael.topk(k_rows, 17, dim)
    assert_same(values, torch.topk(t_rows, 17, dim).values)
    assert_same(
        indices, t_rows.sort(dim=dim, descending=True, stable=True).indices.narrow(dim, 0, 17)
    )


@pytest.mark.parametrize("k", [1, 2, 16, 17, 30])
@pytest.mark.parametrize("largest", [True, False])
def test_topk_of_rows_too_short_for_radix_selection_matches_torch(largest, k):
    # short rows: the rank kernel, or the heap for a few: each row its own stride
    t = torch.tensor([[float((7 * j + 3 * r) % 30) for j in range(31)] for r in range(3)])
    assert not index_ops.selects(kael.float32, 31)
    values, indices = kael.topk(kael.tensor(t.numpy()), k, 1, largest)
    assert_same(values, torch.topk(t, k, 1, largest).values)
    assert_same(indices, t.sort(dim=1, descending=largest, stable=True).indices[:, :k])


@pytest.mark.parametrize("shape, k, dim", [((0, 100), 1, 1), ((0, 100), 20, 1), ((100, 0), 1, 0)])
def test_topk_of_no_rows_is_empty_as_torch(shape, k, dim):
    got = kael.topk(kael.empty(*shape), k, dim)
    want = torch.topk(torch.empty(*shape), k, dim)
    assert_same(got.values, want.values)
    assert_same(got.indices, want.indices)


@pytest.mark.parametrize("op", ["scatter_", "scatter_add_", "scatter_reduce_"])
def test_a_scatters_src_has_the_index_rank_as_torch_refuses_it(op):
    """A src of fewer dims than the index was read past its end (a crash); of more, read
    through truncated strides. torch refuses both (IndexError, RuntimeError)."""
    extra = ("sum",) if op == "scatter_reduce_" else ()
    index = [[1, 0], [0, 1]]
    for src_shape, error in (((4,), kael.IndexError), ((2, 2, 2), kael.ValueError)):
        with pytest.raises(error, match="same number of dimensions as src tensor, got 2 and"):
            getattr(kael.zeros(2, 2), op)(0, kael.tensor(index), kael.ones(src_shape), *extra)
        with pytest.raises((IndexError, RuntimeError)):
            getattr(torch.zeros(2, 2), op)(0, torch.tensor(index), torch.ones(src_shape), *extra)
    empty = getattr(kael.zeros(2, 2), op)(0, kael.zeros(0, dtype=kael.int64), kael.ones(4), *extra)
    assert empty.tolist() == [[0.0, 0.0], [0.0, 0.0]]  # an empty index: no check, as torch


@pytest.mark.parametrize(
    "join",
    [
        lambda: kael.cat([kael.zeros(0, 3)] * 2),
        lambda: kael.stack([kael.zeros(0)] * 2),
        lambda: kael.cat([kael.zeros(2, 0)] * 2, 1),
    ],
)
def test_joining_into_an_empty_result_allocates_nothing_that_fails_to_free(join):
    import gc
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = join()
        assert result.numel() == 0
        del result
        gc.collect()


JOIN_DOOR_CALLS = [
    ("cat", [(4, 16), (4, 16)], 0),
    ("cat", [(4, 16), (4, 3)], 1),
    ("cat", [(2, 3, 5), (2, 1, 5), (2, 4, 5)], -2),
    ("cat", [(0,), (3, 4), (3, 4)], 0),  # the legacy empty 1-d piece is skipped
    ("stack", [(4, 16), (4, 16), (4, 16)], 1),
    ("stack", [(3, 5), (3, 5)], -1),
    ("cat", [(64, 64), (64, 64)], 0),  # moves PROMOTE_BYTES and more: still inline
    ("cat", [(96, 256), (96, 256)], 1),
]


@pytest.mark.parametrize("call", JOIN_DOOR_CALLS, ids=str)
@pytest.mark.parametrize("dtype", [kael.float32, kael.int64, kael.bool], ids=str)
def test_join_door_replays_the_row_copy_over_each_calls_tensors(call, dtype):
    """After a join's first call, its row copy replays over a fresh buffer and each call's
    own tensors (taken from inside bigger storages, at offsets): the full door's values
    (the door emptied for a second run)."""
    op, shapes, dim = call
    rng = np.random.default_rng(13)

    def fresh():
        made = []
        for s in shapes:
            base = kael.tensor(rng.standard_normal((2, *s)) * 5).to(dtype)
            made.append(base[1])  # an offset into its storage
        return made

    join = getattr(kael, op)
    saved = dict(index_ops._JOINS)
    index_ops._JOINS.clear()
    join(fresh(), dim)
    kept = dict(index_ops._JOINS)
    assert len(kept) == 1
    try:
        for _ in range(3):
            tensors = fresh()
            got, full = door_and_full(index_ops._JOINS, kept, lambda t=tensors: join(t, dim))
            assert got.shape == full.shape and got.dtype is dtype and got.is_contiguous()
            np.testing.assert_array_equal(got.numpy(), full.numpy())
            want = getattr(torch, op)([torch.from_dlpack(t.contiguous()) for t in tensors], dim)
            np.testing.assert_array_equal(got.numpy(), want.numpy())
    finally:
        index_ops._JOINS.clear()
        index_ops._JOINS.update(saved)


@pytest.mark.parametrize("op", ["cat", "stack"])
def test_join_door_holds_the_calls_tensors_while_its_copy_runs(op, monkeypatch):
    """A long replayed copy runs without the GIL: another thread may replace an item of
    the list meanwhile, freeing the tensor it held. The door reads from its own snapshot,
    so the freed block (taken at once by a new tensor of 9s) is never what it copies."""
    from kael.frontend import fastpath

    shape = (256, 128)  # two of them move 512 KiB: kept, and replayed without the GIL
    join = getattr(kael, op)
    pieces = [kael.full(shape, 1.0), kael.full(shape, 2.0)]
    join(pieces, 0)
    native, junk = fastpath._native, []

    def meanwhile(*words):  # what another thread may do while the copy runs
        monkeypatch.setattr(fastpath, "_native", native)  # kael.full's own fill
        pieces[0] = kael.full(shape, 1.0)
        junk.append(kael.full(shape, 9.0))
        native(*words)
        monkeypatch.setattr(fastpath, "_native", meanwhile)

    monkeypatch.setattr(fastpath, "_native", meanwhile)
    for _ in range(3):
        got = join(pieces, 0)
        assert sorted(np.unique(got.numpy()).tolist()) == [1.0, 2.0]
    assert junk  # the door served the calls


def test_join_door_leaves_mixed_dtypes_strided_pieces_and_generators_to_the_full_door():
    a, b = kael.randn(3, 4), kael.randn(3, 4)
    before = dict(index_ops._JOINS)
    kael.cat([a, b.double()])  # promoted: converted first
    kael.cat([a, b.T.contiguous().T])  # a strided piece: copied element by element
    assert before == index_ops._JOINS
    assert index_ops._join_key("cat", (t for t in (a, b)), 0) is None
    assert index_ops._join_key("cat", [a, b], 0.0) is None


@pytest.mark.parametrize("shape", [(4, 16), (3, 5, 7), (4000,)], ids=str)
@pytest.mark.parametrize("dtype", [kael.float32, kael.int64, kael.bool], ids=str)
def test_nonzero_replays_its_kept_launches_with_each_calls_values(shape, dtype):
    """A small host input's three nonzero launches are kept after a call that found a
    nonzero, then replayed by addresses: the full door's coordinates for every later
    input of that layout, none nonzero included (and x[mask] through them)."""
    from kael.codegen.cpu import gather as kernels

    rng = np.random.default_rng(14)
    key = ("nonzero", dtype, shape, kael.zeros(shape).stride(), True)
    kernels._LISTING_KEPT.pop(key, None)
    first = kael.tensor(rng.standard_normal(shape) > 0).to(dtype)
    kael.nonzero(first)
    assert key in kernels._LISTING_KEPT
    for share in (0.5, 0.0, 1.0, 0.01):
        values = rng.random(shape) < share
        got = kael.nonzero(kael.tensor(values).to(dtype))
        want = torch.nonzero(torch.from_numpy(values))
        assert got.dtype is kael.int64 and got.shape == tuple(want.shape)
        np.testing.assert_array_equal(got.numpy(), want.numpy())
    x = kael.tensor(rng.standard_normal(shape))
    mask = kael.tensor(rng.random(shape) < 0.3)
    np.testing.assert_array_equal(x[mask].numpy(), x.numpy()[mask.numpy()])


@pytest.mark.parametrize("shape", [(4, 16), (3, 5, 7), (5000,)], ids=str)
@pytest.mark.parametrize("dtype", [kael.float32, kael.int8, kael.float64], ids=str)
def test_mask_index_replays_its_kept_launches_with_each_calls_mask(shape, dtype):
    """x[mask]'s three compaction launches are kept after a call that found something,
    then replayed by addresses: torch's values for every later mask and input of that
    layout, an all-false mask included."""
    from kael.codegen.cpu import gather as kernels

    rng = np.random.default_rng(15)
    strides = kael.zeros(shape).stride()
    key = ("compact", dtype.itemsize, shape, strides, strides, (1, 0))
    kernels._LISTING_KEPT.pop(key, None)
    x = kael.tensor(rng.standard_normal(shape) * 50).to(dtype)
    x[x > 0]
    assert key in kernels._LISTING_KEPT
    for share in (0.5, 0.0, 1.0, 0.01):
        x = kael.tensor(rng.standard_normal(shape) * 50).to(dtype)
        values = rng.random(shape) < share
        got = x[kael.tensor(values)]
        want = torch.from_numpy(x.numpy())[torch.from_numpy(values)]
        assert got.dtype is dtype and got.shape == tuple(want.shape)
        np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_nonzero_launches_stay_visible_to_a_launch_recorder():
    x = kael.tensor([[0.0, 1.0], [2.0, 0.0]])
    kael.nonzero(x)  # kept
    got, launched = record_launches(kael.nonzero, x)
    assert got.tolist() == [[0, 1], [1, 0]]
    assert sum("nonzero" in r.symbol for r in launched) == 3
