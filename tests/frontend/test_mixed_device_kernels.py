"""Operands on two devices never reach a kernel of indexing, nn (softmax family,
cross_entropy, layer_norm), matmul or conv: each public op refuses them with a typed error
naming both devices (PyTorch's "expected all tensors to be on the same device"). A read of a
CPU tensor through an index on the GPU is refused too, a write through one copies it over,
as PyTorch's index and index_put_ do; a CPU index of a GPU tensor gives PyTorch's values on
the GPU. The kernel sites themselves take their addresses through ptr_on / host_ptr, which
refuse another device's memory.

A CPU 0-d tensor beside a GPU tensor is PyTorch's CPU scalar (TensorIterator's
allow_cpu_scalars): the elementwise ops read it on the GPU, with the values and dtype of the
same call on a GPU 0-d tensor and of PyTorch's on the CPU; a 1-element 1-d CPU tensor, a GPU
0-d beside a CPU tensor with dims, clamp with Tensor bounds and a second CPU scalar of lerp
are refused, as PyTorch refuses them.

The device calls run in one child interpreter (a regression would crash it, not pytest),
which prints one JSON line per case; on the emulated device (KAEL_EMULATE_CUDA=1) in the
normal suite, on a GPU by `python -m kael.check_gpu`."""

import re

import numpy as np
import pytest
import torch
from kernel_helpers import RECORD_CASES, assert_refused_naming, case_records

pytestmark = pytest.mark.gpu

X = [[0.0, 1.0, 2.0, 3.0], [4.0, 5.0, 6.0, 7.0], [8.0, 9.0, 10.0, 11.0]]
INDEX = [2, 0]
TARGET = [1, 0, 3]

