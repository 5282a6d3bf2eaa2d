"""The hand-written index kernels below the frontend: walks over NumPy buffers of any layout,
index modes and bounds inside the kernel, race-free scatter_add and ordered nonzero."""

import numpy as np
import pytest

import kael
from kael.codegen.cpu import gather, handwritten
from kael.runtime.dtypes import (
    INT64_MAX,
    bool_,
    complex64,
    complex128,
    float32,
    float64,
    int8,
    int64,
    uint8,
)

NUMPY = {float32: np.float32, float64: np.float64, int64: np.int64, bool_: np.bool_}
NUMPY |= {complex64: np.complex64, complex128: np.complex128}


def op(arr: np.ndarray, strides=None) -> gather.Operand:
    """An operand over `arr` with its own element strides, or the given walk strides."""
    own = tuple(s // arr.itemsize for s in arr.strides)
    return gather.Operand(arr.ctypes.data, own if strides is None else tuple(strides))


def run_gather(src: np.ndarray, dim: int, index: np.ndarray, mode=gather.STRICT):
    """out[p] = src[p with coordinate dim replaced by index[p]]: (out, bad index or None)."""
    out = np.full(index.shape, 99, src.dtype)
    strides = [s // src.itemsize for s in src.strides]
    stride, strides[dim] = strides[dim], 0
    dtype = next(k for k, v in NUMPY.items() if v == src.dtype)
    bad = gather.walk(
        "gather",
        dtype,
        index.shape,
        op(out),
        op(src, strides),
        op(index),
        src.shape[dim],
        stride,
        mode,
    )
    return out, bad


@pytest.mark.parametrize(
    "dtype", [float32, float64, int64, bool_], ids=["f32", "f64", "i64", "bool"]
)
@pytest.mark.parametrize("dim", [0, 1, 2])
def test_gather_kernel_reads_any_layout(dtype, dim):
    rng = np.random.default_rng(0)
    src = (rng.integers(-9, 9, (8, 5, 6)).astype(NUMPY[dtype])).transpose(2, 0, 1)[:, ::2]
    index = rng.integers(0, src.shape[dim], (4, 3, 5)).T  # a transposed index
    out, bad = run_gather(src, dim, index)
    assert bad is None
    np.testing.assert_array_equal(out, _reference(src, dim, index))


def _reference(src, dim, index):
    out = np.empty(index.shape, src.dtype)
    for pos in np.ndindex(index.shape):
        at = list(pos)
        at[dim] = index[pos]
        out[pos] = src[tuple(at)]
    return out


def test_gather_kernel_reads_stride_0_operands():
    src = np.arange(4.0)
    index = np.broadcast_to(np.array([3, 1]), (1000, 2))  # an expanded index
    out, bad = run_gather(np.broadcast_to(src, (1000, 4)), 1, index)
    assert bad is None
    np.testing.assert_array_equal(out, np.broadcast_to([3.0, 1.0], (1000, 2)))


@pytest.mark.parametrize(
    ("mode", "value", "want"),
    [
        (gather.STRICT, 2, 2.0),
        (gather.STRICT, 3, None),
        (gather.STRICT, -1, None),
        (gather.WRAP, -1, 2.0),
        (gather.WRAP, -3, 0.0),
        (gather.WRAP, -4, None),
        (gather.WRAP, 3, None),
        (gather.MODULO, 5, 2.0),
        (gather.MODULO, -4, 2.0),
        (gather.MODULO, 3, 0.0),
    ],
)
def test_index_modes_map_then_check_both_ends(mode, value, want):
    out, bad = run_gather(np.array([0.0, 1.0, 2.0]), 0, np.array([value]), mode)
    if want is None:
        assert bad == value
        assert out[0] == 99  # nothing written for a bad index
    else:
        assert bad is None
        assert out[0] == want


# A unit-stride gather run moves blocks of gather.CHECK_BLOCK in-range indices unchecked (each
# mode maps them to themselves); a block holding one the mode must map or refuse, and the run's
# tail, go element by element. n leaves a tail after the last whole block.
BLOCK = gather.CHECK_BLOCK


@pytest.mark.parametrize("mode", [gather.STRICT, gather.WRAP, gather.MODULO], ids=str)
@pytest.mark.parametrize("where", [0, 2 * BLOCK + 3, 5 * BLOCK + 1], ids=str)
def test_a_gather_run_maps_an_index_in_a_block_or_its_tail_as_its_mode_says(mode, where):
    n, size = 5 * BLOCK + 2, 11
    src = np.arange(size, dtype=np.float32) * 3
    index = np.arange(n) % size
    index[where] = -3 if mode != gather.MODULO else 3 * size + 4
    out, bad = run_gather(src, 0, index, mode)
    if mode == gather.STRICT:
        assert bad == -3
        assert out[where] == 99  # nothing written for the bad index
        index[where] = 0
        out[where] = src[0]
    else:
        assert bad is None
    np.testing.assert_array_equal(out, src[index % size])


@pytest.mark.parametrize("value", [11, 1 << 62, np.iinfo(np.int64).min], ids=str)
def test_a_gather_run_reports_the_first_bad_index_of_any_block(value):
    n = 9 * BLOCK
    index = np.arange(n) % 11
    index[[3 * BLOCK + 5, 7 * BLOCK]] = [value, 12]
    out, bad = run_gather(np.arange(11.0), 0, index)
    assert bad == value
    good = np.ones(n, bool)
    good[[3 * BLOCK + 5, 7 * BLOCK]] = False
    np.testing.assert_array_equal(out[good], index[good].astype(np.float64))


@pytest.mark.parametrize("mode", [gather.STRICT, gather.WRAP, gather.MODULO], ids=str)
@pytest.mark.parametrize("where", [0, 2 * BLOCK + 3, 5 * BLOCK + 1], ids=str)
def test_a_put_run_maps_its_indices_and_the_last_write_wins(mode, where):
    n, size = 5 * BLOCK + 2, 11
    index = np.arange(n) % size  # every place written 4 or 5 times, in order
    index[where] = -3 if mode != gather.MODULO else 3 * size + 4
    source = np.arange(n, dtype=np.float64)
    table = np.full(size, -1.0)
    args = (float64, (n,), op(source), op(table, (0,)), op(index), size, 1, mode)
    bad = gather.walk("put", *args, parallel=False)
    want = np.full(size, -1.0)
    for j in range(n):
        if mode != gather.STRICT or j != where:
            want[index[j] % size] = source[j]
    assert bad == (-3 if mode == gather.STRICT else None)
    np.testing.assert_array_equal(table, want)


@pytest.mark.parametrize("kind", ["gather", "put"])
def test_the_block_path_is_in_the_cpu_walk_only(kind):
    from kael.codegen.ptx.handwritten import build_module

    assert "blocks.head" in gather.ir_text(kind, float32)
    assert "blocks.head" not in str(build_module(*gather._spec(kind, float32)))


@pytest.mark.parametrize("dtype", [complex64, complex128], ids=str)
@pytest.mark.parametrize("dim", [0, 1])
def test_a_complex_gather_moves_both_parts_through_any_layout(dtype, dim):
    values = np.arange(24) * (1 - 0.5j)
    src = values.astype(NUMPY[dtype]).reshape(4, 6).T[::2]  # [3, 4], strided both ways
    index = np.random.default_rng(dim).integers(0, src.shape[dim], (4, 3)).T  # transposed
    out, bad = run_gather(src, dim, index)
    assert bad is None
    np.testing.assert_array_equal(out, _reference(src, dim, index))


@pytest.mark.parametrize("kind", ["scatter_prod", "scatter_amax", "offsets"])
def test_walks_that_do_not_go_by_parts_refuse_complex_elements(kind):
    z = np.zeros(2, np.complex64)
    with pytest.raises(kael.TypeError, match=f'"{kind}" not implemented for complex64'):
        gather.walk(
            kind,
            complex64,
            (1, 2),
            op(z[None]),
            op(z, (0, 0)),
            op(np.zeros((1, 2), np.int64)),
            2,
            1,
        )


def test_modulo_of_an_empty_dim_is_out_of_bounds_not_a_division_by_zero():
    out, bad = run_gather(np.zeros((2, 0)), 1, np.zeros((2, 1), np.int64), gather.MODULO)
    assert bad == 0


def test_the_first_bad_index_in_walk_order_is_reported_whatever_the_thread_split():
    src = np.arange(10.0)
    index = np.zeros(1 << 20, np.int64)
    index[[300_000, 900_000, 1000]] = [-5, 77, 12]
    threads = kael.get_num_threads()
    try:
        for n in (1, 2):
            kael.set_num_threads(n)
            _, bad = run_gather(src, 0, index)
            assert bad == 12
    finally:
        kael.set_num_threads(threads)


def test_scatter_add_kernel_sums_repeats_in_index_order_and_check_pass_writes_nothing():
    table = np.zeros(3, np.float32)
    dense, index = np.array([1, 2, 3, 4], np.float32), np.array([0, 2, 0, 0])
    args = (float32, (4,), op(dense), op(table, (0,)), op(index), 3, 1)
    assert gather.walk("scatter_add", *args, write=False) is None
    np.testing.assert_array_equal(table, [0, 0, 0])
    assert gather.walk("scatter_add", *args) is None
    np.testing.assert_array_equal(table, [8, 0, 2])


def test_scatter_add_kernel_adds_bools_as_logical_or():
    table = np.array([False, False])
    dense, index = np.array([True, True, False]), np.array([0, 0, 1])
    gather.walk("scatter_add", bool_, (3,), op(dense), op(table, (0,)), op(index), 2, 1)
    np.testing.assert_array_equal(table.view(np.uint8), [1, 0])


def test_scatter_add_kernel_lines_are_race_free_over_threads():
    rng = np.random.default_rng(1)
    index = rng.integers(0, 7, (512, 2048))
    dense = rng.standard_normal((512, 2048))
    results = []
    threads = kael.get_num_threads()
    try:
        for n in (1, 2):
            kael.set_num_threads(n)
            table = np.zeros((512, 7))
            walk_table = (7, 0)  # the indexed dim (last) has stride 0 in the walk
            gather.walk(
                "scatter_add",
                float64,
                index.shape,
                op(dense),
                op(table, walk_table),
                op(index),
                7,
                1,
            )
            results.append(table)
    finally:
        kael.set_num_threads(threads)
    np.testing.assert_array_equal(results[0], results[1])
    want = np.zeros((512, 7))
    for j in range(7):
        want[:, j] = np.where(index == j, dense, 0).sum(axis=1)
    np.testing.assert_allclose(results[0], want, rtol=1e-12, atol=1e-12)


def test_put_kernel_writes_through_indices_and_offsets_kernel_accumulates():
    offsets = np.zeros(3, np.int64)
    rows, cols = np.array([2, 0, -1]), np.array([1, 3, 0])
    unused = gather.Operand(0, (0,))
    for index, size, stride in ((rows, 3, 4), (cols, 4, 1)):
        bad = gather.walk(
            "offsets", int64, (3,), op(offsets), unused, op(index), size, stride, gather.WRAP
        )
        assert bad is None
    np.testing.assert_array_equal(offsets, [9, 3, 8])
    table = np.zeros(12)
    gather.walk(
        "put",
        float64,
        (3,),
        op(np.array([1.0, 2.0, 3.0])),
        op(table, (0,)),
        op(offsets),
        INT64_MAX,
        1,
    )
    np.testing.assert_array_equal(np.nonzero(table)[0], [3, 8, 9])
    np.testing.assert_array_equal(table[[9, 3, 8]], [1.0, 2.0, 3.0])


def _nonzero(arr: np.ndarray):
    dtype = next(k for k, v in NUMPY.items() if v == arr.dtype)
    out = []

    def allocate(n):  # [n, rank] column-major, as the kernel writes it
        out.append(np.full((n, arr.ndim), -1, np.int64, order="F"))
        return out[0].ctypes.data

    count = gather.nonzero(dtype, arr.shape, op(arr), allocate)
    return count, out[0]


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, np.bool_])
def test_nonzero_kernel_lists_coordinates_in_row_major_order_by_columns_across_blocks(dtype):
    rng = np.random.default_rng(2)
    arr = (rng.random((60, 50, 7)) > 0.6).astype(dtype).transpose(1, 2, 0)[:, ::2]
    assert arr.size > 2 * gather.NONZERO_BLOCK
    count, coords = _nonzero(arr)
    assert count == np.count_nonzero(arr)
    np.testing.assert_array_equal(coords, np.argwhere(arr))


