"""Python's own errors that a badly typed argument raises inside an op leave its door as
kael's typed errors (tracing.op_door), naming the op; the huge counts that built Python
lists or exact integers are refused or computed without them."""

import pytest

import kael
import kael.nn.functional as F

X = kael.ones(2, 3, 4)

LEAKS = {  # each raised a bare Python TypeError, ValueError, AttributeError, ... before
    "pad by an int": (lambda: kael.constant_pad_nd(X, 2), kael.TypeError, "pad"),
    "rms_norm of None": (lambda: F.rms_norm(X, None), kael.TypeError, "rms_norm"),
    "histc of None bins": (lambda: kael.histc(X, None), kael.TypeError, "histc"),
    "group_norm of None": (lambda: F.group_norm(X, None), kael.TypeError, "num_groups"),
    "adaptive pool of a str": (lambda: F.adaptive_avg_pool1d(X, "x"), kael.TypeError, "adaptive"),
    "pdist of None": (lambda: F.pdist(kael.ones(3, 2), None), kael.TypeError, "pdist"),
    "rrelu of a str": (lambda: F.rrelu(X, "x"), kael.TypeError, "rrelu"),
    "celu of a str": (lambda: kael.celu(X, "x"), kael.TypeError, "celu"),
    "quantile of a str": (lambda: kael.quantile(X, "x"), kael.ValueError, "quantile"),
    "quantile of None": (lambda: kael.quantile(X, None), kael.TypeError, "quantile"),
    "embedding_renorm_ of an int": (
        lambda: kael.embedding_renorm_(kael.ones(3, 2), 2, 1.0, 2.0),
        kael.TypeError,
        "renorm",
    ),
    "instance_norm of an int": (lambda: F.instance_norm(X, 2), kael.TypeError, "instance_norm"),
    "segment_reduce of a list": (lambda: kael.segment_reduce(X, [1, 2]), kael.TypeError, "segment"),
    "lp_pool of order 0": (
        lambda: F.lp_pool1d(kael.ones(1, 1, 4), 0, 2),
        kael.ValueError,
        "lp_pool",
    ),
}


@pytest.mark.parametrize("case", list(LEAKS))
def test_a_python_error_inside_an_op_is_a_typed_kael_error_naming_it(case):
    call, error, named = LEAKS[case]
    with pytest.raises(error, match=named):
        call()


def test_python_argument_errors_keep_their_own_message():
    with pytest.raises(kael.TypeError, match=r"^add\(\) missing 1 required positional argument"):
        kael.add(kael.ones(1))


def test_combinations_past_the_grid_int64_holds_is_refused_or_empty():
    assert kael.combinations(kael.arange(4.0), 2**62).shape == (0, 2**62)  # r > n: none
    with pytest.raises(kael.ValueError, match=r"spans a grid of 4\*\*70 positions"):
        kael.combinations(kael.arange(4.0), 70, with_replacement=True)


def test_matrix_exp_of_a_norm_past_float64_scaling_is_nan_as_torchs():
    got = kael.linalg.matrix_exp(kael.eye(3, dtype=kael.float64) * 1e308)
    assert got.isnan().all().item()


CHECKS = {  # what torch refuses and kael took: (call, kael error, its message)
    "multi_margin weight size": (
        lambda L, F: F.multi_margin_loss(L.ones(2, 5), L.tensor([0, 1]), weight=L.ones(3)),
        kael.ValueError,
        "inconsistent weight size, expected 5",
    ),
    "triplet margin": (
        lambda L, F: F.triplet_margin_loss(L.ones(2, 3), L.ones(2, 3), L.zeros(2, 3), margin=-1),
        kael.ValueError,
        "margin must be greater than 0",
    ),
    "huber delta 0": (
        lambda L, F: F.huber_loss(L.ones(3), L.zeros(3), delta=0.0),
        kael.ValueError,
        "non-positive values for delta",
    ),
    "bce NaN input": (
        lambda L, F: F.binary_cross_entropy(L.tensor([float("nan"), 0.5]), L.tensor([1.0, 0.0])),
        kael.ValueError,
        "input should be between 0 and 1",
    ),
    "bce target 2": (
        lambda L, F: F.binary_cross_entropy(L.tensor([0.3, 0.5]), L.tensor([2.0, 0.0])),
        kael.ValueError,
        "target should be between 0 and 1",
    ),
    "cdist p NaN": (
        lambda L, F: L.cdist(L.ones(2, 3), L.ones(2, 3), p=float("nan")),
        kael.ValueError,
        "non-negative p",
    ),
}


@pytest.mark.parametrize("case", list(CHECKS))
def test_arguments_torch_refuses_are_refused(case):
    import torch

    call, error, message = CHECKS[case]
    with pytest.raises((RuntimeError, ValueError)):
        call(torch, torch.nn.functional)
    with pytest.raises(error, match=message):
        call(kael, kael.nn.functional)


@pytest.mark.parametrize("name", ["softmax", "log_softmax", "softmin"])
def test_functional_softmaxes_pick_torchs_implicit_dim_and_warn(name):
    import torch

    for shape in [(3,), (2, 3), (2, 3, 4), (2, 3, 4, 5)]:
        x = kael.arange(float(torch.Size(shape).numel())).reshape(shape) / 10
        with pytest.warns(UserWarning, match=f"Implicit dimension choice for {name}"):
            got = getattr(F, name)(x)
        with pytest.warns(UserWarning):
            want = getattr(torch.nn.functional, name)(torch.from_dlpack(x))
        torch.testing.assert_close(torch.from_dlpack(got), want)
    with pytest.raises(kael.TypeError, match="dim must be an int"):  # torch.softmax needs it
        getattr(kael, name)(kael.ones(2), None) if name != "softmin" else kael.softmax(X, None)


def test_a_users_callback_error_inside_an_op_keeps_its_own_type():
    class Mine(ValueError):
        pass

    def boom(value):
        raise Mine("from the callback")

    with pytest.raises(Mine, match="from the callback"):
        kael.ones(2).apply_(boom)
