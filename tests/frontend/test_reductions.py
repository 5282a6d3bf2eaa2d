"""Reductions against PyTorch: values, dtype and shape over dtypes, layouts and dim forms,
every bad input as a typed kael error, NaN and tie rules, precision, determinism and
one launch per pass (the elementwise prologue and epilogue fused into the kernel)."""

import itertools
import math
from fractions import Fraction

import mpmath
import numpy as np
import pytest
import torch
from kernel_helpers import KAEL_DTYPES
from parity_helpers import resized_out

import kael
from kael.frontend import reductions
from kael.frontend.inspection import record_launches
from kael.ir import graph as g

DTYPES = [torch.float32, torch.float64, torch.int64, torch.bool]
DTYPE_IDS = ["f32", "f64", "i64", "bool"]
FLOATS = [torch.float32, torch.float64]
INT64_MAX, INT64_MIN = 2**63 - 1, -(2**63)

# op -> dtypes it accepts; every one takes (x, dim, keepdim) except count_nonzero (no keepdim).
VALUE_OPS = {
    "sum": DTYPES,
    "prod": DTYPES,
    "mean": FLOATS,
    "var": FLOATS,
    "std": FLOATS,
    "amax": DTYPES,
    "amin": DTYPES,
    "all": DTYPES,
    "any": DTYPES,
    "norm": FLOATS,
    "count_nonzero": DTYPES,
}
DIMS = [None, 0, 1, -1, (0, 1), (-1, 0), [1]]
DIM_IDS = ["none", "0", "1", "-1", "01", "-1_0", "list1"]

# view name -> (base shape, view applied to both libraries): each view has shape [4, 6].
LAYOUTS = {
    "contiguous": ((4, 6), lambda t: t),
    "transposed": ((6, 4), lambda t: t.T),
    "stepped": ((8, 12), lambda t: t[::2, 1::2]),
    "expanded": ((1, 6), lambda t: t.expand(4, 6)),
    "selected": ((4, 2, 6), lambda t: t[:, 1, :]),
}


def base_values(dtype: torch.dtype, shape: tuple, seed: int = 0) -> torch.Tensor:
    """Values that keep products finite and make ties rare; ints in [-3, 3], bools mixed."""
    gen = torch.Generator().manual_seed(seed)
    if dtype is torch.bool:
        return torch.rand(shape, generator=gen) > 0.4
    if dtype is torch.int64:
        return torch.randint(-3, 4, shape, generator=gen)
    return (torch.rand(shape, generator=gen, dtype=torch.float64) + 0.5).to(dtype)


def to_kael(t: torch.Tensor) -> kael.Tensor:
    return kael.tensor(t.contiguous().numpy())


def twins(dtype, layout="contiguous", seed=0):
    shape, view = LAYOUTS[layout]
    base = base_values(dtype, shape, seed)
    return view(to_kael(base)), view(base)


def check(k: kael.Tensor, t: torch.Tensor, exact: bool = False) -> None:
    """Same shape and dtype; values equal (ints, bools) or close (floats: kael sums in float64)."""
    assert k.shape == tuple(t.shape)
    assert k.dtype is KAEL_DTYPES[t.dtype]
    got, want = k.numpy(), t.numpy()
    if t.dtype.is_floating_point and not exact:
        rtol = 1e-5 if t.dtype is torch.float32 else 1e-12
        np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol, equal_nan=True)
    else:
        np.testing.assert_array_equal(got, want)


def _along(values: np.ndarray, axis, one) -> np.ndarray:
    """one(1-d slice) for each slice along `axis` (every element when None), as float64."""
    if axis is None:
        return np.array(one(values.ravel()), dtype=np.float64)
    moved = np.moveaxis(values, axis, -1)
    flat = [one(v) for v in moved.reshape(-1, moved.shape[-1])]
    return np.array(flat, dtype=np.float64).reshape(moved.shape[:-1])


def exact_norm(values: np.ndarray, p, axis=None) -> np.ndarray:
    """sum(|x|^p)^(1/p) in mpmath (its exponents do not overflow), rounded to float64."""

    def one(v):
        with mpmath.workprec(200):
            terms = [abs(mpmath.mpf(float(x))) for x in v]
            if p < 0 and any(t == 0 for t in terms):
                return 0.0
            total = mpmath.fsum(t**p for t in terms)
            return float(total ** (mpmath.mpf(1) / p)) if total else 0.0

    return _along(values, axis, one)


def exact_moment(values: np.ndarray, op: str, axis=None, correction=1) -> np.ndarray:
    """var (exact, in rationals) or std (its mpmath square root), rounded to float64."""

    def one(v):
        xs = [Fraction(float(x)) for x in v]
        mean = sum(xs) / len(xs)
        var = sum((x - mean) ** 2 for x in xs) / (len(xs) - correction)
        with mpmath.workprec(200):
            exact = mpmath.mpf(var.numerator) / var.denominator
            return float(mpmath.sqrt(exact) if op == "std" else exact)

    return _along(values, axis, one)


def call(lib, op: str, x, dim, keepdim):
    fn = getattr(lib, op)
    if op == "count_nonzero":
        return fn(x, dim=dim)
    if op == "norm":
        return fn(x, 2, dim, keepdim)
    if dim is None:
        return fn(x) if not keepdim else fn(x, dim=None, keepdim=True)
    return fn(x, dim, keepdim=keepdim)


def torch_call(op, t, dim, keepdim):
    """The torch reference: dims as a tuple (all of them for None with keepdim)."""
    if isinstance(dim, list):
        dim = tuple(dim)
    if dim is None and (keepdim or op in ("amax", "amin")):
        dim = tuple(range(t.ndim))
    if op == "prod" and isinstance(dim, tuple):
        # torch's prod takes one dim: reduce the dims one by one, highest first.
        r = t
        for d in sorted((d % t.ndim for d in dim), reverse=True):
            r = torch.prod(r, d, keepdim=keepdim)
        return r if dim else torch.prod(t)
    return call(torch, op, t, dim, keepdim)


# ---- every op over dtypes, layouts and dim forms ---------------------------------------------


# (op, dtype, keepdim) for every dtype the op accepts; count_nonzero has no keepdim.
OP_CASES = [
    pytest.param(op, dtype, keepdim, id=f"{op}-{DTYPE_IDS[DTYPES.index(dtype)]}-{keepdim}")
    for op, accepted in VALUE_OPS.items()
    for dtype in accepted
    for keepdim in ((False,) if op == "count_nonzero" else (False, True))
]


@pytest.mark.parametrize("dim", DIMS, ids=DIM_IDS)
@pytest.mark.parametrize("layout", list(LAYOUTS))
@pytest.mark.parametrize("op,dtype,keepdim", OP_CASES)
def test_reduction_matches_torch_over_layouts_and_dims(op, dtype, keepdim, layout, dim):
    k, t = twins(dtype, layout)
    check(call(kael, op, k, dim, keepdim), torch_call(op, t, dim, keepdim))


@pytest.mark.parametrize("op,dtype,keepdim", [c for c in OP_CASES if not c.values[2]])
def test_reduction_of_a_0d_tensor_accepts_dim_0_and_minus_1(op, dtype, keepdim):
    t = base_values(dtype, ())
    k = to_kael(t)
    for dim in (None, 0, -1):
        for keepdim in (False, True):
            if op == "count_nonzero" and keepdim:
                continue
            if op in ("var", "std"):
                # one element with correction 1 divides by zero: NaN, as torch gives.
                assert math.isnan(call(kael, op, k, dim, keepdim).item())
                continue
            check(call(kael, op, k, dim, keepdim), torch_call(op, t, dim, keepdim))


