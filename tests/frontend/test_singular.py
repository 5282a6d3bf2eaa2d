"""kael.linalg's singular value family (frontend/singular.py) against torch.linalg: svd
(up to each singular pair's sign, by reconstruction and orthonormality), svdvals, pinv,
matrix_rank, lstsq (every driver's fields), torch.svd and pinverse; layouts, batches,
empty, rank-deficient, ill-conditioned and extreme-scale inputs; NaN and infinity as
PyTorch treats them; PyTorch's typed errors."""

from fractions import Fraction

import numpy as np
import pytest
import torch
from parity_helpers import close_to_torch

import kael
from kael.frontend import singular

RNG = np.random.default_rng(1414)
FLOATS = [kael.float32, kael.float64]
TOL = {kael.float32: 1e-4, kael.float64: 1e-10}
EPS = {kael.float32: 2.0**-23, kael.float64: 2.0**-52}
SHAPES = [(4, 4), (7, 3), (3, 7), (2, 5, 5), (2, 1, 6, 4), (3, 2, 5), (1, 1), (9, 1)]


def _expanded(x):
    return x[:1].expand(3, *x.shape[1:]) if x.ndim > 2 else x.expand(3, *x.shape)


LAYOUTS = {
    "contiguous": lambda x: x,
    "transposed": lambda x: x.mT.contiguous().mT,
    "sliced": lambda x: x.repeat_interleave(2, -1).repeat_interleave(2, -2)[..., ::2, 1::2],
    "expanded": _expanded,
}


def _pair(array: np.ndarray, dtype, layout: str = "contiguous"):
    """A kael tensor and the equal torch tensor, the same view (`layout`) of each."""
    a = np.ascontiguousarray(array, dtype=np.float64 if dtype is kael.float64 else np.float32)
    view = LAYOUTS[layout]
    return view(kael.tensor(a)), view(torch.tensor(a))


def _np(x: kael.Tensor) -> np.ndarray:
    return np.asarray(x.contiguous()).astype(np.float64)


def _rank_deficient(m: int, n: int, rank: int) -> np.ndarray:
    return RNG.standard_normal((m, rank)) @ RNG.standard_normal((rank, n))


def _hilbert(n: int) -> np.ndarray:
    i = np.arange(n)
    return 1.0 / (i[:, None] + i[None, :] + 1)


def _orthonormal_columns(q: np.ndarray, tol: float) -> None:
    gram = np.swapaxes(q, -1, -2) @ q
    np.testing.assert_allclose(gram, np.broadcast_to(np.eye(q.shape[-1]), gram.shape), atol=tol)


def check_svd(k: kael.Tensor, t: torch.Tensor, full: bool, tol: float) -> None:
    """kael's SVD of k against torch's of t: shapes and dtypes, S, U diag(S) Vh == A,
    orthonormal U and Vh, and each singular pair equal to torch's up to its sign (where
    the singular values are well separated, so the pair is unique)."""
    U, S, Vh = kael.linalg.svd(k, full_matrices=full)
    tU, tS, tVh = torch.linalg.svd(t, full_matrices=full)
    for got, want in ((U, tU), (S, tS), (Vh, tVh)):
        assert got.shape == tuple(want.shape) and got.dtype is k.dtype
    close_to_torch(S, tS, tol)
    m, n = t.shape[-2:]
    r = min(m, n)
    u, s, vh, a = _np(U), _np(S), _np(Vh), t.double().numpy()
    scale = max(1.0, float(np.abs(s).max(initial=0.0)))
    np.testing.assert_allclose((u[..., :r] * s[..., None, :]) @ vh[..., :r, :], a, atol=tol * scale)
    _orthonormal_columns(u, tol)
    _orthonormal_columns(np.swapaxes(vh, -1, -2), tol)
    ts = tS.double().numpy()
    tu, tvh = tU.double().numpy(), tVh.double().numpy()
    for index in np.ndindex(*ts.shape[:-1]):
        for j in range(r):
            left = ts[index][j - 1] - ts[index][j] if j else np.inf
            right = ts[index][j] - ts[index][j + 1] if j + 1 < r else ts[index][j]
            if min(left, right) < 1e-3 * max(1.0, ts[index][0]):
                continue  # a repeated or zero singular value: its vectors are not unique
            sign = np.sign(np.dot(u[index][:, j], tu[index][:, j]))
            np.testing.assert_allclose(sign * u[index][:, j], tu[index][:, j], atol=100 * tol)
            np.testing.assert_allclose(sign * vh[index][j], tvh[index][j], atol=100 * tol)


@pytest.mark.parametrize("full", [True, False])
@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_svd_matches_torch(dtype, shape, full):
    k, t = _pair(RNG.standard_normal(shape), dtype)
    check_svd(k, t, full, TOL[dtype])


@pytest.mark.parametrize("layout", list(LAYOUTS))
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_svd_of_every_layout(dtype, layout):
    for shape in [(2, 6, 4), (2, 4, 6)]:
        k, t = _pair(RNG.standard_normal(shape), dtype, layout)
        check_svd(k, t, True, TOL[dtype])
        close_to_torch(kael.linalg.svdvals(k), torch.linalg.svdvals(t), TOL[dtype])


@pytest.mark.parametrize("full", [True, False])
@pytest.mark.parametrize("shape", [(0, 3), (3, 0), (0, 0), (2, 0, 0), (0, 2, 3), (2, 3, 0)])
def test_svd_of_empty_inputs_has_torchs_shapes_and_bases(shape, full):
    k, t = _pair(np.zeros(shape), kael.float64)
    for got, want in zip(kael.linalg.svd(k, full_matrices=full), torch.linalg.svd(t, full_matrices=full), strict=True):  # fmt: skip
        close_to_torch(got, want, 0)
    close_to_torch(kael.linalg.svdvals(k), torch.linalg.svdvals(t), 0)


