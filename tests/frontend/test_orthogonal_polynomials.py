"""torch.special's orthogonal polynomials (frontend/orthogonal_polynomials.py) against PyTorch:
values over x and n broadcast (each branch: n < 0, the ends, the closed forms, the
recurrence, overflow), non-integer and non-finite n, numbers for x or n, dtypes, layouts,
the chunked recurrence past one kernel's steps, out= and errors."""

import math

import numpy as np
import pytest
import torch
from parity_helpers import close_to_torch
from parity_helpers import torch_pair as pair

import kael
from kael.frontend import orthogonal_polynomials
from kael.frontend.orthogonal_polynomials import UNROLL

RNG = np.random.default_rng(53)
CHEBYSHEV = [f"{s}chebyshev_polynomial_{k}" for s in ("", "shifted_") for k in "tuvw"]
NAMES = [*CHEBYSHEV, "hermite_polynomial_h", "hermite_polynomial_he", "laguerre_polynomial_l",
         "legendre_polynomial_p"]  # fmt: skip
EPS = {kael.float32: 2.0**-23, kael.float64: 2.0**-52}
# n over each branch: negative, 0 and 1, the recurrence, Chebyshev's closed-form thresholds
# (4, 6, 8) on both sides; 12 needs 11 steps (one kernel).
DEGREES = np.array([-3, -1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 12])


def _xs(name: str) -> np.ndarray:
    """x over the polynomial's interesting range, its ends (and beside them), zero, large."""
    ends = [0.0, 1.0] if name.startswith("shifted") else [-1.0, 1.0]
    near = [np.nextafter(e, s) for e in ends for s in (-np.inf, np.inf)]
    spread = (
        RNG.uniform(-0.3, 1.3, 24) if name.startswith("shifted") else RNG.uniform(-1.4, 1.4, 24)
    )
    return np.concatenate([spread, ends, near, [0.0, -0.0, 0.5, 3.0, -3.0, 40.0]])


def _majorant_terms(name: str, x: np.ndarray, m: int):
    """|coefficients| of the step P_{m+1} = a P_m + b P_{m-1} and |P_1|, for the majorant."""
    y = np.abs(2 * x - 1) if name.startswith("shifted") else np.abs(x)
    if name in CHEBYSHEV:
        first = {"t": y, "u": 2 * y, "v": 2 * y + 1, "w": 2 * y + 1}[name[-1]]
        return 2 * y, 1.0, first
    a = np.abs(x)
    return {
        "hermite_polynomial_h": (2 * a, 2.0 * m, 2 * a),
        "hermite_polynomial_he": (a, float(m), a),
        "laguerre_polynomial_l": (np.abs(2 * m + 1 - x) / (m + 1), m / (m + 1), np.abs(1 - x)),
        "legendre_polynomial_p": ((2 * m + 1) * a / (m + 1), m / (m + 1), a),
    }[name]


def _scale(name: str, x: np.ndarray, n: np.ndarray) -> np.ndarray:
    """What the two computations' rounding is relative to: the recurrence run on absolute
    values (it bounds every term both loops add, so both err by about n eps times it; their
    roundings differ where PyTorch's build fuses a multiply and an add); for Chebyshev's
    closed forms, 1 over the form's denominator (sin theta, cos theta/2, sin theta/2)."""
    x, n = np.broadcast_arrays(x, n)
    p, q = np.ones_like(x), _majorant_terms(name, x, 1)[2] + 0 * x
    for m in range(1, max(int(n.max()), 1)):
        a, b, _ = _majorant_terms(name, x, m)
        p, q = np.where(n > m, q, p), np.where(n > m, a * q + b * p, q)
    if name in CHEBYSHEV:
        y = 2 * x - 1 if name.startswith("shifted") else x
        theta = np.arccos(np.clip(y, -1, 1))
        denominator = {"t": 1.0, "u": np.sin(theta), "v": np.cos(theta / 2),
                       "w": np.sin(theta / 2)}[name[-1]]  # fmt: skip
        closed = np.abs(y) < 1
        with np.errstate(divide="ignore"):
            q = np.where(closed, np.maximum(q, 1 / np.abs(denominator)), q)
    return np.maximum(q, 1.0)


