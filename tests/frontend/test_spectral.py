"""kael.linalg.eigh and eigvalsh against PyTorch (LAPACK): eigenvalues, eigenvectors up to
sign per column, V diag(w) V^T = A and V^T V = I (what matters when eigenvalues repeat),
only the UPLO triangle read, every layout, empty, special (identity, graded,
ill-conditioned, tiny and huge) and non-finite inputs, the typed errors, and one large
matrix's blocked path (panels, Q formed in blocks) on both sides of each of its limits."""

import numpy as np
import pytest
import torch

import kael
from kael.codegen.cpu import symmetric_eigen
from kael.frontend import spectral

FLOATS = [kael.float32, kael.float64]
NP = {kael.float32: np.float32, kael.float64: np.float64}
TOL = {kael.float32: 3e-5, kael.float64: 1e-12}  # relative to the matrix's norm, times n
# 33 and 70 end in a partial rotation strip (codegen STRIPS: 8 float64 columns, 32
# float32), 64 in whole ones
SHAPES = [(1, 1), (2, 2), (3, 3), (5, 5), (33, 33), (3, 4, 4), (2, 3, 6, 6), (64, 64), (70, 70)]


def symmetric(shape, dtype, seed: int = 0) -> np.ndarray:
    x = np.random.default_rng(seed).standard_normal(shape)
    return ((x + np.swapaxes(x, -1, -2)) / 2).astype(NP[dtype])


def tolerance(a: np.ndarray, dtype) -> float:
    n = a.shape[-1] if a.ndim else 1
    return TOL[dtype] * max(n, 4) * max(float(np.abs(a).max(initial=0.0)), np.finfo(a.dtype).tiny)


def check_decomposition(got, a: np.ndarray, dtype, uplo: str = "L") -> None:
    """Shapes and dtypes; V diag(w) V^T equals the symmetric matrix A's UPLO triangle
    gives; V orthonormal; eigenvalues ascending."""
    w, v = got
    n = a.shape[-1]
    assert w.shape == a.shape[:-1] and v.shape == a.shape
    assert w.dtype is dtype and v.dtype is dtype
    full = np.tril(a) if uplo == "L" else np.triu(a)
    full = (full + np.swapaxes(full, -1, -2)).astype(np.float64)
    full[..., range(n), range(n)] /= 2
    wn, vn = w.numpy().astype(np.float64), v.numpy().astype(np.float64)
    tol = tolerance(a, dtype)
    rebuilt = (vn * wn[..., None, :]) @ np.swapaxes(vn, -1, -2)
    np.testing.assert_allclose(rebuilt, full, rtol=0, atol=tol)
    eye = np.broadcast_to(np.eye(n), vn.shape)
    np.testing.assert_allclose(np.swapaxes(vn, -1, -2) @ vn, eye, rtol=0, atol=TOL[dtype] * n)
    assert np.all(np.diff(wn, axis=-1) >= 0)


def check_against_torch(got, want, a: np.ndarray, dtype) -> None:
    """Eigenvalues allclose to torch's; each eigenvector equal to torch's up to its sign
    (the matrices here have well separated eigenvalues)."""
    tol = tolerance(a, dtype)
    np.testing.assert_allclose(got[0].numpy(), want[0].numpy(), rtol=0, atol=tol)
    mine, theirs = got[1].numpy(), want[1].numpy()
    signs = np.sign(np.sum(mine * theirs, axis=-2, keepdims=True))
    vector_tol = 1e-8 if dtype is kael.float64 else 2e-3
    np.testing.assert_allclose(mine * signs, theirs, rtol=0, atol=vector_tol)


