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