@pytest.mark.parametrize("op", ["sum", "prod", "amax", "amin", "all", "any", "count_nonzero"])
def test_dim_1_of_a_0d_tensor_is_out_of_range(op):
    with pytest.raises(kael.IndexError, match=r"range of \[-1, 0\], but got 1\) .*rank 0"):
        getattr(kael, op)(kael.tensor(3.0), 1)


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_three_dims_reduced_two_at_a_time_match_torch(dtype):
    t = base_values(dtype, (3, 4, 5), seed=3)
    k = to_kael(t)
    for dims in [(0, 2), (1, 2), (0, 1), (2, 0), (0, 1, 2)]:
        check(kael.sum(k, dims), torch.sum(t, dims))
        check(kael.amax(k, dims, keepdim=True), torch.amax(t, dims, keepdim=True))
        check(kael.any(k, dims), torch.any(t, dims))
    pk, pt = k.permute(2, 0, 1), t.permute(2, 0, 1)
    for dims in [(0, 2), (1,), (0,)]:
        check(kael.sum(pk, dims), torch.sum(pt, dims))


# ---- max and min: three forms -----------------------------------------------------------------


@pytest.mark.parametrize("layout", list(LAYOUTS))
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("op", ["max", "min"])
def test_max_min_forms_match_torch(op, dtype, layout):
    k, t = twins(dtype, layout, seed=5)
    check(getattr(kael, op)(k), getattr(torch, op)(t))
    for dim in (0, 1, -1):
        for keepdim in (False, True):
            kr = getattr(kael, op)(k, dim, keepdim)
            tr = getattr(torch, op)(t, dim, keepdim)
            check(kr.values, tr.values)
            check(kr.indices, tr.indices)
            values, indices = kr
            assert values is kr.values and indices is kr.indices


def test_max_with_a_tensor_second_argument_is_maximum():
    a, b = torch.tensor([1.0, 5.0, float("nan")]), torch.tensor([3.0, 2.0, 0.0])
    check(kael.max(to_kael(a), to_kael(b)), torch.max(a, b))
    check(kael.min(to_kael(a), to_kael(b)), torch.min(a, b))
    check(to_kael(a).max(to_kael(b)), torch.max(a, b))


@pytest.mark.parametrize("layout", list(LAYOUTS))
@pytest.mark.parametrize("dtype", DTYPES[:3], ids=DTYPE_IDS[:3])
@pytest.mark.parametrize("op", ["argmax", "argmin"])
def test_argmax_argmin_match_torch(op, dtype, layout):
    k, t = twins(dtype, layout, seed=7)
    check(getattr(kael, op)(k), getattr(torch, op)(t))
    check(getattr(kael, op)(k, keepdim=True), getattr(torch, op)(t, keepdim=True))
    for dim in (0, 1, -1):
        for keepdim in (False, True):
            check(getattr(kael, op)(k, dim, keepdim), getattr(torch, op)(t, dim, keepdim))


def test_argmax_of_a_transposed_tensor_reports_the_row_major_flat_index():
    t = torch.tensor([[1.0, 9.0], [2.0, 3.0], [4.0, 5.0]]).T  # [[1, 2, 4], [9, 3, 5]]
    assert kael.argmax(to_kael(t.T.contiguous()).T).item() == 3 == torch.argmax(t).item()


def test_argmax_ties_take_the_first_index():
    assert kael.argmax(kael.tensor([1, 3, 3])).item() == 1
    assert kael.argmin(kael.tensor([2.0, 0.0, 5.0, 0.0])).item() == 1
    assert kael.max(kael.tensor([[7, 1, 7]]), 1).indices.tolist() == [0]


def test_argmax_ties_across_blocks_and_lanes_take_the_first_index():
    t = torch.zeros(50_000)
    t[[5, 16_383, 16_384, 40_000]] = 2.0
    k = to_kael(t)
    assert kael.argmax(k).item() == 5 == torch.argmax(t).item()
    t[5] = 0.0
    assert kael.argmax(to_kael(t)).item() == 16_383
    assert kael.argmin(-to_kael(t)).item() == 16_383


def test_argmax_the_first_nan_wins():
    x = kael.tensor([1.0, float("nan"), 3.0, float("nan")])
    assert kael.argmax(x).item() == 1
    assert kael.argmin(x).item() == 1
    big = torch.zeros(40_000, dtype=torch.float64)
    big[[20_000, 39_999, 3]] = float("nan")
    assert kael.argmax(to_kael(big)).item() == 3 == torch.argmax(big).item()
    assert kael.max(to_kael(big.view(4, 10_000)), 1).indices.tolist() == [3, 0, 0, 9_999]


def test_argmax_of_bool_is_refused_like_torch():
    with pytest.raises(kael.TypeError, match="argmax.*bool"):
        kael.argmax(kael.tensor([True, False]))


def test_argmax_takes_one_dim_not_a_tuple():
    with pytest.raises(kael.TypeError, match="argmin.*int or None, got tuple"):
        kael.argmin(kael.ones(2, 3), (0, 1))


# ---- NaN rules ---------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", FLOATS, ids=["f32", "f64"])
def test_max_and_min_propagate_nan_wherever_it_sits(dtype):
    for pos in range(4):
        t = torch.tensor([1.0, 2.0, 3.0, 4.0], dtype=dtype)
        t[pos] = float("nan")
        k = to_kael(t)
        for op in ("amax", "amin", "max", "min", "sum", "prod", "mean"):
            assert math.isnan(getattr(kael, op)(k).item()), (op, pos)
        assert math.isnan(kael.max(k, 0).values.item())
        assert kael.max(k, 0).indices.item() == pos


def test_all_and_any_count_nan_as_true():
    x = kael.tensor([float("nan"), float("nan")])
    assert kael.all(x).item() is True
    assert kael.any(x).item() is True
    assert kael.count_nonzero(x).item() == 2


def test_max_and_min_of_a_large_tensor_propagate_nan_from_any_block():
    t = torch.rand(100_000)
    t[77_777] = float("nan")
    assert math.isnan(kael.amax(to_kael(t)).item())
    assert math.isnan(kael.amin(to_kael(t.view(1000, 100)), 0)[77].item())


# ---- empty inputs ------------------------------------------------------------------------------


def test_empty_reductions_give_each_identity():
    e = kael.zeros(0)
    assert kael.sum(e).item() == 0.0
    assert kael.prod(e).item() == 1.0
    assert math.isnan(kael.mean(e).item())
    assert math.isnan(kael.var(e).item())
    assert math.isnan(kael.std(e).item())
    assert kael.norm(e).item() == 0.0
    assert kael.all(e).item() is True
    assert kael.any(e).item() is False
    assert kael.count_nonzero(e).item() == 0
    assert kael.sum(kael.zeros(0, dtype=kael.int64)).dtype is kael.int64


@pytest.mark.parametrize("op", ["sum", "prod", "mean", "amax", "all", "any"])
def test_empty_tensor_reduced_over_an_empty_dim_matches_torch(op):
    k, t = kael.zeros(0, 3), torch.zeros(0, 3)
    if op == "amax":
        check(kael.amax(k, 1), torch.amax(t, 1))
        return
    check(getattr(kael, op)(k, 0), getattr(torch, op)(t, 0))
    check(getattr(kael, op)(k, 1), getattr(torch, op)(t, 1))


