"""max/avg pools (1d/2d/3d, indices, ceil_mode, padding, dilation, count_include_pad,
divisor_override) and the adaptive pools against PyTorch."""

import numpy as np
import pytest
import torch.nn.functional as TF
from parity_helpers import close_to_torch
from parity_helpers import torch_pair as pair

import kael
import kael.nn.functional as KF

RNG = np.random.default_rng(43)
X2 = RNG.standard_normal((2, 3, 9, 8))


def same(k, t, tol=2e-6):
    close_to_torch(k, t, tol, equal_nan=True)


MAX2D = [
    {"kernel_size": 2},
    {"kernel_size": 3, "stride": 2, "padding": 1},
    {"kernel_size": 3, "stride": 2, "ceil_mode": True},
    {"kernel_size": (3, 2), "stride": (2, 3), "padding": (1, 1), "dilation": (2, 1)},
    {"kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": True},
]


@pytest.mark.parametrize("indices", [False, True])
@pytest.mark.parametrize("kwargs", MAX2D, ids=str)
@pytest.mark.parametrize("dtype", [kael.float32, kael.float64, kael.int64, kael.float16], ids=str)
def test_max_pool2d_matches_torch(kwargs, indices, dtype):
    kx, tx = pair(X2 * 10, dtype)
    same(
        KF.max_pool2d(kx, **kwargs, return_indices=indices),
        TF.max_pool2d(tx, **kwargs, return_indices=indices),
    )
    same(KF.max_pool2d(kx[0], **kwargs), TF.max_pool2d(tx[0], **kwargs))


def test_max_pool_propagates_nan_and_picks_the_first_maximum():
    x = np.zeros((1, 1, 4, 4))
    x[0, 0, 1, 2] = np.nan
    kx, tx = pair(x)
    same(KF.max_pool2d(kx, 2, return_indices=True), TF.max_pool2d(tx, 2, return_indices=True))


AVG2D = [
    {"kernel_size": 2},
    {"kernel_size": 3, "stride": 2, "padding": 1},
    {"kernel_size": 3, "stride": 2, "padding": 1, "count_include_pad": False},
    {"kernel_size": 3, "stride": 2, "ceil_mode": True},
    {"kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": True, "count_include_pad": False},
    {"kernel_size": 2, "divisor_override": 3},
]


@pytest.mark.parametrize("kwargs", AVG2D, ids=str)
@pytest.mark.parametrize("dtype", [kael.float32, kael.float64, kael.bfloat16], ids=str)
def test_avg_pool2d_matches_torch(kwargs, dtype):
    kx, tx = pair(X2, dtype)
    tol = 2e-6 if dtype is not kael.bfloat16 else 2e-2
    same(KF.avg_pool2d(kx, **kwargs), TF.avg_pool2d(tx, **kwargs), tol)
    same(
        KF.avg_pool2d(kx.transpose(2, 3), **kwargs),
        TF.avg_pool2d(tx.transpose(2, 3), **kwargs),
        tol,
    )


def test_pools_in_1d_and_3d_match_torch():
    kx, tx = pair(X2[0])
    same(KF.max_pool1d(kx, 3, 2, return_indices=True), TF.max_pool1d(tx, 3, 2, return_indices=True))
    same(KF.avg_pool1d(kx, 3, padding=1), TF.avg_pool1d(tx, 3, padding=1))
    kx, tx = pair(RNG.standard_normal((1, 2, 5, 6, 7)))
    same(KF.max_pool3d(kx, 2, return_indices=True), TF.max_pool3d(tx, 2, return_indices=True))
    same(KF.avg_pool3d(kx, 3, 2, 1), TF.avg_pool3d(tx, 3, 2, 1))


@pytest.mark.parametrize("size", [(3, 4), (4, 5), 1, (9, 8), (None, 3), (7, 7)], ids=str)
def test_adaptive_pools_match_torch(size):
    kx, tx = pair(X2)
    same(KF.adaptive_avg_pool2d(kx, size), TF.adaptive_avg_pool2d(tx, size), 3e-6)
    same(
        KF.adaptive_max_pool2d(kx, size, return_indices=True),
        TF.adaptive_max_pool2d(tx, size, return_indices=True),
    )
    same(KF.adaptive_avg_pool1d(kx[0], 5), TF.adaptive_avg_pool1d(tx[0], 5), 3e-6)
    same(KF.adaptive_max_pool1d(kx[0], 3), TF.adaptive_max_pool1d(tx[0], 3))


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: KF.max_pool2d(kael.ones(1, 1, 4, 4), 2, padding=2), "at most half"),
        (lambda: KF.max_pool2d(kael.ones(1, 1, 2, 2), 3), "too small"),
        (lambda: KF.max_pool2d(kael.ones(4), 2), "Expected"),
        (lambda: KF.avg_pool2d(kael.ones(1, 1, 4, 4), 2, divisor_override=0), "not zero"),
        (lambda: KF.adaptive_avg_pool2d(kael.ones(1, 1, 4, 4), (0, 2)), "positive"),
    ],
)
def test_bad_pools_raise(call, message):
    with pytest.raises(kael.ValueError, match=message):
        call()
    with pytest.raises(kael.TypeError, match="floating"):
        KF.avg_pool2d(kael.ones(1, 1, 4, 4, dtype=kael.int64), 2)
