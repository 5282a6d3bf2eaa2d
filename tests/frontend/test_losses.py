"""torch.nn.functional's losses and distances against PyTorch: values, dtype and shape for
each reduction, dtype and layout, and typed errors for bad inputs."""

import numpy as np
import pytest
import torch
import torch.nn.functional as TF
from kernel_helpers import TORCH_DTYPES

import kael
import kael.nn.functional as KF

RNG = np.random.default_rng(13)
A = RNG.standard_normal((6, 5))
B = RNG.standard_normal((6, 5))
PROB = 1 / (1 + np.exp(-A))
BITS = (B > 0).astype(float)
SIGNS = np.where(RNG.standard_normal(6) > 0, 1.0, -1.0)
TOL = {kael.float32: 3e-6, kael.float64: 1e-12, kael.float16: 2e-3, kael.bfloat16: 2e-2}


def lib_tensors(lib, dtype, *arrays):
    if lib is torch:
        return [torch.tensor(a).to(TORCH_DTYPES[dtype]) for a in arrays]
    return [kael.from_dlpack(torch.tensor(a).to(TORCH_DTYPES[dtype])) for a in arrays]


def check(k, t, dtype, tol=None):
    assert k.shape == tuple(t.shape)
    assert TORCH_DTYPES[k.dtype] == t.dtype
    tol = tol or TOL[dtype]
    got = torch.from_dlpack(k.contiguous()).double()
    torch.testing.assert_close(got, t.double(), rtol=tol, atol=tol, equal_nan=True)


LOG_P = torch.log_softmax(torch.tensor(A), 1).numpy()
Q = torch.softmax(torch.tensor(B), 1).numpy()

# name -> (arrays, call(F, *tensors, reduction))
LOSSES = {
    "mse_loss": ((A, B), lambda F, x, y, r: F.mse_loss(x, y, reduction=r)),
    "l1_loss": ((A, B), lambda F, x, y, r: F.l1_loss(x, y, reduction=r)),
    "smooth_l1_loss": ((A, B), lambda F, x, y, r: F.smooth_l1_loss(x, y, reduction=r, beta=0.5)),
    "smooth_l1_beta0": ((A, B), lambda F, x, y, r: F.smooth_l1_loss(x, y, reduction=r, beta=0.0)),
    "huber_loss": ((A, B), lambda F, x, y, r: F.huber_loss(x, y, reduction=r, delta=0.7)),
    "soft_margin_loss": ((A, np.sign(B)), lambda F, x, y, r: F.soft_margin_loss(x, y, reduction=r)),
    "bce": ((PROB, BITS), lambda F, x, y, r: F.binary_cross_entropy(x, y, reduction=r)),
    "bce_weight": (
        (PROB, BITS, B**2),
        lambda F, x, y, w, r: F.binary_cross_entropy(x, y, weight=w, reduction=r),
    ),
    "bce_logits": (
        (A, BITS),
        lambda F, x, y, r: F.binary_cross_entropy_with_logits(x, y, reduction=r),
    ),
    "bce_logits_pos_weight": (
        (A * 20, BITS, np.arange(1.0, 6.0), B**2),
        lambda F, x, y, pw, w, r: F.binary_cross_entropy_with_logits(
            x, y, weight=w, pos_weight=pw, reduction=r
        ),
    ),
    "kl_div": ((LOG_P, Q), lambda F, x, y, r: F.kl_div(x, y, reduction=r)),
    "kl_div_log_target": (
        (LOG_P, np.log(Q)),
        lambda F, x, y, r: F.kl_div(x, y, reduction=r, log_target=True),
    ),
    "margin_ranking_loss": (
        (A[:, 0], B[:, 0], SIGNS),
        lambda F, a, b, y, r: F.margin_ranking_loss(a, b, y, margin=0.3, reduction=r),
    ),
    "hinge_embedding_loss": (
        (A[:, 0], SIGNS),
        lambda F, x, y, r: F.hinge_embedding_loss(x, y, margin=0.5, reduction=r),
    ),
    "triplet_margin_loss": (
        (A, B, A * 2 - B),
        lambda F, a, p, n, r: F.triplet_margin_loss(a, p, n, margin=0.4, reduction=r),
    ),
    "triplet_swap_p1": (
        (A, B, A * 2 - B),
        lambda F, a, p, n, r: F.triplet_margin_loss(a, p, n, p=1, swap=True, reduction=r),
    ),
    "cosine_embedding_loss": (
        (A, B, SIGNS),
        lambda F, a, b, y, r: F.cosine_embedding_loss(a, b, y, margin=0.1, reduction=r),
    ),
}