def test_max_of_an_empty_tensor_without_a_dim_has_no_result():
    with pytest.raises(kael.Error, match=r"max of an empty dimension in shape \[0\] has no result"):
        kael.max(kael.zeros(0))
    with pytest.raises(kael.Error, match=r"amin of an empty dimension in shape \[2, 0\]"):
        kael.amin(kael.zeros(2, 0))


def test_max_over_an_empty_dim_is_an_index_error_naming_dim_and_shape():
    with pytest.raises(
        kael.IndexError, match=r"max of an empty dimension \(dim 0\) in shape \[0, 3\]"
    ):
        kael.max(kael.zeros(0, 3), 0)
    with pytest.raises(kael.IndexError, match=r"amax of an empty dimension \(dim 1\)"):
        kael.amax(kael.zeros(3, 0), 1)
    with pytest.raises(kael.IndexError, match=r"argmax of an empty dimension in shape \[0\]"):
        kael.argmax(kael.zeros(0))
    with pytest.raises(kael.IndexError, match=r"argmin of an empty dimension \(dim 0\)"):
        kael.argmin(kael.zeros(0, 2), 0)


def test_max_over_a_nonempty_dim_of_an_empty_tensor_is_empty():
    r = kael.max(kael.zeros(0, 3), 1)
    assert r.values.shape == (0,) and r.indices.shape == (0,)
    assert kael.amax(kael.zeros(0, 3), 1).shape == (0,)
    assert kael.argmax(kael.zeros(0, 3), 1).shape == (0,)


# ---- dtypes ----------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [torch.int64, torch.bool], ids=["i64", "bool"])
def test_integer_and_bool_sums_and_products_give_int64(dtype):
    t = base_values(dtype, (4, 5))
    for op in ("sum", "prod"):
        r = getattr(kael, op)(to_kael(t))
        assert r.dtype is kael.int64
        check(r, getattr(torch, op)(t))


def test_integer_sums_and_products_wrap():
    assert kael.sum(kael.tensor([INT64_MAX, 1])).item() == INT64_MIN
    assert kael.prod(kael.tensor([2**62, 4])).item() == 0
    assert kael.prod(kael.tensor([2**62, 3])).item() == torch.prod(torch.tensor([2**62, 3])).item()


@pytest.mark.parametrize("op", ["mean", "var", "std", "norm"])
def test_floating_only_reductions_refuse_integers_naming_the_dtype(op):
    for dtype in (kael.int64, kael.bool):
        with pytest.raises(kael.TypeError, match=f"{op}.*{dtype}"):
            getattr(kael, op)(kael.ones(3, dtype=dtype))


@pytest.mark.parametrize("op", ["sum", "prod", "mean"])
def test_dtype_argument_casts_inside_the_kernel(op):
    t = torch.tensor([[1, 2, 3], [4, 5, 6]])
    for dtype in (torch.float32, torch.float64):
        check(
            getattr(kael, op)(to_kael(t), dtype=KAEL_DTYPES[dtype]),
            getattr(torch, op)(t, dtype=dtype),
        )
        check(
            getattr(kael, op)(to_kael(t), 1, dtype=KAEL_DTYPES[dtype]),
            getattr(torch, op)(t, 1, dtype=dtype),
        )
    if op != "mean":
        f = torch.tensor([1.7, 2.6, -3.9])
        check(
            getattr(kael, op)(to_kael(f), dtype=kael.int64),
            getattr(torch, op)(f, dtype=torch.int64),
        )
    _, launches = record_launches(getattr(kael, op), to_kael(t), dtype=kael.float32)
    assert len(launches) == 1


def test_mean_of_integers_with_a_float_dtype_is_allowed():
    check(
        kael.mean(kael.tensor([1, 2, 4]), dtype=kael.float64),
        torch.mean(torch.tensor([1, 2, 4]), dtype=torch.float64),
    )


# ---- var and std -------------------------------------------------------------------------------


@pytest.mark.parametrize("correction", [0, 1, 2, 0.5])
@pytest.mark.parametrize("op", ["var", "std"])
def test_var_and_std_corrections_match_torch(op, correction):
    k, t = twins(torch.float64, "stepped", seed=11)
    for dim in (None, 0, (0, 1), -1):
        for keepdim in (False, True):
            check(
                getattr(kael, op)(k, dim, correction=correction, keepdim=keepdim),
                getattr(torch, op)(t, dim, correction=correction, keepdim=keepdim),
            )


def test_var_does_not_lose_precision_with_a_large_mean():
    x = kael.tensor([1e8 + 1, 1e8 - 1], dtype=kael.float64)
    assert abs(kael.var(x, correction=0).item() - 1.0) <= 1e-9
    assert abs(kael.var(x).item() - 2.0) <= 1e-9


def test_var_with_too_few_elements_is_nan():
    assert math.isnan(kael.var(kael.tensor([3.0])).item())


@pytest.mark.filterwarnings(r"ignore:var\(\)")
def test_var_divides_by_n_minus_correction_clamped_at_zero():
    t = torch.tensor([3.0, 4.0, 6.0])
    for correction in (2, 3, 5):
        check(kael.var(to_kael(t), correction=correction), torch.var(t, correction=correction))
    assert kael.std(to_kael(t), correction=4).item() == math.inf


@pytest.mark.filterwarnings(r"ignore:(var|std)(_mean)?\(\)")
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
@pytest.mark.parametrize("op", ["var", "std", "var_mean", "std_mean"])
def test_var_divisor_is_n_minus_correction_only_when_n_exceeds_it_nan_included(op, dtype):
    """torch divides by n - correction when n > correction, else by 0: a NaN correction
    gives inf (NaN for a constant row), -inf gives 0, and an empty row stays NaN for
    any correction."""
    rows = [[0.5, 1.0, 2.0, 4.0], [3.0, 3.0, 3.0, 3.0]]
    t, k = torch.tensor(rows, dtype=getattr(torch, dtype)), kael.tensor(rows).to(getattr(kael, dtype))  # fmt: skip
    empty_t, empty_k = torch.ones(2, 0, dtype=t.dtype), kael.ones(2, 0, dtype=k.dtype)
    for correction in (math.nan, math.inf, -math.inf, -1, -1.5, 3.5, 4, 1e300):
        for (kx, tx), dim in itertools.product(((k, t), (empty_k, empty_t)), (1, None)):
            got = getattr(kael, op)(kx, dim, correction=correction)
            want = getattr(torch, op)(tx, dim, correction=correction)
            pairs = zip(got, want, strict=True) if op.endswith("_mean") else [(got, want)]
            for kr, tr in pairs:
                assert kr.shape == tuple(tr.shape) and kr.dtype is KAEL_DTYPES[tr.dtype]
                np.testing.assert_allclose(
                    kr.to(kael.float64).numpy(), tr.double().numpy(), rtol=1e-2, equal_nan=True,
                    err_msg=f"{op} {dtype} correction={correction} dim={dim} rows {list(tx.shape)}",
                )  # fmt: skip


# Values whose float64 mean rounds away from the value: a constant slice of them shows the
# mean's rounding error e as n e^2 / (n - 1) in a plain second pass (torch's Welford passes
# too give up to 3e67 for 1e50 / 3); the corrected pass cancels it exactly.
CONSTANTS = [-7.05e16, 1e50 / 3, math.log(0.2), -123456789.123, 0.1, 3.0]


@pytest.mark.parametrize("value", CONSTANTS)
@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_var_of_a_constant_slice_is_zero_in_every_layout(layout, value):
    shape, view = LAYOUTS[layout]
    k = view(kael.full(shape, value, dtype=kael.float64))
    for dim in (None, 0, 1, (0, 1)):
        for op in ("var", "std"):
            for correction in (0, 1):
                got = getattr(kael, op)(k, dim, correction=correction)
                assert not got.numpy().any(), (op, dim, got)


