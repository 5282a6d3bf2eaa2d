"""Matrix products on the GPU: a register-blocked SIMT NVPTX kernel, one per element type.

The classic high-performance sgemm. A CTA of 256 threads computes a TILE x TILE tile of C,
TILE = 32 VEC where VEC elements fill 128 bits: 128 x 128 for float32, 64 x 64 for float64
and int64. Its 8 warps form a 4 x 2 grid and a warp's 32 lanes a 4 x 8 grid; each thread
keeps a SUB x SUB register tile (SUB = 2 VEC: 8 x 8 for float32, 4 x 4 for the 64-bit
types) made of 2 x 2 blocks of VEC x VEC, the blocks 4 VEC rows and 8 VEC columns apart.
K is walked in slices of STEP = 8. Both operands sit in shared memory k-major (A
transposed), each slice row padded by VEC elements, so that per k a thread reads its
rows of A and columns of B with four 128-bit `ld.shared.v4` (a warp reads 64 and 128
contiguous bytes: no bank conflicts) and then does SUB^2 fma (wrapping mul and add for
int64). float32 takes 128 registers and no spills (ptxas -v, sm_90): two CTAs per SM.

Shared memory holds two buffers per operand (16.5 KiB per CTA); slice s goes to buffer
s mod 2, so one barrier per step suffices. Each thread fetches VEC elements of each
operand per slice: a run along the operand's unit stride (k for a row-major A or a
transposed B, the outer dimension for a row-major B or a transposed A), one 128-bit
`ld.global.nc` where the operand's address and other stride keep every run 16-byte
aligned (checked in the kernel per batch). A CTA whose operands both allow that (and
whose runs along the outer dimension cannot straddle its edge: VEC divides the size)
walks the whole slices of K software-pipelined: the next slice is loaded into registers
while the current one is multiplied. The rest of K, or all of it for the other CTAs,
goes the general way: a vector load per run that lies wholly inside the matrix, scalar
loads with zeros past its edges elsewhere, so any strides, batch and sizes (1, odd,
unaligned) stay correct. Rows or columns of the tile past C's edge compute garbage that
is never stored: C is written with 128-bit stores by the threads whose register tile
lies inside an aligned C, element by element (guarded) by the rest.

Every output is one fma chain over k = 0, 1, ..., K - 1 from +0 in its own type: the
summation order of the earlier 64 x 64 kernel (zeros past K's edge change nothing).
CTA b of the 1-d grid computes tile b mod (tiles) of batch b / (tiles), the tiles taken
GROUP tile rows at a time, column by column within the group, so that CTAs running
together share rows of A and columns of B in L2. The parameters are 64-bit words: the
addresses of A, B, C, each operand's strides in elements, the sizes and the tile counts.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import NamedTuple

from llvmlite import ir

from kael.codegen.cpu.loops import LoopBuilder
from kael.codegen.lowering import i64
from kael.codegen.ptx import compiler
from kael.codegen.ptx.kernel import DATA_LAYOUT, TRIPLE, sreg
from kael.codegen.ptx.warp import barrier, grouped_tile, launch_bounds
from kael.ir.matmul import batch_dims
from kael.runtime import cuda_driver, sync
from kael.runtime.dtypes import DType, float32, float64, int64
from kael.runtime.tensor_impl import TensorImpl

I64 = ir.IntType(64)
I32 = ir.IntType(32)
GLOBAL, SHARED = 1, 3  # NVPTX address spaces
THREADS = 256
LANE_ROWS, LANE_COLS = 4, 8  # a warp's 32 lanes as a grid of threads
WARPS_M, WARPS_N = 4, 2  # a CTA's 8 warps as a grid
STEP = 8  # K per shared-memory slice
VECTOR_BYTES = 16  # one ld/st .v4.f32 or .v2.f64
GROUP = 8  # tile rows whose CTAs run column by column (L2 reuse)
CTAS_PER_SM = 2  # the occupancy ptxas is asked for: float32 fits in 128 registers, no spills
ARGS = (
    "a", "b", "c", "ars", "aks", "asb", "brs", "bcs", "bsb", "ldc", "csb",
    "m", "n", "k", "tiles_m", "tiles_n",
)  # fmt: skip
_ELEM = {float32: ir.FloatType(), float64: ir.DoubleType(), int64: I64}


class Geometry(NamedTuple):
    """The kernel's shape for one element type, fixed by `vec`, its elements per 128 bits."""

    vec: int

    @property
    def sub(self) -> int:
        """A thread's register tile side: 2 x 2 blocks of vec x vec."""
        return 2 * self.vec

    @property
    def tile(self) -> int:
        """The CTA's C tile side (WARPS_M * LANE_ROWS == WARPS_N * LANE_COLS threads)."""
        return WARPS_M * LANE_ROWS * self.sub

    @property
    def row(self) -> int:
        """Elements per row of a shared slice: the tile's side plus a vec of padding, which
        spreads the transposing stores of a k-contiguous operand over the banks."""
        return self.tile + self.vec

    @property
    def slice(self) -> int:
        """Elements of one shared buffer (STEP rows)."""
        return STEP * self.row


