"""A structured builder for the per-matrix kernels of kael.linalg (LU, Cholesky, triangular
solves, Householder QR, the symmetric eigensolver, the SVD): C-like code written in Python.

A dense kernel's work item is one matrix of a batch: `per_matrix` builds
`void f(i64* args, i64 begin, i64 end)` whose body runs once per item with a `Dense`
handle: named argument words, typed mutable locals (allocas that mem2reg promotes),
`loop`/`when`/`either` blocks, element access of row-major matrices and the few
intrinsics factorizations need. Most inner loops are written scalar: the module is
optimized at O3 with fast-math arithmetic, so LLVM's loop vectorizer turns each dot,
scale and rotation into vector code (checked in tests/codegen/cpu/test_dense.py's assembly
probe); the axpys are explicit vectors, which the vectorizer gave up on with many rows.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence

from llvmlite import ir

from kael.codegen.cpu import handwritten
from kael.codegen.lowering import declare, i64, mangle, splat
from kael.runtime.dtypes import DType

I1, I64 = ir.IntType(1), ir.IntType(64)
# Reassociation lets the vectorizer split a dot's sum; contraction lets it use FMA. No
# nnan/ninf: NaN and infinity must travel through a factorization as LAPACK's do.
FAST = ("reassoc", "contract", "nsz", "arcp")
# Each product rounded, each sum in order: LAPACK's own sequence of roundings, so an exactly
# singular matrix meets an exactly zero pivot where LAPACK's does (the LU's updates).
ROUNDED = ("nsz",)


STRIP = 8  # rows a transposing copy moves together
GROUP = 4  # source rows one pass of axpy_rows reads
VECTOR_BYTES = 64  # the explicit vectors of the row loops (two ymm registers under AVX2)
PRECISION = {8: (2.0**-52, 2.0**-1022), 4: (2.0**-23, 2.0**-126)}  # (eps, safmin), by itemsize


class Var:
    """A mutable local of a kernel: `v.get()`, `v.set(value)`."""

    __slots__ = ("_b", "_slot")

    def __init__(self, b: ir.IRBuilder, slot: ir.Value) -> None:
        self._b, self._slot = b, slot

    def get(self) -> ir.Value:
        return self._b.load(self._slot)

    def set(self, value: ir.Value) -> None:
        self._b.store(value, self._slot)


class Matrix:
    """A row-major matrix in a kernel: its base pointer and leading dimension (elements)."""

    __slots__ = ("_d", "ptr", "ld")

    def __init__(self, d: Dense, ptr: ir.Value, ld: ir.Value) -> None:
        self._d, self.ptr, self.ld = d, ptr, ld

    def at(self, i: ir.Value, j: ir.Value) -> ir.Value:
        b = self._d.b
        return b.gep(self.ptr, [b.add(b.mul(i, self.ld), j)])

    def get(self, i: ir.Value, j: ir.Value) -> ir.Value:
        return self._d.b.load(self.at(i, j))

    def set(self, i: ir.Value, j: ir.Value, value: ir.Value) -> None:
        self._d.b.store(value, self.at(i, j))

    def row(self, i: ir.Value) -> ir.Value:
        """A pointer to row i's first element."""
        b = self._d.b
        return b.gep(self.ptr, [b.mul(i, self.ld)])


