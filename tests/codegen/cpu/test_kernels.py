"""Compiled copy, conversion and fill kernels over every layout class, against PyTorch."""

import math

import numpy as np
import pytest
import torch
from kernel_helpers import empty_like_np, impl_of

import kael
from kael.frontend import eager
from kael.frontend.inspection import record_launches
from kael.runtime import dtypes
from kael.runtime.threadpool import get_num_threads, set_num_threads

# Every dtype NumPy has (bfloat16 has no NumPy dtype: tests/frontend/test_dtype_ops.py).
NP = {d.name: d.numpy.type for d in dtypes.ALL_DTYPES if d is not dtypes.bfloat16}
TORCH = {name: getattr(torch, name) for name in NP}
SPECIALS = [0.0, -0.0, 1.0, -1.0, 2.5, -2.7, 1e-10, 1000.0, -1000.0, 1e20, -1e20]


def _copy(src: np.ndarray, dst_dtype) -> np.ndarray:
    out, dst = empty_like_np(src.shape, dst_dtype)
    eager.copy_into(dst, impl_of(src))
    return out


@pytest.mark.parametrize("src_name", list(NP))
@pytest.mark.parametrize("dst_name", list(NP))
def test_conversion_matches_torch_for_in_range_values(src_name, dst_name):
    info = np.iinfo(NP[src_name]) if np.issubdtype(NP[src_name], np.integer) else None
    if src_name == "int64":
        src = np.array([0, 1, -1, 2, -2, 1000, -1000, 2**40, -(2**40)], np.int64)
    elif info is not None:  # each narrow integer's own range, its limits included
        values = [0, 1, 2, 100, info.max, info.min, info.max - 1, -1, -100]
        src = np.array([v for v in values if info.min <= v <= info.max], NP[src_name])
    elif src_name == "float16":
        src = np.array([v for v in SPECIALS if abs(v) < 6e4], np.float16)
    elif dst_name == "int64":
        src = np.array([v for v in SPECIALS if abs(v) < 1e19]).astype(NP[src_name])
    else:
        src = np.array(SPECIALS).astype(NP[src_name])
    got = _copy(src, NP[dst_name])
    want = torch.from_numpy(src).to(TORCH[dst_name]).numpy()
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("src_dtype", [np.float32, np.float64])
def test_float_to_int_truncates_toward_zero(src_dtype):
    src = np.array([-2.7, 2.7, -0.5, 0.5, 1e15 + 0.5], src_dtype)
    assert _copy(src, np.int64).tolist() == [math.trunc(float(v)) for v in src]


@pytest.mark.parametrize("src_dtype", [np.float32, np.float64])
def test_float_to_int_saturates_and_maps_nan_to_zero(src_dtype):
    src = np.array([np.nan, np.inf, -np.inf, 1e30, -1e30, 2.0**63, -(2.0**63)], src_dtype)
    assert _copy(src, np.int64).tolist() == [
        0,
        2**63 - 1,
        -(2**63),
        2**63 - 1,
        -(2**63),
        2**63 - 1,
        -(2**63),
    ]


def test_float_to_int_keeps_the_largest_value_below_two_to_the_63():
    below = np.nextafter(2.0**63, 0)
    assert _copy(np.array([below, -below]), np.int64).tolist() == [int(below), -int(below)]


@pytest.mark.parametrize("src_dtype", [np.float32, np.float64, np.int64])
def test_any_nonzero_including_nan_converts_to_true(src_dtype):
    values = (
        [0, 1, -3, 2.5, np.nan, np.inf, -0.0] if src_dtype != np.int64 else [0, 1, -3, 2, 0, 9, 0]
    )
    src = np.array(values).astype(src_dtype)
    got = _copy(src, np.bool_)
    assert got.view(np.uint8).tolist() == [int(bool(v) or v != v) for v in src]


def test_bool_bytes_are_normalised_to_one():
    raw = np.array([0, 1, 2, 255], np.uint8).view(np.bool_)
    assert _copy(raw, np.int64).tolist() == [0, 1, 1, 1]
    assert _copy(raw, np.bool_).view(np.uint8).tolist() == [0, 1, 1, 1]


