"""The LU of one tall panel of a blocked factorization (frontend/blocked.py), factored in
column-major order: getf2's own loops, LAPACK's layout.

The matrix is row-major, so a panel's column is a strided walk: factored in place
(factorize.py's kernel), every pivot search and multiplier costs a scalar step per row
(about 5 ns a row and column). This kernel first copies the panel transposed into a
scratch buffer (row c of `t` is the panel's column c), where the pivot search, the
column scaling and the rank-1 updates are unit-stride loops over rows that vectorize
(an 8-lane arg-max, axpys), then interchanges the rows outside the panel (or leaves that
to the caller: `whole_rows`) and copies the factored panel back. Each multiplier and update is the row kernel's arithmetic in the same
order (each product rounded, dense.ROUNDED): the same pivots, info and bits, but for the
sign of a NaN (its operands meet in another order).
"""

from __future__ import annotations

from llvmlite import ir

from kael.codegen.cpu import dense
from kael.codegen.cpu.factorize import SUB, nonzero_pivot, pivot_step, start_info, whole_block
from kael.codegen.lowering import smin
from kael.runtime.tensor_impl import host_ptr

I1, I64 = ir.IntType(1), ir.IntType(64)
WORDS = ("a", "lda", "t", "ldt", "m", "w", "piv", "info", "row0", "swap_lo", "swap_hi")
LANES = 8  # the arg-max's vector width (rows per step)
PAD = 8  # elements past m in each row of the scratch (rows 4 KiB apart share cache sets)


def _panel(d: dense.Dense, item: ir.Value) -> None:
    b, w = d.b, d.w
    m, cols = w["m"], w["w"]
    a, t = d.matrix("a", "lda"), d.matrix("t", "ldt")
    piv, info = d.ptr("piv", I64), d.ptr("info", I64)
    d.transpose(m, cols, lambda r, c: t.set(c, r, a.get(r, c)))
    start_info(d, info)
    steps = smin(b, m, cols)
    with d.loop(0, steps, SUB) as kb:
        end = smin(b, b.add(kb, d.i(SUB)), steps)
        with d.loop(kb, end) as k:
            _column(d, t, k, end, piv, info)
        with d.when(b.icmp_signed("<", end, cols)):
            _update(d, t, kb, end)
    # the interchanges, in order, over the matrix's columns left and right of the panel
    with d.loop(0, steps) as k:
        p = b.sub(b.load(b.gep(piv, [k])), w["row0"])
        with d.when(b.icmp_signed("!=", p, k)):
            d.swap(a.row(k), a.row(p), w["swap_lo"], d.i(0))
            d.swap(a.row(k), a.row(p), cols, w["swap_hi"])
    d.transpose(m, cols, lambda r, c: a.set(r, c, t.get(c, r)))


def _pivot_row(d: dense.Dense, column: ir.Value, k: ir.Value) -> ir.Value:
    """getf2's pivot of column k (its rows from k on): the first row of largest magnitude,
    k itself when nothing is larger (a NaN is never larger; a NaN at k stays)."""
    b, m = d.b, d.w["m"]
    first = b.add(k, d.i(1))
    whole = b.add(first, b.mul(b.sdiv(b.sub(m, first), d.i(LANES)), d.i(LANES)))
    order = ir.Constant(ir.VectorType(I64, LANES), list(range(LANES)))
    top = d.var(d.splat(d.f(-1.0), LANES), "top")
    where = d.var(ir.Constant(ir.VectorType(I64, LANES), None), "where")
    with d.loop(first, whole, LANES) as i:
        size = d.abs(b.load(d.lanes(b.gep(column, [i]), LANES), align=d.dtype.itemsize))
        larger = d.gt(size, top.get())
        top.set(b.select(larger, size, top.get()))
        where.set(b.select(larger, b.add(order, d.splat(i, LANES)), where.get()))
    best, largest = d.var(k, "best"), d.var(d.f(-1.0), "largest")
    lanes_top, lanes_where = top.get(), where.get()
    for lane in range(LANES):  # the lanes' winners, ties to the earlier row
        size = b.extract_element(lanes_top, d.i(lane))
        row = b.extract_element(lanes_where, d.i(lane))
        tie = b.and_(b.fcmp_ordered("==", size, largest.get()), b.icmp_signed("<", row, best.get()))
        take = b.or_(d.gt(size, largest.get()), tie)
        best.set(b.select(take, row, best.get()))
        largest.set(b.select(take, size, largest.get()))
    with d.loop(whole, m) as i:
        size = d.abs(b.load(b.gep(column, [i])))
        with d.when(d.gt(size, largest.get())):
            best.set(i)
            largest.set(size)
    return b.select(d.gt(largest.get(), d.abs(b.load(b.gep(column, [k])))), best.get(), k)