@pytest.mark.parametrize("shape", [(6, 6, 2), (5, 8, 3), (8, 5, 5), (4, 4, 1)], ids=str)
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_rank_deficient_matrices(dtype, shape):
    m, n, rank = shape
    k, t = _pair(_rank_deficient(m, n, rank), dtype)
    check_svd(k, t, True, 10 * TOL[dtype])
    check_svd(k, t, False, 10 * TOL[dtype])
    assert int(kael.linalg.matrix_rank(k)) == int(torch.linalg.matrix_rank(t)) == rank
    close_to_torch(kael.linalg.pinv(k), torch.linalg.pinv(t), 100 * TOL[dtype])


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_zero_matrix_gives_identity_bases(dtype):
    for shape in [(3, 3), (2, 4), (4, 2)]:
        k, t = _pair(np.zeros(shape), dtype)
        for got, want in zip(kael.linalg.svd(k), torch.linalg.svd(t), strict=True):
            close_to_torch(got, want, 0)
        close_to_torch(kael.linalg.pinv(k), torch.linalg.pinv(t), 0)
        assert int(kael.linalg.matrix_rank(k)) == 0


def test_ill_conditioned_hilbert_matrix_keeps_relative_accuracy():
    # Jacobi's singular values are accurate relative to each one, down to ~1e-18 here.
    k, t = _pair(_hilbert(12), kael.float64)
    s, ts = _np(kael.linalg.svdvals(k)), torch.linalg.svdvals(t).numpy()
    np.testing.assert_allclose(s[:6], ts[:6], rtol=1e-10)
    np.testing.assert_allclose(s, ts, rtol=1e-10, atol=1e-14 * ts[0])
    check_svd(k, t, True, 1e-9)
    assert int(kael.linalg.matrix_rank(k)) == int(torch.linalg.matrix_rank(t))


@pytest.mark.parametrize("scale", [1e-300, 1e-160, 1e160, 1e300])
def test_tiny_and_huge_scales_neither_overflow_nor_underflow(scale):
    a = RNG.standard_normal((5, 4))
    k, t = _pair(a * scale, kael.float64)
    s = kael.linalg.svdvals(k)
    close_to_torch(s / scale, torch.linalg.svdvals(torch.tensor(a)), 1e-12)
    U, S, Vh = kael.linalg.svd(k)
    rebuilt = (_np(U)[:, :4] * _np(S)) @ _np(Vh)
    np.testing.assert_allclose(rebuilt / scale, a, atol=1e-12)


def test_float32_scales():
    a = RNG.standard_normal((4, 6))
    for scale in (1e-30, 1e30):
        k, _ = _pair(a * scale, kael.float32)
        want = torch.linalg.svdvals(torch.tensor(a, dtype=torch.float32))
        close_to_torch(kael.linalg.svdvals(k) / scale, want, 1e-4)


@pytest.mark.parametrize("shape", [(3, 3), (4, 2), (2, 5)], ids=str)
def test_nan_raises_and_infinity_gives_nan_as_torch(shape):
    a = np.ones(shape)
    a[0, 1] = np.nan
    message = "linalg.svd: The algorithm failed to converge because the input matrix contained"
    for fn in (kael.linalg.svd, kael.linalg.svdvals, kael.linalg.pinv, kael.linalg.matrix_rank):
        with pytest.raises(kael.linalg.LinAlgError, match=message):
            fn(kael.tensor(a))
    with pytest.raises(kael.linalg.LinAlgError, match=r"\(Batch element 1\)"):
        kael.linalg.svdvals(kael.tensor(np.stack([np.ones(shape), a])))
    a[0, 1] = np.inf
    k, t = _pair(a, kael.float64)
    close_to_torch(kael.linalg.svdvals(k), torch.linalg.svdvals(t), 0, equal_nan=True)
    close_to_torch(kael.linalg.svd(k).S, torch.linalg.svd(t).S, 0, equal_nan=True)
    close_to_torch(kael.linalg.pinv(k), torch.linalg.pinv(t), 0, equal_nan=True)
    close_to_torch(kael.linalg.matrix_rank(k), torch.linalg.matrix_rank(t), 0)


@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (2, 4, 4), (6, 1)], ids=str)
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_pinv_and_matrix_rank_match_torch(dtype, shape):
    k, t = _pair(RNG.standard_normal(shape), dtype)
    tol = 10 * TOL[dtype]
    close_to_torch(kael.linalg.pinv(k), torch.linalg.pinv(t), tol)
    close_to_torch(kael.pinverse(k), torch.pinverse(t), tol)
    close_to_torch(k.pinverse(rcond=1e-3), t.pinverse(rcond=1e-3), tol)
    close_to_torch(kael.linalg.matrix_rank(k), torch.linalg.matrix_rank(t), 0)
    sym = RNG.standard_normal((4, 4))
    ks, ts = _pair(np.tril(sym) + np.triu(RNG.standard_normal((4, 4)), 1), dtype)
    close_to_torch(kael.linalg.pinv(ks, hermitian=True), torch.linalg.pinv(ts, hermitian=True), tol)
    close_to_torch(
        kael.linalg.matrix_rank(ks, hermitian=True), torch.linalg.matrix_rank(ts, hermitian=True), 0
    )


