"""linalg.multi_dot, matrix_power, cross and vecdot, and inner, ger, vdot, mv and
chain_matmul (frontend/products.py) against torch: values, dtype and shape, the chain
order, vectors at the ends, negative powers, broadcasting, layouts, and typed errors."""

import math
import warnings

import numpy as np
import pytest
import torch
from parity_helpers import LAYOUTS, close_to_torch, layout_pair, same, torch_pair

import kael
from kael.frontend import products

RNG = np.random.default_rng(22)


def test_chain_order_is_the_cheapest():
    # (10x100)(100x5)(5x50): (AB)C costs 5000 + 2500, A(BC) 25000 + 50000.
    assert products._chain_order([10, 100, 5, 50])[0][2] == 1
    assert products._chain_order([50, 5, 100, 10])[0][2] == 0


@pytest.mark.parametrize("dtype", [kael.float32, kael.float64, kael.int64], ids=str)
def test_multi_dot_matches_torch(dtype):
    shapes = [(6,), (6, 3), (3, 8), (8, 2), (2,)]
    pairs = [torch_pair(RNG.integers(-3, 4, s), dtype) for s in shapes]
    ks, ts = [k for k, _ in pairs], [t for _, t in pairs]
    close_to_torch(kael.linalg.multi_dot(ks), torch.linalg.multi_dot(ts), 1e-4)
    close_to_torch(kael.linalg.multi_dot(ks[1:4]), torch.linalg.multi_dot(ts[1:4]), 1e-4)
    close_to_torch(kael.linalg.multi_dot(ks[1:3]), torch.linalg.multi_dot(ts[1:3]), 1e-4)
    close_to_torch(
        kael.linalg.multi_dot([ks[1].mT, ks[0]]), torch.linalg.multi_dot([ts[1].mT, ts[0]]), 1e-4
    )


@pytest.mark.parametrize("n", [0, 1, 2, 5, -1, -3])
def test_matrix_power_matches_torch(n):
    a = RNG.standard_normal((2, 4, 4)) + 4 * np.eye(4)
    k, t = torch_pair(a, kael.float64)
    close_to_torch(kael.linalg.matrix_power(k, n), torch.linalg.matrix_power(t, n), 1e-10)
    close_to_torch(k.matrix_power(n), t.matrix_power(n), 1e-10)
    ki, ti = torch_pair(RNG.integers(-2, 3, (3, 3)), kael.int64)
    if n >= 0:
        close_to_torch(kael.linalg.matrix_power(ki, n), torch.linalg.matrix_power(ti, n), 0)


def test_matrix_power_one_is_a_copy():
    k = kael.eye(3)
    assert kael.linalg.matrix_power(k, 1).data_ptr() != k.data_ptr()


@pytest.mark.parametrize("dtype", [kael.float32, kael.int64], ids=str)
def test_cross_matches_torch(dtype):
    ka, ta = torch_pair(RNG.integers(-5, 6, (4, 3)), dtype)
    kb, tb = torch_pair(RNG.integers(-5, 6, (1, 3)), dtype)
    close_to_torch(kael.linalg.cross(ka, kb), torch.linalg.cross(ta, tb), 0)
    close_to_torch(
        kael.linalg.cross(ka.mT, kb.mT, dim=0), torch.linalg.cross(ta.mT, tb.mT, dim=0), 0
    )
    close_to_torch(kael.cross(ka, kb, dim=1), torch.cross(ta, tb, dim=1), 0)
    close_to_torch(ka.cross(kb, dim=-1), ta.cross(tb, dim=-1), 0)


def test_vecdot_matches_torch():
    kx, tx = torch_pair(RNG.standard_normal((3, 5)), kael.float64)
    ky, ty = torch_pair(RNG.standard_normal(5), kael.float64)
    close_to_torch(kael.linalg.vecdot(kx, ky), torch.linalg.vecdot(tx, ty), 1e-12)
    close_to_torch(kael.linalg.vecdot(kx, kx, dim=0), torch.linalg.vecdot(tx, tx, dim=0), 1e-12)


