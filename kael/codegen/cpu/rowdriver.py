"""The row driver: several kernels run one row at a time, so each row is read from memory
once and re-read from cache by the kernels after the first.

A compiled plan groups a reduction over rows with the kernels that read its result at the
same rows (softmax written as amax, sum of exp, divide; var, RMSNorm, layer_norm). The
driver's work items are chunks of rows (as many as stay in cache together); for each chunk
it calls every kernel of the group on that chunk's work items, in order.

A value that only the group's own kernels write and read (softmax's exp, the row maxima)
never needs a whole buffer: the driver gives it a chunk-sized scratch of its own (from the
C heap, once per call: the calling thread's stack may be small), so it stays in cache and
never goes to memory. Each kernel addresses its buffers from a
base in its argument block, so the driver copies every kernel's block once per call (the
threads share the originals) and, before each chunk, stores into the copy each scratch
value's base moved back by the chunk's first row: the kernel's own index arithmetic then
lands in the scratch. A reduction reducing each row in several blocks is two of the
driver's kernels (its blocks, so many work items a row, then its tree, one), and its
partials are such a scratch value too. A member writing with streaming stores leaves
their fence to the driver, which fences once after its chunks (a fence a chunk waited for
each chunk's stores to reach memory before the next chunk's loads began: softmax 4096x4096
1.06x the time).

Argument block: `[count, rows per chunk, rows, scratch bytes]`, then per kernel six
words `[function, block at, work items per row, block words, first patch, patches]`, then
per patch three words `[block word, scratch byte offset, bytes per row]`, then the
kernels' own blocks, one after another (`block at` is where each starts, in words from
the start of the driver's block). The whole launch is one block, so a compiled plan
launches a group as it launches one kernel: a template with the operands' addresses
stored at their words (native_launch.py). One compiled function serves every group.
"""

from __future__ import annotations

from llvmlite import ir

from kael.codegen.cpu import compiler, handwritten
from kael.codegen.cpu.loops import LoopBuilder

SYMBOL = "kael_row_driver"
I8 = ir.IntType(8)
I64 = ir.IntType(64)
KERNEL = ir.FunctionType(ir.VoidType(), [I64.as_pointer(), I64, I64])
HEAD = 4  # words before the kernels' records
RECORD = 6  # words per kernel
PATCH = 3  # words per patch


def _i64(v: int) -> ir.Constant:
    return ir.Constant(I64, v)