def geometry(dtype: DType) -> Geometry:
    return Geometry(VECTOR_BYTES // dtype.itemsize)


def symbol(dtype: DType) -> str:
    return f"kael_gemm_ptx_{dtype.name}"


def entry_function(name: str) -> tuple[ir.Module, ir.Function, dict[str, ir.Value]]:
    """A new NVPTX module with the `ptx_kernel` entry `name` taking ARGS' words: (module,
    function, its arguments by name)."""
    module = ir.Module(name=name)
    module.triple = TRIPLE
    module.data_layout = DATA_LAYOUT
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [I64] * len(ARGS)), name)
    fn.calling_convention = "ptx_kernel"
    fn.attributes.add("nounwind")
    for arg, arg_name in zip(fn.args, ARGS, strict=True):
        arg.name = arg_name
    return module, fn, dict(zip(ARGS, fn.args, strict=True))


class _Emitter:
    """Builds one kernel: the IR builder, the dtype's geometry and the helpers every part uses."""

    def __init__(self, dtype: DType):
        self.dtype = dtype
        self.geo = geometry(dtype)
        self.elem = _ELEM[dtype]
        self.module, fn, self.w = entry_function(symbol(dtype))
        launch_bounds(fn, THREADS, CTAS_PER_SM)
        self.b = ir.IRBuilder(fn.append_basic_block("entry"))
        self.zero = ir.Constant(self.elem, 0.0 if dtype.is_floating_point else 0)
        self.tid = sreg(self.b, "tid.x")
        self.invariant = self.module.add_metadata([])
        self._fma = None
        if dtype.is_floating_point:
            name = f"llvm.fma.{'f32' if dtype is float32 else 'f64'}"
            self._fma = ir.Function(self.module, ir.FunctionType(self.elem, [self.elem] * 3), name)

    def lt(self, x: ir.Value, y: ir.Value) -> ir.Value:
        return self.b.icmp_signed("<", x, y)

    def all_of(self, *conditions: ir.Value) -> ir.Value:
        result = conditions[0]
        for c in conditions[1:]:
            result = self.b.and_(result, c)
        return result

    def multiply_add(self, x: ir.Value, y: ir.Value, acc: ir.Value) -> ir.Value:
        """acc + x y: one rounding (fma) for floats, wrapping for int64."""
        if self._fma is not None:
            return self.b.call(self._fma, [x, y, acc])
        return self.b.add(acc, self.b.mul(x, y))

    def barrier(self) -> None:
        barrier(self.b)

    def global_matrix(self, word: ir.Value, batch: ir.Value, batch_stride: ir.Value) -> ir.Value:
        """The batch's matrix at address `word` as a global-memory pointer (ld/st.global)."""
        base = self.b.inttoptr(word, self.elem.as_pointer(GLOBAL))
        return self.b.gep(base, [self.b.mul(batch, batch_stride)])

    def aligned(self, ptr: ir.Value, stride: ir.Value) -> ir.Value:
        """Whether ptr + i * stride is 16-byte aligned for every i (ptr's and stride's bits)."""
        b = self.b
        low = b.and_(b.ptrtoint(ptr, I64), i64(VECTOR_BYTES - 1))
        step = b.and_(stride, i64(self.geo.vec - 1))
        return b.icmp_unsigned("==", b.or_(low, step), i64(0))

    def shared_array(self, name: str) -> ir.GlobalVariable:
        """A shared-memory array of two slices (the double buffer), 16-byte aligned."""
        t = ir.ArrayType(self.elem, 2 * self.geo.slice)
        gv = ir.GlobalVariable(self.module, t, name, addrspace=SHARED)
        gv.linkage = "internal"
        gv.align = VECTOR_BYTES
        return gv

    def load_vector(self, ptr: ir.Value) -> list[ir.Value]:
        """The vec elements at a 16-byte-aligned shared-memory `ptr`: one 128-bit load."""
        b = self.b
        vector = ir.VectorType(self.elem, self.geo.vec)
        load = b.load(b.bitcast(ptr, vector.as_pointer(SHARED)), align=VECTOR_BYTES)
        return [b.extract_element(load, ir.Constant(I32, i)) for i in range(self.geo.vec)]

    def load_global_vector(self, ptr: ir.Value) -> list[ir.Value]:
        """The vec elements at a 16-byte-aligned global `ptr` as one `ld.global.nc` of 128
        bits. Inline PTX, because LLVM splits a vector load whose lanes a neighbouring
        branch loads one by one (and drops its `.nc`); being a call, it is never hoisted
        out of the branch that checked it is legal."""
        b, vec = self.b, self.geo.vec
        t = "f32" if self.dtype is float32 else "f64" if self.dtype is float64 else "u64"
        letter = {"f32": "f", "f64": "d", "u64": "l"}[t]
        outputs = ", ".join(f"${i}" for i in range(vec))
        asm = ir.InlineAsm(
            ir.FunctionType(ir.LiteralStructType([self.elem] * vec), [I64]),
            f"ld.global.nc.v{vec}.{t} {{{outputs}}}, [${vec}];",
            ",".join([f"={letter}"] * vec + ["l"]),
            side_effect=False,
        )
        loaded = b.call(asm, [b.ptrtoint(ptr, I64)])
        return [b.extract_value(loaded, i) for i in range(vec)]

    def store_vector(self, ptr: ir.Value, values: list[ir.Value]) -> None:
        """values (vec of them) to a 16-byte-aligned `ptr` as one 128-bit store."""
        b, space = self.b, ptr.type.addrspace
        vector = ir.VectorType(self.elem, self.geo.vec)
        packed = ir.Constant(vector, ir.Undefined)
        for i, v in enumerate(values):
            packed = b.insert_element(packed, v, ir.Constant(I32, i))
        b.store(packed, b.bitcast(ptr, vector.as_pointer(space)), align=VECTOR_BYTES)

    def tile_origin(self) -> tuple[ir.Value, ir.Value, ir.Value]:
        """(batch, first row, first column) of this CTA's tile of C: GROUP tile rows are
        walked column by column, so CTAs resident together reuse A's rows and B's columns."""
        b, w = self.b, self.w
        block = sreg(b, "ctaid.x")
        tiles = b.mul(w["tiles_m"], w["tiles_n"])
        batch, t = b.udiv(block, tiles), b.urem(block, tiles)
        tile_row, tile_col = grouped_tile(b, t, w["tiles_m"], w["tiles_n"], GROUP)
        side = i64(self.geo.tile)
        return batch, b.mul(tile_row, side), b.mul(tile_col, side)

    def thread_cells(self) -> tuple[list[ir.Value], list[ir.Value]]:
        """The rows and the columns (within the tile, increasing) of this thread's register
        tile: 2 x 2 blocks of vec x vec, LANE_ROWS vec rows and LANE_COLS vec columns apart,
        so a warp's fragment loads cover 64 and 128 contiguous bytes of a shared row."""
        b, geo = self.b, self.geo
        warp, lane = b.udiv(self.tid, i64(32)), b.urem(self.tid, i64(32))
        first_row = b.add(
            b.mul(b.udiv(warp, i64(WARPS_N)), i64(LANE_ROWS * geo.sub)),
            b.mul(b.udiv(lane, i64(LANE_COLS)), i64(geo.vec)),
        )
        first_col = b.add(
            b.mul(b.urem(warp, i64(WARPS_N)), i64(LANE_COLS * geo.sub)),
            b.mul(b.urem(lane, i64(LANE_COLS)), i64(geo.vec)),
        )

        def cells(first: ir.Value, gap: int) -> list[ir.Value]:
            return [
                b.add(first, i64(h * gap * geo.vec + i)) for h in (0, 1) for i in range(geo.vec)
            ]

        return cells(first_row, LANE_ROWS), cells(first_col, LANE_COLS)