def _check(name: str, got: kael.Tensor, expected: torch.Tensor, x, n, dtype, factor=8) -> None:
    """Same shape, dtype, NaN and infinities as PyTorch, values within factor (n + 1) eps
    of the scale (the closed forms' n acos(x) carries n times acos's error too)."""
    got = torch.from_dlpack(got)
    assert got.shape == expected.shape and got.dtype == expected.dtype
    x, n = np.broadcast_arrays(np.asarray(x, dtype=np.float64), np.asarray(n, dtype=np.float64))
    tolerance = factor * (np.abs(n) + 1) * EPS[dtype] * _scale(name, x, n)
    g, e = got.double().numpy(), expected.double().numpy()
    np.testing.assert_array_equal(np.isnan(g), np.isnan(e))
    finite = np.isfinite(e)
    np.testing.assert_array_equal(g[~finite & ~np.isnan(e)], e[~finite & ~np.isnan(e)])
    assert np.all(np.abs(g - e)[finite] <= tolerance[finite]), np.max(
        (np.abs(g - e) / tolerance)[finite]
    )


@pytest.mark.parametrize("dtype", [kael.float32, kael.float64], ids=str)
@pytest.mark.parametrize("name", NAMES)
def test_values_match_torch_over_x_and_n_broadcast(name, dtype):
    """x a column, n a row: every branch of each n, beside the ends, one kernel."""
    x = _xs(name)[:, None]
    kx, tx = pair(x, dtype)
    kn, tn = pair(DEGREES[None, :], kael.int64)
    got = getattr(kael.special, name)(kx, kn)
    _check(name, got, getattr(torch.special, name)(tx, tn), x, DEGREES[None, :], dtype)


@pytest.mark.parametrize("name", ["chebyshev_polynomial_t", "hermite_polynomial_he"])
def test_number_n_and_number_x_as_torch(name):
    x = _xs(name)
    kx, tx = pair(x, kael.float64)
    for n in (0, 3, 7, 2.7, -0.5, True):
        got = getattr(kael.special, name)(kx, n)
        _check(name, got, getattr(torch.special, name)(tx, n), x, math.trunc(n), kael.float64)
    kn, tn = pair(DEGREES, kael.int64)
    got = getattr(kael.special, name)(0.25, kn)
    _check(name, got, getattr(torch.special, name)(0.25, tn), 0.25, DEGREES, kael.float32)


@pytest.mark.parametrize("dtype", [kael.float32, kael.float64], ids=str)
def test_non_integer_and_non_finite_n_truncate_as_torch_s_cast(dtype):
    """2.7 is 2, -0.5 is 0 (so 1), -1.5 is -1 (0); NaN, +-inf and beyond int64 give 0."""
    n = np.array([2.7, -0.5, -1.5, 3.999, np.nan, np.inf, -np.inf, 1e19, -1e19])
    kn, tn = pair(n, dtype)
    kx, tx = pair(np.full(9, 0.3), dtype)
    for name in ("legendre_polynomial_p", "hermite_polynomial_h", "shifted_chebyshev_polynomial_u"):
        got = torch.from_dlpack(getattr(kael.special, name)(kx, kn))
        torch.testing.assert_close(got, getattr(torch.special, name)(tx, tn), rtol=1e-6, atol=0)


@pytest.mark.parametrize("dtype", [kael.float32, kael.float64], ids=str)
def test_hermite_is_nan_past_torch_s_limit_per_dtype(dtype):
    """NaN past n = 128 in float32, 512 in float64 (PyTorch's getHermitianLimit; there the
    recurrence has overflowed, inf - inf, so it is NaN either way); at and below the limit
    the values, inf and NaN of PyTorch's loop."""
    limit = 128 if dtype is kael.float32 else 512
    x = np.array([0.01, 0.1, 2.0])[:, None]
    n = np.array([limit - 1, limit, limit + 1])[None, :]
    kx, tx = pair(x, dtype)
    kn, tn = pair(n, kael.int64)
    for name in ("hermite_polynomial_h", "hermite_polynomial_he"):
        got = getattr(kael.special, name)(kx, kn)
        _check(name, got, getattr(torch.special, name)(tx, tn), x, n, dtype)
        assert torch.isnan(torch.from_dlpack(got)[:, 2]).all()