@pytest.mark.filterwarnings("ignore:reduction. 'mean' divides")  # PyTorch's own kl_div note
@pytest.mark.parametrize("dtype", [kael.float32, kael.float64, kael.float16], ids=str)
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("name", LOSSES)
def test_loss_matches_torch(name, reduction, dtype):
    arrays, call = LOSSES[name]
    k = call(KF, *lib_tensors(kael, dtype, *arrays), reduction)
    t = call(TF, *lib_tensors(torch, dtype, *arrays), reduction)
    # PyTorch composes these from float16 ops, each rounding; kael's kernels round once:
    # they agree to a few float16 steps of the (larger) intermediate values.
    composed = name.startswith(("kl_div", "triplet", "cosine", "bce_logits_pos"))
    check(k, t, dtype, 3e-2 if dtype is kael.float16 and composed else None)


def test_kl_div_batchmean_divides_by_the_batch():
    k = KF.kl_div(*lib_tensors(kael, kael.float64, LOG_P, Q), reduction="batchmean")
    t = TF.kl_div(*lib_tensors(torch, kael.float64, LOG_P, Q), reduction="batchmean")
    check(k, t, kael.float64)


@pytest.mark.parametrize("name", ["mse_loss", "l1_loss", "huber_loss"])
def test_losses_of_transposed_and_broadcast_operands(name):
    x, y = lib_tensors(kael, kael.float32, A, B)
    tx, ty = lib_tensors(torch, kael.float32, A, B)
    check(getattr(KF, name)(x.T, y.T), getattr(TF, name)(tx.T, ty.T), kael.float32)
    with pytest.warns(UserWarning):
        want = getattr(TF, name)(tx, ty[:1], reduction="none")
    check(getattr(KF, name)(x, y[:1], reduction="none"), want, kael.float32)


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_cosine_similarity_and_pairwise_distance_match_torch(dim):
    x, y = lib_tensors(kael, kael.float32, A, B)
    tx, ty = lib_tensors(torch, kael.float32, A, B)
    check(KF.cosine_similarity(x, y, dim), TF.cosine_similarity(tx, ty, dim), kael.float32)
    check(KF.cosine_similarity(x, y[:1], dim), TF.cosine_similarity(tx, ty[:1], dim), kael.float32)
    for p in (1, 2, 3.5, float("inf")):
        check(
            KF.pairwise_distance(x, y, p, keepdim=dim == 0),
            TF.pairwise_distance(tx, ty, p, keepdim=dim == 0),
            kael.float32,
        )


@pytest.mark.parametrize("p", [0.0, -1.0, -float("inf"), 0.5])
def test_pairwise_distance_takes_every_p_torch_norm_takes(p):
    # p = 0 counts the nonzero differences (x2 - x1 + eps is 0 in one place of row 1)
    x = np.array([[1.0, 2.0, 3.0], [0.0, 0.0, -1e-6]])
    k, t = kael.tensor(x), torch.tensor(x)
    check(KF.pairwise_distance(k, k * 0, p), TF.pairwise_distance(t, t * 0, p), kael.float64)


