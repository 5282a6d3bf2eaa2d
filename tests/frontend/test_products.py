"""linalg.multi_dot, matrix_power, cross and vecdot (frontend/products.py) against torch:
values, dtype and shape, the chain order, vectors at the ends, negative powers,
broadcasting, and typed errors."""

import numpy as np
import pytest
import torch
from parity_helpers import close_to_torch, torch_pair

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
