"""multinomial's per-row sampler: a hand-written LLVM function that runs over rows like a kernel.

`void kael_multinomial(i64* args, i64 begin, i64 end)` checks and samples rows [begin,
end), so the launcher splits rows over the thread pool exactly as it splits a kernel's
elements. Weights are contiguous float64 [rows, classes]. With replacement a row keeps
the cumulative sums and binary-searches each point; without, it rescans the remaining
weights and zeroes each pick (the book's rule). A point is u * total with u the float64
uniform of draw j of row b: 53 bits of the Philox block at counter offset + b * samples +
j (kael/codegen/philox.py), so results do not depend on the thread count.

A bad row stores (code, detail) in its two status words and lowers the error word to
its index with an atomic min, so the caller reports the first bad row whatever the split.
"""

from __future__ import annotations

from llvmlite import ir

from kael.codegen import philox
from kael.codegen.cpu import handwritten
from kael.codegen.cpu.loops import LoopBuilder
from kael.codegen.lowering import i64
from kael.runtime.dtypes import INT64_MAX

SYMBOL = "kael_multinomial"
ARGS = (
    "weights", "out", "scratch", "status", "error", "classes", "samples", "replacement", "seed",
    "offset",
)  # fmt: skip
# Status codes of a bad row, with what the detail word holds.
BAD_WEIGHT = 1  # detail: the class of the first negative, infinite or NaN weight
NO_POSITIVE = 2  # detail: 0
TOO_FEW_POSITIVE = 3  # detail: the number of positive weights
F64 = ir.DoubleType()
I64 = ir.IntType(64)


class _Row:
    """Emits the body for one row; loop-carried values live in entry-block allocas (mem2reg)."""

    def __init__(self, b: ir.IRBuilder, words: dict[str, ir.Value], entry: ir.IRBuilder):
        self.b = b
        self.loops = LoopBuilder(b)
        self.w = words
        self.ptr = {
            name: b.inttoptr(
                words[name], (F64 if name in ("weights", "scratch") else I64).as_pointer()
            )
            for name in ("weights", "out", "scratch", "status", "error")
        }
        self.acc = entry.alloca(F64, name="acc")
        self.first_bad = entry.alloca(I64, name="first_bad")
        self.count = entry.alloca(I64, name="positives")
        self.last = entry.alloca(I64, name="last")
        self.lo = entry.alloca(I64, name="lo")
        self.hi = entry.alloca(I64, name="hi")

    def at(self, base: str, row: ir.Value, width: ir.Value) -> ir.Value:
        """Pointer to row `row` of the [rows, width] buffer `base`."""
        return self.b.gep(self.ptr[base], [self.b.mul(row, width)])

    def __call__(self, row: ir.Value) -> None:
        b, classes, samples = self.b, self.w["classes"], self.w["samples"]
        weights = self.at("weights", row, classes)
        self.scan(weights, classes)
        first_bad, positives = b.load(self.first_bad), b.load(self.count)
        replacement = b.icmp_signed("!=", self.w["replacement"], i64(0))
        bad = b.icmp_signed(">=", first_bad, i64(0))
        none = b.icmp_signed("==", positives, i64(0))
        few = b.and_(b.not_(replacement), b.icmp_signed("<", positives, samples))
        code = b.select(
            bad, i64(BAD_WEIGHT), b.select(none, i64(NO_POSITIVE), i64(TOO_FEW_POSITIVE))
        )
        detail = b.select(bad, first_bad, b.select(none, i64(0), positives))
        with b.if_else(b.or_(bad, b.or_(none, few)), likely=False) as (fail, draw):
            with fail:
                status = self.at("status", row, i64(2))
                b.store(code, status)
                b.store(detail, b.gep(status, [i64(1)]))
                b.atomic_rmw("min", self.ptr["error"], row, "monotonic")
            with draw:
                scratch = self.at("scratch", row, classes)
                first = b.add(self.w["offset"], b.mul(row, samples))
                out = self.at("out", row, samples)
                with b.if_else(replacement) as (repeat, once):
                    with repeat:
                        self.with_replacement(weights, scratch, out, first)
                    with once:
                        self.without_replacement(weights, scratch, out, first)

    def scan(self, weights: ir.Value, classes: ir.Value) -> None:
        """first_bad (-1 if none), the number of positive weights and the last positive class."""
        b = self.b
        for var, init in ((self.first_bad, -1), (self.count, 0), (self.last, -1)):
            b.store(i64(init), var)

        def body(k):
            x = b.load(b.gep(weights, [k]))
            ok = b.and_(
                b.fcmp_ordered(">=", x, ir.Constant(F64, 0.0)),
                b.fcmp_ordered("<", x, ir.Constant(F64, float("inf"))),
            )
            first_bad = b.load(self.first_bad)
            fresh = b.and_(b.not_(ok), b.icmp_signed("<", first_bad, i64(0)))
            b.store(b.select(fresh, k, first_bad), self.first_bad)
            positive = b.fcmp_ordered(">", x, ir.Constant(F64, 0.0))
            b.store(b.add(b.load(self.count), b.zext(positive, I64)), self.count)
            b.store(b.select(positive, k, b.load(self.last)), self.last)

        self.loops.counted(i64(0), classes, 1, body, "scan")

    def point(self, counter: ir.Value, total: ir.Value) -> ir.Value:
        """u * total, u the float64 uniform of `counter`: 53 random bits times 2**-53."""
        b = self.b
        bits, _ = philox.philox_block(b, 1, counter, self.w["seed"])
        unit = b.fmul(b.uitofp(b.lshr(bits, i64(11)), F64), ir.Constant(F64, 2.0**-53))
        return b.fmul(unit, total)

    def with_replacement(self, weights, scratch, out, first) -> None:
        """Cumulative sums in scratch, then upper_bound of each point by binary search."""
        b, classes = self.b, self.w["classes"]
        b.store(ir.Constant(F64, 0.0), self.acc)

        def cumulate(k):
            acc = b.fadd(b.load(self.acc), b.load(b.gep(weights, [k])))
            b.store(acc, self.acc)
            b.store(acc, b.gep(scratch, [k]))

        self.loops.counted(i64(0), classes, 1, cumulate, "cumsum")
        total = b.load(self.acc)

        def draw(j):
            point = self.point(b.add(first, j), total)
            b.store(i64(0), self.lo)
            b.store(classes, self.hi)
            head, body, done = (
                b.append_basic_block(f"search.{n}") for n in ("head", "body", "done")
            )
            b.branch(head)
            b.position_at_end(head)
            lo, hi = b.load(self.lo), b.load(self.hi)
            b.cbranch(b.icmp_signed("<", lo, hi), body, done)
            b.position_at_end(body)
            mid = b.lshr(b.add(lo, hi), i64(1))
            above = b.fcmp_ordered(">", b.load(b.gep(scratch, [mid])), point)
            b.store(b.select(above, mid, hi), self.hi)
            b.store(b.select(above, lo, b.add(mid, i64(1))), self.lo)
            b.branch(head)
            b.position_at_end(done)
            self.store_pick(out, j, b.load(self.lo))

        self.loops.counted(i64(0), self.w["samples"], 1, draw, "draw")

    def without_replacement(self, weights, scratch, out, first) -> None:
        """Each draw: total the remaining weights, walk to the point, zero the pick."""
        b, classes = self.b, self.w["classes"]
        self.loops.counted(
            i64(0),
            classes,
            1,
            lambda k: b.store(b.load(b.gep(weights, [k])), b.gep(scratch, [k])),
            "copy",
        )

        def draw(j):
            b.store(ir.Constant(F64, 0.0), self.acc)
            b.store(i64(-1), self.last)

            def total(k):
                x = b.load(b.gep(scratch, [k]))
                b.store(b.fadd(b.load(self.acc), x), self.acc)
                positive = b.fcmp_ordered(">", x, ir.Constant(F64, 0.0))
                b.store(b.select(positive, k, b.load(self.last)), self.last)

            self.loops.counted(i64(0), classes, 1, total, "total")
            point = self.point(b.add(first, j), b.load(self.acc))
            b.store(ir.Constant(F64, 0.0), self.acc)
            b.store(i64(0), self.lo)
            head, body, step, done = (
                b.append_basic_block(f"walk.{n}") for n in ("head", "body", "step", "done")
            )
            b.branch(head)
            b.position_at_end(head)
            k = b.load(self.lo)
            b.cbranch(b.icmp_signed("<", k, classes), body, done)
            b.position_at_end(body)
            acc = b.fadd(b.load(self.acc), b.load(b.gep(scratch, [k])))
            b.store(acc, self.acc)
            b.cbranch(b.fcmp_ordered(">", acc, point), done, step)
            b.position_at_end(step)
            b.store(b.add(k, i64(1)), self.lo)
            b.branch(head)
            b.position_at_end(done)
            pick = self.store_pick(out, j, b.load(self.lo))
            b.store(ir.Constant(F64, 0.0), b.gep(scratch, [pick]))

        self.loops.counted(i64(0), self.w["samples"], 1, draw, "draw")

    def store_pick(self, out, j, k) -> ir.Value:
        """Store class k, or the last positive class when rounding put the point past the end
        (class 0 if none is positive: the caller checked the weights, but another thread
        may zero them since, and the pick indexes the scratch row)."""
        b = self.b
        pick = b.select(b.icmp_signed("==", k, self.w["classes"]), b.load(self.last), k)
        pick = b.select(b.icmp_signed("<", pick, i64(0)), i64(0), pick)
        b.store(pick, b.gep(out, [j]))
        return pick