SCRIPT = f"""
import json
import kael
import kael.nn.functional as F
from kael.frontend import conv, indexing, linalg, nn
from kael.ir.conv import ConvGeometry

X = kael.tensor({X!r})
I, T = kael.tensor({INDEX!r}), kael.tensor({TARGET!r})
M = X > 4
W4 = kael.ones(4)
IMAGE, KERNEL = kael.ones(1, 1, 4, 4), kael.ones(1, 1, 3, 3)
c = lambda t: t.to("cuda")


def assigned(x, key, value):
    x[key] = value
    return x


def walk(x, key, kind, dense):
    plan = indexing._plan(x._impl, key, "index")
    indexing._run(plan, kind, dense._impl)


def offsets(x, index):
    view = x._impl
    entry = indexing._Index(index._impl, 0, 0)
    return indexing._offsets(view, [entry], index.shape, "index")


def multiply(a, b, out):
    linalg._multiply(a._impl, b._impl, out, (*a.shape[:-1], b.shape[-1]), "mm")


def implicit_gemm(x, w):
    geometry = ConvGeometry.of(1, 1, 1, 1, (4, 4), (3, 3), (1, 1), (1, 1), (0, 0), (2, 2))
    return conv._implicit_gemm(x, w, geometry, "conv2d")


CASES = {{
    # indexing: an index or mask on the GPU of a CPU tensor
    "x[index] index on the device": lambda: X[c(I)],
    "x[index] int32 index on the device": lambda: X[c(I.int())],
    "x[mask] mask on the device": lambda: X[c(M)],
    "x[index, index] second index on the device": lambda: X[I, c(kael.tensor([0, 1]))],
    "x[:, index] index on the device": lambda: X[:, c(I)],
    "x[index] = v index on the device": lambda: assigned(X.clone(), c(I), 1.0),
    "x[int32 0-d index] index on the device": lambda: X[c(kael.tensor(1, dtype=kael.int32))],
    "x[mask] = v mask on the device": lambda: assigned(X.clone(), c(M), 1.0),
    "index_put_ index on the device": lambda: X.clone().index_put_((c(I),), W4),
    "index_put_ accumulate index on the device": lambda: X.clone().index_put_(
        (c(I),), W4, accumulate=True
    ),
    "index_put index on the device": lambda: kael.index_put(X, (c(I),), W4),
    # indexing: the value on the other device
    "x[index] = v value on the device": lambda: assigned(X.clone(), I, c(kael.ones(2, 4))),
    "x[index] = v value on the host": lambda: assigned(c(X), c(I), kael.ones(2, 4)),
    "index_put_ accumulate value on the host": lambda: c(X).index_put_(
        (c(I),), W4, accumulate=True
    ),
    "take index on the device": lambda: kael.take(X, c(I)),
    "take index on the host": lambda: kael.take(c(X), I),
    "put_ index on the device": lambda: X.clone().put_(c(I), kael.ones(2)),
    "put_ source on the host": lambda: c(X).put_(c(I), kael.ones(2)),
    # nn
    "cross_entropy target on the device": lambda: F.cross_entropy(X, c(T)),
    "cross_entropy target on the host": lambda: F.cross_entropy(c(X), T),
    "cross_entropy weight on the device": lambda: F.cross_entropy(X, T, weight=c(W4)),
    "cross_entropy weight on the host": lambda: F.cross_entropy(c(X), c(T), weight=W4),
    "cross_entropy smoothed target on the device": lambda: F.cross_entropy(
        X, c(T), label_smoothing=0.1
    ),
    "cross_entropy probabilities on the device": lambda: F.cross_entropy(X, c(X.softmax(1))),
    "nll_loss target on the device": lambda: F.nll_loss(X, c(T)),
    "nll_loss target on the host": lambda: F.nll_loss(c(X), T),
    "nll_loss weight on the device": lambda: F.nll_loss(X, T, weight=c(W4)),
    "layer_norm weight on the device": lambda: F.layer_norm(X, (4,), weight=c(W4)),
    "layer_norm bias on the device": lambda: F.layer_norm(X, (4,), bias=c(W4)),
    "layer_norm weight on the host": lambda: F.layer_norm(c(X), (4,), weight=W4),
    "layer_norm float16 bias on the host": lambda: F.layer_norm(
        c(X).half(), (4,), bias=W4.half()
    ),
    "logsumexp out on the device": lambda: kael.logsumexp(X, 1, out=c(kael.empty(3))),
    "logsumexp out on the host": lambda: kael.logsumexp(c(X), 1, out=kael.empty(3)),
    # matmul
    "matmul other on the device": lambda: kael.matmul(X, c(X.T)),
    "matmul input on the device": lambda: kael.matmul(c(X), X.T),
    "matmul vector on the device": lambda: kael.matmul(X, c(W4)),
    "matmul out on the device": lambda: kael.matmul(X, X.T, out=c(kael.empty(3, 3))),
    "matmul out on the host": lambda: kael.matmul(c(X), c(X.T), out=kael.empty(3, 3)),
    "mm mat2 on the device": lambda: kael.mm(X, c(X.T)),
    "bmm mat2 on the host": lambda: kael.bmm(c(X[None]), X.T[None]),
    "dot tensor on the device": lambda: kael.dot(W4, c(W4)),
    "@ on two devices": lambda: X @ c(X.T),
    "linear weight on the device": lambda: F.linear(X, c(X)),
    # conv
    "conv2d weight on the device": lambda: F.conv2d(IMAGE, c(KERNEL)),
    "conv2d weight on the host": lambda: F.conv2d(c(IMAGE), KERNEL),
    "conv1d weight on the device": lambda: F.conv1d(IMAGE[0], c(KERNEL[0])),
    "conv2d bias on the device": lambda: F.conv2d(IMAGE, KERNEL, bias=c(kael.ones(1))),
    "conv_transpose2d weight on the device": lambda: F.conv_transpose2d(IMAGE, c(KERNEL)),
    # the fast doors, after a host call of the same layouts kept its launches
    "conv2d weight on the device after a host call": lambda: (
        F.conv2d(IMAGE, KERNEL), F.conv2d(IMAGE, c(KERNEL))
    ),
    "conv2d bias on the device after a host call": lambda: (
        F.conv2d(IMAGE, KERNEL, kael.ones(1)), F.conv2d(IMAGE, KERNEL, c(kael.ones(1)))
    ),
    "attention key on the device after a host call": lambda: (
        F.scaled_dot_product_attention(IMAGE, IMAGE, IMAGE),
        F.scaled_dot_product_attention(IMAGE, c(IMAGE), IMAGE),
    ),
    "cat piece on the device after a host call": lambda: (
        kael.cat([X, X]), kael.cat([X, c(X)])
    ),
    # the kernel sites given another device's memory
    "index gather into device memory": lambda: walk(X, (I,), "gather", c(kael.empty(2, 4))),
    "index put from host memory": lambda: walk(c(X), (c(I),), "put", kael.ones(2, 4)),
    "index offsets of a device index": lambda: offsets(X, c(I)),
    "softmax rows into device memory": lambda: nn._run_rows(
        "softmax", X._impl, c(kael.empty(3, 4))._impl, 1
    ),
    "mm kernel given device memory": lambda: multiply(X, c(X.T), kael.empty(3, 3)),
    "conv2d kernel given device memory": lambda: implicit_gemm(IMAGE, c(KERNEL)),
    # a CPU index of a GPU tensor, as PyTorch takes it: the CPU's values, on the device
    "cuda x[cpu index]": lambda: c(X)[I],
    "cuda x[cpu mask]": lambda: c(X)[M],
    "cuda x[cuda index, cpu index]": lambda: c(X)[c(I), kael.tensor([0, 1])],
    "cuda x[cpu index] = cuda v": lambda: assigned(c(X), I, c(kael.ones(2, 4))),
    "cuda index_put_ accumulate cpu index": lambda: c(X).index_put_((I,), c(W4), accumulate=True),
    "cuda x[cuda index]": lambda: c(X)[c(I)],
}}

{RECORD_CASES}
"""

