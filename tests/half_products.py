"""Half-type matrix products launched alone on the emulated device, for the tensor-core
kernels' tests (test_mma.py, test_wgmma.py): operands laid out in buffers of NaNs with
chosen strides, the launch gemm.matmul would make, and the exact sums to compare with."""

from __future__ import annotations

import ctypes

import numpy as np

from kael.runtime.dtypes import float16
from kael.runtime.emulator import driver, instructions

NAN_BITS = {"float16": 0x7E00, "bfloat16": 0x7FC0}  # what lies around the operands: never read


def half_bits(x: np.ndarray, dtype) -> np.ndarray:
    """float32 values as the dtype's bits, rounded to nearest even (kael's `narrow`)."""
    x = np.asarray(x, np.float32)
    if dtype is float16:
        return x.astype(np.float16).view(np.uint16)
    bits = x.view(np.uint32).astype(np.uint64)
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)


class Operand:
    """A batch of matrices at `offset` elements into a buffer of NaNs, with element strides."""

    def __init__(self, values: np.ndarray, dtype, strides, offset=0):
        self.values = values  # (q, rows, cols) small integers
        self.strides, self.offset = strides, offset
        last = offset + sum((d - 1) * s for d, s in zip(values.shape, strides, strict=True))
        self.buffer = np.full(last + 8, NAN_BITS[dtype.name], np.uint16)
        index = offset + sum(
            np.arange(d).reshape([-1 if a == i else 1 for a in range(3)]) * s
            for i, (d, s) in enumerate(zip(values.shape, strides, strict=True))
        )
        self.index = index
        self.buffer[index] = half_bits(values, dtype)


def ints(rng, *shape) -> np.ndarray:
    return rng.integers(-3, 4, shape).astype(np.float32)  # exact sums: results bit for bit


def contiguous(values, dtype, row=None, batch=None, offset=0) -> Operand:
    """Row-major matrices, rows `row` elements apart (default: packed), batches `batch`."""
    q, rows, cols = values.shape
    row = cols if row is None else row
    return Operand(values, dtype, (rows * row if batch is None else batch, row, 1), offset)


def transposed(values, dtype, column=None) -> Operand:
    """Column-major matrices (each one's transpose row-major), columns `column` apart."""
    q, rows, cols = values.shape
    column = rows if column is None else column
    return Operand(values, dtype, (cols * column, 1, column))


def launch(ptx: str, symbol: str, kernel, a: Operand, b: Operand, c: Operand, monkeypatch, spy=()):
    """Launch the kernel on the emulated device as gemm.matmul would (`kernel`: tile_m,
    tile_n, threads, shared bytes): (C's buffer after it, how many times each handler in
    `spy` ran)."""
    q, m, k = a.values.shape
    n = b.values.shape[2]
    tile_m, tile_n, threads, shared = kernel
    tm, tn = -(-m // tile_m), -(-n // tile_n)
    seen = dict.fromkeys(spy, 0)
    for head in spy:
        handler = instructions.HANDLERS[head]

        def counted(*args, head=head, handler=handler):
            seen[head] += 1
            return handler(*args)

        monkeypatch.setitem(instructions.HANDLERS, head, counted)
    _, module = driver.cuModuleLoadData(ptx.encode())
    _, fn = driver.cuModuleGetFunction(module, symbol.encode())
    attribute = driver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
    assert driver.cuFuncSetAttribute(fn, attribute, shared) == (driver.OK,)
    buffers = []
    try:
        for op in (a, b, c):
            _, at = driver.cuMemAlloc(op.buffer.nbytes)
            buffers.append(at)
            driver.cuMemcpyHtoD(at, op.buffer.ctypes.data, op.buffer.nbytes)
        words = [
            buffers[0] + 2 * a.offset, buffers[1] + 2 * b.offset, buffers[2] + 2 * c.offset,
            a.strides[1], a.strides[2], a.strides[0], b.strides[1], b.strides[2], b.strides[0],
            c.strides[1], c.strides[0], m, n, k, tm, tn,
        ]  # fmt: skip
        values = (ctypes.c_int64 * len(words))(*words)
        slots = (ctypes.c_void_p * len(words))(
            *(ctypes.addressof(values) + 8 * i for i in range(len(words)))
        )
        (err,) = driver.cuLaunchKernel(
            fn, q * tm * tn, 1, 1, threads, 1, 1, shared, 0, ctypes.addressof(slots), 0
        )
        assert err == driver.OK, driver.cuGetErrorString(err)[1].decode()
        out = np.empty_like(c.buffer)
        driver.cuMemcpyDtoH(out.ctypes.data, buffers[2], out.nbytes)
    finally:
        for at in buffers:
            driver.cuMemFree(at)
    return out, seen


def check(out: np.ndarray, a: Operand, b: Operand, c: Operand, dtype) -> None:
    """C holds the exact sums rounded to the dtype, and nothing around C was written."""
    exact = np.einsum("qmk,qkn->qmn", a.values.astype(np.float64), b.values.astype(np.float64))
    want = np.broadcast_to(half_bits(exact.astype(np.float32), dtype), c.values.shape)
    np.testing.assert_array_equal(out[c.index], want)
    outside = np.ones(out.shape, bool)
    outside[c.index] = False
    assert (out[outside] == c.buffer[outside]).all()  # padding and gaps are never written