class _Operand:
    """A (outer dimension m) or B (outer dimension n) as the kernel stages it. Each slice of
    tile x STEP elements is fetched vec elements a thread: a run along k where k is the
    unit stride (or the smaller one), along the outer dimension otherwise; it is stored
    k-major (element (o, k) at k * row + o) in one of the operand's two shared buffers."""

    def __init__(self, e: _Emitter, name: str, ptr, outer_stride, k_stride, outer_size, origin):
        b, geo = e.b, e.geo
        self.e = e
        self.shared = e.shared_array(name)
        self.regs = [b.alloca(e.elem, name=f"{name}_reg{i}") for i in range(geo.vec)]
        one = i64(1)
        by_k = b.or_(b.icmp_signed("==", k_stride, one), e.lt(k_stride, outer_stride))
        self.along_k = b.and_(b.icmp_signed("!=", outer_stride, one), by_k)
        along = b.select(self.along_k, k_stride, outer_stride)
        across = b.select(self.along_k, outer_stride, k_stride)
        self.step = along  # memory stride from one of a thread's elements to the next
        per_k, per_o = STEP // geo.vec, geo.tile // geo.vec  # vectors across a slice's rows
        o_base = b.select(
            self.along_k, b.udiv(e.tid, i64(per_k)), b.mul(b.urem(e.tid, i64(per_o)), i64(geo.vec))
        )
        k_base = b.select(
            self.along_k, b.mul(b.urem(e.tid, i64(per_k)), i64(geo.vec)), b.udiv(e.tid, i64(per_o))
        )
        o_first = b.add(origin, o_base)
        self.outer_left = b.sub(outer_size, o_first)  # elements of the run's row or column
        # A run past the outer edge reads the tile's first row or column instead (the fast
        # path loads it whole; the general one loads nothing there): its registers reach
        # only rows or columns of the tile past C's edge, which are never stored.
        o_read = b.select(e.lt(o_first, outer_size), o_first, origin)
        self.start = b.gep(ptr, [b.add(b.mul(o_read, outer_stride), b.mul(k_base, k_stride))])
        self.k_stride = k_stride
        self.k_left = b.sub(e.w["k"], k_base)  # ... less k0
        self.vector_ok = b.and_(b.icmp_signed("==", along, one), e.aligned(self.start, across))
        # A run along k has one outer index; one along the outer dimension is wholly inside
        # or wholly outside where vec divides the size: then whole slices need no scalars.
        runs_split = b.and_(outer_size, i64(geo.vec - 1))
        split = b.and_(b.icmp_unsigned("!=", runs_split, i64(0)), b.not_(self.along_k))
        self.fast = b.and_(self.vector_ok, b.not_(split))
        self.slot = b.add(b.mul(k_base, i64(geo.row)), o_base)  # element 0 in a buffer

    def _count(self, k0: ir.Value) -> ir.Value:
        """How many of the thread's elements of the slice at k0 lie inside the matrix (the
        first ones: a run leaves the matrix at most once); vec or more for a whole run."""
        e, b = self.e, self.e.b
        k_left = b.sub(self.k_left, k0)
        zero = i64(0)
        along_k = b.select(e.lt(zero, self.outer_left), k_left, zero)
        along_o = b.select(e.lt(zero, k_left), self.outer_left, zero)
        return b.select(self.along_k, along_k, along_o)

    def _at(self, k0: ir.Value) -> ir.Value:
        """The address of the thread's first element of the slice at k0."""
        return self.e.b.gep(self.start, [self.e.b.mul(k0, self.k_stride)])

    def _load_vector(self, at: ir.Value) -> None:
        for reg, value in zip(self.regs, self.e.load_global_vector(at), strict=True):
            self.e.b.store(value, reg)

    def fetch_whole(self, k0: ir.Value) -> None:
        """Load the thread's elements of the slice at k0, a whole slice of K, into its
        registers with one vector load (the fast path: `fast` holds)."""
        self._load_vector(self._at(k0))

    def fetch(self, k0: ir.Value) -> None:
        """Load the thread's elements of the slice at k0 into its registers: one vector
        load where it is legal, else element by element with zeros outside the matrix."""
        e, b = self.e, self.e.b
        at = self._at(k0)
        count = self._count(k0)
        with b.if_else(b.and_(self.vector_ok, e.lt(i64(e.geo.vec - 1), count))) as (vector, scalar):
            with vector:
                self._load_vector(at)
            with scalar:
                for i, reg in enumerate(self.regs):
                    b.store(e.zero, reg)
                    with b.if_then(e.lt(i64(i), count)):  # no load past an edge
                        load = b.load(at)
                        load.set_metadata("invariant.load", e.invariant)  # ld.global.nc
                        b.store(load, reg)
                    at = b.gep(at, [self.step])

    def put(self, buffer: ir.Value) -> None:
        """Store the fetched registers into the buffer starting at element `buffer`: down a
        column where they run along k, as one 128-bit store where they run along a row."""
        e, b = self.e, self.e.b
        at = b.gep(self.shared, [i64(0), b.add(buffer, self.slot)])
        values = [b.load(reg) for reg in self.regs]
        with b.if_else(self.along_k) as (column, row):
            with column:
                for i, v in enumerate(values):
                    b.store(v, b.gep(at, [i64(i * e.geo.row)]))
            with row:
                e.store_vector(at, values)

    def fragment(self, row: ir.Value, gap: int) -> list[ir.Value]:
        """The sub elements of a thread from `row` (a pointer into a shared row): two
        128-bit loads gap vectors apart (its rows of A, its columns of B)."""
        e = self.e
        parts = (e.load_vector(e.b.gep(row, [i64(h * gap * e.geo.vec)])) for h in (0, 1))
        return [value for part in parts for value in part]