def test_tolerances_follow_torchs_rules():
    # singular values 10, 1, 1e-3, 1e-9
    u, _ = np.linalg.qr(RNG.standard_normal((5, 4)))
    v, _ = np.linalg.qr(RNG.standard_normal((4, 4)))
    k, t = _pair((u * [10, 1, 1e-3, 1e-9]) @ v.T, kael.float64)
    for kwargs in [{}, {"atol": 0.5}, {"rtol": 1e-2}, {"atol": 1e-6, "rtol": 0.05}, {"atol": 0.0}]:
        close_to_torch(
            kael.linalg.matrix_rank(k, **kwargs), torch.linalg.matrix_rank(t, **kwargs), 0
        )
        close_to_torch(kael.linalg.pinv(k, **kwargs), torch.linalg.pinv(t, **kwargs), 1e-6)
    tk, tt = _pair(np.array([0.5, 1e-5]), kael.float64)
    batch_k, batch_t = _pair(np.stack([(u * [10, 1, 1e-3, 1e-9]) @ v.T] * 2), kael.float64)
    close_to_torch(
        kael.linalg.matrix_rank(batch_k, atol=tk), torch.linalg.matrix_rank(batch_t, atol=tt), 0
    )


@pytest.mark.parametrize("driver", [None, "gelsy", "gelsd", "gelss", "gels"])
@pytest.mark.parametrize("shape", [(6, 3, 2), (3, 6, 2), (4, 4, 3), (6, 3, 0)], ids=str)
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_lstsq_fields_match_torch_per_driver(dtype, shape, driver):
    m, n, nrhs = shape
    if nrhs == 0 and driver not in (None, "gelsy"):
        pytest.skip("PyTorch's gelsd, gelss and gels fail on an empty B (LAPACK's argument check)")
    ka, ta = _pair(RNG.standard_normal((2, m, n)), dtype)
    kb, tb = _pair(RNG.standard_normal((2, m, nrhs)), dtype)
    got, want = kael.linalg.lstsq(ka, kb, driver=driver), torch.linalg.lstsq(ta, tb, driver=driver)
    close_to_torch(tuple(got), tuple(want), 100 * TOL[dtype])


@pytest.mark.parametrize("driver", [None, "gelsd", "gelss"])
def test_lstsq_of_rank_deficient_systems_is_the_minimum_norm_solution(driver):
    ka, ta = _pair(_rank_deficient(7, 4, 2), kael.float64)
    kb, tb = _pair(RNG.standard_normal((7, 3)), kael.float64)
    got, want = kael.linalg.lstsq(ka, kb, driver=driver), torch.linalg.lstsq(ta, tb, driver=driver)
    close_to_torch(tuple(got), tuple(want), 1e-9)
    assert int(got.rank) == 2 and got.residuals.shape == (0,)


def test_lstsq_vectors_broadcasting_rcond_and_empty():
    ka, ta = _pair(RNG.standard_normal((5, 3)), kael.float64)
    kb, tb = _pair(RNG.standard_normal(5), kael.float64)
    close_to_torch(tuple(kael.linalg.lstsq(ka, kb, driver="gelsd")), tuple(torch.linalg.lstsq(ta, tb, driver="gelsd")), 1e-10)  # fmt: skip
    kA, tA = _pair(RNG.standard_normal((3, 5, 3)), kael.float64)
    kB, tB = _pair(RNG.standard_normal((1, 5, 2)), kael.float64)
    close_to_torch(tuple(kael.linalg.lstsq(kA, kB)), tuple(torch.linalg.lstsq(tA, tB)), 1e-10)
    with pytest.raises(kael.ValueError, match=r"got A \[5, 3\] and B \[1, 5, 2\]"):
        kael.linalg.lstsq(ka, kB)
    close_to_torch(tuple(kael.linalg.lstsq(kA, kB, rcond=0.9, driver="gelss")), tuple(torch.linalg.lstsq(tA, tB, rcond=0.9, driver="gelss")), 1e-10)  # fmt: skip
    for m, n in [(0, 3), (3, 0)]:
        ke, te = _pair(np.zeros((m, n)), kael.float64)
        kr, tr = _pair(np.ones((m, 2)), kael.float64)
        close_to_torch(tuple(kael.linalg.lstsq(ke, kr, driver="gelsd")), tuple(torch.linalg.lstsq(te, tr, driver="gelsd")), 0)  # fmt: skip


@pytest.mark.parametrize("driver", [None, "gelsd", "gels"])
@pytest.mark.parametrize(
    "a_shape, b_shape",
    [
        ((5, 3), (5,)),  # a vector
        ((2, 5, 3), (2, 5)),  # a batch of vectors: B is A's shape less its last dim
        ((2, 1, 5, 3), (2, 1, 5)),
        ((1, 5, 3), (4, 5, 2)),  # the batch broadcasts; rank and S keep A's own
        ((2, 1, 5, 3), (1, 3, 5, 2)),
        ((1, 5, 3), (5, 2)),  # one dim short, not vectors: B's leading size joins the batch
        ((1, 3, 5), (3, 2)),
        ((5, 5, 3), (5, 2)),
    ],
    ids=str,
)
def test_lstsq_shapes_follow_torchs_vector_and_batch_rules(a_shape, b_shape, driver):
    """B is vectors only when 1-d or A's shape less its last dim; A's batch broadcasts
    with B's leading A.ndim - 2 sizes (as torch's), rank and singular values keep A's."""
    ka, ta = _pair(RNG.standard_normal(a_shape), kael.float64)
    kb, tb = _pair(RNG.standard_normal(b_shape), kael.float64)
    got, want = kael.linalg.lstsq(ka, kb, driver=driver), torch.linalg.lstsq(ta, tb, driver=driver)
    close_to_torch(tuple(got), tuple(want), 1e-10)