@pytest.mark.parametrize("dtype", FLOATS, ids=["f32", "f64"])
@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("uplo", ["L", "U"])
def test_eigh_matches_torch(shape, dtype, uplo):
    a = symmetric(shape, dtype, seed=len(shape) + shape[-1])
    got = kael.linalg.eigh(kael.tensor(a), UPLO=uplo)
    want = torch.linalg.eigh(torch.tensor(a), UPLO=uplo)
    assert type(got).__name__ == "Eigh" and got._fields == ("eigenvalues", "eigenvectors")
    check_decomposition(got, a, dtype, uplo)
    check_against_torch(got, want, a, dtype)
    values = kael.linalg.eigvalsh(kael.tensor(a), UPLO=uplo)
    np.testing.assert_allclose(values.numpy(), want.eigenvalues.numpy(), atol=tolerance(a, dtype))


@pytest.mark.parametrize("dtype", FLOATS, ids=["f32", "f64"])
@pytest.mark.parametrize("uplo", ["L", "U", "l", "u"])
@pytest.mark.parametrize("n", [7, 19])  # prepare's strips of 8 rows: none; two and 3 rows
def test_only_the_uplo_triangle_is_read(dtype, uplo, n):
    a = symmetric((2, n, n), dtype, seed=3)
    garbage = np.full_like(a, 1e30)
    garbage[..., 0, 1] = garbage[..., 9 % n, 17 % n] = np.nan
    ones = np.ones((n, n), bool)
    keep = np.tril(ones) if uplo in "Ll" else np.triu(ones)
    mixed = np.where(keep, a, garbage)
    got = kael.linalg.eigh(kael.tensor(mixed), UPLO=uplo)
    check_decomposition(got, a, dtype)
    check_against_torch(got, torch.linalg.eigh(torch.tensor(a)), a, dtype)
    values = kael.linalg.eigvalsh(kael.tensor(mixed), uplo)
    np.testing.assert_allclose(values.numpy(), got.eigenvalues.numpy(), atol=tolerance(a, dtype))


def test_the_triangles_differ_when_the_matrix_is_not_symmetric():
    a = np.random.default_rng(4).standard_normal((6, 6))
    for uplo in "LU":
        got = kael.linalg.eigh(kael.tensor(a), UPLO=uplo)
        want = torch.linalg.eigh(torch.tensor(a), UPLO=uplo)
        check_against_torch(got, want, a, kael.float64)


LAYOUTS = {
    "transposed": lambda x: x.mT,
    "sliced": lambda x: x[..., ::2, 1::2],
    "expanded": lambda x: x[0].expand(3, *x.shape[1:]),
    "batch-permuted": lambda x: x.permute(1, 0, 2, 3)[..., :5, :5],
}


@pytest.mark.parametrize("layout", LAYOUTS, ids=str)
def test_any_layout(layout):
    a = np.random.default_rng(5).standard_normal((2, 3, 10, 10))
    view = LAYOUTS[layout]
    got = kael.linalg.eigh(view(kael.tensor(a)))
    want = torch.linalg.eigh(view(torch.tensor(a)))
    check_against_torch(got, want, view(torch.tensor(a)).numpy(), kael.float64)
    values = kael.linalg.eigvalsh(view(kael.tensor(a)), UPLO="U")
    want = torch.linalg.eigvalsh(view(torch.tensor(a)), UPLO="U")
    np.testing.assert_allclose(values.numpy(), want.numpy(), atol=1e-12)


def test_the_eigenvectors_have_torchs_column_major_strides():
    a = symmetric((2, 5, 5), kael.float64)
    got = kael.linalg.eigh(kael.tensor(a))
    want = torch.linalg.eigh(torch.tensor(a))
    assert got.eigenvectors.strides() == want.eigenvectors.stride()
    assert got.eigenvalues.strides() == want.eigenvalues.stride()


@pytest.mark.parametrize("shape", [(0, 0), (2, 0, 0), (0, 3, 3), (3, 0, 2, 2)], ids=str)
@pytest.mark.parametrize("dtype", FLOATS, ids=["f32", "f64"])
def test_empty(shape, dtype):
    a = np.zeros(shape, NP[dtype])
    got = kael.linalg.eigh(kael.tensor(a))
    want = torch.linalg.eigh(torch.tensor(a))
    assert got.eigenvalues.shape == tuple(want.eigenvalues.shape)
    assert got.eigenvectors.shape == tuple(want.eigenvectors.shape)
    assert got.eigenvalues.dtype is dtype
    assert kael.linalg.eigvalsh(kael.tensor(a)).shape == tuple(want.eigenvalues.shape)