@pytest.mark.parametrize("ulps", [1, 2, 3, 16])
@pytest.mark.parametrize("base", [1e50 / 3, -7.05e16, 16777211.0, math.log(0.2)])
def test_var_of_data_a_few_ulps_wide_is_exact(base, ulps):
    # Every d = x - mean is a small multiple of one ulp: both sums are exact and the result
    # is the variance rounded once; a plain second pass (and torch) can be off by 100%.
    x = np.array([base + i * ulps * np.spacing(base) * (i % 3) for i in range(37)])
    k, t = kael.tensor(x), torch.from_numpy(x)
    for op in ("var", "std"):
        want = exact_moment(x, op)
        got = getattr(kael, op)(k).item()
        assert got == pytest.approx(float(want), rel=1e-14, abs=0)
        assert abs(got - want) <= abs(getattr(torch, op)(t).item() - want)
    # one side of the limit: float32 data takes the plain second pass, exact to its precision
    x32 = np.float32(16777210.0) + np.arange(4, dtype=np.float32)
    got = kael.var(kael.tensor(x32)).item()
    assert got == np.float32(exact_moment(x32.astype(np.float64), "var"))


def test_var_and_std_along_a_dim_are_finite_where_float64_sums_overflow():
    # The fuzzer's find: std over dim 0 of (4, 2) copies of 1.797e308 was inf (the sum
    # overflows); now its epilogue raises the flag and the passes are redone on x / 2^1022.
    k = kael.full((4, 2), 1.797e308, dtype=kael.float64)
    assert kael.std(k, 0).tolist() == [0.0, 0.0]
    assert kael.var(k, 1, correction=0).tolist() == [0.0] * 4
    x = np.array([[1.7e308, -1.7e308, 1e300, -2e307], [1e200, -1e200, 1e154, 0.0]])
    for op in ("var", "std"):
        for dim in (None, 0, 1):
            want = exact_moment(x, op, dim)
            got = getattr(kael, op)(kael.tensor(x), dim).numpy()
            np.testing.assert_allclose(got, want, rtol=1e-14)
    # Exact variances past the largest double stay inf; their square roots are finite.
    assert kael.var(kael.tensor(x[0])).item() == math.inf
    assert math.isfinite(kael.std(kael.tensor(x[0])).item())


@pytest.mark.parametrize("magnitude", [1e153, 1e155, 1e306, 1.7976931348623157e308])
def test_std_is_exact_on_both_sides_of_the_squares_overflow(magnitude):
    # 1e153: sums and squares are finite, one pass; from 1e155 on the squares overflow.
    x = np.array([magnitude, -magnitude / 2, magnitude / 4, -magnitude / 8, magnitude / 3])
    t = torch.from_numpy(x)
    for op in ("var", "std"):
        want = exact_moment(x, op)
        got = getattr(kael, op)(kael.tensor(x)).item()
        if math.isinf(want):
            assert got == want
            continue
        assert got == pytest.approx(float(want), rel=1e-14)
        torch_error = abs(getattr(torch, op)(t).item() - want)
        assert abs(got - want) <= torch_error or math.isnan(torch_error)
    launches = record_launches(kael.std, kael.tensor(x))[1]
    assert len(launches) == (2 if magnitude < 1e154 else 6)  # + unit, mean, sums, unscale


def test_var_and_std_of_inf_and_nan_follow_torch_after_the_retry():
    x = torch.tensor([[1.0, math.inf, 2.0], [math.nan, 1.0, 1.0], [-math.inf, math.inf, 0.0]])
    x = x.double()
    for op in ("var", "std"):
        for dim in (None, 0, 1):
            check(getattr(kael, op)(to_kael(x), dim), getattr(torch, op)(x, dim))


def test_a_scaled_retry_with_out_aliasing_the_input_reads_the_input_intact():
    x = kael.tensor([[1.5e308, -1.5e308, 1.5e308], [1.0, 2.0, 3.0]], dtype=kael.float64)
    want = kael.std(x.clone(), 1)
    kael.std(x, 1, out=x[:, 0])
    assert x[:, 0].tolist() == want.tolist() and math.isfinite(want[0].item())
    y = kael.full((3,), -5.6e269, dtype=kael.float64)
    kael.norm(y, 2, 0, keepdim=True, out=y[:1])
    assert y[0].item() == pytest.approx(5.6e269 * math.sqrt(3), rel=1e-15)


@pytest.mark.parametrize("threads", [1, 3])
def test_corrected_and_scaled_passes_do_not_depend_on_the_thread_count(threads):
    # Several blocks per output (and a flagged retry): bit for bit with 2 threads.
    rng = np.random.default_rng(5)
    x = 1e300 * rng.standard_normal((3, 70_000)) + np.array([[0.0], [1e308], [0.0]])
    narrow = 1e50 / 3 + np.spacing(1e50) * rng.integers(0, 4, 70_000)
    inputs = [kael.tensor(x), kael.tensor(narrow), kael.tensor(x.T.copy()).T]

    def results():
        return [
            kael.std(inputs[0], 1).numpy().tobytes(),
            kael.var(inputs[1]).item(),
            kael.norm(inputs[0], 2, 1).numpy().tobytes(),
            kael.norm(inputs[0], 3).item(),
            kael.var(inputs[2], 1).numpy().tobytes(),
        ]

    saved = kael.get_num_threads()
    kael.set_num_threads(2)
    try:
        reference = results()
        kael.set_num_threads(threads)
        assert results() == reference
    finally:
        kael.set_num_threads(saved)


# ---- norm ------------------------------------------------------------------------------------


@pytest.mark.parametrize("p", [2, 1, float("inf"), float("-inf"), 0, 3, 0.5, "fro"])
@pytest.mark.parametrize("dtype", FLOATS, ids=["f32", "f64"])
def test_norm_orders_match_torch(p, dtype):
    t = base_values(dtype, (4, 6), seed=2) - 1.0
    t[0, 0] = 0.0
    k = to_kael(t)
    check(kael.norm(k, p), torch.norm(t, p))
    for dim in (0, 1, (0, 1)):
        if p == "fro" and dim != (0, 1):
            continue
        for keepdim in (False, True):
            check(kael.norm(k, p, dim, keepdim), torch.norm(t, p, dim, keepdim))
    check(kael.norm(k.T, p), torch.norm(t.T, p))


def test_norm_order_must_be_a_number_fro_or_nuc():
    with pytest.raises(kael.TypeError, match="p must be a number, 'fro' or 'nuc', got 'max'"):
        kael.norm(kael.ones(3), "max")
    with pytest.raises(RuntimeError, match="at least 2 dimensions"):
        torch.norm(torch.ones(3), "nuc")
    with pytest.raises(kael.ValueError, match="at least 2 dimensions"):
        kael.norm(kael.ones(3), "nuc")


