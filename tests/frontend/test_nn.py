"""The softmax family through the public API against PyTorch: softmax, log_softmax,
logsumexp, cross_entropy and layer_norm over dtypes, dims, layouts, special values and
bad inputs.

Where the book decides differently from PyTorch (integer and bool inputs become float32
where torch refuses them), the test pins the book's rule and says so.
"""

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from kernel_helpers import KAEL_DTYPES
from parity_helpers import resized_out

import kael
from kael.frontend import nn
from kael.frontend.compiled import CompiledFunction
from kael.frontend.inspection import launch_stage, record_launches
from kael.frontend.plan import ROW_BYTES

INF, NAN = float("inf"), float("nan")
FLOATS = [torch.float32, torch.float64]
# log_softmax's absolute error is about an ulp of log(sum): atol covers a few float32 ulps of 1.
TOL = {torch.float32: {"rtol": 2e-6, "atol": 4e-7}, torch.float64: {"rtol": 1e-13, "atol": 1e-15}}
NORM_TOL = {
    torch.float32: {"rtol": 1e-4, "atol": 1e-5},
    torch.float64: {"rtol": 1e-12, "atol": 1e-14},
}


def to_kael(t: torch.Tensor) -> kael.Tensor:
    return kael.tensor(t.contiguous().numpy())


def check(k, t: torch.Tensor, tol: dict | None = None) -> None:
    """Same shape and dtype; values close (NaN where torch has NaN, infinities by sign)."""
    assert isinstance(k, kael.Tensor), type(k)
    assert k.shape == tuple(t.shape), (k.shape, t.shape)
    assert k.dtype is KAEL_DTYPES[t.dtype], (k.dtype, t.dtype)
    np.testing.assert_allclose(k.numpy(), t.numpy(), **(tol or TOL[t.dtype]))


def _random(shape, dtype=torch.float32, seed=0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(shape, generator=g, dtype=torch.float64) * 3).to(dtype)


# Each layout: the base shape and the view applied to both libraries (a 2-d result).
LAYOUTS = {
    "contiguous": ((5, 7), lambda x: x),
    "transposed": ((7, 5), lambda x: x.T),
    "stepped": ((10, 15), lambda x: x[::2, 1::2]),
    "expanded": ((5, 1), lambda x: x.expand(5, 7)),
    "row_expanded": ((1, 7), lambda x: x.expand(5, 7)),
    "empty_rows": ((0, 7), lambda x: x),
    "empty_cols": ((5, 0), lambda x: x),
}


def twin(layout: str, dtype=torch.float32, seed=0):
    shape, view = LAYOUTS[layout]
    base = _random(shape, dtype, seed)
    return view(to_kael(base)), view(base)


SOFTMAXES = {"softmax": torch.softmax, "log_softmax": torch.log_softmax}


# ---- softmax and log_softmax ---------------------------------------------------------------


@pytest.mark.parametrize("dim", [0, 1, -1, -2])
@pytest.mark.parametrize("dtype", FLOATS, ids=["f32", "f64"])
@pytest.mark.parametrize("layout", list(LAYOUTS))
@pytest.mark.parametrize("name", list(SOFTMAXES))
def test_softmax_and_log_softmax_match_torch_over_layouts_dtypes_and_dims(name, layout, dtype, dim):
    k, t = twin(layout, dtype)
    check(getattr(kael, name)(k, dim), SOFTMAXES[name](t, dim))


@pytest.mark.parametrize("name", list(SOFTMAXES))
def test_softmax_over_every_dim_of_a_rank3_permuted_tensor_matches_torch(name):
    base = _random((3, 4, 5))
    k, t = to_kael(base).permute(2, 0, 1), base.permute(2, 0, 1)
    for dim in range(-3, 3):
        check(getattr(kael, name)(k, dim), SOFTMAXES[name](t, dim))


@pytest.mark.parametrize("name", list(SOFTMAXES))
def test_softmax_methods_and_nn_functional_are_the_same_op(name):
    k, t = twin("contiguous")
    want = SOFTMAXES[name](t, 1)
    check(getattr(k, name)(1), want)
    check(getattr(kael.nn.functional, name)(k, dim=1), want)


@pytest.mark.parametrize("dtype", [torch.int64, torch.bool], ids=["i64", "bool"])
@pytest.mark.parametrize("name", list(SOFTMAXES))
def test_integer_and_bool_inputs_become_float32(name, dtype):
    # The book's as_floating; torch refuses these dtypes ("not implemented for 'Long'").
    base = torch.tensor([[3, 0, 1], [2, 5, 0]]).to(dtype)
    check(getattr(kael, name)(to_kael(base), -1), SOFTMAXES[name](base.float(), -1))
    check(getattr(kael, name)(to_kael(base).T, -1), SOFTMAXES[name](base.float().T, -1))


@pytest.mark.parametrize("name", list(SOFTMAXES))
def test_dtype_argument_converts_before_computing(name):
    base = torch.tensor([[1.0, 2.0, 3.0], [0.1, 0.2, 0.3]])
    k = to_kael(base)
    check(getattr(kael, name)(k, 1, dtype=kael.float64), SOFTMAXES[name](base, 1, torch.float64))
    check(
        getattr(kael, name)(k.long(), 1, dtype=kael.float64),
        SOFTMAXES[name](base.long(), 1, torch.float64),
    )
    check(
        getattr(kael, name)(k.double(), 0, dtype=kael.float32),
        SOFTMAXES[name](base.double(), 0, torch.float32),
    )


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["f16", "bf16"])
@pytest.mark.parametrize("name", list(SOFTMAXES))
def test_a_half_dtype_argument_computes_in_float32_and_rounds_once(name, dtype):
    base = _random((4, 9), seed=3)
    got = getattr(kael, name)(to_kael(base), -1, dtype=KAEL_DTYPES[dtype])
    want = SOFTMAXES[name](base, -1, dtype=dtype)
    assert got.dtype is KAEL_DTYPES[dtype]
    # the input rounded to the dtype first, as torch does; computed in float32, rounded once
    np.testing.assert_allclose(got.float().numpy(), want.float().numpy(), rtol=8e-3, atol=1e-3)
    half_input = getattr(kael, name)(to_kael(base).to(got.dtype), -1)
    np.testing.assert_array_equal(got.float().numpy(), half_input.float().numpy())


@pytest.mark.parametrize("name", list(SOFTMAXES))
def test_an_integer_dtype_argument_is_a_type_error_naming_it(name):
    with pytest.raises(kael.TypeError, match="int64"):
        getattr(kael, name)(kael.ones(3), 0, dtype=kael.int64)


@pytest.mark.parametrize("value", [3.0, -2.5, INF, -INF, NAN])
@pytest.mark.parametrize("name", list(SOFTMAXES))
def test_zero_dim_inputs_accept_dims_0_and_minus_1(name, value):
    k, t = kael.tensor(value), torch.tensor(value)
    for dim in (0, -1):
        check(getattr(kael, name)(k, dim), SOFTMAXES[name](t, dim))


