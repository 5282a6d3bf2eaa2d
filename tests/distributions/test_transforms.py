"""Transforms against torch.distributions.transforms: values, inverses, log |det J|, shapes,
constraints, equality and caching."""

import numpy as np
import pytest
import torch
from distribution_helpers import assert_matches

import kael
import kael.distributions as D
from kael.distributions import transforms as T

rng = np.random.default_rng(21)
LIBS = {"kael": (kael, D), "torch": (torch, torch.distributions)}


def both(build):
    """(kael's transform, torch's) from `build(lib, namespace, tensor)`; `tensor` makes a
    float64 tensor of the library from a NumPy array."""
    made = []
    for lib, ns in LIBS.values():

        def tensor(value, lib=lib):
            return lib.tensor(np.asarray(value, dtype=np.float64), dtype=lib.float64)

        made.append(build(lib, ns, tensor))
    return made


def x_of(shape, low=None, high=None):
    return rng.normal(size=shape) if low is None else rng.uniform(low, high, shape)


LOC, SCALE = rng.normal(size=3), np.array([0.5, -2.0, 1.5])
# id: (builder, input x, whether torch defines log_abs_det_jacobian)
CASES = {
    "exp": (lambda lib, ns, t: ns.ExpTransform(), x_of((2, 3)), True),
    "power": (lambda lib, ns, t: ns.PowerTransform(t([0.5, 2.0, -1.0])), x_of((2, 3), 0.2, 3), True),
    "power-number": (lambda lib, ns, t: ns.PowerTransform(3.0), x_of((4,), 0.2, 3), True),
    "sigmoid": (lambda lib, ns, t: ns.SigmoidTransform(), x_of((2, 3)), True),
    "tanh": (lambda lib, ns, t: ns.TanhTransform(), x_of((2, 3)), True),
    "softplus": (lambda lib, ns, t: ns.SoftplusTransform(), x_of((2, 3)), True),
    "abs": (lambda lib, ns, t: ns.AbsTransform(), x_of((2, 3)), False),
    "affine": (lambda lib, ns, t: ns.AffineTransform(t(LOC), t(SCALE)), x_of((2, 3)), True),
    "affine-numbers": (lambda lib, ns, t: ns.AffineTransform(1.0, -2.0), x_of((2, 3)), True),
    "affine-event1": (
        lambda lib, ns, t: ns.AffineTransform(t(LOC), t(SCALE), event_dim=1), x_of((2, 3)), True
    ),
    "affine-event2-number": (
        lambda lib, ns, t: ns.AffineTransform(0.5, 3.0, event_dim=2), x_of((4, 2, 3)), True
    ),
    "softmax": (lambda lib, ns, t: ns.SoftmaxTransform(), x_of((2, 4)), False),
    "stick-breaking": (lambda lib, ns, t: ns.StickBreakingTransform(), x_of((2, 3)), True),
    "lower-cholesky": (lambda lib, ns, t: ns.LowerCholeskyTransform(), x_of((2, 3, 3)), False),
    "positive-definite": (
        lambda lib, ns, t: ns.PositiveDefiniteTransform(), x_of((2, 3, 3)), False
    ),
    "corr-cholesky": (lambda lib, ns, t: ns.CorrCholeskyTransform(), x_of((2, 6)), True),
    "compose": (
        lambda lib, ns, t: ns.ComposeTransform([ns.ExpTransform(), ns.AffineTransform(1.0, 2.0)]),
        x_of((2, 3)),
        True,
    ),
    "compose-event-dims": (
        lambda lib, ns, t: ns.ComposeTransform(
            [ns.AffineTransform(t(LOC), 2.0), ns.StickBreakingTransform(), ns.ExpTransform().inv]
        ),
        x_of((2, 3)),
        True,
    ),
    "identity": (lambda lib, ns, t: ns.identity_transform, x_of((2, 3)), True),
    "independent": (
        lambda lib, ns, t: ns.IndependentTransform(ns.SigmoidTransform(), 2), x_of((4, 2, 3)), True
    ),
    "reshape": (lambda lib, ns, t: ns.ReshapeTransform((2, 3), (6,)), x_of((4, 2, 3)), True),
    "cat-batch-dim": (
        lambda lib, ns, t: ns.CatTransform(
            [ns.ExpTransform(), ns.AffineTransform(0.0, 3.0)], dim=1, lengths=[2, 1]
        ),
        x_of((2, 3)),
        True,
    ),
    "cat-event-dim": (
        lambda lib, ns, t: ns.CatTransform(
            [ns.IndependentTransform(ns.ExpTransform(), 1), ns.AffineTransform(1.0, 2.0, 1)],
            dim=-1,
            lengths=[2, 1],
        ),
        x_of((2, 3)),
        True,
    ),
    "stack": (
        lambda lib, ns, t: ns.StackTransform(
            [ns.ExpTransform(), ns.SigmoidTransform(), ns.AffineTransform(1.0, 2.0)], dim=1
        ),
        x_of((2, 3)),
        True,
    ),
    "cdf": (
        lambda lib, ns, t: ns.CumulativeDistributionTransform(ns.Normal(t(0.5), t(2.0))),
        x_of((2, 3)),
        True,
    ),
}  # fmt: skip