# ---- special matrices -------------------------------------------------------------------


@pytest.mark.parametrize("dtype", FLOATS, ids=["f32", "f64"])
def test_diagonal_and_identity(dtype):
    d = np.array([3.0, -1.0, 2.0, 0.0, -5.0], NP[dtype])
    got = kael.linalg.eigh(kael.tensor(np.diag(d)))
    np.testing.assert_array_equal(got.eigenvalues.numpy(), np.sort(d))
    np.testing.assert_array_equal(np.abs(got.eigenvectors.numpy()), np.eye(5)[:, np.argsort(d)])
    eye = np.eye(6, dtype=NP[dtype])
    got = kael.linalg.eigh(kael.tensor(eye))
    np.testing.assert_array_equal(got.eigenvalues.numpy(), np.ones(6))
    check_decomposition(got, eye, dtype)


@pytest.mark.parametrize("dtype", FLOATS, ids=["f32", "f64"])
def test_repeated_eigenvalues(dtype):
    rng = np.random.default_rng(6)
    q, _ = np.linalg.qr(rng.standard_normal((9, 9)))
    w = np.array([-2, 1, 1, 1, 1, 3, 3, 7, 7], np.float64)
    a = ((q * w) @ q.T).astype(NP[dtype])
    got = kael.linalg.eigh(kael.tensor(a))
    np.testing.assert_allclose(got.eigenvalues.numpy(), w, atol=tolerance(a, dtype))
    check_decomposition(got, a, dtype)
    ones = np.ones((8, 8), NP[dtype])  # rank one: seven zeros and 8
    got = kael.linalg.eigh(kael.tensor(ones))
    np.testing.assert_allclose(got.eigenvalues.numpy(), [0] * 7 + [8], atol=tolerance(ones, dtype))
    check_decomposition(got, ones, dtype)


def test_ill_conditioned_and_graded():
    n = 12
    hilbert = 1.0 / (np.arange(n)[:, None] + np.arange(n)[None, :] + 1.0)
    grades = 10.0 ** np.arange(-6, 6)
    graded = symmetric((n, n), kael.float64, seed=7) * np.sqrt(np.outer(grades, grades))
    wilkinson = np.diag(np.abs(np.arange(-10, 11)).astype(float)) + np.diag(np.ones(20), 1)
    wilkinson += np.diag(np.ones(20), -1)  # W21+: pairs of eigenvalues equal to 1e-14
    for a in (hilbert, graded, wilkinson, graded[::-1, ::-1].copy()):
        got = kael.linalg.eigh(kael.tensor(a))
        want = torch.linalg.eigh(torch.tensor(a))
        np.testing.assert_allclose(
            got[0].numpy(), want[0].numpy(), rtol=0, atol=tolerance(a, kael.float64)
        )
        check_decomposition(got, a, kael.float64)
    # Hilbert's smallest eigenvalues, far below its norm, still to torch's absolute accuracy
    np.testing.assert_allclose(
        kael.linalg.eigvalsh(kael.tensor(hilbert)).numpy(),
        torch.linalg.eigvalsh(torch.tensor(hilbert)).numpy(),
        rtol=0,
        atol=2e-14,
    )