@pytest.mark.parametrize(
    "a_shape, b_shape, error, words",
    [
        ((2, 5, 3), (5, 2), kael.ValueError, r"batch dims of A \[2, 5, 3\] and B \[5, 2\] cannot be"),
        ((2, 2, 5, 3), (1, 5, 2), kael.ValueError, r"batch dims of A \[2, 2, 5, 3\] and B \[1, 5, 2\]"),
        ((2, 5, 3), (3, 5, 2), kael.ValueError, r"batch dims of A \[2, 5, 3\] and B \[3, 5, 2\]"),
        ((2, 5, 3), (1, 5), kael.ValueError, r"should match other.size\(-2\), got A \[2, 5, 3\] and B \[1, 5\]"),
        ((5, 3), (3,), kael.ValueError, r"should match other.size\(-1\), got A \[5, 3\] and B \[3\]"),
        ((1, 5, 3), (5,), kael.ValueError, r"\(input.dim\(\) - other.dim\(\)\) <= 1, got A \[1, 5, 3\] and B \[5\]"),
        ((5, 3), (), kael.ValueError, r"at least 1 dimension, got A \[5, 3\] and B \[\]"),
    ],
)  # fmt: skip
def test_lstsq_refuses_the_shapes_torch_refuses(a_shape, b_shape, error, words):
    with pytest.raises(RuntimeError):
        torch.linalg.lstsq(torch.ones(a_shape), torch.ones(b_shape))
    with pytest.raises(error, match=words):
        kael.linalg.lstsq(kael.ones(a_shape), kael.ones(b_shape))


def test_torch_svd_returns_v_and_zeros_without_uv():
    k, t = _pair(RNG.standard_normal((2, 5, 3)), kael.float64)
    for some in (True, False):
        U, S, V = kael.svd(k, some=some)
        tU, tS, tV = torch.svd(t, some=some)
        assert (U.shape, V.shape) == (tuple(tU.shape), tuple(tV.shape))
        close_to_torch(S, tS, 1e-10)
        rebuilt = (_np(U)[..., :3] * _np(S)[..., None, :]) @ np.swapaxes(_np(V), -1, -2)[..., :3, :]
        np.testing.assert_allclose(rebuilt, t.numpy(), atol=1e-10)
    got, want = k.svd(compute_uv=False), t.svd(compute_uv=False)
    close_to_torch(tuple(got), tuple(want), 1e-10)
    assert type(got).__name__ == "TorchSVD" and got._fields == ("U", "S", "V")
    assert kael.linalg.svd(k)._fields == ("U", "S", "Vh")


@pytest.mark.parametrize("dtype", [kael.int64, kael.int32, kael.float16, kael.bfloat16], ids=str)
def test_non_float_dtypes_raise_type_error(dtype):
    x = kael.ones(3, 3, dtype=dtype)
    for fn in (kael.linalg.svd, kael.linalg.svdvals, kael.linalg.pinv, kael.linalg.matrix_rank, kael.svd, kael.pinverse):  # fmt: skip
        with pytest.raises(kael.TypeError, match=str(dtype).split(".")[-1]):
            fn(x)


def test_bad_inputs_raise_typed_errors_naming_the_values():
    with pytest.raises(kael.ValueError, match="at least 2 dimensions"):
        kael.linalg.svd(kael.ones(3))
    with pytest.raises(kael.ValueError, match="at least 2 dimensions"):
        kael.linalg.lstsq(kael.ones(3), kael.ones(3))
    a = kael.ones(5, 3, dtype=kael.float64)
    with pytest.raises(kael.ValueError, match=r"A \[5, 3\] and B \[4, 2\]"):
        kael.linalg.lstsq(a, kael.ones(4, 2, dtype=kael.float64))
    with pytest.raises(kael.ValueError, match="gels, gelsy, gelsd, gelss\\), got 'qr'"):
        kael.linalg.lstsq(a, kael.ones(5, 2, dtype=kael.float64), driver="qr")
    with pytest.raises(kael.TypeError, match="float64.*float32|Double.*Float"):
        kael.linalg.lstsq(a, kael.ones(5, 2))
    with pytest.raises(kael.ValueError, match="driver='gesvd'"):
        kael.linalg.svd(a, driver="gesvd")
    with pytest.raises(kael.TypeError, match="full_matrices must be a bool"):
        kael.linalg.svd(a, full_matrices=1)


def test_batched_svd_over_threads_equals_one_by_one():
    a = RNG.standard_normal((32, 9, 7))
    whole = kael.linalg.svd(kael.tensor(a))
    for i in (0, 17, 31):
        one = kael.linalg.svd(kael.tensor(a[i]))
        for got, want in zip(whole, one, strict=True):
            np.testing.assert_array_equal(_np(got)[i], _np(want))


