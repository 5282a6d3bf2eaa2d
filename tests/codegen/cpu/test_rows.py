"""The fused row kernels (kael/codegen/cpu/rows.py) below the frontend, against PyTorch.

Rows are contiguous NumPy arrays handed to the kernels by address: every row length
around the vector width (the vector loop, the masked last vector and both), the error
word of cross_entropy and results that do not depend on the threads. (softmax's,
log_softmax's and logsumexp's rows, by these kernels and generated, are pinned through
the frontend in tests/frontend/test_nn.py.)
"""

import math

import mpmath
import numpy as np
import pytest
import torch
import torch.nn.functional as F

from kael.codegen.cpu import rows
from kael.runtime.dtypes import float32, float64, int64
from kael.runtime.threadpool import get_num_threads, set_num_threads

DTYPES = {"f32": (np.float32, float32), "f64": (np.float64, float64)}
TOL = {np.float32: {"rtol": 2e-6, "atol": 1e-7}, np.float64: {"rtol": 1e-14, "atol": 1e-300}}
LAYER_NORM_TOL = {
    np.float32: {"rtol": 1e-4, "atol": 1e-5},
    np.float64: {"rtol": 1e-12, "atol": 1e-14},
}
INF, NAN = np.inf, np.nan


def _cols(np_dtype) -> list[int]:
    """Row lengths around one and two vectors (16 float32 or 8 float64 lanes)."""
    w = 64 // np.dtype(np_dtype).itemsize
    return [1, w - 1, w, w + 1, 2 * w + 3, 100]


def _logsumexp(x: np.ndarray) -> np.ndarray:
    out = np.full(x.shape[0], 7.0, x.dtype)
    r, c = x.shape
    rows.run_rows("logsumexp", rows_dtype(x), [x.ctypes.data, out.ctypes.data, c], r, c)
    return out


def rows_dtype(x: np.ndarray):
    return float32 if x.dtype == np.float32 else float64


def _random(shape, np_dtype, seed=0) -> np.ndarray:
    return (np.random.default_rng(seed).standard_normal(shape) * 3).astype(np_dtype)


def test_logsumexp_of_an_empty_row_is_minus_infinity():
    x = np.empty((3, 0), np.float32)
    assert _logsumexp(x).tolist() == [-INF] * 3


def _layer_norm(x, weight=None, bias=None, eps=1e-5) -> np.ndarray:
    out = np.full_like(x, 7.0)
    r, c = x.shape
    variant = rows.AFFINE[(weight is not None) + 2 * (bias is not None)]
    words = [
        x.ctypes.data,
        out.ctypes.data,
        0 if weight is None else weight.ctypes.data,
        0 if bias is None else bias.ctypes.data,
        c,
        rows.float_word(eps),
    ]
    rows.run_rows(f"layer_norm_{variant}", rows_dtype(x), words, r, c)
    return out


@pytest.mark.parametrize("dtype_id", list(DTYPES))
@pytest.mark.parametrize("affine", rows.AFFINE)
def test_layer_norm_rows_match_torch_for_each_affine_variant(dtype_id, affine):
    np_dtype, _ = DTYPES[dtype_id]
    for cols in _cols(np_dtype):
        x = _random((4, cols), np_dtype, seed=cols) + 5
        w = _random(cols, np_dtype, seed=1) if affine in ("weight", "both") else None
        b = _random(cols, np_dtype, seed=2) if affine in ("bias", "both") else None
        want = F.layer_norm(
            torch.from_numpy(x),
            (cols,),
            None if w is None else torch.from_numpy(w),
            None if b is None else torch.from_numpy(b),
        ).numpy()
        # torch scales by rstd and shifts by -mean * rstd; kael subtracts the mean first.
        tol = LAYER_NORM_TOL[np_dtype]
        np.testing.assert_allclose(_layer_norm(x, w, b), want, **tol)


def test_layer_norm_variance_takes_two_passes_so_a_large_mean_does_not_cancel():
    x = np.array([[1e8 + 1, 1e8 - 1, 1e8 + 1, 1e8 - 1]], np.float64)
    # var = 1 exactly; one-pass E[x^2] - E[x]^2 would lose it to rounding at 1e16.
    np.testing.assert_allclose(_layer_norm(x, eps=0.0), [[1, -1, 1, -1]], rtol=1e-12)


def exact_layer_norm(x, weight=None, bias=None, eps=1e-5) -> np.ndarray:
    """Each row's (x - mean) / sqrt(var + eps) * weight + bias in mpmath, in x's dtype."""
    out = np.empty(x.shape, np.float64)
    with mpmath.workprec(300):
        for i, row in enumerate(x):
            v = [mpmath.mpf(float(e)) for e in row]
            mean = mpmath.fsum(v) / len(v)
            rstd = 1 / mpmath.sqrt(mpmath.fsum((e - mean) ** 2 for e in v) / len(v) + eps)
            for j, e in enumerate(v):
                y = (e - mean) * rstd
                y = y * float(weight[j]) if weight is not None else y
                out[i, j] = float(y + float(bias[j]) if bias is not None else y)
    return out.astype(x.dtype)