def _multiply(e: _Emitter, acc, a: _Operand, bm: _Operand, buffer, rows, cols) -> None:
    """acc += the buffer's slice of A (rows from `rows[0]`) times B's (columns from
    `cols[0]`), k by k: per k, four shared vector loads and sub^2 multiply-adds (emitted
    in that order, so that only one k's fragments are live at a time)."""
    b, row = e.b, e.geo.row
    values = [[b.load(cell) for cell in cells] for cells in acc]
    a_base = b.gep(a.shared, [i64(0), b.add(buffer, rows[0])])
    b_base = b.gep(bm.shared, [i64(0), b.add(buffer, cols[0])])
    for kk in range(STEP):
        x = a.fragment(b.gep(a_base, [i64(kk * row)]), LANE_ROWS)
        y = bm.fragment(b.gep(b_base, [i64(kk * row)]), LANE_COLS)
        values = [[e.multiply_add(xi, yj, v) for yj, v in zip(y, vs)] for xi, vs in zip(x, values)]
    for vs, cells in zip(values, acc, strict=True):
        for v, cell in zip(vs, cells, strict=True):
            b.store(v, cell)


def _store_tile(e: _Emitter, acc, c: ir.Value, rows: list[ir.Value], cols: list[ir.Value]) -> None:
    """C[rows, cols] = acc (rows and cols absolute): 128-bit stores where the whole register
    tile is inside C and C's rows are 16-byte aligned, guarded element stores elsewhere."""
    b, w, vec = e.b, e.w, e.geo.vec
    whole = e.all_of(e.lt(rows[-1], w["m"]), e.lt(cols[-1], w["n"]), e.aligned(c, w["ldc"]))

    def at(r: ir.Value, col: ir.Value) -> ir.Value:
        return b.gep(c, [b.add(b.mul(r, w["ldc"]), col)])

    with b.if_else(whole) as (vector, scalar):
        with vector:
            for r, cells in zip(rows, acc, strict=True):
                for h in range(0, e.geo.sub, vec):
                    e.store_vector(at(r, cols[h]), [b.load(cell) for cell in cells[h : h + vec]])
        with scalar:
            for r, cells in zip(rows, acc, strict=True):
                for col, cell in zip(cols, cells, strict=True):
                    with b.if_then(b.and_(e.lt(r, w["m"]), e.lt(col, w["n"]))):
                        b.store(b.load(cell), at(r, col))