@pytest.mark.parametrize("name", list(SOFTMAXES))
def test_dim_out_of_range_is_an_index_error_naming_the_dim_and_range(name):
    with pytest.raises(kael.IndexError, match=r"\[-2, 1\], but got 2"):
        getattr(kael, name)(kael.ones(2, 3), 2)
    with pytest.raises(kael.IndexError, match=r"\[-2, 1\], but got -3"):
        getattr(kael, name)(kael.ones(2, 3), -3)
    with pytest.raises(kael.IndexError, match=r"\[-1, 0\], but got 1"):
        getattr(kael, name)(kael.tensor(1.0), 1)


@pytest.mark.parametrize("name", list(SOFTMAXES))
def test_bad_dim_and_input_types_are_type_errors(name):
    with pytest.raises(kael.TypeError, match="dim must be an int, got float"):
        getattr(kael, name)(kael.ones(2, 3), 1.0)
    with pytest.raises(kael.TypeError, match="dim must be an int, got NoneType"):
        getattr(kael, name)(kael.ones(2, 3), None)
    with pytest.raises(kael.TypeError, match="input must be a Tensor, got list"):
        getattr(kael, name)([1.0, 2.0], 0)


# Rows with infinities, NaN and large values; torch decides every expected value.
SPECIAL_ROWS = [
    [-INF, -INF, -INF, -INF],  # all -inf: NaN (softmax, log_softmax), -inf (logsumexp)
    [INF, 1.0, 2.0, 3.0],  # +inf entry: NaN, inf
    [-INF, 0.0, 1.0, -INF],  # some -inf: finite
    [NAN, 0.0, 1.0, 2.0],  # NaN entry: NaN everywhere
    [1000.0, 1000.0, -1000.0, 999.0],  # large values: no overflow
    [-1000.0, 0.0, -1000.0, 0.0],  # exp underflows
    [INF, -INF, 0.0, 1.0],  # both infinities
    [3.0e38, 3.0e38, 1.0, -3.0e38],  # near float32's largest
]


@pytest.mark.parametrize("dtype", FLOATS, ids=["f32", "f64"])
@pytest.mark.parametrize("name", list(SOFTMAXES))
def test_infinity_nan_and_large_value_rows_match_torch_on_both_paths(name, dtype):
    base = torch.tensor(SPECIAL_ROWS, dtype=dtype)
    want = SOFTMAXES[name](base, -1)
    check(getattr(kael, name)(to_kael(base), -1), want)  # fused: last dim, contiguous
    check(getattr(kael, name)(to_kael(base.T), 0).T, want)  # composed: dim 0
    check(getattr(kael, name)(to_kael(base.T).T, -1), want)  # composed: transposed


def test_large_values_give_the_book_softmax():
    x = kael.tensor([1000.0, 1000.0, -1000.0, 999.0])
    np.testing.assert_allclose(kael.softmax(x, 0).numpy(), [0.4223, 0.4223, 0.0, 0.1554], atol=1e-4)
    assert kael.logsumexp(x, 0).item() == pytest.approx(1000.8620, abs=1e-3)


@pytest.mark.parametrize("dtype", [kael.float32, kael.float64])
def test_log_softmax_is_exact_where_log_of_softmax_is_not(dtype):
    x = kael.tensor([-1000.0, 0.0], dtype=dtype)
    assert kael.log(kael.softmax(x, 0)).tolist()[0] == -INF  # exp(-1000) underflows
    assert kael.log_softmax(x, 0).tolist() == [-1000.0, 0.0]
    assert kael.log_softmax(x.view(2, 1), 0).view(2).tolist() == [-1000.0, 0.0]


@pytest.mark.parametrize("name", ["softmax", "log_softmax", "logsumexp"])
def test_fused_and_composed_paths_agree_with_nan_and_inf(name):
    base = _random((33, 40), torch.float32, seed=5)
    base[3, 7], base[5, :] = NAN, -INF
    base[8, 2], base[9, 0], base[10, :] = INF, -INF, INF
    k, strided = to_kael(base), to_kael(base.T.contiguous()).T  # same values, another layout
    assert not strided.is_contiguous()
    op = getattr(kael, name)
    fused = op(k, 1).numpy()
    assert np.isnan(fused[3]).all() and (np.isnan(fused[5]).all() or fused[5] == -INF)
    np.testing.assert_allclose(op(strided, 1).numpy(), fused, rtol=2e-6, atol=1e-7)
    # dim 0 of the transpose: the same rows again, through the composed path
    back = op(k.T, 0) if name == "logsumexp" else op(k.T, 0).T
    np.testing.assert_allclose(back.numpy(), fused, rtol=2e-6, atol=1e-7)


@pytest.mark.parametrize("name", ["softmax", "log_softmax", "logsumexp"])
def test_last_dim_of_contiguous_runs_one_row_kernel_and_other_dims_compose_kael_ops(name):
    k = to_kael(_random((6, 9)))
    _, fused = record_launches(getattr(kael, name), k, 1)
    assert [f.shape for f in fused] == [(6, 9)]  # the row kernel is the only launch
    assert fused[0].symbol.startswith("kael_rows_") and fused[0].kernel is None
    _, composed = record_launches(getattr(kael, name), k, 0)
    assert len(composed) >= 4  # amax, sub, exp, sum, ... each a compiled kernel


# [1024, 4096] float32 is GENERATED_FROM_BYTES exactly; one row less stays below it.
GENERATED_ROWS = nn.GENERATED_FROM_BYTES // (4096 * 4)


@pytest.mark.parametrize("name", ["softmax", "log_softmax", "logsumexp"])
@pytest.mark.parametrize("rows", [GENERATED_ROWS - 1, GENERATED_ROWS])
def test_from_generated_bytes_eager_rows_run_the_generated_row_group(name, rows):
    x = kael.from_numpy(_row_values((rows, 4096), np.float32, seed=rows))
    result, launches = record_launches(getattr(kael, name), x, 1)
    if rows < GENERATED_ROWS:
        assert [launch.symbol for launch in launches] == [f"kael_rows_{name}_float32"]
    else:  # one launch of the row driver: amax, exp, sum and the result per row
        assert [launch.symbol for launch in launches] == ["kael_row_driver"]
        assert len(launches[0].kernel) >= 3
    want = getattr(torch, name)(torch.from_numpy(x.numpy()), 1)
    np.testing.assert_allclose(result.numpy(), want.numpy(), rtol=2e-5, atol=1e-7)
    _, composed = record_launches(getattr(kael, name), x, 0)  # other dims: 3 fused kernels
    assert len(composed) == 3 if rows == GENERATED_ROWS else len(composed) >= 4  # op by op