@pytest.mark.parametrize(
    "dtype,scale",
    [
        (kael.float64, 1e-300),
        (kael.float64, 1e300),
        (kael.float64, 1e-160),
        (kael.float32, 1e-35),
        (kael.float32, 1e35),
        (kael.float32, 1e-20),
    ],  # fmt: skip
    ids=str,
)
def test_tiny_and_huge_scales_do_not_under_or_overflow(dtype, scale):
    base = symmetric((8, 8), kael.float64, seed=8)
    a = (base * scale).astype(NP[dtype])
    got = kael.linalg.eigh(kael.tensor(a))
    assert np.all(np.isfinite(got.eigenvalues.numpy()))
    want = np.linalg.eigvalsh(base)  # the unscaled problem's answer, scaled: a reference only
    rel = 1e-12 if dtype is kael.float64 else 2e-5
    np.testing.assert_allclose(got.eigenvalues.numpy() / scale, want, rtol=0, atol=rel * 40)
    vectors = got.eigenvectors.numpy().astype(np.float64)
    np.testing.assert_allclose(vectors.T @ vectors, np.eye(8), atol=rel * 40)


# ---- non-finite inputs ------------------------------------------------------------------


@pytest.mark.parametrize("fn", ["eigh", "eigvalsh"])
def test_nan_fails_to_converge_as_torch_does(fn):
    a = symmetric((3, 4, 4), kael.float64, seed=9)
    a[1, 2, 1] = np.nan
    with pytest.raises(torch.linalg.LinAlgError, match="failed to converge") as theirs:
        getattr(torch.linalg, fn)(torch.tensor(a))
    with pytest.raises(kael.linalg.LinAlgError) as mine:
        getattr(kael.linalg, fn)(kael.tensor(a))
    prefix = str(theirs.value).split("(error code")[0]
    assert str(mine.value).startswith(prefix), (str(mine.value), prefix)
    assert "error code: 3" in str(mine.value)
    single = a[1]
    with pytest.raises(kael.linalg.LinAlgError, match=r"^linalg.eigh: The algorithm failed"):
        getattr(kael.linalg, fn)(kael.tensor(single))


def test_nan_outside_the_triangle_is_not_read():
    a = symmetric((4, 4), kael.float64, seed=10)
    a[0, 3] = np.nan
    got = kael.linalg.eigh(kael.tensor(a), UPLO="L")
    check_against_torch(got, torch.linalg.eigh(torch.tensor(a)), np.tril(a) + np.tril(a, -1).T,
                        kael.float64)  # fmt: skip


@pytest.mark.parametrize("value", [np.inf, -np.inf])
def test_infinity_gives_nan_eigenvalues_as_torch(value):
    a = symmetric((2, 4, 4), kael.float64, seed=11)
    a[1, 2, 1] = value
    want = torch.linalg.eigh(torch.tensor(a))
    got = kael.linalg.eigh(kael.tensor(a))
    np.testing.assert_array_equal(
        np.isnan(got.eigenvalues.numpy()), np.isnan(want.eigenvalues.numpy())
    )
    np.testing.assert_allclose(got.eigenvalues.numpy()[0], want.eigenvalues.numpy()[0], atol=1e-12)
    assert np.all(np.isnan(got.eigenvectors.numpy()[1]))
    values = kael.linalg.eigvalsh(kael.tensor(a))
    assert np.all(np.isnan(values.numpy()[1])) and np.all(np.isfinite(values.numpy()[0]))


# ---- one large matrix: the blocked reduction (panels and matrix products) ---------------

BLOCKED = spectral.BLOCKED  # the first order reduced in panels
DIVIDED = spectral.DIVIDE  # the first order whose vectors come by divide and conquer
REFLECTED = 4 * spectral.FORM_BLOCK + 1  # n - 1 reflectors, a whole number of blocks
# both sides of: the blocked path, its second panel, divide and conquer, and the blocks of
# reflectors applied to its vectors (a whole number of FORM_BLOCK blocks, and one past it)
LARGE = sorted(
    {BLOCKED - 1, BLOCKED, BLOCKED + 1, BLOCKED + spectral.PANEL - 1, BLOCKED + spectral.PANEL,
     DIVIDED - 1, DIVIDED, REFLECTED, REFLECTED + 1}
)  # fmt: skip


