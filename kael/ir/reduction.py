"""A Reduction: the kernel form of a Reduce node, and the layout plan of one reduction launch.

`prologue` is the per-element value (an expression over the input buffers and run-time
parameters, fused from the graph under the Reduce node); the values are combined with
`op` into an accumulator of the prologue's dtype; each output stores its `epilogue`,
an expression in which `Load(acc, 0)` is the reduced value and `Load(int64, 1)` the
reduced index (argmax and argmin). A sum may carry a `second` per-element value, summed
alongside the first in a second accumulator of the same dtype (var's sum(d) and
sum(d^2) in one pass); its total is `Load(acc, 1)`. Both accumulators follow one order,
that of the index of arg ops. An epilogue may raise the error word's flag (ops.FLAG),
never a fault of its prologue. Reduced indices are flat row-major positions over
the reduced dimensions, cut into fixed BLOCK-element blocks; several blocks' partials
are combined by a fixed pairwise tree, so results never depend on the thread count.

A float64 sum of float32 values with a float32 result (`run_dtype`) adds them in float32
first, RUN_LENGTH values per accumulator lane at a time, and widens each run's total into
the float64 accumulator: one float32 add per element instead of a conversion and two
float64 adds (ten million 0.1f still sum to 1e6 within 0.2).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from kael.ir.expr import Cast, Expr, Load, any_faults
from kael.ir.kernel import BCAST, CONTIG, NO_PREFETCH, STRIDED, Buffer
from kael.ir.layout import coalesce
from kael.runtime.dtypes import DType, float32, float64, int64

BLOCK = 16384  # reduced elements per block: the unit of work and of the combining tree
MAX_COLUMNS = 4096  # kept outputs per work item of a COLS reduction, at most
MIN_COLUMNS = 256  # and at least, unless the kept dim is shorter
RUN_LENGTH = 16  # values an accumulator lane adds in float32 before widening (run_dtype)
ROWS, COLS = "rows", "cols"
VALUE_OPS = ("sum", "prod", "max", "min", "all", "any")
ARG_OPS = {"argmax": "max", "argmin": "min"}
OPS = VALUE_OPS + tuple(ARG_OPS)


def acc_load(dtype: DType) -> Expr:
    """The reduced value inside an epilogue."""
    return Load(dtype, 0)


def index_load() -> Expr:
    """The reduced index (arg ops) inside an epilogue."""
    return Load(int64, 1)


def second_load(dtype: DType) -> Expr:
    """The sum of the second per-element value (a paired sum) inside an epilogue."""
    return Load(dtype, 1)


@dataclass(frozen=True, slots=True)
class Reduction:
    """One reduction kernel; `schedule`, `kept`, `reduced` and `vector` fix its loop shape.

    ROWS: a work item is (output, block) and walks the block's reduced elements with
    W-lane accumulators (STRIDED inputs gathered lane by lane; `vector` False walks
    one element at a time). COLS: a work item is (outer outputs, `columns`-wide chunk of the
    contiguous last kept dim, block) and accumulates whole rows of outputs at once.
    """

    name: str
    op: str
    inputs: tuple[Buffer, ...]
    prologue: Expr
    epilogues: tuple[Expr, ...]
    params: tuple[DType, ...] = ()
    schedule: str = ROWS
    kept: int = 0
    reduced: int = 1
    vector: bool = False
    second: Expr | None = None  # a paired sum's second per-element value
    # per input: whether every reduced dim has stride 0 (var's broadcast mean): its loads
    # do not move along the reduced elements, so the kernel loads it once per output
    invariant: tuple[bool, ...] = ()
    prefetch: int = NO_PREFETCH  # an input fetched ahead (kernel.prefetching)
    # elements `prefetch` is fetched ahead, fixed in the code (an eager reduction streaming
    # its input from memory); 0: the last run-time parameter says (a row group's member)
    fetch_ahead: int = 0
    # ROWS in one block over rows shorter than the accumulators' lanes: one output per lane
    # (codegen/cpu/reduce.py); a variant of its own, chosen per launch (eager._shortened)
    short: bool = False
    # whether a product at the top of a per-element value is the kernel's own (norm's x * x,
    # var's d * d), added with one fma; None: worked out from the values it is made with
    own_products: bool | None = None
    # whether its results are float32 as the kernel is made (run_length's test, before a
    # fusion puts other work after the total); None: worked out from the epilogues
    float32_results: bool | None = None

    def __post_init__(self) -> None:
        """Settle `own_products` and `float32_results` from the values and results the
        kernel is made with: dataclasses.replace keeps them, so fusion leaves the
        arithmetic of the eager reduction alone: a product fusion puts in place of a load
        (a traced (x * y).sum()) is rounded and then added, as eager adds the product it
        stored, and a float64 sum (softmax's) stays whole when fusion makes its results
        float32 (its 1 / sum rounded), as the eager sum and the row kernels keep it."""
        if self.own_products is None:
            loaded = any(isinstance(v, Load) for v in self.summed)
            object.__setattr__(self, "own_products", not loaded)
        if self.float32_results is None:
            narrow = all(e.dtype == float32 for e in self.epilogues)
            object.__setattr__(self, "float32_results", narrow)

    @property
    def summed(self) -> tuple[Expr, ...]:
        """The per-element values: the prologue, and a paired sum's second value."""
        return (self.prologue,) if self.second is None else (self.prologue, self.second)

    @property
    def fma(self) -> bool:
        """Whether a product at the top of a per-element value is added with one fma."""
        return bool(self.own_products)

    @property
    def acc(self) -> DType:
        """The accumulator's dtype: float32 for float16/bfloat16 values."""
        return self.prologue.dtype.compute

    @property
    def run_length(self) -> int:
        """Values a run_dtype lane adds before widening: RUN_LENGTH where the kernel was made
        with float32 results; 1 (every value widened, the float32 prologue still computed
        a whole float32 vector at a time) where fusion made them float32 after the total (a
        traced softmax's 1 / sum of a float64 sum, which the eager sum keeps whole)."""
        return RUN_LENGTH if self.float32_results else 1

    @property
    def run_dtype(self) -> DType | None:
        """float32 where this vectorized ROWS float64 sum of float32 values, stored as
        float32, adds them in float32 runs (RUN_LENGTH per lane) before widening; None:
        every value is widened (a float64 result, sum(dtype=float64), keeps every bit).
        Gathered (STRIDED) inputs keep their 8 float64 lanes."""
        p = self.prologue
        if (
            self.op == "sum"
            and self.second is None
            and self.schedule == ROWS
            and self.vector
            and not self.short
            and isinstance(p, Cast)
            and p.dtype == float64
            and p.x.dtype == float32
            and all(e.dtype == float32 for e in self.epilogues)
            and all(b.inner != STRIDED for b in self.inputs)
        ):
            return float32
        return None

    @property
    def paired(self) -> bool:
        """Whether a second accumulator rides along: the index (arg ops) or a second sum."""
        return self.op in ARG_OPS or self.second is not None

    @property
    def second_dtype(self) -> DType:
        """The second accumulator's dtype: int64 indices, or the paired sum's dtype."""
        return int64 if self.second is None else self.second.dtype.compute

    @property
    def outputs(self) -> tuple[Buffer, ...]:
        return tuple(Buffer(e.dtype) for e in self.epilogues)

    @property
    def is_arg(self) -> bool:
        return self.op in ARG_OPS

    @property
    def may_fault(self) -> bool:
        """Whether an epilogue writes the error word (the flag): one more argument word."""
        return any_faults(self.epilogues)

    def specialize(self, plan: ReducePlan) -> Reduction:
        ins = tuple(dataclasses.replace(b, inner=i) for b, i in zip(self.inputs, plan.inners))
        return dataclasses.replace(
            self,
            inputs=ins,
            schedule=plan.schedule,
            kept=len(plan.kept),
            reduced=len(plan.reduced),
            vector=plan.vector,
            invariant=plan.invariant,
        )


@dataclass(frozen=True, slots=True)
class ReducePlan:
    """Sizes and strides of one launch: kept dims (outputs), then reduced dims (inputs only)."""

    kept: tuple[int, ...]
    reduced: tuple[int, ...]
    out_strides: tuple[tuple[int, ...], ...]  # per output, over kept dims
    in_strides: tuple[tuple[int, ...], ...]  # per input, over kept then reduced dims
    schedule: str
    vector: bool
    inners: tuple[str, ...]  # per input: CONTIG, BCAST or STRIDED along the vectorized dim
    index_strides: tuple[int, ...] = ()  # per reduced dim: its step in the flat index
    # COLS: outputs per work item. Each output's order is fixed whatever the chunking,
    # so it follows the thread count: rows are read in long runs, split across threads.
    columns: int = 1
    invariant: tuple[bool, ...] = ()  # per input: stride 0 along every reduced dim

    @property
    def outputs(self) -> int:
        n = 1
        for s in self.kept:
            n *= s
        return n

    @property
    def length(self) -> int:
        n = 1
        for s in self.reduced:
            n *= s
        return n

    @property
    def blocks(self) -> int:
        return max(1, -(-self.length // BLOCK))

    @property
    def chunks(self) -> int:
        return -(-self.kept[-1] // self.columns) if self.schedule == COLS else 1

    @property
    def work_items(self) -> int:
        if self.schedule == COLS:
            return self.outputs // self.kept[-1] * self.chunks * self.blocks
        return self.outputs * self.blocks


def plan_reduction(
    shape: tuple[int, ...],
    axes: tuple[int, ...],
    out_strides: list[tuple[int, ...]],
    in_strides: list[tuple[int, ...]],
    threads: int = 1,
) -> ReducePlan:
    """The loop plan of reducing `axes` of `shape`.

    `out_strides` are each output's strides over the kept dims in order, `in_strides`
    each input's over all of `shape`. Reduced dims are walked in memory order; each
    carries its step in the row-major flat index of the reduced dims (arg ops report
    that index), and dims merge only where inputs and index both step contiguously.
    """
    kept_dims = [d for d in range(len(shape)) if d not in axes and shape[d] != 1]
    kept_pos = {d: i for i, d in enumerate(d for d in range(len(shape)) if d not in axes)}
    logical: dict[int, int] = {}
    step = 1
    for d in sorted(axes, reverse=True):
        logical[d] = step
        step *= shape[d]
    red_dims = [d for d in sorted(axes) if shape[d] != 1]
    lead = next((st for st in in_strides if any(st[d] for d in red_dims)), None)
    if lead is not None:
        red_dims.sort(key=lambda d: -abs(lead[d]))
    if out_strides:
        kept_dims.sort(key=lambda d: -abs(out_strides[0][kept_pos[d]]))
    kept = [shape[d] for d in kept_dims]
    kper = [[st[kept_pos[d]] for d in kept_dims] for st in out_strides]
    kper += [[st[d] for d in kept_dims] for st in in_strides]
    kept, kper = coalesce(kept, kper)
    red = [shape[d] for d in red_dims]
    rper = [[st[d] for d in red_dims] for st in in_strides] + [[logical[d] for d in red_dims]]
    red, rper = coalesce(red, rper)
    if 0 in red or not red:
        red, rper = [0 if 0 in red else 1], [[0] for _ in rper]
    *rper, index_strides = rper
    n_out = len(out_strides)
    outs = tuple(tuple(st) for st in kper[:n_out])
    ins = tuple(tuple(k) + tuple(r) for k, r in zip(kper[n_out:], rper))
    unit_inner = all(r[-1] in (0, 1) for r in rper)
    columns = (
        bool(kept)
        and kept[-1] >= 8
        and not unit_inner
        and all(st[-1] == 1 for st in outs)
        and all(k[-1] in (0, 1) for k in kper[n_out:])
    )
    schedule = COLS if columns else ROWS
    along = [k[-1] for k in kper[n_out:]] if columns else [r[-1] for r in rper]
    inners = tuple(CONTIG if s == 1 else BCAST if s == 0 else STRIDED for s in along)
    width = 1
    if columns:
        share = -(-kept[-1] // max(1, threads))
        width = min(MAX_COLUMNS, max(MIN_COLUMNS, -(-share // 64) * 64))
    invariant = tuple(not any(r) for r in rper)
    return ReducePlan(
        tuple(kept),
        tuple(red),
        outs,
        ins,
        schedule,
        True,
        inners,
        tuple(index_strides),
        width,
        invariant,
    )
