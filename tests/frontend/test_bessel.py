"""torch.special's Bessel and Airy functions (frontend/bessel.py) against PyTorch: values over
each function's branches, special values, dtypes and promotion, layouts, out= and errors."""

import math

import numpy as np
import pytest
import torch
from parity_helpers import close_to_torch, strided_views
from parity_helpers import torch_pair as pair

import kael

RNG = np.random.default_rng(47)
NAMES = [
    "bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "modified_bessel_i0",
    "modified_bessel_i1", "modified_bessel_k0", "modified_bessel_k1", "scaled_modified_bessel_k0",
    "scaled_modified_bessel_k1", "spherical_bessel_j0", "airy_ai",
]  # fmt: skip
EPS64 = 2.220446049250313e-16
# Each algorithm's switch points, both sides of each: J and Y at 5 (and J0's 1e-5), I at 8,
# K at 2, spherical j0 at 1/2, Ai at +-2.09 and 103.892.
EDGES = [5.0, 1e-5, 8.0, 2.0, 0.5, 2.09, 103.892]
SPECIAL = [0.0, -0.0, 1.0, -1.0, math.inf, -math.inf, math.nan, 1e-300, 1e300, -1e300]
# float64 against PyTorch: within 8 ulp, plus an absolute bound where the algorithm cancels,
# so that its error is ulps of the cancelling terms (<= 1): at J's and Y's zeros (their
# Hankel and series sums; 7e-16 measured), K0's series minus log(x/2) I0 near 0.8 (3e-15),
# Ai's c1 f - c2 g near 2 (1e-16). kael's sin, cos and log differ from the C library's by
# an ulp at most; the rest is the same algorithm, operation for operation.
ABSOLUTE = {"bessel_j0": 2e-15, "bessel_j1": 2e-15, "bessel_y0": 2e-15, "bessel_y1": 2e-15,
            "modified_bessel_k0": 6e-15, "scaled_modified_bessel_k0": 6e-15,
            "airy_ai": 3e-16}  # fmt: skip