def test_a_larger_matrix_with_clustered_singular_values():
    n = 64
    u, _ = np.linalg.qr(RNG.standard_normal((n, n)))
    v, _ = np.linalg.qr(RNG.standard_normal((n, n)))
    s = np.repeat([3.0, 2.0, 1.0, 1e-6], n // 4)
    k, t = _pair((u * s) @ v.T, kael.float64)
    check_svd(k, t, True, 1e-9)


def test_svd_runs_inside_compile():
    @kael.compile
    def f(a):
        return kael.linalg.svdvals(a * 2) + kael.linalg.pinv(a).sum()

    a = RNG.standard_normal((5, 3))
    t = torch.tensor(a)
    want = torch.linalg.svdvals(t * 2) + torch.linalg.pinv(t).sum()
    for _ in range(2):
        close_to_torch(f(kael.tensor(a)), want, 1e-10)


@pytest.mark.gpu
def test_svd_on_cuda_copies_through_the_host():
    a = RNG.standard_normal((5, 3))
    k = kael.tensor(a).cuda()
    U, S, Vh = kael.linalg.svd(k)
    assert all(str(x.device) == "cuda:0" for x in (U, S, Vh))
    close_to_torch(S.cpu(), torch.linalg.svdvals(torch.tensor(a)), 1e-10)
    close_to_torch(kael.linalg.pinv(k).cpu(), torch.linalg.pinv(torch.tensor(a)), 1e-10)


@pytest.mark.parametrize("shape", [(150, 130), (130, 150), (140, 140)], ids=str)
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_a_single_large_matrix_swept_in_blocks_over_the_threads(dtype, shape):
    # From order 128 one matrix's sweeps are split in block pairs over the threads.
    m, n = shape
    k, t = _pair(RNG.standard_normal(shape), dtype)
    check_svd(k, t, True, 10 * TOL[dtype])
    check_svd(k, t, False, 10 * TOL[dtype])
    close_to_torch(kael.linalg.svdvals(k), torch.linalg.svdvals(t), 10 * TOL[dtype])
    k, t = _pair(_rank_deficient(m, n, 40), dtype)
    check_svd(k, t, True, 100 * TOL[dtype])
    assert int(kael.linalg.matrix_rank(k)) == int(torch.linalg.matrix_rank(t)) == 40


@pytest.mark.parametrize("batch", [(1,), (1, 1)], ids=str)
@pytest.mark.parametrize("shape", [(140, 140), (150, 130)], ids=str)
def test_one_large_matrix_with_unit_batch_dims_takes_the_preconditioned_path(batch, shape):
    """A batch of one large matrix is that matrix: svd, svdvals and lstsq (gelsd) give
    torch's values in torch's shapes (the preconditioner read its eigenvalues as a
    scalar, and a [1, k] one raised)."""
    a = RNG.standard_normal((*batch, *shape))
    k, t = kael.tensor(a), torch.tensor(a)
    check_svd(k, t, False, 1e-9)
    close_to_torch(kael.linalg.svdvals(k), torch.linalg.svdvals(t), 1e-9)
    b = RNG.standard_normal((*batch, shape[0], 3))
    got = kael.linalg.lstsq(k, kael.tensor(b), driver="gelsd").solution
    close_to_torch(got, torch.linalg.lstsq(t, torch.tensor(b), driver="gelsd").solution, 1e-8)


def test_a_large_ill_conditioned_matrix_in_blocks_keeps_relative_accuracy():
    n = 160
    u, _ = np.linalg.qr(RNG.standard_normal((n, n)))
    v, _ = np.linalg.qr(RNG.standard_normal((n, n)))
    s = np.logspace(0, -6, n)
    k = kael.tensor((u * s) @ v.T * 1e200)
    got = _np(kael.linalg.svdvals(k))
    np.testing.assert_allclose(got, s * 1e200, rtol=1e-9)
    a = np.ones((130, 130))
    a[5, 7] = np.nan
    with pytest.raises(kael.linalg.LinAlgError, match="contained non-finite values"):
        kael.linalg.svd(kael.tensor(a))
    a[5, 7] = np.inf
    assert np.isnan(_np(kael.linalg.svdvals(kael.tensor(a)))).all()


@pytest.mark.parametrize("shape", [(200, 140), (140, 200)], ids=str)
def test_a_large_graded_matrix_by_its_triangular_factor(shape):
    # One large matrix is swept as R of A = Q R; U (or Vh, when wide) is Q G^T.
    grades = np.logspace(0, -8, min(shape))
    a = RNG.standard_normal(shape)
    a = a * grades[None, :] if shape[0] > shape[1] else a * grades[:, None]
    k, t = _pair(a, kael.float64)
    check_svd(k, t, False, 1e-9)
    got, want = _np(kael.linalg.svdvals(k)), torch.linalg.svdvals(t).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-9)


def _largest_cosine_of_small_rows(x: np.ndarray) -> float:
    """The largest |cos| between two rows of x with norms below 1e-5 of the largest row's."""
    norms = np.linalg.norm(x, axis=1)
    small = x[norms < 1e-5 * norms.max()] / norms[norms < 1e-5 * norms.max(), None]
    cos = np.abs(small @ small.T)
    np.fill_diagonal(cos, 0.0)
    return float(cos.max())


def test_the_preconditioner_turns_small_rows_again_among_themselves():
    # One turn by the eigenvectors of R R^T leaves the rows of squared norm below
    # sqrt(eps) of the largest far from orthogonal (the Gram's rounding); _turned turns
    # them again by their own Gram.
    n = 160
    u, _ = np.linalg.qr(RNG.standard_normal((n, n)))
    v, _ = np.linalg.qr(RNG.standard_normal((n, n)))
    a = (u * np.logspace(0, -12, n)) @ v.T
    P, X = singular._turned(kael.tensor(a))
    p, x = _np(P), _np(X)
    _orthonormal_columns(p, 1e-13)
    np.testing.assert_allclose(p @ x, a, atol=1e-14)
    norms = np.linalg.norm(x, axis=1)
    assert (np.diff(norms) <= 1e-12).all()  # by falling norm
    _, once = np.linalg.eigh(a @ a.T)
    assert _largest_cosine_of_small_rows(once.T @ a) > 0.1
    assert _largest_cosine_of_small_rows(x) < 1e-4


@pytest.mark.parametrize(
    ("rows", "dtype"),
    [([[1e8, 0.0], [0.0, 1.0]], "float32"), ([[1.0, 0.0], [0.0, 1e-17]], "float64"),
     ([[0.0, 3e-9, 0.0], [2.0, 0.0, 0.0], [0.0, 0.0, 1e-30]], "float64")],
)  # fmt: skip
def test_a_small_row_of_the_matrix_keeps_its_singular_value_as_lapacks(rows, dtype):
    """One-sided Jacobi is accurate relative to each value where the rows are orthogonal:
    a row far below |A| is not rounding (only a rotation's cancellation is), so
    svdvals, cond, matrix_norm(-2), matrix_rank and pinv see it as torch does."""
    k, t = (
        kael.tensor(rows, dtype=getattr(kael, dtype)),
        torch.tensor(rows, dtype=getattr(torch, dtype)),
    )
    np.testing.assert_allclose(
        kael.linalg.svdvals(k).numpy(), torch.linalg.svdvals(t).numpy(), rtol=1e-6
    )
    np.testing.assert_allclose(kael.linalg.cond(k).item(), torch.linalg.cond(t).item(), rtol=1e-6)
    np.testing.assert_allclose(
        kael.linalg.matrix_norm(k, -2).item(), torch.linalg.matrix_norm(t, -2).item(), rtol=1e-6
    )
    tiny = float(torch.linalg.svdvals(t).min()) / 10
    assert kael.linalg.matrix_rank(k, atol=tiny, rtol=0).item() == len(rows)
    np.testing.assert_allclose(
        kael.linalg.pinv(k, rtol=0).numpy(), torch.linalg.pinv(t, rtol=0).numpy(), rtol=1e-6
    )


