"""torch.linalg's orthogonal family: qr (modes 'reduced', 'complete', 'r'),
householder_product (LAPACK's orgqr) and torch.qr's deprecated `some` form.

Householder QR runs kael's dense kernels (codegen/cpu/householder.py) on a contiguous
copy of the batch, one matrix per work item: geqr2 leaves R and the reflectors in it,
and org2r turns the reflectors into Q's columns, as LAPACK's geqrf and orgqr do for
PyTorch, so Q and R's signs are PyTorch's. Inputs are float32 or float64; a cuda tensor
is factored on the host (factorizations.on_host).
"""

from __future__ import annotations

import functools
from typing import NamedTuple

from kael.codegen.cpu import gemm_run, householder, pair, program
from kael.codegen.cpu.program import Program
from kael.frontend import blocked, factories
from kael.frontend.factorizations import (
    float_dtype,
    lapack_layout,
    matrices,
    on_host,
    same_dtype,
    working_copy,
)
from kael.frontend.outputs import bool_arg, copied_out, tensor_arg
from kael.frontend.tensor import Tensor
from kael.frontend.views import derive, narrowed, selected
from kael.frontend.views import transpose as transpose_impl
from kael.runtime.errors import ValueError
from kael.runtime.tensor_impl import TensorImpl, contiguous_strides, shape_numel
from kael.runtime.threadpool import get_num_threads

MODES = ("reduced", "complete", "r")


class QR(NamedTuple):
    Q: Tensor
    R: Tensor


NB = 64  # the blocked kernels' panel width (32, LAPACK's default, measured 5-10% slower at 512)
BLOCKED = 128  # from this many reflectors on, panels and matrix products
PANEL_COLUMNS = 2 * NB  # the widest block one matrix factors through a transposed copy


def apply_reflectors(panel: Tensor, tau: Tensor, c: Tensor, transpose: bool) -> Tensor:
    """C = H C (or H^T C) in place, H = H_0 ... H_{nb-1} = I - V T V^T the block of
    reflectors in `panel` [count, r, nb]: LAPACK's larfb, in kael's matrix products.
    Returns T (larft's)."""
    held = Program()
    count, rows, nb = panel.shape
    arena = Arena(held, count, rows, nb, c.shape[-1], panel.dtype)
    t = arena.take("t", (count, nb, nb))
    add_reflectors(held, arena, panel._impl, tau._impl, c._impl, transpose, t, True)
    held.run()
    return Tensor(t)


class Arena:
    """A program's scratch for the blocks it applies one after another: V, T, V^T V, V^T C
    and W = T V^T C, each as large as the largest block needs (rows x nb reflectors on
    columns C's), handed out as contiguous [count, ...] views; and, made at first use,
    the unblocked kernels' `work` [count, columns] and one matrix's transposed `panel`
    copy."""

    def __init__(self, into: Program, count: int, rows: int, nb: int, columns: int, dtype):
        size = {"v": rows * nb, "t": nb * nb, "gram": nb * nb, "vtc": nb * columns}
        size["w"] = size["vtc"]
        self._space = {name: into.scratch(count * n, dtype) for name, n in size.items()}
        self._into, self._shape, self._dtype = into, (count, rows, columns), dtype

    def take(self, name: str, shape: tuple[int, ...]) -> TensorImpl:
        space = self._space[name]
        return derive(space, shape, contiguous_strides(shape), 0)

    @functools.cached_property
    def work(self) -> TensorImpl:
        count, _, columns = self._shape
        return self._into.scratch(count * columns, self._dtype)

    @functools.cached_property
    def panel(self) -> TensorImpl:
        rows = self._shape[1]
        return self._into.scratch(PANEL_COLUMNS * (rows + householder.PAD), self._dtype)


