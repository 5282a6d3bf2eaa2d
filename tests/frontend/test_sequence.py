"""Sequence ops against PyTorch: cumsum, cumprod, tril, triu, flip and roll.

Values, dtype and shape over every dtype and over contiguous, transposed, stepped,
expanded, empty and 0-d inputs; integer wrap-around; out= and the in-place variants;
and a typed kael error naming the values for every bad input.
"""

import math
import shutil

import numpy as np
import pytest
import torch
from kernel_helpers import KAEL_DTYPES
from parity_helpers import resized_out

import kael
from kael.codegen.ptx import compiler as ptx_compiler
from kael.frontend import eager
from kael.frontend.inspection import record_launches
from kael.ir.kernel import BCAST, CONTIG, STRIDED

DTYPES = [torch.float32, torch.float64, torch.int64, torch.bool]
DTYPE_IDS = ["f32", "f64", "i64", "bool"]
INT64_MAX, INT64_MIN = 2**63 - 1, -(2**63)

# ---- helpers ---------------------------------------------------------------------------------


def values(dtype: torch.dtype, shape: tuple, seed: int = 0) -> torch.Tensor:
    """Reproducible values of `shape`: floats near 1 in magnitude (products stay finite)."""
    gen = torch.Generator().manual_seed(seed)
    n = math.prod(shape)
    if dtype.is_floating_point:
        data = (torch.rand(n, generator=gen, dtype=torch.float64) * 1.5 + 0.25) * torch.where(
            torch.rand(n, generator=gen) < 0.3, -1.0, 1.0
        )
        return data.to(dtype).reshape(shape)
    if dtype == torch.bool:
        return (torch.rand(n, generator=gen) < 0.6).reshape(shape)
    return torch.randint(-9, 10, (n,), generator=gen).reshape(shape)


def to_kael(t: torch.Tensor) -> kael.Tensor:
    """A kael copy of a torch tensor (same values, dtype and shape)."""
    k = kael.tensor(t.contiguous().numpy())
    assert k.dtype is KAEL_DTYPES[t.dtype] and k.shape == tuple(t.shape)
    return k


# Each layout: (base shape, view) giving a [4, 5, 6] tensor (or an empty / 0-d one).
LAYOUTS = {
    "contiguous": ((4, 5, 6), lambda x: x),
    "transposed": ((6, 5, 4), lambda x: x.permute(2, 1, 0)),
    "stepped": ((8, 5, 12), lambda x: x[::2, :, 1::2]),
    "expanded": ((1, 5, 1), lambda x: x.expand(4, 5, 6)),
    "empty": ((4, 0, 6), lambda x: x),
    "zero_dim": ((), lambda x: x),
}


def twin(dtype: torch.dtype, layout: str, seed: int = 0):
    """(kael, torch) holding the same values, both seen through `layout`'s view."""
    shape, view = LAYOUTS[layout]
    base = values(dtype, shape, seed)
    return view(to_kael(base)), view(base)


def assert_same(k, t: torch.Tensor, exact: bool = False) -> None:
    """Same shape, dtype and values; float32 within rtol 1e-5 / atol 1e-6 unless exact."""
    assert isinstance(k, kael.Tensor), type(k)
    assert k.shape == tuple(t.shape)
    assert k.dtype is KAEL_DTYPES[t.dtype], (k.dtype, t.dtype)
    got = torch.from_numpy(np.array(k.numpy()))
    if t.dtype == torch.float32 and not exact:
        torch.testing.assert_close(got, t, rtol=1e-5, atol=1e-6, equal_nan=True)
    else:
        torch.testing.assert_close(got, t, rtol=0, atol=0, equal_nan=True)


def dims_of(layout: str) -> list[int]:
    return [0, -1] if layout == "zero_dim" else [0, 1, 2, -1, -3]


# ---- cumsum and cumprod ----------------------------------------------------------------------

SCANS = ["cumsum", "cumprod"]


@pytest.mark.parametrize("layout", list(LAYOUTS))
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("op", SCANS)
def test_scan_matches_torch_along_every_dim_of_every_layout(op, dtype, layout):
    k, t = twin(dtype, layout)
    for dim in dims_of(layout):
        assert_same(getattr(kael, op)(k, dim), getattr(torch, op)(t, dim))
        assert_same(getattr(k, op)(dim), getattr(t, op)(dim))


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("op", SCANS)
def test_scan_result_dtype_is_int64_for_int_and_bool_and_the_input_dtype_for_floats(op, dtype):
    k, t = twin(dtype, "contiguous")
    want = dtype if dtype.is_floating_point else torch.int64
    assert getattr(kael, op)(k, 1).dtype is KAEL_DTYPES[want]
    assert getattr(torch, op)(t, 1).dtype == want


