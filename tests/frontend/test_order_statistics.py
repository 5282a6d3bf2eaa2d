"""median, nanmedian, quantile, nanquantile, masked_select and argwhere
(frontend/order_statistics.py) against PyTorch: values, indices, dtype and shape, NaN
rules, every interpolation, layouts; typed errors."""

import math

import numpy as np
import pytest
import torch
from parity_helpers import close_to_torch
from parity_helpers import torch_pair as pair

import kael
from kael.frontend import index_ops

RNG = np.random.default_rng(47)


def _data(dtype=kael.float32, nans: bool = True):
    values = RNG.standard_normal((6, 9))
    if nans:
        values[1, 3] = values[2, [0, 7]] = np.nan
        values[5] = np.nan
    return pair(values, dtype)


@pytest.mark.parametrize("name", ["median", "nanmedian"])
@pytest.mark.parametrize("dtype", [kael.float32, kael.float64], ids=str)
def test_medians_match_torch(name, dtype):
    k, t = _data(dtype)
    fn, ref = getattr(kael, name), getattr(torch, name)
    close_to_torch(fn(k), ref(t), 0, equal_nan=True)
    for dim, keepdim in ((1, False), (0, True), (-1, True)):
        got, want = fn(k, dim, keepdim), ref(t, dim, keepdim)
        close_to_torch(got.values, want.values, 0, equal_nan=True)
        rows = ~torch.isnan(t).all(
            dim=dim, keepdim=keepdim
        )  # an all-NaN slice's index is torch's choice
        assert torch.equal(torch.from_numpy(got.indices.numpy())[rows], want.indices[rows])
    got = fn(k.transpose(0, 1), 1)
    close_to_torch(got.values, ref(t.T, 1).values, 0, equal_nan=True)


def test_median_of_integers_and_a_single_value():
    k, t = pair(RNG.integers(-9, 9, (4, 6)), kael.int64)
    close_to_torch(kael.median(k, 1).values, torch.median(t, 1).values, 0)
    assert kael.median(kael.tensor(3.5)).item() == 3.5
    with pytest.raises(kael.IndexError, match="non-zero size"):
        kael.median(kael.empty(0), 0)


@pytest.mark.parametrize("interpolation", ["linear", "lower", "higher", "midpoint", "nearest"])
@pytest.mark.parametrize("q", [0.0, 0.25, 0.5, 0.9, 1.0])
def test_quantiles_match_torch(interpolation, q):
    k, t = _data()
    kc, tc = _data(nans=False)
    args = {"interpolation": interpolation}
    for dim, keepdim in ((None, False), (1, False), (0, True)):
        close_to_torch(
            kael.quantile(kc, q, dim, keepdim, **args),
            torch.quantile(tc, q, dim, keepdim, **args),
            1e-6,
        )
        close_to_torch(
            kael.quantile(k, q, dim, keepdim, **args),
            torch.quantile(t, q, dim, keepdim, **args),
            1e-6,
            equal_nan=True,
        )
        close_to_torch(
            kael.nanquantile(k, q, dim, keepdim, **args),
            torch.nanquantile(t, q, dim, keepdim, **args),
            1e-6,
            equal_nan=True,
        )


def test_quantile_of_a_tensor_of_qs_stacks_them_first():
    kc, tc = _data(nans=False)
    kq, tq = pair([0.1, 0.5, 0.95])
    close_to_torch(kael.quantile(kc, kq, 1), torch.quantile(tc, tq, 1), 1e-6)
    close_to_torch(kc.quantile(kq), tc.quantile(tq), 1e-6)


@pytest.mark.parametrize("name", ["quantile", "nanquantile"])
@pytest.mark.parametrize("dim, keepdim", [(0, True), (1, True), (0, False), (None, False)])
def test_stacked_quantiles_are_laid_out_as_torch_with_q_innermost(name, dim, keepdim):
    kc, tc = _data(nans=False)
    kq, tq = pair([0.1, 0.5, 0.95])
    got = getattr(kael, name)(kc, kq, dim, keepdim)
    want = getattr(torch, name)(tc, tq, dim, keepdim)
    close_to_torch(got, want, 1e-6)
    assert got.stride() == want.stride()