def test_nonzero_kernel_counts_nan_and_not_negative_zero_and_handles_0d_and_empty():
    count, coords = _nonzero(np.array([np.nan, -0.0, 0.0, 2.0]))
    np.testing.assert_array_equal(coords, [[0], [3]])
    assert _nonzero(np.array(5.0))[0] == 1
    assert _nonzero(np.array(0))[0] == 0
    count, coords = _nonzero(np.zeros((0, 4)))
    assert count == 0 and coords.shape == (0, 2)


def test_nonzero_writes_no_more_than_it_counted_though_the_input_changes(monkeypatch):
    # another thread may fill the input between the count and the write launches: each
    # block writes at most the places its count gave it, never past the buffer
    arr = np.zeros(3 * gather.NONZERO_BLOCK + 5, np.float64)
    arr[::97] = 1.0
    run = handwritten.HostRunner.run

    def meddling(self, name, build, symbol, words, *args, **kw):
        if symbol.startswith("kael_nonzero_write"):
            arr[:] = 1.0  # every element now nonzero
        return run(self, name, build, symbol, words, *args, **kw)

    monkeypatch.setattr(handwritten.HostRunner, "run", meddling)
    counted = np.count_nonzero(arr)
    out = []

    def allocate(n):  # the counted rows, then a guard row the kernel must leave alone
        out.append(np.full((n + 1, 1), -1, np.int64))
        return out[0].ctypes.data

    assert gather.nonzero(float64, arr.shape, op(arr), allocate) == counted
    assert out[0][-1, 0] == -1
    assert ((out[0][:-1, 0] >= 0) & (out[0][:-1, 0] < arr.size)).all()