@pytest.mark.parametrize(
    "call, error, message",
    [
        (lambda: kael.linalg.multi_dot([kael.ones(2, 2)]), kael.ValueError, "at least 2 tensors but got 1"),
        (lambda: kael.linalg.multi_dot([kael.ones(2, 2, 2), kael.ones(2, 2)]), kael.ValueError, "first tensor must be 1D or 2D but got 3D"),
        (lambda: kael.linalg.multi_dot([kael.ones(2, 2), kael.ones(2), kael.ones(2, 2)]), kael.ValueError, "1th tensor must be 2D"),
        (lambda: kael.linalg.multi_dot([kael.ones(2, 2), kael.ones(2, 2, dtype=kael.float64)]), kael.TypeError, "tensor 0 is float32 and tensor 1 is float64"),
        (lambda: kael.linalg.multi_dot([kael.ones(2, 3), kael.ones(2, 2)]), kael.ValueError, r"shapes \[2, 3\] and \[2, 2\] cannot be multiplied"),
        (lambda: kael.linalg.matrix_power(kael.ones(2, 3), 2), kael.ValueError, "2 by 3 matrices"),
        (lambda: kael.linalg.matrix_power(kael.ones(3), 2), kael.ValueError, "at least 2 dimensions"),
        (lambda: kael.linalg.matrix_power(kael.ones(2, 2, dtype=kael.int64), -1), kael.TypeError, "int64"),
        (lambda: kael.linalg.matrix_power(kael.ones(2, 2), 1.5), kael.TypeError, "'n' must be an int, not float"),
        (lambda: kael.linalg.matrix_power(kael.zeros(2, 2), -1), kael.linalg.LinAlgError, "singular"),
        (lambda: kael.linalg.cross(kael.ones(2), kael.ones(2)), kael.ValueError, "must have length 3. Got 2 and 2"),
        (lambda: kael.linalg.cross(kael.ones(3), kael.ones(1, 3)), kael.ValueError, "same number of dimensions"),
        (lambda: kael.linalg.vecdot(kael.ones(3), kael.ones(3, dtype=kael.float64)), kael.TypeError, "x of type float32"),
    ],
)  # fmt: skip
def test_bad_inputs_raise_typed_errors(call, error, message):
    with pytest.raises(error, match=message):
        call()


# ---- inner, ger, vdot, mv, chain_matmul ----------------------------------------------------

PRODUCT_DTYPES = [kael.float32, kael.float64, kael.int64, kael.float16]


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", PRODUCT_DTYPES, ids=str)
@pytest.mark.parametrize(
    "a_shape, b_shape",
    [((2, 3), (4, 3)), ((3,), (3,)), ((2, 2, 3), (3,)), ((0, 3), (2, 3)), ((2, 0), (3, 0))],
)
def test_inner_contracts_the_last_dims_like_torch(a_shape, b_shape, dtype, layout):
    ka, ta = layout_pair(a_shape, dtype, layout)
    kb, tb = layout_pair(b_shape, dtype, layout)
    same(kael.inner(ka, kb), torch.inner(ta, tb))
    same(ka.inner(kb), ta.inner(tb))


@pytest.mark.parametrize("dtype", [kael.float32, kael.int64, kael.bool], ids=str)
def test_inner_with_a_0d_operand_multiplies(dtype):
    ka, ta = layout_pair((2, 3), dtype)
    ks, ts = layout_pair((), kael.float64)
    same(kael.inner(ka, ks), torch.inner(ta, ts))
    same(kael.inner(ks, ka), torch.inner(ts, ta))
    same(kael.inner(ks, ks), torch.inner(ts, ts))


def test_inner_writes_out():
    ka, ta = layout_pair((2, 3), kael.float64)
    out = kael.empty(2, 2, dtype=kael.float64)
    assert kael.inner(ka, ka, out=out) is out
    same(out, torch.inner(ta, ta))


@pytest.mark.parametrize("dtype", [kael.float32, kael.float64, kael.int64, kael.bool], ids=str)
@pytest.mark.parametrize("layout", ["contiguous", "sliced", "expanded"])
def test_ger_is_outer_like_torch(dtype, layout):
    ka, ta = layout_pair((4,), dtype, layout)
    kb, tb = layout_pair((3,), dtype, layout)
    same(kael.ger(ka, kb), torch.ger(ta, tb))
    same(ka.ger(kb), ta.ger(tb))
    same(kael.ger(ka, kb[:0]), torch.ger(ta, tb[:0]))


def test_ger_promotes_mixed_dtypes_as_torch():
    ka, ta = layout_pair((2,), kael.float32)
    kb, tb = layout_pair((3,), kael.int64)
    same(kael.ger(ka, kb), torch.ger(ta, tb))


