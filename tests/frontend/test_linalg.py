"""matmul, mm, bmm, dot, outer and `@` against PyTorch: chapter 05's shape table, layouts,
edge sizes around the micro-tile and cache blocks, dtypes, promotion, errors and out=.

Float operands hold small integers, so every product and partial sum is exact in any
summation order and results must equal PyTorch's bit for bit; random-normal cases use
a tolerance. Where the book and PyTorch differ (the book promotes mixed dtypes in mm,
bmm and dot; PyTorch refuses them), the test pins the book's rule and says so.
"""

import numpy as np
import pytest
import torch
from kernel_helpers import KAEL_DTYPES, TORCH_DTYPES
from parity_helpers import resized_out

import kael

DTYPES = [torch.float32, torch.float64, torch.int64]
DTYPE_IDS = ["f32", "f64", "i64"]
RNG = np.random.default_rng(1234)


def small_ints(shape, dtype: torch.dtype, seed: int = 0) -> np.ndarray:
    """Integers in [-4, 4] in the NumPy twin of `dtype`: exact products in any order."""
    rng = np.random.default_rng(seed)
    return rng.integers(-4, 5, size=shape).astype(torch.empty(0, dtype=dtype).numpy().dtype)


def pair(arr: np.ndarray, view=lambda x: x) -> tuple[kael.Tensor, torch.Tensor]:
    """The same view of one array in kael and in PyTorch."""
    return view(kael.tensor(arr)), view(torch.from_numpy(arr.copy()))


def check_equal(got: kael.Tensor, want: torch.Tensor) -> None:
    assert got.dtype is KAEL_DTYPES[want.dtype]
    assert got.shape == tuple(want.shape)
    np.testing.assert_array_equal(np.asarray(got), want.numpy())


def check_close(got: kael.Tensor, want: torch.Tensor, rtol: float, atol: float) -> None:
    assert got.dtype is KAEL_DTYPES[want.dtype]
    assert got.shape == tuple(want.shape)
    np.testing.assert_allclose(np.asarray(got), want.numpy(), rtol=rtol, atol=atol)


# ---- shapes ----------------------------------------------------------------------------------

SHAPE_TABLE = [
    ((4,), (4,), ()),
    ((2, 3), (3, 4), (2, 4)),
    ((3,), (3, 2), (2,)),
    ((2, 3), (3,), (2,)),
    ((5, 2, 3), (5, 3, 2), (5, 2, 2)),
    ((2, 1, 3, 4), (5, 4, 2), (2, 5, 3, 2)),
    ((3,), (5, 3, 2), (5, 2)),
    ((5, 2, 3), (3,), (5, 2)),
    ((2, 0), (0, 3), (2, 3)),
    ((0, 2, 3), (3, 2), (0, 2, 2)),
]


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("sa,sb,result", SHAPE_TABLE, ids=[str(r[:2]) for r in SHAPE_TABLE])
def test_matmul_follows_every_row_of_the_shape_table(sa, sb, result, dtype):
    ka, ta = pair(small_ints(sa, dtype, 1))
    kb, tb = pair(small_ints(sb, dtype, 2))
    got = kael.matmul(ka, kb)
    assert got.shape == result
    check_equal(got, torch.matmul(ta, tb))


def test_empty_inner_dim_gives_zeros_not_garbage():
    for dtype in DTYPES:
        ka, ta = pair(small_ints((2, 0), dtype))
        kb, tb = pair(small_ints((0, 3), dtype))
        got = ka @ kb
        check_equal(got, ta @ tb)
        assert np.all(np.asarray(got) == 0)


@pytest.mark.parametrize(
    "sa,sb", [((2, 3), (3, 0)), ((0, 3), (3, 4)), ((3, 0, 2), (2, 5)), ((0,), (0,))]
)
def test_empty_outer_dims_give_empty_results(sa, sb):
    ka, ta = pair(small_ints(sa, torch.float32))
    kb, tb = pair(small_ints(sb, torch.float32))
    check_equal(ka @ kb, ta @ tb)


def test_batch_dims_broadcast_both_ways():
    ka, ta = pair(small_ints((3, 1, 4, 5), torch.float32))
    kb, tb = pair(small_ints((1, 2, 5, 6), torch.float32, 3))
    check_equal(ka @ kb, ta @ tb)