def test_int64_to_float32_rounds_to_nearest():
    src = np.array([2**24 + 1, 2**53 + 1, -(2**63)], np.int64)
    np.testing.assert_array_equal(_copy(src, np.float32), torch.from_numpy(src).float().numpy())


LAYOUTS = {
    "contiguous": lambda a: a,
    "transposed": lambda a: a.T,
    "transposed_square": lambda a: a[:, :24].T,
    "sliced": lambda a: a[1:, ::2],
    "permuted_3d": lambda a: a.reshape(24, 6, 5).transpose(2, 0, 1),
    "expanded": lambda a: np.broadcast_to(a[:1], (24, 30)),
    "column": lambda a: a[:, 3],
}


@pytest.mark.parametrize("name", list(LAYOUTS))
def test_copy_of_every_layout_matches_numpy(name):
    base = np.arange(24 * 30, dtype=np.float32).reshape(24, 30)
    src = LAYOUTS[name](base)
    np.testing.assert_array_equal(_copy(src, np.float64), src.astype(np.float64))


def test_copy_into_a_strided_destination_writes_only_its_elements():
    dst_base = np.full((6, 8), -1.0, np.float32)
    dst = dst_base[::2, 1::3]
    src = np.arange(dst.size, dtype=np.float32).reshape(dst.shape)
    eager.copy_into(impl_of(dst), impl_of(src))
    expect = np.full((6, 8), -1.0, np.float32)
    expect[::2, 1::3] = src
    np.testing.assert_array_equal(dst_base, expect)


@pytest.mark.parametrize("n", [0, 1, 15, 16, 17, 63, 64, 65, 1000, 4097])
def test_every_length_around_the_vector_width(n):
    src = np.arange(n, dtype=np.float32)
    np.testing.assert_array_equal(_copy(src, np.float32), src)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int8])
def test_row_tails_of_every_length_write_their_row_and_nothing_past_it(dtype):
    # Rows of 1 .. 2 widths + 1 in a wider buffer of guard values: the tails run element
    # by element (up to loops.SCALAR_TAIL) or as one masked vector (stored in pieces
    # without AVX-512), and neither may touch the guards between rows.
    width = 64 // np.dtype(dtype).itemsize
    for n in range(1, 2 * width + 2):
        src = (np.arange(7 * n) % 100).astype(dtype).reshape(7, n)
        guarded = np.full((7, n + 5), -1, dtype)
        eager.copy_into(impl_of(guarded[:, 2 : n + 2]), impl_of(src))
        np.testing.assert_array_equal(guarded[:, 2 : n + 2], src)
        assert (guarded[:, :2] == -1).all() and (guarded[:, n + 2 :] == -1).all(), n