def add_reflectors(
    into: Program,
    arena: Arena,
    panel: TensorImpl,
    tau: TensorImpl,
    c: TensorImpl,
    transpose: bool,
    t: TensorImpl,
    factor_t: bool,
    after: tuple | None = None,
    lead: int = 0,
) -> None:
    """Add to `into` C = H C (or H^T C) for the reflectors in impl `panel` (see
    apply_reflectors), T into impl `t` first when `factor_t` (else T is there already).
    `after` (one matrix's prepared panel launch, which may overwrite `panel` and C's first
    `lead` columns) runs beside the last product (blocked's look-ahead)."""
    count, rows, nb = panel.shape
    v = arena.take("v", (count, rows, nb))
    householder.reflectors(panel, v, count, into)
    vt = transpose_impl(v, -1, -2)
    if factor_t:
        gram = arena.take("gram", (count, nb, nb))
        gemm_run.product_steps(into, gram, vt, v)
        householder.larft(gram, tau, t, count, into)
    vtc = arena.take("vtc", (count, nb, c.shape[-1]))
    gemm_run.product_steps(into, vtc, vt, c)
    w = arena.take("w", (count, nb, c.shape[-1]))
    gemm_run.product_steps(into, w, transpose_impl(t, -1, -2) if transpose else t, vtc)
    if after is not None:
        blocked.ahead(into, *(selected(x, 0, 0) for x in (c, v, w)), lead, after)
    else:
        into.add(*gemm_run.adding_steps(into, c, v, w, True))


def _householder(op: str, block: TensorImpl, tau: TensorImpl, work, into=None, scratch=None):
    """geqr2 or org2r (`op`) of a [count, m, n] block: a batch one matrix a work item, or
    one matrix's block of at most PANEL_COLUMNS columns walked column-major through a
    transposed copy in `scratch` (householder.panel: its row loops were 8 elements short)."""
    count, m, n = block.shape
    if count == 1 and 0 < n <= PANEL_COLUMNS:
        if scratch is None:
            scratch = factories.empty(n * (m + householder.PAD), dtype=block.dtype)._impl
        launch = householder.prepared_panel(op, selected(block, 0, 0), selected(tau, 0, 0), scratch)
        step = pair.in_order([launch])
        into.add(*step) if into is not None else step[0]()
    else:
        getattr(householder, op)(block, tau, work, count, into)


def _part(t: TensorImpl, r0: int, r1: int, c0: int, c1: int) -> TensorImpl:
    """Rows [r0, r1) and columns [c0, c1) of each matrix of the 3-d impl `t`."""
    return narrowed(narrowed(t, 1, r0, r1 - r0), 2, c0, c1 - c0)


def _t_of(ts: TensorImpl, block: int, nb: int) -> TensorImpl:
    """The contiguous [count, nb, nb] T of block `block` in impl `ts` [blocks, count, NB, NB]."""
    count = ts.shape[1]
    at = ts.offset + block * ts.strides[0]
    return derive(ts, (count, nb, nb), (nb * nb, nb, 1), at)


def householder_qr(a: Tensor, ts: Tensor | None = None) -> tuple[Tensor, Tensor]:
    """(packed R and reflectors, tau [*, min(m, n)]) of the contiguous copy `a`, in place:
    geqr2 on the whole, or (LAPACK's geqrf) on panels of NB columns, each block of
    reflectors applied to the columns after it at once. `ts` ([blocks, count, NB, NB],
    see t_blocks) receives each applied block's T, for _orgqr to apply the same blocks
    again. One matrix looks ahead: each block's product updates the next panel's columns
    first and factors that panel beside the rest of it. The blocked launches are a
    program (codegen/cpu/program.py), built once for the layout."""
    m, n = a.shape[-2:]
    k = min(m, n)
    batch = tuple(a.shape[:-2])
    tau = factories.zeros((*batch, k), dtype=a.dtype)
    count = shape_numel(batch)
    if not (count and m and n):
        return a, tau
    a3, tau2 = a.reshape(count, m, n), tau.reshape(count, k)
    if k < BLOCKED:
        _householder(
            "geqr2", a3._impl, tau2._impl, factories.empty((count, n), dtype=a.dtype)._impl
        )
        return a, tau
    impls = (a3._impl, tau2._impl, *(() if ts is None else (ts._impl,)))
    program.run(("geqrf", get_num_threads()), impls, _geqrf)
    return a, tau


