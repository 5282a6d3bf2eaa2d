"""Operands on two devices never reach a kernel of indexing, nn (softmax family,
cross_entropy, layer_norm), matmul or conv: each public op refuses them with a typed error
naming both devices (PyTorch's "expected all tensors to be on the same device"). A read of a
CPU tensor through an index on the GPU is refused too, a write through one copies it over,
as PyTorch's index and index_put_ do; a CPU index of a GPU tensor gives PyTorch's values on
the GPU. The kernel sites themselves take their addresses through ptr_on / host_ptr, which
refuse another device's memory.

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