# ---- layouts ---------------------------------------------------------------------------------

LAYOUTS = {
    "contiguous": (lambda x: x, (7, 9)),
    "transposed": (lambda x: x.transpose(0, 1), (9, 7)),
    "sliced": (lambda x: x[::2, 1::3], (14, 27)),
    "batch_transposed": (lambda x: x.transpose(-2, -1), (3, 9, 7)),
}


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("left", list(LAYOUTS))
@pytest.mark.parametrize("right", ["contiguous", "transposed", "sliced"])
def test_matmul_reads_any_operand_layout(left, right, dtype):
    view_a, shape_a = LAYOUTS[left]
    ka, ta = pair(small_ints(shape_a, dtype, 4), view_a)
    view_b, _ = LAYOUTS[right]
    shape_b = {"contiguous": (9, 11), "transposed": (11, 9), "sliced": (18, 31)}[right]
    kb, tb = pair(small_ints(shape_b, dtype, 5), view_b)
    if right == "sliced":
        kb, tb = kb[:, :11], tb[:, :11]
    check_equal(ka @ kb, ta @ tb)


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_stride_zero_batch_operands_match_torch(dtype):
    ka, ta = pair(small_ints((1, 6, 8), dtype), lambda x: x.expand(4, 6, 8))
    kb, tb = pair(small_ints((4, 8, 5), dtype, 6))
    assert ka.stride(0) == 0
    check_equal(ka @ kb, ta @ tb)
    kc, tc = pair(small_ints((8, 70), dtype, 7), lambda x: x.expand(3, 8, 70))
    check_equal(ka[:3] @ kc, ta[:3] @ tc)


def test_shared_right_operand_folds_the_batch_into_rows():
    ka, ta = pair(small_ints((6, 50, 40), torch.float32))
    kb, tb = pair(small_ints((40, 300), torch.float32, 2))
    check_equal(ka @ kb, ta @ tb)
    check_equal(ka[::2] @ kb, ta[::2] @ tb)  # batches not adjacent: no folding


def test_zero_dim_and_one_dim_operands_of_every_layout():
    ka, ta = pair(small_ints((10,), torch.float64), lambda x: x[::2])
    kb, tb = pair(small_ints((5, 3), torch.float64, 3), lambda x: x.transpose(0, 1))
    check_equal(kb @ ka, tb @ ta)
    check_equal(ka @ ka, ta @ ta)


# ---- sizes around the micro-tile and cache blocks ----------------------------------------

EDGES = [1, 5, 6, 7, 17, 63, 65, 129]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("m", EDGES)
def test_edge_sizes_around_the_micro_tile(m, dtype):
    for n in (1, 8, 17, 33, 63, 64, 65, 129):
        for k in (1, 5, 65):
            ka, ta = pair(small_ints((m, k), dtype, m))
            kb, tb = pair(small_ints((k, n), dtype, n))
            check_equal(ka @ kb, ta @ tb)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["f32", "f64"])
@pytest.mark.parametrize(
    "m,k,n",
    [(241, 40, 70), (13, 257, 90), (9, 513, 33), (7, 30, 1025), (5, 20, 2049), (250, 300, 600)],
)
def test_sizes_around_the_cache_blocks(m, k, n, dtype):
    ka, ta = pair(small_ints((m, k), dtype, 8))
    kb, tb = pair(small_ints((k, n), dtype, 9))
    check_equal(ka @ kb, ta @ tb)
    kbt, tbt = pair(small_ints((n, k), dtype, 10), lambda x: x.transpose(0, 1))
    check_equal(ka @ kbt, ta @ tbt)  # strided B: packed through its strides


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["f32", "f64"])
def test_random_normal_products_are_close(dtype):
    np_dtype = torch.empty(0, dtype=dtype).numpy().dtype
    a = RNG.standard_normal((300, 700)).astype(np_dtype)
    b = RNG.standard_normal((700, 1100)).astype(np_dtype)
    want = torch.from_numpy(a.astype(np.float64)) @ torch.from_numpy(b.astype(np.float64))
    got = kael.tensor(a) @ kael.tensor(b)
    tol = 2e-4 if dtype is torch.float32 else 1e-11
    check_close(got, want.to(dtype), rtol=tol, atol=tol * 30)