def t_blocks(a: Tensor) -> Tensor | None:
    """Room for householder_qr's T of each block of the [*, m, n] `a`, or None where it
    is not blocked."""
    m, n = a.shape[-2:]
    k, count = min(m, n), shape_numel(tuple(a.shape[:-2]))
    if k < BLOCKED or not (count and n):
        return None
    return factories.empty((-(-k // NB), count, NB, NB), dtype=a.dtype)


def _blocked(a3: TensorImpl) -> tuple[Program, Arena]:
    """A new program for the blocked kernels on the [count, m, n] impl `a3`, and its arena."""
    held = Program()
    count, m, n = a3.shape
    return held, Arena(held, count, m, NB, n, a3.dtype)


def _geqrf(a3: TensorImpl, tau2: TensorImpl, ts: TensorImpl | None = None) -> Program:
    """householder_qr's blocked launches on these impls."""
    (count, m, n), k = a3.shape, tau2.shape[-1]
    held, arena = _blocked(a3)
    factored = 0  # the panels left of this column are factored already
    for j in range(0, k, NB):
        jb = min(NB, k - j)
        panel, panel_tau = _part(a3, j, m, j, j + jb), narrowed(tau2, 1, j, jb)
        if j >= factored:
            _householder("geqr2", panel, panel_tau, arena.work, held, arena.panel)
        if j + jb < n:
            after, j2 = None, j + jb
            nb2 = min(NB, k - j2) if count == 1 else 0
            if nb2 > 0:
                next_panel = selected(_part(a3, j2, m, j2, j2 + nb2), 0, 0)
                next_tau = selected(narrowed(tau2, 1, j2, nb2), 0, 0)
                after = householder.prepared_panel("geqr2", next_panel, next_tau, arena.panel)
                factored = j2 + nb2
            t = arena.take("t", (count, jb, jb)) if ts is None else _t_of(ts, j // NB, jb)
            c = _part(a3, j, m, j2, n)
            add_reflectors(held, arena, panel, panel_tau, c, True, t, True, after, nb2)
    return held


def _orgqr(q: Tensor, tau: Tensor, ts: Tensor | None = None) -> Tensor:
    """The contiguous `q` [*, m, n] (its first k columns reflectors, tau [*, k]) made
    Q's first n columns, in place: org2r on the whole, or (LAPACK's orgqr) org2r on the
    last panel and then, panel by panel backward, each block applied to the columns
    after it and org2r on its own columns (beside the block's last product, for one
    matrix: it needs only the block's reflectors). `ts`: householder_qr's T of each
    block (t_blocks). The blocked launches are a program, built once for the layout."""
    m, n = q.shape[-2:]
    k = tau.shape[-1]
    count = shape_numel(q.shape[:-2])
    if not (count and m and n):
        return q
    q3, tau2 = q.reshape(count, m, n), tau.contiguous().reshape(count, k)
    impls = (q3._impl, tau2._impl, *(() if ts is None else (ts._impl,)))
    program.run(("orgqr", get_num_threads()), impls, _orgqr_program)
    return q


def _orgqr_program(q3: TensorImpl, tau2: TensorImpl, ts: TensorImpl | None = None) -> Program:
    """_orgqr's launches on these impls."""
    (count, m, n), k = q3.shape, tau2.shape[-1]
    held, arena = _blocked(q3)
    last = (k - 1) // NB * NB if k >= BLOCKED else 0
    if last:
        householder.zero(_part(q3, 0, last, last, n), count, held)
    tail = (_part(q3, last, m, last, n), narrowed(tau2, 1, last, k - last))
    _householder("org2r", *tail, arena.work, held, arena.panel)
    for j in range(last - NB, -1, -NB):
        panel, panel_tau = _part(q3, j, m, j, j + NB), narrowed(tau2, 1, j, NB)
        after = None
        if count == 1:
            after = householder.prepared_panel(
                "org2r", selected(panel, 0, 0), selected(panel_tau, 0, 0), arena.panel
            )
        factor_t = ts is None
        t = arena.take("t", (count, NB, NB)) if factor_t else _t_of(ts, j // NB, NB)
        add_reflectors(
            held, arena, panel, panel_tau, _part(q3, j, m, j + NB, n), False, t, factor_t, after
        )
        if after is None:
            _householder("org2r", panel, panel_tau, arena.work, held, arena.panel)
        if j:
            householder.zero(_part(q3, 0, j, j, j + NB), count, held)
    return held


def _reflectors(packed: Tensor, columns: int) -> Tensor:
    """A contiguous [*, m, columns] copy of the reflectors' columns, zero-padded past them
    (org2r makes the padding the identity's columns)."""
    if columns <= packed.shape[-1]:
        return working_copy(packed[..., :columns])
    q = factories.zeros((*packed.shape[:-1], columns), dtype=packed.dtype)
    q[..., : packed.shape[-1]] = packed
    return q


@on_host
def qr(A, mode: str = "reduced", *, out=None) -> QR:
    """A = Q R with Q orthonormal columns and R upper triangular, batched: 'reduced'
    (Q [m, k], R [k, n], k = min(m, n)), 'complete' (Q [m, m], R [m, n]) or 'r' (R only,
    Q empty), as torch.linalg.qr."""
    A = matrices(A, "linalg.qr")
    if mode not in MODES:
        raise ValueError(
            f"qr received unrecognized mode '{mode}' but expected one of 'reduced' "
            "(default), 'r', or 'complete'"
        )
    m, n = A.shape[-2:]
    a = working_copy(A, padded=True)
    ts = None if mode == "r" else t_blocks(a)  # each block's T, applied again to form Q
    packed, tau = householder_qr(a, ts)
    columns = m if mode == "complete" else min(m, n)
    r = packed[..., :columns, :].triu()
    if mode == "r":
        q = factories.empty((0,), dtype=A.dtype)
    else:
        q = lapack_layout(_orgqr(_reflectors(packed, columns), tau, ts))
    r = lapack_layout(r)
    if out is not None:
        out_q, out_r = out
        q, r = copied_out(q, out_q, "linalg.qr"), copied_out(r, out_r, "linalg.qr")
    return QR(q, r)


@on_host
def householder_product(A, tau, *, out=None) -> Tensor:
    """The first n columns of H_0 H_1 ... H_{k-1}, H_i = I - tau_i v_i v_i^T with v_i
    A's column i below a unit diagonal (m >= n >= k), as torch.linalg.householder_product."""
    op = "torch.linalg.householder_product"
    A = tensor_arg(A, op, "input")
    tau = tensor_arg(tau, op, "tau")
    if A.ndim < 2:
        raise ValueError(f"{op}: input must have at least 2 dimensions.")
    float_dtype(A, op)
    m, n = A.shape[-2:]
    if m < n:
        raise ValueError(f"{op}: input.shape[-2] must be greater than or equal to input.shape[-1]")
    if tau.ndim != A.ndim - 1:
        raise ValueError(
            f"{op}: Expected tau to have one dimension less than input, but got tau.ndim "
            f"equal to {tau.ndim} and input.ndim is equal to {A.ndim}"
        )
    if tau.shape[-1] > n:
        raise ValueError(f"{op}: input.shape[-1] must be greater than or equal to tau.shape[-1]")
    if tuple(tau.shape[:-1]) != tuple(A.shape[:-2]):
        raise ValueError(
            f"{op}: Expected batch dimensions of tau to be equal to input.shape[:-2], but got "
            f"{list(tau.shape[:-1])}"
        )
    same_dtype(A, tau, op, "input and tau")
    q = _orgqr(working_copy(A), tau.contiguous())
    return copied_out(lapack_layout(q), out, op)


def qr_some(input, some: bool = True, *, out=None) -> QR:
    """torch.qr (deprecated): the reduced factorization, or the complete one unless `some`."""
    mode = "reduced" if bool_arg(some, "qr", "some") else "complete"
    return qr(input, mode, out=out)


LINALG = {"qr": qr, "householder_product": householder_product}
# torch.* and Tensor methods of the same family.
FUNCTIONS = {"qr": qr_some, "orgqr": householder_product}
NOT_METHODS: frozenset[str] = frozenset()
METHODS: dict = {}
