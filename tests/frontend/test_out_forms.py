"""out= on the functions frontend/out_forms.py gives it, against torch: the result written
into out (resized as torch resizes it), out returned, a wrong dtype refused; creation
functions take out's dtype and device."""

import warnings

import numpy as np
import pytest
import torch
from kernel_helpers import TORCH_DTYPES

import kael
from kael.frontend import out_forms


def _x(lib):
    return lib.tensor([[0.5, -1.25, 2.0], [3.0, 0.25, -0.75]])


def _i(lib):
    return lib.tensor([[0, 2, 1], [1, 1, 0]])


# name -> the arguments of its call, given a library: (args, kwargs)
CALLS = {
    "cat": lambda lib: (([_x(lib), _x(lib)], 1), {}),
    "concat": lambda lib: (([_x(lib), _x(lib)],), {}),
    "concatenate": lambda lib: (([_x(lib), _x(lib)],), {}),
    "stack": lambda lib: (([_x(lib), _x(lib)],), {}),
    "index_select": lambda lib: ((_x(lib), 1, lib.tensor([2, 0])), {}),
    "gather": lambda lib: ((_x(lib), 1, _i(lib)), {}),
    "take": lambda lib: ((_x(lib), lib.tensor([5, 0])), {}),
    "take_along_dim": lambda lib: ((_x(lib), _i(lib), 1), {}),
    "masked_select": lambda lib: ((_x(lib), _x(lib) > 0), {}),
    "atan2": lambda lib: ((_x(lib), _x(lib).flip(0)), {}),
    "hypot": lambda lib: ((_x(lib), _x(lib).flip(0)), {}),
    "xlogy": lambda lib: ((_x(lib), _x(lib).abs()), {}),
    "logaddexp": lambda lib: ((_x(lib), _x(lib).flip(0)), {}),
    "ldexp": lambda lib: ((_x(lib), lib.tensor([1, 2, 3])), {}),
    "heaviside": lambda lib: ((_x(lib), lib.tensor(0.5)), {}),
    "gcd": lambda lib: ((lib.tensor([12, 18]), lib.tensor([8, 27])), {}),
    "nextafter": lambda lib: ((_x(lib), lib.zeros(2, 3)), {}),
    "fmax": lambda lib: ((_x(lib), _x(lib).flip(0)), {}),
    "fmin": lambda lib: ((_x(lib), _x(lib).flip(0)), {}),
    "diff": lambda lib: ((_x(lib),), {"dim": 1}),
    "kron": lambda lib: ((_x(lib), _x(lib)), {}),
    "tensordot": lambda lib: ((_x(lib), _x(lib).T, 1), {}),
    "diag": lambda lib: ((_x(lib)[0],), {}),
    "histc": lambda lib: ((_x(lib), 4, -2, 4), {}),
    "logit": lambda lib: ((_x(lib).abs() / 4,), {}),
    "polygamma": lambda lib: ((1, _x(lib).abs() + 1), {}),
    "mvlgamma": lambda lib: ((_x(lib).abs() + 2, 2), {}),
    "renorm": lambda lib: ((_x(lib), 2, 0, 1.0), {}),
    "conj_physical": lambda lib: ((_x(lib),), {}),
    "lerp": lambda lib: ((_x(lib), _x(lib).flip(0), 0.25), {}),
    "index_add": lambda lib: ((_x(lib), 1, lib.tensor([0, 0]), _x(lib)[:, :2]), {}),
    "index_copy": lambda lib: ((_x(lib), 1, lib.tensor([2, 0]), _x(lib)[:, :2]), {}),
    "scatter": lambda lib: ((_x(lib), 1, _i(lib), _x(lib)), {}),
    "scatter_add": lambda lib: ((_x(lib), 1, _i(lib), _x(lib)), {}),
    "signbit": lambda lib: ((_x(lib),), {}),
    "float_power": lambda lib: ((_x(lib).abs(), 2), {}),
}  # fmt: skip
RANDOM = {  # shapes and dtypes only: kael's streams are its own
    "bernoulli": lambda lib: lib.bernoulli(_x(lib).abs() / 4),
    "multinomial": lambda lib: lib.multinomial(_x(lib).abs(), 2),
    "poisson": lambda lib: lib.poisson(_x(lib).abs()),
}