@pytest.mark.parametrize("cols", [1 << 17, (1 << 17) + 1])
def test_generated_softmax_computes_exp_twice_only_where_rows_outgrow_the_row_driver(cols):
    k = kael.ones(32, cols, dtype=kael.float32)  # from GENERATED_FROM_BYTES: generated
    _, launches = record_launches(kael.softmax, k, 1)
    passes = [launch for launch in launches if not launch.symbol.endswith("_final")]
    exps = sum(launch_stage(launch, "kael").count("exp(") for launch in passes)
    assert exps == (1 if cols * 4 <= ROW_BYTES else 2)
    np.testing.assert_allclose(kael.softmax(k, 1).numpy(), 1 / cols, rtol=1e-5)


def test_a_plan_traced_inside_the_fast_door_keeps_its_chunk_local_values(monkeypatch):
    fresh = CompiledFunction(nn._GENERATED["softmax"].fn, max_recompiles=None)
    monkeypatch.setitem(nn._GENERATED, "softmax", fresh)
    x = kael.ones(GENERATED_ROWS, 4096, dtype=kael.float32)
    kael.softmax(x, -1)  # traced under the softmax's fast door, which captures launches
    [group] = fresh.plan_for(x, 1, False).steps
    assert len(group.local) == 3  # the row maxima, exp and sums: in the driver's scratch
    assert fresh.cache_info().traces == 1


def test_softmax_rows_sum_to_one_at_float32_precision():
    k = to_kael(_random((8, 5000), seed=9))
    s = kael.softmax(k, 1).numpy().astype(np.float64).sum(axis=1)
    np.testing.assert_allclose(s, 1.0, rtol=1e-5)


# ---- rows, by the row kernels and generated: every length around the vector width, the
# infinity rules


ROW_DTYPES = {"f32": np.float32, "f64": np.float64}
ROW_TOL = {np.float32: {"rtol": 2e-6, "atol": 1e-7}, np.float64: {"rtol": 1e-14, "atol": 1e-300}}


def _cols(np_dtype) -> list[int]:
    """Row lengths around one and two vectors (16 float32 or 8 float64 lanes)."""
    w = 64 // np.dtype(np_dtype).itemsize
    return [1, w - 1, w, w + 1, 2 * w + 3, 100]


def _row_values(shape, np_dtype, seed=0) -> np.ndarray:
    return (np.random.default_rng(seed).standard_normal(shape) * 3).astype(np_dtype)


# how eager runs a softmax-family op on rows: the row kernels (rows as small as these), or
# the generated plan that runs from GENERATED_FROM_BYTES
PATHS = ["row kernel", "generated"]


def _softmax_like(kernel: str, x: np.ndarray, path: str) -> np.ndarray:
    if path == "generated":
        return nn._generated_softmax(kernel, kael.from_numpy(x), 1).numpy()
    return getattr(kael, kernel)(kael.from_numpy(x), -1).numpy()


def _logsumexp(x: np.ndarray, path: str) -> np.ndarray:
    if path == "generated":
        return nn._GENERATED["logsumexp"](kael.from_numpy(x), 1).numpy()[:, 0]
    return kael.logsumexp(kael.from_numpy(x), -1).numpy()


TORCH_ROW_OPS = {
    "softmax": lambda t: torch.softmax(t, -1),
    "log_softmax": lambda t: torch.log_softmax(t, -1),
}


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("dtype_id", list(ROW_DTYPES))
@pytest.mark.parametrize("kernel", list(TORCH_ROW_OPS))
def test_softmax_rows_match_torch_for_every_length_around_the_vector_width(kernel, dtype_id, path):
    np_dtype = ROW_DTYPES[dtype_id]
    for cols in _cols(np_dtype):
        x = _row_values((5, cols), np_dtype, seed=cols)
        want = TORCH_ROW_OPS[kernel](torch.from_numpy(x)).numpy()
        np.testing.assert_allclose(_softmax_like(kernel, x, path), want, **ROW_TOL[np_dtype])


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("dtype_id", list(ROW_DTYPES))
def test_logsumexp_rows_match_torch_for_every_length_around_the_vector_width(dtype_id, path):
    np_dtype = ROW_DTYPES[dtype_id]
    for cols in _cols(np_dtype):
        x = _row_values((5, cols), np_dtype, seed=cols)
        want = torch.logsumexp(torch.from_numpy(x), -1).numpy()
        np.testing.assert_allclose(_logsumexp(x, path), want, **ROW_TOL[np_dtype])


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("dtype_id", list(ROW_DTYPES))
def test_a_nan_anywhere_in_a_row_makes_the_whole_softmax_row_nan(dtype_id, path):
    np_dtype = ROW_DTYPES[dtype_id]
    for cols in _cols(np_dtype):
        x = _row_values((cols, cols), np_dtype)
        np.fill_diagonal(x, NAN)  # the NaN walks from the first vector lane to the tail
        for kernel in TORCH_ROW_OPS:
            assert np.isnan(_softmax_like(kernel, x, path)).all()
        assert np.isnan(_logsumexp(x, path)).all()


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("dtype_id", list(ROW_DTYPES))
def test_infinite_rows_follow_torch(dtype_id, path):
    np_dtype = ROW_DTYPES[dtype_id]
    x = np.array([[-INF] * 17, [INF] + [1.0] * 16, [-INF] * 8 + [0.0, 1.0] + [-INF] * 7], np_dtype)
    t = torch.from_numpy(x)
    for kernel, ref in TORCH_ROW_OPS.items():
        np.testing.assert_allclose(
            _softmax_like(kernel, x, path), ref(t).numpy(), **ROW_TOL[np_dtype]
        )
    got = _logsumexp(x, path)
    np.testing.assert_allclose(got, torch.logsumexp(t, -1).numpy(), **ROW_TOL[np_dtype])
    assert got[0] == -INF and got[1] == INF


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("dtype_id", list(ROW_DTYPES))
def test_lanes_past_a_row_add_nothing_where_they_would_overflow(dtype_id, path):
    # the masked last vector computes on zeros past the row: exp(0 - max) with max -1000
    # overflows there, and a sum that took it in would be inf
    np_dtype = ROW_DTYPES[dtype_id]
    for cols in _cols(np_dtype):
        x = -1000.0 - np.abs(_row_values((3, cols), np_dtype, seed=cols))
        t = torch.from_numpy(x)
        for kernel, ref in TORCH_ROW_OPS.items():
            np.testing.assert_allclose(
                _softmax_like(kernel, x, path), ref(t).numpy(), **ROW_TOL[np_dtype]
            )
        np.testing.assert_allclose(
            _logsumexp(x, path), torch.logsumexp(t, -1).numpy(), **ROW_TOL[np_dtype]
        )