def _walk_k(e: _Emitter, acc, a: _Operand, bm: _Operand, rows, cols) -> None:
    """acc += A's rows times B's columns over all of K, a slice per step, through the
    double buffer: one barrier a step (slice s goes to buffer s mod 2, which the step
    before last read; the barrier of the last step lies between).

    A CTA whose operands are both `fast` walks the whole slices of K software-pipelined:
    slice s + 1 is fetched, with unpredicated vector loads, while slice s is multiplied.
    The rest of K (the last partial slice), or all of it for the other CTAs, goes the
    general way: fetch (vectors where legal, guarded scalars elsewhere), store, multiply.
    Both conditions hold for the whole CTA, so its threads meet the same barriers."""
    b, w = e.b, e.w
    operands = (a, bm)

    def staged(s: ir.Value) -> ir.Value:
        """Store the fetched slice s into its buffer and meet; the buffer's offset."""
        buffer = b.mul(b.and_(s, i64(1)), i64(e.geo.slice))
        for x in operands:
            x.put(buffer)
        e.barrier()
        return buffer

    def prefetching(s: ir.Value) -> None:
        buffer = staged(s)
        following = b.add(s, i64(1))
        with b.if_then(e.lt(following, fast_steps)):  # in flight during the products
            for x in operands:
                x.fetch_whole(b.mul(following, i64(STEP)))
        _multiply(e, acc, a, bm, buffer, rows, cols)

    def general(s: ir.Value) -> None:
        for x in operands:
            x.fetch(b.mul(s, i64(STEP)))
        _multiply(e, acc, a, bm, staged(s), rows, cols)

    fast_steps = b.select(b.and_(a.fast, bm.fast), b.udiv(w["k"], i64(STEP)), i64(0))
    with b.if_then(e.lt(i64(0), fast_steps)):
        for x in operands:
            x.fetch_whole(i64(0))
    LoopBuilder(b).counted(i64(0), fast_steps, 1, prefetching, "fast")
    steps = b.udiv(b.add(w["k"], i64(STEP - 1)), i64(STEP))
    LoopBuilder(b).counted(fast_steps, steps, 1, general, "ks")