def test_cosine_embedding_loss_adds_torch_epsilon_to_the_squared_norms():
    # PyTorch's cos is sum(x1 x2) / sqrt((|x1|^2 + 1e-12)(|x2|^2 + 1e-12)): in float64 the
    # epsilon moves the 12th digit, which clamping the norms instead would not.
    a, b = lib_tensors(kael, kael.float64, A[:, :2], B[:, :2] * 1e-3)
    ta, tb = lib_tensors(torch, kael.float64, A[:, :2], B[:, :2] * 1e-3)
    y, ty = lib_tensors(kael, kael.float64, SIGNS)[0], lib_tensors(torch, kael.float64, SIGNS)[0]
    k = KF.cosine_embedding_loss(a, b, y, reduction="none")
    t = TF.cosine_embedding_loss(ta, tb, ty, reduction="none")
    check(k, t, kael.float64, 1e-15)


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_nll_loss_matches_torch(reduction, weighted):
    target = np.array([1, 0, 4, -100, 2, 4])
    weight = np.array([0.5, 1.0, 2.0, 1.5, 0.25]) if weighted else None
    for shape in ((6, 5), (3, 5, 2)):
        logp = LOG_P if shape == (6, 5) else LOG_P.reshape(3, 2, 5).transpose(0, 2, 1)
        tgt = target if shape == (6, 5) else target.reshape(3, 2)
        kw = {"weight": weight} if weighted else {}
        k = KF.nll_loss(
            kael.tensor(np.ascontiguousarray(logp)),
            kael.tensor(tgt),
            weight=kael.tensor(weight) if weighted else None,
            reduction=reduction,
        )
        t = TF.nll_loss(
            torch.tensor(logp),
            torch.tensor(tgt),
            weight=torch.tensor(weight) if weighted else None,
            reduction=reduction,
        )
        del kw
        check(k, t, kael.float64)


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (
            lambda: KF.mse_loss(kael.ones(2), kael.ones(2), reduction="avg"),
            kael.ValueError,
            "'avg'",
        ),
        (lambda: KF.l1_loss(kael.arange(2), kael.arange(2)), kael.TypeError, "floating"),
        (
            lambda: KF.huber_loss(kael.ones(2), kael.ones(2), delta=-1.0),
            kael.ValueError,
            "non-positive values for delta",
        ),
        (
            lambda: KF.binary_cross_entropy(kael.tensor([1.5]), kael.tensor([1.0])),
            kael.ValueError,
            "between 0 and 1",
        ),
        (
            lambda: KF.binary_cross_entropy(kael.ones(2), kael.ones(3)),
            kael.ValueError,
            "target size",
        ),
        (
            lambda: KF.binary_cross_entropy_with_logits(kael.ones(2), kael.ones(3)),
            kael.ValueError,
            "same as input size",
        ),
        (
            lambda: KF.nll_loss(kael.zeros(2, 3), kael.tensor([0, 3])),
            kael.IndexError,
            "Target 3 is out of bounds",
        ),
        (lambda: KF.nll_loss(kael.zeros(2, 3), kael.tensor([0.0, 1.0])), kael.TypeError, "int64"),
        (
            lambda: KF.nll_loss(kael.zeros(2, 3), kael.tensor([0, 1, 2])),
            kael.ValueError,
            "target of shape",
        ),
        (
            lambda: KF.margin_ranking_loss(kael.ones(2, 3), kael.ones(2, 3), kael.ones(3)),
            kael.ValueError,
            "same dimension",
        ),
        (
            lambda: KF.kl_div(kael.ones(2), kael.ones(2), reduction="batch"),
            kael.ValueError,
            "'batch'",
        ),
    ],
)
def test_bad_inputs_raise_typed_errors(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_losses_inside_compile_match_eager():
    @kael.compile
    def f(x, y):
        return KF.huber_loss(x, y, delta=0.5) + KF.mse_loss(x, y, reduction="sum")

    x, y = lib_tensors(kael, kael.float32, A, B)
    assert kael.allclose(
        f(x, y), KF.huber_loss(x, y, delta=0.5) + KF.mse_loss(x, y, reduction="sum")
    )


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("smoothing", [0.0, 0.1, 0.35])
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_cross_entropy_with_probabilities_and_label_smoothing_matches_torch(
    reduction, smoothing, weighted
):
    logits = RNG.standard_normal((6, 5, 2))
    probs = torch.softmax(torch.tensor(RNG.standard_normal((6, 5, 2))), 1).numpy()
    target = np.array([[1, 0], [4, -100], [2, 4], [0, 0], [3, -100], [1, 2]])
    weight = np.array([0.5, 1.0, 2.0, 1.5, 0.25]) if weighted else None
    kw = {"reduction": reduction, "label_smoothing": smoothing}
    for tgt in (target, probs):
        k = KF.cross_entropy(
            kael.tensor(logits), kael.tensor(tgt), kael.tensor(weight) if weighted else None, **kw
        )
        t = TF.cross_entropy(
            torch.tensor(logits),
            torch.tensor(tgt),
            torch.tensor(weight) if weighted else None,
            **kw,
        )
        check(k, t, kael.float64)


def test_cross_entropy_refuses_bad_smoothing_and_probability_shapes():
    with pytest.raises(kael.ValueError, match="between 0.0 and 1.0"):
        KF.cross_entropy(kael.ones(2, 3), kael.tensor([0, 1]), label_smoothing=1.5)
    with pytest.raises(kael.ValueError, match="input's shape"):
        KF.cross_entropy(kael.ones(2, 3), kael.ones(2, 4))


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_multilabel_and_multi_margin_losses_match_torch(reduction, weighted):
    labels = (RNG.standard_normal((6, 5)) > 0).astype(float)
    classes = np.array([1, 0, 4, 3, 2, 4])
    weight = np.abs(RNG.standard_normal(5)) if weighted else None
    kw, tw = (kael.tensor(weight), torch.tensor(weight)) if weighted else (None, None)
    check(
        KF.multilabel_soft_margin_loss(
            kael.tensor(A), kael.tensor(labels), kw, reduction=reduction
        ),
        TF.multilabel_soft_margin_loss(
            torch.tensor(A), torch.tensor(labels), tw, reduction=reduction
        ),
        kael.float64,
    )
    for p in (1, 2):
        check(
            KF.multi_margin_loss(
                kael.tensor(A), kael.tensor(classes), p, 0.7, kw, reduction=reduction
            ),
            TF.multi_margin_loss(
                torch.tensor(A), torch.tensor(classes), p, 0.7, tw, reduction=reduction
            ),
            kael.float64,
        )


def test_multi_margin_loss_refuses_bad_targets():
    with pytest.raises(kael.ValueError, match="only p == 1 and p == 2"):
        KF.multi_margin_loss(kael.ones(2, 3), kael.tensor([0, 1]), p=3)
    with pytest.raises(kael.IndexError, match="out of range"):
        KF.multi_margin_loss(kael.ones(2, 3), kael.tensor([0, 3]))
    with pytest.raises(kael.ValueError, match="inconsistent target size"):
        KF.multi_margin_loss(kael.ones(2, 3), kael.tensor([0, 1, 2]))


POSITIVE = np.abs(B) * 3


@pytest.mark.parametrize("dtype", [kael.float32, kael.float64], ids=str)
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize(
    "log_input, full", [(True, False), (False, False), (True, True), (False, True)]
)
def test_poisson_nll_loss_matches_torch(dtype, reduction, log_input, full):
    x = A if log_input else np.abs(A)
    kx, ky = kael.tensor(x, dtype=dtype), kael.tensor(POSITIVE, dtype=dtype)
    tx, ty = (torch.tensor(v).to(TORCH_DTYPES[dtype]) for v in (x, POSITIVE))
    args = {"log_input": log_input, "full": full, "reduction": reduction}
    k, t = KF.poisson_nll_loss(kx, ky, **args), TF.poisson_nll_loss(tx, ty, **args)
    assert k.dtype is dtype and k.shape == tuple(t.shape)
    np.testing.assert_allclose(k.numpy(), t.numpy(), rtol=TOL[dtype], atol=TOL[dtype])


def test_poisson_nll_loss_reads_the_legacy_reduction_arguments():
    kx, ky = kael.tensor(A), kael.tensor(POSITIVE)
    tx, ty = torch.tensor(A, dtype=torch.float32), torch.tensor(POSITIVE, dtype=torch.float32)
    for legacy in ({"reduce": False}, {"size_average": False}, {"size_average": True}):
        with pytest.warns(UserWarning):
            t = TF.poisson_nll_loss(tx, ty, **legacy)
        np.testing.assert_allclose(
            KF.poisson_nll_loss(kx, ky, **legacy).numpy(), t.numpy(), rtol=3e-6
        )


@pytest.mark.parametrize("var_shape", [(6, 5), (6, 1), (6,)], ids=str)
@pytest.mark.parametrize("full", [False, True])
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_gaussian_nll_loss_matches_torch(var_shape, full, reduction):
    var = np.abs(RNG.standard_normal(var_shape)) + 1e-3
    var.flat[0] = 1e-9  # below eps: clamped
    args = {"full": full, "reduction": reduction}
    k = KF.gaussian_nll_loss(kael.tensor(A), kael.tensor(B), kael.tensor(var), **args)
    t = TF.gaussian_nll_loss(*(torch.tensor(v, dtype=torch.float32) for v in (A, B, var)), **args)
    assert k.shape == tuple(t.shape)
    np.testing.assert_allclose(k.numpy(), t.numpy(), rtol=3e-6, atol=3e-6)


def test_gaussian_nll_loss_refuses_negative_and_misshapen_variances():
    x = kael.tensor(A)
    with pytest.raises(kael.ValueError, match="negative"):
        KF.gaussian_nll_loss(x, x, -kael.ones(6, 5))
    with pytest.raises(kael.ValueError, match="incorrect size"):
        KF.gaussian_nll_loss(x, x, kael.ones(5, 6))


@pytest.mark.parametrize("ignore_index", [-100, -1, 0, 2])
def test_cross_entropy_with_probability_targets_refuses_a_class_ignore_index_as_torch(
    ignore_index,
):
    logits, probs = torch.tensor(A), torch.softmax(torch.tensor(B), 1)
    k_logits, k_probs = kael.tensor(A), kael.tensor(probs.numpy())
    if ignore_index < 0:  # torch lets any negative index pass: no class is ignored
        expected = TF.cross_entropy(logits, probs, ignore_index=ignore_index)
        got = kael.nn.CrossEntropyLoss(ignore_index=ignore_index)(k_logits, k_probs)
        np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=1e-10)
        return
    message = "ignore_index is not supported for floating point target"
    with pytest.raises(RuntimeError, match=message):
        TF.cross_entropy(logits, probs, ignore_index=ignore_index)
    with pytest.raises(kael.Error, match=message):
        KF.cross_entropy(k_logits, k_probs, ignore_index=ignore_index)
    with pytest.raises(kael.Error, match=message):
        kael.nn.CrossEntropyLoss(ignore_index=ignore_index)(k_logits, k_probs)