def test_logsumexp_of_an_empty_row_is_minus_infinity():
    x = np.empty((3, 0), np.float32)  # (never generated: the sum of nothing is known)
    assert kael.logsumexp(kael.from_numpy(x), -1).tolist() == [-INF] * 3


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("kernel", ["softmax", "log_softmax", "logsumexp"])
def test_rows_split_over_threads_give_bit_identical_results(kernel, path):
    saved = kael.get_num_threads()
    x = _row_values((300, 1000), np.float32)  # 1.1 MiB: split over the threads
    results = []
    try:
        for threads in (1, 2):
            kael.set_num_threads(threads)
            if kernel == "logsumexp":
                results.append(_logsumexp(x, path))
            else:
                results.append(_softmax_like(kernel, x, path))
    finally:
        kael.set_num_threads(saved)
    assert results[0].tobytes() == results[1].tobytes()


# ---- logsumexp -------------------------------------------------------------------------------


LSE_DIMS = [0, 1, 2, -1, -3, (0,), (1, 2), (0, 2), (2, 0), (0, 1, 2), [-1, 0]]


@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("dim", LSE_DIMS, ids=str)
@pytest.mark.parametrize("dtype", FLOATS, ids=["f32", "f64"])
def test_logsumexp_matches_torch_for_int_and_tuple_dims(dim, dtype, keepdim):
    base = _random((3, 4, 5), dtype)
    check(kael.logsumexp(to_kael(base), dim, keepdim), torch.logsumexp(base, dim, keepdim))
    k, t = to_kael(base).permute(1, 2, 0), base.permute(1, 2, 0)
    check(kael.logsumexp(k, dim, keepdim=keepdim), torch.logsumexp(t, dim, keepdim=keepdim))


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_logsumexp_matches_torch_over_layouts(layout):
    k, t = twin(layout)
    for dim in (0, 1, (0, 1)):
        check(kael.logsumexp(k, dim), torch.logsumexp(t, dim))
        check(k.logsumexp(dim, keepdim=True), t.logsumexp(dim, keepdim=True))


def test_logsumexp_refuses_dim_none_like_torch():
    # torch's signature requires dims (an int or a tuple of ints): None is refused by the
    # function and the method; any dims given are reduced.
    t = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
    message = r"^logsumexp\(\): dim must be an int or a tuple of ints, got None$"
    for call in (lambda lib, x: lib.logsumexp(x, None), lambda lib, x: x.logsumexp(dim=None)):
        with pytest.raises(TypeError, match="must be tuple of ints, not NoneType"):
            call(torch, t)
        with pytest.raises(kael.TypeError, match=message):
            call(kael, to_kael(t))
    check(kael.logsumexp(to_kael(t), (0, 1)), torch.logsumexp(t, (0, 1)))
    check(kael.logsumexp(to_kael(t), -1), torch.logsumexp(t, -1))


def test_logsumexp_of_an_empty_dim_is_minus_infinity_and_of_no_rows_is_empty():
    check(kael.logsumexp(kael.ones(2, 0), 1), torch.logsumexp(torch.ones(2, 0), 1))
    assert kael.logsumexp(kael.ones(2, 0), 1).tolist() == [-INF, -INF]
    check(kael.logsumexp(kael.ones(2, 0), 0), torch.logsumexp(torch.ones(2, 0), 0))
    assert kael.logsumexp(kael.ones(0), 0).item() == -INF


@pytest.mark.parametrize("dtype", FLOATS, ids=["f32", "f64"])
def test_logsumexp_infinity_rows_match_torch(dtype):
    base = torch.tensor(SPECIAL_ROWS, dtype=dtype)
    want = torch.logsumexp(base, 1)
    check(kael.logsumexp(to_kael(base), 1), want)
    check(kael.logsumexp(to_kael(base.T), 0), want)
    got = kael.logsumexp(to_kael(base), 1).tolist()
    assert got[0] == -INF and got[1] == INF and got[6] == INF
    assert got[2] == pytest.approx(1.3133, abs=1e-4)


def test_logsumexp_of_a_zero_dim_tensor_is_itself():
    for dim in (0, -1, (0,)):
        check(kael.logsumexp(kael.tensor(2.5), dim), torch.logsumexp(torch.tensor(2.5), 0))
        check(kael.logsumexp(kael.tensor(2.5), dim, keepdim=True), torch.tensor(2.5))


def test_logsumexp_of_an_empty_dim_tuple_reduces_every_dim():
    # torch.sum's rule for dim=(); torch.logsumexp itself fails there with a shape error.
    base = _random((3, 4))
    check(kael.logsumexp(to_kael(base), ()), torch.logsumexp(base.flatten(), 0))


@pytest.mark.parametrize("dtype", [torch.int64, torch.bool], ids=["i64", "bool"])
def test_logsumexp_of_integers_and_bools_is_float32_like_torch(dtype):
    base = torch.tensor([[1, 0, 3], [0, 0, 1]]).to(dtype)
    check(kael.logsumexp(to_kael(base), 1), torch.logsumexp(base, 1))


def test_logsumexp_writes_into_out_of_the_result_shape_and_dtype():
    base = _random((4, 6))
    out = kael.empty(4)
    assert kael.logsumexp(to_kael(base), 1, out=out) is out
    check(out, torch.logsumexp(base, 1))
    wide = kael.zeros(4, 2)
    kael.logsumexp(to_kael(base), 1, out=wide[:, 1])  # a strided out
    check(wide[:, 1], torch.logsumexp(base, 1))
    assert wide[:, 0].tolist() == [0.0] * 4


def test_logsumexp_into_an_out_that_overlaps_the_input_reads_the_input_first():
    base = _random((4, 4))
    k = to_kael(base)
    kael.logsumexp(k, 1, out=k[3])  # row 3 is both the last row read and the output
    want = torch.logsumexp(base, 1)
    check(k[3], want)
    check(k[:3], base[:3])


def test_logsumexp_out_of_another_shape_is_resized_and_of_an_integral_dtype_refused():
    k = kael.ones(4, 6)
    got = resized_out(lambda o: kael.logsumexp(k, 1, out=o), kael.empty(3), (4,))
    check(got, torch.logsumexp(torch.ones(4, 6), 1))
    with pytest.raises(kael.TypeError, match="float32 can't be cast to the desired output type"):
        kael.logsumexp(k, 1, out=kael.empty(4, dtype=kael.int64))


def test_logsumexp_bad_dims_are_typed_errors_naming_them():
    k = kael.ones(2, 3)
    with pytest.raises(kael.IndexError, match=r"\[-2, 1\], but got 2"):
        kael.logsumexp(k, 2)
    with pytest.raises(kael.IndexError, match=r"\[-2, 1\], but got -3"):
        kael.logsumexp(k, (0, -3))
    with pytest.raises(kael.ValueError, match="logsumexp: dimension 0 appears more than once"):
        kael.logsumexp(k, (0, -2))
    with pytest.raises(kael.TypeError, match="dim must be an int"):
        kael.logsumexp(k, "1")