@pytest.mark.parametrize("name", ["legendre_polynomial_p", "chebyshev_polynomial_t"])
def test_chunked_recurrence_past_one_kernel_matches_torch(name):
    """n past UNROLL steps runs in chunks: Legendre over (-1, 1) (no closed form), Chebyshev
    past 1 (inf after the overflow, then NaN, as PyTorch's loop: the early stop)."""
    x = np.array([-0.99, -0.4, 0.0, 0.3, 0.97, 1.0, -1.0, 1.0 + 1e-9, 2.0, -2.0])[:, None]
    n = np.array([UNROLL + 2, 3 * UNROLL + 5, 1200])[None, :]
    kx, tx = pair(x, kael.float64)
    kn, tn = pair(n, kael.int64)
    got = getattr(kael.special, name)(kx, kn)
    _check(name, got, getattr(torch.special, name)(tx, tn), x, n, kael.float64)
    got = getattr(kael.special, name)(kx, 3 * UNROLL)  # a Number n past UNROLL
    _check(name, got, getattr(torch.special, name)(tx, 3 * UNROLL), x, 3 * UNROLL, kael.float64)


# (name, x): one element whose recurrence overflows to NaN beside ends, zeros and closed forms.
SKIPPING = [
    ("chebyshev_polynomial_t", [1.5, 0.3, 1.0, -1.0]),
    ("chebyshev_polynomial_u", [2.0, 0.3, 1.0, -1.0]),
    ("shifted_chebyshev_polynomial_w", [1.5, 1.0, 0.0]),
    ("laguerre_polynomial_l", [0.0, -0.0, -1e6]),
    ("legendre_polynomial_p", [1.0, -1.0, 3.0]),
]


@pytest.mark.parametrize("n", [10**6, 2**40])
@pytest.mark.parametrize(("name", "x"), SKIPPING, ids=[s[0] for s in SKIPPING])
def test_huge_n_stops_once_only_ends_and_closed_forms_keep_numbers(name, x, n, monkeypatch):
    """Elements taking an end value or closed form keep a number in the recurrence's state;
    the early stop must not count them, so n = 2**40 takes a few launches (not 2**35 chunks)
    and gives torch's values (closed forms within n eps, as their n acos x)."""
    launch, launches = orthogonal_polynomials.run, []

    def counted(*args, **kwargs):
        launches.append(args[0])
        assert len(launches) <= 200, "the chunks did not stop"
        return launch(*args, **kwargs)

    monkeypatch.setattr(orthogonal_polynomials, "run", counted)
    kx, tx = pair(np.array(x), kael.float64)
    got = torch.from_dlpack(getattr(kael.special, name)(kx, n))
    expected = getattr(torch.special, name)(tx, n)
    assert got.dtype == expected.dtype and got.shape == expected.shape
    torch.testing.assert_close(got, expected, rtol=0, atol=8 * n * 2.0**-52, equal_nan=True)


@pytest.mark.parametrize("dtype", [kael.int64, kael.bool], ids=str)
def test_integer_and_bool_operands_give_the_default_float(dtype):
    x = np.array([0, 1, 1, 0]) if dtype is kael.bool else RNG.integers(-2, 3, 4)
    kx, tx = pair(x, dtype)
    kn, tn = pair(np.array([2, 3, 0, 5]), dtype)
    for name in ("chebyshev_polynomial_u", "laguerre_polynomial_l"):
        close_to_torch(
            getattr(kael.special, name)(kx, kn), getattr(torch.special, name)(tx, tn), 1e-6
        )
        close_to_torch(
            getattr(kael.special, name)(kx, 2), getattr(torch.special, name)(tx, 2), 1e-6
        )


def test_float32_x_with_float64_n_promotes_as_torch():
    kx, tx = pair(np.array([0.2, 0.7]), kael.float32)
    for kn, tn in (pair(np.array([3.0, 4.0]), kael.float64), pair(np.array(3.0), kael.float64)):
        got = kael.special.legendre_polynomial_p(kx, kn)
        close_to_torch(got, torch.special.legendre_polynomial_p(tx, tn), 1e-6)