SPREAD = {kael.float32: -30, kael.float64: -300}  # singular values from 1 down to 10^SPREAD


def _relatively_close(got: kael.Tensor, want: torch.Tensor, rtol: float) -> None:
    """Shape, dtype and every value within rtol of torch's, however small (no atol)."""
    assert got.shape == tuple(want.shape) and got.dtype is getattr(kael, str(want.dtype)[6:])
    np.testing.assert_allclose(_np(got), want.double().numpy(), rtol=rtol, atol=0)


def _check_spread(k: kael.Tensor, t: torch.Tensor, rtol: float) -> None:
    """svdvals, cond and matrix_rank(atol=) within rtol of torch's, however small the
    singular values; U S Vh rebuilds A to n eps |A|, U and Vh orthonormal, and
    pinv(rtol=0) inverts A to n eps. (torch's pinv is not the reference there: LAPACK's
    vectors, right to eps, are divided by singular values down to 1e-300.)"""
    n, eps = t.shape[-1], EPS[k.dtype]
    _relatively_close(kael.linalg.svdvals(k), torch.linalg.svdvals(t), rtol)
    _relatively_close(kael.linalg.cond(k), torch.linalg.cond(t), rtol)
    atol = float(torch.linalg.svdvals(t).min()) / 10
    rank = kael.linalg.matrix_rank(k, atol=atol, rtol=0)
    close_to_torch(rank, torch.linalg.matrix_rank(t, atol=atol, rtol=0), 0)
    assert int(rank) == n
    inverse = kael.linalg.pinv(k, rtol=0)
    assert inverse.shape == (n, n) and inverse.dtype is k.dtype
    np.testing.assert_allclose(_np(inverse) @ _np(k), np.eye(n), rtol=0, atol=n * eps)
    U, S, Vh = kael.linalg.svd(k)
    u, s, vh = _np(U), _np(S), _np(Vh)
    np.testing.assert_allclose((u * s) @ vh, t.double().numpy(), rtol=0, atol=n * eps * s[0])
    _orthonormal_columns(u, n * eps)
    _orthonormal_columns(vh.T, n * eps)


@pytest.mark.parametrize("n", [2, 6, 130])  # 130: one large matrix, swept in blocks
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_row_norms_below_the_squares_underflow_keep_their_singular_values(dtype, n):
    # A permuted diag(1 .. 1e-30) (float32) or (1 .. 1e-300) (float64): squared row norms
    # underflow below 1e-19 (1e-154); the kernel keeps the norms, scaled where they would.
    a = np.diag(np.logspace(0, SPREAD[dtype], n))
    k, t = _pair(a[RNG.permutation(n)][:, RNG.permutation(n)], dtype)
    _check_spread(k, t, 8 * EPS[dtype])


@pytest.mark.parametrize("n", [6, 12])
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_orthogonal_rows_graded_to_underflow_keep_relative_accuracy(dtype, n):
    # D Q, Q a random orthogonal matrix: a dense matrix whose singular values (D's) spread
    # to 1e-30 (1e-300); its tiny rows are orthogonal to the rest by their scaled dot.
    q, _ = np.linalg.qr(RNG.standard_normal((n, n)))
    k, t = _pair(np.logspace(0, SPREAD[dtype], n)[:, None] * q, dtype)
    _check_spread(k, t, 1e-5 if dtype is kael.float32 else 1e-13)


@pytest.mark.parametrize(
    ("rows", "dtype"),
    [([[1.0, 0.0], [0.0, 1e-30]], "float32"), ([[1.0, 0.0], [0.0, 1e-200]], "float64"),
     ([[1.0, 0.0], [0.0, 1e-160]], "float64"), ([[1e-300, 0.0], [0.0, 1.0]], "float64")],
)  # fmt: skip
def test_a_tiny_diagonal_entry_is_its_singular_value_to_the_last_bits(rows, dtype):
    k, t = (
        kael.tensor(rows, dtype=getattr(kael, dtype)),
        torch.tensor(rows, dtype=getattr(torch, dtype)),
    )
    _relatively_close(kael.linalg.svdvals(k), torch.linalg.svdvals(t), EPS[k.dtype])
    _relatively_close(kael.linalg.cond(k), torch.linalg.cond(t), EPS[k.dtype])


@pytest.mark.parametrize("dtype, lowest", [(np.float32, -30), (np.float64, -300)])
def test_svdvals_of_rows_graded_past_eighs_reach_still_converge(dtype, lowest):
    # the preconditioner's Gram of D Q (130 rows, 1 .. 10**lowest) is too graded for eigh
    # to settle: the sweeps then start from the rows themselves (it raised LinAlgError)
    n = 130
    d = np.logspace(0, lowest, n)
    q, _ = np.linalg.qr(np.random.default_rng(3).standard_normal((n, n)))
    a = (d[:, None] * q).astype(dtype)
    got = kael.linalg.svdvals(kael.tensor(a)).numpy()
    want = torch.linalg.svdvals(torch.from_numpy(a)).numpy()
    eps = np.finfo(dtype).eps
    np.testing.assert_allclose(got, want, rtol=1e-4 if dtype is np.float32 else 1e3 * eps)
    np.testing.assert_allclose(got, d, rtol=100 * eps)