@pytest.mark.parametrize("p", [2, 3, 0.5, -1, 2.5, 8])
@pytest.mark.parametrize("magnitude", [1e100, 1e152, 1e200, 5.6e269, 1.7e308])
def test_norm_is_finite_where_its_float64_powers_overflow(p, magnitude):
    # sum(|x|^p) passes the largest double from |x| ~ 2^(1024 / p): the flagged epilogue
    # sends the sum to a retry on x / max|x|, exact for any p; torch answers inf.
    x = np.array([[magnitude, -magnitude / 3, 0.5 * magnitude], [2.0, -magnitude, 1e-300]])
    for dim in (None, 0, 1):
        want = exact_norm(x, p, dim)
        got = kael.norm(kael.tensor(x), p, dim).numpy()
        # kael's pow (codegen/vmath.py) holds a few ulps; a square root, half an ulp
        np.testing.assert_allclose(got, want, rtol=1e-14 if p == 2 else 1e-13)
    # the fuzzer's find: a 0-d tensor
    assert kael.norm(kael.tensor(-magnitude, dtype=kael.float64)).item() == magnitude


def test_norm_below_the_overflow_takes_one_pass_and_above_it_three_more():
    below = kael.tensor([9e153, -9e153], dtype=kael.float64)  # sum of squares 1.62e308
    above = kael.tensor([1e154, -1e154], dtype=kael.float64)  # 2e308: past the largest double
    for x, passes in ((below, 1), (above, 4)):  # + unit, scaled sum, unscale
        got, launches = record_launches(kael.norm, x)
        assert len(launches) == passes
        want = exact_norm(x.numpy(), 2)
        assert abs(got.item() - want) <= np.spacing(want)  # a root and a product: 1 ulp


def test_float32_norms_overflow_only_in_high_powers():
    # float32 squares and cubes stay far inside float64; |x|^10 of 2e38 does not.
    x = np.array([2e38, -2e38, 1.0], dtype=np.float32)
    for p in (2, 3, 10, -10):
        want = exact_norm(x.astype(np.float64), p).astype(np.float32)
        got = kael.norm(kael.tensor(x), p)
        assert got.dtype is kael.float32
        np.testing.assert_allclose(got.numpy(), want, rtol=2e-7)
    assert len(record_launches(kael.norm, kael.tensor(x))[1]) == 1
    assert len(record_launches(kael.norm, kael.tensor(x), 10)[1]) == 4


def test_norms_of_inf_and_nan_follow_torch_after_the_retry():
    x = torch.tensor([[1.0, math.inf, 2.0], [math.nan, 1.0, 1.0], [0.0, 0.0, 1e300]]).double()
    for p in (2, 3, -1):
        for dim in (None, 0, 1):
            check(kael.norm(to_kael(x), p, dim), torch.norm(x, p, dim))


# ---- count_nonzero, all, any -------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_count_nonzero_counts_zeros_of_each_dtype(dtype):
    t = torch.tensor([[0, 1, 2], [0, 0, 3]]).to(dtype)
    k = to_kael(t)
    check(kael.count_nonzero(k), torch.count_nonzero(t))
    check(kael.count_nonzero(k, 1), torch.count_nonzero(t, 1))
    check(kael.count_nonzero(k, (0, 1)), torch.count_nonzero(t, (0, 1)))
    _, launches = record_launches(kael.count_nonzero, k, 0)
    assert len(launches) == 1


def test_all_and_any_give_bool_for_every_dtype():
    for dtype in (kael.float32, kael.int64):
        x = kael.tensor([[0, 1], [2, 3]]).to(dtype)
        assert kael.all(x, 1).tolist() == [False, True]
        assert kael.any(x, 0).tolist() == [True, True]
        assert kael.all(x).dtype is kael.bool


# ---- out= --------------------------------------------------------------------------------------


def test_out_receives_the_result_in_place():
    x = kael.tensor([[1.0, 2.0], [3.0, 4.0]])
    out = kael.empty(2)
    assert kael.sum(x, 0, out=out) is out
    assert out.tolist() == [4.0, 6.0]
    strided = kael.zeros(2, 2)[:, 1]
    kael.amax(x, 1, out=strided)
    assert strided.tolist() == [2.0, 4.0]
    keep = kael.empty(2, 1)
    kael.mean(x, 1, keepdim=True, out=keep)
    assert keep.tolist() == [[1.5], [3.5]]
    idx = kael.empty(2, dtype=kael.int64)
    assert kael.argmax(x, 1, out=idx) is idx and idx.tolist() == [1, 1]


def test_max_with_dim_writes_the_out_pair():
    x = kael.tensor([[1.0, 7.0], [9.0, 4.0]])
    values, indices = kael.empty(2), kael.empty(2, dtype=kael.int64)
    r = kael.max(x, 1, out=(values, indices))
    assert r.values is values and r.indices is indices
    assert values.tolist() == [7.0, 9.0] and indices.tolist() == [1, 0]


def test_out_of_another_shape_is_resized_and_of_another_dtype_refused():
    x = kael.ones(2, 3)
    got = resized_out(lambda o: kael.sum(x, 0, out=o), kael.empty(2), (3,))
    assert got.tolist() == [2.0, 2.0, 2.0]
    with pytest.raises(
        kael.TypeError, match="out has dtype int64 but the result has dtype float32"
    ):
        kael.amax(x, 0, out=kael.empty(3, dtype=kael.int64))
    # sum sums in out's dtype (test_out_casting.py)
    assert kael.sum(x, 0, out=kael.empty(3, dtype=kael.int64)).tolist() == [2, 2, 2]
    with pytest.raises(kael.TypeError, match="values, indices"):
        kael.max(x, 0, out=kael.empty(3))


# ---- bad dims and arguments --------------------------------------------------------------------


@pytest.mark.parametrize(
    "op",
    ["sum", "prod", "mean", "var", "std", "amax", "amin", "all", "any", "norm", "count_nonzero"],
)
def test_a_repeated_dim_is_a_value_error(op):
    x = kael.ones(2, 3)
    with pytest.raises(kael.ValueError, match="dimension 0 appears more than once in reduction"):
        if op == "norm":
            kael.norm(x, 2, (0, -2))
        else:
            getattr(kael, op)(x, (0, -2))


@pytest.mark.parametrize(
    "op", ["sum", "mean", "amax", "argmax", "all", "max", "var", "count_nonzero"]
)
def test_a_dim_out_of_range_is_an_index_error_naming_dim_and_rank(op):
    with pytest.raises(kael.IndexError, match=r"range of \[-2, 1\], but got 2\) .*rank 2"):
        getattr(kael, op)(kael.ones(2, 3), 2)
    with pytest.raises(kael.IndexError, match=r"range of \[-2, 1\], but got -3"):
        getattr(kael, op)(kael.ones(2, 3), -3)


def test_non_tensor_input_and_bad_keepdim_are_type_errors():
    with pytest.raises(kael.TypeError, match="sum.*Tensor.*list"):
        kael.sum([1, 2])
    with pytest.raises(kael.TypeError, match="keepdim must be a bool, got str"):
        kael.sum(kael.ones(2), 0, "yes")
    with pytest.raises(kael.TypeError, match="correction must be a number, got str"):
        kael.var(kael.ones(2), correction="1")
    with pytest.raises(kael.TypeError, match="dim must be an int, got str"):
        kael.max(kael.ones(2), "0")


# ---- dim=() and other argument forms -----------------------------------------------------------


@pytest.mark.parametrize("dim", [(), []], ids=["tuple", "list"])
@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("op", ["any", "all"])
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_any_and_all_over_no_dims_give_the_bool_of_the_input(dtype, op, keepdim, dim):
    # PyTorch 2.13 reduces over no dim here: x.bool() in x's shape, keepdim or not.
    for shape in ((4, 6), (), (0, 3)):
        t = base_values(dtype, shape, seed=3)
        k = to_kael(t)
        check(getattr(kael, op)(k, dim, keepdim), getattr(torch, op)(t, dim=(), keepdim=keepdim))
    k, t = twins(dtype, "transposed", seed=5)
    out = kael.empty(4, 6, dtype=kael.bool)
    assert getattr(kael, op)(k, dim, out=out) is out
    check(out, getattr(torch, op)(t, dim=()))