@pytest.mark.parametrize(
    "call, error, message",
    [
        (lambda: kael.quantile(kael.ones(3), 1.5), kael.ValueError, "range"),
        (
            lambda: kael.quantile(kael.ones(3), 0.5, interpolation="cubic"),
            kael.ValueError,
            "interpolation",
        ),
        (
            lambda: kael.quantile(kael.ones(3, dtype=kael.int64), 0.5),
            kael.TypeError,
            "float or double",
        ),
        (lambda: kael.quantile(kael.ones(3), kael.ones(2, 2) / 2), kael.ValueError, "1D"),
        (lambda: kael.masked_select(kael.ones(3), kael.ones(3)), kael.TypeError, "BoolTensor"),
    ],
)
def test_bad_inputs_raise_typed_errors(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_masked_select_broadcasts_and_argwhere_is_nonzero():
    k, t = _data(nans=False)
    km, tm = pair(RNG.standard_normal(9) > 0, kael.bool)
    close_to_torch(kael.masked_select(k, km), torch.masked_select(t, tm), 0)
    close_to_torch(k.masked_select(km), t.masked_select(tm), 0)
    close_to_torch(kael.argwhere(k > 0.5), torch.argwhere(t > 0.5), 0)


@pytest.mark.parametrize("right", [False, True])
@pytest.mark.parametrize("dtype", [kael.float32, kael.float64, kael.int64, kael.int32], ids=str)
def test_searchsorted_and_bucketize_match_torch(right, dtype):
    if dtype.is_floating_point:
        seq = np.concatenate([np.sort(RNG.standard_normal(40)), [np.nan]])
        seq[5] = seq[6] = seq[7]  # repeated boundaries
        values = np.concatenate([RNG.standard_normal(30) * 2, [np.nan, np.inf, -np.inf, seq[6]]])
    else:
        seq, values = np.sort(RNG.integers(-20, 20, 41)), RNG.integers(-25, 25, 34)
    ks, ts = pair(seq, dtype)
    kv, tv = pair(values.reshape(2, 17), dtype)
    close_to_torch(
        kael.searchsorted(ks, kv, right=right), torch.searchsorted(ts, tv, right=right), 0
    )
    close_to_torch(kael.bucketize(kv, ks, right=right), torch.bucketize(tv, ts, right=right), 0)
    side = "right" if right else "left"
    got = kael.searchsorted(ks, kv[0], side=side, out_int32=True)
    close_to_torch(got, torch.searchsorted(ts, tv[0], side=side, out_int32=True), 0)


def test_searchsorted_by_rows_with_a_sorter_and_a_scalar():
    rows = np.sort(RNG.standard_normal((3, 8)), axis=1)
    kr, tr = pair(rows)
    kv, tv = pair(RNG.standard_normal((3, 5)))
    close_to_torch(kael.searchsorted(kr, kv), torch.searchsorted(tr, tv), 0)
    shuffled = RNG.standard_normal(9)
    order = np.argsort(shuffled)
    ks, ts = pair(shuffled)
    ko, to = pair(order, kael.int64)
    close_to_torch(
        kael.searchsorted(ks, kv[0], sorter=ko), torch.searchsorted(ts, tv[0], sorter=to), 0
    )
    close_to_torch(kael.searchsorted(kr[0], 0.25), torch.searchsorted(tr[0], 0.25), 0)
    with pytest.raises(kael.ValueError, match="first N-1 dimensions"):
        kael.searchsorted(kr, kv[:2])
    with pytest.raises(kael.ValueError, match="1 dimension"):
        kael.bucketize(kv, kr)


@pytest.mark.parametrize("name", ["median", "nanmedian", "mode"])
def test_a_zero_d_input_keeps_no_dim_with_keepdim(name):
    fn, ref = getattr(kael, name), getattr(torch, name)
    for dim in (0, -1):
        close_to_torch(fn(kael.tensor(2.0), dim, True), ref(torch.tensor(2.0), dim, True), 0)


@pytest.mark.parametrize("name", ["quantile", "nanquantile"])
@pytest.mark.parametrize("q", [0.5, [0.25, 0.5]], ids=["scalar", "two"])
def test_quantiles_of_a_zero_d_input_keep_no_dim_with_keepdim(name, q):
    kq, tq = (q, q) if isinstance(q, float) else pair(q)
    got = getattr(kael, name)(kael.tensor(2.0), kq, 0, True)
    close_to_torch(got, getattr(torch, name)(torch.tensor(2.0), tq, 0, True), 0)


@pytest.mark.parametrize("name", ["median", "nanmedian"])
def test_medians_of_bfloat16_match_torch(name):
    k, t = _data(kael.bfloat16)
    fn, ref = getattr(kael, name), getattr(torch, name)
    close_to_torch(fn(k), ref(t), 0, equal_nan=True)
    got, want = fn(k, 1), ref(t, 1)
    close_to_torch(got.values, want.values, 0, equal_nan=True)
    rows = ~torch.isnan(t).all(1)  # an all-NaN slice's index is torch's choice
    assert torch.equal(torch.from_numpy(got.indices.numpy())[rows], want.indices[rows])


@pytest.mark.parametrize("dtype", [kael.float16, kael.bfloat16], ids=str)
def test_quantile_refuses_half_types_as_torch(dtype):
    with pytest.raises(kael.TypeError, match="either float or double"):
        kael.quantile(kael.ones(3, dtype=dtype), 0.5)


@pytest.mark.parametrize(
    "call",
    [
        lambda lib: lib.median(lib.zeros(0)),
        lambda lib: lib.nanmedian(lib.zeros(0, 2)),
        lambda lib: lib.median(lib.zeros(2, 0), 0),
        lambda lib: lib.median(lib.zeros(0, 3), 1, True),
        lambda lib: lib.nanmedian(lib.zeros(0, 3), 1),
        lambda lib: lib.quantile(lib.tensor(1.0), lib.tensor([])),
        lambda lib: lib.nanquantile(lib.zeros(3, 2), lib.tensor([]), 1, True),
    ],
)
def test_order_statistics_of_empty_inputs_match_torch(call):
    close_to_torch(call(kael), call(torch), 0, equal_nan=True)


@pytest.mark.parametrize("name", ["quantile", "nanquantile"])
@pytest.mark.parametrize("shape, dim", [((0,), None), ((4, 0), 0), ((0, 3), 1)], ids=str)
def test_quantiles_refuse_an_empty_input(name, shape, dim):
    with pytest.raises(RuntimeError, match="input tensor must be non-empty"):
        getattr(torch, name)(torch.zeros(shape), 0.5, dim)
    with pytest.raises(kael.ValueError, match=f"{name}\\(\\) input tensor must be non-empty"):
        getattr(kael, name)(kael.zeros(shape), 0.5, dim)


QUANTILE_Q_FORMS = {
    "0-d": lambda lib, dtype: lib.tensor(0.25, dtype=dtype),
    "1-d": lambda lib, dtype: lib.tensor([0.1, 0.5, 0.9], dtype=dtype),
    "strided": lambda lib, dtype: lib.tensor([0.1, 0.0, 0.5, 0.0, 1.0], dtype=dtype)[::2],
    "empty": lambda lib, dtype: lib.tensor([], dtype=dtype),
}
TORCH_OF_KAEL = {
    kael.float16: torch.float16,
    kael.bfloat16: torch.bfloat16,
    kael.float32: torch.float32,
    kael.float64: torch.float64,
    kael.int64: torch.int64,
}


@pytest.mark.parametrize("name", ["quantile", "nanquantile"])
@pytest.mark.parametrize("form", list(QUANTILE_Q_FORMS))
@pytest.mark.parametrize(
    "dtype, q_dtype",
    [(kael.float32, kael.float64), (kael.float64, kael.float32), (kael.float32, kael.float16)]
    + [(kael.float64, kael.bfloat16), (kael.float32, kael.int64)],
    ids=str,
)
def test_quantile_q_tensor_of_another_dtype_is_refused(name, form, dtype, q_dtype):
    k, t = _data(dtype, nans=False)
    make = QUANTILE_Q_FORMS[form]
    with pytest.raises(RuntimeError, match="q tensor must be same dtype as the input tensor"):
        getattr(torch, name)(t, make(torch, TORCH_OF_KAEL[q_dtype]), 1)
    message = (
        f"{name}\\(\\) q tensor must be same dtype as the input tensor \\(q is {q_dtype},"
        f" input is {dtype}\\)"
    )
    with pytest.raises(kael.TypeError, match=message):
        getattr(kael, name)(k, make(kael, q_dtype), 1)


@pytest.mark.parametrize("name", ["quantile", "nanquantile"])
@pytest.mark.parametrize("form", list(QUANTILE_Q_FORMS))
@pytest.mark.parametrize("dtype", [kael.float32, kael.float64], ids=str)
def test_quantile_q_tensor_of_the_input_dtype_is_taken(name, form, dtype):
    k, t = _data(dtype)
    make = QUANTILE_Q_FORMS[form]
    for view in (lambda x: x, lambda x: x.transpose(0, 1), lambda x: x[1:, ::2]):
        got = getattr(kael, name)(view(k), make(kael, dtype), 0, True)
        want = getattr(torch, name)(view(t), make(torch, TORCH_OF_KAEL[dtype]), 0, True)
        close_to_torch(got, want, 1e-6, equal_nan=True)


@pytest.mark.parametrize(
    "call, error, message",
    [  # torch's order: the first failing check names the error
        (lambda lib: lib.quantile(lib.ones(3), 1.5, interpolation="cubic"), kael.ValueError,
         "q must be in the range \\[0, 1\\] but got 1.5"),
        (lambda lib: lib.quantile(lib.zeros(0, dtype=lib.int64), 0.5, interpolation="cubic"),
         kael.ValueError, "interpolation must be one of"),
        (lambda lib: lib.quantile(lib.zeros(0, dtype=lib.int64), 0.5), kael.ValueError,
         "input tensor must be non-empty"),
        (lambda lib: lib.nanquantile(lib.zeros(0), lib.tensor([0.5], dtype=lib.float64)),
         kael.ValueError, "input tensor must be non-empty"),
        (lambda lib: lib.quantile(lib.ones(3, dtype=lib.int64), lib.ones(2, 2)), kael.ValueError,
         "q must be a scalar or 1D tensor"),
        (lambda lib: lib.quantile(lib.ones(3, dtype=lib.int64), lib.ones(2, dtype=lib.int64)),
         kael.TypeError, "input tensor must be either float or double dtype"),
        (lambda lib: lib.quantile(lib.ones(3), lib.tensor([1.5], dtype=lib.float64)),
         kael.TypeError, "q tensor must be same dtype"),
        (lambda lib: lib.quantile(lib.ones(3), lib.tensor([1.5])), kael.ValueError,
         "q values must be in the range"),
    ],
)  # fmt: skip
def test_quantile_checks_fail_in_torch_order(call, error, message):
    with pytest.raises(RuntimeError, match=message):
        call(torch)
    with pytest.raises(error, match=message):
        call(kael)


@pytest.mark.parametrize(
    ("seq", "values"),
    [([False, True], [True]), ([1.0, 2.0], [1 + 1j])],
    ids=["bool", "complex"],
)
def test_searchsorted_refuses_values_of_no_order_as_torch(seq, values):
    with pytest.raises(NotImplementedError, match="not implemented"):
        torch.searchsorted(torch.tensor(seq), torch.tensor(values))
    with pytest.raises(kael.NotImplementedError, match="not implemented for (bool|complex64)"):
        kael.searchsorted(kael.tensor(seq), kael.tensor(values))


def test_searchsorted_promotes_bool_values_beside_int_boundaries_as_torch():
    for lib in (torch, kael):
        assert lib.searchsorted(lib.tensor([1, 2]), lib.tensor([True])).tolist() == [0]
        assert lib.bucketize(lib.tensor([1]), lib.tensor([False, True])).tolist() == [1]


@pytest.mark.parametrize("bad", [3, -1, 1_000_000])
def test_searchsorted_refuses_a_sorter_index_out_of_range(bad):
    seq = [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
    order = [[0, 1, bad], [0, 1, 2]]
    with pytest.raises(RuntimeError, match="sorter index out of range"):
        torch.searchsorted(torch.tensor(seq), torch.tensor(seq), sorter=torch.tensor(order))
    with pytest.raises(kael.IndexError, match="sorter index out of range"):
        kael.searchsorted(kael.tensor(seq), kael.tensor(seq), sorter=kael.tensor(order))


@pytest.mark.parametrize("dtype", [kael.float32, kael.float64, kael.int64], ids=str)
@pytest.mark.parametrize("dim, keepdim", [(1, False), (0, True), (-1, True)])
def test_mode_matches_torch_with_ties(dtype, dim, keepdim):
    """The smallest of the most frequent values, at its last occurrence. (With NaN in a
    slice PyTorch's CPU kernel miscounts the runs; kael counts each NaN as its own value.)"""
    k, t = pair(RNG.integers(-3, 4, (6, 9)), dtype)
    for kx, tx in ((k, t), (k.transpose(0, 1), t.T)):
        close_to_torch(kael.mode(kx, dim, keepdim), torch.mode(tx, dim, keepdim), 0)
    close_to_torch(k.mode(), t.mode(), 0)
    close_to_torch(kael.mode(k[0, 0]), torch.mode(t[0, 0]), 0)  # 0-d


def test_mode_of_tied_zeros_gives_the_value_at_its_index():
    # -0 and +0 are one value: its run's last element gives both the value and the index
    for row in ([-0.0, 0.0, 1.0, 1.0, 2.0], [0.0, -0.0, 1.0, 3.0, 2.0]):
        got, want = kael.mode(kael.tensor(row)), torch.mode(torch.tensor(row))
        assert int(got.indices) == int(want.indices)
        assert math.copysign(1, float(got.values)) == math.copysign(1, float(want.values))
        assert math.copysign(1, row[int(got.indices)]) == math.copysign(1, float(got.values))


# ---- kthvalue and msort ---------------------------------------------------------------------

KTH_DTYPES = [kael.float32, kael.float64, kael.int64, kael.float16]
KTH_LAYOUTS = ["contiguous", "transposed", "sliced"]


def _distinct(shape, dtype, layout, nans=False):
    """A kael tensor and the equal torch one, distinct values (so every k-th element has
    one index) with NaN in some rows for float dtypes, laid out as `layout` says."""
    base = (shape[1], shape[0]) if layout == "transposed" else (shape[0], 2 * shape[1])
    values = RNG.permutation(int(np.prod(base))).reshape(base).astype(np.float64) - 7
    if nans and dtype.is_floating_point:
        values[0, 1] = values[-1, 0] = np.nan
    k, t = pair(values, dtype)
    if layout == "transposed":
        return k.mT, t.mT
    if layout == "sliced":
        return k[:, ::2], t[:, ::2]
    return k, t


@pytest.mark.parametrize("layout", KTH_LAYOUTS)
@pytest.mark.parametrize("dtype", KTH_DTYPES, ids=str)
@pytest.mark.parametrize("dim, keepdim", [(-1, False), (0, True), (1, True), (-2, False)])
def test_kthvalue_matches_torch_with_nan_largest(dim, keepdim, dtype, layout):
    k, t = _distinct((5, 6), dtype, layout, nans=True)
    for kk in (1, 3, k.shape[dim]):
        got = kael.kthvalue(k, kk, dim, keepdim)
        close_to_torch(got, torch.kthvalue(t, kk, dim, keepdim), 0, equal_nan=True)
        close_to_torch(
            k.kthvalue(kk, dim=dim, keepdim=keepdim),
            t.kthvalue(kk, dim, keepdim),
            0,
            equal_nan=True,
        )
        assert got.values.shape == got.indices.shape


@pytest.mark.parametrize("dtype", KTH_DTYPES, ids=str)
def test_kthvalue_with_ties_picks_an_index_of_the_value(dtype):
    k, t = pair(RNG.integers(-2, 3, (4, 9)), dtype)
    for kk in (1, 5, 9):
        values, indices = kael.kthvalue(k, kk)
        close_to_torch(values, torch.kthvalue(t, kk).values, 0)
        close_to_torch(
            k.gather(1, indices.unsqueeze(1)).squeeze(1), torch.kthvalue(t, kk).values, 0
        )


@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("dim", [0, -1])
def test_kthvalue_of_0d_and_empty_inputs_matches_torch(dim, keepdim):
    k, t = pair(3.5, kael.float64)
    close_to_torch(kael.kthvalue(k, 1, dim, keepdim), torch.kthvalue(t, 1, dim, keepdim), 0)
    k, t = pair(np.zeros((0, 3)), kael.float32)
    close_to_torch(kael.kthvalue(k, 1, 1, keepdim), torch.kthvalue(t, 1, 1, keepdim), 0)


@pytest.mark.parametrize("layout", KTH_LAYOUTS)
@pytest.mark.parametrize("dtype", [*KTH_DTYPES, kael.bool], ids=str)
def test_msort_sorts_along_dim_0_like_torch(dtype, layout):
    if dtype is kael.bool:
        k, t = pair(RNG.integers(0, 2, (5, 4)), dtype)
    else:
        k, t = _distinct((5, 4), dtype, layout, nans=True)
    close_to_torch(kael.msort(k), torch.msort(t), 0, equal_nan=True)
    close_to_torch(k.msort(), t.msort(), 0, equal_nan=True)


@pytest.mark.parametrize("shape", [(), (0, 2), (3,)], ids=str)
def test_msort_of_0d_empty_and_1d_matches_torch(shape):
    k, t = pair(RNG.standard_normal(shape), kael.float64)
    close_to_torch(kael.msort(k), torch.msort(t), 0)


@pytest.mark.parametrize(
    "call, error, message",
    [
        (lambda: kael.kthvalue(kael.ones(2, 4), 5), kael.ValueError, "k out of range for dimension 1: k=5 but the dimension has size 4"),
        (lambda: kael.kthvalue(kael.ones(2, 4), 0), kael.ValueError, "k out of range for dimension 1: k=0"),
        (lambda: kael.kthvalue(kael.ones(2, 4), -1, 0), kael.ValueError, "k out of range for dimension 0: k=-1 but the dimension has size 2"),
        (lambda: kael.kthvalue(kael.tensor(3.0), 2), kael.ValueError, "dimension 0: k=2 but the dimension has size 1"),
        (lambda: kael.kthvalue(kael.ones(0, 3), 1, 0), kael.IndexError, "Expected reduction dim 0 to have non-zero size"),
        (lambda: kael.kthvalue(kael.ones(2, dtype=kael.bool), 1), kael.TypeError, "kthvalue.*bool"),
        (lambda: kael.kthvalue(kael.ones(2), 1.0), kael.TypeError, "k must be an int, got float"),
        (lambda: kael.kthvalue(kael.ones(2), 1, 3), kael.IndexError, r"range of \[-1, 0\], but got 3"),
        (lambda: kael.kthvalue(kael.ones(2), 1, 0, 1), kael.TypeError, "keepdim must be a bool, got int"),
        (lambda: kael.msort([3, 1]), kael.TypeError, "msort\\(\\): input must be a Tensor, got list"),
    ],
)  # fmt: skip
def test_kthvalue_and_msort_refuse_what_torch_refuses(call, error, message):
    with pytest.raises(error, match=message):
        call()


# ---- isin ------------------------------------------------------------------------------------

ISIN_CASES = [
    ("int64-int64", [[1, 2, 3], [4, 2, 0]], kael.int64, [2, 5, 0, 2], kael.int64),
    ("int64-float", [1, 2, 3], kael.int64, [2.0, 5.5], kael.float32),  # compared as float32
    ("float-int64", [1.5, 2.0, 3.0], kael.float32, [2, 5], kael.int64),
    ("float64-float32", [0.1, 0.5], kael.float64, [0.1, 0.5], kael.float32),  # 0.1 differs
    ("float16", [0.1, 2.0, -1.0], kael.float16, [2.0, 0.1], kael.float16),
    ("float16-bfloat16", [0.1, 2.0], kael.float16, [0.1, 2.0], kael.bfloat16),  # in float32
    ("uint8-int8", [255, 1], kael.uint8, [-1, 1], kael.int8),  # in int16: 255 is not -1
    ("nan-inf", [np.nan, np.inf, -0.0, 2.0], kael.float32, [np.nan, np.inf, 0.0], kael.float32),
    ("0d-elements", 2.0, kael.float32, [[2.0]], kael.float32),
    ("empty-test", [1.0, 2.0], kael.float32, [], kael.float32),
    ("empty-elements", np.zeros((0, 3)), kael.float64, [1.0], kael.float64),
]


@pytest.mark.parametrize("invert", [False, True])
@pytest.mark.parametrize(
    "values, dtype, tests, test_dtype", [c[1:] for c in ISIN_CASES], ids=[c[0] for c in ISIN_CASES]
)
def test_isin_matches_torch_in_the_promoted_dtype(values, dtype, tests, test_dtype, invert):
    ke, te = pair(values, dtype)
    kt, tt = pair(tests, test_dtype)
    got = kael.isin(ke, kt, invert=invert)
    close_to_torch(got, torch.isin(te, tt, invert=invert), 0)
    kr, tr = (x.permute(tuple(reversed(range(x.ndim)))) for x in (ke, te))  # a layout
    close_to_torch(kael.isin(kr, kt, assume_unique=False), torch.isin(tr, tt), 0)


@pytest.mark.parametrize(
    "elements, tests",
    [("t", 2), ("t", 2.5), ("t", 3.0000001), (2, "t"), (2.0, "t"), ("h", 0.1)],
    ids=["int", "float", "float-rounds-to-3", "int-elements", "float-elements", "half-scalar"],
)
def test_isin_takes_a_number_on_either_side_as_torch(elements, tests):
    ints, halfs = pair([[1, 2, 3], [3, 0, 2]], kael.int64), pair([0.1, 2.0], kael.float16)
    k = [ints[0] if v == "t" else halfs[0] if v == "h" else v for v in (elements, tests)]
    t = [ints[1] if v == "t" else halfs[1] if v == "h" else v for v in (elements, tests)]
    close_to_torch(kael.isin(*k), torch.isin(*t), 0)
    close_to_torch(kael.isin(*k, invert=True), torch.isin(*t, invert=True), 0)


def test_isin_of_strided_and_sliced_inputs_matches_torch():
    ke, te = pair(RNG.integers(0, 20, (6, 8)), kael.int64)
    kt, tt = pair(RNG.integers(0, 20, (5, 4)), kael.int64)
    close_to_torch(kael.isin(ke[:, ::3], kt.T[1:]), torch.isin(te[:, ::3], tt.T[1:]), 0)


@pytest.mark.parametrize(
    "call, error, message",
    [
        (lambda: kael.isin(kael.tensor([True]), kael.tensor([True])), kael.TypeError, "Unsupported input type encountered for isin\\(\\): bool"),
        (lambda: kael.isin(kael.tensor([1]), kael.tensor([True])), kael.TypeError, "bool"),
        (lambda: kael.isin(kael.tensor([1]), True), kael.TypeError, r"bool \(True\)"),
        (lambda: kael.isin(2, 3), kael.TypeError, "to be a Tensor, got int and int"),
        (lambda: kael.isin(kael.tensor([1.0]), [1.0]), kael.TypeError, r"got list \(\[1.0\]\)"),
        (lambda: kael.isin(kael.tensor([1]), kael.tensor([1]), invert=1), kael.TypeError, "invert must be a bool"),
    ],
    ids=["bool-elements", "bool-tests", "bool-scalar", "two-numbers", "list", "invert-int"],
)  # fmt: skip
def test_isin_refuses_what_torch_refuses(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_isin_is_a_function_not_a_method_as_in_torch():
    assert not hasattr(torch.Tensor, "isin") and not hasattr(kael.Tensor, "isin")
    assert kael.isin(kael.tensor([1, 2]), kael.tensor([2])).tolist() == [False, True]


@pytest.mark.parametrize(
    "elements, tests",
    [
        ([1.0, 2.0, 5.0], [math.nan, 1.0, 2.0, 3.0, 4.0, 5.0, math.nan]),
        ([math.nan, 1.0], [math.nan, 1.0]),
        ([math.inf, 5.0], [math.inf, math.nan]),
        ([1.0], [math.nan]),
    ],
)
def test_isin_ignores_nan_test_values_as_torch(elements, tests):
    # NaN matches nothing; sorted last, it must not hide the numbers from the search
    got = kael.isin(kael.tensor(elements), kael.tensor(tests))
    assert got.tolist() == torch.isin(torch.tensor(elements), torch.tensor(tests)).tolist()


def _long_rows(dtype, ties: bool):
    """Rows long enough for radix selection (index_ops.selects), with NaN in two of them."""
    values = RNG.integers(-40, 40, (4, 3000)) / 4 if ties else RNG.standard_normal((4, 3000))
    values[1, ::7] = values[2, 5] = np.nan
    assert index_ops.selects(dtype, 3000)
    return pair(values, dtype)


@pytest.mark.parametrize("ties", [False, True], ids=["distinct", "ties"])
@pytest.mark.parametrize("name", ["median", "nanmedian"])
@pytest.mark.parametrize("dtype", [kael.float32, kael.float64], ids=str)
def test_medians_of_long_rows_match_torch_and_index_their_value(dtype, name, ties):
    k, t = _long_rows(dtype, ties)
    got, want = getattr(kael, name)(k, 1), getattr(torch, name)(t, 1)
    close_to_torch(got.values, want.values, 0, equal_nan=True)
    picked = k.gather(1, got.indices.unsqueeze(1)).squeeze(1)
    close_to_torch(picked, want.values, 0, equal_nan=True)
    if not ties:  # distinct values: torch's index is the only one
        rows = ~torch.isnan(want.values)
        assert torch.equal(torch.from_numpy(got.indices.numpy())[rows], want.indices[rows])
    close_to_torch(getattr(kael, name)(k), getattr(torch, name)(t), 0, equal_nan=True)


@pytest.mark.parametrize("interpolation", ["linear", "lower", "higher", "midpoint", "nearest"])
@pytest.mark.parametrize("name", ["quantile", "nanquantile"])
def test_quantiles_of_long_rows_match_torch(name, interpolation):
    k, t = _long_rows(kael.float64, True)
    q = [0.0, 0.3, 0.5, 1.0]  # SELECT_RANKS or fewer per q: each q selects its two ranks
    for qs in (0.3, kael.tensor(q, dtype=kael.float64)):
        tq = qs if isinstance(qs, float) else torch.tensor(q, dtype=torch.float64)
        got = getattr(kael, name)(k, qs, 1, interpolation=interpolation)
        close_to_torch(got, getattr(torch, name)(t, tq, 1, interpolation=interpolation), 0,
                       equal_nan=True)  # fmt: skip


@pytest.mark.parametrize("kk", [1, 1500, 3000])
@pytest.mark.parametrize("dtype", [kael.float32, kael.int64, kael.int16], ids=str)
def test_kthvalue_of_long_rows_with_ties_matches_torch(dtype, kk):
    k, t = pair(RNG.integers(-30, 30, (3, 3000)), dtype)
    values, indices = kael.kthvalue(k, kk, 1)
    want = torch.kthvalue(t, kk, 1).values
    close_to_torch(values, want, 0)
    close_to_torch(k.gather(1, indices.unsqueeze(1)).squeeze(1), want, 0)
    order = torch.sort(t, dim=1, stable=True).indices[:, kk - 1]  # the stable sort's choice
    assert indices.tolist() == order.tolist()


@pytest.mark.parametrize("name", ["quantile", "nanquantile"])
def test_quantile_refuses_a_slice_longer_than_2_to_the_24_as_torch(name):
    fn = getattr(kael, name)
    assert fn(kael.zeros(2**24), 0.5).item() == getattr(torch, name)(torch.zeros(2**24), 0.5)
    assert fn(kael.zeros(3, 2**23), 0.5, dim=1).shape == (3,)  # a long tensor, short slices
    with pytest.raises(kael.ValueError, match=rf"^{name}\(\) input tensor is too large$"):
        fn(kael.zeros(2**24 + 1), 0.5)
    with pytest.raises(RuntimeError, match="too large"):
        getattr(torch, name)(torch.zeros(2**24 + 1), 0.5)


def test_rank_positions_clamp_a_rank_outside_the_row():
    row = kael.arange(64.0).reshape(1, 64)  # long enough for radix selection
    ranks = [[-5], [0], [63], [64], [1000]]
    got = [index_ops.rank_positions(row, kael.tensor([r])).item() for r in ranks]
    assert got == [0, 0, 63, 63, 63]


@pytest.mark.parametrize(
    ("seq", "value", "kwargs"),
    [
        ([0.1, 0.2], 0.1, {"dtype": torch.float64}),
        ([0.1, 0.2], 0.1, {"dtype": torch.float16}),
        ([0.1, 0.2], "0-d float32 0.1", {"dtype": torch.float16}),
        ([0.1, 0.2], "0-d float64 0.1", {"dtype": torch.float32, "right": True}),
        ([-5, 5], -1000, {"dtype": torch.int8}),
    ],
    ids=str,
)
def test_searchsorted_compares_a_number_or_0d_value_in_torchs_result_dtype(seq, value, kwargs):
    dtype = kwargs.pop("dtype")
    t_seq = torch.tensor(seq, dtype=dtype)
    if isinstance(value, str):
        value = torch.tensor(0.1, dtype=torch.float32 if "float32" in value else torch.float64)
    expected = torch.searchsorted(t_seq, value, **kwargs)
    k_value = kael.tensor(value.numpy()) if torch.is_tensor(value) else value
    got = kael.searchsorted(kael.tensor(t_seq.numpy()), k_value, **kwargs)
    assert got.item() == expected.item()


def test_searchsorted_and_bucketize_write_into_out_as_torch():
    seq, values = kael.tensor([1.0, 2.0, 3.0]), kael.tensor([2.5, 0.0])
    out = kael.empty(0, dtype=kael.int64)
    assert kael.searchsorted(seq, values, out=out) is out and out.tolist() == [2, 0]
    out32 = kael.empty(2, dtype=kael.int32)
    assert kael.bucketize(values, seq, out=out32, out_int32=True).tolist() == [2, 0]
    with pytest.raises(kael.TypeError, match="dtype int64, but got int32"):
        kael.bucketize(values, seq, out=out32)


@pytest.mark.parametrize("name", ["quantile", "nanquantile"])
def test_quantiles_write_into_out_as_torch(name):
    data = [[1.0, float("nan"), 2.0], [3.0, 4.0, 5.0]]
    q = [0.25, 0.5]
    expected = getattr(torch, name)(torch.tensor(data), torch.tensor(q), dim=1)
    out = kael.empty(0)
    got = getattr(kael, name)(kael.tensor(data), kael.tensor(q), dim=1, out=out)
    assert got is out
    np.testing.assert_array_equal(out.numpy(), expected.numpy())