@pytest.mark.parametrize(
    ("shape", "dim"),
    [
        ((7, 70), 0),  # two full vector chunks of columns and a 6-column edge
        ((3, 5, 100), 1),  # a middle dim with a contiguous inner dim
        ((2, 3, 32), 0),  # exactly one chunk
        ((33, 31), 0),  # fewer columns than one chunk: line by line
        ((70, 7), 1),
        ((5, 1, 40), 0),  # a size-1 batch dim between
        ((1, 70), 0),  # a scan of length 1 is a converting copy in vector chunks
        ((9000, 2), 1),  # many lines of two: no division per line
    ],
)
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("op", SCANS)
def test_scan_along_an_outer_dim_matches_torch_in_full_and_edge_chunks(op, dtype, shape, dim):
    t = values(dtype, shape, seed=3)
    assert_same(getattr(kael, op)(to_kael(t), dim), getattr(torch, op)(t, dim))


@pytest.mark.parametrize("op", SCANS)
def test_scan_of_a_long_float32_line_accumulates_like_torch(op):
    t = torch.rand(300_000, dtype=torch.float32, generator=torch.Generator().manual_seed(1))
    if op == "cumprod":
        t = 1.0 + (t - 0.5) * 1e-4
    assert_same(getattr(kael, op)(to_kael(t), 0), getattr(torch, op)(t, 0))


@pytest.mark.parametrize("op", SCANS)
def test_scan_of_a_large_tensor_split_over_threads_matches_torch(op):
    t = values(torch.float64, (300, 1000), seed=5)
    if op == "cumprod":
        t = t.sign() * (1.0 + t.abs() * 1e-3)
    for dim in (0, 1):
        assert_same(getattr(kael, op)(to_kael(t), dim), getattr(torch, op)(t, dim))
        assert_same(getattr(kael, op)(to_kael(t.T), dim), getattr(torch, op)(t.T, dim))


@pytest.mark.parametrize("dim", [0, 1])
def test_scan_of_a_large_transposed_input_runs_in_its_layout_then_copies(dim):
    t = values(torch.float64, (400, 300), seed=7).T
    k = to_kael(t.T).T
    got, launches = record_launches(kael.cumsum, k, dim)
    copies = [r for r in launches if "copy" in r.symbol]
    assert len(copies) == 1 and copies[0].shape == (300, 400)
    scans = [r for r in launches if "copy" not in r.symbol]
    assert len(scans) == 1 and scans[0].symbol.startswith("kael_scan_cumsum_float64_float64")
    assert_same(got, torch.cumsum(t, dim))
    small = values(torch.float64, (40, 30), seed=7).T
    k = to_kael(small.T).T
    got, launches = record_launches(kael.cumsum, k, dim)
    # below STAGE_ELEMENTS: one strided walk, no copy
    assert [r.symbol.startswith("kael_scan_cumsum") for r in launches] == [True]
    assert_same(got, torch.cumsum(small, dim))


def test_int64_cumsum_wraps_past_int64_max():
    t = torch.tensor([INT64_MAX, 1, INT64_MIN, -1, 5])
    got = kael.cumsum(to_kael(t), 0)
    assert got.tolist() == [INT64_MAX, INT64_MIN, 0, -1, 4]
    assert_same(got, torch.cumsum(t, 0))


def test_int64_cumsum_wraps_in_vector_columns_too():
    t = torch.full((3, 40), INT64_MAX)
    assert_same(kael.cumsum(to_kael(t), 0), torch.cumsum(t, 0))


def test_int64_cumprod_overflow_wraps():
    t = torch.tensor([2**62, 4, 3, 2**40, 2**40])
    got = kael.cumprod(to_kael(t), 0)
    assert got.tolist()[:2] == [2**62, 0]
    assert_same(got, torch.cumprod(t, 0))
    t = torch.tensor([3] * 50)  # 3**50 wraps
    assert_same(kael.cumprod(to_kael(t), 0), torch.cumprod(t, 0))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("op", SCANS)
def test_scan_propagates_nan_and_infinity_like_torch(op, dtype):
    t = torch.tensor([1.0, float("inf"), 0.0, 2.0, float("nan"), 3.0, -float("inf")], dtype=dtype)
    assert_same(getattr(kael, op)(to_kael(t), 0), getattr(torch, op)(t, 0))
    t = torch.tensor([1.0, -float("inf"), float("inf"), 2.0], dtype=dtype)
    assert_same(getattr(kael, op)(to_kael(t), 0), getattr(torch, op)(t, 0))


@pytest.mark.parametrize("out_dtype", [torch.float32, torch.float64, torch.int64])
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("op", SCANS)
def test_scan_dtype_argument_converts_the_input_before_accumulating(op, dtype, out_dtype):
    t = values(dtype, (4, 5), seed=2) * (3 if dtype.is_floating_point else 1)
    k = to_kael(t)
    for dim in (0, 1):
        got = getattr(kael, op)(k, dim, dtype=KAEL_DTYPES[out_dtype])
        assert_same(got, getattr(torch, op)(t, dim, dtype=out_dtype))