ERROR = "kael.runtime.errors.Error"
INDEX_ERROR = "kael.runtime.errors.IndexError"
BOTH = r"expected all tensors on one device, but found (cpu and cuda:0|cuda:0 and cpu)"
INDEX_ON_DEVICE = (
    INDEX_ERROR,
    r"indices should be either on cpu or on the same device as the indexed tensor \(cpu\),"
    " got an index on cuda:0",
)


def _refused(op: str) -> tuple[str, str]:
    return ERROR, f"^{re.escape(op)}: {BOTH}$"


def _out_on(out: str, operands: str, op: str) -> tuple[str, str]:
    return ERROR, f"^{op}: out is on {out} but the operands are on {operands}$"


def _value_on(tensor: str, value: str) -> tuple[str, str]:
    return ERROR, (
        f"^index_put_: expected the value on the indexed tensor's device {tensor}, got {value}$"
    )


def _kernel(op: str, kernel: str, memory: str) -> tuple[str, str]:
    return ERROR, f"^{op}: {kernel} kernel given memory on {memory}: expected all tensors on"


# name -> (the error's class, a regex its message matches)
REFUSED = {
    "x[index] index on the device": INDEX_ON_DEVICE,
    "x[index] int32 index on the device": INDEX_ON_DEVICE,
    "x[mask] mask on the device": INDEX_ON_DEVICE,
    "x[index, index] second index on the device": INDEX_ON_DEVICE,
    "x[:, index] index on the device": INDEX_ON_DEVICE,
    "x[index] = v value on the device": _value_on("cpu", "cuda:0"),
    "x[index] = v value on the host": _value_on("cuda:0", "cpu"),
    "index_put_ accumulate value on the host": _value_on("cuda:0", "cpu"),
    "take index on the device": _refused("take()"),
    "take index on the host": _refused("take()"),
    "put_ index on the device": _refused("put_"),
    "put_ source on the host": _refused("put_"),
    "cross_entropy target on the device": _refused("cross_entropy"),
    "cross_entropy target on the host": _refused("cross_entropy"),
    "cross_entropy weight on the device": _refused("cross_entropy"),
    "cross_entropy weight on the host": _refused("cross_entropy"),
    "cross_entropy smoothed target on the device": _refused("cross_entropy"),
    "cross_entropy probabilities on the device": _refused("mul"),
    "nll_loss target on the device": _refused("gather()"),
    "nll_loss target on the host": _refused("gather()"),
    "nll_loss weight on the device": _refused("where"),
    "layer_norm weight on the device": _refused("layer_norm"),
    "layer_norm bias on the device": _refused("layer_norm"),
    "layer_norm weight on the host": _refused("layer_norm"),
    "layer_norm float16 bias on the host": _refused("layer_norm"),
    "logsumexp out on the device": _out_on("cuda:0", "cpu", "logsumexp"),
    "logsumexp out on the host": _out_on("cpu", "cuda:0", "logsumexp"),
    "matmul other on the device": _refused("matmul"),
    "matmul input on the device": _refused("matmul"),
    "matmul vector on the device": _refused("matmul"),
    "matmul out on the device": _out_on("cuda:0", "cpu", "matmul"),
    "matmul out on the host": _out_on("cpu", "cuda:0", "matmul"),
    "mm mat2 on the device": _refused("mm"),
    "bmm mat2 on the host": _refused("bmm"),
    "dot tensor on the device": _refused("dot"),
    "@ on two devices": _refused("matmul"),
    "linear weight on the device": _refused("matmul"),
    "conv2d weight on the device": _refused("conv2d"),
    "conv2d weight on the host": _refused("conv2d"),
    "conv1d weight on the device": _refused("conv1d"),
    "conv2d bias on the device": _refused("conv2d"),  # checked with the bias, before the add
    "conv_transpose2d weight on the device": _refused("conv_transpose2d"),
    "conv2d weight on the device after a host call": _refused("conv2d"),
    "conv2d bias on the device after a host call": _refused("conv2d"),
    "attention key on the device after a host call": _refused("scaled_dot_product_attention"),
    "cat piece on the device after a host call": _refused("cat"),
    "index gather into device memory": _kernel("index", "host", "cuda:0"),
    "index put from host memory": _kernel("index_put_", "cuda:0", "cpu"),
    "index offsets of a device index": _kernel("index", "host", "cuda:0"),
    "softmax rows into device memory": _kernel("softmax", "host", "cuda:0"),
    "mm kernel given device memory": _kernel("mm", "host", "cuda:0"),
    "conv2d kernel given device memory": _kernel("conv2d", "host", "cuda:0"),
}