# prod is left out: torch 2.13's prod takes one int dim, not ().
NO_DIM_OPS = [op for op in VALUE_OPS if op not in ("any", "all", "prod")]


@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("op", NO_DIM_OPS)
def test_other_reductions_take_no_dims_as_every_dim(op, keepdim):
    if op == "count_nonzero" and keepdim:
        pytest.skip("count_nonzero has no keepdim")
    k, t = twins(torch.float64, "stepped", seed=6)
    check(call(kael, op, k, (), keepdim), call(torch, op, t, (), keepdim))
    # logsumexp too, with keepdim (torch 2.13's keepdim=False form fails on its own output).
    check(kael.logsumexp(k, (), keepdim=True), torch.logsumexp(t, (), keepdim=True))


@pytest.mark.parametrize("dim", [np.int64(1), np.int32(-1), (np.int64(0), np.int16(1))], ids=repr)
@pytest.mark.parametrize(
    "op", ["sum", "mean", "var", "amax", "amin", "any", "all", "argmax", "max", "count_nonzero"]
)
def test_numpy_integer_dims_are_ints(op, dim):
    if op in ("argmax", "max") and isinstance(dim, tuple):
        pytest.skip("one dim only")
    k, t = twins(torch.float32, "contiguous", seed=7)
    got, want = getattr(kael, op)(k, dim), getattr(torch, op)(t, dim)
    if op == "max":
        got, want = got.values, want.values
    check(got, want)
    check(kael.logsumexp(k, dim), torch.logsumexp(t, dim))


KEEPDIM_OPS = [
    "sum", "prod", "mean", "var", "std", "amax", "amin", "all", "any", "argmax", "argmin", "max",
    "min", "norm", "logsumexp",
]  # fmt: skip


@pytest.mark.parametrize("keepdim", ["yes", 1, None, np.bool_(True)], ids=repr)
@pytest.mark.parametrize("op", KEEPDIM_OPS)
def test_keepdim_must_be_a_bool_in_every_reduction(op, keepdim):
    k, t = twins(torch.float32, "contiguous")
    with pytest.raises(TypeError):
        getattr(torch, op)(t, 0, keepdim=keepdim)
    kind = "numpy.bool" if isinstance(keepdim, np.bool_) else type(keepdim).__name__
    with pytest.raises(kael.TypeError, match=rf"^{op}\(\): keepdim must be a bool, got {kind}$"):
        getattr(kael, op)(k, 0, keepdim=keepdim)


@pytest.mark.filterwarnings(r"ignore:var\(\)")
@pytest.mark.parametrize("value", [INT64_MIN, 2**64 - 1, 3, np.int64(2), 2.5])
@pytest.mark.parametrize("what", ["correction", "p"])
def test_scalar_arguments_an_int64_or_uint64_holds_match_torch(what, value):
    # var's correction and norm's p are PyTorch Scalars: any float, any int in
    # [-2**63, 2**64) (int64 or uint64).
    k, t = twins(torch.float64, "contiguous", seed=8)
    if what == "correction":
        check(kael.var(k, 0, correction=value), torch.var(t, 0, correction=value))
    elif abs(value) < 2**63:
        check(kael.norm(k, value, 0), torch.norm(t, value, 0))
    else:
        # |x|^p overflows for such p (torch answers inf, or 0 for p < 0): kael's scaled
        # retry gives the norm, about the largest (smallest) magnitude.
        check(kael.norm(k, value, 0), torch.from_numpy(exact_norm(t.numpy(), value, 0)))


@pytest.mark.parametrize("value", [INT64_MIN - 1, 2**64, 2**70, -(2**70)])
@pytest.mark.parametrize("what", ["correction", "p"])
def test_scalar_arguments_beyond_int64_and_uint64_are_value_errors(what, value):
    k, t = twins(torch.float64, "contiguous")
    call_kael = {"correction": lambda: kael.var(k, 0, correction=value), "p": lambda: k.norm(value)}
    call_torch = {"correction": lambda: t.var(0, correction=value), "p": lambda: t.norm(value)}
    with pytest.raises((OverflowError, ValueError)):
        call_torch[what]()
    op = "var" if what == "correction" else "norm"
    message = rf"^{op}\(\): {what} {value} is out of the range of int64 and uint64$"
    with pytest.raises(kael.ValueError, match=message):
        call_kael[what]()


def test_unknown_reduce_op_is_refused():
    with pytest.raises(kael.ValueError, match="unknown reduction 'median'"):
        reductions.reduce("median", [kael.ones(2)], (0,))


def test_a_custom_prologue_needs_a_template_key():
    with pytest.raises(kael.ValueError, match="needs a key naming it"):
        reductions.reduce("sum", [kael.ones(2)], (0,), prologue=lambda a: a)


# ---- methods ----------------------------------------------------------------------------------


def test_tensor_methods_reach_the_reductions():
    k, t = twins(torch.float32, "contiguous", seed=4)
    check(k.sum(1), t.sum(1))
    check(k.mean(), t.mean())
    check(k.max(0).indices, t.max(0).indices)
    check(k.argmin(1, keepdim=True), t.argmin(1, keepdim=True))
    check(k.norm(), t.norm())
    check(k.std(0), t.std(0))


# ---- large inputs: blocks, trees and schedules ------------------------------------------------


@pytest.mark.parametrize(
    "shape,dim",
    [
        ((40_000, 9), 0),
        ((3, 40_000), 1),
        ((40_000,), 0),
        ((20, 3000, 2), (0, 2)),
        ((2, 30_000, 3), 1),
    ],
)
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_long_reductions_match_torch(shape, dim, dtype):
    t = base_values(dtype, shape, seed=9)
    k = to_kael(t)
    check(kael.sum(k, dim), torch.sum(t, dim))
    check(kael.amax(k, dim), torch.amax(t, dim))
    check(kael.amin(k, dim, keepdim=True), torch.amin(t, dim, keepdim=True))
    check(
        kael.all(k, dim), torch.all(t, dim) if isinstance(dim, int) else t.all(dim[1]).all(dim[0])
    )
    check(
        kael.any(k, dim), torch.any(t, dim) if isinstance(dim, int) else t.any(dim[1]).any(dim[0])
    )
    if dtype.is_floating_point:
        check(kael.mean(k, dim), torch.mean(t, dim))
        check(kael.var(k, dim), torch.var(t, dim))
        check(kael.norm(k, 2, dim), torch.norm(t, 2, dim))
    if isinstance(dim, int) and dtype is not torch.bool:
        check(kael.argmax(k, dim), torch.argmax(t, dim))
        check(kael.max(k, dim).values, torch.max(t, dim).values)


def test_ten_million_tenths_sum_to_a_million_within_one():
    x = kael.full((10_000_000,), 0.1, dtype=kael.float32)
    assert abs(kael.sum(x).item() - 1e6) <= 1.0


def test_results_do_not_depend_on_the_thread_count():
    t = torch.randn(10_000_000, generator=torch.Generator().manual_seed(1))
    k = to_kael(t)
    threads = kael.get_num_threads()

    def results():
        return (
            kael.sum(k).item(),
            kael.sum(k.view(2, 5_000_000), 1).tolist(),
            kael.sum(k.view(625, 16_000), 0).numpy().tobytes(),
            kael.var(k).item(),
        )

    many = results()
    kael.set_num_threads(1)
    try:
        one = results()
    finally:
        kael.set_num_threads(threads)
    assert one == many
    assert abs(many[0] - t.double().sum().item()) < 1e-3