@pytest.mark.parametrize("op", SCANS)
def test_scan_of_an_empty_tensor_is_empty_with_the_result_dtype(op):
    for shape in [(0,), (3, 0), (0, 4)]:
        t = torch.zeros(shape, dtype=torch.int64)
        for dim in range(len(shape)):
            assert_same(getattr(kael, op)(to_kael(t), dim), getattr(torch, op)(t, dim))


@pytest.mark.parametrize("op", SCANS)
def test_scan_of_a_zero_dim_tensor_is_its_value_for_dim_0_and_minus_1(op):
    t = torch.tensor(True)
    for dim in (0, -1):
        got = getattr(kael, op)(to_kael(t), dim)
        assert got.shape == () and got.dtype is kael.int64 and got.item() == 1


@pytest.mark.parametrize("op", SCANS)
def test_scan_writes_into_out(op):
    t = values(torch.float32, (4, 5), seed=4)
    k = to_kael(t)
    out = kael.empty(4, 5)
    assert getattr(kael, op)(k, 1, out=out) is out
    assert_same(out, getattr(torch, op)(t, 1))


@pytest.mark.parametrize("op", SCANS)
def test_scan_into_a_transposed_out_view_matches_torch(op):
    t = values(torch.float64, (40, 50), seed=4)
    out = kael.empty(50, 40, dtype=kael.float64).T
    getattr(kael, op)(to_kael(t), 0, out=out)
    assert_same(out, getattr(torch, op)(t, 0))


@pytest.mark.parametrize("op", SCANS)
def test_scan_into_out_that_overlaps_the_input_in_another_layout_reads_the_input_first(op):
    t = values(torch.float64, (6, 6), seed=8)
    k = to_kael(t)
    getattr(kael, op)(k.T, 1, out=k)
    assert_same(k, getattr(torch, op)(t.T, 1))


@pytest.mark.parametrize("op", SCANS)
def test_scan_out_of_another_dtype_raises_and_of_another_shape_is_resized(op):
    # the scan runs in out's dtype (test_out_casting.py), which bool is not
    k = kael.ones(3, 4)
    with pytest.raises(kael.TypeError, match="dtype bool is not supported"):
        getattr(kael, op)(k, 0, out=kael.empty(3, 4, dtype=kael.bool))
    got = resized_out(lambda o: getattr(kael, op)(k, 0, out=o), kael.empty(4, 3), (3, 4))
    np.testing.assert_array_equal(got.numpy(), getattr(torch, op)(torch.ones(3, 4), 0).numpy())


@pytest.mark.parametrize("layout", ["contiguous", "transposed", "stepped", "zero_dim", "empty"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int64], ids=DTYPE_IDS[:3])
@pytest.mark.parametrize("op", SCANS)
def test_inplace_scan_writes_self_in_its_own_layout(op, dtype, layout):
    k, t = twin(dtype, layout, seed=6)
    dim = 0 if layout == "zero_dim" else 1
    result = getattr(k, f"{op}_")(dim)
    getattr(t, f"{op}_")(dim)
    assert result is k
    assert_same(k, t)


@pytest.mark.parametrize("op", SCANS)
def test_inplace_scan_whose_result_dtype_differs_from_self_raises(op):
    with pytest.raises(kael.TypeError, match="input tensor dtype int8 and output tensor dtype"):
        getattr(kael.ones(3, dtype=kael.int8), f"{op}_")(0, dtype=kael.int64)
    with pytest.raises(kael.TypeError, match="dtype int64 and output tensor dtype float32"):
        getattr(kael.ones(3, dtype=kael.int64), f"{op}_")(0, dtype=kael.float32)


@pytest.mark.parametrize("op", SCANS)
def test_inplace_scan_of_an_expanded_tensor_raises(op):
    k = kael.ones(1, 3).expand(4, 3)
    with pytest.raises(kael.Error, match="more than one element of the written-to tensor"):
        getattr(k, f"{op}_")(0)


@pytest.mark.parametrize("op", SCANS)
def test_scan_dim_out_of_range_raises_index_error_naming_the_range(op):
    k = kael.ones(3, 4)
    with pytest.raises(kael.IndexError, match=r"range of \[-2, 1\], but got 2\)"):
        getattr(kael, op)(k, 2)
    with pytest.raises(kael.IndexError, match=r"range of \[-2, 1\], but got -3\)"):
        getattr(kael, op)(k, -3)
    with pytest.raises(kael.IndexError, match=r"range of \[-1, 0\], but got 1\)"):
        getattr(kael, op)(kael.tensor(2.0), 1)