def test_nonzero_places_its_write_no_longer_finds_are_zeros_not_stale_memory(monkeypatch):
    # another thread may clear the input between the count and the write launches
    arr = np.zeros(2 * gather.NONZERO_BLOCK, np.float64)
    arr[::7] = 1.0
    run = handwritten.HostRunner.run

    def meddling(self, name, build, symbol, words, *args, **kw):
        if symbol.startswith("kael_nonzero_write"):
            arr[:] = 0.0
        return run(self, name, build, symbol, words, *args, **kw)

    monkeypatch.setattr(handwritten.HostRunner, "run", meddling)
    count, coords = _nonzero(arr)  # _nonzero's buffer starts as -1s
    assert count == len(range(0, arr.size, 7)) and (coords == 0).all()


def _compact(values: np.ndarray, mask: np.ndarray, lead: int, fill=-1):
    """values[mask] through the compaction kernel: the mask over values' first `lead` dims,
    each hit copying the (foldable) row after them; (count, the output with a guard row)."""
    dtype = next(k for k, v in {**NUMPY, int8: np.int8}.items() if v == values.dtype)
    tail = values.shape[lead:]
    width = int(np.prod(tail))
    stride = values.strides[-1] // values.itemsize if tail else 0
    out = []

    def allocate(n):
        out.append(np.full((n + 1, *tail), fill, values.dtype))
        return out[0].ctypes.data

    strides = [s // values.itemsize for s in values.strides[:lead]]
    places = gather.Operand(values.ctypes.data, tuple(strides))
    count = gather.compact(dtype, mask.shape, op(mask), places, (width, stride), allocate)
    return count, out[0]


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, np.int8, np.bool_])
@pytest.mark.parametrize("tail", [(), (3,), (0,)], ids=str)
def test_compact_copies_the_masked_rows_row_major_across_blocks(dtype, tail):
    rng = np.random.default_rng(5)
    mask = (rng.random((60, 50, 7)) > 0.6).transpose(1, 2, 0)[:, ::2]
    assert mask.size > 2 * gather.NONZERO_BLOCK
    values = (rng.standard_normal((*mask.shape, *tail)) * 50).astype(dtype)
    count, out = _compact(values, mask, 3)
    assert count == np.count_nonzero(mask)
    np.testing.assert_array_equal(out[:-1], values[mask])
    assert (out[-1] == np.full_like(out[-1], -1)).all()  # the guard row is left alone