def _tensors(x):
    return kael.tensor(x, dtype=kael.float64), torch.tensor(x, dtype=torch.float64)


@pytest.mark.parametrize("name", CASES)
def test_forward_inverse_and_log_abs_det_jacobian_match_torch(name):
    build, x, has_jacobian = CASES[name]
    kt, tt = both(build)
    kx, tx = _tensors(x)
    ky, ty = kt(kx), tt(tx)
    assert_matches(ky, ty, "float64")
    ky_np = ty.numpy()  # score both inverses at the same point
    assert_matches(kt.inv(kael.tensor(ky_np)), tt.inv(torch.tensor(ky_np)), "float64")
    if has_jacobian:
        assert_matches(kt.log_abs_det_jacobian(kx, ky), tt.log_abs_det_jacobian(tx, ty), "float64")
        got = kt.inv.log_abs_det_jacobian(ky, kx)
        assert_matches(got, tt.inv.log_abs_det_jacobian(ty, tx), "float64")
    else:
        with pytest.raises(NotImplementedError):
            kt.log_abs_det_jacobian(kx, ky)


@pytest.mark.parametrize("name", CASES)
def test_shapes_constraints_and_flags_match_torch(name):
    build, x, _ = CASES[name]
    kt, tt = both(build)
    y_shape = tt.forward_shape(torch.Size(x.shape))
    for k, t, shape in ((kt, tt, torch.Size(x.shape)), (kt.inv, tt.inv, y_shape)):
        out_shape = t.forward_shape(shape)
        assert k.forward_shape(tuple(shape)) == tuple(out_shape)
        assert k.inverse_shape(tuple(out_shape)) == tuple(t.inverse_shape(out_shape))
        assert k.bijective == t.bijective
        assert k.domain.event_dim == t.domain.event_dim
        assert k.codomain.event_dim == t.codomain.event_dim
        assert type(k.codomain).__name__ == type(t.codomain).__name__
    assert repr(kt).replace("kael", "torch") == repr(tt)


@pytest.mark.parametrize(
    "name", ["exp", "sigmoid", "power", "affine", "affine-numbers", "compose", "cdf"]
)
def test_sign_matches_torch(name):
    kt, tt = both(CASES[name][0])
    for k, t in ((kt, tt), (kt.inv, tt.inv)):
        if isinstance(t.sign, torch.Tensor):
            assert_matches(k.sign, t.sign, "float64")
        else:
            assert k.sign == t.sign


def test_sign_of_a_transform_without_one_is_not_implemented():
    with pytest.raises(NotImplementedError):
        _ = T.AbsTransform().sign


def test_outputs_lie_in_the_codomain():
    for name in ("stick-breaking", "corr-cholesky", "positive-definite", "lower-cholesky"):
        build, x, _ = CASES[name]
        kt, _ = both(build)
        assert bool(kt.codomain.check(kt(kael.tensor(x))).all()), name


def _k(value):
    return kael.tensor(np.asarray(value, dtype=np.float64))


EQUALITY = {
    "exp-exp": (lambda ns, t: ns.ExpTransform(), lambda ns, t: ns.ExpTransform()),
    "exp-sigmoid": (lambda ns, t: ns.ExpTransform(), lambda ns, t: ns.SigmoidTransform()),
    "power-equal": (lambda ns, t: ns.PowerTransform(t([2.0, 2.0])), lambda ns, t: ns.PowerTransform(t(2.0))),
    "power-differ": (lambda ns, t: ns.PowerTransform(t(2.0)), lambda ns, t: ns.PowerTransform(t(3.0))),
    "affine-number-tensor": (lambda ns, t: ns.AffineTransform(1.0, 2.0), lambda ns, t: ns.AffineTransform(t(1.0), t(2.0))),
    "affine-differ": (lambda ns, t: ns.AffineTransform(1.0, 2.0), lambda ns, t: ns.AffineTransform(1.0, -2.0)),
    "inverses": (lambda ns, t: ns.ExpTransform().inv, lambda ns, t: ns.ExpTransform().inv),
    "inverse-forward": (lambda ns, t: ns.ExpTransform().inv, lambda ns, t: ns.ExpTransform()),
    "compose": (lambda ns, t: ns.ComposeTransform([ns.ExpTransform()]), lambda ns, t: ns.ComposeTransform([ns.ExpTransform()])),
    "identity-empty": (lambda ns, t: ns.identity_transform, lambda ns, t: ns.ComposeTransform([])),
    "reshape-by-identity": (lambda ns, t: ns.ReshapeTransform((2,), (2,)), lambda ns, t: ns.ReshapeTransform((2,), (2,))),
    "corr-by-identity": (lambda ns, t: ns.CorrCholeskyTransform(), lambda ns, t: ns.CorrCholeskyTransform()),
}  # fmt: skip