@pytest.mark.parametrize("op", SCANS)
def test_scan_bad_argument_types_raise_type_error(op):
    k = kael.ones(3)
    with pytest.raises(kael.TypeError, match="dim must be an int, got float"):
        getattr(kael, op)(k, 0.5)
    with pytest.raises(kael.TypeError, match="dim must be an int, got NoneType"):
        getattr(kael, op)(k, None)
    with pytest.raises(kael.TypeError, match="dtype bool is not supported"):
        getattr(kael, op)(k, 0, dtype=kael.bool)
    with pytest.raises(kael.TypeError, match="input must be a Tensor, got list"):
        getattr(kael, op)([1, 2], 0)


# ---- tril and triu ---------------------------------------------------------------------------

TRIANGLES = ["tril", "triu"]
DIAGONALS = [-7, -6, -5, -4, -1, 0, 1, 5, 6, 7, 2**62, -(2**62), 2**63 - 1, -(2**63)]


@pytest.mark.parametrize("layout", ["contiguous", "transposed", "stepped", "expanded", "empty"])
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("op", TRIANGLES)
def test_triangle_matches_torch_in_every_layout(op, dtype, layout):
    k, t = twin(dtype, layout)
    for diagonal in (-2, 0, 3):
        assert_same(getattr(kael, op)(k, diagonal), getattr(torch, op)(t, diagonal), exact=True)
        assert_same(getattr(k, op)(diagonal=diagonal), getattr(t, op)(diagonal), exact=True)


@pytest.mark.parametrize("op", TRIANGLES)
def test_triangle_diagonals_on_both_sides_of_the_matrix_edges(op):
    t = values(torch.float32, (2, 5, 6), seed=9)
    k = to_kael(t)
    for diagonal in DIAGONALS:
        want = getattr(torch, op)(t, diagonal)
        assert_same(getattr(kael, op)(k, diagonal), want, exact=True)


@pytest.mark.parametrize("shape", [(1, 1), (1, 9), (9, 1), (3, 0), (20, 33)])
@pytest.mark.parametrize("op", TRIANGLES)
def test_triangle_of_thin_and_wide_matrices_matches_torch(op, shape):
    t = values(torch.int64, shape, seed=10)
    for diagonal in (-1, 0, 1):
        assert_same(getattr(kael, op)(to_kael(t), diagonal), getattr(torch, op)(t, diagonal))


@pytest.mark.skipif(shutil.which("ptxas") is None, reason="ptxas is not on PATH")
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("op", TRIANGLES)
def test_triangle_kernels_compile_to_ptx_that_ptxas_accepts(op, dtype):
    kdtype = KAEL_DTYPES[dtype]
    getattr(kael, op)(kael.zeros(2, 2, 2, dtype=kdtype))
    kernel, _ = eager._templates[("triangle", op == "triu", kdtype, 3)]
    for inners in [(CONTIG, CONTIG), (CONTIG, STRIDED), (STRIDED, BCAST)]:
        specialized = kernel.specialize(3, inners, False, False)
        ptx = ptx_compiler.ptx_for(specialized)
        assert f".visible .entry {ptx_compiler.function_name(specialized)}(" in ptx
        ptx_compiler.ptxas_check(ptx)


@pytest.mark.parametrize("op", TRIANGLES)
def test_triangle_writes_into_out(op):
    t = values(torch.float64, (4, 4), seed=11)
    out = kael.empty(4, 4, dtype=kael.float64)
    assert getattr(kael, op)(to_kael(t), 1, out=out) is out
    assert_same(out, getattr(torch, op)(t, 1))


@pytest.mark.parametrize("layout", ["contiguous", "transposed", "stepped"])
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("op", TRIANGLES)
def test_inplace_triangle_writes_self_in_its_own_layout(op, dtype, layout):
    k, t = twin(dtype, layout, seed=12)
    assert getattr(k, f"{op}_")(-1) is k
    getattr(t, f"{op}_")(-1)
    assert_same(k, t)


@pytest.mark.parametrize("op", TRIANGLES)
def test_triangle_of_fewer_than_two_dims_raises(op):
    for k in (kael.ones(3), kael.tensor(1.0)):
        with pytest.raises(kael.Error, match=f"{op}: input tensor must have at least 2 dim"):
            getattr(kael, op)(k)
        with pytest.raises(kael.Error, match=f"{op}_: input tensor must have at least 2 dim"):
            getattr(k, f"{op}_")()


@pytest.mark.parametrize("op", TRIANGLES)
def test_triangle_bad_arguments_raise_typed_errors(op):
    with pytest.raises(kael.TypeError, match="diagonal must be an int, got float"):
        getattr(kael, op)(kael.ones(2, 2), 0.5)
    with pytest.raises(kael.Error, match="more than one element of the written-to tensor"):
        getattr(kael.ones(1, 3).expand(2, 3), f"{op}_")()
    with pytest.raises(kael.TypeError, match="out has dtype int64 but the result has dtype"):
        getattr(kael, op)(kael.ones(2, 2), out=kael.empty(2, 2, dtype=kael.int64))