def test_every_out_form_is_tested():
    assert set(out_forms.OUT_FORMS) - {"aminmax"} == set(CALLS) | set(RANDOM)


@pytest.mark.parametrize("name", sorted(CALLS))
def test_out_receives_the_result_as_torch(name):
    args, kwargs = CALLS[name](kael)
    plain = getattr(kael, name)(*args, **kwargs)
    out = kael.empty(0, dtype=plain.dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an empty out resizes silently
        got = getattr(kael, name)(*args, **kwargs, out=out)
    targs, tkwargs = CALLS[name](torch)
    want = torch.empty(0, dtype=TORCH_DTYPES[plain.dtype])
    getattr(torch, name)(*targs, **tkwargs, out=want)
    assert got is out and out.shape == tuple(want.shape)
    np.testing.assert_allclose(out.numpy(), want.numpy(), rtol=1e-6)
    np.testing.assert_array_equal(out.numpy(), plain.numpy())


@pytest.mark.parametrize("name", sorted(RANDOM))
def test_random_out_forms_write_their_samples_into_out(name):
    want = RANDOM[name](torch)
    out = kael.empty(5, dtype=RANDOM[name](kael).dtype)
    with pytest.warns(UserWarning, match="was resized"):  # out held elements
        got = _call_random(name, out)
    assert got is out and out.shape == tuple(want.shape)
    assert TORCH_DTYPES[out.dtype] == want.dtype


def _call_random(name, out):
    x = _x(kael)
    if name == "bernoulli":
        return kael.bernoulli(x.abs() / 4, out=out)
    if name == "multinomial":
        return kael.multinomial(x.abs(), 2, out=out)
    return kael.poisson(x.abs(), out=out)


def test_aminmax_writes_a_pair():
    mins, maxs = kael.empty(0), kael.empty(0)
    got = kael.aminmax(_x(kael), dim=1, out=(mins, maxs))
    want = torch.aminmax(_x(torch), dim=1)
    assert got.min is mins and got.max is maxs
    assert mins.tolist() == want.min.tolist() and maxs.tolist() == want.max.tolist()


def test_out_of_another_dtype_is_refused():
    with pytest.raises(kael.TypeError, match="Expected out tensor to have dtype float32"):
        kael.cat([kael.ones(2)], out=kael.empty(0, dtype=kael.int64))
    with pytest.raises(kael.TypeError, match="out must be a Tensor"):
        kael.stack([kael.ones(2)], out=[1.0, 2.0, 3.0][0])


@pytest.mark.parametrize(
    ("name", "args"),
    [("zeros", (3,)), ("ones", (2, 2)), ("full", ((2,), 7)), ("empty", (4,)), ("arange", (5,)),
     ("linspace", (0, 1, 5)), ("logspace", (0, 1, 3)), ("randint", (9, (4,))), ("randperm", (6,))],
)  # fmt: skip
@pytest.mark.parametrize("dtype", [kael.int64, kael.float64], ids=str)
def test_creation_takes_outs_dtype_as_torch(name, args, dtype):
    out = kael.empty(0, dtype=dtype)
    torch_out = torch.empty(0, dtype=TORCH_DTYPES[dtype])
    got = getattr(kael, name)(*args, out=out)
    getattr(torch, name)(*args, out=torch_out)
    assert got is out and out.dtype is dtype and out.shape == tuple(torch_out.shape)
    if name not in ("empty", "randint", "randperm"):  # logspace: pow's few ulp
        np.testing.assert_allclose(out.numpy(), torch_out.numpy(), rtol=1e-15)


def test_random_creation_refuses_an_integer_out_as_torch():
    with pytest.raises(RuntimeError):
        torch.rand(2, out=torch.empty(2, dtype=torch.int64))
    with pytest.raises(kael.TypeError, match="floating point"):
        kael.rand(2, out=kael.empty(2, dtype=kael.int64))
    assert kael.randn(3, out=kael.empty(0, dtype=kael.float64)).dtype is kael.float64
