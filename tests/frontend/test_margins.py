"""The margin losses new in margins.py against PyTorch (the older ones are in
test_losses.py's table): multilabel_margin_loss and triplet_margin_with_distance_loss, and
the distances' half-type norms."""

import numpy as np
import pytest
import torch.nn.functional as TF
from parity_helpers import close_to_torch
from parity_helpers import torch_pair as pair

import kael
import kael.nn.functional as KF

RNG = np.random.default_rng(17)
TARGETS = np.array(
    [[3, 0, -1, 1, 4], [1, 2, 3, -1, 0], [-1, 1, 2, 3, 4], [0, 1, 2, 3, 4], [2, 2, 4, -1, -1]]
)


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("dtype", [kael.float32, kael.float64], ids=str)
def test_multilabel_margin_loss_matches_torch(reduction, dtype):
    """Targets up to the first -1, a repeated target counted each time, as PyTorch does."""
    kx, tx = pair(RNG.standard_normal((5, 5)), dtype)
    kt, tt = pair(TARGETS, kael.int64)
    tol = 1e-6 if dtype is kael.float32 else 1e-12
    close_to_torch(
        KF.multilabel_margin_loss(kx, kt, reduction=reduction),
        TF.multilabel_margin_loss(tx, tt, reduction=reduction),
        tol,
    )
    close_to_torch(
        KF.multilabel_margin_loss(kx[4], kt[4], reduction=reduction),
        TF.multilabel_margin_loss(tx[4], tt[4], reduction=reduction),
        tol,
    )
    close_to_torch(  # a transposed input
        KF.multilabel_margin_loss(kx.transpose(0, 1), kt, reduction=reduction),
        TF.multilabel_margin_loss(tx.transpose(0, 1), tt, reduction=reduction),
        tol,
    )


@pytest.mark.parametrize(
    "target, error, message",
    [
        ([5, 0, -1, 0, 0], kael.Error, "out of range"),
        ([-2, 0, 0, 0, 0], kael.Error, "out of range"),
        ([0, 1, 2, -1], kael.ValueError, "inconsistent target size"),
    ],
)
def test_multilabel_margin_loss_refuses_bad_targets(target, error, message):
    with pytest.raises(error, match=message):
        KF.multilabel_margin_loss(kael.randn(5), kael.tensor(target))
    with pytest.raises(kael.TypeError, match="int64"):
        KF.multilabel_margin_loss(kael.randn(5), kael.zeros(5))


@pytest.mark.parametrize("swap", [False, True])
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_triplet_margin_with_distance_loss_matches_torch(swap, reduction):
    (ka, ta), (kp, tp), (kn, tn) = (pair(RNG.standard_normal((6, 8))) for _ in range(3))
    args = {"swap": swap, "reduction": reduction, "margin": 0.7}
    close_to_torch(
        KF.triplet_margin_with_distance_loss(ka, kp, kn, **args),
        TF.triplet_margin_with_distance_loss(ta, tp, tn, **args),
        2e-6,
    )
    close_to_torch(
        KF.triplet_margin_with_distance_loss(
            ka, kp, kn, distance_function=lambda u, v: 1 - KF.cosine_similarity(u, v), **args
        ),
        TF.triplet_margin_with_distance_loss(
            ta, tp, tn, distance_function=lambda u, v: 1 - TF.cosine_similarity(u, v), **args
        ),
        2e-6,
    )


def test_triplet_margin_with_distance_loss_refuses_bad_inputs():
    x = kael.randn(3, 4)
    with pytest.raises(kael.ValueError, match="margin must be greater than 0"):
        KF.triplet_margin_with_distance_loss(x, x, x, margin=0.0)
    with pytest.raises(kael.ValueError, match="same number of dimensions"):
        KF.triplet_margin_with_distance_loss(x, x, x[0])


@pytest.mark.parametrize("dtype", [kael.float16, kael.bfloat16], ids=str)
@pytest.mark.parametrize("p", [2.0, 1.0, 3.0, 0.0, float("inf"), -1.0])
def test_distances_of_half_vectors_sum_in_float32_as_torch(dtype, p):
    """Squares of 300 overflow a float16 sum (65504); torch's norms accumulate in float32,
    so cosine_similarity, pairwise_distance and triplet_margin_loss stay finite."""
    big = RNG.standard_normal((3, 16)) * 100 + 300
    ka, ta = pair(big, dtype)
    kz, tz = pair(np.zeros((3, 16)), dtype)
    kn, tn = pair(np.full((3, 16), 10.0), dtype)
    close_to_torch(KF.pairwise_distance(ka, kz, p=p), TF.pairwise_distance(ta, tz, p=p), 1e-2)
    close_to_torch(
        KF.triplet_margin_loss(ka, kz, kn, p=p), TF.triplet_margin_loss(ta, tz, tn, p=p), 1e-2
    )
    close_to_torch(KF.cosine_similarity(ka, ka), TF.cosine_similarity(ta, ta), 1e-2)
    long = np.ones((1, 70000))
    close_to_torch(
        KF.cosine_similarity(*pair(long, dtype)[:1] * 2),
        TF.cosine_similarity(*pair(long, dtype)[1:] * 2),
        1e-2,
    )


def test_cosine_similarity_refuses_a_negative_eps_as_torch():
    with pytest.raises(RuntimeError, match="eps must be non-negative"):
        TF.cosine_similarity(*pair(np.zeros((1, 2)), kael.float32)[1:] * 2, eps=-1.0)
    with pytest.raises(kael.ValueError, match="eps must be non-negative, got: -1.0"):
        KF.cosine_similarity(kael.zeros(1, 2), kael.zeros(1, 2), eps=-1.0)
    ones = TF.cosine_similarity(*pair(np.ones((1, 2)), kael.float32)[1:] * 2, eps=0.0)
    assert KF.cosine_similarity(kael.ones(1, 2), kael.ones(1, 2), eps=0.0).item() == ones.item()