@pytest.mark.parametrize("diagonal", [2**63, -(2**63) - 1, 2**70])
@pytest.mark.parametrize("op", TRIANGLES)
def test_triangle_diagonal_beyond_int64_is_a_value_error(op, diagonal):
    # The diagonal is one int64 kernel word; PyTorch refuses what does not fit (the last
    # int64 values themselves are in test_triangle_diagonals_on_both_sides_of_the_matrix_edges).
    with pytest.raises(ValueError):
        getattr(torch, op)(torch.ones(2, 2), diagonal)
    message = f"^diagonal {diagonal} is out of the range of int64$"
    for call in (
        lambda k: getattr(kael, op)(k, diagonal),
        lambda k: getattr(k, f"{op}_")(diagonal),
    ):
        k = kael.ones(2, 2)
        with pytest.raises(kael.ValueError, match=message):
            call(k)
        assert k.tolist() == [[1.0, 1.0], [1.0, 1.0]]


# ---- flip ------------------------------------------------------------------------------------

FLIP_DIMS = [(0,), (1,), (2,), (-1,), (0, 2), [2, 0, 1], (), 1]


@pytest.mark.parametrize("layout", list(LAYOUTS))
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_flip_matches_torch_in_every_layout(dtype, layout):
    k, t = twin(dtype, layout)
    dims_list = [(), (0,), (-1,)] if layout == "zero_dim" else FLIP_DIMS
    for dims in dims_list:
        want = torch.flip(t, (dims,) if isinstance(dims, int) else dims)
        assert_same(kael.flip(k, dims), want, exact=True)
        assert_same(k.flip(dims), want, exact=True)


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_flip_of_large_transposed_and_sliced_views_matches_torch(dtype):
    base = values(dtype, (70, 80), seed=13)
    k = to_kael(base)
    for view in (lambda x: x.T, lambda x: x[3:60:3, 1:], lambda x: x.T[::2]):
        for dims in [(0,), (1,), (0, 1)]:
            assert_same(kael.flip(view(k), dims), torch.flip(view(base), dims), exact=True)


def test_flip_of_a_transposed_input_keeps_its_layout_in_one_streaming_copy():
    """torch's flip allocates empty_like(input): a transposed input's flip is transposed
    too, so the copy walks both sides in one order (no tiled transpose) backwards."""
    base = values(torch.float32, (70, 80), seed=14)
    k = to_kael(base).T
    got, (launch,) = record_launches(kael.flip, k, (1,))
    assert not launch.kernel.tiled
    want = torch.flip(base.T, (1,))
    assert_same(got, want, exact=True)
    assert got.stride() == want.stride() == (1, 80)


def test_flip_result_is_a_new_contiguous_tensor():
    k = kael.arange(6).view(2, 3)
    f = kael.flip(k, (0,))
    assert f.is_contiguous() and not f.shares_storage(k)


def test_flip_repeated_dims_raise():
    with pytest.raises(
        kael.Error, match=r"dim 0 appears multiple times in the list of dims \[0, -2\]"
    ):
        kael.flip(kael.ones(2, 3), (0, -2))


def test_flip_bad_dims_raise_typed_errors():
    with pytest.raises(kael.IndexError, match=r"range of \[-2, 1\], but got 2\)"):
        kael.flip(kael.ones(2, 3), (2,))
    with pytest.raises(kael.IndexError, match=r"range of \[-1, 0\], but got 1\)"):
        kael.flip(kael.tensor(3), (1,))
    with pytest.raises(kael.TypeError, match="dims must be an int or a tuple of ints, got None"):
        kael.flip(kael.ones(2, 3), None)
    with pytest.raises(kael.TypeError, match="dims element 0 must be an int, got float"):
        kael.flip(kael.ones(2, 3), (0.0,))


# ---- roll ------------------------------------------------------------------------------------

ROLLS = [
    (1, 0),
    (-1, 2),
    (7, -1),
    (-13, 1),
    ((1, 2), (0, 2)),
    ([3, -4, 5], [0, 1, 2]),
    ((1, 1), (1, 1)),
    (0, 1),
    (4, 0),  # a whole turn
    (2, None),
    (-31, None),
    ((5,), None),
]


@pytest.mark.parametrize("layout", ["contiguous", "transposed", "stepped", "expanded", "empty"])
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_roll_matches_torch_in_every_layout(dtype, layout):
    k, t = twin(dtype, layout)
    for shifts, dims in ROLLS:
        want = torch.roll(t, shifts, dims)
        assert_same(kael.roll(k, shifts, dims), want, exact=True)
        assert_same(k.roll(shifts, dims), want, exact=True)


def test_roll_of_a_zero_dim_tensor_without_dims_is_a_copy():
    k = kael.tensor(5)
    assert_same(kael.roll(k, 3), torch.roll(torch.tensor(5), 3))


