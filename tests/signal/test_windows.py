"""kael.signal.windows against torch.signal.windows: values, dtype and shape of every
window over both sym values and the edge lengths, and torch's refusals."""

import pytest
import torch
import torch.signal.windows as T

import kael
import kael.signal.windows as K

# (name, parameters): every window, the parametrized ones off their defaults too
WINDOWS = [
    ("bartlett", {}), ("blackman", {}), ("cosine", {}), ("hamming", {}), ("hann", {}),
    ("nuttall", {}), ("exponential", {}), ("exponential", {"tau": 2.5}),
    ("gaussian", {}), ("gaussian", {"std": 3.0}), ("kaiser", {}), ("kaiser", {"beta": 5.5}),
    ("kaiser", {"beta": 0.0}), ("general_hamming", {}), ("general_hamming", {"alpha": 0.6}),
    ("general_cosine", {"a": [0.5, 0.3, 0.2]}), ("general_cosine", {"a": (1.0,)}),
]  # fmt: skip
DTYPES = [(kael.float32, torch.float32), (kael.float64, torch.float64)]


def _ids(case):
    name, params = case
    return name + "".join(f"-{k}={v}" for k, v in params.items())


@pytest.mark.parametrize("M", [0, 1, 2, 7, 64, 255])
@pytest.mark.parametrize("sym", [True, False], ids=["sym", "periodic"])
@pytest.mark.parametrize("dtypes", DTYPES, ids=["float32", "float64"])
@pytest.mark.parametrize("case", WINDOWS, ids=_ids)
def test_window_matches_torch(case, dtypes, sym, M):
    name, params = case
    got = getattr(K, name)(M, sym=sym, dtype=dtypes[0], **params)
    want = getattr(T, name)(M, sym=sym, dtype=dtypes[1], **params)
    assert got.dtype == dtypes[0] and tuple(got.shape) == tuple(want.shape)
    tol = 1e-6 if dtypes[0] is kael.float32 else 1e-13
    torch.testing.assert_close(torch.from_numpy(got.numpy()), want, rtol=tol, atol=tol)


def test_exponential_takes_a_center_for_periodic_windows():
    got = K.exponential(9, center=2.0, tau=1.5, sym=False)
    want = T.exponential(9, center=2.0, tau=1.5, sym=False)
    torch.testing.assert_close(torch.from_numpy(got.numpy()), want)


def test_layout_strided_is_taken_as_torch():
    assert K.kaiser(6, layout=kael.strided).tolist() == K.kaiser(6).tolist()


def test_default_dtype_is_kaels_default():
    kael.set_default_dtype(kael.float64)
    try:
        assert K.hann(4).dtype == kael.float64
    finally:
        kael.set_default_dtype(kael.float32)
    assert K.hann(4).dtype == kael.float32


def test_windows_are_reachable_as_kael_signal_windows():
    assert kael.signal.windows.hann is K.hann and K.hann.__name__ == "hann"


@pytest.mark.parametrize(
    "call, error, match",
    [
        (lambda: K.hann(-1), kael.ValueError, "hann requires non-negative window length, got M=-1"),
        (lambda: K.hann(5, dtype=kael.float16), kael.ValueError, "float32 or float64 dtypes, got"),
        (lambda: K.kaiser(5, dtype=kael.int64), kael.ValueError, "float32 or float64"),
        (lambda: K.hann(2.5), kael.TypeError, "M must be an int, got float"),
        (lambda: K.hann(True), kael.TypeError, "M must be an int, got bool"),
        (lambda: K.exponential(5, tau=0.0), kael.ValueError, "Tau must be positive, got: 0.0"),
        (lambda: K.exponential(5, center=1.0), kael.ValueError, "Center must be None"),
        (lambda: K.gaussian(5, std=-1.0), kael.ValueError, "Standard deviation must be positive"),
        (lambda: K.kaiser(5, beta=-0.5), kael.ValueError, "beta must be non-negative, got: -0.5"),
        (lambda: K.general_cosine(5, a=3), kael.TypeError, "Coefficients must be a list/tuple"),
        (lambda: K.general_cosine(5, a=[]), kael.ValueError, "Coefficients cannot be empty"),
        (lambda: K.hann(5, alpha=0.3), kael.TypeError, "unexpected keyword argument 'alpha'"),
        (lambda: K.hann(5, requires_grad=True), kael.Error, "requires_grad=True"),
        (lambda: K.hann(5, layout="sparse"), kael.ValueError, "strided tensors only, got: sparse"),
    ],
)
def test_bad_arguments_raise_typed_errors(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_empty_window_still_checks_its_arguments():
    """M = 0 gives an empty window, but only past the dtype check (as torch)."""
    assert tuple(K.hann(0).shape) == (0,)
    with pytest.raises(kael.ValueError, match="float32 or float64"):
        K.hann(0, dtype=kael.float16)


@pytest.mark.parametrize(
    ("name", "kwargs", "message"),
    [
        ("exponential", {"tau": -1.0}, "Tau must be positive"),
        ("exponential", {"center": 1.0}, "Center must be None for symmetric windows"),
        ("gaussian", {"std": 0.0}, "Standard deviation must be positive"),
        ("kaiser", {"beta": -1.0}, "beta must be non-negative"),
    ],
)
def test_an_empty_window_still_checks_its_parameters_as_torch(name, kwargs, message):
    with pytest.raises(ValueError, match=message):
        getattr(torch.signal.windows, name)(0, **kwargs)
    with pytest.raises(kael.ValueError, match=message):
        getattr(kael.signal.windows, name)(0, **kwargs)


def test_general_cosine_needs_its_coefficients_as_torch():
    with pytest.raises(TypeError):
        torch.signal.windows.general_cosine(1)
    with pytest.raises(kael.TypeError, match="missing 1 required keyword-only argument: 'a'"):
        kael.signal.windows.general_cosine(1)
    for M in (0, 1):  # torch answers these before it looks at the coefficients
        want = torch.signal.windows.general_cosine(M, a=[])
        assert kael.signal.windows.general_cosine(M, a=[]).tolist() == want.tolist()