def _build(module: ir.Module) -> list[str]:
    fn, b = handwritten.kernel_function(module, SYMBOL)
    args, begin, end = fn.args
    loops = LoopBuilder(b)

    def word(i):
        return b.load(b.gep(args, [i if isinstance(i, ir.Value) else _i64(i)]))

    count, chunk, total, scratch_bytes = (word(i) for i in range(HEAD))
    patches_at = b.add(_i64(HEAD), b.mul(count, _i64(RECORD)))

    def field(k, f):
        return word(b.add(b.add(_i64(HEAD), b.mul(k, _i64(RECORD))), _i64(f)))

    # this call's copies of the kernels' blocks, one after another, and where each starts
    words_slot = b.alloca(I64)
    b.store(_i64(0), words_slot)
    loops.counted(
        _i64(0),
        count,
        1,
        lambda k: b.store(b.add(b.load(words_slot), field(k, 3)), words_slot),
        "size",
    )
    copies = b.alloca(I64, size=b.load(words_slot), name="copies")
    copies.align = 64
    starts = b.alloca(I64, size=count, name="starts")
    # the chunk scratch comes from the C heap: a caller's thread may have a small stack
    # (threading.stack_size, musl, macOS); where malloc refuses, the stack serves after all
    heap_slot = b.alloca(I8.as_pointer(), name="heap")
    b.store(ir.Constant(I8.as_pointer(), None), heap_slot)
    wanted = b.icmp_signed(">", scratch_bytes, _i64(0))
    with b.if_then(wanted):
        rc = b.call(_memalign(module), [heap_slot, _i64(64), scratch_bytes])
        with b.if_then(b.icmp_signed("!=", rc, ir.Constant(ir.IntType(32), 0))):
            b.store(ir.Constant(I8.as_pointer(), None), heap_slot)
    heap = b.load(heap_slot)
    on_heap = b.icmp_unsigned("!=", heap, ir.Constant(I8.as_pointer(), None))
    stack_slot = b.alloca(I64, name="stack_scratch")
    b.store(_i64(0), stack_slot)
    with b.if_then(b.and_(wanted, b.not_(on_heap))):
        fallback = b.alloca(I8, size=scratch_bytes, name="scratch")
        fallback.align = 64
        b.store(b.ptrtoint(fallback, I64), stack_slot)
    scratch_base = b.select(on_heap, b.ptrtoint(heap, I64), b.load(stack_slot))
    b.store(_i64(0), words_slot)

    def copy(k):
        at, n = b.load(words_slot), field(k, 3)
        b.store(at, b.gep(starts, [k]))
        src = b.gep(args, [field(k, 1)])
        loops.counted(
            _i64(0),
            n,
            1,
            lambda i: b.store(b.load(b.gep(src, [i])), b.gep(copies, [b.add(at, i)])),
            "copy",
        )
        b.store(b.add(at, n), words_slot)

    loops.counted(_i64(0), count, 1, copy, "copies")

    def run_chunk(c):
        first_row = b.mul(c, chunk)
        past = b.add(first_row, chunk)
        last_row = b.select(b.icmp_signed("<", past, total), past, total)

        def run_kernel(k):
            block = b.gep(copies, [b.load(b.gep(starts, [k]))])
            first_patch, patches = field(k, 4), field(k, 5)

            def patch(j):
                at = b.add(patches_at, b.mul(b.add(first_patch, j), _i64(PATCH)))
                target, offset, row_bytes = (word(b.add(at, _i64(i))) for i in range(PATCH))
                base = b.sub(b.add(scratch_base, offset), b.mul(first_row, row_bytes))
                b.store(base, b.gep(block, [target]))

            loops.counted(_i64(0), patches, 1, patch, "patch")
            per_row = field(k, 2)
            kernel = b.inttoptr(field(k, 0), KERNEL.as_pointer())
            b.call(kernel, [block, b.mul(first_row, per_row), b.mul(last_row, per_row)])

        loops.counted(_i64(0), count, 1, run_kernel, "kernels")

    loops.counted(begin, end, 1, run_chunk, "chunks")
    b.fence("seq_cst")  # publishes the streaming stores of members that leave it to the driver
    with b.if_then(on_heap):
        b.call(_free(module), [heap])
    b.ret_void()
    return [SYMBOL]


def _memalign(module: ir.Module) -> ir.Function:
    """libc's posix_memalign, resolved in the process when the module is linked."""
    ty = ir.FunctionType(ir.IntType(32), [I8.as_pointer().as_pointer(), I64, I64])
    return module.globals.get("posix_memalign") or ir.Function(module, ty, "posix_memalign")


def _free(module: ir.Module) -> ir.Function:
    ty = ir.FunctionType(ir.VoidType(), [I8.as_pointer()])
    return module.globals.get("free") or ir.Function(module, ty, "free")


def driver():
    """The compiled row driver (a kernel function over chunks of rows)."""
    return handwritten.compiled(SYMBOL, _build, compiler.KERNEL_PASSES, tiered=False)[SYMBOL]


def words(chunk: int, rows: int, scratch_bytes: int, members: list) -> tuple[list, list]:
    """The driver's argument block, and where in it each member's block starts: `members`
    are (function address, block words, work items per row, [(block word, scratch
    offset, bytes per row), ...])."""
    head = [len(members), chunk, rows, scratch_bytes]
    records, table = [], []
    at = HEAD + RECORD * len(members) + PATCH * sum(len(m[3]) for m in members)
    starts = []
    for fn, block, per_row, patches in members:
        starts.append(at)
        records += [fn, at, per_row, len(block), len(table) // PATCH, len(patches)]
        at += len(block)
        for patch in patches:
            table += patch
    return head + records + table + [w for m in members for w in m[1]], starts