def test_roll_shift_larger_than_the_size_wraps():
    k = kael.arange(5)
    assert kael.roll(k, 12, 0).tolist() == [3, 4, 0, 1, 2]
    assert kael.roll(k, -12, 0).tolist() == [2, 3, 4, 0, 1]
    assert kael.roll(k, 2**62, 0).tolist() == torch.roll(torch.arange(5), 2**62, 0).tolist()


def test_roll_mismatched_shifts_and_dims_raise():
    with pytest.raises(kael.Error, match="shifts and dimensions must align. shifts: 2, dims: 1"):
        kael.roll(kael.ones(2, 3), (1, 2), (0,))
    with pytest.raises(kael.Error, match="shifts and dimensions must align. shifts: 2, dims: 0"):
        kael.roll(kael.ones(2, 3), (1, 2))
    with pytest.raises(kael.Error, match="`shifts` required"):
        kael.roll(kael.ones(2, 3), (), ())


def test_roll_bad_dims_and_shifts_raise_typed_errors():
    with pytest.raises(kael.IndexError, match=r"range of \[-2, 1\], but got 2\)"):
        kael.roll(kael.ones(2, 3), 1, 2)
    with pytest.raises(kael.IndexError, match="Dimension specified as 0 but tensor has no dim"):
        kael.roll(kael.tensor(1.0), 1, 0)
    with pytest.raises(kael.TypeError, match="shifts must be an int, got float"):
        kael.roll(kael.ones(3), 1.5)


@pytest.mark.parametrize("shifts", [2**63 - 1, -(2**62), (1, 2**63 - 1), -(2**63)], ids=repr)
def test_roll_shifts_anywhere_in_int64_match_torch(shifts):
    t = values(torch.int64, (3, 5), seed=13)
    dims = (0, 1) if isinstance(shifts, tuple) else 1
    # torch 2.13 refuses shifts near INT64_MIN (its symbolic-int range): compare with the
    # equal shift modulo the size there.
    reference = shifts % 5 if shifts == -(2**63) else shifts
    assert_same(kael.roll(to_kael(t), shifts, dims), torch.roll(t, reference, dims), exact=True)


@pytest.mark.parametrize("shifts", [2**63, -(2**63) - 1, (1, 2**70)], ids=repr)
def test_roll_shifts_beyond_int64_are_value_errors(shifts):
    t = values(torch.int64, (3, 5))
    dims = (0, 1) if isinstance(shifts, tuple) else 1
    with pytest.raises((TypeError, ValueError)):
        torch.roll(t, shifts, dims)
    what, bad = ("shifts element 1", shifts[1]) if isinstance(shifts, tuple) else ("shifts", shifts)
    with pytest.raises(kael.ValueError, match=f"^{what} {bad} is out of the range of int64$"):
        kael.roll(to_kael(t), shifts, dims)


# ---- registry --------------------------------------------------------------------------------


def test_sequence_ops_are_functions_and_tensor_methods():
    for name in ("cumsum", "cumprod", "tril", "triu", "flip", "roll"):
        assert callable(getattr(kael, name)) and callable(getattr(kael.Tensor, name))
    for name in ("cumsum_", "cumprod_", "tril_", "triu_"):
        assert callable(getattr(kael.Tensor, name))


@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
def test_logcumsumexp_matches_torch_with_infinities_and_nan(dim, dtype):
    values = np.random.default_rng(61).standard_normal((5, 70)) * 30
    values[1, 3], values[2, 5], values[3, 7] = np.inf, -np.inf, np.nan
    values[4] = -np.inf  # a line of -inf stays -inf
    t = torch.tensor(values, dtype=dtype)
    k = kael.tensor(t.numpy())
    for kx, tx in ((k, t), (k.transpose(0, 1), t.T), (k[:, ::3], t[:, ::3])):
        got, want = kael.logcumsumexp(kx, dim), torch.logcumsumexp(tx, dim)
        assert got.shape == tuple(want.shape) and got.dtype is kael.tensor(want.numpy()).dtype
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=2e-6, atol=1e-6, equal_nan=True)
    with pytest.raises(kael.TypeError, match=r"int64 \(floating point and complex only\)"):
        kael.logcumsumexp(kael.arange(3), 0)


def _complex_lines(dtype, seed):
    """Complex lines whose real parts tie, turn infinite and NaN, and whose imaginary
    parts near +-pi make the step's branch matter."""
    rng = np.random.default_rng(seed)
    values = rng.standard_normal((6, 40)) * 3 + 1j * rng.uniform(-3.14, 3.14, (6, 40))
    values[1, 3], values[1, 9] = complex(np.inf, 0.5), complex(np.inf, -2.0)  # both +inf
    values[2, :2] = complex(-np.inf, 1.0)  # -inf first: the identity ties with it
    values[2, 7] = complex(np.nan, 0.0)
    values[3, 4] = complex(0.0, np.nan)
    values[4] = 2.0 + 3.0j * np.sign(np.arange(40) % 2 - 0.5)  # ties, imaginary +-3
    values[5, 5] = complex(1.0, np.inf)
    return torch.tensor(values, dtype=dtype)