def test_compact_walks_a_broadcast_mask_and_strided_values():
    rng = np.random.default_rng(6)
    values = rng.standard_normal((9, 40))[:, ::3]
    row = rng.random(values.shape[1]) > 0.4
    mask = np.broadcast_to(row, values.shape)  # strides (0, 1)
    count, out = _compact(values, mask, 2)
    np.testing.assert_array_equal(out[:count], values[mask])
    scalar = np.array(7.5)
    assert _compact(scalar, np.array(True), 0)[1][0] == 7.5
    assert _compact(scalar, np.array(False), 0)[0] == 0


@pytest.mark.parametrize("tail", [(), (4,)], ids=str)
def test_compact_writes_no_more_than_it_counted_and_zeros_what_it_no_longer_finds(
    monkeypatch, tail
):
    # another thread may change the mask between the count and the write launches: each
    # block writes at most the places its count gave it, and zeros those it no longer finds
    mask = np.zeros(3 * gather.NONZERO_BLOCK + 5, np.bool_)
    mask[::97] = True
    values = np.arange(mask.size * max(1, int(np.prod(tail))), dtype=np.float64)
    values = values.reshape(mask.shape + tail) + 1
    run = handwritten.HostRunner.run
    counted = np.count_nonzero(mask)
    for change in (True, False):

        def meddling(self, name, build, symbol, words, *args, **kw):
            if symbol.startswith("kael_compact_write"):
                mask[:] = change  # noqa: B023
            return run(self, name, build, symbol, words, *args, **kw)

        monkeypatch.setattr(handwritten.HostRunner, "run", meddling)
        monkeypatch.setattr(gather, "_LISTING_KEPT", {})  # no replay past the meddling
        mask[:] = False
        mask[::97] = True
        count, out = _compact(values, mask, 1)
        assert count == counted and (out[-1] == -1).all()
        if change:  # every element now set: each block's first places, in place order
            assert (out[:-1] > 0).all()
        else:
            assert (out[:-1] == 0).all()