def test_float_results_do_not_depend_on_the_thread_count():
    a = kael.tensor(RNG.standard_normal((500, 600)).astype(np.float32))
    b = kael.tensor(RNG.standard_normal((600, 700)).astype(np.float32))
    threads = kael.get_num_threads()
    try:
        kael.set_num_threads(1)
        one = np.asarray(a @ b).copy()
        kael.set_num_threads(2)
        two = np.asarray(a @ b)
    finally:
        kael.set_num_threads(threads)
    np.testing.assert_array_equal(one, two)


def test_nan_and_inf_propagate_like_torch():
    a = np.array([[np.inf, 1.0], [np.nan, 2.0], [1.0, 1.0]], np.float32)
    b = np.array([[0.0, 1.0], [1.0, -np.inf]], np.float32)
    ka, ta = pair(a)
    kb, tb = pair(b)
    got, want = ka @ kb, ta @ tb
    np.testing.assert_array_equal(np.isnan(np.asarray(got)), torch.isnan(want).numpy())
    np.testing.assert_array_equal(np.asarray(got), want.numpy())


# ---- dtypes ----------------------------------------------------------------------------------

PROMOTIONS = [
    (torch.float32, torch.float64),
    (torch.int64, torch.float32),
    (torch.float64, torch.int64),
]


@pytest.mark.parametrize("da,db", PROMOTIONS, ids=["f32-f64", "i64-f32", "f64-i64"])
def test_mixed_dtypes_promote(da, db):
    ka, ta = pair(small_ints((4, 5), da))
    kb, tb = pair(small_ints((5, 3), db, 1))
    got = ka @ kb
    promoted = torch.promote_types(da, db)
    assert got.dtype is KAEL_DTYPES[promoted]
    check_equal(got, ta.to(promoted) @ tb.to(promoted))


def test_mm_bmm_dot_promote_where_torch_refuses():
    # The book promotes in every matrix product; PyTorch raises for mm, bmm and dot.
    ka, ta = pair(small_ints((3,), torch.float32))
    kb, tb = pair(small_ints((3,), torch.float64, 1))
    check_equal(kael.dot(ka, kb), torch.dot(ta.double(), tb))
    km, tm = pair(small_ints((2, 3), torch.int64))
    check_equal(kael.mm(km, kb.unsqueeze(1)), torch.mm(tm.double(), tb.unsqueeze(1)))


def test_int64_products_are_exact_and_wrap_like_torch():
    big = np.array([[2**62, 3, -(2**63) + 5], [2**40, -(2**41), 7]], np.int64)
    other = np.array([[4, 1], [2**62, -3], [-1, 2**61]], np.int64)
    ka, ta = pair(big)
    kb, tb = pair(other)
    check_equal(ka @ kb, ta @ tb)
    exact = np.array([[9, 2**53 + 1]], np.int64)
    ke, te = pair(exact)
    check_equal(ke @ ke.T, te @ te.T)


@pytest.mark.parametrize("op", ["matmul", "mm", "bmm", "dot"])
def test_bool_operands_raise_a_type_error(op):
    shape = {"matmul": (2, 2), "mm": (2, 2), "bmm": (1, 2, 2), "dot": (2,)}[op]
    t = kael.ones(shape, dtype=kael.bool)
    with pytest.raises(kael.TypeError, match=f"{op} does not support dtype bool"):
        getattr(kael, op)(t, t)


def test_bool_with_float_promotes_to_float():
    ka, ta = pair(np.array([[True, False], [True, True]]))
    kb, tb = pair(small_ints((2, 2), torch.float32))
    check_equal(ka @ kb, ta.float() @ tb)


# ---- errors ----------------------------------------------------------------------------------


def test_zero_dim_operands_raise_naming_both_ranks():
    with pytest.raises(kael.ValueError, match="at least 1D, but they are 0D and 1D"):
        kael.matmul(kael.tensor(1.0), kael.ones(2))
    with pytest.raises(RuntimeError, match="2D and 0D"):
        kael.ones(2, 2) @ kael.tensor(1.0)


def test_mismatched_inner_dims_raise_naming_both_shapes():
    with pytest.raises(kael.ValueError, match=r"\[2, 3\] and \[4, 5\].*3 columns.*4 rows"):
        kael.ones(2, 3) @ kael.ones(4, 5)
    with pytest.raises(RuntimeError, match=r"\[3\] and \[4\]"):
        kael.ones(3) @ kael.ones(4)