def _column(d: dense.Dense, t: dense.Matrix, k, end, piv, info) -> None:
    """getf2's step k inside sub-block [.., end): pivot, interchange inside the panel, the
    multipliers (column k below the diagonal) and their update of columns k+1 to end."""
    b, w, m = d.b, d.w, d.w["m"]
    column = t.row(k)
    p = _pivot_row(d, column, k)
    b.store(b.add(p, w["row0"]), b.gep(piv, [k]))
    with d.when(b.icmp_signed("!=", p, k)), d.loop(0, w["w"]) as c:
        x, y = t.get(c, k), t.get(c, p)
        t.set(c, k, y)
        t.set(c, p, x)
    below = b.add(k, d.i(1))

    def eliminate(multiplier) -> None:
        with d.loop(below, m) as i:
            at = b.gep(column, [i])
            b.store(multiplier(b.load(at)), at)
        with d.loop(below, end) as c:
            d.axpy(t.row(c), d.neg(t.get(c, k)), column, below, m)

    pivot_step(d, t.get(k, k), k, info, eliminate)


def _update(d: dense.Dense, t: dense.Matrix, kb, end) -> None:
    """The columns right of sub-block [kb, end) take its updates: first U's rows of the
    block (each from the rows above it), then every row below. A whole block with no zero
    pivot does both a column at a time in vectors: its U rows as one SUB-lane vector, its
    L columns in one pass (axpys)."""
    b, m, cols = d.b, d.w["m"], d.w["w"]
    with d.either(whole_block(d, lambda c: t.get(c, c), kb, end)) as (fused, general):
        with fused:
            _update_whole(d, t, kb, end)
        with general, d.loop(end, cols) as j:
            target = t.row(j)
            with (
                d.loop(b.add(kb, d.i(1)), end) as i,
                d.loop(kb, i) as c,
                d.when(nonzero_pivot(d, t.get(c, c))),
            ):
                at = b.gep(target, [i])
                b.store(d.add(b.load(at), d.mul(d.neg(t.get(c, i)), t.get(j, c))), at)
            with d.loop(kb, end) as c, d.when(nonzero_pivot(d, t.get(c, c))):
                d.axpy(target, d.neg(t.get(j, c)), t.row(c), end, m)


def _update_whole(d: dense.Dense, t: dense.Matrix, kb, end) -> None:
    b, m, cols = d.b, d.w["m"], d.w["w"]
    order = ir.Constant(ir.VectorType(I64, SUB), list(range(SUB)))
    align = d.dtype.itemsize
    # L's column c of the block, rows kb.. kb + SUB (lanes past c are its multipliers)
    lower = [d.neg(b.load(d.lanes(b.gep(t.row(b.add(kb, d.i(c))), [kb]), SUB), align=align))
             for c in range(SUB - 1)]  # fmt: skip
    below = [b.icmp_signed(">", order, d.splat(d.i(c), SUB)) for c in range(SUB - 1)]
    rows = [t.row(b.add(kb, d.i(c))) for c in range(SUB)]
    with d.loop(end, cols) as j:
        where = d.lanes(b.gep(t.row(j), [kb]), SUB)
        u = b.load(where, align=align)
        for c in range(SUB - 1):
            step = d.add(u, d.mul(lower[c], d.splat(b.extract_element(u, d.i(c)), SUB)))
            u = b.select(below[c], step, u)
        b.store(u, where, align=align)
        factors = [d.neg(b.extract_element(u, d.i(c))) for c in range(SUB)]
        d.axpys(t.row(j), factors, rows, end, m)


def lu(a, scratch, piv, info, panel: tuple[int, int], whole_rows: bool = True) -> None:
    """Factor the panel impl `a` [m, w] (unit-stride rows) of an n-column matrix from row
    and column j on, `panel` = (j, n), as factorize.lu does (P A = L U in place, pivots
    and info counted from row j into impls `piv` [w] and `info` [1]), through impl
    `scratch`: at least w * (m + PAD) elements of a's dtype. Its interchanges cover whole
    rows, or (`whole_rows` False) only the panel's own columns: the caller interchanges
    the rest later (a look-ahead's product is updating them meanwhile)."""
    fn, words, items = prepared(a, scratch, piv, info, panel, whole_rows)
    dense.run_prepared(fn, words, items, a.shape[0] * a.shape[1] ** 2)


def prepared(a, scratch, piv, info, panel: tuple[int, int], whole_rows: bool = True):
    """lu's launch, not run: (kernel, argument words, work items)."""
    m, w = a.shape
    j, n = panel
    assert scratch.numel() >= w * (m + PAD) and scratch.dtype is a.dtype
    name = f"kael_lu_panel_{a.dtype.name}"
    swaps = (-j, n - j) if whole_rows else (0, w)
    words = [
        host_ptr(a, name), a.strides[0], host_ptr(scratch, name), m + PAD, m, w,
        host_ptr(piv, name), host_ptr(info, name), j, *swaps,
    ]  # fmt: skip
    return dense.kernel(name, lambda mod: _build(mod, name, a.dtype), name), words, 1


def _build(module: ir.Module, name: str, dtype) -> list[str]:
    return dense.per_matrix(module, name, dtype, WORDS, _panel, dense.ROUNDED)
