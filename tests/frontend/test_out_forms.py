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
    "igamma": lambda lib: ((_x(lib).abs() + 1, _x(lib).abs()), {}),
    "igammac": lambda lib: ((_x(lib).abs() + 1, _x(lib).abs()), {}),
    "angle": lambda lib: ((_x(lib),), {}),
    "arctan2": lambda lib: ((_x(lib), _x(lib).flip(0)), {}),
    "logaddexp2": lambda lib: ((_x(lib), _x(lib).flip(0)), {}),
    "lcm": lambda lib: ((lib.tensor([12, 18]), lib.tensor([8, 27])), {}),
    "isposinf": lambda lib: ((_x(lib) / 0,), {}),
    "isneginf": lambda lib: ((_x(lib) / 0,), {}),
    "isin": lambda lib: ((_x(lib), _x(lib)[0]), {}),
    "nonzero": lambda lib: ((_x(lib) > 0,), {}),
    "softmax": lambda lib: ((_x(lib), 1), {}),
    "log_softmax": lambda lib: ((_x(lib), 0), {}),
}  # fmt: skip
RANDOM = {  # shapes and dtypes only: kael's streams are its own
    "bernoulli": lambda lib: lib.bernoulli(_x(lib).abs() / 4),
    "multinomial": lambda lib: lib.multinomial(_x(lib).abs(), 2),
    "poisson": lambda lib: lib.poisson(_x(lib).abs()),
}


def test_every_out_form_is_tested():
    assert set(out_forms.OUT_FORMS) - {"aminmax", "frexp"} == set(CALLS) | set(RANDOM)


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


def test_frexp_writes_a_pair_as_torch():
    x = [[0.75, -3.0, 0.0], [1e-40, 1024.0, -0.125]]
    mantissa, exponent = kael.empty(0), kael.empty(0, dtype=kael.int32)
    got = kael.frexp(kael.tensor(x), out=(mantissa, exponent))
    want = torch.frexp(torch.tensor(x))
    assert got.mantissa is mantissa and got.exponent is exponent
    assert mantissa.tolist() == want.mantissa.tolist()
    assert exponent.tolist() == want.exponent.tolist()


def test_aminmax_writes_a_pair():
    mins, maxs = kael.empty(0), kael.empty(0)
    got = kael.aminmax(_x(kael), dim=1, out=(mins, maxs))
    want = torch.aminmax(_x(torch), dim=1)
    assert got.min is mins and got.max is maxs
    assert mins.tolist() == want.min.tolist() and maxs.tolist() == want.max.tolist()


@pytest.mark.parametrize("name", sorted(CALLS))
def test_out_of_another_dtype_is_cast_or_refused_as_torch(name):
    """The CASTING_OUT_FORMS (torch's TensorIterator ops, cat and stack) cast into a wider
    or narrower float out and refuse an integral one; the others refuse both."""
    args, kwargs = CALLS[name](kael)
    plain = getattr(kael, name)(*args, **kwargs)
    targs, tkwargs = CALLS[name](torch)
    others = (kael.float64, kael.float16, kael.int32) if plain.dtype.is_floating_point else ()
    for other in (d for d in others if d is not plain.dtype):
        out, want = kael.empty(0, dtype=other), torch.empty(0, dtype=TORCH_DTYPES[other])
        try:
            getattr(torch, name)(*targs, **tkwargs, out=want)
        except (RuntimeError, TypeError) as e:
            if "INTERNAL ASSERT" in str(e):  # torch's ldexp(float, int, out=float64): kael casts
                continue
            with pytest.raises(kael.TypeError, match=f"{name}.*{other}"):
                getattr(kael, name)(*args, **kwargs, out=out)
            continue
        assert name in out_forms.CASTING_OUT_FORMS
        assert getattr(kael, name)(*args, **kwargs, out=out) is out and out.dtype is other
        np.testing.assert_allclose(out.float().numpy(), want.float().numpy(), rtol=1e-3)


def test_out_of_another_dtype_is_refused():
    with pytest.raises(
        kael.TypeError, match="float32 can't be cast to the desired output type int64"
    ):
        kael.cat([kael.ones(2)], out=kael.empty(0, dtype=kael.int64))
    with pytest.raises(kael.TypeError, match="Expected out tensor to have dtype float32"):
        kael.index_select(kael.ones(2), 0, kael.tensor([1]), out=kael.empty(0, dtype=kael.float64))
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


