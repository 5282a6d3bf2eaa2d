"""kael.set_default_dtype as torch.set_default_dtype: Python floats, float factories and
integer-to-float results take the default, and no cache keeps a result of the old one."""

import pytest
import torch

import kael
from kael.runtime import dtypes


@pytest.fixture(autouse=True)
def _restore_default():
    yield
    kael.set_default_dtype(kael.float32)
    torch.set_default_dtype(torch.float32)


CALLS = {
    "int_plus_float": lambda L: L.arange(3) + 2.5,
    "int_true_div": lambda L: L.arange(1, 4) / L.arange(1, 4),
    "int_sqrt": lambda L: L.sqrt(L.arange(4)),
    "zeros": lambda L: L.zeros(2),
    "ones": lambda L: L.ones(2, 2),
    "empty": lambda L: L.empty(3).fill_(1),
    "full_float": lambda L: L.full((2,), 1.5),
    "tensor_of_floats": lambda L: L.tensor([1.5, 2.0]),
    "arange_float": lambda L: L.arange(0.5, 3.0),
    "linspace": lambda L: L.linspace(0, 1, 5),
    "eye": lambda L: L.eye(2),
    "scalar_tensor": lambda L: L.scalar_tensor(3),
    "rand_shape": lambda L: L.rand(2).dtype,
}


@pytest.mark.parametrize("default", [kael.float64, kael.float16, kael.bfloat16], ids=str)
@pytest.mark.parametrize("name", CALLS)
def test_the_default_dtype_reaches_every_default_as_torch(name, default):
    call = CALLS[name]
    before = call(kael)  # run once under float32 first: its caches must not survive
    call(kael)
    assert str(getattr(before, "dtype", before)) == "float32"
    kael.set_default_dtype(default)
    torch.set_default_dtype(getattr(torch, default.name))
    got, want = call(kael), call(torch)
    got_dtype, want_dtype = getattr(got, "dtype", got), getattr(want, "dtype", want)
    assert str(want_dtype) == f"torch.{got_dtype}"
    if isinstance(want, torch.Tensor) and name != "rand_shape":
        assert got.float().tolist() == want.float().tolist()
    assert kael.get_default_dtype() is default


def test_compiled_plans_of_the_old_default_are_dropped():
    @kael.compile
    def f(x):
        return x * 0.5

    x = kael.arange(4)
    assert f(x).dtype is kael.float32
    kael.set_default_dtype(kael.float64)
    assert f(x).dtype is kael.float64
    kael.set_default_dtype(kael.float32)
    assert f(x).dtype is kael.float32


@pytest.mark.parametrize("bad", [kael.int64, kael.bool, "int32"])
def test_only_floating_dtypes_can_be_the_default(bad):
    with pytest.raises(kael.TypeError, match="only floating-point types"):
        kael.set_default_dtype(bad)
    assert dtypes.get_default_dtype() is kael.float32


@pytest.mark.parametrize("python_type", [float, int, bool, complex])
def test_a_python_type_is_no_default_dtype_as_torch_refuses_it(python_type):
    """Python types stand for dtypes elsewhere (dtype=float), but torch.set_default_dtype
    refuses them all, float included."""
    with pytest.raises(TypeError, match="invalid dtype object"):
        torch.set_default_dtype(python_type)
    with pytest.raises(kael.TypeError, match="invalid dtype object.*Python type"):
        kael.set_default_dtype(python_type)
    assert dtypes.get_default_dtype() is kael.float32
