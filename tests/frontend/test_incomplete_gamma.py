"""torch.igamma / igammac (the regularized incomplete gamma functions P(a, x), Q(a, x)), their
Tensor methods and in-place forms, and kael.special.gammainc / gammaincc: values against torch
(and 40-digit mpmath for the accuracy the docstring states), dtypes, layouts, special values,
errors."""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest
import torch
from parity_helpers import torch_pair

import kael

RNG = np.random.default_rng(23)
ULP = 2.0**-52
FUNCTIONS = {"igamma": torch.igamma, "igammac": torch.igammac}


def grid(n: int, top: int = 6) -> tuple[np.ndarray, np.ndarray]:
    """a from 1e-6 to 10**top (log-uniform) with x from a / 100 to 10 a, plus a band around
    the transition x = a and small a, x."""
    a = 10 ** RNG.uniform(-6, top, n)
    x = a * 10 ** RNG.uniform(-2, 1, n)
    band = 10 ** RNG.uniform(0, min(top, 5), n)
    small = RNG.uniform(0, 3, (2, n))
    return np.concatenate([a, band, small[0]]), np.concatenate(
        [x, band * RNG.uniform(0.6, 1.4, n), small[1]]
    )


def kael_of(name: str, a: np.ndarray, x: np.ndarray, dtype=kael.float64) -> np.ndarray:
    return getattr(kael, name)(kael.tensor(a, dtype=dtype), kael.tensor(x, dtype=dtype)).numpy()


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_float64_matches_torch_over_a_wide_grid(name):
    a, x = grid(2000)
    got = kael_of(name, a, x)
    want = FUNCTIONS[name](torch.tensor(a), torch.tensor(x)).numpy()
    # torch's own float64 is good to about 2e-9 (its Temme term uses a float pi)
    np.testing.assert_allclose(got, want, rtol=1e-8, atol=1e-300)


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_float64_is_within_a_few_ulp_of_mpmath(name):
    a, x = grid(40, top=4)  # mpmath's series give up past a = 1e5
    mpmath.mp.dps = 40
    lower = name == "igamma"
    ref = np.array([
        float(mpmath.gammainc(ai, 0, xi, regularized=True) if lower
              else mpmath.gammainc(ai, xi, mpmath.inf, regularized=True))
        for ai, xi in zip(a.tolist(), x.tolist())
    ])  # fmt: skip
    got = kael_of(name, a, x)
    keep = ref > 1e-300
    ulps = np.abs(got[keep] - ref[keep]) / ref[keep] / ULP
    # results near 1 to a few ulp; small ones lose |log result| ulps (the exp of a rounded
    # exponent), as every method does
    allowed = 34 * np.maximum(1.0, np.abs(np.log(ref[keep])))
    assert np.all(ulps <= allowed), (ulps.max(), a[keep][np.argmax(ulps / allowed)])
    assert ulps[ref[keep] > 0.01].max() <= 24 and np.median(ulps[ref[keep] > 0.01]) < 2


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_float32_is_within_1e_6_of_the_exact_value_of_its_inputs(name):
    a, x = grid(500)
    a32, x32 = a.astype(np.float32), x.astype(np.float32)
    got = kael_of(name, a32, x32, kael.float32)
    exact = FUNCTIONS[name](torch.tensor(a32).double(), torch.tensor(x32).double()).numpy()
    keep = exact > 1e-30
    assert got.dtype == np.float32
    np.testing.assert_allclose(got[keep], exact[keep], rtol=1e-6)
    assert np.all(got[~keep] < 1e-29)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_half_types_round_the_float64_value_as_torch(name, dtype):
    a, x = RNG.uniform(0.1, 8, 64), RNG.uniform(0, 10, 64)
    td = getattr(torch, dtype)
    got = getattr(kael, name)(*(torch_pair(v, getattr(kael, dtype))[0] for v in (a, x)))
    want = FUNCTIONS[name](torch.tensor(a).to(td), torch.tensor(x).to(td))
    assert got.dtype is getattr(kael, dtype)
    np.testing.assert_allclose(got.double().numpy(), want.double().numpy(), rtol=2e-2, atol=2e-3)


INF, NAN = math.inf, math.nan
SPECIAL_A = [0.0, 0.0, 0.0, -1.0, 1.0, 1.0, INF, INF, INF, 1.0, NAN, 1.0, NAN, NAN, 0.0, INF, 2.5]
SPECIAL_X = [
    0.0,
    1.0,
    -1.0,
    1.0,
    -1.0,
    0.0,
    1.0,
    INF,
    0.0,
    INF,
    1.0,
    NAN,
    0.0,
    INF,
    NAN,
    NAN,
    1e-320,
]


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_special_values_are_torchs(name):
    got = kael_of(name, np.array(SPECIAL_A), np.array(SPECIAL_X))
    want = FUNCTIONS[name](torch.tensor(SPECIAL_A), torch.tensor(SPECIAL_X)).numpy()
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_p_and_q_sum_to_one(name):
    a, x = grid(300)
    total = kael_of("igamma", a, x) + kael_of("igammac", a, x)
    np.testing.assert_allclose(total, 1.0, rtol=1e-14)


