"""kael.linalg's norms (frontend/matrix_norms.py) against torch.linalg: every order, dims,
keepdim, dtype=, layouts, empty inputs, and PyTorch's typed errors."""

import math

import numpy as np
import pytest
import torch
from kernel_helpers import KAEL_DTYPES
from parity_helpers import close_to_torch, torch_pair

import kael

RNG = np.random.default_rng(21)
FLOATS = [kael.float32, kael.float64]
TOL = {kael.float32: 1e-5, kael.float64: 1e-12}


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("ord", [2, 1, 0, 3.5, -1, math.inf, -math.inf])
def test_vector_norm_matches_torch(dtype, ord):
    k, t = torch_pair(RNG.standard_normal((3, 4, 5)), dtype)
    tol = TOL[dtype]
    close_to_torch(kael.linalg.vector_norm(k, ord), torch.linalg.vector_norm(t, ord), tol)
    for dim, keepdim in ((1, False), ((0, 2), True), (-1, True), ([0, 1], False)):
        got = kael.linalg.vector_norm(k.mT, ord, dim, keepdim)
        close_to_torch(got, torch.linalg.vector_norm(t.mT, ord, dim, keepdim), tol)
    got = kael.linalg.vector_norm(k, ord, dtype=kael.float64)
    close_to_torch(got, torch.linalg.vector_norm(t, ord, dtype=torch.float64), tol)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("ord", ["fro", 1, -1, math.inf, -math.inf])
def test_matrix_norm_matches_torch(dtype, ord):
    k, t = torch_pair(RNG.standard_normal((2, 4, 5)), dtype)
    tol = TOL[dtype]
    close_to_torch(kael.linalg.matrix_norm(k, ord), torch.linalg.matrix_norm(t, ord), tol)
    for dim, keepdim in (((0, 2), False), ((2, 1), True), ((-1, 0), True)):
        got = kael.linalg.matrix_norm(k, ord, dim, keepdim)
        close_to_torch(got, torch.linalg.matrix_norm(t, ord, dim, keepdim), tol)
    close_to_torch(kael.linalg.norm(k[0], ord), torch.linalg.norm(t[0], ord), tol)


def test_norm_dispatches_as_torch_does():
    k, t = torch_pair(RNG.standard_normal((3, 4)), kael.float64)
    for args in ((), (None, 1), (1, 0), (math.inf, 1), ("fro", (0, 1)), (-1, (1, 0))):
        close_to_torch(kael.linalg.norm(k, *args), torch.linalg.norm(t, *args), 1e-12)
    v, tv = torch_pair(RNG.standard_normal(5), kael.float64)
    close_to_torch(kael.linalg.norm(v, 3), torch.linalg.norm(tv, 3), 1e-12)
    big, tbig = torch_pair(RNG.standard_normal((2, 3, 4)), kael.float32)
    close_to_torch(kael.linalg.norm(big), torch.linalg.norm(tbig), 1e-5)


def test_vector_norm_is_finite_where_the_sum_of_squares_overflows():
    # kael rescales (float32's sum of squares overflows; PyTorch returns inf here).
    k, t = torch_pair(np.array([1e30, 3e30, -2e30]), kael.float32)
    want = torch.linalg.vector_norm(t.double()).float()
    close_to_torch(kael.linalg.vector_norm(k), want, 1e-6)


def test_cond_matches_torch_and_is_infinite_for_singular_matrices():
    a = RNG.standard_normal((3, 4, 4))
    a[1] = 0.0
    k, t = torch_pair(a, kael.float64)
    for p in (1, -1, math.inf, "fro"):
        close_to_torch(kael.linalg.cond(k, p), torch.linalg.cond(t, p), 1e-9)


def test_empty_inputs_match_torch():
    k, t = kael.zeros(0, 3), torch.zeros(0, 3)
    close_to_torch(kael.linalg.vector_norm(k), torch.linalg.vector_norm(t), 0)
    close_to_torch(kael.linalg.matrix_norm(k), torch.linalg.matrix_norm(t), 0)
    close_to_torch(kael.linalg.vector_norm(k, 2, 0), torch.linalg.vector_norm(t, 2, 0), 0)


