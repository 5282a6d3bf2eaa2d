"""kael.linalg.qr, householder_product and torch.qr's `some` form against PyTorch (LAPACK):
Q and R's values (LAPACK's sign convention), Q's orthonormality, Q R = A, every mode's
shapes and dtypes, any layout, empty and non-finite inputs, and the typed errors."""

import numpy as np
import pytest
import torch
from kernel_helpers import ahead_and_one_at_a_time

import kael

FLOATS = [kael.float32, kael.float64]
NP = {kael.float32: np.float32, kael.float64: np.float64}
TORCH = {kael.float32: torch.float32, kael.float64: torch.float64}
TOL = {kael.float32: 2e-5, kael.float64: 1e-12}  # relative to the matrix's scale
MODES = ["reduced", "complete", "r"]
SHAPES = [(4, 3), (3, 4), (5, 5), (1, 1), (1, 4), (4, 1), (2, 7, 5), (3, 2, 6, 6), (40, 33)]
# Past orthogonal.BLOCKED reflectors: panels, compact WY blocks and matrix products.
BLOCKED_SHAPES = [(2, 200, 150), (140, 260), (161, 161)]


def random(shape, dtype, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(NP[dtype])


def factor_both(a: np.ndarray, mode: str = "reduced", view=lambda x: x):
    """kael's and torch's (Q, R) of the same matrices, each read through `view`."""
    got = kael.linalg.qr(view(kael.tensor(a)), mode=mode)
    want = torch.linalg.qr(view(torch.tensor(a)), mode=mode)
    return got, want


def check_against_torch(got, want, a: np.ndarray, dtype, mode: str) -> None:
    """Shapes, dtypes and values as torch's; Q orthonormal and Q R = A (when Q is asked)."""
    tol = TOL[dtype] * max(1.0, float(np.abs(a).max(initial=0.0)))
    q, r = got
    for mine, theirs in ((q, want.Q), (r, want.R)):
        assert mine.shape == tuple(theirs.shape) and mine.dtype is dtype
        np.testing.assert_allclose(mine.numpy(), theirs.numpy(), rtol=0, atol=tol * 10)
    if mode == "r":
        return
    qn, rn = q.numpy().astype(np.float64), r.numpy().astype(np.float64)
    eye = np.broadcast_to(np.eye(qn.shape[-1]), qn.shape[:-2] + (qn.shape[-1],) * 2)
    np.testing.assert_allclose(qn.swapaxes(-1, -2) @ qn, eye, rtol=0, atol=TOL[dtype] * 10)
    np.testing.assert_allclose(qn @ rn, a, rtol=0, atol=tol * 10)
    assert np.array_equal(np.triu(rn), rn)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("shape", SHAPES)
def test_qr_matches_torch_for_every_shape_and_mode(shape, mode, dtype):
    a = random(shape, dtype)
    got, want = factor_both(a, mode)
    assert type(got).__name__ == "QR" and got._fields == ("Q", "R")
    check_against_torch(got, want, a, dtype, mode)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("mode", ["reduced", "complete"])
@pytest.mark.parametrize("shape", BLOCKED_SHAPES)
def test_blocked_factorization_matches_torch(shape, mode, dtype):
    a = random(shape, dtype, seed=12)
    got, want = factor_both(a, mode)
    check_against_torch(got, want, a, dtype, mode)


@pytest.mark.parametrize("shape", [(3 * 64 + 37, 3 * 64 + 40), (300, 200), (200, 300)])
def test_look_ahead_gives_the_sequential_bits(shape, monkeypatch):
    """One matrix's next geqr2 panel factored, and each org2r panel formed, beside the rest
    of a block's product give the bits of the schedule one launch at a time, on two
    threads: no launch reads what the other writes."""
    a = kael.tensor(random(shape, kael.float64, seed=8))

    def factor() -> list[np.ndarray]:
        return [x.numpy().view(np.uint64) for x in kael.linalg.qr(a, mode="complete")]

    ahead, sequential = ahead_and_one_at_a_time(factor, monkeypatch)
    for got, want in zip(ahead, sequential, strict=True):
        np.testing.assert_array_equal(got, want)


VIEWS = {
    "transposed": lambda x: x.mT,
    "sliced": lambda x: x[..., ::2, 1:],
    "expanded_batch": lambda x: x.unsqueeze(0).expand(3, *x.shape),
    "column_slice": lambda x: x[..., :, 2:5],
}


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("mode", ["reduced", "complete"])
@pytest.mark.parametrize("view", VIEWS)
def test_qr_reads_any_layout(view, mode, dtype):
    a = random((2, 9, 7), dtype, seed=1)
    got, want = factor_both(a, mode, VIEWS[view])
    check_against_torch(got, want, VIEWS[view](torch.tensor(a)).numpy(), dtype, mode)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("shape", [(0, 3), (3, 0), (0, 0), (0, 4, 3), (2, 3, 0), (2, 0, 3)])
def test_empty_inputs_give_torchs_shapes(shape, mode):
    a = np.zeros(shape, np.float64)
    (q, r), want = factor_both(a, mode)
    assert q.shape == tuple(want.Q.shape) and r.shape == tuple(want.R.shape)
    assert q.dtype is kael.float64 and r.dtype is kael.float64
    np.testing.assert_array_equal(q.numpy(), want.Q.numpy())  # complete: the identity


@pytest.mark.parametrize("dtype", FLOATS)
def test_a_zero_column_is_skipped_exactly_as_lapack_skips_it(dtype):
    a = random((6, 4), dtype, seed=2)
    a[:, 1] = 0
    a[3:, 2] = 0  # and a column whose part below the diagonal is already zero
    got, want = factor_both(a, "complete")
    check_against_torch(got, want, a, dtype, "complete")


@pytest.mark.parametrize("dtype", FLOATS)
def test_rank_deficient_matrices_still_factor(dtype):
    rng = np.random.default_rng(3)
    a = (rng.standard_normal((8, 3)) @ rng.standard_normal((3, 6))).astype(NP[dtype])
    (q, r), want = factor_both(a)
    tol = TOL[dtype] * 100 * float(np.abs(a).max())
    # R's leading rows are well determined; the rest are rounding noise in both.
    np.testing.assert_allclose(r.numpy()[:3], want.R.numpy()[:3], rtol=0, atol=tol)
    np.testing.assert_allclose(np.abs(r.numpy()[3:]).max(), 0, atol=tol)
    qn = q.numpy().astype(np.float64)
    np.testing.assert_allclose(qn.T @ qn, np.eye(6), atol=TOL[dtype] * 10)
    np.testing.assert_allclose(qn @ r.numpy(), a, atol=tol)


@pytest.mark.parametrize("dtype", FLOATS)
def test_hilbert_matrices_factor_as_lapack_does(dtype):
    n = 10
    i = np.arange(n)
    a = (1.0 / (i[:, None] + i[None, :] + 1)).astype(NP[dtype])
    (q, r), want = factor_both(a)
    # Q R = A and Q^T Q = I hold to rounding however ill-conditioned A is (backward stable).
    qn = q.numpy().astype(np.float64)
    np.testing.assert_allclose(qn.T @ qn, np.eye(n), atol=TOL[dtype] * 10)
    np.testing.assert_allclose(qn @ r.numpy(), a, atol=TOL[dtype] * 10)
    # R's diagonal decays to the condition number's scale; its signs and leading values
    # are LAPACK's.
    rd, wd = np.diag(r.numpy()), np.diag(want.R.numpy())
    np.testing.assert_array_equal(np.sign(rd[:4]), np.sign(wd[:4]))
    np.testing.assert_allclose(r.numpy()[:4], want.R.numpy()[:4], atol=TOL[dtype] * 10)


@pytest.mark.parametrize("scale", [1e-200, 1e200])
def test_norms_neither_overflow_nor_underflow(scale):
    a = random((5, 4), kael.float64, seed=4) * scale
    (q, r), want = factor_both(a)
    np.testing.assert_allclose(q.numpy(), want.Q.numpy(), atol=1e-12)
    np.testing.assert_allclose(r.numpy() / scale, want.R.numpy() / scale, atol=1e-12)


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf")])
def test_a_non_finite_entry_poisons_the_columns_after_it_as_in_torch(bad):
    a = random((4, 3), kael.float64, seed=5)
    a[2, 1] = bad
    (q, r), want = factor_both(a)
    for mine, theirs in ((q, want.Q), (r, want.R)):
        np.testing.assert_array_equal(np.isnan(mine.numpy()), np.isnan(theirs.numpy()))
        finite = np.isfinite(theirs.numpy())
        np.testing.assert_allclose(mine.numpy()[finite], theirs.numpy()[finite], atol=1e-12)


def test_a_non_finite_first_column_makes_q_nan_as_in_torch():
    a = random((4, 3), kael.float64, seed=6)
    a[1, 0] = float("nan")
    (q, _), want = factor_both(a)
    assert np.isnan(q.numpy()).all() and np.isnan(want.Q.numpy()).all()


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize(
    "shape,k",
    [((6, 4), 3), ((5, 5), 5), ((2, 7, 3), 2), ((4, 3), 0), ((170, 150), 140), ((160, 150), 150)],
)
def test_householder_product_matches_torch(shape, k, dtype):
    a = torch.tensor(random(shape, dtype, seed=7))
    packed, tau = torch.geqrf(a)
    tau = tau[..., :k].contiguous()
    got = kael.linalg.householder_product(kael.tensor(packed.numpy()), kael.tensor(tau.numpy()))
    want = torch.linalg.householder_product(packed, tau)
    assert got.shape == tuple(want.shape) and got.dtype is dtype
    np.testing.assert_allclose(got.numpy(), want.numpy(), atol=TOL[dtype] * 10)
    orgqr = kael.tensor(packed.numpy()).orgqr(kael.tensor(tau.numpy()))
    np.testing.assert_array_equal(orgqr.numpy(), got.numpy())


@pytest.mark.filterwarnings("ignore:torch.qr is deprecated")
@pytest.mark.parametrize("some", [True, False])
def test_torch_qr_some_and_the_tensor_method(some):
    a = random((6, 4), kael.float64, seed=8)
    want = torch.qr(torch.tensor(a), some=some)
    for got in (kael.qr(kael.tensor(a), some=some), kael.tensor(a).qr(some)):
        check_against_torch(got, want, a, kael.float64, "reduced" if some else "complete")


def test_out_receives_q_and_r():
    a = random((5, 3), kael.float64, seed=9)
    q, r = kael.empty(5, 3, dtype=kael.float64), kael.empty(3, 3, dtype=kael.float64)
    got = kael.linalg.qr(kael.tensor(a), out=(q, r))
    want = torch.linalg.qr(torch.tensor(a))
    np.testing.assert_allclose(q.numpy(), want.Q.numpy(), atol=1e-12)
    np.testing.assert_allclose(r.numpy(), want.R.numpy(), atol=1e-12)
    assert got.Q is q and got.R is r


def test_qr_under_compile_matches_eager():
    a = kael.tensor(random((7, 5), kael.float64, seed=10))

    @kael.compile
    def f(x):
        q, r = kael.linalg.qr(x * 2.0)
        return q @ r

    np.testing.assert_allclose(f(a).numpy(), (a * 2.0).numpy(), atol=1e-12)


@pytest.mark.gpu
def test_qr_of_a_cuda_tensor_is_the_hosts():
    a = kael.tensor(random((6, 4), kael.float64, seed=11))
    q, r = kael.linalg.qr(a.to("cuda"), mode="complete")
    want_q, want_r = kael.linalg.qr(a, mode="complete")
    assert str(q.device) == "cuda:0" and str(r.device) == "cuda:0"
    np.testing.assert_array_equal(q.cpu().numpy(), want_q.numpy())
    np.testing.assert_array_equal(r.cpu().numpy(), want_r.numpy())


# ---- errors -----------------------------------------------------------------------------


def test_a_one_d_input_raises_naming_the_rank():
    with pytest.raises(kael.ValueError, match="linalg.qr: The input tensor A must have at least"):
        kael.linalg.qr(kael.ones(3))


def test_a_bad_mode_raises_naming_it():
    with pytest.raises(kael.ValueError, match="unrecognized mode 'thin'"):
        kael.linalg.qr(kael.ones(3, 3), mode="thin")


@pytest.mark.parametrize(
    "dtype,message",
    [
        (kael.int64, "Expected a floating point tensor as input. Got int64"),
        (kael.int32, "Got int32"),
        (kael.float16, "Low precision dtypes not supported. Got float16"),
        (kael.bfloat16, "Got bfloat16"),
        (kael.bool, "Got bool"),
    ],
)
def test_other_dtypes_raise_a_type_error_naming_the_dtype(dtype, message):
    with pytest.raises(kael.TypeError, match=message):
        kael.linalg.qr(kael.ones(3, 3, dtype=dtype))
    with pytest.raises(kael.TypeError, match=message):
        kael.linalg.householder_product(kael.ones(3, 3, dtype=dtype), kael.ones(2, dtype=dtype))


@pytest.mark.parametrize(
    "a,tau,error,message",
    [
        ((3,), (2,), kael.ValueError, "input must have at least 2 dimensions"),
        ((3, 4), (2,), kael.ValueError, r"input.shape\[-2\] must be greater"),
        ((4, 3), (4,), kael.ValueError, r"input.shape\[-1\] must be greater"),
        ((4, 3), (2, 2), kael.ValueError, "tau.ndim equal to 2 and input.ndim is equal to 2"),
        ((2, 4, 3), (3, 2), kael.ValueError, r"input.shape\[:-2\], but got \[3\]"),
    ],
)
def test_householder_product_errors_name_the_shapes(a, tau, error, message):
    with pytest.raises(error, match=message):
        kael.linalg.householder_product(kael.ones(*a), kael.ones(*tau))


def test_householder_product_dtypes_must_match():
    with pytest.raises(kael.TypeError, match="input of type float32 and tau of type float64"):
        kael.linalg.householder_product(kael.ones(4, 3), kael.ones(2, dtype=kael.float64))


def test_a_kept_qr_program_runs_on_other_matrices_of_its_layout():
    """householder_qr and _orgqr are programs (codegen/cpu/program.py) kept by layout: the
    later matrices' memory is elsewhere, and the programs are moved onto it; a second
    call builds nothing and holds no more memory."""
    from kael.codegen.cpu import program
    from kael.frontend import orthogonal

    rng = np.random.default_rng(11)
    mats = [rng.standard_normal((260, 200)) for _ in range(3)]
    program.clear()
    for m in mats:
        got, want = kael.linalg.qr(kael.tensor(m)), torch.linalg.qr(torch.tensor(m))
        np.testing.assert_allclose(got.Q.numpy(), want.Q.numpy(), rtol=1e-9, atol=1e-9)
        np.testing.assert_allclose(got.R.numpy(), want.R.numpy(), rtol=1e-9, atol=1e-9)
    kept = set(map(id, program.kept()))
    assert len(kept) == 2  # geqrf's and orgqr's
    held = [kael.tensor(m.copy()) for m in mats]  # alive at once: three addresses
    for m, x in zip(mats, held, strict=True):
        packed, tau = orthogonal.householder_qr(x)
        want = torch.geqrf(torch.tensor(m))
        np.testing.assert_allclose(packed.numpy(), want.a.numpy(), rtol=1e-9, atol=1e-9)
        np.testing.assert_allclose(tau.numpy(), want.tau.numpy(), rtol=1e-9, atol=1e-9)
    before = kael.memory_stats()["in_use_bytes"]
    kael.linalg.qr(kael.tensor(mats[0]))
    assert kael.memory_stats()["in_use_bytes"] == before


@pytest.mark.parametrize("shape", [(257, 257), (300, 129), (129, 300)])
def test_a_qr_with_one_column_trailing_blocks_is_kept(shape):
    """k = 4 NB + 1 (or 2 NB + 1): a block's trailing product or look-ahead head is one
    column wide, which the packed kernel subtracts all the same: both programs kept."""
    from kael.codegen.cpu import program

    a = np.random.default_rng(13).standard_normal(shape)
    program.clear()
    for _ in range(2):
        got, want = kael.linalg.qr(kael.tensor(a)), torch.linalg.qr(torch.tensor(a))
        np.testing.assert_allclose(got.R.numpy(), want.R.numpy(), rtol=1e-9, atol=1e-9)
        np.testing.assert_allclose(got.Q.numpy(), want.Q.numpy(), rtol=1e-9, atol=1e-9)
    assert len(program.kept()) == 2