def _rows_close(rebuilt: np.ndarray, a: np.ndarray, rtol: float) -> None:
    """Each row of `rebuilt` within rtol of a's row (its own scale, not |A|'s)."""
    scale = np.abs(a).max(axis=-1, keepdims=True)
    assert (np.abs(rebuilt - a) <= rtol * scale).all()


@pytest.mark.parametrize(
    ("rows", "dtype"),
    [([[1e8, 1.0], [1.0, 1.0]], kael.float32), ([[1e7, 1.0], [1.0, 1.0]], kael.float32),
     ([[1e8, 1.0], [1.0, 2.0]], kael.float32), ([[1.0, 1.0], [1.0, 1e8]], kael.float32),
     ([[1e16, 1.0], [1.0, 1.0]], kael.float64), ([[1e17, 1.0], [1.0, 2.0]], kael.float64),
     # below eps sqrt(2) |A| of the small value only from 1e7 (1e16): these were right
     ([[1e6, 1.0], [1.0, 1.0]], kael.float32), ([[1e15, 1.0], [1.0, 1.0]], kael.float64)],
)  # fmt: skip
def test_a_rotated_graded_two_by_two_keeps_its_small_singular_value(rows, dtype):
    """One rotation turns the small row orthogonal to the large one without cancelling it:
    its singular value (1 - 1e-8 for [[1e8, 1], [1, 1]]) to an eps, as LAPACK's. A floor of
    eps sqrt(cols) |A| on the rotated rows zeroed it (svdvals [1e8, 0], U S Vh off by 1).
    Measured: within 0.17 eps of the exact values, each row rebuilt to 0.44 eps of its
    own scale, U and Vh orthonormal to 0.62 eps."""
    eps = EPS[dtype]
    k, t = _pair(np.array(rows), dtype)
    a = _np(k)
    big = float(np.linalg.svd(a, compute_uv=False)[0])
    det = Fraction(a[0, 0]) * Fraction(a[1, 1]) - Fraction(a[0, 1]) * Fraction(a[1, 0])
    exact = np.array([big, float(abs(det) / Fraction(big))])
    np.testing.assert_allclose(_np(kael.linalg.svdvals(k)), exact, rtol=2 * eps, atol=0)
    _relatively_close(kael.linalg.svdvals(k), torch.linalg.svdvals(t), 4 * eps)
    U, S, Vh = kael.linalg.svd(k)
    u, s, vh = _np(U), _np(S), _np(Vh)
    np.testing.assert_allclose(s, exact, rtol=2 * eps, atol=0)
    _rows_close((u * s) @ vh, a, 4 * eps)
    _orthonormal_columns(u, 4 * eps)
    _orthonormal_columns(vh.T, 4 * eps)
    batch = kael.linalg.svdvals(kael.tensor(np.stack([a, a[::-1, ::-1]]), dtype=dtype))
    np.testing.assert_allclose(_np(batch), np.stack([exact, exact]), rtol=2 * eps, atol=0)


def _graded(n: int, spread: int, kind: str) -> np.ndarray:
    """D B in float32, D = logspace(0, -spread, n): B a random orthogonal matrix (the rows
    already orthogonal), or one plus 0.25 of a Gaussian over sqrt(n) (cond(B) <= 3, so the
    sweeps rotate every pair), its rows in order or permuted."""
    rng = np.random.default_rng(n + spread)
    q, _ = np.linalg.qr(rng.standard_normal((n, n)))
    b = q if kind == "orthogonal" else q + 0.25 * rng.standard_normal((n, n)) / n**0.5
    a = np.logspace(0, -spread, n)[:, None] * b
    return (a[rng.permutation(n)] if kind == "permuted" else a).astype(np.float32)


@pytest.mark.parametrize("kind", ["orthogonal", "mixed", "permuted"])
@pytest.mark.parametrize("spread", [3, 7])  # 3: right before too; 7: values 1 .. 1e-7
@pytest.mark.parametrize("n", [8, 40, 130])  # 130: preconditioned, swept in blocks
def test_graded_float32_matrices_keep_relative_accuracy(n, spread, kind):
    """Rows graded to 1e-7 (float32's eps): every singular value within 2 n eps of the
    float64 one, relative to itself. Measured (eps units, worst of the three kinds): 4.4,
    22, 39 for n = 8, 40, 130 (torch: 2869, 55931, 479615 on the permuted rows, 7, 17, 29
    in order); the floor of eps sqrt(n) |A| zeroed the small values of all spread-7 cases
    but n = 8 and 40 'orthogonal'. U S Vh rebuilds A to n eps |A| (measured 8.4 eps at
    most), U and Vh orthonormal to 2 n eps (measured 50 eps at most)."""
    eps = EPS[kael.float32]
    a = _graded(n, spread, kind)
    want = np.linalg.svd(a.astype(np.float64), compute_uv=False)
    k = kael.tensor(a)
    s = _np(kael.linalg.svdvals(k))
    np.testing.assert_allclose(s, want, rtol=2 * n * eps, atol=0)
    U, S, Vh = kael.linalg.svd(k)
    u, vh = _np(U), _np(Vh)
    np.testing.assert_array_equal(_np(S), s)
    np.testing.assert_allclose((u * s) @ vh, a, rtol=0, atol=n * eps * want[0])
    _orthonormal_columns(u, 2 * n * eps)
    _orthonormal_columns(vh.T, 2 * n * eps)