def test_logsumexp_is_not_in_nn_functional_but_softmax_family_is():
    assert not hasattr(kael.nn.functional, "logsumexp")
    for name in ("cross_entropy", "layer_norm"):
        assert getattr(kael.nn.functional, name) is getattr(kael, name)
    x = kael.tensor([[1.0, 2.0, 3.0]])
    for name in ("softmax", "log_softmax"):  # kael.NAME takes torch.NAME's out= as well
        functional, function = getattr(kael.nn.functional, name), getattr(kael, name)
        out = kael.empty(0)
        assert function(x, 1, out=out) is out and kael.equal(out, functional(x, 1))
        with pytest.raises(TypeError):  # as torch.nn.functional.NAME: no out=
            functional(x, 1, out=out)
    assert not hasattr(kael.Tensor, "cross_entropy") and not hasattr(kael.Tensor, "layer_norm")


# ---- cross_entropy ---------------------------------------------------------------------------


def _targets(shape, classes: int, seed: int = 1) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, classes, shape, generator=g)


CE_SHAPES = {
    "batch": ((6, 5), (6,)),
    "unbatched": ((5,), ()),
    "spatial": ((2, 5, 3, 4), (2, 3, 4)),
    "one_spatial": ((3, 5, 2), (3, 2)),
}


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("dtype", FLOATS, ids=["f32", "f64"])
@pytest.mark.parametrize("shape", list(CE_SHAPES))
def test_cross_entropy_matches_torch_over_shapes_dtypes_and_reductions(shape, dtype, reduction):
    logits_shape, target_shape = CE_SHAPES[shape]
    x, t = _random(logits_shape, dtype), _targets(target_shape, 5)
    got = kael.nn.functional.cross_entropy(to_kael(x), to_kael(t), reduction=reduction)
    check(got, F.cross_entropy(x, t, reduction=reduction))


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("rows", [4, 64])  # the second's rows move more than PROMOTE_BYTES
def test_cross_entropy_fast_door_replays_the_full_doors_values(rows, reduction):
    from kael.frontend import nn

    x, t = _random((rows, 256), torch.float32), _targets((rows,), 256)
    call = lambda: kael.cross_entropy(to_kael(x), to_kael(t), reduction=reduction)  # noqa: E731
    saved = dict(nn._CROSS_ENTROPY_CALLS)
    nn._CROSS_ENTROPY_CALLS.clear()
    try:
        full = call()
        (kept,) = nn._CROSS_ENTROPY_CALLS.values()
        assert kept is not nn._UNSERVED
        served = call()
        assert served.numpy().tobytes() == full.numpy().tobytes()
        check(served, F.cross_entropy(x, t, reduction=reduction))
    finally:
        nn._CROSS_ENTROPY_CALLS.clear()
        nn._CROSS_ENTROPY_CALLS.update(saved)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_cross_entropy_weights_and_ignore_index_match_torch(reduction):
    x, t = _random((8, 5), torch.float64), _targets((8,), 5)
    t[[1, 4]] = -100
    w = torch.tensor([0.5, 2.0, 1.0, 0.0, 3.0], dtype=torch.float64)
    kx, kt, kw = to_kael(x), to_kael(t), to_kael(w)
    check(
        kael.cross_entropy(kx, kt, reduction=reduction), F.cross_entropy(x, t, reduction=reduction)
    )
    check(
        kael.cross_entropy(kx, kt, kw, reduction=reduction),
        F.cross_entropy(x, t, w, reduction=reduction),
    )
    t2 = _targets((8,), 5, seed=3)
    want = F.cross_entropy(x, t2, w, reduction=reduction, ignore_index=2)
    check(kael.cross_entropy(kx, to_kael(t2), kw, reduction=reduction, ignore_index=2), want)


@pytest.mark.parametrize("layout", ["transposed", "stepped", "expanded"])
def test_cross_entropy_of_strided_logits_and_targets_matches_torch(layout):
    kx, x = twin(layout)
    t = _targets((5,), 7)
    check(kael.cross_entropy(kx, to_kael(t)), F.cross_entropy(x, t))
    tt = _targets((10,), 7)
    check(kael.cross_entropy(kx, to_kael(tt)[::2]), F.cross_entropy(x, tt[::2]))


def test_cross_entropy_with_every_target_ignored_is_nan_for_mean_and_zero_for_sum():
    x, t = _random((3, 4)), torch.full((3,), -100)
    for reduction in ("mean", "sum", "none"):
        check(
            kael.cross_entropy(to_kael(x), to_kael(t), reduction=reduction),
            F.cross_entropy(x, t, reduction=reduction),
        )
    assert np.isnan(kael.cross_entropy(to_kael(x), to_kael(t)).item())


def test_cross_entropy_of_an_empty_batch_follows_torch():
    x, t = torch.zeros(0, 4), torch.zeros(0, dtype=torch.int64)
    for reduction in ("mean", "sum", "none"):
        check(
            kael.cross_entropy(to_kael(x), to_kael(t), reduction=reduction),
            F.cross_entropy(x, t, reduction=reduction),
        )


def test_cross_entropy_of_special_logits_matches_torch():
    x = torch.tensor(
        [[1000.0, 1000.0, -1000.0, 999.0], [-INF, 0.0, 1.0, -INF], [NAN, 0, 1, 2], [INF, 0, 1, 2]]
    )
    for t in ([0, 1, 1, 1], [2, 0, 3, 0]):
        tt = torch.tensor(t)
        check(
            kael.cross_entropy(to_kael(x), to_kael(tt), reduction="none"),
            F.cross_entropy(x, tt, reduction="none"),
        )


def test_cross_entropy_of_integer_logits_becomes_float32():
    # The book's as_floating; torch refuses int64 logits.
    x, t = torch.tensor([[1, 2, 3], [3, 0, 0]]), torch.tensor([2, 0])
    check(kael.cross_entropy(to_kael(x), to_kael(t)), F.cross_entropy(x.float(), t))


@pytest.mark.parametrize("bad", [-1, 5, 6, -101, 2**40])
def test_cross_entropy_target_out_of_range_is_an_index_error_naming_it_and_the_classes(bad):
    x, t = _random((4, 5)), torch.tensor([0, 1, bad, 2])
    with pytest.raises(IndexError):
        F.cross_entropy(x, t)
    with pytest.raises(
        kael.IndexError, match=rf"Target {bad} is out of bounds.*\[0, 5\).*position 2"
    ):
        kael.cross_entropy(to_kael(x), to_kael(t))


def test_cross_entropy_names_the_first_bad_target():
    x, t = _random((4, 5)), torch.tensor([0, 9, 2, -3])
    with pytest.raises(kael.IndexError, match="Target 9 is out of bounds"):
        kael.cross_entropy(to_kael(x), to_kael(t), reduction="none")