@pytest.mark.parametrize(
    "call, error, message",
    [
        (lambda: kael.linalg.vector_norm(kael.ones(3, dtype=kael.int64)), kael.TypeError, "floating point"),
        (lambda: kael.linalg.vector_norm(kael.ones(3), "fro"), kael.TypeError, "'ord' must be a number, not str"),
        (lambda: kael.linalg.vector_norm(kael.ones(0), math.inf), kael.ValueError, "empty tensor"),
        (lambda: kael.linalg.vector_norm(kael.ones(3), dtype=kael.int64), kael.TypeError, "floating point or complex, but got int64"),
        (lambda: kael.linalg.vector_norm(kael.ones(3), dtype=kael.complex64), kael.TypeError, "real for real inputs"),
        (lambda: kael.linalg.vector_norm(kael.ones(3, dtype=kael.complex64), dtype=kael.float32), kael.TypeError, "complex for complex inputs"),
        (lambda: kael.linalg.matrix_norm(kael.ones(3)), kael.ValueError, "at least 2 dimensions"),
        (lambda: kael.linalg.matrix_norm(kael.ones(3, 3), 3), kael.ValueError, "Order 3 not supported"),
        (lambda: kael.linalg.matrix_norm(kael.ones(3, 3), "fro", (0, 0)), kael.ValueError, r"dims must be different. Got \(0, 0\)"),
        (lambda: kael.linalg.matrix_norm(kael.ones(3, 3), "fro", 0), kael.ValueError, "2-tuple"),
        (lambda: kael.linalg.norm(kael.ones(2, 2, 2), 2), kael.ValueError, "must be 1D or 2D. Got 3D"),
        (lambda: kael.linalg.norm(kael.ones(3), "nuc", 0), kael.ValueError, "not supported for a vector norm"),
        (lambda: kael.linalg.cond(kael.ones(3, 4), 1), kael.ValueError, "3 by 4 matrices"),
    ],
)  # fmt: skip
def test_bad_inputs_raise_typed_errors(call, error, message):
    with pytest.raises(error, match=message):
        call()


# ---- torch.dist, torch.renorm, torch.pdist ---------------------------------------------------

VIEWS = {
    "contiguous": lambda x: x,
    "transposed": lambda x: x.transpose(0, 1),
    "sliced": lambda x: x[:, ::2],
}
ORDERS = [2, 1, 0, 3.5, 0.5, -1, math.inf, -math.inf]


def _view_pair(shape, dtype, view):
    k, t = torch_pair(RNG.standard_normal(shape), dtype)
    return VIEWS[view](k), VIEWS[view](t)


@pytest.mark.parametrize("view", VIEWS)
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("p", ORDERS)
def test_dist_is_the_p_norm_of_the_broadcast_difference(p, dtype, view):
    k, t = _view_pair((6, 8), dtype, view)
    k2, t2 = torch_pair(RNG.standard_normal(k.shape[-1]), dtype)
    close_to_torch(kael.dist(k, k2, p), torch.dist(t, t2, p), TOL[dtype])
    close_to_torch(k.dist(k2, p=p), t.dist(t2, p=p), TOL[dtype])


def test_dist_promotes_dtypes_and_takes_0d_and_empty_inputs():
    k, t = torch_pair(RNG.standard_normal((3, 4)), kael.float32)
    k2, t2 = torch_pair(RNG.standard_normal(4), kael.float64)
    close_to_torch(kael.dist(k, k2), torch.dist(t, t2), 1e-6)
    s, ts = torch_pair(2.5, kael.float64)
    close_to_torch(kael.dist(k2, s, 3), torch.dist(t2, ts, 3), 1e-12)
    close_to_torch(kael.dist(s, s), torch.dist(ts, ts), 0)
    e, te = kael.zeros(0, 3), torch.zeros(0, 3)
    close_to_torch(kael.dist(e, e), torch.dist(te, te), 0)
    close_to_torch(kael.dist(e, e, 0), torch.dist(te, te, 0), 0)


@pytest.mark.parametrize("view", VIEWS)
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("p", [2, 1, 0.5, 3, math.inf])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_renorm_scales_each_slice_by_torch_s_factor(dim, p, dtype, view):
    k, t = _view_pair((5, 8), dtype, view)
    maxnorm = 1.25
    close_to_torch(kael.renorm(k, p, dim, maxnorm), torch.renorm(t, p, dim, maxnorm), TOL[dtype])
    close_to_torch(k.renorm(p, dim, maxnorm), t.renorm(p, dim, maxnorm), TOL[dtype])
    k2, t2 = k.clone(), t.clone()
    assert k2.renorm_(p, dim, maxnorm) is k2
    close_to_torch(k2, t2.renorm_(p, dim, maxnorm), TOL[dtype])


