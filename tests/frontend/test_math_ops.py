"""The math ops through the public API: dtype rules, layouts and values against PyTorch.

Accuracy over the whole range is pinned in tests/codegen/test_vmath.py; here each op is
held to the golden tolerances as a function, a method and on every layout.
"""

import numpy as np
import pytest
import torch

import kael

TORCH_DTYPE = {
    kael.float32: torch.float32,
    kael.float64: torch.float64,
    kael.int64: torch.int64,
    kael.bool: torch.bool,
}
TOLERANCE = {kael.float32: (1e-5, 1e-6), kael.float64: (1e-12, 1e-14)}
MATH = {
    "exp": torch.exp,
    "exp2": torch.exp2,
    "expm1": torch.expm1,
    "log": torch.log,
    "log2": torch.log2,
    "log1p": torch.log1p,
    "sqrt": torch.sqrt,
    "rsqrt": torch.rsqrt,
    "sin": torch.sin,
    "cos": torch.cos,
    "tan": torch.tan,
    "tanh": torch.tanh,
    "sigmoid": torch.sigmoid,
    "silu": torch.nn.functional.silu,
    "erf": torch.erf,
    "reciprocal": torch.reciprocal,
}
FLOAT_ONLY = {"silu"}  # torch's kernel refuses int and bool inputs
LAYOUTS = {
    "contiguous": lambda t: t,
    "transposed": lambda t: t.T,
    "stepped": lambda t: t[::2, 1::2],
    "expanded": lambda t: t[:1].expand(6, 8),
    "zero_d": lambda t: t[2, 3],
}


def _base(dtype):
    values = np.linspace(-3.0, 3.0, 48).reshape(6, 8)
    if dtype is kael.int64:
        values = np.arange(-20, 28).reshape(6, 8)
    elif dtype is kael.bool:
        values = np.arange(48).reshape(6, 8) % 3 == 0
    return values


def _check(k: kael.Tensor, t: torch.Tensor) -> None:
    assert k.shape == tuple(t.shape)
    assert TORCH_DTYPE[k.dtype] == t.dtype
    rtol, atol = TOLERANCE[k.dtype]
    np.testing.assert_allclose(k.numpy(), t.numpy(), rtol=rtol, atol=atol, equal_nan=True)


@pytest.mark.parametrize("name", list(MATH))
@pytest.mark.parametrize("dtype", [kael.float32, kael.float64, kael.int64, kael.bool])
@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_math_op_matches_torch_on_every_layout_and_dtype(name, dtype, layout):
    base = _base(dtype)
    k = LAYOUTS[layout](kael.tensor(base.tolist(), dtype=dtype))
    t = LAYOUTS[layout](torch.tensor(base.tolist(), dtype=TORCH_DTYPE[dtype]))
    if name in FLOAT_ONLY and not t.is_floating_point():
        with pytest.raises(NotImplementedError):
            MATH[name](t)
        for call in (lambda: getattr(kael, name)(k), lambda: getattr(k, name)()):
            with pytest.raises(kael.TypeError, match="only supported for floating point"):
                call()
        return
    _check(getattr(kael, name)(k), MATH[name](t))
    _check(getattr(k, name)(), MATH[name](t))


@pytest.mark.parametrize("name", [name for name in MATH if name not in FLOAT_ONLY])
def test_integer_and_bool_inputs_become_float32(name):
    assert getattr(kael, name)(kael.tensor([1, 2])).dtype is kael.float32
    assert getattr(kael, name)(kael.tensor([True, False])).dtype is kael.float32


@pytest.mark.parametrize("approximate", ["none", "tanh"])
@pytest.mark.parametrize("dtype", [kael.float32, kael.float64])
def test_gelu_matches_torch(approximate, dtype):
    base = _base(dtype)
    k = kael.gelu(kael.tensor(base.tolist(), dtype=dtype).T, approximate=approximate)
    t = torch.nn.functional.gelu(
        torch.tensor(base.tolist(), dtype=TORCH_DTYPE[dtype]).T, approximate=approximate
    )
    _check(k, t)


def test_gelu_rejects_an_unknown_approximation():
    with pytest.raises(kael.ValueError, match="'fast'"):
        kael.gelu(kael.ones(2), approximate="fast")


@pytest.mark.parametrize("dtype", [kael.float32, kael.float64])
def test_float_pow_matches_torch_with_tensor_and_scalar_exponents(dtype):
    base = torch.tensor(
        [0.0, 0.5, 1.0, 2.0, 3.5, -2.0, float("inf"), float("nan")], dtype=TORCH_DTYPE[dtype]
    )
    exps = torch.tensor([2.0, -1.0, 0.5, 3.0, -2.5, 2.0, 0.0, 0.0], dtype=TORCH_DTYPE[dtype])
    kb, ke = kael.tensor(base.tolist(), dtype=dtype), kael.tensor(exps.tolist(), dtype=dtype)
    _check(kb**ke, base**exps)
    _check(kb**2.5, base**2.5)
    _check(2.0**kb, 2.0**base)


def test_math_ops_write_into_out():
    out = kael.empty(3)
    res = kael.exp(kael.tensor([0.0, 1.0, 2.0]), out=out)
    assert res is out
    np.testing.assert_allclose(
        out.numpy(), np.exp(np.array([0.0, 1.0, 2.0], np.float32)), rtol=1e-6
    )


def test_math_out_of_an_integral_dtype_raises():
    with pytest.raises(kael.TypeError, match="float32 can't be cast to the desired output type"):
        kael.exp(kael.ones(3), out=kael.empty(3, dtype=kael.int64))


@pytest.mark.parametrize("dtype", [kael.float32, kael.float64])
def test_pow_with_huge_exponents_underflows_to_zero_and_overflows_to_inf(dtype):
    """Past |y log2 x| ~ 1e16 pow overflowed to inf where the result underflows to 0."""
    base, exps = [2.0, 0.5, 10.0], [-1e300, 1e300, -1e20]
    kb, tb = kael.tensor(base, dtype=dtype), torch.tensor(base, dtype=TORCH_DTYPE[dtype])
    ke, te = kael.tensor(exps, dtype=kael.float64), torch.tensor(exps, dtype=torch.float64)
    _check(kael.pow(kb, ke), torch.pow(tb, te))
    np.testing.assert_array_equal(kael.pow(kb.double(), ke).numpy(), [0.0, 0.0, 0.0])
    _check(kb**-1e300, tb**-1e300)
    np.testing.assert_array_equal((kb**-1e300).numpy(), [0.0, np.inf, 0.0])
    kb.pow_(ke)  # in place: the float64 exponents promote the computation, not the result
    tb.pow_(te)
    _check(kb, tb)
    np.testing.assert_array_equal(kb.numpy(), [0.0, 0.0, 0.0])