# creation name -> its call of six elements given a library and out; drawn: values are kael's own
CREATION_CALLS = {
    "zeros": lambda lib, out: lib.zeros(6, out=out),
    "ones": lambda lib, out: lib.ones(6, out=out),
    "full": lambda lib, out: lib.full((6,), 7.0, out=out),
    "empty": lambda lib, out: lib.empty(6, out=out),
    "rand": lambda lib, out: lib.rand(6, out=out),
    "randn": lambda lib, out: lib.randn(6, out=out),
    "randint": lambda lib, out: lib.randint(9, (6,), out=out),
    "randperm": lambda lib, out: lib.randperm(6, out=out),
    "arange": lambda lib, out: lib.arange(6, out=out),
    "linspace": lambda lib, out: lib.linspace(0, 5, 6, out=out),
    "logspace": lambda lib, out: lib.logspace(0, 5, 6, out=out),
}
DRAWN = ("empty", "rand", "randn", "randint", "randperm")
# out makers: a library, a dtype -> a tensor of another shape or layout than [6]
OUTS = {
    "2x3": lambda lib, dt: lib.zeros(2, 3, dtype=dt),
    "4": lambda lib, dt: lib.zeros(4, dtype=dt),
    "0-d": lambda lib, dt: lib.zeros((), dtype=dt),
    "transposed": lambda lib, dt: lib.zeros(3, 2, dtype=dt).T,
    "stepped": lambda lib, dt: lib.zeros(12, dtype=dt)[::2],
    "expanded": lambda lib, dt: lib.ones(1, dtype=dt).expand(6),
    "expanded_2x3": lambda lib, dt: lib.ones(1, dtype=dt).expand(2, 3),
}


def _written(lib, name, out_kind):
    """(the call's result or the error it raised, the warnings it gave less torch's note of
    where they come from), out of out_kind."""
    dtype = lib.int64 if name in ("randint", "randperm") else lib.float32
    out = OUTS[out_kind](lib, dtype)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        try:
            result = CREATION_CALLS[name](lib, out)
        except Exception as error:  # noqa: BLE001 - compared with the other library's
            result = error
    assert result is out or isinstance(result, Exception)
    return result, [str(w.message).split(" (Triggered internally")[0] for w in seen]


# torch writes randperm's permutation into an out of one shared element (its last value
# wins); kael's copy refuses an out whose elements share memory (test below)
AS_TORCH = [
    (name, kind) for name in sorted(CREATION_CALLS) for kind in sorted(OUTS)
    if (name, kind) != ("randperm", "expanded")
]  # fmt: skip


def test_randperm_into_an_out_of_one_shared_element_is_refused():
    with pytest.raises(kael.Error, match="single memory location"):
        kael.randperm(6, out=kael.ones(1, dtype=kael.int64).expand(6))


@pytest.mark.parametrize("name, out_kind", AS_TORCH)
def test_creation_out_resized_kept_or_refused_as_torch(name, out_kind):
    """Factories resize out silently; arange, linspace and logspace keep out's shape when it
    holds as many elements (arange warning when it resizes one that held some); a write
    into an out whose elements share memory is a fill for zeros/ones/full, refused else."""
    want, torch_warned = _written(torch, name, out_kind)
    got, kael_warned = _written(kael, name, out_kind)
    assert kael_warned == torch_warned
    if isinstance(want, Exception):
        assert isinstance(got, kael.Error) and str(got).startswith(str(want)[:60]), got
        return
    assert got.shape == tuple(want.shape) and got.stride() == want.stride()
    assert TORCH_DTYPES[got.dtype] == want.dtype
    if name not in DRAWN:
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)


def test_arange_resizing_a_held_out_warns_in_torchs_words():
    with pytest.warns(UserWarning, match=r"out tensor of shape \[4\] is 4 which does not match"):
        got = kael.arange(6.0, out=kael.empty(4))
    assert got.tolist() == list(range(6))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert kael.arange(1, out=kael.tensor(5.0)).shape == ()
        assert kael.zeros(5, out=kael.empty(3)).shape == (5,)


def _column_major(value):
    """A 2-d tensor argument laid out column-major (same values); others as they are."""
    if hasattr(value, "ndim") and value.ndim == 2:
        return value.t().contiguous().t()
    return value


@pytest.mark.parametrize("name", sorted(out_forms.ELEMENTWISE_OUT_FORMS & set(CALLS)))
def test_an_elementwise_out_form_lays_a_resized_out_out_as_its_result(name):
    """torch's iterator lays out an out it resizes as it would a new result: column-major
    inputs give a column-major out (a non-elementwise op's resized out is row-major)."""
    args, kwargs = CALLS[name](kael)
    targs, tkwargs = CALLS[name](torch)
    args, targs = [_column_major(a) for a in args], [_column_major(a) for a in targs]
    plain = getattr(kael, name)(*args, **kwargs)
    out, want = kael.empty(0, dtype=plain.dtype), torch.empty(0, dtype=TORCH_DTYPES[plain.dtype])
    getattr(kael, name)(*args, **kwargs, out=out)
    getattr(torch, name)(*targs, **tkwargs, out=want)
    assert out.stride() == want.stride()
    np.testing.assert_allclose(out.numpy(), want.numpy(), rtol=1e-6)