def build_module(dtype: DType) -> ir.Module:
    """The NVPTX module with the `ptx_kernel` entry symbol(dtype) (see the module docstring)."""
    e = _Emitter(dtype)
    b, w, geo = e.b, e.w, e.geo
    acc = [[b.alloca(e.elem, name=f"acc{i}_{j}") for j in range(geo.sub)] for i in range(geo.sub)]
    for row in acc:
        for cell in row:
            b.store(e.zero, cell)
    batch, row0, col0 = e.tile_origin()
    a_ptr = e.global_matrix(w["a"], batch, w["asb"])
    b_ptr = e.global_matrix(w["b"], batch, w["bsb"])
    a = _Operand(e, "As", a_ptr, w["ars"], w["aks"], w["m"], row0)
    bm = _Operand(e, "Bs", b_ptr, w["bcs"], w["brs"], w["n"], col0)
    rows, cols = e.thread_cells()
    _walk_k(e, acc, a, bm, rows, cols)
    c = e.global_matrix(w["c"], batch, w["csb"])
    _store_tile(e, acc, c, [b.add(row0, r) for r in rows], [b.add(col0, col) for col in cols])
    b.ret_void()
    return e.module


class _Product(NamedTuple):
    """A product kernel: its entry symbol, module builder and CTA (tile sides, threads)."""

    symbol: str
    build: Callable[[DType], ir.Module] | None  # None: built per variant (wgmma)
    tile_m: int
    tile_n: int
    threads: int
    shared: int = 0  # bytes of dynamic shared memory a launch takes


def _product(dtype: DType) -> _Product:
    """The tensor cores' kernel for the half types (ptx/mma.py), the tiled one else."""
    if dtype.is_half:
        from kael.codegen.ptx import mma  # it imports this module

        return _Product(
            mma.symbol(dtype), mma.build_module, mma.TILE_M, mma.TILE_N, mma.THREADS,
            mma.shared_bytes(),
        )  # fmt: skip
    tile = geometry(dtype).tile
    return _Product(symbol(dtype), build_module, tile, tile, THREADS)