@pytest.mark.parametrize("dtype", FLOATS, ids=["f32", "f64"])
@pytest.mark.parametrize("n", LARGE)
def test_blocked_reduction_matches_torch_on_both_sides_of_each_block(n, dtype):
    a = symmetric((n, n), dtype, seed=n)
    got = kael.linalg.eigh(kael.tensor(a))
    want = torch.linalg.eigh(torch.tensor(a))
    check_decomposition(got, a, dtype)
    check_against_torch(got, want, a, dtype)
    values = kael.linalg.eigvalsh(kael.tensor(a))
    np.testing.assert_allclose(values.numpy(), want.eigenvalues.numpy(), atol=tolerance(a, dtype))


@pytest.mark.parametrize("dtype", FLOATS, ids=["f32", "f64"])
def test_blocked_reduction_gives_the_same_bits_on_one_thread_and_two(dtype):
    """A panel's A v shared by two work items (codegen/cpu/team.py) adds the same terms in
    the same order whichever item does the helper's share."""
    a = kael.tensor(symmetric((BLOCKED + 2 * spectral.PANEL + 5,) * 2, dtype, seed=21))
    results = []
    saved = kael.get_num_threads()
    try:
        for threads in (1, 2, 2):
            kael.set_num_threads(threads)
            got = kael.linalg.eigh(a)
            results.append([x.numpy().copy() for x in (got.eigenvalues, got.eigenvectors)])
    finally:
        kael.set_num_threads(saved)
    for other in results[1:]:
        for mine, theirs in zip(results[0], other, strict=True):
            np.testing.assert_array_equal(mine, theirs)


@pytest.mark.parametrize("dtype,scale", [(kael.float32, 1e-36), (kael.float64, 1e-306)])
def test_eigh_of_a_matrix_with_a_tiny_block_converges_as_torch(dtype, scale):
    """The review's case: divide and conquer's leaves of a block 1e-36 (float32) below the
    rest raised LinAlgError (no convergence) where torch returns the eigenpairs."""
    rng = np.random.default_rng(1)
    n = DIVIDED
    d, e = rng.standard_normal(n), rng.standard_normal(n - 1)
    d[32:] *= scale
    e[31:] *= scale
    a = (np.diag(d) + np.diag(e, 1) + np.diag(e, -1)).astype(NP[dtype])
    got = kael.linalg.eigh(kael.tensor(a))
    check_decomposition(got, a, dtype)
    check_against_torch(got, torch.linalg.eigh(torch.tensor(a)), a, dtype)


@pytest.mark.parametrize("uplo", ["L", "U"])
def test_blocked_reduction_reads_only_the_uplo_triangle_of_a_transposed_view(uplo):
    n = BLOCKED + 3
    a = symmetric((n, n), kael.float64, seed=13)
    keep = np.tril(np.ones((n, n), bool)) if uplo == "L" else np.triu(np.ones((n, n), bool))
    garbled = np.where(keep, a, 1e30).T.copy()
    got = kael.linalg.eigh(kael.tensor(garbled).mT, UPLO=uplo)
    want = torch.linalg.eigh(torch.tensor(garbled).mT, UPLO=uplo)
    check_against_torch(got, want, a, kael.float64)


@pytest.mark.parametrize("count", [1, 2])
def test_a_batch_of_large_matrices_matches_torch(count):
    a = symmetric((count, BLOCKED + 1, BLOCKED + 1), kael.float64, seed=14)
    got = kael.linalg.eigh(kael.tensor(a))
    check_against_torch(got, torch.linalg.eigh(torch.tensor(a)), a, kael.float64)


@pytest.mark.parametrize("n", [9, BLOCKED + 1, REFLECTED])
def test_a_rotation_log_too_short_is_retried_with_room_for_every_sweep(n, monkeypatch):
    full = symmetric_eigen.capacities(n)[1]
    monkeypatch.setattr(symmetric_eigen, "capacities", lambda n: (1, full))
    a = symmetric((n, n), kael.float64, seed=17)
    got = kael.linalg.eigh(kael.tensor(a))
    check_against_torch(got, torch.linalg.eigh(torch.tensor(a)), a, kael.float64)