def test_layouts_transposed_sliced_expanded_zero_d_and_empty():
    kx, tx = pair(RNG.uniform(-1, 1, (6, 4)), kael.float64)
    kn, tn = pair(RNG.integers(0, 9, (4, 6)), kael.int64)
    fn, ref = kael.special.chebyshev_polynomial_v, torch.special.chebyshev_polynomial_v
    for k, t, kk, tt in [
        (kx.transpose(0, 1), tx.T, kn, tn),
        (kx[1::2, ::3], tx[1::2, ::3], kn[:1, ::3], tn[:1, ::3]),
        (kx[0].expand(3, 4), tx[0].expand(3, 4), kn[:1, 2:3], tn[:1, 2:3]),
        (kx[2, 1], tx[2, 1], kn[0, 0], tn[0, 0]),
        (kx[:0], tx[:0], kn[0, :4], tn[0, :4]),
    ]:
        close_to_torch(fn(k, kk), ref(t, tt), 1e-13)


def test_out_takes_any_float_dtype_and_refuses_integers():
    kx, tx = pair(RNG.uniform(-1, 1, 5), kael.float32)
    out = kael.empty(5, dtype=kael.float64)
    assert kael.special.legendre_polynomial_p(kx, 4, out=out) is out
    expected = torch.special.legendre_polynomial_p(tx, 4, out=torch.empty(5, dtype=torch.float64))
    torch.testing.assert_close(torch.from_dlpack(out), expected, rtol=1e-6, atol=1e-7)
    with pytest.raises(kael.TypeError, match="result type Float can't be cast to .* Long"):
        kael.special.legendre_polynomial_p(kx, 4, out=kael.empty(5, dtype=kael.int64))


def test_bad_arguments_raise_torch_s_errors():
    x = kael.tensor([0.5, 0.25])
    with pytest.raises(
        kael.TypeError, match=r"invalid combination of arguments - got \(float, int\)"
    ):
        kael.special.chebyshev_polynomial_t(0.5, 2)
    with pytest.raises(kael.TypeError, match=r"got \(list, int\)"):
        kael.special.hermite_polynomial_h([0.5], 2)
    with pytest.raises(kael.TypeError, match=r"got \(Tensor, str\)"):
        kael.special.legendre_polynomial_p(x, "2")
    with pytest.raises(kael.NotImplementedError, match=r"not implemented for 'Half'"):
        kael.special.laguerre_polynomial_l(x.to(kael.float16), 2)
    with pytest.raises(kael.NotImplementedError, match=r"not implemented for 'ComplexFloat'"):
        kael.special.laguerre_polynomial_l(x, 1 + 2j)
    with pytest.raises(kael.ValueError, match="size"):
        kael.special.chebyshev_polynomial_t(x, kael.tensor([1, 2, 3]))


def test_compiled_chain_with_number_n_matches_eager():
    @kael.compile
    def chain(x):
        return kael.special.chebyshev_polynomial_t(x, 5) * kael.special.hermite_polynomial_he(x, 3)

    kx, tx = pair(RNG.uniform(-1, 1, (5, 7)), kael.float64)
    expected = torch.special.chebyshev_polynomial_t(tx, 5) * torch.special.hermite_polynomial_he(
        tx, 3
    )
    for _ in range(2):  # the trace, then the replay
        close_to_torch(chain(kx), expected, 1e-13)


@pytest.mark.parametrize("name", ["legendre_polynomial_p", "laguerre_polynomial_l"])
def test_a_recurrence_that_would_step_past_the_limit_is_refused(name, monkeypatch):
    """|x| <= 1 keeps Legendre's recurrence stepping for all n steps (torch's loop runs
    them all: n = 2**62 never ends): past MAX_STEPS a typed error ends it."""
    monkeypatch.setattr(orthogonal_polynomials, "MAX_STEPS", 4 * UNROLL * 16)
    with pytest.raises(kael.ValueError, match="needs as many steps of the recurrence"):
        getattr(kael.special, name)(kael.tensor([0.5, 0.25]), 2**62)
    small = getattr(kael.special, name)(kael.tensor([0.5]), 40)  # under the limit: its value
    torch.testing.assert_close(
        torch.from_dlpack(small), getattr(torch.special, name)(torch.tensor([0.5]), 40)
    )
