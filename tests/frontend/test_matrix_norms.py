"""kael.linalg's norms (frontend/matrix_norms.py) against torch.linalg: every order, dims,
keepdim, dtype=, layouts, empty inputs, and PyTorch's typed errors."""

import math

import numpy as np
import pytest
import torch
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
        (lambda: kael.linalg.vector_norm(kael.ones(3), dtype=kael.int64), kael.TypeError, "floating point type"),
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