def test_blocked_eigh_under_compile_matches_torch():
    a = symmetric((BLOCKED + 1, BLOCKED + 1), kael.float64, seed=18)

    @kael.compile
    def f(x):
        return kael.linalg.eigh(x)

    check_against_torch(f(kael.tensor(a)), torch.linalg.eigh(torch.tensor(a)), a, kael.float64)


@pytest.mark.parametrize("dtype,scale", [(kael.float64, 1e-300), (kael.float64, 1e300),
                                         (kael.float32, 1e-35), (kael.float32, 1e35)], ids=str)  # fmt: skip
def test_blocked_reduction_of_tiny_and_huge_matrices_is_scaled(dtype, scale):
    n = BLOCKED + 1
    base = symmetric((n, n), kael.float64, seed=15)
    got = kael.linalg.eigh(kael.tensor((base * scale).astype(NP[dtype])))
    want = torch.linalg.eigh(torch.tensor(base.astype(NP[dtype])))
    rel = 1e-12 if dtype is kael.float64 else 2e-5
    np.testing.assert_allclose(
        got.eigenvalues.numpy() / scale, want.eigenvalues.numpy(), rtol=0, atol=rel * n
    )
    vectors = got.eigenvectors.numpy().astype(np.float64)
    np.testing.assert_allclose(vectors.T @ vectors, np.eye(n), atol=rel * n)
    residual = base @ vectors - vectors * (got.eigenvalues.numpy().astype(np.float64) / scale)
    np.testing.assert_allclose(residual, 0, atol=rel * n * np.abs(base).max())


@pytest.mark.parametrize("n", [BLOCKED + 1, REFLECTED])
@pytest.mark.parametrize("value", [np.inf, -np.inf])
def test_blocked_reduction_of_an_infinite_matrix_gives_nan_as_torch(value, n):
    a = symmetric((n, n), kael.float64, seed=16)
    a[n - 1, 2] = value
    want = torch.linalg.eigh(torch.tensor(a))
    got = kael.linalg.eigh(kael.tensor(a))
    np.testing.assert_array_equal(np.isnan(got[0].numpy()), np.isnan(want[0].numpy()))
    assert np.all(np.isnan(got[1].numpy()))  # torch's LAPACK leaves a column finite
    values = kael.linalg.eigvalsh(kael.tensor(a)).numpy()
    np.testing.assert_array_equal(np.isnan(values), np.isnan(want.eigenvalues.numpy()))


# ---- out=, compile, cuda ----------------------------------------------------------------


def test_out():
    a = symmetric((2, 5, 5), kael.float64, seed=12)
    w, v = kael.empty(2, 5, dtype=kael.float64), kael.empty(2, 5, 5, dtype=kael.float64)
    got = kael.linalg.eigh(kael.tensor(a), out=(w, v))
    assert got.eigenvalues is w and got.eigenvectors is v
    check_decomposition((w, v), a, kael.float64)
    values = kael.empty(2, 5, dtype=kael.float64)
    assert kael.linalg.eigvalsh(kael.tensor(a), out=values) is values
    np.testing.assert_allclose(values.numpy(), w.numpy(), atol=1e-14)
    resized = kael.empty(0, dtype=kael.float64)  # resized to [2, 5], as torch's
    assert kael.linalg.eigvalsh(kael.tensor(a), out=resized) is resized
    assert resized.shape == (2, 5)


def test_eigh_under_compile_matches_eager():
    a = kael.tensor(symmetric((3, 6, 6), kael.float64, seed=13))

    @kael.compile
    def f(x):
        w, v = kael.linalg.eigh(x * 2.0)
        return (v * w.unsqueeze(-2)) @ v.mT, kael.linalg.eigvalsh(x)

    rebuilt, values = f(a)
    np.testing.assert_allclose(rebuilt.numpy(), (a * 2.0).numpy(), atol=1e-12)
    np.testing.assert_allclose(values.numpy(), kael.linalg.eigh(a).eigenvalues.numpy(), atol=1e-14)


