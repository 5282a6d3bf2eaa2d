"""svd_lowrank and pca_lowrank (frontend/lowrank.py) against torch: a matrix of rank at
most q is recovered to the precision, whatever the random draws (kael's are not torch's),
so singular values, reconstructions and projectors are compared; torch's refusals."""

import numpy as np
import pytest
import torch

import kael

RNG = np.random.default_rng(17)


def _low_rank(shape, rank):
    *batch, m, n = shape
    left = RNG.standard_normal((*batch, m, rank))
    return left @ RNG.standard_normal((*batch, rank, n))


def _check(got, want, a, dtype, tol):
    (U, S, V), (tu, ts, tv) = got, want
    assert U.dtype is S.dtype is V.dtype is dtype
    assert (U.shape, S.shape, V.shape) == (tuple(tu.shape), tuple(ts.shape), tuple(tv.shape))
    scale = float(ts.abs().max()) if ts.numel() else 1.0
    np.testing.assert_allclose(S.numpy(), ts.numpy(), atol=tol * scale)
    rebuilt = (U * S.unsqueeze(-2)) @ V.mT
    np.testing.assert_allclose(rebuilt.numpy(), a, atol=tol * scale)
    eye = np.eye(U.shape[-1])
    np.testing.assert_allclose(
        (U.mT @ U).numpy(), np.broadcast_to(eye, U.shape[:-2] + eye.shape), atol=tol * 10
    )


@pytest.mark.parametrize("dtype", [kael.float32, kael.float64], ids=str)
@pytest.mark.parametrize("shape", [(40, 12), (12, 40), (3, 20, 15)], ids=str)
def test_svd_lowrank_recovers_a_low_rank_matrix_as_torch(shape, dtype):
    a = _low_rank(shape, 3)
    tdtype = getattr(torch, str(dtype).split(".")[-1])
    got = kael.svd_lowrank(kael.tensor(a, dtype=dtype), q=5, niter=2)
    want = torch.svd_lowrank(torch.tensor(a, dtype=tdtype), q=5, niter=2)
    _check(got, want, a, dtype, 1e-4 if dtype is kael.float32 else 1e-10)


def test_svd_lowrank_subtracts_m_without_forming_a_minus_m():
    a = _low_rank((30, 10), 2)
    m = RNG.standard_normal((1, 10))
    got = kael.svd_lowrank(kael.tensor(a + m), q=4, M=kael.tensor(m))
    want = torch.svd_lowrank(torch.tensor(a + m), q=4, M=torch.tensor(m))
    _check(got, want, a, kael.float64, 1e-10)


@pytest.mark.parametrize("center", [True, False])
def test_pca_lowrank_centers_the_columns_as_torch(center):
    a = _low_rank((25, 8), 3) + 5.0
    got = kael.pca_lowrank(kael.tensor(a), center=center, q=4 if center else 5)
    want = torch.pca_lowrank(torch.tensor(a), center=center, q=4 if center else 5)
    _check(got, want, a - a.mean(0) if center else a, kael.float64, 1e-10)


@pytest.mark.parametrize("q, niter", [(8, 2), (3, -1)])
def test_svd_lowrank_takes_what_torch_takes_past_min_m_n_and_negative_niter(q, niter):
    a = _low_rank((10, 7), 3)
    got = kael.svd_lowrank(kael.tensor(a), q=q, niter=niter)
    want = torch.svd_lowrank(torch.tensor(a), q=q, niter=niter)
    _check(got, want, a, kael.float64, 1e-10)


def test_pca_lowrank_takes_min_6_m_n_components_by_default():
    U, S, V = kael.pca_lowrank(kael.tensor(_low_rank((9, 4), 2)))
    assert (U.shape, S.shape, V.shape) == ((9, 4), (4,), (4, 4))


@pytest.mark.parametrize(
    "call, error, message",
    [
        (lambda: kael.pca_lowrank(kael.ones(4, 3), q=4), kael.ValueError, r"q\(=4\) must be non-negative integer and not greater than min\(m, n\)=3"),
        (lambda: kael.pca_lowrank(kael.ones(4, 3), q=-1), kael.ValueError, r"q\(=-1\)"),
        (lambda: kael.svd_lowrank(kael.ones(4, 3), q=-1), kael.ValueError, "q must be non-negative, got q=-1"),
        (lambda: kael.pca_lowrank(kael.ones(4, 3), niter=-1), kael.ValueError, r"niter\(=-1\) must be non-negative integer"),
        (lambda: kael.svd_lowrank(kael.ones(4), q=1), kael.ValueError, "at least 2 dimensions"),
        (lambda: kael.svd_lowrank(kael.ones(4, 3), q=1.5), kael.TypeError, "argument 'q' must be int, not float"),
        (lambda: kael.pca_lowrank([[1.0]]), kael.TypeError, "pca_lowrank"),
    ],
)  # fmt: skip
def test_lowrank_refuses_bad_arguments(call, error, message):
    with pytest.raises(error, match=message):
        call()
