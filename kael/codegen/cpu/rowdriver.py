"""The row driver: several kernels run one row at a time, so each row is read from memory
once and re-read from cache by the kernels after the first.

A compiled plan groups a reduction over rows with the kernels that read its result at the
same rows (softmax written as amax, sum of exp, divide; var, RMSNorm, layer_norm). The
driver's work items are chunks of rows (as many as stay in cache together); for each chunk
it calls every kernel of the group on that chunk's work items, in order. Its argument
block is `[n, rows per chunk, rows, then per kernel: function address, argument block
address, work items per row]`, so one compiled function serves every group.
"""

from __future__ import annotations

from llvmlite import ir

from kael.codegen.cpu import handwritten

SYMBOL = "kael_row_driver"
I64 = ir.IntType(64)
KERNEL = ir.FunctionType(ir.VoidType(), [I64.as_pointer(), I64, I64])


def _build(module: ir.Module) -> list[str]:
    fn, b = handwritten.kernel_function(module, SYMBOL)
    args, begin, end = fn.args
    row_slot = b.alloca(I64)
    k_slot = b.alloca(I64)
    count = b.load(args)
    chunk = b.load(b.gep(args, [ir.Constant(I64, 1)]))
    total = b.load(b.gep(args, [ir.Constant(I64, 2)]))
    b.store(begin, row_slot)
    rows = fn.append_basic_block("rows")
    kernels = fn.append_basic_block("kernels")
    call = fn.append_basic_block("call")
    next_row = fn.append_basic_block("next_row")
    done = fn.append_basic_block("done")
    b.branch(rows)

    b.position_at_end(rows)
    row = b.load(row_slot)
    b.store(ir.Constant(I64, 0), k_slot)
    b.cbranch(b.icmp_signed("<", row, end), kernels, done)

    b.position_at_end(kernels)
    k = b.load(k_slot)
    b.cbranch(b.icmp_signed("<", k, count), call, next_row)

    b.position_at_end(call)
    base = b.add(b.mul(k, ir.Constant(I64, 3)), ir.Constant(I64, 3))
    words = [b.load(b.gep(args, [b.add(base, ir.Constant(I64, i))])) for i in range(3)]
    address, block, per_row = words
    first_row = b.mul(row, chunk)
    past = b.add(first_row, chunk)
    last_row = b.select(b.icmp_signed("<", past, total), past, total)
    target = b.inttoptr(address, KERNEL.as_pointer())
    first, last = b.mul(first_row, per_row), b.mul(last_row, per_row)
    b.call(target, [b.inttoptr(block, I64.as_pointer()), first, last])
    b.store(b.add(k, ir.Constant(I64, 1)), k_slot)
    b.branch(kernels)

    b.position_at_end(next_row)
    b.store(b.add(row, ir.Constant(I64, 1)), row_slot)
    b.branch(rows)

    b.position_at_end(done)
    b.ret_void()
    return [SYMBOL]


def driver():
    """The compiled row driver (a kernel function over rows)."""
    return handwritten.compiled(SYMBOL, _build)[SYMBOL]