@pytest.mark.parametrize("shape", [(200, 140), (140, 200)], ids=str)
def test_a_rectangular_matrix_graded_on_its_short_side_by_its_triangular_factor(shape):
    """One large rectangular matrix is swept as R of M = Q R (M = A, or A^T when wide),
    whose row i is rounded to eps of M's columns from i on: graded columns of M (1 ..
    1e-7, float32) keep their singular values (measured 14 eps at most; torch 53 eps),
    where the floor of eps sqrt(n) |A| zeroed 33 of them."""
    eps, n = EPS[kael.float32], min(shape)
    rng = np.random.default_rng(17)
    grades = np.logspace(0, -7, n)
    a = rng.standard_normal(shape) * (grades[None, :] if shape[0] > shape[1] else grades[:, None])
    a = a.astype(np.float32)
    want = np.linalg.svd(a.astype(np.float64), compute_uv=False)
    k = kael.tensor(a)
    np.testing.assert_allclose(_np(kael.linalg.svdvals(k)), want, rtol=2 * n * eps, atol=0)
    np.testing.assert_allclose(
        _np(kael.linalg.svd(k, full_matrices=False).S), want, rtol=2 * n * eps, atol=0
    )


@pytest.mark.parametrize(
    ("shape", "rank"),
    [((4, 8, 8), 3), ((100, 100), 20), ((130, 130), 40), ((150, 130), 40), ((130, 150), 40)],
    ids=str,
)  # batched, one small matrix, the preconditioned square (P^T A) and rectangular (QR) ones
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_the_rounding_of_a_rank_deficient_matrix_is_zeroed(dtype, shape, rank):
    """Rows left by cancellation fall below eps sqrt(n) of their reference norms (carried
    through each rotation, or given by the preconditioner) and are zeroed: the sweeps
    spend nothing on rounding (kept, it took 12 sweeps instead of 2 at 512 x 512, rank
    100), and the singular values past the rank are exactly 0."""
    rng = np.random.default_rng(rank)
    *batch, m, n = shape
    a = rng.standard_normal((*batch, m, rank)) @ rng.standard_normal((*batch, rank, n))
    k, t = _pair(a, dtype)
    for s in (kael.linalg.svdvals(k), kael.linalg.svd(k, full_matrices=False).S):
        got = _np(s)
        assert (got[..., rank:] == 0).all() and (got[..., :rank] > 0).all()
        close_to_torch(s.narrow(-1, 0, rank), torch.linalg.svdvals(t)[..., :rank], 10 * TOL[dtype])


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("n", [8, 50, 120])
def test_a_small_svd_is_as_orthogonal_as_lapacks(n, dtype):
    """float32 matrices below the preconditioned order sweep in float64 (|U^T U - I| was
    7.9e-6 at 50 x 50, LAPACK's 7e-7; a least-squares fit 5x further off than torch's), and
    a Newton-Schulz step polishes U and V (float64 127 x 127: 148 eps, LAPACK's 10)."""
    a = np.random.default_rng(n).standard_normal((n, n)).astype(str(dtype))
    U, S, Vh = kael.linalg.svd(kael.tensor(a))
    Ut, St, Vht = torch.linalg.svd(torch.tensor(a))
    assert U.dtype is S.dtype is Vh.dtype is dtype
    eps = float(np.finfo(str(dtype)).eps)
    for u, eye in ((U.numpy(), np.eye(n)), (Vh.numpy().T, np.eye(n))):
        ours = np.abs(u.T.astype(np.float64) @ u - eye).max()
        theirs = np.abs(Ut.numpy().T.astype(np.float64) @ Ut.numpy() - eye).max()
        assert ours <= 2 * theirs + 2 * eps, (ours, theirs)
    rebuilt = (U.numpy().astype(np.float64) * S.numpy()) @ Vh.numpy()
    # float64 rebuilds A within ~4x LAPACK's rounding (the sweeps' own; 127 x 127: 236 eps)
    slack = 2 if dtype is kael.float32 else 6
    assert (
        np.abs(rebuilt - a).max() <= slack * np.abs((Ut * St) @ Vht - torch.tensor(a)).max().item()
    )


def test_a_float32_least_squares_fit_is_as_close_as_torchs():
    rng = np.random.default_rng(7)
    x = rng.standard_normal((500, 8)).astype(np.float32)
    beta = np.arange(1, 9, dtype=np.float64)
    y = (x.astype(np.float64) @ beta).astype(np.float32)[:, None]
    ours = kael.linalg.lstsq(kael.tensor(x), kael.tensor(y)).solution.numpy()[:, 0]
    theirs = torch.linalg.lstsq(torch.tensor(x), torch.tensor(y)).solution.numpy()[:, 0]
    assert np.abs(ours - beta).max() <= 2 * np.abs(theirs - beta).max()


@pytest.mark.parametrize("name", ["pinv", "matrix_rank"])
def test_hermitian_pinv_and_rank_refuse_non_square_matrices_but_take_empty_ones_as_torch(name):
    with pytest.raises(RuntimeError, match="square"):
        getattr(torch.linalg, name)(torch.ones(5, 3), hermitian=True)
    with pytest.raises(kael.ValueError, match="square matrices, but they are 5 by 3"):
        getattr(kael.linalg, name)(kael.ones(5, 3), hermitian=True)
    for shape in [(0, 3), (3, 0)]:
        got = getattr(kael.linalg, name)(kael.ones(shape), hermitian=True)
        assert got.shape == tuple(
            getattr(torch.linalg, name)(torch.ones(shape), hermitian=True).shape
        )


def test_pinv_takes_rcond_as_rtol_as_torch():
    a = np.random.default_rng(4).standard_normal((4, 3))
    a[:, 2] = a[:, 0] * 1e-3 + a[:, 1]
    got = kael.linalg.pinv(kael.tensor(a), rcond=0.1)
    close_to_torch(got, torch.linalg.pinv(torch.tensor(a), rcond=0.1), 1e-12)
    with pytest.raises(kael.ValueError, match="not both"):
        kael.linalg.pinv(kael.tensor(a), rcond=0.1, rtol=0.1)


def test_pinv_takes_rcond_by_position_as_torch_s_other_overload():
    a = np.random.default_rng(5).standard_normal((4, 3))
    got = kael.linalg.pinv(kael.tensor(a), 0.1)
    close_to_torch(got, torch.linalg.pinv(torch.tensor(a), 0.1), 1e-12)