def test_renorm_of_3d_and_empty_inputs_and_slices_under_maxnorm():
    k, t = torch_pair(RNG.standard_normal((2, 3, 4)), kael.float64)
    for dim in (0, 1, 2):
        close_to_torch(kael.renorm(k, 2, dim, 2.0), torch.renorm(t, 2, dim, 2.0), 1e-12)
    # every slice already under maxnorm: unchanged
    close_to_torch(kael.renorm(k, 2, 0, 100.0), torch.renorm(t, 2, 0, 100.0), 0)
    close_to_torch(kael.renorm(k, 2, 0, 0), torch.renorm(t, 2, 0, 0), 0)
    for dim in (0, 1):
        e, te = kael.zeros(0, 3), torch.zeros(0, 3)
        close_to_torch(kael.renorm(e, 2, dim, 1.0), torch.renorm(te, 2, dim, 1.0), 0)


@pytest.mark.parametrize("view", VIEWS)
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("p", [2, 1, 0, 0.5, 3.5, math.inf])
def test_pdist_is_the_upper_triangle_of_row_distances(p, dtype, view):
    k, t = _view_pair((6, 10), dtype, view)
    close_to_torch(kael.pdist(k, p), torch.pdist(t, p), TOL[dtype])


@pytest.mark.parametrize("shape", [(1, 3), (0, 3), (3, 0), (2, 1)])
@pytest.mark.parametrize("p", [2, 0, math.inf])
def test_pdist_of_degenerate_shapes_matches_torch(shape, p):
    k, t = torch_pair(RNG.standard_normal(shape), kael.float64)
    close_to_torch(kael.pdist(k, p), torch.pdist(t, p), 1e-12)


@pytest.mark.parametrize("p", [0, 1, 2, math.inf])
def test_pdist_keeps_nan_and_inf_rows_as_torch(p):
    k, t = torch_pair([[1.0, math.nan], [1.0, 2.0], [math.inf, 0.0], [3.0, -1.0]], kael.float64)
    close_to_torch(kael.pdist(k, p), torch.pdist(t, p), 1e-12, equal_nan=True)


def test_pdist_is_a_function_only_as_in_torch():
    assert not hasattr(torch.Tensor, "pdist") and not hasattr(kael.Tensor, "pdist")


@pytest.mark.parametrize(
    "call, error, message",
    [
        (lambda: kael.dist(kael.ones(3, dtype=kael.int64), kael.ones(3, dtype=kael.int64)), kael.TypeError, "floating point or complex. Got int64"),
        (lambda: kael.dist(kael.ones(3, dtype=kael.bool), kael.ones(3, dtype=kael.bool)), kael.TypeError, "two bool tensors"),
        (lambda: kael.dist(kael.ones(3), 2.0), kael.TypeError, "'other' .* must be Tensor, not float"),
        (lambda: kael.dist(kael.ones(3), kael.ones(3), "fro"), kael.TypeError, "'p' must be Number, not str"),
        (lambda: kael.dist(kael.ones(3, 4), kael.ones(2)), kael.Error, "4"),
        (lambda: kael.dist(kael.ones(0), kael.ones(0), math.inf), kael.ValueError, "inf norm on an empty tensor"),
        (lambda: kael.renorm(kael.ones(3, 3, dtype=kael.int64), 2, 0, 1), kael.TypeError, "floating point tensor as input. Got int64"),
        (lambda: kael.renorm(kael.ones(3, 3), 0, 0, 1.0), kael.ValueError, r"non-positive-norm not supported \(p = 0"),
        (lambda: kael.renorm(kael.ones(3, 3), -1, 0, 1.0), kael.ValueError, r"non-positive-norm not supported \(p = -1"),
        (lambda: kael.renorm(kael.ones(3, 3), 2, 0, -1.0), kael.ValueError, "maxnorm to be >= 0 but got -1"),
        (lambda: kael.renorm(kael.ones(3), 2, 0, 1.0), kael.ValueError, "at least 2 dimensions, got 1"),
        (lambda: kael.renorm(kael.tensor(3.0), 2, 0, 1.0), kael.ValueError, "at least 2 dimensions, got 0"),
        (lambda: kael.renorm(kael.ones(3, 3), 2, 2, 1.0), kael.IndexError, r"range of \[-2, 1\], but got 2"),
        (lambda: kael.renorm(kael.ones(3, 3), 2, 0.0, 1.0), kael.TypeError, "'dim' .* must be int, not float"),
        (lambda: kael.ones(3, 3, dtype=kael.int64).renorm_(2, 0, 1), kael.TypeError, "Got int64"),
        (lambda: kael.pdist(kael.ones(3, 3, dtype=kael.int64)), kael.TypeError, "only supports floating-point dtypes, got int64"),
        (lambda: kael.pdist(kael.ones(3)), kael.ValueError, "only supports 2D tensors, got: 1D"),
        (lambda: kael.pdist(kael.ones(2, 3, 4)), kael.ValueError, "only supports 2D tensors, got: 3D"),
        (lambda: kael.pdist(kael.ones(3, 3), -1), kael.ValueError, "non-negative p values, got -1"),
        (lambda: kael.pdist(kael.ones(3, 3, dtype=kael.float16)), kael.TypeError, "not implemented for float16"),
    ],
)  # fmt: skip
def test_dist_renorm_pdist_refuse_what_torch_refuses(call, error, message):
    with pytest.raises(error, match=message):
        call()


