"""kael.linalg.eig and eigvals against PyTorch (LAPACK's dgeev): eigenvalues as multisets
(the Schur form's order may differ), eigenvectors by their residual and dgeev's
normalization (unit norm, largest component real), over random, symmetric, rotation,
triangular, repeated-diagonal, companion, cyclic and defective matrices, matrices of
huge, tiny or subnormal entries or graded by D = diag(10^-80 .. 10^80) (against numpy),
batches, both float dtypes, non-contiguous input, empty shapes, out=, and the typed
errors."""

import numpy as np
import pytest
import torch

import kael
from kael.codegen.cpu import nonsymmetric_eigen

FLOATS = [kael.float32, kael.float64]
NP = {kael.float32: np.float32, kael.float64: np.float64}
COMPLEX = {kael.float32: kael.complex64, kael.float64: kael.complex128}
EPS = {kael.float32: 2.0**-23, kael.float64: 2.0**-52}
SUBNORMAL = {kael.float32: 2.0**-149, kael.float64: 2.0**-1074}  # the least positive value


def _companion(roots) -> np.ndarray:
    """The companion matrix of prod (x - r): its eigenvalues are the roots."""
    coefficients = np.poly(roots).real
    n = len(roots)
    c = np.zeros((n, n))
    c[0, :] = -coefficients[1:]
    c[1:, :-1] = np.eye(n - 1)
    return c


def _rotation(angles) -> np.ndarray:
    """Block diagonal 2 x 2 rotations scaled by 1, 2, ...: pairs r e^(+-i angle)."""
    n = 2 * len(angles)
    a = np.zeros((n, n))
    for k, t in enumerate(angles):
        a[2 * k : 2 * k + 2, 2 * k : 2 * k + 2] = (k + 1) * np.array(
            [[np.cos(t), -np.sin(t)], [np.sin(t), np.cos(t)]]
        )
    q = np.linalg.qr(np.random.default_rng(7).standard_normal((n, n)))[0]
    return q @ a @ q.T


def _random(shape, seed=0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape)


def _graded(a: np.ndarray) -> np.ndarray:
    """D A D^-1 for D = diag(1e-6, 1e-4, ..., 1e4): A's eigenvalues, badly scaled."""
    scales = 10.0 ** np.arange(-6, 6, 2)
    return a * scales[:, None] / scales[None, :]


def _isolated() -> np.ndarray:
    """A row and a column with only their diagonal entry: eigenvalues 5 and -3 that
    balancing moves out of the block."""
    b = _random((6, 6), 17)
    b[2, :], b[:, 4] = 0.0, 0.0
    b[2, 2], b[4, 4] = 5.0, -3.0
    return b


MATRICES = {
    "1x1": lambda: np.array([[-2.5]]),
    "2x2": lambda: _random((2, 2), 1),
    "2x2_complex_pair": lambda: np.array([[1.0, -2.0], [3.0, 1.0]]),
    "random_3": lambda: _random((3, 3), 2),
    "random_9": lambda: _random((9, 9), 3),
    "random_40": lambda: _random((40, 40), 4),
    "batched": lambda: _random((3, 6, 6), 5),
    "batched_2d": lambda: _random((2, 2, 4, 4), 6),
    "batched_over_threads": lambda: _random((8, 24, 24), 18),
    "symmetric": lambda: (lambda x: x + x.T)(_random((7, 7), 8)),
    "rotations": lambda: _rotation([0.3, 1.2, 2.9]),
    "upper_triangular": lambda: np.triu(_random((6, 6), 9)),
    "lower_triangular": lambda: np.tril(_random((6, 6), 10)),
    "repeated_diagonal": lambda: np.diag([3.0, 1.0, 3.0, -2.0, 1.0, 3.0]),
    "companion": lambda: _companion([1.0, 2.0, 3.0, 4.0, 5.0]),
    "companion_complex": lambda: _companion([1 + 2j, 1 - 2j, -1.0, 0.5j, -0.5j]),
    "permuted_triangular": lambda: (lambda p: p @ np.triu(_random((6, 6), 15)) @ p.T)(
        np.eye(6)[[3, 0, 5, 1, 4, 2]]
    ),
    "isolated_row_and_column": lambda: _isolated(),
    "badly_scaled": lambda: _graded(_random((6, 6), 16)),
    "cyclic_permutation": lambda: np.roll(np.eye(5), 1, axis=0),
    "zeros": lambda: np.zeros((4, 4)),
}