def test_short_rows_of_a_large_output_store_through_the_caches():
    # Streaming stores of short rows write partial cache lines (rows of 27 float32 ran at
    # 2 GB/s streamed); a row of at least eager.STREAM_ROW_BYTES streams.
    rows = eager.NONTEMPORAL_BYTES // 108 + 1
    short = kael.empty(rows, 32)[:, :27]
    _, launches = record_launches(short.copy_, kael.ones(rows, 27))
    assert not launches[-1].kernel.nontemporal
    wide = eager.STREAM_ROW_BYTES // 4
    long_rows = kael.empty(eager.NONTEMPORAL_BYTES // eager.STREAM_ROW_BYTES + 1, wide + 3)
    _, launches = record_launches(long_rows[:, :wide].copy_, kael.ones(long_rows.shape[0], wide))
    assert launches[-1].kernel.nontemporal


def test_large_transposed_copy_uses_tiles_and_is_exact():
    src = np.arange(300 * 200, dtype=np.float64).reshape(300, 200).T
    np.testing.assert_array_equal(_copy(src, np.float64), src)


def test_large_copy_streams_and_is_exact_at_misaligned_offsets():
    n = (eager.NONTEMPORAL_BYTES // 4) + 37
    base = np.arange(n + 3, dtype=np.float32)
    out_base = np.zeros(n + 3, np.float32)
    eager.copy_into(impl_of(out_base[3:]), impl_of(base[1 : n + 1]))
    np.testing.assert_array_equal(out_base[3:], base[1 : n + 1])
    assert out_base[:3].tolist() == [0, 0, 0]


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_parallel_launch_gives_the_same_result_as_one_thread(threads):
    saved = get_num_threads()
    try:
        set_num_threads(threads)
        src = np.random.default_rng(0).standard_normal((1024, 777)).T
        np.testing.assert_array_equal(_copy(src, np.float32), src.astype(np.float32))
    finally:
        set_num_threads(saved)


@pytest.mark.parametrize("name", list(NP))
@pytest.mark.parametrize("value", [2.5, -1, True, 0, float("nan")])
def test_fill_converts_the_value_with_the_dtype_rules(name, value):
    out, dst = empty_like_np((5, 3), NP[name])
    if value != value and name in ("int32", "int16", "int8", "uint8"):
        with pytest.raises(RuntimeError):  # PyTorch: "cannot be converted ... without overflow"
            torch.full((5, 3), value, dtype=TORCH[name])
        with pytest.raises(kael.ValueError, match="without overflow"):
            eager.fill(dst, value)
        return
    eager.fill(dst, value)
    want = torch.full((5, 3), value, dtype=torch.float64).to(TORCH[name]).numpy()
    if name == "int64" and value != value:
        want = np.zeros((5, 3), np.int64)  # the book maps NaN to 0
    np.testing.assert_array_equal(out, want)


def test_fill_of_a_strided_view_leaves_the_gaps():
    base = np.zeros((4, 4), np.int64)
    eager.fill(impl_of(base[:, ::2]), 7)
    assert base.tolist() == [[7, 0, 7, 0]] * 4


def test_eye_and_arange_and_linspace_kernels():
    out, dst = empty_like_np((3, 4), np.float32)
    eager.eye_into(dst)
    np.testing.assert_array_equal(out, torch.eye(3, 4).numpy())
    out, dst = empty_like_np((5,), np.int64)
    eager.arange_into(dst, -4, 3)
    assert out.tolist() == [-4, -1, 2, 5, 8]
    out, dst = empty_like_np((7,), np.float64)
    eager.linspace_into(dst, -1.0, 0.3)
    np.testing.assert_allclose(
        out, torch.linspace(-1.0, 0.3, 7, dtype=torch.float64).numpy(), rtol=1e-14, atol=1e-15
    )
    assert out[-1] == 0.3


def test_empty_outputs_launch_nothing():
    out, dst = empty_like_np((0, 5), np.float32)
    eager.fill(dst, 1.0)
    assert out.shape == (0, 5)


def test_dtype_table_is_complete():
    assert set(NP) | {"bfloat16"} == {d.name for d in dtypes.ALL_DTYPES}


@pytest.mark.parametrize("shape", [(16, 16), (64, 48), (100, 37), (33, 250)])
@pytest.mark.parametrize(
    ("src_dtype", "dst_dtype"),
    [
        (np.float32, np.float32),
        (np.float32, np.float64),
        (np.int64, np.bool_),
        (np.float64, np.int64),
    ],
)
def test_tiled_transposes_with_full_and_edge_tiles(shape, src_dtype, dst_dtype):
    src = (np.arange(np.prod(shape)) % 7 - 3).astype(src_dtype).reshape(shape).T
    np.testing.assert_array_equal(_copy(src, dst_dtype), src.astype(dst_dtype))


def test_tiled_permutation_of_three_dims():
    src = np.arange(40 * 3 * 50, dtype=np.float32).reshape(40, 3, 50).transpose(2, 1, 0)
    np.testing.assert_array_equal(_copy(src, np.float32), src)


def test_linspace_of_one_step_is_start_not_end():
    out, dst = empty_like_np((1,), np.float32)
    eager.linspace_into(dst, 3.0, 7.0)
    assert out.tolist() == [3.0]


def test_fill_through_a_broadcast_destination_writes_the_shared_elements():
    base = np.zeros(3, np.float32)
    eager.fill(impl_of(np.broadcast_to(base, (4, 3))), 2.0)
    assert base.tolist() == [2.0, 2.0, 2.0]