# ---- fusion: one launch per pass ---------------------------------------------------------------


@pytest.mark.parametrize(
    "fn,passes",
    [
        (lambda x: kael.sum(x, dtype=kael.float64), 1),
        (lambda x: kael.mean(x, 1), 1),
        (lambda x: kael.norm(x), 1),
        (lambda x: kael.norm(x, 3, 0), 1),
        (lambda x: kael.count_nonzero(x), 1),
        (lambda x: kael.var(x, 0), 2),
        (lambda x: kael.std(x), 2),
        (lambda x: kael.max(x, 1), 1),
        (lambda x: kael.argmax(x), 1),
    ],
    ids=["sum_dtype", "mean", "norm", "norm3", "count_nonzero", "var", "std", "max_dim", "argmax"],
)
def test_each_pass_is_one_launch(fn, passes):
    k, _ = twins(torch.float32, "transposed")
    _, launches = record_launches(fn, k)
    assert len(launches) == passes
    # a large input takes several blocks: still one launch per pass, plus one combining
    # the blocks where an output spans more than one
    big = kael.full((300, 200), 0.5, dtype=kael.float32)
    _, launches = record_launches(fn, big)
    finals = [launch for launch in launches if launch.symbol.endswith("_final")]
    assert len(launches) - len(finals) == passes and len(finals) <= passes


def test_internal_reduce_fuses_an_elementwise_prologue():
    t = base_values(torch.float64, (5, 7), seed=8)
    k = to_kael(t)
    (m,) = reductions.reduce("max", [k], (1,), True)
    check(m, torch.amax(t, 1, keepdim=True))

    def shifted_exp(a, mu):
        return g.Unary(a.dtype, (), "exp", g.Binary(a.dtype, (), "sub", a, mu))

    (s,), launches = record_launches(
        reductions.reduce, "sum", [k, m], (1,), True, prologue=shifted_exp, key=("sumexp",)
    )
    assert len(launches) == 1
    check(s, torch.exp(t - torch.amax(t, 1, keepdim=True)).sum(1, keepdim=True))


def test_out_aliasing_the_input_is_written_after_the_input_is_read():
    x = kael.tensor([[1.0, 2.0], [3.0, 4.0]])
    kael.sum(x, 1, out=x[:, 0])
    assert x.tolist() == [[3.0, 2.0], [7.0, 4.0]]


def test_argmax_over_an_outer_dim_keeps_the_first_tie_and_the_first_nan_per_column():
    t = torch.zeros(50_000, 16, dtype=torch.float64)
    t[[7, 20_000, 49_999], 3] = 5.0
    t[[40_000, 30], 4] = float("nan")
    t[16_384, 5] = -1.0
    k = to_kael(t)
    for op in ("argmax", "argmin"):
        got = getattr(kael, op)(k, 0)
        check(got, getattr(torch, op)(t, 0))
    assert kael.argmax(k, 0)[3].item() == 7 and kael.argmax(k, 0)[4].item() == 30
    assert kael.max(k, 0).indices[5].item() == 0 and kael.min(k, 0).indices[5].item() == 16_384


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64], ids=["f32", "i64"])
def test_argmax_of_permuted_views_reports_logical_indices_with_ties_and_nans(dtype):
    t = torch.randint(0, 5, (30, 40, 50)).to(dtype)
    if dtype.is_floating_point:
        t[3, 7, 11] = float("nan")
        t[20, 1, 2] = float("nan")
    k = to_kael(t)
    for view in (lambda x: x.permute(2, 0, 1), lambda x: x.transpose(0, 2), lambda x: x[:, ::3]):
        kv, tv = view(k), view(t)
        for op in ("argmax", "argmin"):
            check(getattr(kael, op)(kv), getattr(torch, op)(tv))
            for dim in (0, 1, 2):
                check(getattr(kael, op)(kv, dim), getattr(torch, op)(tv, dim))


@pytest.mark.parametrize("name", ["argmax", "argmin", "amax", "amin", "sum", "prod", "mean"])
@pytest.mark.parametrize("length", [1, 3, 5, 8, 15, 16, 17])
@pytest.mark.parametrize("rows", [1, 16, 37])
def test_short_rows_match_torch_with_ties_nans_and_zeros(name, length, rows):
    # rows shorter than a vector run one output per lane: first index on ties, the first
    # NaN wins, and every row gives the same bits as that row reduced on its own
    rng = np.random.default_rng(length * 7 + rows)
    x = rng.integers(-3, 3, (rows, length)).astype(np.float32)  # many ties
    if rows > 1 and length > 2:
        x[1, 1] = x[1, 2] = np.nan
    k, t = kael.tensor(x), torch.from_numpy(x)
    got, want = getattr(k, name)(1), getattr(t, name)(1)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6, equal_nan=True)
    for i in range(rows):
        one = getattr(k[i], name)(0)
        np.testing.assert_array_equal(one.numpy(), got.numpy()[i])
    # the same rows as a strided view and over two reduced dims
    wide = kael.tensor(np.repeat(x, 2, axis=0))[::2]
    np.testing.assert_array_equal(getattr(wide, name)(1).numpy(), got.numpy())
    if name not in ("argmax", "argmin"):
        pairs = k.reshape(rows, 1, length)
        np.testing.assert_array_equal(getattr(pairs, name)((1, 2)).numpy(), got.numpy())


def test_reductions_streaming_a_large_input_fetch_it_ahead_with_the_same_bits(monkeypatch):
    # from FETCH_FROM_BYTES of unit-stride input a ROWS reduction prefetches it; below, or
    # over columns, it does not; the prefetches never change a bit
    from kael.frontend import eager, fastpath
    from kael.ir.printer import format_reduction

    def fresh():
        fastpath._keyed.clear()
        eager._reduction_plans.clear()

    big = kael.randn(1024, 1024)  # exactly 4 MiB
    _, [launch] = record_launches(lambda: big.sum(1))
    assert f"prefetch in0: {eager.FETCH_AHEAD_BYTES // 4} elements ahead" in format_reduction(
        launch.kernel
    )
    fetched = [big.sum(1), big.amax(1), big.sum(), big.argmax(1)]
    _, [launch] = record_launches(lambda: big[:, :1000].sum(1))  # under 4 MiB: no prefetch
    assert "prefetch" not in format_reduction(launch.kernel)
    _, [launch] = record_launches(lambda: big.sum(0))  # columns, not rows: no prefetch
    assert "prefetch" not in format_reduction(launch.kernel)
    monkeypatch.setattr(eager, "FETCH_FROM_BYTES", 1 << 62)
    fresh()
    try:
        plain = [big.sum(1), big.amax(1), big.sum(), big.argmax(1)]
        _, [launch] = record_launches(lambda: big.sum(1))
        assert "prefetch" not in format_reduction(launch.kernel)
    finally:
        fresh()
    for a, b in zip(fetched, plain):
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_rows_shorter_than_the_lanes_run_a_variant_of_their_own():
    # the common kernel carries no short-row code (it compiles as fast as before); rows
    # shorter than the lanes launch the `short` variant, with the same bits as each row alone
    from kael.ir.printer import format_reduction

    short, wide = kael.randn(100, 5), kael.randn(100, 40)
    _, [launch] = record_launches(lambda: short.sum(-1))
    assert " short" in format_reduction(launch.kernel).splitlines()[0]
    _, [launch] = record_launches(lambda: wide.sum(-1))
    assert " short" not in format_reduction(launch.kernel).splitlines()[0]
    got = short.sum(-1)
    for i in (0, 17, 99):
        assert got[i].item() == short[i].sum().item()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_arg_rows_shorter_than_four_vectors_run_one_output_per_lane(dtype):
    # an index of the extreme is the same in any order: arg ops' rows shorter than
    # ARG_SHORT_LANES vectors take the short variant (no lanes to set up and fold); other
    # reductions' only rows shorter than one vector (a sum's bits follow its order)
    from kael.frontend import eager
    from kael.ir.printer import format_reduction

    limit = eager.ARG_SHORT_LANES * 64 // np.dtype(dtype).itemsize
    rng = np.random.default_rng(limit)
    for n, short in ((limit - 1, True), (limit, False)):
        x = rng.integers(-2, 2, (37, n)).astype(dtype)  # many ties
        x[3, 5] = x[3, n - 1] = np.nan
        k, t = kael.tensor(x), torch.from_numpy(x)
        for op in ("argmax", "argmin"):
            _, [launch] = record_launches(lambda op=op, k=k: getattr(k, op)(-1))
            assert (" short" in format_reduction(launch.kernel).splitlines()[0]) is short
            check(getattr(k, op)(-1), getattr(t, op)(-1))
        check(k.max(-1).indices, t.max(-1).indices)
        _, [launch] = record_launches(lambda k=k: k.sum(-1))
        assert " short" not in format_reduction(launch.kernel).splitlines()[0]