@pytest.mark.parametrize("ord", [-1, -0.5, -2.5, math.inf, -math.inf])
@pytest.mark.parametrize(
    "shape, dim, where",
    [
        ((0,), None, "an empty tensor"),
        ((0, 3), 0, "the dimension 0"),
        ((2, 0), (0, 1), "the dimension 1"),
    ],
)
@pytest.mark.parametrize("dtype", ["float32", "complex64"])
def test_vector_norm_without_an_identity_refuses_an_empty_reduction_as_torch(
    ord, shape, dim, where, dtype
):
    with pytest.raises(RuntimeError, match=f"cannot compute the {ord} norm on"):
        torch.linalg.vector_norm(torch.zeros(shape, dtype=getattr(torch, dtype)), ord, dim=dim)
    with pytest.raises(kael.ValueError, match=f"cannot compute the {ord} norm on {where}"):
        kael.linalg.vector_norm(kael.zeros(*shape, dtype=getattr(kael, dtype)), ord, dim=dim)


@pytest.mark.parametrize("ord", [-1, math.inf, 0, 1, 2, 0.5])
@pytest.mark.parametrize("shape, dim", [((0, 3), 1), ((3, 0), 0), ((0, 3), 0), ((0,), None)])
def test_vector_norm_of_empty_tensors_where_torch_answers(ord, shape, dim):
    try:
        want = torch.linalg.vector_norm(torch.zeros(shape), ord, dim=dim)
    except RuntimeError:
        with pytest.raises(kael.ValueError, match="cannot compute"):
            kael.linalg.vector_norm(kael.zeros(*shape), ord, dim=dim)
        return
    got = kael.linalg.vector_norm(kael.zeros(*shape), ord, dim=dim)
    assert got.shape == tuple(want.shape)
    np.testing.assert_array_equal(got.numpy(), want.numpy())


@pytest.mark.parametrize("p", ["nuc", "fro", 1, -1, math.inf, -math.inf])
def test_cond_of_a_singular_matrix_is_infinite_not_an_error_as_torch(p):
    """The inverse of a singular matrix stays out of the norm (the 'nuc' norm's SVD refused
    its non-finite entries); a batch with one singular matrix keeps the others' values."""

    def conds(lib):
        batch = lib.stack([lib.eye(2) * 2, lib.tensor([[1.0, 0.0], [0.0, 0.0]]), lib.zeros(2, 2)])
        return np.array(lib.linalg.cond(batch, p).tolist())

    np.testing.assert_array_equal(conds(kael), conds(torch))