def test_cross_entropy_targets_at_both_edges_of_the_class_range_are_valid():
    x, t = _random((2, 5)), torch.tensor([0, 4])
    check(kael.cross_entropy(to_kael(x), to_kael(t)), F.cross_entropy(x, t))
    with pytest.raises(kael.IndexError, match="Target 5 is out of bounds"):
        kael.cross_entropy(to_kael(x), kael.tensor([0, 5]))
    with pytest.raises(kael.IndexError, match="Target -1 is out of bounds"):
        kael.cross_entropy(to_kael(x), kael.tensor([-1, 4]))


def test_cross_entropy_with_no_classes_has_no_valid_target():
    with pytest.raises(kael.IndexError, match=r"Target 0 is out of bounds.*\[0, 0\)"):
        kael.cross_entropy(kael.ones(2, 0), kael.tensor([0, 0]))


def test_cross_entropy_bool_targets_are_type_errors_naming_the_dtype():
    with pytest.raises(kael.TypeError, match="int64.*got bool"):
        kael.cross_entropy(kael.ones(3, 4), kael.zeros(3, dtype=kael.bool))


@pytest.mark.parametrize("name", ["cross_entropy", "nll_loss"])
@pytest.mark.parametrize("shape", [(3,), (2, 3), (2, 3, 4)], ids=["1-d", "2-d", "3-d"])
@pytest.mark.parametrize("dtype", ["uint8", "int8", "int32"])
def test_byte_class_targets_are_taken_as_torchs_nll_loss_takes_them(name, shape, dtype):
    x = np.random.default_rng(4).standard_normal(shape).astype(np.float32)
    target = np.full(shape[:1] + shape[2:] if len(shape) > 1 else (), 2, np.int64)
    t = torch.from_numpy(target).to(getattr(torch, dtype))
    k = kael.tensor(target).to(getattr(kael, dtype))
    tf, kf = getattr(torch.nn.functional, name), getattr(kael.nn.functional, name)
    try:  # torch's nll_loss takes Byte targets for inputs of at most 2 dims, nothing else
        want = tf(torch.from_numpy(x), t)
    except RuntimeError:
        with pytest.raises(kael.TypeError, match=f"got {dtype}"):
            kf(kael.tensor(x), k)
        return
    assert dtype == "uint8" and len(shape) <= 2
    np.testing.assert_allclose(kf(kael.tensor(x), k).numpy(), want.numpy(), rtol=1e-6)


def test_cross_entropy_float_targets_are_probabilities_shaped_like_the_input():
    with pytest.raises(RuntimeError):
        torch.nn.functional.cross_entropy(torch.ones(3, 4), torch.zeros(3))
    with pytest.raises(kael.ValueError, match=r"input's shape \[3, 4\], got \[3\]"):
        kael.cross_entropy(kael.ones(3, 4), kael.zeros(3))


def test_cross_entropy_shape_mismatches_are_value_errors_naming_both_sizes():
    with pytest.raises(
        kael.ValueError, match=r"input batch_size \(3\) to match target batch_size \(2\)"
    ):
        kael.cross_entropy(kael.ones(3, 4), kael.zeros(2, dtype=kael.int64))
    with pytest.raises(
        kael.ValueError, match=r"input batch_size \(3\) to match target batch_size \(1\)"
    ):
        kael.cross_entropy(kael.ones(3, 4), kael.zeros(1, 3, dtype=kael.int64))
    with pytest.raises(
        kael.ValueError, match=r"expected target size \[2, 4\].*\[2, 3, 4\], got \[2, 3\]"
    ):
        kael.cross_entropy(kael.ones(2, 3, 4), kael.zeros(2, 3, dtype=kael.int64))
    with pytest.raises(kael.ValueError, match=r"expected target size \[\].*got \[1\]"):
        kael.cross_entropy(kael.ones(4), kael.zeros(1, dtype=kael.int64))
    with pytest.raises(kael.ValueError, match="at least 1 dimension"):
        kael.cross_entropy(kael.tensor(1.0), kael.tensor(0))


def test_cross_entropy_bad_weight_reduction_and_operands_are_typed_errors():
    x, t = kael.ones(2, 3), kael.zeros(2, dtype=kael.int64)
    with pytest.raises(kael.ValueError, match=r"all 3 classes .* shape: \[4\]"):
        kael.cross_entropy(x, t, kael.ones(4))
    with pytest.raises(kael.ValueError, match=r"all 3 classes .* shape: \[1, 3\]"):
        kael.cross_entropy(x, t, kael.ones(1, 3))
    with pytest.raises(
        kael.TypeError, match="weight has dtype float64 but input has dtype float32"
    ):
        kael.cross_entropy(x, t, kael.ones(3, dtype=kael.float64))
    with pytest.raises(kael.ValueError, match="avg is not a valid value for reduction"):
        kael.cross_entropy(x, t, reduction="avg")
    with pytest.raises(kael.TypeError, match="target must be a Tensor, got list"):
        kael.cross_entropy(x, [0, 0])
    with pytest.raises(kael.TypeError, match="ignore_index must be an int, got float"):
        kael.cross_entropy(x, t, ignore_index=1.5)


@pytest.mark.parametrize("ignore_index", [2**63 - 1, -(2**63), np.int64(1)], ids=repr)
def test_cross_entropy_ignore_index_anywhere_in_int64_matches_torch(ignore_index):
    x, t = _random((3, 4), seed=11), torch.tensor([0, 1, 2])
    want = F.cross_entropy(x, t, ignore_index=ignore_index)
    check(kael.cross_entropy(to_kael(x), to_kael(t), ignore_index=ignore_index), want)


@pytest.mark.parametrize("ignore_index", [2**63, -(2**63) - 1, 2**70])
def test_cross_entropy_ignore_index_beyond_int64_is_a_value_error(ignore_index):
    x, t = _random((3, 4)), torch.tensor([0, 1, 2])
    with pytest.raises(ValueError):
        F.cross_entropy(x, t, ignore_index=ignore_index)
    message = f"^ignore_index {ignore_index} is out of the range of int64$"
    with pytest.raises(kael.ValueError, match=message):
        kael.cross_entropy(to_kael(x), to_kael(t), ignore_index=ignore_index)


def _full_cross_entropy(x, t, ignore_index=-100, reduction="mean") -> kael.Tensor:
    """The full door's answer (nn._cross_entropy: checks and row kernels, never replayed)."""
    return nn._cross_entropy(x, t, None, ignore_index, reduction, 0.0)


def _same_result(got: kael.Tensor, want: kael.Tensor) -> None:
    """Same bits, dtype, shape, strides, offset and storage size."""
    g, w = got._impl, want._impl
    assert (g.dtype, g.shape, g.strides, g.offset) == (w.dtype, w.shape, w.strides, w.offset)
    assert g.storage.nbytes == w.storage.nbytes
    bits = [r.numpy().reshape(-1).view(np.uint8) for r in (got, want)]
    np.testing.assert_array_equal(*bits)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("dtype", FLOATS, ids=["f32", "f64"])