def _mixed_operands(lib):
    x = lib.tensor([[2.0, 0.5, -1.0], [0.1, 0.2, 3.0]])
    y = lib.tensor([[1.0, 0.0, 1.0], [0.0, 1.0, 0.0]])
    p = lib.tensor([[0.7, 0.2, 0.1], [0.1, 0.1, 0.8]])
    return x, y, p


MIXED_DTYPE_LOSSES = {  # torch builds these in place on one operand, or promotes
    "bce_with_logits float64 pos_weight": lambda L, F: F.binary_cross_entropy_with_logits(
        _mixed_operands(L)[0], _mixed_operands(L)[1], pos_weight=L.tensor([1.0, 2.0, 3.0], dtype=L.float64)
    ),
    "bce_with_logits float64 weight": lambda L, F: F.binary_cross_entropy_with_logits(
        _mixed_operands(L)[0], _mixed_operands(L)[1], weight=L.tensor([1.0, 2.0, 3.0], dtype=L.float64)
    ),
    "bce_with_logits float64 input": lambda L, F: F.binary_cross_entropy_with_logits(
        _mixed_operands(L)[0].double(), _mixed_operands(L)[1]
    ),
    "bce_with_logits float16 target": lambda L, F: F.binary_cross_entropy_with_logits(
        _mixed_operands(L)[0], _mixed_operands(L)[1].half(), reduction="none"
    ),
    "huber float64 target": lambda L, F: F.huber_loss(_mixed_operands(L)[0], _mixed_operands(L)[1].double()),
    "soft_margin float16 input": lambda L, F: F.soft_margin_loss(_mixed_operands(L)[0].half(), _mixed_operands(L)[1]),
    "cross_entropy float16 probabilities": lambda L, F: F.cross_entropy(_mixed_operands(L)[0], _mixed_operands(L)[2].half()),
    "cross_entropy float64 probabilities": lambda L, F: F.cross_entropy(_mixed_operands(L)[0], _mixed_operands(L)[2].double()),
    "cross_entropy float16 logits float32 probabilities": lambda L, F: F.cross_entropy(
        _mixed_operands(L)[0].half(), _mixed_operands(L)[2]
    ),
    "cross_entropy float16 both": lambda L, F: F.cross_entropy(_mixed_operands(L)[0].half(), _mixed_operands(L)[2].half()),
    "mse float64 target": lambda L, F: F.mse_loss(_mixed_operands(L)[0], _mixed_operands(L)[1].double()),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(MIXED_DTYPE_LOSSES))
def test_losses_of_mixed_dtypes_have_torchs_result_dtype(name):
    """bce_with_logits keeps the target's dtype and huber/soft_margin the input's (torch
    writes them in place); cross_entropy with probabilities and mse promote."""
    got, want = MIXED_DTYPE_LOSSES[name](kael, KF), MIXED_DTYPE_LOSSES[name](torch, TF)
    assert str(got.dtype) == str(want.dtype).removeprefix("torch.")
    assert got.shape == tuple(want.shape)
    half = "float16" in str(want.dtype) or "float16" in name
    np.testing.assert_allclose(
        got.double().numpy(), want.double().numpy(), rtol=2e-3 if half else 1e-6
    )