def _values(n: int = 60) -> np.ndarray:
    """Both signs over the functions' ranges, each side of every switch point, large |x|."""
    edges = np.array(EDGES)
    sides = np.concatenate([edges, np.nextafter(edges, 0), np.nextafter(edges, np.inf)])
    x = np.concatenate([RNG.uniform(-30, 30, n), np.exp(RNG.uniform(-25, 5, n // 2))])
    # -1.98635...: Ai's series f is 0 there, so PyTorch's loop (to a term below eps f) runs
    # longest: 18 steps.
    far = [1e4, -1e4, 700.0, 750.0, -150.0, 1e15, -1.986352707430473, -1.98635270743047]
    return np.concatenate([x, sides, -sides, far])


def _check_float64(name: str, got: kael.Tensor, expected: torch.Tensor) -> None:
    got = torch.from_dlpack(got)
    assert got.dtype == expected.dtype and got.shape == expected.shape
    rtol, atol = 8 * EPS64, ABSOLUTE.get(name, 0.0) + 1e-300
    torch.testing.assert_close(got, expected, rtol=rtol, atol=atol, equal_nan=True)


@pytest.mark.parametrize("name", NAMES)
def test_float64_matches_torch_over_every_branch_and_both_signs(name):
    kx, tx = pair(_values(), kael.float64)
    _check_float64(name, getattr(kael.special, name)(kx), getattr(torch.special, name)(tx))


@pytest.mark.parametrize("name", NAMES)
def test_float32_rounds_torch_s_float64_value_once(name):
    """float32 computes in float64 and rounds once: within an ulp of PyTorch's float64 value
    rounded, and near PyTorch's own float32 kernel (its float32 phases err by 1e-6 here)."""
    x = _values()
    x = x[np.abs(x) < 1e30]  # float32's range
    kx, tx = pair(x, kael.float32)
    got = getattr(kael.special, name)(kx)
    wide = getattr(torch.special, name)(tx.double()).float()
    atol = ABSOLUTE.get(name, 0.0) + 1e-45
    close = torch.from_dlpack(got)
    torch.testing.assert_close(close, wide, rtol=1.2e-7, atol=atol, equal_nan=True)
    small = np.abs(x) < 80  # past 88.7 PyTorch's float32 I0 and I1 overflow (kael's do not)
    own = getattr(torch.special, name)(tx[torch.from_numpy(small)])
    torch.testing.assert_close(close[small], own, rtol=2e-5, atol=2e-6, equal_nan=True)


@pytest.mark.parametrize("dtype", [kael.float32, kael.float64], ids=str)
@pytest.mark.parametrize("name", NAMES)
def test_special_values_and_signed_zeros_are_torch_s(name, dtype):
    """0, -0, +-1, +-inf, NaN, tiny and huge: the class (inf, NaN, zero) and sign of each."""
    kx, tx = pair(np.array(SPECIAL), dtype)
    got = torch.from_dlpack(getattr(kael.special, name)(kx))
    expected = getattr(torch.special, name)(tx)
    torch.testing.assert_close(got, expected, rtol=1e-6, atol=0, equal_nan=True)
    same = ~torch.isnan(expected)
    assert torch.equal(torch.signbit(got[same]), torch.signbit(expected[same]))


@pytest.mark.parametrize("dtype", [kael.int64, kael.int32, kael.uint8, kael.bool], ids=str)
def test_integer_and_bool_inputs_give_the_default_float(dtype):
    values = np.array([0, 1, 1, 0]) if dtype is kael.bool else RNG.integers(0, 9, 7)
    kx, tx = pair(values, dtype)
    for name in NAMES:
        close_to_torch(getattr(kael.special, name)(kx), getattr(torch.special, name)(tx), 1e-6)


@pytest.mark.parametrize("dtype", [kael.float16, kael.bfloat16], ids=str)
def test_half_types_are_refused_as_torch_does(dtype):
    kx, tx = pair(np.array([1.0, 2.0]), dtype)
    kind = {kael.float16: "Half", kael.bfloat16: "BFloat16"}[dtype]
    for name in ("bessel_j0", "airy_ai"):
        with pytest.raises(NotImplementedError, match=kind):
            getattr(torch.special, name)(tx)
        with pytest.raises(
            kael.NotImplementedError, match=rf'"{name}" not implemented for .{kind}'
        ):
            getattr(kael.special, name)(kx)


@pytest.mark.parametrize("name", ["bessel_y1", "modified_bessel_k1", "airy_ai"])
def test_layouts_transposed_sliced_expanded_zero_d_and_empty(name):
    kx, tx = pair(RNG.uniform(0.1, 9, (6, 4)), kael.float64)
    fn, ref = getattr(kael.special, name), getattr(torch.special, name)
    for k, t in strided_views(kx, tx):
        _check_float64(name, fn(k), ref(t))


def test_out_takes_any_float_dtype_resizes_and_refuses_integers():
    kx, tx = pair(RNG.uniform(0.1, 9, 5), kael.float32)
    out = kael.empty(5, dtype=kael.float64)
    got = kael.special.modified_bessel_k0(kx, out=out)
    assert got is out
    # the float32 value (torch's float64 one rounded once, as kael computes it) in float64
    expected = torch.special.modified_bessel_k0(tx.double()).float().double()
    torch.testing.assert_close(torch.from_dlpack(out), expected, rtol=1.2e-7, atol=0)
    empty = kael.empty(0)
    kael.special.bessel_j0(kx, out=empty)
    assert empty.shape == (5,)
    close_to_torch(empty, torch.special.bessel_j0(tx), 1e-6)
    with pytest.raises(kael.TypeError, match="result type Float can't be cast to .* Long"):
        kael.special.bessel_j0(kx, out=kael.empty(5, dtype=kael.int64))


def test_arguments_take_torch_s_names_and_refuse_non_tensors():
    kx, tx = pair(np.array([0.5, 3.0]), kael.float64)
    close_to_torch(kael.special.bessel_j1(input=kx), torch.special.bessel_j1(input=tx), 1e-15)
    close_to_torch(kael.special.airy_ai(x=kx), torch.special.airy_ai(x=tx), 1e-15)
    close_to_torch(
        kael.special.scaled_modified_bessel_k1(x=kx),
        torch.special.scaled_modified_bessel_k1(x=tx),
        1e-15,
    )
    with pytest.raises(kael.TypeError, match=r"special_bessel_j0\(\): argument 'input' .* list"):
        kael.special.bessel_j0([1.0])
    with pytest.raises(kael.TypeError, match=r"special_airy_ai\(\): argument 'x' .* float"):
        kael.special.airy_ai(1.0)


def test_compiled_chain_fuses_and_matches_eager():
    @kael.compile
    def chain(x):
        y = kael.special.bessel_j0(x) * kael.special.modified_bessel_k1(x.abs() + 0.5)
        return y + kael.special.airy_ai(x) - kael.special.spherical_bessel_j0(x)

    kx, tx = pair(RNG.uniform(-6, 6, (5, 7)), kael.float64)
    expected = torch.special.bessel_j0(tx) * torch.special.modified_bessel_k1(tx.abs() + 0.5)
    expected = expected + torch.special.airy_ai(tx) - torch.special.spherical_bessel_j0(tx)
    for _ in range(2):  # the trace, then the replay
        close_to_torch(chain(kx), expected, 1e-13)