EMPTY_NORMS = {
    "2 of 0x0": lambda L: L.linalg.matrix_norm(L.zeros(0, 0), 2),
    "1 of 3x0": lambda L: L.linalg.matrix_norm(L.zeros(3, 0), 1),
    "inf of 0x3": lambda L: L.linalg.matrix_norm(L.zeros(0, 3), math.inf),
    "-1 of 0x3": lambda L: L.linalg.matrix_norm(L.zeros(0, 3), -1),
    "-inf of 3x0": lambda L: L.linalg.matrix_norm(L.zeros(3, 0), -math.inf),
    "nuc of 3x0": lambda L: L.linalg.matrix_norm(L.zeros(3, 0), "nuc"),
    "2 of an empty batch": lambda L: L.linalg.matrix_norm(L.zeros(0, 2, 0), 2),
    "1 keepdim of 2x3x0": lambda L: L.linalg.matrix_norm(L.zeros(2, 3, 0), 1, keepdim=True),
    "cond of 0x0": lambda L: L.linalg.cond(L.zeros(2, 0, 0)),
    "cond 1 of 0x0": lambda L: L.linalg.cond(L.zeros(2, 0, 0), 1),
}


@pytest.mark.parametrize("name", sorted(EMPTY_NORMS))
def test_norms_of_empty_matrices_are_zero_as_torch(name):
    """Only -2 (the smallest singular value) of an empty matrix is refused, as torch's amin."""
    got, want = EMPTY_NORMS[name](kael), EMPTY_NORMS[name](torch)
    assert got.shape == tuple(want.shape) and got.tolist() == want.tolist()


@pytest.mark.parametrize("ord, shape", [(-1, (3, 0)), (-math.inf, (0, 3)), (-1, (2, 4, 0))])
def test_the_least_sum_of_no_columns_or_rows_is_refused_as_torch(ord, shape):
    with pytest.raises(IndexError):
        torch.linalg.matrix_norm(torch.zeros(shape), ord)
    with pytest.raises(
        kael.IndexError, match=rf"the {ord}-norm of a matrix with no .*{list(shape)}"
    ):
        kael.linalg.matrix_norm(kael.zeros(shape), ord)


@pytest.mark.parametrize("name", ["vector_norm", "matrix_norm", "norm"])
@pytest.mark.parametrize(
    "given, asked",
    [(kael.float64, kael.float32), (kael.float32, kael.float16), (kael.bfloat16, kael.float16),
     (kael.complex128, kael.complex64)],
    ids=str,
)  # fmt: skip
def test_a_narrowing_dtype_is_refused_as_torch(name, given, asked):
    x = kael.ones(2, 2, dtype=given)
    with pytest.raises(
        kael.TypeError, match=f"input \\({given}\\) .* without narrowing .*\\({asked}\\)"
    ):
        getattr(kael.linalg, name)(x, dtype=asked)


@pytest.mark.parametrize("name", ["vector_norm", "matrix_norm"])
def test_a_widening_dtype_computes_in_it(name):
    a = RNG.standard_normal((3, 4)).astype(np.float32)
    got = getattr(kael.linalg, name)(kael.tensor(a), dtype=kael.float64)
    want = getattr(torch.linalg, name)(torch.tensor(a), dtype=torch.float64)
    assert got.dtype == kael.float64
    close_to_torch(got, want, 1e-12)


@pytest.mark.parametrize("ord", ["fro", 1, -1, math.inf, -math.inf])
@pytest.mark.parametrize("dtype", [np.complex64, np.complex128], ids=str)
def test_matrix_norms_of_complex_matrices_are_those_of_their_magnitudes_as_torch(ord, dtype):
    a = (RNG.standard_normal((2, 3, 4)) + 1j * RNG.standard_normal((2, 3, 4))).astype(dtype)
    got, want = (
        kael.linalg.matrix_norm(kael.tensor(a), ord),
        torch.linalg.matrix_norm(torch.tensor(a), ord),
    )
    assert str(got.dtype) == str(want.dtype).replace("torch.", "")
    close_to_torch(got, want, 1e-6 if dtype == np.complex64 else 1e-12)
    close_to_torch(
        kael.linalg.norm(kael.tensor(a), ord, (-2, -1)),
        want,
        1e-6 if dtype == np.complex64 else 1e-12,
    )


@pytest.mark.parametrize("ord", ["nuc", 2, -2])
def test_singular_value_norms_of_complex_matrices_are_refused_by_dtype(ord):
    with pytest.raises(kael.TypeError, match=f"ord={ord!r} not implemented for complex64"):
        kael.linalg.matrix_norm(kael.ones(2, 2, dtype=kael.complex64), ord)


def test_the_minus_2_norm_of_an_empty_matrix_is_refused_as_torch():
    with pytest.raises(IndexError):
        torch.linalg.matrix_norm(torch.zeros(3, 0), -2)
    with pytest.raises(kael.ValueError, match="non-empty matrix for the -2-norm"):
        kael.linalg.matrix_norm(kael.zeros(3, 0), -2)