class Dense:
    """The builder of one dense kernel body (see the module docstring)."""

    def __init__(
        self,
        fn: ir.Function,
        b: ir.IRBuilder,
        dtype: DType,
        words: dict[str, ir.Value],
        flags: tuple[str, ...] = FAST,
    ) -> None:
        self.fn, self.b, self.dtype, self.w, self.flags = fn, b, dtype, words, flags
        self.t = ir.DoubleType() if dtype.itemsize == 8 else ir.FloatType()
        # LAPACK's eps (the rounding unit's double) and safmin (the least normal number)
        self.eps, self.safmin = PRECISION[dtype.itemsize]
        self._entry = fn.entry_basic_block
        self._n = 0

    # ---- values
    def f(self, value: float) -> ir.Constant:
        """A constant of the kernel's float type."""
        return ir.Constant(self.t, value)

    def i(self, value: int) -> ir.Constant:
        return i64(value)

    def ptr(self, word: str, t: ir.Type | None = None) -> ir.Value:
        """Argument word `word` as a pointer to `t` (the kernel's float type by default)."""
        return self.b.inttoptr(self.w[word], (t or self.t).as_pointer())

    def get(self, p: ir.Value, i: ir.Value) -> ir.Value:
        """Element i of the array at element pointer p."""
        return self.b.load(self.b.gep(p, [i]))

    def put(self, p: ir.Value, i: ir.Value, value: ir.Value) -> None:
        """Element i of the array at element pointer p = value."""
        self.b.store(value, self.b.gep(p, [i]))

    def matrix(self, word: str, ld: ir.Value | str, offset: ir.Value | None = None) -> Matrix:
        """The matrix at word `word` (plus `offset` elements) with leading dimension `ld`."""
        base = self.ptr(word)
        if offset is not None:
            base = self.b.gep(base, [offset])
        return Matrix(self, base, self.w[ld] if isinstance(ld, str) else ld)

    def var(self, init: ir.Value, name: str = "v") -> Var:
        """A mutable local holding `init` (its slot is allocated in the entry block)."""
        b = self.b
        with b.goto_block(self._entry):
            b.position_at_start(self._entry)
            slot = b.alloca(init.type, name=name)
        b.store(init, slot)
        return Var(b, slot)

    # ---- arithmetic (fast-math: FAST, or ROUNDED where a kernel asks)
    def add(self, x, y):
        return self.b.fadd(x, y, flags=self.flags)

    def sub(self, x, y):
        return self.b.fsub(x, y, flags=self.flags)

    def mul(self, x, y):
        return self.b.fmul(x, y, flags=self.flags)

    def div(self, x, y):
        return self.b.fdiv(x, y)

    def neg(self, x):
        return self.b.fneg(x)

    def intrinsic(self, name: str, *args: ir.Value) -> ir.Value:
        """llvm.<name> on scalars or vectors of one type (sqrt, fabs, fma, ...)."""
        t = args[0].type
        fnty = ir.FunctionType(t, [t] * len(args))
        return self.b.call(declare(self.b.module, f"llvm.{name}.{mangle(t)}", fnty), args)

    def sqrt(self, x):
        return self.intrinsic("sqrt", x)

    def abs(self, x):
        return self.intrinsic("fabs", x)

    def copysign(self, magnitude, sign):
        return self.intrinsic("copysign", magnitude, sign)

    def hypot(self, x, y):
        """sqrt(x^2 + y^2) without overflow or underflow: scaled by max(|x|, |y|)."""
        b = self.b
        ax, ay = self.abs(x), self.abs(y)
        big = b.select(b.fcmp_ordered(">", ax, ay), ax, ay)
        small = b.select(b.fcmp_ordered(">", ax, ay), ay, ax)
        safe = b.select(b.fcmp_ordered("==", big, self.f(0.0)), self.f(1.0), big)
        r = b.fdiv(small, safe)
        return b.fmul(big, self.sqrt(b.fadd(self.f(1.0), b.fmul(r, r))))

    def lt(self, x, y):
        return self.b.fcmp_ordered("<", x, y)

    def gt(self, x, y):
        return self.b.fcmp_ordered(">", x, y)

    def is_nan(self, x):
        return self.b.fcmp_unordered("uno", x, x)

    # ---- short vectors (a few columns of one row, loaded and stored at once)
    def splat(self, x: ir.Value, lanes: int) -> ir.Value:
        """x in every lane of a <lanes x type> vector."""
        return splat(self.b, x, lanes)

    def lanes(self, x: ir.Value, lanes: int) -> ir.Value:
        """A pointer to the `lanes` elements from element pointer x on, as one vector."""
        return self.b.bitcast(x, ir.VectorType(self.t, lanes).as_pointer())

    # ---- control flow
    def _blocks(self, *names: str) -> list[ir.Block]:
        self._n += 1
        return [self.fn.append_basic_block(f"{name}{self._n}") for name in names]

    @contextlib.contextmanager
    def loop(self, start, stop, step: int = 1) -> Iterator[ir.Value]:
        """for (i = start; i < stop; i += step) (step > 0), or for (i = start; i > stop;
        i += step) (step < 0); `start`/`stop` may be ints."""
        b = self.b
        start = i64(start) if isinstance(start, int) else start
        stop = i64(stop) if isinstance(stop, int) else stop
        pre = b.block
        head, body, done = self._blocks("head", "body", "done")
        b.branch(head)
        b.position_at_end(head)
        i = b.phi(I64, name="i")
        i.add_incoming(start, pre)
        b.cbranch(b.icmp_signed("<" if step > 0 else ">", i, stop), body, done)
        b.position_at_end(body)
        yield i
        i.add_incoming(b.add(i, i64(step)), b.block)
        b.branch(head)
        b.position_at_end(done)

    @contextlib.contextmanager
    def while_(self, condition: Callable[[], ir.Value]) -> Iterator[None]:
        """while (condition()) body."""
        b = self.b
        head, body, done = self._blocks("whead", "wbody", "wdone")
        b.branch(head)
        b.position_at_end(head)
        b.cbranch(condition(), body, done)
        b.position_at_end(body)
        yield
        b.branch(head)
        b.position_at_end(done)

    def when(self, cond: ir.Value):
        """if (cond) body, as a `with` block."""
        return self.b.if_then(cond)

    def either(self, cond: ir.Value):
        """if (cond) ... else ..., as `with d.either(c) as (then, otherwise):`."""
        return self.b.if_else(cond)

    def transpose(self, m, cols, move: Callable[[ir.Value, ir.Value], None]) -> None:
        """move(r, c) for every row r < m and column c < cols, in strips of STRIP rows (a
        strip's rows stay in L1 while each column's STRIP elements go as one vector):
        what copies a panel into a transposed scratch and back."""
        b = self.b
        whole = b.mul(b.sdiv(m, self.i(STRIP)), self.i(STRIP))
        with self.loop(0, whole, STRIP) as r0, self.loop(0, cols) as c:
            for r in range(STRIP):
                move(b.add(r0, self.i(r)), c)
        with self.loop(whole, m) as r, self.loop(0, cols) as c:
            move(r, c)

    # ---- row operations, the kernels' inner loops
    def axpy(self, y: ir.Value, alpha: ir.Value, x: ir.Value, lo, hi) -> None:
        """y[j] += alpha * x[j] for j in [lo, hi) (y, x: element pointers)."""
        self.axpys(y, [alpha], [x], lo, hi)

    def axpys(self, y: ir.Value, alphas: Sequence[ir.Value], xs: Sequence[ir.Value], lo, hi):
        """y[j] += sum_c alphas[c] * xs[c][j] for j in [lo, hi): several axpys in one pass
        over y (a rank-k update of one row: one load and store of y per k products)."""
        self.rank_update([y], [alphas], xs, lo, hi)

    def rank_update(self, ys: Sequence[ir.Value], alphas, xs: Sequence[ir.Value], lo, hi):
        """ys[r][j] += sum_c alphas[r][c] * xs[c][j] for j in [lo, hi), each row's terms in
        order, every x loaded once for all the rows. Written as vectors of VECTOR_BYTES and
        a scalar tail: with many rows the loop vectorizer gives up on the runtime alias
        checks (8 rows ran two lanes wide)."""
        b = self.b
        lanes = VECTOR_BYTES // self.dtype.itemsize
        lo = i64(lo) if isinstance(lo, int) else lo
        span = b.sub(hi if not isinstance(hi, int) else i64(hi), lo)
        span = b.select(b.icmp_signed("<", span, self.i(0)), self.i(0), span)
        whole = b.add(lo, b.mul(b.sdiv(span, self.i(lanes)), self.i(lanes)))

        def step(j: ir.Value, load, store, factors) -> None:
            accs = [load(y, j) for y in ys]
            for c, x in enumerate(xs):
                value = load(x, j)
                for r, row in enumerate(factors):
                    accs[r] = self.add(accs[r], self.mul(row[c], value))
            for y, acc in zip(ys, accs, strict=True):
                store(acc, y, j)

        def vload(p, j):
            return b.load(self.lanes(b.gep(p, [j]), lanes), align=self.dtype.itemsize)

        def vstore(v, p, j):
            b.store(v, self.lanes(b.gep(p, [j]), lanes), align=self.dtype.itemsize)

        vectors = [[self.splat(a, lanes) for a in row] for row in alphas]
        with self.loop(lo, whole, lanes) as j:
            step(j, vload, vstore, vectors)
        with self.loop(whole, hi) as j:
            step(
                j,
                lambda p, j: b.load(b.gep(p, [j])),
                lambda v, p, j: b.store(v, b.gep(p, [j])),
                alphas,
            )

    def axpy_rows(self, ys: Sequence[ir.Value], alpha_of, row_of, first, last, lo, hi):
        """ys[r][j] += sum_k alpha_of(r, k) * row_of(k)[j] for k in [first, last) in order
        and j in [lo, hi): GROUP source rows a pass over the targets (rank_update, every
        source row loaded once for all the targets), the rest one by one."""
        b = self.b
        span = b.sub(last, first)
        whole = b.add(first, b.mul(b.sdiv(span, self.i(GROUP)), self.i(GROUP)))

        def update(ks: list[ir.Value]) -> None:
            alphas = [[alpha_of(r, k) for k in ks] for r in range(len(ys))]
            self.rank_update(ys, alphas, [row_of(k) for k in ks], lo, hi)

        with self.loop(first, whole, GROUP) as k:
            update([b.add(k, self.i(q)) for q in range(GROUP)])
        with self.loop(whole, last) as k:
            update([k])

    def dot(self, x: ir.Value, y: ir.Value, lo, hi, stride_x=None, stride_y=None) -> ir.Value:
        """sum x[j] * y[j] for j in [lo, hi), unit strides unless given."""
        b = self.b
        acc = self.var(self.f(0.0), "dot")
        with self.loop(lo, hi) as j:
            jx = j if stride_x is None else b.mul(j, stride_x)
            jy = j if stride_y is None else b.mul(j, stride_y)
            prod = self.mul(b.load(b.gep(x, [jx])), b.load(b.gep(y, [jy])))
            acc.set(self.add(acc.get(), prod))
        return acc.get()

    def max_abs(self, x: ir.Value, lo, hi) -> tuple[ir.Value, ir.Value]:
        """(max |x[j]|, whether some x[j] is NaN) over j in [lo, hi) (a NaN is never the
        max: the scaling steps that ask check it apart)."""
        b = self.b
        largest, nan = self.var(self.f(0.0), "largest"), self.var(ir.Constant(I1, 0), "nan")
        with self.loop(lo, hi) as j:
            size = self.abs(b.load(b.gep(x, [j])))
            largest.set(b.select(self.gt(size, largest.get()), size, largest.get()))
            nan.set(b.or_(nan.get(), self.is_nan(size)))
        return largest.get(), nan.get()

    def scale(self, x: ir.Value, alpha: ir.Value, lo, hi) -> None:
        """x[j] *= alpha for j in [lo, hi)."""
        b = self.b
        with self.loop(lo, hi) as j:
            p = b.gep(x, [j])
            b.store(self.mul(b.load(p), alpha), p)

    def rotate(
        self, x: ir.Value, y: ir.Value, c: ir.Value, s: ir.Value, lo, hi, norms: bool = False
    ) -> tuple[ir.Value, ir.Value] | None:
        """The plane rotation of two rows: x[j], y[j] = c x[j] - s y[j], s x[j] + c y[j] for
        j in [lo, hi) (Jacobi and Givens steps). With `norms`, also returns the new rows'
        squared norms, summed in the same pass (no second read of the rows)."""
        b = self.b
        sums = (self.var(self.f(0.0), "nx"), self.var(self.f(0.0), "ny")) if norms else None
        with self.loop(lo, hi) as j:
            px, py = b.gep(x, [j]), b.gep(y, [j])
            vx, vy = b.load(px), b.load(py)
            rx = self.sub(self.mul(c, vx), self.mul(s, vy))
            ry = self.add(self.mul(s, vx), self.mul(c, vy))
            b.store(rx, px)
            b.store(ry, py)
            if sums:
                sums[0].set(self.add(sums[0].get(), self.mul(rx, rx)))
                sums[1].set(self.add(sums[1].get(), self.mul(ry, ry)))
        return (sums[0].get(), sums[1].get()) if sums else None

    def swap(self, x: ir.Value, y: ir.Value, lo, hi) -> None:
        """Exchange x[j] and y[j] for j in [lo, hi)."""
        b = self.b
        with self.loop(lo, hi) as j:
            px, py = b.gep(x, [j]), b.gep(y, [j])
            vx, vy = b.load(px), b.load(py)
            b.store(vy, px)
            b.store(vx, py)

    def fill(self, x: ir.Value, value: ir.Value, lo, hi) -> None:
        """x[j] = value for j in [lo, hi)."""
        with self.loop(lo, hi) as j:
            self.b.store(value, self.b.gep(x, [j]))

    def copy(self, y: ir.Value, x: ir.Value, lo, hi) -> None:
        """y[j] = x[j] for j in [lo, hi)."""
        with self.loop(lo, hi) as j:
            self.put(y, j, self.get(x, j))