_X, _INDEX = torch.tensor(X), torch.tensor(INDEX)
_MASK = _X > 4


def _assigned(x: torch.Tensor, key, value) -> torch.Tensor:
    x[key] = value
    return x


# name -> PyTorch's result on the CPU
EXPECTED = {
    "cuda x[cpu index]": lambda: _X[_INDEX],
    "cuda x[cpu mask]": lambda: _X[_MASK],
    "cuda x[cuda index, cpu index]": lambda: _X[_INDEX, torch.tensor([0, 1])],
    "cuda x[cpu index] = cuda v": lambda: _assigned(_X.clone(), _INDEX, torch.ones(2, 4)),
    "cuda index_put_ accumulate cpu index": lambda: _X.clone().index_put_(
        (_INDEX,), torch.ones(4), accumulate=True
    ),
    "cuda x[cuda index]": lambda: _X[_INDEX],
}

_W4 = torch.ones(4)
# name -> PyTorch's result of a write into a CPU tensor through keys on the GPU: torch's
# index_put_ moves them to the written tensor's device (only a read refuses them)
WRITES = {
    "x[index] = v index on the device": lambda: _assigned(_X.clone(), _INDEX, 1.0),
    "x[mask] = v mask on the device": lambda: _assigned(_X.clone(), _MASK, 1.0),
    "index_put_ index on the device": lambda: _X.clone().index_put_((_INDEX,), _W4),
    "index_put_ accumulate index on the device": lambda: _X.clone().index_put_(
        (_INDEX,), _W4, accumulate=True
    ),
    "index_put index on the device": lambda: torch.index_put(_X, (_INDEX,), _W4),
    "x[int32 0-d index] index on the device": lambda: _X[1],
}


@pytest.fixture(scope="module")
def results() -> dict:
    """Each case's record from the child interpreter, by name."""
    return case_records(SCRIPT)


@pytest.mark.parametrize("name", list(REFUSED))
def test_operands_on_two_devices_raise_a_typed_error_naming_both(results, name):
    record = results[name]
    assert_refused_naming(record, *REFUSED[name])
    assert "cpu" in record["message"] and "cuda:0" in record["message"]