@pytest.mark.parametrize("name", EQUALITY)
def test_equality_matches_torch(name):
    first, second = EQUALITY[name]
    (k1, t1), (k2, t2) = (
        both(lambda lib, ns, t: first(ns, t)),
        both(lambda lib, ns, t: second(ns, t)),
    )
    assert (k1 == k2) == (t1 == t2)
    assert (k1 != k2) == (t1 != t2)


def test_inverse_of_the_inverse_is_the_transform():
    t = T.AffineTransform(1.0, 2.0)
    assert t.inv.inv is t
    assert t.inv is t.inv
    compose = T.ComposeTransform([T.ExpTransform(), t])
    assert compose.inv.inv is compose


@pytest.mark.parametrize(
    "make",
    [T.ExpTransform, lambda **c: T.AffineTransform(1.0, 2.0, **c), lambda **c: T.CatTransform([T.ExpTransform()], **c)],
)  # fmt: skip
def test_cache_of_one_returns_the_last_pair(make):
    t = make(cache_size=1)
    x = _k([0.5])
    y = t(x)
    assert t(x) is y
    assert t.inv(y) is x
    assert t.inv(kael.tensor([2.0])) is not x  # a new value is computed
    uncached = make()
    assert uncached(x) is not uncached(x)


def test_with_cache_rebuilds_only_when_the_size_changes():
    t = T.PowerTransform(2.0)
    assert t.with_cache(0) is t
    cached = t.with_cache(1)
    assert cached._cache_size == 1 and cached == t
    compose = T.ComposeTransform([T.ExpTransform(), t], cache_size=1)
    assert all(part._cache_size == 1 for part in compose.parts)
    assert t.inv.with_cache(1).inv._cache_size == 1
    independent = T.IndependentTransform(t, 1, cache_size=1)
    assert independent.base_transform._cache_size == 1


@pytest.mark.parametrize("size", [-1, 2])
def test_cache_sizes_other_than_zero_and_one_are_refused(size):
    with pytest.raises(kael.ValueError, match="cache_size must be 0 or 1"):
        T.ExpTransform(cache_size=size)


BAD = {
    "event-dim": (lambda: T.CorrCholeskyTransform().event_dim, "Please use either .domain.event_dim"),
    "reshape-numel": (lambda: T.ReshapeTransform((2, 3), (5,)), "different numbers of elements"),
    "reshape-shape": (lambda: T.ReshapeTransform((2, 3), (6,)).forward_shape((4, 3, 2)), r"Shape mismatch: expected kael.Size\(\[3, 2\]\) but got kael.Size\(\[2, 3\]\)"),
    "reshape-dims": (lambda: T.ReshapeTransform((2, 3), (6,)).inverse_shape(()), "Too few dimensions on input"),
    "independent-dims": (lambda: T.IndependentTransform(T.ExpTransform(), 2)(_k([1.0])), "Too few dimensions on input"),
    "corr-length": (lambda: T.CorrCholeskyTransform().forward_shape((4,)), "not a flattened lower-diagonal"),
    "corr-square": (lambda: T.CorrCholeskyTransform().inverse_shape((2, 3)), "Input is not square"),
    "stick-dims": (lambda: T.StickBreakingTransform().forward_shape(()), "Too few dimensions on input"),
    "cat-lengths": (lambda: T.CatTransform([T.ExpTransform()], lengths=[1, 2]), r"lengths \(2\) must match transforms \(1\)"),
    "cat-elements": (lambda: T.CatTransform([T.ExpTransform(), 1.0]), "All elements of tseq must be Transform"),
    "cat-size": (lambda: T.CatTransform([T.ExpTransform()], lengths=[2])(_k([1.0])), r"x.size\(0\) = 1 must equal length 2"),
    "cat-dim": (lambda: T.CatTransform([T.ExpTransform()], dim=1)(_k([1.0])), "dim 1 out of range for tensor with 1 dimensions"),
    "stack-size": (lambda: T.StackTransform([T.ExpTransform()]).inv(_k([1.0, 2.0])), r"y.size\(0\) = 2 must equal len\(transforms\) 1"),
    "stack-jacobian-dim": (lambda: T.StackTransform([T.ExpTransform()], dim=2).log_abs_det_jacobian(_k([1.0]), _k([1.0])), "dim 2 out of range for x with 1 dimensions"),
}  # fmt: skip


@pytest.mark.parametrize("name", BAD)
def test_bad_arguments_raise_torchs_messages(name):
    fn, message = BAD[name]
    with pytest.raises(kael.ValueError, match=message):
        fn()


def test_transform_module_is_exported_with_torchs_names():
    assert D.transforms is T
    assert set(T.__all__) == set(torch.distributions.transforms.__all__)
    assert all(getattr(D, name) is getattr(T, name) for name in T.__all__)