def per_matrix(
    module: ir.Module,
    symbol: str,
    dtype: DType,
    words: Sequence[str],
    body: Callable[[Dense, ir.Value], None],
    flags: tuple[str, ...] = FAST,
) -> list[str]:
    """Emit kernel `symbol`: argument words named `words`, `body(d, item)` per work item,
    its arithmetic under `flags`."""
    fn, b = handwritten.kernel_function(module, symbol)
    loaded = {n: b.load(b.gep(fn.args[0], [i64(k)]), name=n) for k, n in enumerate(words)}
    d = Dense(fn, b, dtype, loaded, flags)
    with d.loop(fn.args[1], fn.args[2]) as item:
        body(d, item)
    b.ret_void()
    return [symbol]


def kernel(name: str, build: Callable[[ir.Module], list[str]], symbol: str):
    """Kernel `symbol` of module `name`, optimized at O3, never tiered."""
    return handwritten.compiled(name, build, passes=None, tiered=False)[symbol]


def run(
    name: str,
    build: Callable[[ir.Module], list[str]],
    symbol: str,
    words: Sequence[int],
    items: int,
    flops: int,
    into=None,
) -> None:
    """Launch `symbol` of module `name` over `items` matrices, split over the threads when
    the work (`flops`, about) is worth it; the module is optimized at O3, never tiered.
    With `into` (a codegen/cpu/program.Program), add the launch to it instead."""
    run_prepared(kernel(name, build, symbol), words, items, flops, into)


def run_prepared(fn, words: Sequence[int], items: int, flops: int, into=None) -> None:
    """Launch the dense kernel `fn`, or add it to program `into` (see `run`)."""
    launch = step(fn, words, items, flops)
    if into is None:
        launch()
    else:
        into.add(launch)


def step(fn, words: Sequence[int], items: int, flops: int):
    """The launch of the dense kernel `fn`, ready (program.Step; see `run`)."""
    from kael.codegen.cpu.program import Step  # the launcher imports codegen at start-up

    return Step.of(fn, words, items, flops * 8 if items > 1 else 0)