CONSTANT_ROWS = {
    np.float64: [1e50, math.log(0.2), 1e50 / 3, -7.05e16, 0.1, 1e-300, 1.797e308, -1e200],
    np.float32: [16777211.0, math.log(0.2), 0.1, 3e38, -1e-40, 7.0],
}


@pytest.mark.parametrize("dtype_id", list(DTYPES))
def test_layer_norm_of_a_constant_row_is_zero(dtype_id):
    # The float64 mean of [1e50] * 8 was 1 ulp off, which normalized to 1.0 (torch 0):
    # the corrected pass subtracts exactly the mean's error. 1.797e308 (its sum overflows)
    # takes the rescaled path and gives 0 too.
    np_dtype, _ = DTYPES[dtype_id]
    for value in CONSTANT_ROWS[np_dtype]:
        for cols in _cols(np_dtype):
            x = np.full((3, cols), value, np_dtype)
            for eps in (1e-5, 1.0):
                assert not _layer_norm(x, eps=eps).any(), (value, cols, eps)
            bias = _random(cols, np_dtype, seed=3)
            assert (_layer_norm(x, bias * 2, bias) == bias).all()
            # eps = 0: 0 / sqrt(0) is NaN on both sides of the rescaled path, as in torch
            assert np.isnan(_layer_norm(x, eps=0.0)).all() or cols == 1 and value == 0


@pytest.mark.parametrize(
    "row,eps",
    [
        (np.array([16777210, 16777213], np.float32), 1.0),  # the mean is not a float32
        (np.array([16777210, 16777211, 16777211, 16777216], np.float32), 1e-5),
        (1e50 / 3 + np.spacing(1e50 / 3) * np.array([0, 1, 1, 2, 0, 3, 1, 0, 1]), 0.0),
        (-7.05e16 + np.array([0, 16, 0, 0, 32, 16, 0, 0, 0, 16, 0]), 1e-5),
        (0.1 + np.spacing(0.1) * np.arange(5), 0.0),
    ],
)
def test_layer_norm_of_a_row_a_few_ulps_wide_is_exact_to_rounding(row, eps):
    # float32 rows subtract the float64 mean as a float32 pair (kael gave -1.109 and torch
    # gives -1.265 for the first, exactly -0.832); float64 rows add the mean's correction.
    x = row[None, :]
    want = exact_layer_norm(x, eps=eps)
    got = _layer_norm(x, eps=eps)
    ulp = np.spacing(np.abs(want).max())
    assert np.abs(got - want).max() <= 2 * ulp
    torch_got = F.layer_norm(torch.from_numpy(x), (x.shape[1],), eps=eps).numpy()
    assert np.abs(got - want).max() <= np.abs(torch_got - want).max()


@pytest.mark.parametrize("affine", rows.AFFINE)
def test_float64_rows_whose_squares_overflow_are_normalized_rescaled(affine):
    # Rows past 2^512 (squares) or 2^1024 / n (sums) take the rare path on x / u, u the
    # power of two at or below max |x|: finite where the exact result is (torch gives NaN
    # or 0). 1e153 stays on the main path: both sides of the limit match mpmath.
    x = np.array(
        [
            [1e300, -1e300, 0.0, 5e299],
            [1.5e308, -1.5e308, 1.5e308, 1.0],
            [1e200, 2e200, 3e200, 1e-200],
            [1e153, -1e153, 2e153, 0.0],
            [1e155, -1e155, 2e155, 0.0],
            [1.797e308, 1.797e308, 1.797e308, -1.797e308],
        ]
    )
    w = np.array([1.0, -2.0, 0.5, 3.0]) if affine in ("weight", "both") else None
    b = np.array([0.25, 1.0, -1.0, 2.0]) if affine in ("bias", "both") else None
    for eps in (1e-5, 1e300):  # eps / u^2 counts when eps rivals the variance
        got = _layer_norm(x, w, b, eps=eps)
        np.testing.assert_allclose(got, exact_layer_norm(x, w, b, eps=eps), rtol=1e-14, atol=1e-15)


@pytest.mark.parametrize("cols", [3, 9, 17])  # inside the masked vector, after one, two
def test_layer_norm_rows_of_inf_and_nan_follow_torch_through_the_rare_path(cols):
    head = np.array([[INF, 1.0, 2.0], [NAN, 1.0, 1.0], [INF, -INF, 0.0], [1e308, INF, 1e308]])
    x = np.concatenate([np.ones((4, cols - 3)), head], axis=1)  # the specials at the row's end
    want = F.layer_norm(torch.from_numpy(x), (cols,)).numpy()
    np.testing.assert_array_equal(_layer_norm(x), want)


