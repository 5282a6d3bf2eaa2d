"""The Householder kernels' block form (codegen/cpu/householder.py): V written out and
larft's T from G = V^T V give H_0 ... H_{k-1} = I - V T V^T, as LAPACK's larft."""

import numpy as np
import pytest

import kael
from kael.codegen.cpu import householder


@pytest.mark.parametrize("m, k", [(1, 1), (7, 3), (70, 64), (9, 9)])
@pytest.mark.parametrize("dtype", [kael.float64, kael.float32])
def test_block_of_reflectors_is_i_minus_v_t_vt(m, k, dtype):
    rng = np.random.default_rng(m * k)
    a = rng.standard_normal((2, m, k))  # a batch of two blocks
    vs = np.tril(a, -1) + np.eye(m, k)
    taus = 2 / (vs * vs).sum(axis=1)  # true reflectors (orthogonal), so the product is O(1)
    taus[1, 1 % k] = 0.0  # an identity reflector
    a, tau = kael.tensor(a).to(dtype), kael.tensor(taus).to(dtype)
    v = kael.empty(2, m, k, dtype=dtype)
    householder.reflectors(a._impl, v._impl, 2)
    t = kael.empty(2, k, k, dtype=dtype)
    householder.larft((v.mT @ v)._impl, tau._impl, t._impl, 2)
    tol = 1e-4 if dtype is kael.float32 else 1e-12
    for item in range(2):
        vs, taus = v[item].numpy().astype(np.float64), tau[item].numpy().astype(np.float64)
        np.testing.assert_array_equal(np.triu(vs), np.eye(m, k))  # unit lower, zeros above
        np.testing.assert_array_equal(np.tril(vs, -1), np.tril(a[item].numpy(), -1))
        product = np.eye(m)
        for i in range(k):
            product = product @ (np.eye(m) - taus[i] * np.outer(vs[:, i], vs[:, i]))
        block = np.eye(m) - vs @ t[item].numpy() @ vs.T
        np.testing.assert_allclose(block, product, rtol=tol, atol=tol)
        assert np.allclose(np.tril(t[item].numpy(), -1), 0) and np.allclose(
            np.diag(t[item].numpy()), taus, rtol=tol
        )