def _with_nans(shape, dtype=np.float32):
    values = np.random.default_rng(19).standard_normal(shape).astype(dtype)
    values.flat[::4] = np.nan
    if len(shape) == 2:
        values[-1] = np.nan  # a row of NaN only
    return values


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=str)
@pytest.mark.parametrize(
    "kwargs", [{}, {"dim": 1}, {"dim": 0, "keepdim": True}, {"dim": (0, 1)}], ids=str
)
def test_nansum_and_nanmean_skip_nan_as_torch(kwargs, dtype):
    values = _with_nans((5, 6), dtype)
    k, t = kael.tensor(values), torch.from_numpy(values)
    for name in ("nansum", "nanmean"):
        for kx, tx in ((k, t), (k.transpose(0, 1), t.T)):
            got, want = getattr(kael, name)(kx, **kwargs), getattr(torch, name)(tx, **kwargs)
            assert got.shape == tuple(want.shape) and got.dtype is kael.tensor(want.numpy()).dtype
            np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6, equal_nan=True)


def test_nansum_of_integers_is_sum_and_nanmean_refuses_them():
    x = kael.arange(6).reshape(2, 3)
    assert kael.nansum(x, 1).tolist() == [3, 12]
    with pytest.raises(kael.TypeError, match="floating point"):
        kael.nanmean(x)
    assert kael.nansum(kael.empty(0)).item() == 0.0


@pytest.mark.parametrize("kwargs", [{}, {"dim": 1}, {"dim": 0, "keepdim": True}], ids=str)
def test_aminmax_matches_torch(kwargs):
    values = np.random.default_rng(23).standard_normal((4, 7)).astype(np.float32)
    k, t = kael.tensor(values), torch.from_numpy(values)
    got, want = kael.aminmax(k, **kwargs), torch.aminmax(t, **kwargs)
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert got.min.shape == tuple(want.min.shape) and k.aminmax(**kwargs).max.shape == got.max.shape


@pytest.mark.parametrize("name", ["std_mean", "var_mean"])
@pytest.mark.parametrize(
    "kwargs", [{}, {"dim": 1}, {"dim": 0, "correction": 0, "keepdim": True}], ids=str
)
def test_spread_with_mean_matches_torch(name, kwargs):
    values = np.random.default_rng(29).standard_normal((5, 8))
    k, t = kael.tensor(values), torch.from_numpy(values)
    for a, b in zip(getattr(kael, name)(k, **kwargs), getattr(torch, name)(t, **kwargs)):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-12)


REDUCTION_FORMS = {  # torch's call forms the reduction audit found refused
    "norm dtype=": lambda L: L.norm(L.tensor([[3.0, 4.0]]), dim=1, dtype=L.float64),
    "Tensor.norm dtype=": lambda L: L.tensor([[3.0, 4.0]]).norm(dim=1, dtype=L.float64),
    "norm nuc": lambda L: L.norm(L.tensor([[3.0, 4.0], [1.0, 2.0]]), "nuc"),
    "norm nuc dims": lambda L: L.norm(L.tensor([[3.0, 4.0], [1.0, 2.0]]).expand(2, 2, 2), "nuc", dim=(1, 2)),
    "var_mean unbiased": lambda L: L.var_mean(L.tensor([[1.0, 2, 4], [3, 5, 9]]), False),
    "std_mean unbiased": lambda L: L.std_mean(L.tensor([[1.0, 2, 4], [3, 5, 9]]), True),
    "all complex": lambda L: L.all(L.tensor([1 + 2j, 3j])),
    "any complex dim": lambda L: L.any(L.tensor([[0j, 1j], [0j, 0j]]), dim=1),
    "Tensor.all complex": lambda L: L.tensor([1 + 2j, 0j]).all(),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(REDUCTION_FORMS))
def test_reduction_call_forms_torch_takes(name):
    got, want = REDUCTION_FORMS[name](kael), REDUCTION_FORMS[name](torch)
    pairs = list(zip(got, want)) if isinstance(want, tuple) else [(got, want)]
    for k, t in pairs:
        assert str(k.dtype) == str(t.dtype).removeprefix("torch.") and k.shape == tuple(t.shape)
        np.testing.assert_allclose(np.array(k.tolist()), np.array(t.tolist()), rtol=1e-6)


@pytest.mark.parametrize("name", ["all", "any"])
def test_a_repeated_complex_reduction_reads_its_input_each_call(name):
    """The fast door remembered a complex call's one launch, which read the tensor made
    from the input (x != 0), and replayed it on the complex input itself."""
    fn = getattr(kael, name)
    for values in ([1 + 2j, 3j], [1 + 2j, 0j], [0j, 0j], [1 + 2j, 3j]):
        assert fn(kael.tensor(values)).item() == getattr(torch, name)(torch.tensor(values)).item()


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_norm_through_its_fast_door_still_rescales_an_overflowing_sum(dtype):
    small = np.random.default_rng(8).standard_normal((3, 4))
    huge = np.full((3, 4), 1e200 if dtype == "float64" else 1e30)
    for p in (2, 3):
        for values in (small, small, huge, small):  # remembered first, then the huge rows
            got = kael.tensor(values, dtype=getattr(kael, dtype)).norm(p, dim=-1)
            scale = np.abs(values).max()  # the exact norm, which NumPy's overflows for huge
            want = scale * np.linalg.norm(values / scale, ord=p, axis=-1)
            np.testing.assert_allclose(got.numpy(), want.astype(got.numpy().dtype), rtol=1e-6)


@pytest.mark.parametrize("op", ["norm", "var", "std"])
def test_a_reduction_into_its_own_input_reads_it_before_resizing_it(op):
    values = np.random.default_rng(14).standard_normal((3, 4))
    x = kael.tensor(values)
    want = getattr(torch.tensor(values), op)(dim=-1)
    with pytest.warns(UserWarning, match="resized"):
        got = getattr(kael, op)(x, dim=-1, out=x)
    assert got is x and x.shape == (3,)
    np.testing.assert_allclose(x.numpy(), want.numpy(), rtol=1e-12)