def _cross_entropy(x, target, weight=None, ignore=-100):
    r, c = x.shape
    scratch = np.full((2, r), 7.0)
    addresses = {
        "x": x.ctypes.data,
        "target": target.ctypes.data,
        "weight": 0 if weight is None else weight.ctypes.data,
        "scratch": scratch.ctypes.data,
    }
    bad = rows.cross_entropy(rows_dtype(x), addresses, r, c, ignore, weight is not None)
    return bad, scratch


@pytest.mark.parametrize("dtype_id", list(DTYPES))
def test_cross_entropy_rows_give_weighted_losses_and_weights(dtype_id):
    np_dtype, _ = DTYPES[dtype_id]
    for cols in _cols(np_dtype):
        x = _random((6, cols), np_dtype, seed=cols)
        target = np.arange(6, dtype=np.int64) % cols
        target[2] = -100
        weight = np.abs(_random(cols, np_dtype, seed=3)) + 0.5
        bad, scratch = _cross_entropy(x, target, weight)
        assert bad == -1
        want = F.cross_entropy(
            torch.from_numpy(x),
            torch.from_numpy(target),
            torch.from_numpy(weight),
            reduction="none",
        )
        np.testing.assert_allclose(scratch[0], want.numpy(), **TOL[np_dtype])
        kept = target != -100
        assert scratch[1].tolist() == np.where(kept, weight[np.where(kept, target, 0)], 0).tolist()


def test_cross_entropy_reports_the_first_bad_row_whatever_the_thread_split():
    saved = get_num_threads()
    x = _random((40000, 16), np.float32)  # 2.5 MiB: split over the threads
    target = np.zeros(40000, np.int64)
    target[[30000, 20001, 39999]] = [-1, 16, 99]
    try:
        for threads in (1, 2):
            set_num_threads(threads)
            assert _cross_entropy(x, target)[0] == 20001
    finally:
        set_num_threads(saved)


def test_cross_entropy_targets_equal_to_ignore_index_are_never_bad():
    x = _random((3, 4), np.float64)
    bad, scratch = _cross_entropy(x, np.array([7, 7, 0], np.int64), ignore=7)
    assert bad == -1
    assert scratch[:, :2].tolist() == [[0.0, 0.0], [0.0, 0.0]]


@pytest.mark.parametrize("dtype_id", list(DTYPES))
def test_total_is_the_sum_or_the_weighted_mean(dtype_id):
    np_dtype, _ = DTYPES[dtype_id]
    scratch = np.array([[1.0, 2.0, 3.0] * 7, [0.5, 1.0, 0.5] * 7])
    out = np.zeros(1, np_dtype)
    rows.cross_entropy_total(rows_dtype(out), scratch.ctypes.data, out.ctypes.data, 21, False)
    assert out[0] == 42.0
    rows.cross_entropy_total(rows_dtype(out), scratch.ctypes.data, out.ctypes.data, 21, True)
    assert out[0] == pytest.approx(42.0 / 14.0, rel=1e-7)


def test_total_of_no_rows_is_zero_and_its_mean_nan():
    scratch, out = np.zeros((2, 0)), np.full(1, 7.0)
    rows.cross_entropy_total(float64, scratch.ctypes.data, out.ctypes.data, 0, False)
    assert out[0] == 0.0
    rows.cross_entropy_total(float64, scratch.ctypes.data, out.ctypes.data, 0, True)
    assert np.isnan(out[0])


def test_layer_norm_rows_split_over_threads_give_bit_identical_results():
    saved = get_num_threads()
    x = _random((300, 1000), np.float32)  # 1.1 MiB: split over the threads
    results = []
    try:
        for threads in (1, 2):
            set_num_threads(threads)
            results.append(_layer_norm(x))
    finally:
        set_num_threads(saved)
    assert results[0].tobytes() == results[1].tobytes()


def test_rescaled_layer_norm_rows_split_over_threads_give_bit_identical_results():
    saved = get_num_threads()
    x = _random((300, 1000), np.float64) * 1e299
    x[::7] += 1e300 / 3  # every seventh row takes the rare path
    results = []
    try:
        for threads in (1, 2):
            set_num_threads(threads)
            results.append(_layer_norm(x))
    finally:
        set_num_threads(saved)
    assert results[0].tobytes() == results[1].tobytes() and np.isfinite(results[0]).all()


@pytest.mark.parametrize("kernel", rows.KERNELS)
def test_kernels_use_kael_vector_math_and_full_width_vectors(kernel):
    text = rows.library(kernel, float32).text
    assert "llvm.exp" not in text and "llvm.log" not in text and "@exp" not in text
    if kernel != "cross_entropy_total":
        assert "<16 x float>" in text


def test_row_kernels_refuse_integer_dtypes():
    with pytest.raises(AssertionError, match="float32 or float64"):
        rows.library("softmax", int64)
