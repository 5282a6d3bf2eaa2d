"""bincount's histogram: each chunk of CHUNK values counts (or sums weights) into its own
row of bins, and the rows are summed after (a reduction over the chunks), so the chunks
run on every thread without atomics, and a float sum is the same for any thread count.

A dense kernel (codegen/cpu/dense.py) whose work item is one chunk. Values must already
be checked to lie in [0, bins): the kernel indexes the row with them unchecked.
"""

from __future__ import annotations

from llvmlite import ir

from kael.codegen.cpu import dense
from kael.runtime.dtypes import DType
from kael.runtime.tensor_impl import host_ptr

I64 = ir.IntType(64)
CHUNK = 1 << 20  # values one work item bins: fixed, so the sum's order is too
WORDS = ("x", "weights", "rows", "total", "bins")


def _bin(d: dense.Dense, item: ir.Value, weighted: bool) -> None:
    b, w = d.b, d.w
    lo = b.mul(item, d.i(CHUNK))
    hi = b.add(lo, d.i(CHUNK))
    hi = b.select(b.icmp_signed("<", hi, w["total"]), hi, w["total"])
    values = d.ptr("x", I64)
    cell = d.t if weighted else I64
    row = b.gep(d.ptr("rows", cell), [b.mul(item, w["bins"])])
    with d.loop(lo, hi) as i:
        value = b.load(b.gep(values, [i]))
        # the caller checked the values, but another thread may change them since: a value
        # past the bins is left out, never written outside them
        with b.if_then(b.icmp_unsigned("<", value, w["bins"]), likely=True):
            at = b.gep(row, [value])
            if weighted:
                b.store(d.add(b.load(at), b.load(b.gep(d.ptr("weights"), [i]))), at)
            else:
                b.store(b.add(b.load(at), d.i(1)), at)


def chunks(total: int) -> int:
    """How many rows of bins `total` values fill."""
    return -(-total // CHUNK)


def bin_into(rows, x, weights, dtype: DType | None) -> None:
    """Count the int64 values of contiguous impl `x` ([total]) into the zeroed contiguous
    impl `rows` ([chunks(total), bins], int64), or sum the contiguous `weights` (of float
    dtype `dtype`, rows of it too) there."""
    total, bins = x.shape[0], rows.shape[1]
    weighted = weights is not None
    kind = dtype.name if weighted else "count"
    name = f"kael_bincount_{kind}"

    def build(module: ir.Module) -> list[str]:
        body = lambda d, item: _bin(d, item, weighted)  # noqa: E731
        return dense.per_matrix(module, name, dtype or rows.dtype, WORDS, body)

    weights_at = host_ptr(weights, name) if weighted else 0
    words = [host_ptr(x, name), weights_at, host_ptr(rows, name), total, bins]
    dense.run(name, build, name, words, chunks(total), CHUNK)