def _same_as(record: dict, want: torch.Tensor, device: str) -> None:
    assert "error" not in record, record
    assert record["device"] == device
    assert record["dtype"] == str(want.dtype).removeprefix("torch.")
    assert tuple(record["shape"]) == tuple(want.shape)
    np.testing.assert_array_equal(np.array(record["values"]), want.double().reshape(-1).numpy())


@pytest.mark.parametrize("name", list(EXPECTED))
def test_a_cpu_index_of_a_device_tensor_gives_the_cpus_values_on_the_device(results, name):
    _same_as(results[name], EXPECTED[name](), "cuda:0")


@pytest.mark.parametrize("name", list(WRITES))
def test_a_write_through_device_keys_into_a_cpu_tensor_copies_them_over(results, name):
    _same_as(results[name], WRITES[name](), "cpu")


# ---- CPU scalars ------------------------------------------------------------------------------

V = [[1.5, -2.0, 3.0], [0.0, -0.5, 4.0]]

# name -> an expression of x (a [2, 3] float32 tensor on the GPU) and s(value) (a 0-d tensor),
# evaluated with kael and with torch as K
SCALAR_OPS = {
    "add": "x + s(2.0)",
    "sub scalar first": "s(2.0) - x",
    "mul int scalar": "x * s(3)",
    "div": "K.div(x, s(4.0))",
    "div floor": "K.div(x, s(2.0), rounding_mode='floor')",
    "div trunc": "K.div(x, s(2.0), rounding_mode='trunc')",
    "pow exponent": "K.pow(x, s(2))",
    "pow base": "K.pow(s(2.0), x)",
    "maximum": "K.maximum(x, s(0.0))",
    "minimum scalar first": "K.minimum(s(1.0), x)",
    "eq": "K.eq(x, s(3.0))",
    "lt": "x < s(1.0)",
    "remainder": "K.remainder(x, s(1.25))",
    "fmod": "K.fmod(x, s(1.25))",
    "copysign": "K.copysign(x, s(-1.0))",
    "atan2": "K.atan2(x, s(0.5))",
    "hypot": "K.hypot(x, s(3.0))",
    "logical_and": "K.logical_and(x, s(True))",
    "bitwise_and int32": "x.int() & s(6)",
    "int tensor and float scalar promote": "x.int() + s(2.5)",
    "half tensor keeps its dtype": "x.half() * s(2.0, dtype=K.float64)",
    "add alpha": "K.add(x, s(2.0), alpha=3)",
    "sub alpha scalar first": "K.sub(s(1.0), x, alpha=2)",
    "where other": "K.where(x > 0, x, s(0.0))",
    "where condition and other": "K.where(s(True), x, s(-1.0))",
    "clamp_min": "K.clamp_min(x, s(0.0))",
    "clamp_max": "K.clamp_max(x, s(1.0))",
    "clamp one tensor and one number bound": "K.clamp(x, s(0.0), 1.0)",
    "lerp weight": "x.lerp(x * 2, s(0.25))",
    "add_": "x.clone().add_(s(2.0))",
    "mul_": "x.clone().mul_(s(2.0))",
    "add_ alpha": "x.clone().add_(s(1.0), alpha=2)",
    "clamp_min_": "x.clone().clamp_min_(s(0.0))",
    "masked_fill_": "x.clone().masked_fill_(x > 0, s(9.0))",
}

_ERROR = "kael.runtime.errors.Error"
_BOTH_WAYS = r"expected all tensors on one device, but found (cuda:0 and cpu|cpu and cuda:0)$"

# name -> (an expression as above, the op its kael.Error names, or "" for the kernel's own)
SCALAR_REFUSED = {
    "a 1-element 1-d cpu tensor": ("x + K.tensor([2.0])", "add"),
    "a cuda 0-d beside a cpu tensor with dims": ("c(s(2.0)) + K.tensor([1.0, 2.0, 3.0])", "add"),
    "in place beside a cpu tensor with dims": ("x.clone().add_(K.tensor([1.0, 2.0, 3.0]))", "add_"),
    "clamp with a tensor bound": ("K.clamp(x, min=s(0.0))", "clamp"),
    "clamp with two tensor bounds": ("K.clamp(x, s(0.0), s(1.0))", "clamp"),
    "lerp with two cpu scalars": ("x.lerp(s(1.0), s(0.25))", "lerp"),
    "a cpu 0-d written from the device": ("s(1.0).add_(x[0, 0])", ""),
}