@pytest.mark.parametrize("shape", ["batch", "unbatched", "one_spatial"])
@pytest.mark.parametrize("ignore_index", [-100, 2])
def test_cross_entropy_remembered_calls_keep_the_full_door_s_bits(
    shape, dtype, reduction, ignore_index
):
    """The fast door replays a seen plain call ([C] or [N, C] logits): each call reads its
    own logits and target (fresh tensors, an offset target view), ignored targets count
    for nothing, and every answer is the full door's, bit for bit ([N, C, d] takes it)."""
    logits_shape, target_shape = CE_SHAPES[shape]
    kwargs = {"reduction": reduction, "ignore_index": ignore_index}
    for seed in range(4):
        x = _random(logits_shape, dtype, seed=40 + seed)
        t = _targets((2, *target_shape), 5, seed=50 + seed)
        t[1].view(-1)[0] = ignore_index  # a hit in the second call of each pair
        kx = to_kael(x)
        for k, want_t in ((to_kael(t)[0], t[0]), (to_kael(t)[1], t[1])):  # the 2nd: offset
            got = kael.nn.functional.cross_entropy(kx, k, **kwargs)
            check(got, F.cross_entropy(x, want_t, **kwargs))
            _same_result(got, _full_cross_entropy(kx, k, **kwargs))


def test_cross_entropy_remembers_a_plain_call_only():
    x, t = kael.randn(3, 11), kael.zeros(3, dtype=kael.int64)  # shapes no other test uses
    key = (kael.float32, (3, 11), (3,), "sum", -100)
    kael.cross_entropy(x, t, reduction="sum")
    assert nn._CROSS_ENTROPY_CALLS[key] is not nn._UNSERVED
    kael.cross_entropy(x, t, kael.ones(11), reduction="sum")  # a weight: the full door's
    kael.cross_entropy(x.T.contiguous().T, t, reduction="sum")  # strided logits: the same
    assert [k for k in nn._CROSS_ENTROPY_CALLS if k[1] == (3, 11)] == [key]


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_cross_entropy_bad_target_after_a_remembered_call_raises_the_full_door_s_error(
    reduction,
):
    x, good = _random((4, 5), seed=60), torch.tensor([0, 1, 4, 2])
    kx = to_kael(x)
    for _ in range(2):
        kael.cross_entropy(kx, to_kael(good), reduction=reduction)
    for bad in (-1, 5, 2**40):
        t = torch.tensor([0, 1, bad, 2])
        with pytest.raises(IndexError):
            F.cross_entropy(x, t, reduction=reduction)
        with pytest.raises(
            kael.IndexError, match=rf"Target {bad} is out of bounds.*\[0, 5\).*position 2"
        ):
            kael.cross_entropy(kx, to_kael(t), reduction=reduction)
    got = kael.cross_entropy(kx, to_kael(good), reduction=reduction)  # still served
    check(got, F.cross_entropy(x, good, reduction=reduction))


# ---- layer_norm ------------------------------------------------------------------------------


LN_CASES = {
    "last": ((4, 6), (6,)),
    "two_dims": ((2, 3, 4), (3, 4)),
    "all_dims": ((3, 4), (3, 4)),
    "long_rows": ((3, 1000), (1000,)),
    "one_element": ((5, 1), (1,)),
}


@pytest.mark.parametrize("affine", ["none", "weight", "bias", "both"])
@pytest.mark.parametrize("dtype", FLOATS, ids=["f32", "f64"])
@pytest.mark.parametrize("case", list(LN_CASES))
def test_layer_norm_matches_torch_over_shapes_dtypes_and_affine_params(case, dtype, affine):
    shape, normalized = LN_CASES[case]
    x = _random(shape, dtype) + 4
    w = _random(normalized, dtype, seed=1) if affine in ("weight", "both") else None
    b = _random(normalized, dtype, seed=2) if affine in ("bias", "both") else None
    got = kael.nn.functional.layer_norm(
        to_kael(x), normalized, None if w is None else to_kael(w), None if b is None else to_kael(b)
    )
    check(got, F.layer_norm(x, normalized, w, b), NORM_TOL[dtype])


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_layer_norm_matches_torch_over_layouts(layout):
    k, t = twin(layout)
    n = t.shape[-1]
    kw = to_kael(_random((2 * n,), seed=3))[::2]  # a strided weight
    w = torch.from_numpy(kw.numpy())
    got = kael.layer_norm(k, (n,), kw, kw, eps=1e-3)
    check(got, F.layer_norm(t, (n,), w, w, eps=1e-3), NORM_TOL[torch.float32])


@pytest.mark.parametrize("affine", ["none", "weight", "both"])
def test_layer_norm_repeated_calls_replay_with_each_calls_operands(affine):
    """The fast door replays a seen call's launch: every call reads its own input,
    weight and bias (new tensors, an offset weight view, values changed in place), and
    bad calls still reach the checks."""
    for seed in range(4):
        x = _random((3, 8), seed=10 + seed)
        base = _random((16,), seed=20 + seed)
        w = base[8:] if affine != "none" else None  # an offset view of a fresh storage
        b = _random((8,), seed=30 + seed) if affine == "both" else None
        kw = None if w is None else to_kael(base)[8:]
        kb = None if b is None else to_kael(b)
        got = kael.layer_norm(to_kael(x), (8,), kw, kb, 1e-5)
        check(got, F.layer_norm(x, (8,), w, b, 1e-5), NORM_TOL[torch.float32])
        if kw is not None:
            kw.mul_(2)
            check(
                kael.layer_norm(to_kael(x), (8,), kw, kb, 1e-5),
                F.layer_norm(x, (8,), w * 2, b, 1e-5),
                NORM_TOL[torch.float32],
            )
    with pytest.raises(kael.ValueError, match="expected input with shape"):
        kael.layer_norm(kael.ones(3, 7), (8,))


def test_layer_norm_accepts_an_int_normalized_shape_and_a_list():
    x = _random((3, 4))
    check(kael.layer_norm(to_kael(x), 4), F.layer_norm(x, (4,)), NORM_TOL[torch.float32])
    check(kael.layer_norm(to_kael(x), [3, 4]), F.layer_norm(x, [3, 4]), NORM_TOL[torch.float32])


def test_layer_norm_eps_is_used():
    x = torch.tensor([[1.0, -1.0, 1.0, -1.0]], dtype=torch.float64)
    check(kael.layer_norm(to_kael(x), (4,), eps=3.0), F.layer_norm(x, (4,), eps=3.0))
    assert kael.layer_norm(to_kael(x), (4,), eps=3.0).tolist() == [[0.5, -0.5, 0.5, -0.5]]


def test_layer_norm_of_a_constant_row_is_zero_and_of_special_values_follows_torch():
    x = torch.tensor([[2.0, 2.0, 2.0], [NAN, 0, 1], [INF, 0, 1]])
    check(kael.layer_norm(to_kael(x), (3,)), F.layer_norm(x, (3,)), NORM_TOL[torch.float32])