def test_batch_dims_that_do_not_broadcast_raise_naming_both_shapes():
    with pytest.raises(kael.ValueError, match=r"\[2, 3, 4\] and \[5, 4, 2\]"):
        kael.ones(2, 3, 4) @ kael.ones(5, 4, 2)


def test_non_tensor_operands_raise_type_error():
    with pytest.raises(kael.TypeError, match=r"matmul\(\): other must be a Tensor, got list"):
        kael.matmul(kael.ones(2), [1.0, 2.0])
    with pytest.raises(kael.TypeError, match=r"mm\(\): input must be a Tensor, got int"):
        kael.mm(3, kael.ones(2, 2))


@pytest.mark.parametrize(
    "op,a,b,message",
    [
        ("mm", (3,), (3, 3), r"mm: input must be a 2-D tensor, but got a 1-D tensor of shape \[3\]"),
        ("mm", (2, 3), (1, 3, 3), r"mat2 must be a 2-D tensor, but got a 3-D tensor of shape \[1, 3, 3\]"),
        ("bmm", (2, 3), (2, 3, 3), r"bmm: input must be a 3-D tensor, but got a 2-D tensor"),
        ("bmm", (2, 2, 3), (3, 3), r"mat2 must be a 3-D tensor, but got a 2-D tensor of shape \[3, 3\]"),
        ("dot", (2, 3), (3,), r"dot: input must be a 1-D tensor, but got a 2-D tensor of shape \[2, 3\]"),
        ("dot", (3,), (), r"tensor must be a 1-D tensor, but got a 0-D tensor of shape \[\]"),
        ("outer", (2, 2), (3,), r"outer: input must be a 1-D tensor, but got a 2-D tensor"),
        ("outer", (2,), (3, 1), r"vec2 must be a 1-D tensor, but got a 2-D tensor of shape \[3, 1\]"),
    ],
)  # fmt: skip
def test_rank_checks_name_the_argument_and_shape(op, a, b, message):
    with pytest.raises(kael.ValueError, match=message):
        getattr(kael, op)(kael.ones(a), kael.ones(b))


def test_ranks_that_pass_the_checks_compute():
    ka, ta = pair(small_ints((2, 3), torch.float32))
    kb, tb = pair(small_ints((3, 4), torch.float32, 1))
    check_equal(kael.mm(ka, kb), torch.mm(ta, tb))
    kx, tx = pair(small_ints((3, 2, 3), torch.float32))
    ky, ty = pair(small_ints((3, 3, 4), torch.float32, 1))
    check_equal(kael.bmm(kx, ky), torch.bmm(tx, ty))
    kv, tv = pair(small_ints((5,), torch.int64))
    check_equal(kael.dot(kv, kv), torch.dot(tv, tv))


def test_bmm_batch_sizes_must_be_equal():
    with pytest.raises(kael.ValueError, match=r"\[2, 2, 3\] and \[3, 3, 3\] \(2 vs 3\)"):
        kael.bmm(kael.ones(2, 2, 3), kael.ones(3, 3, 3))
    with pytest.raises(kael.ValueError, match=r"cannot be multiplied"):
        kael.bmm(kael.ones(2, 2, 3), kael.ones(2, 4, 3))


def test_bmm_does_not_broadcast_a_batch_of_one():
    with pytest.raises(kael.ValueError, match=r"\(1 vs 3\)"):
        kael.bmm(kael.ones(1, 2, 3), kael.ones(3, 3, 3))


def test_dot_lengths_must_be_equal():
    with pytest.raises(kael.ValueError, match=r"\[2\] and \[3\]"):
        kael.dot(kael.ones(2), kael.ones(3))


def test_dot_of_empty_vectors_is_zero():
    check_equal(kael.dot(kael.ones(0), kael.ones(0)), torch.dot(torch.ones(0), torch.ones(0)))


# ---- outer -----------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [*DTYPES, torch.bool], ids=[*DTYPE_IDS, "bool"])
def test_outer_is_a_broadcasting_multiply(dtype):
    ka, ta = pair(
        small_ints((4,), dtype) if dtype is not torch.bool else np.array([1, 0, 1, 1], bool)
    )
    kb, tb = pair(
        small_ints((10,), dtype, 1) if dtype is not torch.bool else np.ones(5, bool),
        lambda x: x[::2],
    )
    check_equal(kael.outer(ka, kb), torch.outer(ta, tb))
    check_equal(ka.outer(kb), ta.outer(tb))