@pytest.mark.parametrize("dtype", PRODUCT_DTYPES, ids=str)
@pytest.mark.parametrize("layout", ["contiguous", "sliced", "expanded"])
@pytest.mark.parametrize("n", [0, 1, 5])
def test_vdot_of_1d_tensors_like_torch(n, layout, dtype):
    ka, ta = layout_pair((n,), dtype, layout)
    kb, tb = layout_pair((n,), dtype, "contiguous")
    same(kael.vdot(ka, kb), torch.vdot(ta, tb))
    same(ka.vdot(kb), ta.vdot(tb))


@pytest.mark.parametrize("dtype", PRODUCT_DTYPES, ids=str)
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("shape", [(4, 3), (1, 1), (0, 3), (3, 0)])
def test_mv_is_matrix_times_vector_like_torch(shape, layout, dtype):
    ka, ta = layout_pair(shape, dtype, layout)
    kv, tv = layout_pair((shape[1],), dtype, "sliced")
    same(kael.mv(ka, kv), torch.mv(ta, tv))
    same(ka.mv(kv), ta.mv(tv))


@pytest.mark.parametrize("dtype", [kael.float32, kael.float64, kael.int64], ids=str)
def test_chain_matmul_is_multi_dot_of_matrices(dtype):
    shapes = [(3, 4), (4, 2), (2, 5)]
    pairs = [layout_pair(s, dtype, layout) for s, layout in zip(shapes, LAYOUTS)]
    ks, ts = [k for k, _ in pairs], [t for _, t in pairs]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = [torch.chain_matmul(*ts), torch.chain_matmul(*ts[:2]), torch.chain_matmul(ts[0])]
    with pytest.warns(UserWarning, match="deprecated"):
        same(kael.chain_matmul(*ks), expected[0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # torch warns once a process: so does kael
        same(kael.chain_matmul(*ks[:2]), expected[1])
        one = kael.chain_matmul(ks[0])
    same(one, expected[2])
    assert one.data_ptr() != ks[0].data_ptr()  # a copy, as torch's clone


def test_chain_matmul_is_a_function_only():
    assert not hasattr(kael.Tensor, "chain_matmul") and not hasattr(torch.Tensor, "chain_matmul")


F64 = kael.float64


@pytest.mark.parametrize(
    "call, error, message",
    [
        (lambda: kael.inner(kael.ones(2, 3), kael.ones(4, 2)), kael.ValueError, r"last dimension must match .* shapes \[2, 3\] and \[4, 2\]"),
        (lambda: kael.inner(kael.ones(2, 3), kael.ones(3, dtype=F64)), kael.TypeError, "same dtype, got float32 and float64"),
        (lambda: kael.inner(kael.ones(3, dtype=kael.bool), kael.ones(3, dtype=kael.bool)), kael.TypeError, "inner.*bool"),
        (lambda: kael.inner(kael.ones(3), [1.0, 2.0, 3.0]), kael.TypeError, "other must be a Tensor, got list"),
        (lambda: kael.ger(kael.ones(2, 2), kael.ones(3)), kael.ValueError, "1-D tensor, but got a 2-D"),
        (lambda: kael.vdot(kael.ones(2, 2), kael.ones(3)), kael.ValueError, "1D tensors expected, but got 2D and 1D"),
        (lambda: kael.vdot(kael.ones(()), kael.ones(3)), kael.ValueError, "got 0D and 1D"),
        (lambda: kael.vdot(kael.ones(2), kael.ones(3)), kael.ValueError, r"tensor \[2\] and src \[3\].*2 and 3 elements"),
        (lambda: kael.vdot(kael.ones(3), kael.ones(3, dtype=F64)), kael.TypeError, "found float32 and float64"),
        (lambda: kael.vdot(kael.ones(3, dtype=kael.bool), kael.ones(3, dtype=kael.bool)), kael.TypeError, "vdot.*bool"),
        (lambda: kael.mv(kael.ones(3), kael.ones(3)), kael.ValueError, "matrix @ vector expected, got 1, 1, 1"),
        (lambda: kael.mv(kael.ones(2, 3), kael.ones(3, 1)), kael.ValueError, "got 1, 2, 2"),
        (lambda: kael.mv(kael.ones(2, 3), kael.ones(4)), kael.ValueError, r"size mismatch, got input \(2\), mat \(2x3\), vec \(4\)"),
        (lambda: kael.mv(kael.ones(2, 3), kael.ones(3, dtype=F64)), kael.TypeError, "same dtype, but got float32 and float64"),
        (lambda: kael.mv(kael.ones(2, 3, dtype=kael.bool), kael.ones(3, dtype=kael.bool)), kael.TypeError, "mv.*bool"),
        (lambda: kael.chain_matmul(), kael.ValueError, "Expected one or more matrices"),
        (lambda: kael.chain_matmul(kael.ones(2, 3), kael.ones(3)), kael.ValueError, r"matrices\[1\] has dimension 1, expected 2"),
        (lambda: kael.chain_matmul(kael.ones(3), kael.ones(3, 4)), kael.ValueError, r"matrices\[0\] has dimension 1"),
        (lambda: kael.chain_matmul(kael.ones(2, 3), kael.ones(2, 4)), kael.ValueError, r"shapes \[2, 3\] and \[2, 4\] cannot be multiplied"),
        (lambda: kael.chain_matmul(kael.ones(2, 3), kael.ones(3, 4, dtype=F64)), kael.TypeError, "float32 and tensor 1 is float64"),
    ],
)  # fmt: skip
@pytest.mark.filterwarnings("ignore:torch.chain_matmul is deprecated")
def test_vector_products_refuse_what_torch_refuses(call, error, message):
    with pytest.raises(error, match=message):
        call()


# ---- matrix_exp ------------------------------------------------------------------------------

MEXP_TOL = {kael.float32: 2e-6, kael.float64: 1e-13}
MEXP_RNG = np.random.default_rng(5)


def _mexp_check(k, t, dtype):
    """kael's exp(A) against torch's, relative to each result's largest entry."""
    scale = max(1.0, float(t.abs().max())) if t.numel() else 1.0
    close_to_torch(k, t, MEXP_TOL[dtype] * scale)


@pytest.mark.parametrize("dtype", [kael.float32, kael.float64], ids=str)
@pytest.mark.parametrize("norm", [1e-9, 1e-5, 1e-3, 0.03, 0.2, 0.5, 1.0, 2.5, 8.0, 40.0])
def test_matrix_exp_matches_torch_for_each_degree_and_scaling(norm, dtype):
    # the 1-norm picks the Taylor degree (1, 2, 4, 8, 12, 18) and the squarings
    a = MEXP_RNG.standard_normal((3, 5, 5))
    a *= norm / np.abs(a).sum(-2).max(-1)[:, None, None]
    k, t = torch_pair(a, dtype)
    _mexp_check(kael.linalg.matrix_exp(k), torch.linalg.matrix_exp(t), dtype)


@pytest.mark.parametrize("dtype", [kael.float32, kael.float64], ids=str)
def test_matrix_exp_of_a_batch_of_mixed_norms_keeps_each_matrix_in_place(dtype):
    a = MEXP_RNG.standard_normal((2, 4, 6, 6))
    a *= np.array([[1e-6, 0.1, 30.0, 0.7], [1e-2, 5.0, 0.1, 1e-4]])[:, :, None, None]
    k, t = torch_pair(a, dtype)
    _mexp_check(kael.linalg.matrix_exp(k), torch.linalg.matrix_exp(t), dtype)
    _mexp_check(kael.matrix_exp(k), torch.matrix_exp(t), dtype)
    _mexp_check(k.matrix_exp(), t.matrix_exp(), dtype)


@pytest.mark.parametrize("layout", ["contiguous", "transposed", "sliced", "expanded"])
@pytest.mark.parametrize("dtype", [kael.float32, kael.float64], ids=str)
def test_matrix_exp_takes_every_layout(dtype, layout):
    k, t = layout_pair((3, 4, 4), dtype, layout, low=-2, high=3)
    _mexp_check(kael.linalg.matrix_exp(k), torch.linalg.matrix_exp(t), dtype)


@pytest.mark.parametrize("dtype", [kael.float32, kael.float64], ids=str)
def test_matrix_exp_of_nilpotent_diagonal_and_tiny_matrices_is_exact_like_torch(dtype):
    nilpotent = np.triu(MEXP_RNG.standard_normal((6, 6)) * 3, 1)
    diagonal = np.diag(MEXP_RNG.uniform(-4, 4, 6))
    for a in (
        nilpotent,
        diagonal,
        np.zeros((3, 3)),
        np.array([[2.5]]),
        np.array([[[-1.0]], [[3.0]]]),
    ):
        k, t = torch_pair(a, dtype)
        _mexp_check(kael.linalg.matrix_exp(k), torch.linalg.matrix_exp(t), dtype)
    k, t = torch_pair(diagonal, dtype)
    _mexp_check(kael.linalg.matrix_exp(k).diagonal(), t.diagonal().exp(), dtype)


@pytest.mark.parametrize("dtype", [kael.complex64, kael.complex128], ids=str)
@pytest.mark.parametrize("norm", [1e-5, 0.2, 2.5, 40.0])
def test_matrix_exp_of_complex_matrices_matches_torch(norm, dtype):
    a = MEXP_RNG.standard_normal((2, 4, 4)) + 1j * MEXP_RNG.standard_normal((2, 4, 4))
    a *= norm / np.abs(a).sum(-2).max(-1)[:, None, None]
    real = kael.float32 if dtype is kael.complex64 else kael.float64
    got = kael.linalg.matrix_exp(kael.tensor(a, dtype=dtype))
    want = torch.linalg.matrix_exp(torch.tensor(a, dtype=getattr(torch, str(dtype).split(".")[-1])))
    assert got.dtype is dtype
    tol = MEXP_TOL[real] * max(1.0, float(want.abs().max())) * 4
    torch.testing.assert_close(torch.from_numpy(got.numpy()), want, rtol=tol, atol=tol)


def test_matrix_exp_of_a_complex_matrix_holding_nan_is_nan_plus_zero_j_as_torch():
    values = [[complex(math.nan, 0), 0], [0, 1]]
    got = kael.linalg.matrix_exp(kael.tensor(values))
    want = torch.linalg.matrix_exp(torch.tensor(values))
    np.testing.assert_array_equal(got.numpy(), want.numpy())


@pytest.mark.parametrize("shape", [(0, 0), (2, 0, 0), (0, 3, 3)])
def test_matrix_exp_of_empty_inputs_is_empty(shape):
    k, t = kael.zeros(*shape), torch.zeros(*shape)
    close_to_torch(kael.linalg.matrix_exp(k), torch.linalg.matrix_exp(t), 0)


@pytest.mark.parametrize(
    "call, error, message",
    [
        (lambda: kael.linalg.matrix_exp(kael.ones(3, 4)), kael.ValueError, "linalg.matrix_exp: A must be batches of square matrices, but they are 3 by 4 matrices"),
        (lambda: kael.matrix_exp(kael.ones(2, 2, 3)), kael.ValueError, "2 by 3 matrices"),
        (lambda: kael.linalg.matrix_exp(kael.ones(3)), kael.ValueError, "must have at least 2 dimensions"),
        (lambda: kael.linalg.matrix_exp(kael.tensor(1.0)), kael.ValueError, "must have at least 2 dimensions"),
        (lambda: kael.linalg.matrix_exp(kael.ones(3, 3, dtype=kael.int64)), kael.TypeError, "floating point or complex tensor as input. Got int64"),
        (lambda: kael.ones(3, 3, dtype=kael.bool).matrix_exp(), kael.TypeError, "Got bool"),
    ],
)  # fmt: skip
def test_matrix_exp_refuses_what_torch_refuses(call, error, message):
    with pytest.raises(error, match=message):
        call()


@pytest.mark.parametrize("dtype", [kael.float16, kael.bfloat16], ids=str)
def test_matrix_exp_of_half_precision_keeps_the_dtype(dtype):
    # kael takes float32's polynomial and rounds once; torch 2.x's CPU float16 kernel
    # overflows to inf / nan here, so the reference is torch's float32 result, rounded.
    k, t = torch_pair(MEXP_RNG.standard_normal((2, 4, 4)) * 0.5, dtype)
    want = torch.linalg.matrix_exp(t.float()).to(t.dtype)
    close_to_torch(kael.linalg.matrix_exp(k), want, 1e-2)


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_matrix_exp_of_a_matrix_holding_nan_or_inf_is_all_nan_beside_finite_ones(bad):
    values = [[[bad, 1.0], [0.0, 1.0]], [[1.0, 0.0], [0.0, 1.0]]]
    got = kael.linalg.matrix_exp(kael.tensor(values))
    want = torch.linalg.matrix_exp(torch.tensor(values))
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6, equal_nan=True)
    assert np.isnan(got.numpy()[0]).all() and np.isfinite(got.numpy()[1]).all()


def test_linalg_cross_refuses_two_dtypes_as_torch():
    with pytest.raises(RuntimeError):
        torch.linalg.cross(torch.ones(3), torch.ones(3, dtype=torch.float64))
    with pytest.raises(kael.TypeError, match="one dtype, got float32 and float64"):
        kael.linalg.cross(kael.ones(3), kael.ones(3, dtype=kael.float64))