@pytest.mark.parametrize("value", [1e50, math.log(0.2), 1e50 / 3, 1.797e308])
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "stepped", "row_expanded"])
def test_layer_norm_of_a_constant_row_is_zero_in_every_layout(layout, value):
    # The fuzzer's find: kael gave 1.0 for [1e50] * 8 and -7e-14 for [log(0.2)] * 8 (torch
    # 0); 1.797e308 overflowed the sum (NaN in both). Every layout reaches the row kernel.
    shape, view = LAYOUTS[layout]
    k = view(kael.full(shape, value, dtype=kael.float64))
    n = k.shape[-1]
    assert not kael.layer_norm(k, (n,)).numpy().any()
    assert not kael.layer_norm(k, k.shape, eps=1.0).numpy().any()
    if value < 3e38:
        assert not kael.layer_norm(k.to(kael.float32), (n,)).numpy().any()


def test_layer_norm_normalizes_float32_rows_with_their_float64_mean():
    # The mean 16777211.5 is no float32: rounded, it gave -1.109 (torch -1.265), exactly
    # -0.83205 = -1.5 / sqrt(2.25 + 1).
    x = torch.tensor([[16777210.0, 16777213.0]])
    got = kael.layer_norm(to_kael(x), (2,), eps=1.0)
    want = -1.5 / math.sqrt(3.25)
    assert got.tolist() == [[np.float32(want), np.float32(-want)]]
    assert abs(F.layer_norm(x, (2,), eps=1.0)[0, 0].item() - want) > 0.4


@pytest.mark.parametrize("scale", [1e150, 1e154, 1e300])
def test_layer_norm_of_float64_rows_is_finite_past_the_squares_overflow(scale):
    # Below 2^512 the squares are finite; past it the row is rescaled by a power of two,
    # in every layout (the composed copy) and with weight and bias; torch gives NaN or 0.
    base = _random((4, 6), torch.float64, seed=4)
    t = base * scale
    want = F.layer_norm(base, (6,), base[0], base[1], eps=0.0)  # scale-free when eps = 0
    for k in (to_kael(t), to_kael(t.T.contiguous()).T.contiguous(), to_kael(t.T.contiguous()).T):
        got = kael.layer_norm(k, (6,), to_kael(base[0]), to_kael(base[1]), eps=0.0)
        check(got, want, NORM_TOL[torch.float64])


def test_layer_norm_accumulates_in_float64_so_float32_squares_do_not_overflow():
    # torch's float32 variance of this row overflows to inf and gives zeros; kael sums
    # squares in float64 and matches torch's float64 result rounded to float32.
    x = torch.tensor([[1e30, -1e30, 0.0]])
    want = F.layer_norm(x.double(), (3,)).float()
    check(kael.layer_norm(to_kael(x), (3,)), want, NORM_TOL[torch.float32])


def test_layer_norm_variance_is_two_pass_exact_for_a_large_mean():
    x = torch.tensor([[1e8 + 1, 1e8 - 1]], dtype=torch.float64)
    assert kael.layer_norm(to_kael(x), (2,), eps=0.0).tolist() == [[1.0, -1.0]]


def test_layer_norm_of_empty_inputs_is_empty():
    check(kael.layer_norm(kael.ones(0, 3), (3,)), F.layer_norm(torch.ones(0, 3), (3,)))
    check(kael.layer_norm(kael.ones(2, 0), (0,)), F.layer_norm(torch.ones(2, 0), (0,)))


@pytest.mark.parametrize("dtype", [torch.int64, torch.bool], ids=["i64", "bool"])
def test_layer_norm_of_integers_and_bools_becomes_float32(dtype):
    # The book's as_floating; torch refuses ("not implemented for 'Long'").
    x = torch.tensor([[1, 0, 3], [0, 0, 1]]).to(dtype)
    check(kael.layer_norm(to_kael(x), (3,)), F.layer_norm(x.float(), (3,)), NORM_TOL[torch.float32])


def test_layer_norm_shape_errors_name_the_shapes():
    x = kael.ones(2, 3, 4)
    with pytest.raises(
        kael.ValueError,
        match=r"normalized_shape=\[3\], expected input with shape \[\*, 3\], but got input of size\[2, 3, 4\]",
    ):
        kael.layer_norm(x, (3,))
    with pytest.raises(kael.ValueError, match=r"normalized_shape=\[1, 2, 3, 4\].*size\[2, 3, 4\]"):
        kael.layer_norm(x, (1, 2, 3, 4))
    with pytest.raises(kael.ValueError, match=r"normalized_shape=\[-4\]"):
        kael.layer_norm(x, (-4,))
    with pytest.raises(kael.ValueError, match="at least 1-dimensional"):
        kael.layer_norm(x, ())
    with pytest.raises(
        kael.ValueError, match=r"weight of shape \[4\] and normalized_shape = \[3, 4\]"
    ):
        kael.layer_norm(x, (3, 4), kael.ones(4))
    with pytest.raises(
        kael.ValueError, match=r"bias of shape \[3, 4, 1\] and normalized_shape = \[3, 4\]"
    ):
        kael.layer_norm(x, (3, 4), None, kael.ones(3, 4, 1))
    with pytest.raises(kael.ValueError, match="at least 1-dimensional"):
        kael.layer_norm(kael.tensor(1.0), ())


@pytest.mark.parametrize("eps", [1e-3, 1, True, np.float32(0.5), 0.0], ids=repr)
def test_layer_norm_eps_takes_any_real_number_like_torch(eps):
    x = _random((2, 4), seed=12)
    want = F.layer_norm(x, (4,), eps=eps)
    check(kael.layer_norm(to_kael(x), (4,), eps=eps), want, NORM_TOL[torch.float32])


@pytest.mark.parametrize("eps", [None, "a", [1e-5]], ids=repr)
def test_layer_norm_eps_must_be_a_float(eps):
    x = _random((2, 4))
    with pytest.raises(TypeError):
        F.layer_norm(x, (4,), eps=eps)
    kind = type(eps).__name__
    with pytest.raises(
        kael.TypeError, match=f"^layer_norm\\(\\): eps must be a float, got {kind}$"
    ):
        kael.layer_norm(to_kael(x), (4,), eps=eps)


def test_layer_norm_bad_types_are_type_errors():
    x = kael.ones(2, 4)
    with pytest.raises(
        kael.TypeError, match="weight has dtype float64 but input has dtype float32"
    ):
        kael.layer_norm(x, (4,), kael.ones(4, dtype=kael.float64))
    with pytest.raises(
        kael.TypeError, match="normalized_shape element 0 must be an int, got float"
    ):
        kael.layer_norm(x, (4.0,))
    with pytest.raises(kael.TypeError, match="bias must be a Tensor, got list"):
        kael.layer_norm(x, (4,), None, [0.0] * 4)