def test_each_kernel_family_is_one_module_per_dtype():
    # a first call compiles the one dtype it runs
    for kind in ("gather", "put", "scatter_add"):
        for dtype in (kael.float32, kael.float64, kael.int64, kael.bool):
            text = gather.ir_text(kind, dtype)
            assert f'define void @"kael_{kind}_{dtype.name}"' in text
            fold = f'define void @"kael_{kind}_{dtype.name}_fold"' in text  # a scatter's
            assert fold == (kind == "scatter_add")
            assert text.count("define void") == 1 + fold
    text = gather.ir_text("nonzero", kael.int64)
    assert 'define void @"kael_nonzero_count_int64"' in text
    assert 'define void @"kael_nonzero_write_int64"' in text
    assert 'define void @"kael_nonzero_scan"' in text
    assert text.count("define void") == 3
    text = gather.ir_text("compact", kael.int16)  # keyed by width: rows copied as bits
    for step in ("count", "write", "scan"):
        assert f'define void @"kael_compact_{step}_16"' in text
    assert text.count("define void") == 3


def test_a_run_sharing_one_index_is_checked_once_and_copied_whole():
    src = np.arange(12.0).reshape(3, 4)
    index = np.broadcast_to(np.array([[2], [0], [1]]), (3, 4))  # one index per output row
    out, bad = run_gather(src, 0, index)
    assert bad is None
    np.testing.assert_array_equal(out, src[[2, 0, 1]])
    index = np.broadcast_to(np.array([[2], [3], [-1]]), (3, 4))
    out, bad = run_gather(src, 0, index)
    assert bad == 3  # the first bad row in walk order
    np.testing.assert_array_equal(out[1:], 99)  # bad rows write nothing
    np.testing.assert_array_equal(out[0], src[2])


@pytest.mark.parametrize(
    "dtype", [float32, float64, int64, bool_], ids=["f32", "f64", "i64", "bool"]
)
@pytest.mark.parametrize("order", [gather.ORDER_LINES, gather.ORDER_OUTER])
def test_scatter_add_kernel_orders_give_the_sums_of_a_reference(dtype, order):
    rng = np.random.default_rng(3)
    index = rng.integers(0, 5, (4, 3, 9))  # walk order: the indexed dim (size 9 here) last
    dense = (
        rng.integers(0, 3, (4, 3, 9))
        .astype(NUMPY[dtype])
        .transpose(1, 0, 2)
        .copy()
        .transpose(1, 0, 2)
    )
    table = np.zeros((4, 3, 5), NUMPY[dtype])
    walk_table = (15, 5, 0)
    bad = gather.walk(
        "scatter_add",
        dtype,
        index.shape,
        op(dense),
        op(table, walk_table),
        op(index),
        5,
        1,
        order=order,
    )
    assert bad is None
    want = np.zeros((4, 3, 5), np.int64)
    for pos in np.ndindex(index.shape):
        want[pos[0], pos[1], index[pos]] += int(dense[pos])
    np.testing.assert_array_equal(table, want.astype(NUMPY[dtype]))


SPLIT_KINDS = ("scatter_add", "scatter_prod", "scatter_amax", "scatter_amin")