@pytest.mark.gpu
def test_eigh_of_a_cuda_tensor_is_the_hosts():
    a = kael.tensor(symmetric((2, 6, 6), kael.float64, seed=14))
    w, v = kael.linalg.eigh(a.to("cuda"), UPLO="U")
    want_w, want_v = kael.linalg.eigh(a, UPLO="U")
    assert str(w.device) == "cuda:0" and str(v.device) == "cuda:0"
    np.testing.assert_array_equal(w.cpu().numpy(), want_w.numpy())
    np.testing.assert_array_equal(v.cpu().numpy(), want_v.numpy())
    values = kael.linalg.eigvalsh(a.to("cuda"))
    assert str(values.device) == "cuda:0"
    np.testing.assert_array_equal(values.cpu().numpy(), kael.linalg.eigvalsh(a).numpy())


# ---- errors -----------------------------------------------------------------------------


@pytest.mark.parametrize("fn", ["eigh", "eigvalsh"])
def test_errors(fn):
    op = getattr(kael.linalg, fn)
    name = f"linalg.{fn}"
    with pytest.raises(
        kael.ValueError,
        match=f"{name}: A must be batches of square matrices, but they are 3 by 4 matrices",
    ):
        op(kael.zeros(3, 4, dtype=kael.float64))
    with pytest.raises(
        kael.ValueError, match=f"{name}: The input tensor A must have at least 2 dimensions"
    ):
        op(kael.zeros(4, dtype=kael.float64))
    with pytest.raises(
        kael.ValueError, match=f"{name}: Expected UPLO argument to be 'L' or 'U', but got X"
    ):
        op(kael.zeros(3, 3, dtype=kael.float64), UPLO="X")
    with pytest.raises(kael.ValueError, match="but got LU"):
        op(kael.zeros(3, 3, dtype=kael.float64), "LU")
    with pytest.raises(kael.TypeError, match=f"{name}\\(\\): argument 'UPLO' must be str, not int"):
        op(kael.zeros(3, 3, dtype=kael.float64), UPLO=1)
    for dtype in (kael.int64, kael.int32, kael.bool):
        with pytest.raises(
            kael.TypeError, match=f"{name}: Expected a floating point tensor as input. Got {dtype}"
        ):
            op(kael.zeros(3, 3, dtype=dtype))
    for dtype in (kael.float16, kael.bfloat16):
        with pytest.raises(
            kael.TypeError, match=f"{name}: Low precision dtypes not supported. Got {dtype}"
        ):
            op(kael.zeros(3, 3, dtype=dtype))
    with pytest.raises(kael.TypeError, match=f"{name}\\(\\): A must be a Tensor, got list"):
        op([[1.0]])


def test_no_torch_level_names():
    assert not hasattr(kael, "symeig") and not hasattr(kael.Tensor, "eigh")


def test_a_kept_back_transformation_runs_on_other_matrices_of_its_layout():
    """The reflectors' blocks applied to the tridiagonal's vectors are a program kept by
    layout (codegen/cpu/program.py): other matrices' memory, the same vectors as torch's."""
    from kael.codegen.cpu import program

    rng = np.random.default_rng(12)
    program.clear()
    for _ in range(3):
        a = rng.standard_normal((300, 300))
        a = a + a.T
        got, want = kael.linalg.eigh(kael.tensor(a)), torch.linalg.eigh(torch.tensor(a))
        np.testing.assert_allclose(got.eigenvalues.numpy(), want.eigenvalues.numpy(), atol=1e-10)
        products = got.eigenvectors.numpy().T @ want.eigenvectors.numpy()
        np.testing.assert_allclose(np.abs(np.diagonal(products)), 1, atol=1e-9)
    assert list(program.kept())