@pytest.mark.parametrize(
    ("a_dtype", "x_dtype", "result"),
    [("int64", "float32", "float32"), ("float32", "int32", "float32"),
     ("bool", "float64", "float64"), ("float32", "float64", "float64"),
     ("bfloat16", "float32", "float32"), ("int64", "float16", "float16")],
)  # fmt: skip
def test_mixed_dtypes_promote_as_torch(a_dtype, x_dtype, result):
    ka, ta = torch_pair([1, 2, 3], getattr(kael, a_dtype))
    kx, tx = torch_pair([1, 0, 2], getattr(kael, x_dtype))
    got, want = kael.igamma(ka, kx), torch.igamma(ta, tx)
    assert got.dtype is getattr(kael, result) and want.dtype == getattr(torch, result)
    np.testing.assert_allclose(got.double().numpy(), want.double().numpy(), rtol=1e-3)


def test_two_integer_tensors_are_refused_as_torch():
    with pytest.raises(kael.TypeError, match="igamma.*floating point only"):
        kael.igamma(kael.tensor([1, 2]), kael.tensor([1, 2]))
    with pytest.raises(NotImplementedError):
        torch.igamma(torch.tensor([1, 2]), torch.tensor([1, 2]))


def test_a_number_operand_is_refused_as_torch():
    with pytest.raises(kael.TypeError, match=r"igammac\(\): other must be a Tensor, got float"):
        kael.igammac(kael.tensor([1.0]), 2.0)
    with pytest.raises(TypeError):
        torch.igammac(torch.tensor([1.0]), 2.0)


LAYOUTS = {
    "transposed": lambda t: t.reshape(4, 6).t(),
    "sliced": lambda t: t[1:21:3],
    "expanded": lambda t: t[:6].reshape(1, 6).expand(3, 6),
    "0-d": lambda t: t[5],
    "empty": lambda t: t[:0],
}


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_layouts_match_torch(name, layout):
    ka, ta = torch_pair(RNG.uniform(0.2, 5, 24), kael.float64)
    kx, tx = torch_pair(RNG.uniform(0, 6, 24), kael.float64)
    view = LAYOUTS[layout]
    got = getattr(kael, name)(view(ka), view(kx))
    want = FUNCTIONS[name](view(ta), view(tx))
    assert got.shape == tuple(want.shape)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-8)


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_broadcasting_matches_torch_and_mismatch_is_refused(name):
    a = np.array([[0.5], [2.0], [30.0]])
    x = np.array([0.1, 1.0, 3.0, 40.0])
    got = getattr(kael, name)(kael.tensor(a), kael.tensor(x))
    want = FUNCTIONS[name](torch.tensor(a), torch.tensor(x))
    assert got.shape == (3, 4)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-8)
    with pytest.raises(kael.ValueError):
        getattr(kael, name)(kael.ones(2), kael.ones(3))
    with pytest.raises(RuntimeError):
        FUNCTIONS[name](torch.ones(2), torch.ones(3))


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_tensor_methods_and_in_place_forms_match_torch(name):
    a, x = RNG.uniform(0.2, 5, 6), RNG.uniform(0, 6, 6)
    ka, ta = torch_pair(a)
    kx, tx = torch_pair(x)
    np.testing.assert_allclose(
        getattr(ka, name)(kx).numpy(), getattr(ta, name)(tx).numpy(), rtol=1e-6
    )
    out = getattr(ka, f"{name}_")(kx)
    getattr(ta, f"{name}_")(tx)
    assert out is ka
    np.testing.assert_allclose(ka.numpy(), ta.numpy(), rtol=1e-6)


def test_in_place_refuses_what_torch_refuses():
    with pytest.raises(kael.TypeError):
        kael.tensor([1, 2]).igamma_(kael.tensor([1.0, 2.0]))
    with pytest.raises(RuntimeError, match="can't be cast"):
        torch.tensor([1, 2]).igamma_(torch.tensor([1.0, 2.0]))
    with pytest.raises(kael.Error):
        kael.tensor([1.0, 2.0]).igammac_(kael.tensor([[1.0, 2.0]]))
    with pytest.raises(RuntimeError, match="doesn't match the broadcast shape"):
        torch.tensor([1.0, 2.0]).igammac_(torch.tensor([[1.0, 2.0]]))


def test_special_gammainc_and_gammaincc_are_the_same_functions():
    assert kael.special.gammainc is kael.igamma
    assert kael.special.gammaincc is kael.igammac
    a, x = kael.tensor([3.0]), kael.tensor([2.0])
    assert kael.special.gammaincc(a, x).item() == pytest.approx(
        torch.special.gammaincc(torch.tensor([3.0]), torch.tensor([2.0])).item(), rel=1e-6
    )