def run_split(kind, dtype, table, index, dense, parts):
    """A split walk of `dense` along the last dim of `table` (a strided view, its lines
    the index's leading dim): the bad index value or None."""
    sizes = index.shape
    strides = [s // table.itemsize for s in table.strides]
    walk_table = (*strides[:-1], 0)
    privates = np.empty(parts * gather.private_size(sizes, table.shape[-1]), table.dtype)
    return gather.walk(
        kind,
        dtype,
        sizes,
        op(dense),
        op(table, walk_table),
        op(index),
        table.shape[-1],
        strides[-1],
        split=(privates.ctypes.data, parts),
    )


@pytest.mark.parametrize("kind", SPLIT_KINDS)
@pytest.mark.parametrize(
    "dtype", [float32, float64, int64, bool_], ids=["f32", "f64", "i64", "bool"]
)
@pytest.mark.parametrize("parts", [1, 2, 3, 7])
def test_scatter_split_kernel_equals_the_line_walk(kind, dtype, parts):
    """Small integers: every reduction is exact, so chunked private tables folded in
    order give the line walk's values exactly, into a strided table of two lines."""
    rng = np.random.default_rng(4)
    index = rng.integers(0, 9, (2, 1000))
    dense = rng.integers(1, 3, (2, 1000)).astype(NUMPY[dtype])
    if kind == "scatter_prod" and dtype is not bool_:
        dense[:, 40:] = 1  # a product of 2s that stays exact
    start = rng.integers(-4, 5, (3, 9, 2)).astype(NUMPY[dtype])
    want, got = start.copy(), start.copy()
    lines = want.transpose(2, 0, 1)[:, 1]  # [2, 9], strides (1, 2) elements
    walk_table = tuple(s // want.itemsize for s in lines.strides[:-1]) + (0,)
    args = (lines.shape[-1], lines.strides[-1] // want.itemsize)
    assert (
        gather.walk(kind, dtype, index.shape, op(dense), op(lines, walk_table), op(index), *args)
        is None
    )
    assert run_split(kind, dtype, got.transpose(2, 0, 1)[:, 1], index, dense, parts) is None
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize(
    "kind, start, untouched",
    [
        ("scatter_add", -0.0, "-0.0 stays -0.0: the identity is -0.0"),
        ("scatter_prod", np.nan, "NaN stays NaN"),
        ("scatter_amax", -np.inf, "-inf stays -inf"),
        ("scatter_amin", np.inf, "inf stays inf"),
    ],
)
def test_scatter_split_leaves_untouched_places_bit_for_bit(kind, start, untouched):
    table = np.full((1, 5), start, np.float32)
    index = np.array([[1, 3, 1, 3]])
    dense = np.array([[2.0, 3.0, 4.0, 5.0]], np.float32)
    assert run_split(kind, float32, table, index, dense, 2) is None
    kept = table[0, [0, 2, 4]]
    assert np.array_equal(kept.view(np.int32), np.full(3, start, np.float32).view(np.int32)), (
        untouched
    )


@pytest.mark.parametrize("dtype", [int64, int8, uint8], ids=str)
def test_scatter_split_identities_are_the_integer_extremes(dtype):
    info = np.iinfo(dtype.numpy)
    for kind, start in (("scatter_amax", info.min), ("scatter_amin", info.max)):
        table = np.full((1, 4), start, dtype.numpy)
        dense = np.array([[5, 7]], dtype.numpy)
        assert run_split(kind, dtype, table, np.array([[2, 2]]), dense, 2) is None
        want = np.full((1, 4), start, dtype.numpy)
        want[0, 2] = 7 if kind == "scatter_amax" else 5
        np.testing.assert_array_equal(table, want)


def test_scatter_split_reports_the_first_bad_index_and_writes_nothing():
    table = np.zeros((1, 4), np.float32)
    index = np.zeros((1, 100), np.int64)
    index[0, [70, 30, 90]] = [9, -1, 4]
    dense = np.ones((1, 100), np.float32)
    for parts in (1, 2, 5):
        assert run_split("scatter_add", float32, table, index, dense, parts) == -1
        np.testing.assert_array_equal(table, 0)


# Unit-stride runs (source and index strides 1) take a loop that prefetches the table element
# gather.PREFETCH_AHEAD places on; other layouts take the general loop. Both give one result.
AHEAD = gather.PREFETCH_AHEAD
RUN_LENGTHS = [1, AHEAD - 1, AHEAD, AHEAD + 1, 3 * AHEAD + 7, 5000]
IDENTITY = {
    "scatter_add": -0.0,
    "scatter_prod": 1.0,
    "scatter_amax": -np.inf,
    "scatter_amin": np.inf,
}
UFUNC = {
    "scatter_add": np.add,
    "scatter_prod": np.multiply,
    "scatter_amax": np.maximum,
    "scatter_amin": np.minimum,
}


def _laid_out(arr: np.ndarray, layout: str) -> np.ndarray:
    """`arr` itself (unit strides: the prefetching loop) or a stride-2 view of a copy."""
    if layout == "unit":
        return arr
    wide = np.zeros(arr.shape[:-1] + (2 * arr.shape[-1],), arr.dtype)
    wide[..., ::2] = arr
    return wide[..., ::2]


def _split_reference(kind, table, index, dense, parts):
    """Each chunk of the flat walk combined in index order into its own identity-filled
    table, then the tables combined into `table` in chunk order (NumPy's unbuffered at)."""
    chunk = -(-index.size // parts)
    ufunc, out = UFUNC[kind], table.copy()
    for k in range(parts):
        own = np.full(table.shape[-1], IDENTITY[kind], table.dtype)
        ufunc.at(own, index[0, k * chunk : (k + 1) * chunk], dense[0, k * chunk : (k + 1) * chunk])
        out[0] = ufunc(out[0], own)
    return out


@pytest.mark.parametrize("kind", SPLIT_KINDS)
@pytest.mark.parametrize("dtype", [float32, float64], ids=str)
@pytest.mark.parametrize("n", RUN_LENGTHS)
@pytest.mark.parametrize("layout", ["unit", "source stride 2", "index stride 2"])
def test_a_split_combines_chunks_in_order_to_the_bit_in_any_layout(kind, dtype, n, layout):
    """Random floats round differently in any other order: each layout's chunks, in index
    order into private tables folded in chunk order, give the reference's bits."""
    rng = np.random.default_rng(n)
    index = rng.integers(0, 13, (1, n))
    dense = rng.standard_normal((1, n)).astype(NUMPY[dtype])
    if kind == "scatter_prod":
        dense = (1 + dense / 8).astype(dense.dtype)
    start = rng.standard_normal((1, 13)).astype(NUMPY[dtype])
    for parts in (1, 2, 3):
        got = start.copy()
        source = _laid_out(dense, layout if layout == "source stride 2" else "unit")
        places = _laid_out(index, layout if layout == "index stride 2" else "unit")
        assert run_split(kind, dtype, got, places, source, parts) is None
        want = _split_reference(kind, start, index, dense, parts)
        assert np.array_equal(got.view(np.uint8), want.view(np.uint8)), (parts, got - want)


@pytest.mark.parametrize("n", RUN_LENGTHS)
@pytest.mark.parametrize("layout", ["unit", "source stride 2", "index stride 2"])
@pytest.mark.parametrize("lines", [1, 3])
def test_a_line_walk_adds_in_index_order_to_the_bit_in_any_layout(n, layout, lines):
    """The line walk (no split) adds each line's values in index order into its table line."""
    rng = np.random.default_rng(n + lines)
    index = rng.integers(0, 11, (lines, n))
    dense = rng.standard_normal((lines, n)).astype(np.float32)
    table = rng.standard_normal((lines, 11)).astype(np.float32)
    want = table.copy()
    for row in range(lines):
        np.add.at(want[row], index[row], dense[row])
    source = _laid_out(dense, layout if layout == "source stride 2" else "unit")
    places = _laid_out(index, layout if layout == "index stride 2" else "unit")
    args = (float32, (lines, n), op(source), op(table, (11, 0)), op(places), 11, 1)
    assert gather.walk("scatter_add", *args) is None
    assert np.array_equal(table.view(np.int32), want.view(np.int32))


BAD_VALUES = [13, -1, 1 << 62, np.iinfo(np.int64).min, np.iinfo(np.int64).max]


@pytest.mark.parametrize("value", BAD_VALUES, ids=str)
@pytest.mark.parametrize("where", [0, 3 * AHEAD + 6 - AHEAD, 3 * AHEAD + 6], ids=str)
def test_a_unit_run_reports_a_bad_index_however_far_out_and_a_split_writes_nothing(value, where):
    """A bad index at the run's start, one prefetch distance before its end, or last: its
    prefetch reads an address far outside the table, which must not fault."""
    n = 3 * AHEAD + 7
    index = np.arange(n) % 13
    index[where] = value
    dense = np.ones((1, n), np.float32)
    for parts in (1, 2):
        table = np.zeros((1, 13), np.float32)
        assert run_split("scatter_add", float32, table, index[None], dense, parts) == value
        np.testing.assert_array_equal(table, 0)
    table = np.zeros(13, np.float32)
    args = (float32, (n,), op(dense[0]), op(table, (0,)), op(index), 13, 1)
    assert gather.walk("scatter_add", *args, write=False) == value
    np.testing.assert_array_equal(table, 0)  # the check-only pass writes nothing
    assert gather.walk("scatter_add", *args) == value
    want = np.zeros(13, np.float32)
    np.add.at(want, np.delete(index, where), 1)
    np.testing.assert_array_equal(table, want)  # the write pass skips the bad one alone


# Sorted segment ids: a unit-stride run whose probed indices mostly repeat their predecessor
# combines each stretch of one index in a register, from the table's value on; the bits are
# those of the element-by-element order. Stretches of 3 stay below the share, 4 and longer
# reach it; a stretch longer than a probe (gather.RUN_PROBE) spans probes.
SEGMENT_LENGTHS = [1, 3, 4, 17, 5 * gather.RUN_PROBE + 1, 5000]


def _segments(n: int, length: int, size: int) -> np.ndarray:
    """n segment ids in runs of `length`, each run the next place (cycling over `size`)."""
    return (np.arange(n) // length) % size


def _mixed(n: int, length: int, size: int, seed: int) -> np.ndarray:
    """Segments, then random places, then segments again: either way of the run meets both."""
    index = _segments(n, length, size)
    third = n // 3
    index[third : 2 * third] = np.random.default_rng(seed).integers(0, size, 2 * third - third)
    return index


@pytest.mark.parametrize("kind", SPLIT_KINDS)
@pytest.mark.parametrize("dtype", [float32, float64], ids=str)
@pytest.mark.parametrize("length", SEGMENT_LENGTHS)
@pytest.mark.parametrize("places", [_segments, _mixed], ids=["sorted", "mixed"])
def test_runs_of_one_index_combine_in_index_order_to_the_bit(kind, dtype, length, places):
    n, size = 3000, 37
    index = (places(n, length, size) if places is _segments else places(n, length, size, 1))[None]
    rng = np.random.default_rng(length)
    dense = rng.standard_normal((1, n)).astype(NUMPY[dtype])
    if kind == "scatter_prod":
        dense = (1 + dense / 64).astype(dense.dtype)
    start = rng.standard_normal((1, size)).astype(NUMPY[dtype])
    for parts in (1, 2):
        got = start.copy()
        assert run_split(kind, dtype, got, index, dense, parts) is None
        want = _split_reference(kind, start, index, dense, parts)
        assert np.array_equal(got.view(np.uint8), want.view(np.uint8)), (parts, got - want)
    got, want = start.copy(), start.copy()
    UFUNC[kind].at(want[0], index[0], dense[0])
    args = (dtype, (1, n), op(dense), op(got, (size, 0)), op(index), size, 1)
    assert gather.walk(kind, *args) is None
    assert np.array_equal(got.view(np.uint8), want.view(np.uint8))


@pytest.mark.parametrize("where", ["first", "inside", "last"])
def test_a_bad_index_in_a_run_is_reported_and_only_its_run_is_skipped(where):
    """A run of bad indices: the first bad position is reported, a split writes nothing, and
    the line walk's write pass combines every other run."""
    n, length = 1000, 50
    index = _segments(n, length, 13)
    at = {"first": 0, "inside": 500, "last": n - length}[where]
    index[at : at + length] = 13
    dense = np.ones((1, n), np.float32)
    for parts in (1, 2):
        table = np.zeros((1, 13), np.float32)
        assert run_split("scatter_add", float32, table, index[None], dense, parts) == 13
        np.testing.assert_array_equal(table, 0)
    table = np.zeros(13, np.float32)
    args = (float32, (n,), op(dense[0]), op(table, (0,)), op(index), 13, 1)
    assert gather.walk("scatter_add", *args) == 13
    want = np.zeros(13, np.float32)
    np.add.at(want, index[index < 13], 1)
    np.testing.assert_array_equal(table, want)


def test_runs_of_negative_indices_wrap_once_in_the_line_walk():
    """WRAP maps a run's index once for the whole run: -1 is the last place, -14 of 13 is bad."""
    n = 600
    index = -1 - _segments(n, 20, 13)  # -1 ... -13, runs of 20
    dense = np.arange(n, dtype=np.float64)
    table = np.zeros(13)
    args = (float64, (n,), op(dense), op(table, (0,)), op(index), 13, 1, gather.WRAP)
    assert gather.walk("scatter_add", *args) is None
    want = np.zeros(13)
    np.add.at(want, index + 13, dense)
    np.testing.assert_array_equal(table, want)
    index[300:320] = -14
    assert gather.walk("scatter_add", *args) == -14


@pytest.mark.parametrize("mode", [gather.WRAP, gather.MODULO], ids=str)
def test_a_line_walk_maps_the_indices_of_any_block_as_its_mode_says(mode):
    """Blocks of in-range indices combine unchecked in every mode; a block with one the mode
    maps (negative, or past the end for MODULO) goes element by element: the same sums."""
    n, size = 40 * gather.CHECK_BLOCK + 5, 13
    index = np.random.default_rng(5).integers(0, size, n)
    index[[7, 100, n - 1]] = [-1, -13, -5] if mode == gather.WRAP else [-1, 40, 3 * size]
    dense = np.arange(n, dtype=np.float64)
    table = np.zeros(size)
    args = (float64, (n,), op(dense), op(table, (0,)), op(index), size, 1, mode)
    assert gather.walk("scatter_add", *args) is None
    want = np.zeros(size)
    np.add.at(want, index % size, dense)
    np.testing.assert_array_equal(table, want)


def test_the_prefetch_and_register_runs_are_in_the_cpu_walk_only():
    """The CPU's split and line walks prefetch and combine runs in registers; the same builder
    leaves both out for a GPU."""
    from kael.codegen.ptx.handwritten import build_module

    text = gather.ir_text("scatter_add", float32)
    # per walk: the checked element's, each of a clean block's CHECK_BLOCK, the tail's
    per_walk = gather.CHECK_BLOCK + 2
    assert text.count('call void @"llvm.prefetch.p0"') == 2 * per_walk
    loops = [line for line in text.splitlines() if line.startswith("runs.head")]
    assert len(loops) == 2  # and combine runs of one index in a register
    gpu = str(build_module(*gather._spec("scatter_add", float32)))
    assert "llvm.prefetch" not in gpu and "runs.head" not in gpu