def build(module: ir.Module) -> list[str]:
    """Emit kael_multinomial into `module`; returns its symbol."""
    fn, b = handwritten.kernel_function(module, SYMBOL)
    words = {name: b.load(b.gep(fn.args[0], [i64(i)]), name=name) for i, name in enumerate(ARGS)}
    row = _Row(b, words, b)  # allocas before the first branch: still the entry block
    LoopBuilder(b).counted(fn.args[1], fn.args[2], 1, row, "row")
    b.ret_void()
    return [SYMBOL]


def ir_text() -> str:
    """The function's LLVM IR without a target header."""
    return handwritten.compiled(SYMBOL, build).text


def function() -> handwritten.KernelFn:
    """The compiled sampler, built or loaded from the disk cache once per process."""
    return handwritten.compiled(SYMBOL, build)[SYMBOL]


def run(
    addresses: dict[str, int],
    rows: int,
    classes: int,
    samples: int,
    replacement: bool,
    seed: int,
    offset: int,
    device=None,
) -> int:
    """Sample every row; -1, or the first bad row (its status words say why).

    `addresses` holds the weights, out, scratch and status buffers, on `device` (None: the
    CPU); seed and offset are signed 64-bit words.
    """
    moved = rows * (2 * classes * 8 + samples * 8)
    runner = handwritten.runner_for(device)
    try:
        values = {
            **addresses,
            "error": (error := runner.scratch([INT64_MAX])),
            "classes": classes,
            "samples": samples,
            "replacement": int(replacement),
            "seed": seed,
            "offset": offset,
        }
        runner.run(SYMBOL, build, SYMBOL, [values[name] for name in ARGS], rows, moved, align=1)
        (bad,) = runner.read(error, 1)
        return -1 if bad == INT64_MAX else bad
    finally:
        runner.close()