def test_outer_of_mixed_dtypes_and_empty_vectors():
    ka, ta = pair(small_ints((3,), torch.int64))
    kb, tb = pair(small_ints((0,), torch.float64))
    check_equal(kael.outer(ka, kb), torch.outer(ta, tb))
    kc, tc = pair(small_ints((2,), torch.float32))
    check_equal(kael.outer(ka, kc), torch.outer(ta, tc))


# ---- operators, methods and out= ---------------------------------------------------------


def test_matmul_operator_method_and_reflected_operator():
    ka, ta = pair(small_ints((3, 4), torch.float32))
    kb, tb = pair(small_ints((4, 2), torch.float32, 1))
    check_equal(ka @ kb, ta @ tb)
    check_equal(ka.matmul(kb), ta.matmul(tb))
    check_equal(kb.__rmatmul__(ka), tb.__rmatmul__(ta))
    check_equal(ka.mm(kb), ta.mm(tb))


def test_out_receives_the_result_and_is_returned():
    ka, ta = pair(small_ints((5, 4), torch.float64))
    kb, tb = pair(small_ints((4, 3), torch.float64, 1))
    out = kael.empty((5, 3), dtype=kael.float64)
    got = kael.matmul(ka, kb, out=out)
    assert got.is_same(out)
    check_equal(out, ta @ tb)


def test_out_of_any_layout_is_written_in_place():
    ka, ta = pair(small_ints((2, 5, 4), torch.float32))
    kb, tb = pair(small_ints((4, 6), torch.float32, 1))
    base = kael.zeros((2, 6, 5))
    out = base.transpose(1, 2)
    kael.matmul(ka, kb, out=out)
    check_equal(out, ta @ tb)
    strided = kael.zeros((2, 5, 12))[:, :, ::2]
    kael.matmul(ka, kb, out=strided)
    check_equal(strided, ta @ tb)


def test_out_may_alias_an_operand():
    ka, ta = pair(small_ints((4, 4), torch.int64))
    want = ta @ ta
    kael.matmul(ka, ka, out=ka)
    check_equal(ka, want)


def test_out_may_share_bytes_with_an_operand_through_another_storage():
    # two tensors from_numpy'd over one array: distinct storages, the same memory
    arr = np.random.default_rng(1).standard_normal((600, 64)).astype(np.float32)
    w = torch.from_numpy(np.random.default_rng(2).standard_normal((64, 64)).astype(np.float32))
    want = torch.from_numpy(arr[:500].copy()) @ w
    x, out = kael.from_numpy(arr[:500]), kael.from_numpy(arr[100:600])
    kael.matmul(x, kael.from_numpy(w.numpy()), out=out)
    check_equal(out, want)


def test_out_with_one_d_results_and_out_for_mm_bmm_dot():
    kv, tv = pair(small_ints((4,), torch.float32))
    km, tm = pair(small_ints((3, 4), torch.float32, 1))
    out = kael.empty(3)
    kael.matmul(km, kv, out=out)
    check_equal(out, tm @ tv)
    out0 = kael.empty(())
    kael.dot(kv, kv, out=out0)
    check_equal(out0, torch.dot(tv, tv))
    outm = kael.empty((3, 3))
    kael.mm(km, km.T, out=outm)
    check_equal(outm, tm @ tm.T)
    outb = kael.empty((1, 3, 3))
    kael.bmm(km.unsqueeze(0), km.T.unsqueeze(0), out=outb)
    check_equal(outb, (tm @ tm.T).unsqueeze(0))


def test_out_of_another_shape_is_resized_and_of_another_dtype_raises():
    a = kael.ones(2, 3)
    got = resized_out(lambda o: kael.matmul(a, a.T, out=o), kael.empty(3), (2, 2))
    assert got.tolist() == [[3.0, 3.0], [3.0, 3.0]]
    with pytest.raises(
        kael.TypeError, match="out has dtype float64 but the result has dtype float32"
    ):
        kael.matmul(a, a.T, out=kael.empty((2, 2), dtype=kael.float64))
    with pytest.raises(kael.Error, match="more than one element"):
        kael.matmul(a, a.T, out=kael.empty(1, 2).expand(2, 2))


