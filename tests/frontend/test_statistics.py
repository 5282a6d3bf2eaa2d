"""cov, corrcoef, trapezoid, trapz and cumulative_trapezoid (frontend/statistics.py) against
PyTorch: values, dtype and shape over contiguous, transposed, sliced, expanded, 0-d and empty
inputs and each dtype PyTorch takes, the weights' promotion, NaN where PyTorch gives NaN,
and the typed errors for what PyTorch refuses."""

import warnings

import numpy as np
import pytest
import torch
from parity_helpers import LAYOUTS, close_to_torch
from parity_helpers import layout_pair as make

import kael

NUMERIC = [kael.float32, kael.float64, kael.int64, kael.float16, kael.bfloat16]
# sums and products reorder between kael and torch: tight tolerances per result dtype
TOL = {kael.float32: 1e-5, kael.float64: 1e-12, kael.float16: 1e-2, kael.bfloat16: 3e-2}


@pytest.fixture(autouse=True)
def _own_data(request, monkeypatch):
    """Each test's data from a generator of its own, whatever ran before it: a divisor of
    no degrees of freedom turns a sum that is 0 up to rounding into inf or NaN by its sign,
    so a test's values must not depend on the suite's order."""
    import zlib

    import parity_helpers

    seed = zlib.crc32(request.node.name.encode())
    monkeypatch.setattr(parity_helpers, "_LAYOUT_RNG", np.random.default_rng(seed))


def check(k, t):
    close_to_torch(k, t, TOL.get(k.dtype, 0), equal_nan=True)