def tolerance(a: np.ndarray, dtype, floor: float = 1.0) -> float:
    """A few eps * max(||A||, floor) * n, plus a few subnormal steps per entry of a row
    (what rounding a result into the subnormal range costs)."""
    n = a.shape[-1]
    size = max(float(np.abs(a).max(initial=0.0)), floor)
    return 8 * EPS[dtype] * max(n, 4) * size + 4 * n * SUBNORMAL[dtype]


def _torch_eig(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return tuple(t.numpy() for t in torch.linalg.eig(torch.tensor(a)))


def reference(
    a: np.ndarray, dtype, floor: float = 1.0, eig=_torch_eig
) -> tuple[np.ndarray, np.ndarray]:
    """eig's (torch's by default) eigenvalues of a's values in float64 (a float32 result
    is compared with the exact ones, as near as float64 gets: torch's float32 ones err as
    much as kael's) and each one's tolerance: tolerance(a) times its condition number
    ||x|| ||y|| / |y^H x| (x, y: right and left eigenvectors; y^H the rows of V^-1), so
    close or clustered eigenvalues (companion matrices, near-double pairs) get the room
    their perturbation theory gives."""
    w, v = eig(a.astype(np.float64))
    condition = np.linalg.norm(np.linalg.inv(v), axis=-1)
    return w, tolerance(a, dtype, floor) * condition


def assert_same_multiset(got: np.ndarray, want: np.ndarray, tol) -> None:
    """Each matrix's eigenvalues (last dim) match torch's one to one, each to its nearest
    unmatched one within tol (a number, or one per eigenvalue of `want`)."""
    n = want.shape[-1]
    tols = np.broadcast_to(tol, want.shape).reshape(-1, n)
    for mine, theirs, room in zip(got.reshape(-1, n), want.reshape(-1, n), tols):
        free = list(zip(theirs, room))
        for value in sorted(mine, key=lambda z: (round(z.real, 6), z.imag)):
            nearest = min(range(len(free)), key=lambda k: abs(free[k][0] - value))
            assert abs(free[nearest][0] - value) <= free[nearest][1], (value, free[nearest])
            free.pop(nearest)


def check_vectors(
    a: np.ndarray, w: np.ndarray, v: np.ndarray, dtype, residual: float, floor: float = 1.0
) -> None:
    """||A v - lambda v|| / (max(||A||, floor) ||v||) small, ||v|| = 1 and v's largest
    component real for every column; a complex pair's vectors conjugate, its positive
    imaginary part first."""
    n = a.shape[-1]
    a64, w64, v64 = a.astype(np.float64), w.astype(np.complex128), v.astype(np.complex128)
    norm_a = max(np.abs(a64).max(initial=0.0), floor)
    r = a64 @ v64 - v64 * w64[..., None, :]
    room = residual * norm_a * max(n, 4) + 4 * n * SUBNORMAL[dtype]
    assert np.abs(r).max(initial=0.0) <= room
    np.testing.assert_allclose(np.linalg.norm(v64, axis=-2), 1.0, atol=8 * n * EPS[dtype])
    largest = np.take_along_axis(v, np.abs(v).argmax(axis=-2)[..., None, :], axis=-2)
    assert np.all(largest.imag == 0)
    flat_w, flat_v = w.reshape(-1, n), v.reshape(-1, n, n)
    for values, vectors in zip(flat_w, flat_v):
        j = 0
        while j < n:
            if values[j].imag != 0:
                assert values[j].imag > 0 and values[j + 1] == np.conj(values[j])
                np.testing.assert_array_equal(vectors[:, j + 1], np.conj(vectors[:, j]))
                j += 1
            j += 1


@pytest.mark.parametrize("dtype", FLOATS, ids=["f32", "f64"])
@pytest.mark.parametrize("kind", MATRICES)
def test_eigvals_match_torch_as_multisets(kind, dtype):
    a = MATRICES[kind]().astype(NP[dtype])
    got = kael.linalg.eigvals(kael.tensor(a))
    want = torch.linalg.eigvals(torch.tensor(a))
    assert got.dtype is COMPLEX[dtype] and tuple(got.shape) == tuple(want.shape)
    assert_same_multiset(got.numpy(), *reference(a, dtype))


@pytest.mark.parametrize("dtype", FLOATS, ids=["f32", "f64"])
@pytest.mark.parametrize("kind", MATRICES)
def test_eig_vectors_have_small_residual_and_dgeev_normalization(kind, dtype):
    a = MATRICES[kind]().astype(NP[dtype])
    w, v = kael.linalg.eig(kael.tensor(a))
    want = torch.linalg.eig(torch.tensor(a))
    assert type(w) is kael.Tensor and w.dtype is v.dtype is COMPLEX[dtype]
    assert tuple(w.shape) == tuple(want.eigenvalues.shape)
    assert tuple(v.shape) == tuple(want.eigenvectors.shape)
    assert_same_multiset(w.numpy(), *reference(a, dtype))
    check_vectors(a, w.numpy(), v.numpy(), dtype, residual=8 * EPS[dtype])
    assert_same_multiset(kael.linalg.eigvals(kael.tensor(a)).numpy(), *reference(a, dtype))


@pytest.mark.parametrize("dtype", FLOATS, ids=["f32", "f64"])
def test_defective_jordan_block_eigenvalues_within_its_conditioning(dtype):
    a = (2.0 * np.eye(4) + np.diag(np.ones(3), 1) + np.diag([EPS[dtype]], -3)).astype(NP[dtype])
    w, v = kael.linalg.eig(kael.tensor(a))
    # a perturbation of eps moves the eigenvalues of a 4 x 4 Jordan block by eps^(1/4)
    np.testing.assert_allclose(w.numpy(), 2.0, atol=4 * EPS[dtype] ** 0.25)
    exact = torch.linalg.eigvals(torch.tensor(a.astype(np.float64))).numpy()
    assert_same_multiset(w.numpy(), exact, 2 * EPS[dtype] ** 0.25)
    check_vectors(a, w.numpy(), v.numpy(), dtype, residual=8 * EPS[dtype])


@pytest.mark.parametrize("dtype", FLOATS, ids=["f32", "f64"])
@pytest.mark.parametrize("kind", ["upper_triangular", "lower_triangular", "permuted_triangular"])
def test_triangular_eigenvalues_are_its_diagonal_exactly(kind, dtype):
    a = MATRICES[kind]().astype(NP[dtype])
    # balancing isolates every eigenvalue of a permuted triangular matrix, as LAPACK's
    got = kael.linalg.eigvals(kael.tensor(a)).numpy()
    np.testing.assert_array_equal(np.sort(got.real), np.sort(np.diagonal(a)))
    np.testing.assert_array_equal(got.imag, 0)


# (name, well-scaled B, D's exponents or None, c): A = c D B D^-1 has B's eigenvalues
# times c, but entries far from 1 (near or past where products overflow or underflow)
SCALED = {
    "wide_off_diagonal": (np.ones((2, 2)), (100.0, -100.0), 1.0),  # [[1, 1e200], [1e-200, 1]]
    "tiny_entries": (np.array([[3.0, 1.0], [2.0, 1.0]]), None, 1e-200),
    "graded_1e80": (_random((11, 11), 19), tuple(np.linspace(-80.0, 80.0, 11)), 1.0),
    "times_1e160": (_random((5, 5), 0), None, 1e160),
    "times_1e-200": (_random((5, 5), 0), None, 1e-200),
    "times_1e-300": (_random((5, 5), 0), None, 1e-300),
    "times_1e-310_subnormal": (_random((5, 5), 0), None, 1e-310),
    "f32_times_1e20": (_random((5, 5), 0), None, 1e20),
    "f32_times_1e-20": (_random((5, 5), 0), None, 1e-20),
    "f32_times_1e-40_subnormal": (_random((5, 5), 0), None, 1e-40),
}


def _scaled(kind: str) -> tuple[np.ndarray, np.ndarray, float, object]:
    """SCALED[kind]'s (A, B, c, dtype)."""
    b, exponents, c = SCALED[kind]
    dtype = kael.float32 if kind.startswith("f32") else kael.float64
    a = b if exponents is None else b * 10.0 ** (np.subtract.outer(exponents, exponents))
    return (c * a).astype(NP[dtype]), b, c, dtype


@pytest.mark.parametrize("kind", SCALED)
def test_badly_scaled_eigenvalues_match_numpy_within_the_balanced_conditioning(kind):
    # the error dgeev makes: eps ||c B|| times B's condition (D's grading and the scale c
    # cost nothing: balancing and dgeev's scaling undo them)
    a, b, c, dtype = _scaled(kind)
    for got in (kael.linalg.eigvals(kael.tensor(a)), kael.linalg.eig(kael.tensor(a))[0]):
        assert got.dtype is COMPLEX[dtype] and tuple(got.shape) == (a.shape[-1],)
        want = np.linalg.eigvals(a.astype(np.float64))
        _, room = reference(c * b, dtype, floor=0.0, eig=np.linalg.eig)
        assert_same_multiset(got.numpy(), want, room)


@pytest.mark.parametrize("kind", SCALED)
def test_badly_scaled_eigenvectors_have_small_residual(kind):
    a, _, _, dtype = _scaled(kind)
    w, v = kael.linalg.eig(kael.tensor(a))
    check_vectors(a, w.numpy(), v.numpy(), dtype, residual=8 * EPS[dtype], floor=0.0)


@pytest.mark.parametrize("scale", [2.0**-600, 1.0, 2.0**600], ids=["tiny", "one", "huge"])
def test_scaling_into_range_keeps_triangular_eigenvalues_exact(scale):
    # dgeev's scaling by a power of 2, undone exactly on either side of [smlnum, bignum]
    a = MATRICES["permuted_triangular"]() * scale
    got = kael.linalg.eigvals(kael.tensor(a)).numpy()
    np.testing.assert_array_equal(np.sort(got.real), np.sort(np.diagonal(a)))
    np.testing.assert_array_equal(got.imag, 0)


def test_badly_scaled_eigenvalues_are_as_accurate_as_the_unscaled_ones():
    # balancing undoes D A D^-1's grading: the error is eps ||A||, not eps ||D A D^-1||
    a = _random((6, 6), 16)
    got = kael.linalg.eigvals(kael.tensor(_graded(a))).numpy()
    assert_same_multiset(got, *reference(a, kael.float64))


def test_complex_pair_comes_positive_imaginary_part_first_as_torch():
    a = np.array([[0.0, -1.0], [1.0, 0.0]])
    w, v = kael.linalg.eig(kael.tensor(a))
    want = torch.linalg.eig(torch.tensor(a))
    np.testing.assert_allclose(w.numpy(), want.eigenvalues.numpy(), atol=1e-15)
    # simple eigenvalues with the same normalization: the vectors agree up to a sign
    mine, theirs = v.numpy(), want.eigenvectors.numpy()
    signs = np.sign(np.sum(mine * np.conj(theirs), axis=-2).real)
    np.testing.assert_allclose(mine * signs, theirs, atol=1e-15)


@pytest.mark.parametrize("dtype", FLOATS, ids=["f32", "f64"])
def test_eigenvectors_have_torch_column_major_strides(dtype):
    a = _random((2, 5, 5), 11).astype(NP[dtype])
    w, v = kael.linalg.eig(kael.tensor(a))
    want = torch.linalg.eig(torch.tensor(a))
    assert v.stride() == want.eigenvectors.stride() and w.stride() == want.eigenvalues.stride()


@pytest.mark.parametrize("view", ["transposed", "strided", "expanded"])
def test_non_contiguous_input_is_solved_as_its_values(view):
    base = _random((3, 8, 8), 12)
    x = kael.tensor(base)
    make = {
        "transposed": lambda t: t.mT,
        "strided": lambda t: t[:, ::2, 1::2],
        "expanded": lambda t: t[:1].expand(3, 8, 8),
    }[view]
    got_w, got_v = kael.linalg.eig(make(x))
    a = make(torch.tensor(base)).contiguous().numpy()
    assert_same_multiset(got_w.numpy(), *reference(a, kael.float64))
    check_vectors(a, got_w.numpy(), got_v.numpy(), kael.float64, residual=8 * EPS[kael.float64])


@pytest.mark.parametrize("shape", [(0, 0), (0, 3, 3), (2, 0, 0)], ids=str)
def test_empty_input_gives_torch_shapes(shape):
    w, v = kael.linalg.eig(kael.zeros(*shape))
    want = torch.linalg.eig(torch.zeros(*shape))
    assert tuple(w.shape) == tuple(want.eigenvalues.shape) and w.dtype is kael.complex64
    assert tuple(v.shape) == tuple(want.eigenvectors.shape) and v.dtype is kael.complex64
    assert tuple(kael.linalg.eigvals(kael.zeros(*shape)).shape) == tuple(want.eigenvalues.shape)


def test_out_receives_the_results_and_must_match():
    a = kael.tensor(_random((4, 4), 13))
    values = kael.zeros(4, dtype=kael.complex128)
    vectors = kael.zeros(4, 4, dtype=kael.complex128)
    w, v = kael.linalg.eig(a, out=(values, vectors))
    assert w is values and v is vectors
    np.testing.assert_array_equal(values.numpy(), kael.linalg.eigvals(a).numpy())
    into = kael.zeros(4, dtype=kael.complex128)
    assert kael.linalg.eigvals(a, out=into) is into
    with pytest.raises(kael.TypeError, match="out has dtype complex64 but the result has dtype"):
        kael.linalg.eigvals(a, out=kael.zeros(4, dtype=kael.complex64))


@pytest.mark.parametrize("op", ["eig", "eigvals"])
def test_bad_inputs_raise_torch_errors(op):
    fn = getattr(kael.linalg, op)
    square = f"linalg.{op}: A must be batches of square matrices, but they are 3 by 4 matrices"
    with pytest.raises(kael.ValueError, match=square):
        fn(kael.zeros(3, 4))
    with pytest.raises(kael.ValueError, match="must have at least 2 dimensions"):
        fn(kael.zeros(3))
    with pytest.raises(kael.TypeError, match="Expected a floating point tensor"):
        fn(kael.ones(2, 2, dtype=kael.int64))
    with pytest.raises(kael.NotImplementedError, match=r"complex input \(complex64\)"):
        fn(kael.zeros(2, 2, dtype=kael.complex64))


@pytest.mark.parametrize("op", ["eig", "eigvals"])
@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf")])
def test_non_finite_input_raises_and_finite_does_not(op, bad):
    a = np.eye(3)
    fn = getattr(kael.linalg, op)
    fn(kael.tensor(a))
    a[1, 2] = bad
    with pytest.raises(kael.ValueError, match="should not contain infs or NaNs"):
        fn(kael.tensor(a))


@pytest.mark.parametrize("op", ["eig", "eigvals"])
def test_non_convergence_within_the_iteration_limit_raises_linalg_error(op, monkeypatch):
    a = kael.tensor(_random((2, 6, 6), 14))
    getattr(kael.linalg, op)(a)  # converges within MAX_ITERATIONS per eigenvalue
    monkeypatch.setattr(nonsymmetric_eigen, "MAX_ITERATIONS", 1)
    message = rf"linalg.{op}: \(Batch element 0\): The algorithm failed to converge"
    with pytest.raises(kael.linalg.LinAlgError, match=message):
        getattr(kael.linalg, op)(a)