@sync.cached
def ptx(dtype: DType) -> str:
    """The kernel's PTX text, running LLVM at most once per machine (disk cache)."""
    module = _product(dtype).build(dtype)
    return compiler.stored_ptx(str(module), lambda: module)


@sync.cached
def _function(dtype: DType):
    return cuda_driver.load_function(ptx(dtype), _product(dtype).symbol)


@sync.cached
def _hopper() -> bool:
    """Whether device 0 runs sm_90a code (wgmma): compute capability 9.0 exactly."""
    return cuda_driver.describe()["capability"] == (9, 0)


def wgmma_enabled() -> bool:
    """Whether half-type products may take the wgmma kernel: KAEL_CUDA_WGMMA=1. Off by
    default until a device has checked it (it is right on the emulated device, which
    models the PTX ISA's descriptor layouts; no sm_90 has run it yet)."""
    return os.environ.get("KAEL_CUDA_WGMMA", "").strip() == "1"


def _wgmma_kernel(c: TensorImpl, a: TensorImpl, b: TensorImpl) -> tuple[_Product, object] | None:
    """The warpgroup kernel (ptx/wgmma.py) for a half-type product, where it is enabled,
    the device is sm_90 and each operand's rows are contiguous along K or M/N on 16 bytes;
    else None."""
    if not c.dtype.is_half or not wgmma_enabled() or not _hopper():
        return None
    from kael.codegen.ptx import wgmma  # it imports this module

    layout = wgmma.layout(a.strides[-2:], b.strides[-2:])
    batch = (*a.strides[:-2], *b.strides[:-2])
    if layout is None or any(t.data_ptr() % 16 for t in (a, b)) or any(x % 8 for x in batch):
        return None
    return _wgmma_function(wgmma.Variant(c.dtype, layout))


@sync.cached
def _wgmma_function(variant) -> tuple[_Product, object]:
    from kael.codegen.ptx import wgmma

    module = wgmma.build_module(variant)
    text = compiler.stored_ptx(str(module), lambda: module, wgmma.ARCH)
    kernel = _Product(
        variant.symbol, None, wgmma.TILE_M, variant.tile_n, wgmma.THREADS, variant.shared_bytes
    )
    return kernel, cuda_driver.load_function(text, variant.symbol)[1]


def matmul(c: TensorImpl, a: TensorImpl, b: TensorImpl) -> None:
    """c = a @ b on the GPU, with gemm_run.matmul's contract (device addresses); float16
    and bfloat16 (all three operands of the dtype) on the tensor cores: wgmma (ptx/wgmma.py)
    on sm_90 for operands it takes, mma.sync (ptx/mma.py) else."""
    chosen = _wgmma_kernel(c, a, b)
    if chosen is None:
        kernel, (_, function) = _product(c.dtype), _function(c.dtype)
    else:
        kernel, function = chosen
    dims = batch_dims(c.shape[:-2], a.strides[:-2], b.strides[:-2], c.strides[:-2])
    q, (qa, qb, qc) = dims.pop() if dims else (1, (0, 0, 0))
    m, k = a.shape[-2:]
    n = b.shape[-1]
    tm, tn = -(-m // kernel.tile_m), -(-n // kernel.tile_n)
    item = c.dtype.itemsize
    starts = [(0, 0, 0)]
    for size, st in dims:
        starts = [
            tuple(s + i * x for s, x in zip(base, st, strict=True))
            for base in starts
            for i in range(size)
        ]
    for oa, ob, oc in starts:
        words = [
            a.data_ptr() + oa * item, b.data_ptr() + ob * item, c.data_ptr() + oc * item,
            *a.strides[-2:], qa, *b.strides[-2:], qb, c.strides[-2], qc, m, n, k, tm, tn,
        ]  # fmt: skip
        cuda_driver.launch_kernel(
            function, q * tm * tn, kernel.threads, words, shared_bytes=kernel.shared,
            name=kernel.symbol,
            moved=q * (m * k + k * n + m * n) * item, flops=2 * q * m * n * k,
        )  # fmt: skip
