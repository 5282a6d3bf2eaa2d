"""kael.nn.Parameter's requires_grad rules, each as torch's: only a floating or complex
parameter may require grad (at construction, through the flag, requires_grad_ and .data)."""

import pytest
import torch

import kael
from kael import nn

LIBS = pytest.mark.parametrize("lib", [torch, kael], ids=["torch", "kael"])
RUNTIME = {torch: RuntimeError, kael: kael.Error}
INTEGRAL = ["int64", "int32", "uint8", "bool"]


@LIBS
@pytest.mark.parametrize("dtype", INTEGRAL)
def test_an_integer_parameter_cannot_require_grad(lib, dtype):
    data = lib.ones(2, dtype=getattr(lib, dtype))
    message = "^Only Tensors of floating point and complex dtype can require gradients$"
    with pytest.raises(RUNTIME[lib], match=message):
        lib.nn.Parameter(data)
    frozen = lib.nn.Parameter(data, requires_grad=False)
    assert not frozen.requires_grad and str(frozen.dtype).endswith(dtype)
    with pytest.raises(RUNTIME[lib], match="^only Tensors of floating point and complex dtype"):
        frozen.requires_grad = True
    with pytest.raises(RUNTIME[lib], match="^only Tensors of floating point dtype can require"):
        frozen.requires_grad_(True)
    assert frozen.requires_grad_(False) is frozen and not frozen.requires_grad


@LIBS
@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float64", "complex64"])
def test_floating_and_complex_parameters_require_grad_by_default(lib, dtype):
    param = lib.nn.Parameter(lib.ones(2, dtype=getattr(lib, dtype)))
    assert param.requires_grad and str(param.dtype).endswith(dtype)


@LIBS
def test_data_of_an_integer_dtype_is_refused_only_while_requiring_grad(lib):
    param = lib.nn.Parameter(lib.ones(2))
    with pytest.raises(RUNTIME[lib], match="data set to a tensor that requires gradients must"):
        param.data = lib.ones(2, dtype=lib.int64)
    assert str(param.dtype).endswith("float32")
    param.requires_grad_(False)
    param.data = lib.ones(3, dtype=lib.int64)
    assert str(param.dtype).endswith("int64") and tuple(param.shape) == (3,)


def test_data_reads_a_plain_tensor_over_the_same_elements():
    param = nn.Parameter(kael.ones(2))
    view = param.data
    assert type(view) is kael.Tensor and view.data_ptr() == param.data_ptr()
    param.data = kael.zeros(2)
    assert isinstance(param, nn.Parameter) and param.tolist() == [0.0, 0.0]