@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128], ids=str)
def test_complex_logcumsumexp_matches_torch_branch_infinities_and_nan(dtype):
    t = _complex_lines(dtype, 71)
    k = kael.tensor(t.numpy())
    tol = 2e-6 if dtype is torch.complex64 else 1e-13
    cases = [(k, t), (k.transpose(0, 1), t.T), (k[:, ::3], t[:, ::3]), (k[2, 0], t[2, 0])]
    cases.append((k[:1].expand(3, 40), t[:1].expand(3, 40)))
    for kx, tx in cases:
        for dim in range(-1, kx.ndim) if kx.ndim else (0, -1):
            got, want = kael.logcumsumexp(kx, dim), torch.logcumsumexp(tx, dim)
            assert got.shape == tuple(want.shape) and got.dtype is kael.tensor(want.numpy()).dtype
            np.testing.assert_allclose(
                got.numpy(), want.numpy(), rtol=tol, atol=tol, equal_nan=True
            )
    empty = kael.logcumsumexp(kael.zeros(0, 3, dtype=kael.complex64), 0)
    assert empty.shape == (0, 3) and empty.dtype is kael.complex64


def test_complex_logcumsumexp_stays_finite_where_a_step_is_subnormal():
    """e^(-712 + 0j - 1j) is subnormal with an imaginary part: PyTorch's Linux build (log(u)
    z / (u - 1)) gives NaN there; the sum is 12 + 1j to every digit."""
    got = kael.logcumsumexp(kael.tensor([-700 + 0j, 12 + 1j], dtype=kael.complex128), 0)
    assert got.tolist() == [-700 + 0j, 12 + 1j]


def test_complex_logcumsumexp_writes_out_and_its_own_input():
    t = _complex_lines(torch.complex128, 73)
    want = torch.logcumsumexp(t, 1)
    k = kael.tensor(t.numpy())
    out = kael.empty(6, 40, dtype=kael.complex128)
    assert kael.logcumsumexp(k, 1, out=out) is out
    np.testing.assert_allclose(out.numpy(), want.numpy(), rtol=1e-13, atol=1e-13, equal_nan=True)
    kael.logcumsumexp(k, 1, out=k)  # the input read before it is written
    np.testing.assert_allclose(k.numpy(), want.numpy(), rtol=1e-13, atol=1e-13, equal_nan=True)
    with pytest.raises(kael.Error, match="complex64"):
        kael.logcumsumexp(k, 1, out=kael.empty(6, 40, dtype=kael.complex64))
    with pytest.raises(kael.IndexError, match="range"):
        kael.logcumsumexp(k, 2)


@pytest.mark.parametrize("name", ["cummax", "cummin"])
@pytest.mark.parametrize(
    "dtype", [torch.float32, torch.float64, torch.int64, torch.int32, torch.bool], ids=str
)
def test_cummax_and_cummin_match_torch_with_ties_and_nan(name, dtype):
    values = np.random.default_rng(67).integers(-3, 4, (5, 9)).astype(np.float64)  # ties
    if dtype.is_floating_point:
        values[1, 3] = values[2, 0] = values[2, 5] = np.nan
    t = torch.tensor(values).to(dtype)
    k = kael.tensor(t.numpy())
    for dim in (0, 1, -1):
        for kx, tx in ((k, t), (k.transpose(0, 1), t.T)):
            got, want = getattr(kael, name)(kx, dim), getattr(torch, name)(tx, dim)
            np.testing.assert_array_equal(got.values.numpy(), want.values.numpy())
            np.testing.assert_array_equal(got.indices.numpy(), want.indices.numpy())
    got = getattr(k, name)(1)
    assert got.values.dtype is k.dtype and got.indices.dtype is kael.int64


@pytest.mark.parametrize("op", ["cumsum_", "cumprod_"])
@pytest.mark.parametrize("dtype", ["int8", "uint8", "int16", "int32"])
def test_an_in_place_scan_keeps_a_small_int_dtype_and_wraps_as_torch(op, dtype):
    values = [100, 100, 3]
    got = getattr(kael.tensor(values, dtype=getattr(kael, dtype)), op)(0)
    want = getattr(torch.tensor(values, dtype=getattr(torch, dtype)), op)(0)
    assert got.dtype is getattr(kael, dtype) and got.tolist() == want.tolist()


def test_an_in_place_scan_of_bool_is_refused_as_torch():
    with pytest.raises(NotImplementedError, match="not implemented for 'Bool'"):
        torch.tensor([True]).cumsum_(0)
    with pytest.raises(kael.NotImplementedError, match="not implemented for 'Bool'"):
        kael.tensor([True]).cumsum_(0)


# ---- repeated calls: the remembered launches ---------------------------------------------------