def test_out_for_an_empty_inner_dim_is_zero_filled():
    out = kael.full((2, 3), 7.0)
    kael.matmul(kael.ones(2, 0), kael.ones(0, 3), out=out)
    assert out.tolist() == [[0.0] * 3] * 2


def test_dtypes_map_both_ways():
    assert all(KAEL_DTYPES[TORCH_DTYPES[d]] is d for d in TORCH_DTYPES)


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_vectors_against_large_matrices(dtype):
    kv, tv = pair(small_ints((700,), dtype, 1))
    km, tm = pair(small_ints((700, 300), dtype, 2))
    check_equal(kv @ km, tv @ tm)  # one row: B read in place
    check_equal(km.T @ kv, tm.T @ tv)  # one column
    kw, tw = pair(small_ints((7, 700), dtype, 3))
    check_equal(kw @ km, tw @ tm)  # just over one row panel: B packed


def test_stepped_out_for_a_one_d_result():
    km, tm = pair(small_ints((3, 4), torch.float64))
    kv, tv = pair(small_ints((4,), torch.float64, 1))
    base = kael.zeros(6, dtype=kael.float64)
    kael.matmul(km, kv, out=base[::2])
    check_equal(base[::2], tm @ tv)
    assert base[1::2].tolist() == [0.0, 0.0, 0.0]


def test_ex_results_have_torchs_field_names():
    spd = kael.eye(3, dtype=kael.float64) * 2
    assert kael.linalg.inv_ex(spd).inverse.shape == (3, 3)
    assert kael.linalg.cholesky_ex(spd).L.shape == (3, 3)
    assert kael.linalg.solve_ex(spd, kael.ones(3, dtype=kael.float64)).result.shape == (3,)
    for ex in (kael.linalg.inv_ex(spd), kael.linalg.cholesky_ex(spd)):
        _, info = ex
        assert info.dtype is kael.int32 and info.item() == 0


# ---- a NumPy array right of `@` ----------------------------------------------------------------

MATMUL_ARRAY_CASES = {
    "f32 @ f64 vector": (torch.float32, (3,), np.ones(3)),
    "f32 @ i64 vector": (torch.float32, (3,), small_ints((3,), torch.int64)),
    "i32 @ i64 vector": (torch.int32, (3,), small_ints((3,), torch.int64)),
    "f32 @ f16 vector": (torch.float32, (3,), small_ints((3,), torch.float16)),
    "f32 matrix @ f32 matrix": (torch.float32, (2, 3), small_ints((3, 4), torch.float32)),
    "f64 batch @ f32 matrix": (torch.float64, (2, 2, 3), small_ints((3, 4), torch.float32)),
    "f32 @ transposed array": (torch.float32, (2, 3), small_ints((4, 3), torch.float64).T),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(MATMUL_ARRAY_CASES))
def test_matmul_operator_takes_an_ndarray_in_numpys_dtype_like_torch(case):
    """torch's `x @ array` is NumPy's matmul of the pair (x @ np.ones(3) is float64);
    kael refused the array ("matmul(): other must be a Tensor")."""
    dtype, shape, array = MATMUL_ARRAY_CASES[case]
    k, t = pair(small_ints(shape, dtype, seed=3))
    check_equal(k @ array, t @ array)


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda L, x: np.ones(3) @ x, kael.TypeError, "input must be a Tensor"),
        (lambda L, x: x.matmul(np.ones(3)), kael.TypeError, "other must be a Tensor"),
        (lambda L, x: L.matmul(x, np.ones(3)), kael.TypeError, "other must be a Tensor"),
        (lambda L, x: x @ np.array(2.0), kael.ValueError, "need to be at least 1D"),
        (lambda L, x: x @ np.ones(4), kael.ValueError, r"shapes \[3\] and \[4\]"),
    ],
    ids=["array @ tensor", "method", "function", "0-d array", "sizes"],
)
def test_matmul_ndarray_operands_torch_refuses_are_typed_errors(call, error, match):
    with pytest.raises((TypeError, ValueError)):
        call(torch, torch.ones(3))
    with pytest.raises(error, match=match):
        call(kael, kael.ones(3))