def _remembered_norm_keys(shape: tuple) -> list:
    """The keys fastpath.keyed holds for kael.norm calls on a tensor of `shape`."""
    from kael.frontend import fastpath

    return [key for key in fastpath._keyed if key[0] == "norm" and key[3] == shape]


def test_vector_norm_takes_norm_s_keyed_door():
    k = kael.randn(3, 7, 6)  # a shape no other test reduces
    assert not _remembered_norm_keys((3, 7, 6))
    kael.linalg.vector_norm(k, dim=-1)
    assert _remembered_norm_keys((3, 7, 6))


@pytest.mark.parametrize("dtype", [*FLOATS, kael.float16, kael.bfloat16], ids=str)
@pytest.mark.parametrize("ord", [2, 1, 0, 3, -1, 2.0, math.inf])
def test_vector_norm_s_remembered_calls_keep_the_full_door_s_bits(dtype, ord):
    from kael.frontend.matrix_norms import vector_norm as full

    k, t = torch_pair(RNG.standard_normal((4, 16)), dtype)
    for args, kwargs in (((), {"dim": -1}), ((ord, 0, True), {}), ((ord,), {"dim": (0, 1)})):
        args = args or (ord,)
        for _ in range(3):  # the first call runs the full door, the later ones replay it
            got = kael.linalg.vector_norm(k, *args, **kwargs)
            want = full(k, *args, **kwargs)
            assert got.dtype == want.dtype and got.shape == want.shape
            np.testing.assert_array_equal(got.float().numpy(), want.float().numpy())
        theirs = torch.linalg.vector_norm(t, *args, **kwargs)
        close_to_torch(got.float(), theirs.float(), TOL.get(dtype, 1e-2))


def test_vector_norm_rescales_an_overflowing_float64_call_after_a_remembered_one():
    # kael's rescaled norm (torch's sum of squares overflows to inf here), on the same key
    small = kael.tensor(RNG.standard_normal((4, 16)), dtype=kael.float64)
    for _ in range(3):
        kael.linalg.vector_norm(small, dim=-1)
    big = kael.full((4, 16), 1e200, dtype=kael.float64)
    for _ in range(2):
        assert kael.linalg.vector_norm(big, dim=-1).tolist() == [4e200] * 4


@pytest.mark.parametrize(
    "call, error, message",
    [
        (lambda k: kael.linalg.vector_norm(k.long(), dim=-1), kael.TypeError, "floating point"),
        (lambda k: kael.linalg.vector_norm(k, True, dim=-1), kael.TypeError, "not bool"),
        (lambda k: kael.linalg.vector_norm(k, dim=2), kael.IndexError, "out of range"),
        (lambda k: kael.linalg.vector_norm(k[:0], -1, dim=0), kael.ValueError, "dimension 0"),
        (lambda k: kael.linalg.vector_norm(k, dim=-1, dtype=kael.int64), kael.TypeError, "int64"),
    ],
)
def test_vector_norm_s_errors_stay_typed_after_a_remembered_call(call, error, message):
    k = kael.randn(4, 16)
    for _ in range(2):
        kael.linalg.vector_norm(k, dim=-1)
    with pytest.raises(error, match=message):
        call(k)


@pytest.mark.parametrize("p", [2, 1, 0, 3, float("inf"), float("-inf")])
@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_dist_and_normalize_of_complex_inputs_are_torchs_real_norms(p, dtype):
    a = np.random.default_rng(6).standard_normal((2, 4, 2)).view(np.complex128)[..., 0]
    t = torch.from_numpy(a).to(getattr(torch, dtype))
    k = kael.tensor(a).to(getattr(kael, dtype))
    got, want = kael.dist(k, k * 0.5, p=p), torch.dist(t, t * 0.5, p=p)
    assert got.dtype is KAEL_DTYPES[want.dtype] and got.shape == ()
    np.testing.assert_allclose(got.item(), want.item(), rtol=1e-6)
    if p > 0:
        got = kael.nn.functional.normalize(k, p=p, dim=-1)
        want = torch.nn.functional.normalize(t, p=p, dim=-1)
        assert str(got.dtype) == str(want.dtype).removeprefix("torch.")
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6, atol=1e-7)