# Calls that replay their first call's launches (keyed by dtype, layout and arguments).
REPLAYED = {
    "flip": lambda lib, x: lib.flip(x, (0,) if x.ndim else ()),
    "flip_all": lambda lib, x: lib.flip(x, tuple(range(x.ndim))),
    "roll": lambda lib, x: lib.roll(x, 1, 0),
    "roll_back": lambda lib, x: lib.roll(x, -2, -1),
    "roll_two_dims": lambda lib, x: lib.roll(x, (1, -3), (0, -1)),
    "roll_flat": lambda lib, x: lib.roll(x, 5),
    "tril": lambda lib, x: lib.tril(x),
    "triu": lambda lib, x: lib.triu(x, 1),
    "tril_below": lambda lib, x: lib.tril(x, -2),
}
REPLAY_DTYPES = [torch.float32, torch.float16, torch.bfloat16, torch.bool, torch.int8]


def _replay_twin(dtype: torch.dtype, layout: str, seed: int):
    """twin() for every dtype (bfloat16 too, which NumPy lacks): torch's bytes shared."""
    shape, view = LAYOUTS[layout]
    base = values(dtype, shape, seed)
    return view(kael.from_dlpack(base.clone())), view(base)


def _assert_fresh_copy(k, t: torch.Tensor, x) -> None:
    """k equals t bit for bit in shape and dtype, a new tensor apart from x laid out as
    torch's (flip keeps a transposed input's order, roll does not)."""
    assert k.shape == tuple(t.shape) and k.dtype is KAEL_DTYPES[t.dtype]
    assert torch.equal(torch.from_dlpack(k), t)
    assert k.stride() == t.stride() and not k.shares_storage(x)


@pytest.mark.parametrize("layout", list(LAYOUTS))
@pytest.mark.parametrize("dtype", REPLAY_DTYPES, ids=str)
@pytest.mark.parametrize("name", REPLAYED)
def test_repeated_flip_roll_and_triangle_calls_read_each_calls_own_input(name, dtype, layout):
    if layout == "zero_dim" and name not in ("flip", "flip_all", "roll_flat"):
        return  # a dim to roll or a matrix: torch's errors, tested above
    call = REPLAYED[name]
    for seed in range(3):  # the first call runs the full door, the later ones replay it
        k, t = _replay_twin(dtype, layout, seed)
        _assert_fresh_copy(call(kael, k), call(torch, t), k)


def test_a_repeated_triangle_is_keyed_by_its_diagonal_and_the_input_layout():
    t = values(torch.float32, (5, 5), seed=21)
    k = to_kael(t)
    for diagonal in (0, 1, 0, -1, 1, 9, -9):
        for kx, tx in ((k, t), (k.T, t.T), (k[1:, :4], t[1:, :4])):
            _assert_fresh_copy(kael.tril(kx, diagonal), torch.tril(tx, diagonal), kx)
            _assert_fresh_copy(kael.triu(kx, diagonal), torch.triu(tx, diagonal), kx)


def test_a_repeated_roll_is_keyed_by_its_shift_and_the_input_layout():
    t = values(torch.int64, (4, 6), seed=22)
    k = to_kael(t)
    for shift in (1, 2, 1, -1, 5, 2):
        for kx, tx in ((k, t), (k.T, t.T), (k[:, 1:], t[:, 1:])):
            _assert_fresh_copy(kael.roll(kx, shift, 1), torch.roll(tx, shift, 1), kx)
            _assert_fresh_copy(kx.flip(1), tx.flip(1), kx)


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
@pytest.mark.parametrize("name", ["tril", "triu"])
def test_a_complex_triangle_keeps_both_parts_as_torch(dtype, name):
    rng = np.random.default_rng(12)
    values = rng.standard_normal((2, 3, 4)) + 1j * rng.standard_normal((2, 3, 4))
    k, t = (
        kael.tensor(values).to(getattr(kael, dtype)),
        torch.tensor(values).to(getattr(torch, dtype)),
    )
    for diagonal in (-1, 0, 2):
        want = getattr(torch, name)(t, diagonal)
        for got in (getattr(k, name)(diagonal), getattr(k.mT.mT.contiguous(), name)(diagonal)):
            assert got.dtype is getattr(kael, dtype)
            np.testing.assert_array_equal(got.numpy(), want.numpy())
        np.testing.assert_array_equal(
            getattr(k.transpose(-1, -2), name)(diagonal).numpy(),
            getattr(t.transpose(-1, -2), name)(diagonal).numpy(),
        )
        out = kael.empty(2, 3, 4, dtype=getattr(kael, dtype))
        assert getattr(kael, name)(k, diagonal, out=out) is out
        np.testing.assert_array_equal(out.numpy(), want.numpy())
        inplace = k.clone()
        getattr(inplace, f"{name}_")(diagonal)
        np.testing.assert_array_equal(inplace.numpy(), want.numpy())