def quiet(fn, *args, **kwargs):
    """fn's result with the degrees-of-freedom warning (checked on its own) silenced."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return fn(*args, **kwargs)


# ---- cov and corrcoef ------------------------------------------------------------------------

COV_SHAPES = [(3, 5), (2, 7), (5,), (1, 4), (4, 1), (), (0, 3), (3, 0), (0,)]


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", NUMERIC, ids=str)
@pytest.mark.parametrize("name", ["cov", "corrcoef"])
def test_cov_and_corrcoef_match_torch_with_integer_input_promoted(name, dtype, layout):
    for shape in COV_SHAPES:
        k, t = make(shape, dtype, layout)
        check(quiet(getattr(kael, name), k), quiet(getattr(torch, name), t))
        check(quiet(getattr(k, name)), quiet(getattr(t, name)))


@pytest.mark.parametrize("correction", [0, 1, 2, 5, -1])
def test_cov_correction_matches_torch(correction):
    # fixed data whose every product sum is at least 3 away from 0: at correction 5 (no
    # degrees of freedom) the division by 0 turns each sum's sign into inf's, so a sum that
    # is 0 up to rounding (shared random data may hold one) would compare rounding noise
    values = np.random.default_rng(1).integers(-3, 4, (3, 5))
    k, t = kael.tensor(values).double(), torch.tensor(values).double()
    check(quiet(kael.cov, k, correction=correction), quiet(torch.cov, t, correction=correction))


WEIGHTS = [
    (kael.float32, kael.int64, None),
    (kael.float32, kael.int32, kael.float32),
    (kael.float64, None, kael.float64),
    (kael.int64, None, kael.float64),  # integer input with float64 aweights: float64
    (kael.int64, kael.int64, kael.float16),  # ... with float16 aweights: float16
    (kael.float16, None, kael.float64),
    (kael.float32, kael.uint8, kael.float64),
]


@pytest.mark.parametrize("correction", [0, 1, 3])
@pytest.mark.parametrize("dtype,fdtype,adtype", WEIGHTS, ids=str)
def test_cov_weights_promote_and_weigh_as_torch(dtype, fdtype, adtype, correction):
    k, t = make((3, 6), dtype, "transposed")
    kw, tw = {}, {}
    if fdtype is not None:
        kw["fweights"], tw["fweights"] = make((6,), fdtype, "sliced", low=0, high=4)
    if adtype is not None:
        kw["aweights"], tw["aweights"] = make((6,), adtype, low=1, high=5)
    got = quiet(kael.cov, k, correction=correction, **kw)
    check(got, quiet(torch.cov, t, correction=correction, **tw))
    check(quiet(k.cov, correction=correction, **kw), quiet(t.cov, correction=correction, **tw))


def test_cov_of_one_observation_with_0d_weights_matches_torch():
    (k, t), (kf, tf) = make((2, 1)), make((), kael.int64, low=2, high=3)
    check(quiet(kael.cov, k, fweights=kf), quiet(torch.cov, t, fweights=tf))


def test_cov_of_random_floats_matches_torch_closely():
    t = torch.randn(4, 50, dtype=torch.float64, generator=torch.Generator().manual_seed(3))
    k = kael.from_dlpack(t.clone())
    check(kael.cov(k), torch.cov(t))
    check(kael.corrcoef(k), torch.corrcoef(t))
    aw = torch.rand(50, dtype=torch.float64, generator=torch.Generator().manual_seed(4))
    check(kael.cov(k, aweights=kael.from_dlpack(aw.clone())), torch.cov(t, aweights=aw))


def test_corrcoef_gives_nan_for_constant_variables_and_clips_to_one():
    k, t = kael.ones(2, 4), torch.ones(2, 4)
    got = kael.corrcoef(k)
    check(got, torch.corrcoef(t))
    assert torch.from_dlpack(got).isnan().all()
    x = torch.tensor([[1.0, 2.0, 3.0, 4.0], [2.0, 4.0, 6.0, 8.0], [1.0, 1.0, 1.0, 2.0]])
    got = kael.corrcoef(kael.from_dlpack(x.clone()))
    check(got, torch.corrcoef(x))
    assert torch.from_dlpack(got).abs().max() <= 1


@pytest.mark.parametrize(
    "shape,kw", [((), {}), ((2, 1), {}), ((3, 0), {}), ((2, 3), {"correction": 3})]
)
def test_cov_warns_as_torch_when_degrees_of_freedom_are_not_positive(shape, kw):
    k, t = make(shape)
    with pytest.warns(UserWarning, match=r"cov\(\): degrees of freedom is <= 0"):
        got = kael.cov(k, **kw)
    with pytest.warns(UserWarning):
        check(got, torch.cov(t, **kw))


def test_cov_does_not_warn_with_enough_observations():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert kael.cov(kael.ones(2, 3)).shape == (2, 2)


X = kael.ones(2, 3)
COV_ERRORS = [
    (lambda: kael.cov(kael.ones(2, 2, 2)), kael.ValueError, r"two or fewer dimensions but got an input with 3"),
    (lambda: kael.corrcoef(kael.ones(2, 2, 2)), kael.ValueError, r"corrcoef\(\): expected input to have two or fewer dimensions but got an input with 3"),
    (lambda: kael.cov(X.bool()), kael.TypeError, r"cov\(\): bool dtype is not supported for input"),
    (lambda: kael.corrcoef(X.bool()), kael.TypeError, r"cov\(\): bool dtype is not supported"),
    (lambda: kael.cov([1.0, 2.0]), kael.TypeError, r"cov\(\): input must be a Tensor, got list"),
    (lambda: kael.cov(X, correction=1.5), kael.TypeError, r"argument 'correction' must be int, not float"),
    (lambda: kael.cov(X, correction=True), kael.TypeError, r"argument 'correction' must be int, not bool"),
    (lambda: kael.cov(X, fweights=kael.ones(3)), kael.TypeError, r"expected fweights to have integral dtype but got fweights with float32 dtype"),
    (lambda: kael.cov(X, fweights=kael.ones(3).bool()), kael.TypeError, r"fweights to have integral dtype but got fweights with bool"),
    (lambda: kael.cov(X, fweights=kael.ones(1, 3).long()), kael.ValueError, r"fweights to have one or fewer dimensions but got fweights with 2 dimensions"),
    (lambda: kael.cov(X, fweights=kael.ones(2).long()), kael.ValueError, r"fweights to have the same numel as there are observations in the input but got 2 != 3"),
    (lambda: kael.cov(X, fweights=kael.tensor([1, -2, 1])), kael.ValueError, r"fweights cannot be negative, got a weight of -2"),
    (lambda: kael.cov(X, fweights=kael.tensor([0, 0, 0])), kael.ValueError, r"weights sum to zero, can't be normalized"),
    (lambda: kael.cov(X, fweights=[1, 1, 1]), kael.TypeError, r"cov\(\): fweights must be a Tensor, got list"),
    (lambda: kael.cov(X, aweights=kael.tensor([1, 1, 1])), kael.TypeError, r"aweights to have floating point dtype but got aweights with int64"),
    (lambda: kael.cov(X, aweights=kael.ones(1, 3)), kael.ValueError, r"aweights with 2 dimensions"),
    (lambda: kael.cov(X, aweights=kael.ones(4)), kael.ValueError, r"aweights to have the same numel .* got 4 != 3"),
    (lambda: kael.cov(X, aweights=kael.tensor([1.0, -0.5, 1.0])), kael.ValueError, r"aweights cannot be negative, got a weight of -0.5"),
    (lambda: kael.cov(X, aweights=kael.zeros(3)), kael.ValueError, r"weights sum to zero"),
]  # fmt: skip


@pytest.mark.parametrize("call,error,message", COV_ERRORS)
def test_cov_and_corrcoef_refuse_what_torch_refuses(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_cov_and_corrcoef_are_methods_and_integration_is_not():
    assert callable(kael.Tensor.cov) and callable(kael.Tensor.corrcoef)
    for name in ("trapezoid", "trapz", "cumulative_trapezoid"):
        assert not hasattr(kael.Tensor, name)


# ---- trapezoid, trapz, cumulative_trapezoid --------------------------------------------------

INTEGRALS = ["trapezoid", "trapz", "cumulative_trapezoid"]


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", NUMERIC, ids=str)
@pytest.mark.parametrize("name", INTEGRALS)
def test_integrals_with_constant_spacing_match_torch(name, dtype, layout):
    k, t = make((3, 5), dtype, layout)
    kf, tf = getattr(kael, name), getattr(torch, name)
    check(kf(k), tf(t))
    for dim in (0, 1, -1, -2):
        for dx in (1, 0.25, -3.0):
            check(kf(k, dx=dx, dim=dim), tf(t, dx=dx, dim=dim))
    k1, t1 = make((6,), dtype, layout)
    check(kf(k1, dx=2.5), tf(t1, dx=2.5))


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", NUMERIC, ids=str)
@pytest.mark.parametrize("name", INTEGRALS)
def test_integrals_over_sample_points_promote_y_and_x_as_torch(name, dtype, layout):
    k, t = make((3, 5), dtype, layout)
    kf, tf = getattr(kael, name), getattr(torch, name)
    for xdtype in (kael.float32, kael.float64, kael.int64, kael.float16):
        kx, tx = make((5,), xdtype, layout)
        check(kf(k, kx), tf(t, tx))
        check(kf(k, kx, dim=1), tf(t, tx, dim=1))
        kx0, tx0 = make((3,), xdtype, layout)
        check(kf(k, kx0, dim=0), tf(t, tx0, dim=0))
        kx2, tx2 = make((3, 5), xdtype, layout)  # x of y's shape: its own spacing per row
        check(kf(k, kx2, dim=-2), tf(t, tx2, dim=-2))
        check(kf(k, kx2), tf(t, tx2))


@pytest.mark.parametrize("name", INTEGRALS)
def test_integrals_broadcast_lower_rank_and_shorter_x_as_torch(name):
    k, t = make((2, 3, 4), kael.float64)
    kf, tf = getattr(kael, name), getattr(torch, name)
    kx, tx = make((3, 4), kael.float64)  # padded to [1, 3, 4]
    check(kf(k, kx), tf(t, tx))
    check(kf(k, kx, dim=1), tf(t, tx, dim=1))
    kx, tx = make((2, 4), kael.float64)  # [2, 4] along dim 0 of a [3, 4] y: dx [1, 4]
    k2, t2 = make((3, 4), kael.float64)
    check(kf(k2, kx, dim=0), tf(t2, tx, dim=0))


def test_integrals_of_random_floats_match_torch_closely():
    g = torch.Generator().manual_seed(7)
    t, tx = torch.randn(4, 30, generator=g), torch.rand(30, generator=g).cumsum(0)
    k, kx = kael.from_dlpack(t.clone()), kael.from_dlpack(tx.clone())
    for name in INTEGRALS:
        check(getattr(kael, name)(k, kx), getattr(torch, name)(t, tx))
        check(getattr(kael, name)(k, dx=0.1), getattr(torch, name)(t, dx=0.1))


@pytest.mark.parametrize("dtype", [kael.float32, kael.int64, kael.bool, kael.float16], ids=str)
@pytest.mark.parametrize("shape,dim", [((3, 0), -1), ((0, 3), 0), ((0,), 0), ((0, 0), 1)])
def test_trapezoid_of_no_samples_is_zero_in_ys_dtype(shape, dim, dtype):
    k, t = make(shape, dtype, low=0, high=2)
    for name in ("trapezoid", "trapz"):
        check(getattr(kael, name)(k, dim=dim), getattr(torch, name)(t, dim=dim))
    kx, tx = make((shape[dim],), kael.float32)
    check(kael.trapezoid(k, kx, dim=dim), torch.trapezoid(t, tx, dim=dim))


@pytest.mark.parametrize("dtype", [kael.float32, kael.int64, kael.float16], ids=str)
@pytest.mark.parametrize("shape,dim", [((3, 0), -1), ((0, 3), 0), ((3, 1), 1), ((1,), 0)])
def test_integrals_of_one_or_no_samples_match_torch(shape, dim, dtype):
    k, t = make(shape, dtype)
    check(kael.cumulative_trapezoid(k, dim=dim), torch.cumulative_trapezoid(t, dim=dim))
    kx, tx = make((shape[dim],), kael.float32)
    check(kael.cumulative_trapezoid(k, kx, dim=dim), torch.cumulative_trapezoid(t, tx, dim=dim))
    check(kael.trapezoid(k, dim=dim), torch.trapezoid(t, dim=dim))


def test_dx_may_be_a_0d_tensor_or_an_int():
    k, t = make((2, 4), kael.int64)
    check(kael.trapezoid(k, dx=kael.tensor(2.5)), torch.trapezoid(t, dx=torch.tensor(2.5)))
    check(kael.cumulative_trapezoid(k, dx=3), torch.cumulative_trapezoid(t, dx=3))
    check(kael.trapz(k, dx=3), torch.trapz(t, dx=3))


Y = kael.ones(3, 4)
INTEGRAL_ERRORS = [
    (lambda: kael.trapezoid(kael.tensor(1.0)), kael.IndexError, r"trapezoid\(\): Dimension specified as -1 but tensor has no dimensions"),
    (lambda: kael.cumulative_trapezoid(kael.tensor(1.0)), kael.IndexError, r"slice\(\) cannot be applied to a 0-dim tensor"),
    (lambda: kael.trapezoid(Y, dim=2), kael.IndexError, r"Dimension out of range \(expected to be in range of \[-2, 1\], but got 2\)"),
    (lambda: kael.cumulative_trapezoid(Y, dim=-3), kael.IndexError, r"but got -3\)"),
    (lambda: kael.trapezoid(Y.bool()), kael.TypeError, r"trapezoid: received a bool input for `y`, but bool is not supported"),
    (lambda: kael.cumulative_trapezoid(Y.bool()), kael.TypeError, r"cumulative_trapezoid: received a bool input for `y`"),
    (lambda: kael.trapezoid(Y, kael.ones(4).bool()), kael.TypeError, r"bool input for `x` or `y`.*x: bool, y: float32"),
    (lambda: kael.trapezoid(Y, kael.ones(3)), kael.ValueError, r"trapezoid: There must be one `x` value for each sample point, got 3 x values for 4 samples"),
    (lambda: kael.cumulative_trapezoid(Y, kael.ones(5)), kael.ValueError, r"cumulative_trapezoid: There must be one `x` value .* got 5 x values for 4"),
    (lambda: kael.trapezoid(Y, kael.ones(2, 3, 4)), kael.ValueError, r"cannot be broadcast"),
    (lambda: kael.trapezoid(Y, kael.ones(4), dx=2.0), kael.TypeError, r"trapezoid\(\): takes x or dx, not both \(got x: Tensor, dx: 2.0\)"),
    (lambda: kael.trapz(Y, kael.ones(4), dx=2.0), kael.TypeError, r"trapz\(\): takes x or dx, not both"),
    (lambda: kael.trapezoid(Y, 2.0), kael.TypeError, r"trapezoid\(\): argument 'x' must be Tensor, not float"),
    (lambda: kael.trapz(Y, 2.0), kael.TypeError, r"trapz\(\): argument 'x' must be Tensor, not float"),
    (lambda: kael.trapezoid(Y, dx=True), kael.ValueError, r"only support dx as a real number, got True"),
    (lambda: kael.cumulative_trapezoid(Y, dx=1j), kael.ValueError, r"only support dx as a real number, got 1j"),
    (lambda: kael.trapezoid(Y, dx="a"), kael.TypeError, r"argument 'dx' must be a number, not str"),
    (lambda: kael.trapezoid(Y, dx=kael.ones(2)), kael.TypeError, r"argument 'dx' must be a number, got a 1-d tensor"),
    (lambda: kael.trapezoid(Y, dim=1.0), kael.TypeError, r"trapezoid\(\): argument 'dim' must be int, not float"),
    (lambda: kael.trapezoid([1.0, 2.0]), kael.TypeError, r"trapezoid\(\): y must be a Tensor, got list"),
]  # fmt: skip


@pytest.mark.parametrize("call,error,message", INTEGRAL_ERRORS)
def test_integrals_refuse_what_torch_refuses(call, error, message):
    with pytest.raises(error, match=message):
        call()


# ---- compile ---------------------------------------------------------------------------------


def test_the_family_runs_inside_compile_with_eagers_values():
    @kael.compile
    def f(x, w):
        return kael.cov(x, fweights=w) + kael.corrcoef(x) + kael.trapezoid(x, dx=0.5).sum()

    (k, _), (kw, _) = make((3, 5), kael.float64), make((5,), kael.int64, low=1, high=4)
    eager = kael.cov(k, fweights=kw) + kael.corrcoef(k) + kael.trapezoid(k, dx=0.5).sum()
    for _ in range(2):
        check(f(k, kw), torch.from_dlpack(eager.contiguous()))