SCALAR_SCRIPT = f"""
import json
import kael

c = lambda t: t.to("cuda")
host = kael.tensor
on_device = lambda *args, **kwargs: c(kael.tensor(*args, **kwargs))
X = kael.tensor({V!r})


def evaluated(expr, x, s):
    return eval(expr, {{"K": kael, "x": x, "s": s, "c": c}})


# each op on the CPU first, twice: the fast door remembers CPU launches of these keys
for expr in {SCALAR_OPS!r}.values():
    evaluated(expr, X, host), evaluated(expr, X, host)
CASES = {{}}
for name, expr in {SCALAR_OPS!r}.items():
    CASES[name + " [cpu 0-d]"] = lambda expr=expr: evaluated(expr, c(X), host)
    CASES[name + " [cuda 0-d]"] = lambda expr=expr: evaluated(expr, c(X), on_device)
for name, (expr, _) in {SCALAR_REFUSED!r}.items():
    CASES[name] = lambda expr=expr: evaluated(expr, c(X), host)


def compiled_twice():
    f = kael.compile(lambda x, s: (x + s) * 2)
    s = kael.tensor(2.0)
    f(c(X), s)
    s.fill_(5.0)
    return f(c(X), s)


CASES["compiled, the scalar changed between calls"] = compiled_twice

{RECORD_CASES}
"""


@pytest.fixture(scope="module")
def scalar_results() -> dict:
    """Each CPU-scalar case's record from the child interpreter, by name."""
    return case_records(SCALAR_SCRIPT)


def _torch_result(expr: str) -> torch.Tensor:
    """PyTorch's value of a SCALAR_OPS expression, all on the CPU."""
    return eval(expr, {"K": torch, "x": torch.tensor(V), "s": torch.tensor, "c": lambda t: t})


@pytest.mark.parametrize("name", list(SCALAR_OPS))
def test_a_cpu_0d_operand_of_a_device_op_gives_torchs_values_on_the_device(scalar_results, name):
    record, want = scalar_results[f"{name} [cpu 0-d]"], _torch_result(SCALAR_OPS[name])
    assert "error" not in record, record
    assert record["device"] == "cuda:0"
    assert record["dtype"] == str(want.dtype).removeprefix("torch.")
    assert tuple(record["shape"]) == tuple(want.shape)
    want_values = want.double().reshape(-1).numpy()
    np.testing.assert_allclose(np.array(record["values"]), want_values, rtol=1e-6, atol=0)


@pytest.mark.parametrize("name", list(SCALAR_OPS))
def test_a_cpu_0d_operand_gives_what_a_device_0d_operand_gives(scalar_results, name):
    on_host, on_device = (scalar_results[f"{name} [{d} 0-d]"] for d in ("cpu", "cuda"))
    assert "error" not in on_device, on_device
    assert {**on_host, "name": ""} == {**on_device, "name": ""}


@pytest.mark.parametrize("name", list(SCALAR_REFUSED))
def test_cpu_operands_torch_refuses_beside_a_device_tensor_are_refused(scalar_results, name):
    op = SCALAR_REFUSED[name][1]
    assert_refused_naming(
        scalar_results[name], _ERROR, f"^{re.escape(op + ': ' if op else '')}{_BOTH_WAYS}"
    )


def test_a_compiled_device_op_reads_its_cpu_scalar_at_each_call(scalar_results):
    record = scalar_results["compiled, the scalar changed between calls"]
    want = (torch.tensor(V) + 5.0) * 2
    assert "error" not in record, record
    assert record["device"] == "cuda:0" and record["dtype"] == "float32"
    np.testing.assert_array_equal(np.array(record["values"]), want.double().reshape(-1).numpy())
